//! The workspace path model (SPEC §3): lexical resolution of logical paths,
//! the inverse mapping, environment variable names (with the W17 checks) and
//! directory identities used to detect aliasing and swaps.
//!
//! Everything here is lexical except [`Layout::capture_identities`] and
//! [`Layout::validate`], which stat the configured directories. Expansion with
//! Ruby semantics (`File.expand_path`, `~`) happens in the binding, which hands
//! this module absolute, expanded paths.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::paths;

pub mod error;
mod identity;
mod resolve;
#[cfg(test)]
mod tests;

pub use error::{Error, Result};
pub use identity::OpenError;
pub use resolve::refused_reference;

/// The scheme of a named-path reference: `workspace://NAME/REL`.
pub const SCHEME: &str = "workspace://";
/// The variable that always carries the workspace root.
pub const ROOT_VARIABLE: &str = "LITTLE_GHOST_WORKSPACE_ROOT";
/// The name the root has in identity records and messages.
pub const ROOT_NAME: &str = "root";

/// `LITTLE_GHOST_WORKSPACE_` + the upper-cased name with every character
/// outside `[A-Z0-9]` replaced by `_` (3.5).
pub fn variable_name(name: &str) -> String {
    let suffix: String = name
        .to_uppercase()
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("LITTLE_GHOST_WORKSPACE_{suffix}")
}

/// W17: a path named `root`, or two names that map to the same variable
/// (the root's included), would silently shadow each other.
pub fn check_path_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for name in names {
        if name == ROOT_NAME {
            return Err(Error::ReservedRoot);
        }
        let variable = variable_name(name);
        if variable == ROOT_VARIABLE {
            return Err(Error::RootVariable {
                name: name.to_owned(),
                variable,
            });
        }
        if let Some((_, other)) = seen.iter().find(|(v, _)| *v == variable) {
            return Err(Error::SameVariable {
                first: (*other).to_owned(),
                second: name.to_owned(),
                variable,
            });
        }
        seen.push((variable, name));
    }
    Ok(())
}

/// W17: rejects an environment entry the kernel would misread (an empty
/// name, `=` or NUL in the name, NUL in the value) before anything is spawned.
pub fn check_environment_entry(name: &OsStr, value: &OsStr) -> Result<()> {
    let name_bytes = name.as_bytes();
    if name_bytes.is_empty() {
        return Err(Error::EmptyVariableName);
    }
    if name_bytes.contains(&b'=') || name_bytes.contains(&0) {
        return Err(Error::VariableName(name.to_string_lossy().into_owned()));
    }
    if value.as_bytes().contains(&0) {
        return Err(Error::VariableValue(name.to_string_lossy().into_owned()));
    }
    Ok(())
}

/// 3.1: a relative named path, already expanded against `root`, must be
/// `root` or lie beneath it.
pub fn check_relative_path(name: &str, root: &Path, expanded: &Path) -> Result<()> {
    if paths::is_within(&paths::clean(expanded), &paths::clean(root)) {
        Ok(())
    } else {
        Err(Error::RelativeOutside(name.to_owned()))
    }
}

/// One `paths:` entry of `Workspace.new`: its name, the text given, and that
/// text expanded with Ruby semantics (against the root when relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    pub name: String,
    pub given: OsString,
    pub expanded: PathBuf,
}

/// `Workspace.new` (3.1, 3.2, W17): the layout, and the names of the paths
/// given relative to the root (the ones `open` creates).
pub fn configure(root: PathBuf, entries: Vec<PathEntry>) -> Result<(Layout, Vec<String>)> {
    let mut layout = Layout {
        root,
        paths: Vec::with_capacity(entries.len()),
    };
    let mut relative = Vec::new();
    for entry in entries {
        if entry.given.is_empty() {
            return Err(Error::EmptyPath(entry.name));
        }
        if !Path::new(&entry.given).is_absolute() {
            check_relative_path(&entry.name, &layout.root, &entry.expanded)?;
            relative.push(entry.name.clone());
        }
        layout.paths.push((entry.name, entry.expanded));
    }
    check_path_names(layout.paths.iter().map(|(name, _)| name.as_str()))?;
    Ok((layout, relative))
}

/// A workspace's configured directories: absolute, expanded paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub root: PathBuf,
    /// Named paths in declaration order.
    pub paths: Vec<(String, PathBuf)>,
}

impl Layout {
    /// The directory of a named path.
    pub fn path(&self, name: &str) -> Result<&Path> {
        self.paths
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_path())
            .ok_or_else(|| Error::UnknownName(name.to_owned()))
    }

    /// `LITTLE_GHOST_WORKSPACE_ROOT` then one variable per named path; a later
    /// entry with the same name replaces an earlier one (3.5).
    pub fn environment(&self) -> Vec<(String, PathBuf)> {
        let mut out: Vec<(String, PathBuf)> = vec![(ROOT_VARIABLE.to_owned(), self.root.clone())];
        for (name, dir) in &self.paths {
            let variable = variable_name(name);
            match out.iter_mut().find(|(v, _)| *v == variable) {
                Some(entry) => entry.1 = dir.clone(),
                None => out.push((variable, dir.clone())),
            }
        }
        out
    }

    /// Root first, then every named path: (name, directory).
    fn entries(&self) -> impl Iterator<Item = (&str, &Path)> {
        std::iter::once((ROOT_NAME, self.root.as_path()))
            .chain(self.paths.iter().map(|(n, p)| (n.as_str(), p.as_path())))
    }
}

/// Every grant of a policy (`files:` and `runtime_paths:`) names
/// `root` or one of the workspace's paths; checked when a sandbox is built so
/// a typo is a PolicyError that lists the names, not a KeyError at `open`.
pub fn check_grant_names<'a>(
    grants: impl IntoIterator<Item = (&'a str, &'a str)>,
    path_names: &[&str],
) -> Result<()> {
    for (category, name) in grants {
        if name != ROOT_NAME && !path_names.contains(&name) {
            let known = std::iter::once(ROOT_NAME)
                .chain(path_names.iter().copied())
                .map(str::to_owned)
                .collect();
            return Err(Error::UnknownGrant {
                category: category.to_owned(),
                name: name.to_owned(),
                known,
            });
        }
    }
    Ok(())
}
