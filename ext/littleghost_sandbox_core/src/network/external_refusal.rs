//! Why an external gateway's runtime paths are refused: a leaf, so the
//! core's error can carry it without a circle.

use std::path::PathBuf;

use crate::error::kind::Kind;
use crate::error::show::{plain, ShowName};

/// What an external gateway's runtime paths are refused for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.worded(&plain))]
pub enum Refusal {
    /// Runtime paths (by name) that are not the launch's process grants.
    NotGrants(Vec<String>),
    /// A runtime path (by name) whose directory `path` is missing, or
    /// (`directory: true`) is there but no directory.
    RuntimePath {
        name: String,
        path: PathBuf,
        directory: bool,
    },
}

impl Refusal {
    /// A missing directory is a DependencyError, anything else a PolicyError.
    pub fn kind(&self) -> Kind {
        match self {
            Refusal::RuntimePath {
                directory: false, ..
            } => Kind::Dependency,
            _ => Kind::Policy,
        }
    }

    /// The refusal with each runtime path's name shown by `name`.
    pub fn worded(&self, name: ShowName) -> String {
        match self {
            Refusal::NotGrants(names) => {
                let names: Vec<String> = names.iter().map(|n| name(n)).collect();
                format!(
                    "external gateway runtime paths are not process grants: {}",
                    names.join(", ")
                )
            }
            Refusal::RuntimePath {
                name: path_name,
                path,
                directory,
            } => format!(
                "external gateway runtime path {} is {}: {}",
                name(path_name),
                if *directory {
                    "not a directory"
                } else {
                    "missing"
                },
                path.display()
            ),
        }
    }
}
