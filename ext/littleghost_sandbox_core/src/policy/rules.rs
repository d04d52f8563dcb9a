//! Policy (SPEC §8): the requested file grants, runtime grants, root
//! filesystem mode, environment and network, and the one rule that turns
//! them into process grants (longest target first).

use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use super::{EnvironmentPolicy, Given, NetworkPolicy};
use crate::error::{argument, policy, Error, Result};
use crate::grants::{Access, Grant};
use crate::paths;

/// The declaration keys every backend understands (8.1, CF.3).
pub const COMMON_KEYS: [&str; 5] = [
    "files",
    "runtime_paths",
    "root_filesystem",
    "environment",
    "network",
];
/// How a grant may be used (8.1).
pub const ACCESS_MODES: [&str; 2] = ["read_only", "read_write"];
/// What a process sees outside its grants (8.1).
pub const ROOT_FILESYSTEM_MODES: [&str; 3] = ["isolated", "read_only", "read_write"];

/// `:isolated`, `:read_only` or `:read_write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RootFilesystem {
    #[default]
    Isolated,
    ReadOnly,
    ReadWrite,
}

impl RootFilesystem {
    /// The Ruby symbol name.
    pub fn name(self) -> &'static str {
        match self {
            RootFilesystem::Isolated => "isolated",
            RootFilesystem::ReadOnly => "read_only",
            RootFilesystem::ReadWrite => "read_write",
        }
    }

    /// The mode `given` names; PolicyError otherwise.
    pub fn parse(given: &Given<'_>) -> Result<RootFilesystem> {
        match given.name() {
            Some("isolated") => Ok(RootFilesystem::Isolated),
            Some("read_only") => Ok(RootFilesystem::ReadOnly),
            Some("read_write") => Ok(RootFilesystem::ReadWrite),
            _ => Err(policy(format!(
                "sandbox root_filesystem must be :isolated, :read_only or :read_write, got {}",
                given.shown()
            ))),
        }
    }
}

/// Workspace path names with their access, each name once (a later duplicate
/// replaces in place, as a Hash would), in order. Equality and hashing ignore
/// the order, as Ruby's Hash does.
#[derive(Debug, Clone, Default)]
pub struct GrantTable(Vec<(String, Access)>);

impl GrantTable {
    /// Validates the `(name, access)` pairs of `files:` or `runtime_paths:`
    /// (`label`): each name a Symbol or String, each access a member of
    /// [`ACCESS_MODES`]; the first bad pair is named.
    pub fn parse<'a>(
        label: &str,
        pairs: impl IntoIterator<Item = (Given<'a>, Given<'a>)>,
    ) -> Result<GrantTable> {
        let mut table = GrantTable::default();
        for (name, access) in pairs {
            let name = name.name().map(str::to_owned).ok_or_else(|| {
                policy(format!(
                    "sandbox {label} names must be Symbols or Strings, got {}",
                    name.shown()
                ))
            })?;
            let access = access.name().and_then(Access::parse).ok_or_else(|| {
                policy(format!(
                    "sandbox {label} access for :{name} must be :read_only or :read_write, got {}",
                    access.shown()
                ))
            })?;
            table.insert(name, access);
        }
        Ok(table)
    }

    /// A table from names known to be valid.
    pub fn of(pairs: &[(&str, Access)]) -> GrantTable {
        let mut table = GrantTable::default();
        for (name, access) in pairs {
            table.insert(name.to_string(), *access);
        }
        table
    }

    fn insert(&mut self, name: String, access: Access) {
        match self.0.iter_mut().find(|(existing, _)| *existing == name) {
            Some(slot) => slot.1 = access,
            None => self.0.push((name, access)),
        }
    }

    /// The access of `name`, if granted.
    pub fn get(&self, name: &str) -> Option<Access> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, a)| *a)
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[(String, Access)] {
        &self.0
    }

    fn sorted(&self) -> Vec<&(String, Access)> {
        let mut entries: Vec<_> = self.0.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }
}

impl PartialEq for GrantTable {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.sorted() == other.sorted()
    }
}

impl Eq for GrantTable {}

impl Hash for GrantTable {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.sorted().hash(state);
    }
}

/// A validated sandbox policy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    pub files: GrantTable,
    pub runtime_paths: GrantTable,
    pub root_filesystem: RootFilesystem,
    pub environment: EnvironmentPolicy,
    /// None: the backend's secure default.
    pub network: Option<NetworkPolicy>,
}

impl Default for Policy {
    /// `Policy.new`: `files: {root: :read_only}`, nothing else granted, an isolated root.
    fn default() -> Policy {
        Policy {
            files: GrantTable::of(&[("root", Access::ReadOnly)]),
            runtime_paths: GrantTable::default(),
            root_filesystem: RootFilesystem::Isolated,
            environment: EnvironmentPolicy::default(),
            network: None,
        }
    }
}

