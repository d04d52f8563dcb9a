//! Why a workspace refuses a configuration or a path (docs/spec.md §3), in
//! the core's words: a path's name is carried as a value, and the binding
//! shows it the way the caller wrote it.

use crate::error::kind::Kind;
use crate::error::show::{plain, ShowName};

/// A workspace refusal. [`Error::kind`] says which documented class it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A path named `root` (3.5, W17).
    #[error("{}", self.worded(&plain))]
    ReservedRoot,
    /// A path whose variable is the root's (W17).
    #[error("{}", self.worded(&plain))]
    RootVariable { name: String, variable: String },
    /// Two paths whose variables are the same (W17).
    #[error("{}", self.worded(&plain))]
    SameVariable {
        first: String,
        second: String,
        variable: String,
    },
    #[error("environment variable names must not be empty")]
    EmptyVariableName,
    /// A variable name holding `=` or NUL.
    #[error("environment variable name {0:?} must not contain '=' or a NUL byte")]
    VariableName(String),
    /// A variable (by name) whose value holds NUL.
    #[error("environment variable {0} must not contain a NUL byte")]
    VariableValue(String),
    /// A relative path (by name) that leaves the root (3.1).
    #[error("{}", self.worded(&plain))]
    RelativeOutside(String),
    /// A path (by name) given as the empty text.
    #[error("{}", self.worded(&plain))]
    EmptyPath(String),
    /// No path of that name (3.3).
    #[error("{}", self.worded(&plain))]
    UnknownName(String),
    /// A policy grant naming a path the workspace lacks: the category
    /// (`files`, `runtime_paths`), the name, and the names there are.
    #[error("{}", self.worded(&plain))]
    UnknownGrant {
        category: String,
        name: String,
        known: Vec<String>,
    },
    /// A path (by name) that is not a directory one can enter (3.6).
    #[error("{}", self.worded(&plain))]
    Inaccessible(String),
    /// Two entries that are one directory (3.6).
    #[error("workspace paths must not alias the same directory: {0}, {1}")]
    Aliased(String, String),
    /// An entry (by name) that is no longer the directory `open` verified (3.7).
    #[error("workspace path changed after opening: {0}")]
    Moved(String),
    #[error("Path contains a null byte")]
    NulByte,
    #[error("workspace paths must be relative or use workspace://NAME/...")]
    Absolute,
    #[error("workspace path must name a configured path: workspace://NAME/...")]
    Unnamed,
    #[error("workspace paths must be relative after workspace://NAME/")]
    AbsoluteAfterName,
    /// A quoted component that does not parse (the parser's words).
    #[error("{0}")]
    Quoted(&'static str),
    #[error("workspace path must not be empty")]
    Empty,
    #[error("workspace path traversal is not allowed")]
    Traversal,
    #[error("workspace path escapes its root")]
    Escapes,
    /// A physical path with no logical path (3.4).
    #[error("path is outside the workspace")]
    Outside,
}

impl Error {
    /// The message with each path name shown by `name`.
    pub fn worded(&self, name: ShowName) -> String {
        match self {
            Error::ReservedRoot => format!(
                "workspace path {} is reserved for the workspace root; give the path another name",
                name("root")
            ),
            Error::RootVariable {
                name: path,
                variable,
            } => format!(
                "workspace path {} maps to {variable}, which is reserved for the workspace root; \
                 give it another name",
                name(path)
            ),
            Error::SameVariable {
                first,
                second,
                variable,
            } => format!(
                "workspace paths {} and {} both map to {variable}; rename one of them",
                name(first),
                name(second)
            ),
            Error::RelativeOutside(path) => format!(
                "relative workspace path {} must remain beneath the workspace root",
                name(path)
            ),
            Error::EmptyPath(path) => format!("workspace path {} must not be empty", name(path)),
            Error::UnknownName(path) => {
                format!(
                    "key not found: {} (no workspace path of that name)",
                    name(path)
                )
            }
            Error::UnknownGrant {
                category,
                name: path,
                known,
            } => {
                let known: Vec<String> = known.iter().map(|n| name(n)).collect();
                format!(
                    "sandbox policy {category} grants {}, which is not a workspace path \
                     (workspace paths: {})",
                    name(path),
                    known.join(", ")
                )
            }
            Error::Inaccessible(path) => format!(
                "workspace path {} is not an accessible directory",
                name(path)
            ),
            other => other.to_string(),
        }
    }

    /// Which documented class this refusal is: a bad argument, an unknown
    /// name (`KeyError`), a policy naming what is not there, or a directory
    /// that moved since `open` (a per-operation `ToolError`).
    pub fn kind(&self) -> Kind {
        match self {
            Error::UnknownName(_) => Kind::Key,
            Error::UnknownGrant { .. } => Kind::Policy,
            Error::Moved(_) => Kind::Tool,
            _ => Kind::Argument,
        }
    }
}

/// The result of a workspace check.
pub type Result<T, E = Error> = std::result::Result<T, E>;