impl Policy {
    /// True iff the workspace root is granted `:read_write` to tools.
    pub fn workspace_writable(&self) -> bool {
        self.files.get("root") == Some(Access::ReadWrite)
    }

    /// The grants a process gets: every file grant (tool-visible) then every
    /// runtime grant (process-only), each at the directory `directory(name)`
    /// returns (absolute, cleaned; aliases protected), sorted longest target
    /// first; equal lengths keep declaration order. `core_error` turns this
    /// function's own errors into the caller's error type.
    pub fn process_grants<E>(
        &self,
        mut directory: impl FnMut(&str) -> std::result::Result<PathBuf, E>,
        core_error: impl Fn(Error) -> E,
    ) -> std::result::Result<Vec<Grant>, E> {
        let mut grants = Vec::new();
        for (table, tools) in [(&self.files, true), (&self.runtime_paths, false)] {
            for (name, access) in table.entries() {
                let path = directory(name)?;
                if !path.is_absolute() {
                    return Err(core_error(argument(format!(
                        "workspace path :{name} must be absolute"
                    ))));
                }
                let path = paths::clean(&path);
                grants.push(Grant {
                    source: path.clone(),
                    target: path,
                    access: *access,
                    tools,
                    protect_aliases: true,
                });
            }
        }
        sort_grants(&mut grants);
        Ok(grants)
    }
}

/// Longest target first; stable, so equal lengths keep their order.
pub fn sort_grants(grants: &mut [Grant]) {
    grants.sort_by_key(|grant| std::cmp::Reverse(grant.target.as_os_str().len()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn pairs(items: &[(&str, &str)]) -> Vec<(Given<'static>, Given<'static>)> {
        items
            .iter()
            .map(|(n, a)| (Given::symbol(n), Given::symbol(a)))
            .collect()
    }

    #[test]
    fn grant_tables_validate_names_and_accesses() {
        let table = GrantTable::parse(
            "files",
            pairs(&[("root", "read_write"), ("source", "read_only")]),
        )
        .unwrap();
        assert_eq!(
            table,
            GrantTable::of(&[("source", Access::ReadOnly), ("root", Access::ReadWrite)])
        );
        let err = GrantTable::parse("files", pairs(&[("root", "execute")])).unwrap_err();
        assert_eq!(
            err,
            policy(
                "sandbox files access for :root must be :read_only or :read_write, got :execute"
            )
        );
        let err = GrantTable::parse(
            "runtime_paths",
            vec![(Given::other("1"), Given::symbol("read_only"))],
        )
        .unwrap_err();
        assert_eq!(
            err,
            policy("sandbox runtime_paths names must be Symbols or Strings, got 1")
        );
    }

    #[test]
    fn root_filesystem_modes() {
        assert_eq!(
            RootFilesystem::parse(&Given::symbol("read_only")).unwrap(),
            RootFilesystem::ReadOnly
        );
        assert!(RootFilesystem::parse(&Given::symbol("host"))
            .unwrap_err()
            .message()
            .ends_with("got :host"));
    }

    #[test]
    fn process_grants_longest_target_first_files_before_runtime() {
        let policy = Policy {
            files: GrantTable::of(&[("root", Access::ReadWrite), ("source", Access::ReadOnly)]),
            runtime_paths: GrantTable::of(&[
                ("home", Access::ReadOnly),
                ("source", Access::ReadWrite),
            ]),
            ..Policy::default()
        };
        assert!(policy.workspace_writable());
        let dirs = |name: &str| -> std::result::Result<PathBuf, Error> {
            Ok(PathBuf::from(match name {
                "root" => "/w",
                "source" => "/w/src/.",
                _ => "/tmp",
            }))
        };
        let grants = policy.process_grants(dirs, |e| e).unwrap();
        let seen: Vec<_> = grants
            .iter()
            .map(|g| (g.target.to_str().unwrap(), g.tools, g.access))
            .collect();
        assert_eq!(
            seen,
            [
                ("/w/src", true, Access::ReadOnly),
                ("/w/src", false, Access::ReadWrite),
                ("/tmp", false, Access::ReadOnly),
                ("/w", true, Access::ReadWrite),
            ]
        );
        assert!(grants
            .iter()
            .all(|g| g.protect_aliases && g.source == g.target));
        let relative = policy.process_grants(|_| Ok::<_, Error>(PathBuf::from("rel")), |e| e);
        assert_eq!(
            relative.unwrap_err(),
            argument("workspace path :root must be absolute")
        );
        assert!(Path::new("/w").is_absolute());
    }
}
