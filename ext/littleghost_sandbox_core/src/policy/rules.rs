//! Policy (SPEC §8): the requested file grants, runtime grants, root
//! filesystem mode, environment and network, and the one rule that turns
//! them into process grants (longest target first).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use super::declared::{self, Declared};
use super::{EnvironmentPolicy, Error as Misshapen, Given, NetworkPolicy};
use crate::error::{policy, Error, Result};
use crate::grants::{Access, Grant};
use crate::paths;

/// The declaration keys every backend understands (8.1, CF.3).
pub const COMMON_KEYS: [&str; 6] = [
    "files",
    "runtime_paths",
    "root_filesystem",
    "environment",
    "network",
    "protect",
];
/// The paths kept read-only inside every writable grant unless `protect:`
/// says otherwise: version-control metadata, whose hooks and configuration
/// (`core.fsmonitor`, `core.pager`) run on the host the next time the user
/// runs git.
pub const DEFAULT_PROTECTED: [&str; 1] = [".git"];
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
            _ => Err(super::Error::RootFilesystem {
                shown: given.shown(),
            }
            .into()),
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
            let name =
                name.name()
                    .map(str::to_owned)
                    .ok_or_else(|| super::Error::GrantNameNotAName {
                        category: label.to_string(),
                        shown: name.shown(),
                    })?;
            let access =
                access
                    .name()
                    .and_then(Access::parse)
                    .ok_or_else(|| super::Error::GrantAccess {
                        category: label.to_string(),
                        name: name.clone(),
                        shown: access.shown(),
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

/// `protect:`: relative paths, each matched beneath the root of every
/// writable grant; one that exists there (a real directory, never followed
/// through a symlink) is an implicit read-only grant nested in the writable one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProtectList(Vec<PathBuf>);

impl Default for ProtectList {
    fn default() -> ProtectList {
        ProtectList(DEFAULT_PROTECTED.iter().map(PathBuf::from).collect())
    }
}

impl ProtectList {
    /// Validates `protect:` entries: each a Symbol or String naming a clean
    /// relative path (no `..`, `.`, empty or absolute path); PolicyError naming
    /// the first bad one. Duplicates are kept once.
    pub fn parse<'a>(entries: impl IntoIterator<Item = Given<'a>>) -> Result<ProtectList> {
        let mut list: Vec<PathBuf> = Vec::new();
        for entry in entries {
            let bad = || {
                policy(format!(
                    "sandbox protect entries must be relative paths beneath a grant (such as \".git\" or \".env\"), got {}",
                    entry.shown()
                ))
            };
            let name = entry.name().ok_or_else(bad)?;
            let path = Path::new(name);
            let plain = path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if name.is_empty() || !plain || name.contains('\0') || name.ends_with('/') {
                return Err(bad());
            }
            if !list.iter().any(|known| known == path) {
                list.push(path.to_path_buf());
            }
        }
        Ok(ProtectList(list))
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[PathBuf] {
        &self.0
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
    /// Paths kept read-only inside every writable grant.
    pub protect: ProtectList,
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
            protect: ProtectList::default(),
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
                    return Err(core_error(
                        super::Error::RelativeDirectory(name.to_owned()).into(),
                    ));
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
        let protected = self.protected_grants(&grants).map_err(&core_error)?;
        grants.extend(protected);
        sort_grants(&mut grants);
        Ok(grants)
    }

    /// The implicit read-only grants of `protect:` among `grants`: each
    /// entry that exists as a real directory beneath a writable grant's
    /// source (reached with no symlink on the way), at the same place
    /// beneath its target, visible as that grant is. A path some grant
    /// already names keeps that grant's access.
    ///
    /// One that exists as anything else (a file such as `.env` or a git
    /// worktree's `.git`, a symlink) is a CapabilityError naming it: a file
    /// cannot be kept read-only yet, and leaving it writable would let a
    /// change to it survive unnoticed.
    pub fn protected_grants(&self, grants: &[Grant]) -> Result<Vec<Grant>> {
        let mut protected: Vec<Grant> = Vec::new();
        for outer in grants.iter().filter(|g| g.access.writable()) {
            for entry in self.protect.entries() {
                let source = outer.source.join(entry);
                let target = outer.target.join(entry);
                let named = grants.iter().chain(&protected).any(|g| g.target == target);
                if named {
                    continue;
                }
                match beneath(&outer.source, entry) {
                    Found::Missing => continue,
                    Found::Directory => {}
                    Found::Other => {
                        return Err(crate::error::capability(format!(
                            "the protected path {} inside the writable grant {} is not a directory \
                             (a file or a symlink): only directories can be kept read-only inside a \
                             writable grant. Leave it out of protect: (protect: [] protects nothing), \
                             or grant {} :read_only with writable named subpaths",
                            target.display(),
                            outer.target.display(),
                            outer.target.display()
                        )))
                    }
                }
                protected.push(Grant {
                    source,
                    target,
                    access: Access::ReadOnly,
                    tools: outer.tools,
                    protect_aliases: true,
                });
            }
        }
        Ok(protected)
    }
}

/// What `relative` beneath `base` is, never following a symlink on the way.
enum Found {
    Missing,
    Directory,
    Other,
}

fn beneath(base: &Path, relative: &Path) -> Found {
    let mut path = base.to_path_buf();
    for component in relative.components() {
        path.push(component);
        match std::fs::symlink_metadata(&path) {
            Err(_) => return Found::Missing,
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Found::Other,
        }
    }
    Found::Directory
}

/// Longest target first; stable, so equal lengths keep their order.
pub fn sort_grants(grants: &mut [Grant]) {
    grants.sort_by_key(|grant| std::cmp::Reverse(grant.target.as_os_str().len()));
}

/// A policy declaration (docs/spec.md §8.1's keywords) read and validated,
/// but for `environment` and `network`, which the caller turns into the
/// objects it keeps.
#[derive(Debug)]
pub struct PolicyDeclaration<D> {
    /// The policy, with the default environment and no network.
    pub policy: Policy,
    pub environment: Option<D>,
    pub network: Option<D>,
}

impl Policy {
    /// The defaults with the keywords `keywords` gives over them, checked in
    /// the order `protect`, `files`, `runtime_paths`, `root_filesystem`.
    pub fn declared<D: Declared>(
        keywords: &D,
    ) -> std::result::Result<PolicyDeclaration<D>, D::Error> {
        let [files, runtime_paths, root_filesystem, environment, network, protect] =
            declared::keywords(keywords, COMMON_KEYS)?;
        let misshapen = |error: Error| keywords.misshapen(error);
        let mut policy = Policy::default();
        if let Some(protect) = protect {
            let Some(items) = protect.list() else {
                return Err(misshapen(Misshapen::ProtectNotAList.into()));
            };
            let given = items
                .iter()
                .map(D::given)
                .collect::<std::result::Result<Vec<_>, _>>()?;
            policy.protect = ProtectList::parse(given).map_err(misshapen)?;
        }
        if let Some(files) = files {
            policy.files = declared_grants(&files, "files")?;
        }
        if let Some(paths) = runtime_paths {
            policy.runtime_paths = declared_grants(&paths, "runtime_paths")?;
        }
        if let Some(root) = root_filesystem {
            policy.root_filesystem = RootFilesystem::parse(&root.given()?).map_err(misshapen)?;
        }
        Ok(PolicyDeclaration {
            policy,
            environment,
            network,
        })
    }
}

/// The grant table `table` declares as `label` (`files`, `runtime_paths`).
fn declared_grants<D: Declared>(
    table: &D,
    label: &'static str,
) -> std::result::Result<GrantTable, D::Error> {
    let Some(pairs) = table.pairs()? else {
        return Err(table.misshapen(Misshapen::NotATable { what: label }));
    };
    let mut given = Vec::with_capacity(pairs.len());
    for (name, access) in &pairs {
        given.push((name.given()?, access.given()?));
    }
    GrantTable::parse(label, given).map_err(|error| table.misshapen(error))
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
            crate::policy::Error::GrantAccess {
                category: "files".into(),
                name: "root".into(),
                shown: ":execute".into()
            }
            .into()
        );
        let err = GrantTable::parse(
            "runtime_paths",
            vec![(Given::other("1"), Given::symbol("read_only"))],
        )
        .unwrap_err();
        assert_eq!(
            err,
            super::super::Error::GrantNameNotAName {
                category: "runtime_paths".into(),
                shown: "1".into()
            }
            .into()
        );
        assert_eq!(err.kind(), crate::error::Kind::Policy);
    }

    #[test]
    fn protect_entries_are_clean_relative_paths() {
        assert_eq!(
            ProtectList::default().entries(),
            [PathBuf::from(".git")].as_slice()
        );
        let list = ProtectList::parse([Given::symbol(".env"), Given::symbol(".env")]).unwrap();
        assert_eq!(list.entries(), [PathBuf::from(".env")].as_slice());
        for bad in ["", "/etc", "../x", "a/../b", "./a", "a/"] {
            let err = ProtectList::parse([Given::symbol(bad)]).unwrap_err();
            assert!(
                err.message()
                    .starts_with("sandbox protect entries must be relative paths"),
                "{bad}: {}",
                err.message()
            );
        }
        assert!(ProtectList::parse([Given::other("1")]).is_err());
    }

    #[test]
    fn an_existing_protected_directory_is_a_read_only_grant_inside_each_writable_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("docs/.git")).unwrap();
        let writable = |path: &Path, access| Grant {
            source: path.to_path_buf(),
            target: path.to_path_buf(),
            access,
            tools: true,
            protect_aliases: true,
        };
        let grants = [
            writable(&root, Access::ReadWrite),
            writable(&root.join("docs"), Access::ReadOnly),
        ];
        let policy = Policy::default();
        let protected = policy.protected_grants(&grants).unwrap();
        assert_eq!(protected.len(), 1, "{protected:?}");
        assert_eq!(protected[0].target, root.join(".git"));
        assert_eq!(protected[0].access, Access::ReadOnly);
        let nothing = Policy {
            protect: ProtectList::parse([]).unwrap(),
            ..Policy::default()
        };
        assert!(nothing.protected_grants(&grants).unwrap().is_empty());
        // A file cannot be kept read-only: refused, never left writable.
        std::fs::write(root.join(".env"), "TOKEN=x").unwrap();
        let env = Policy {
            protect: ProtectList::parse([Given::symbol(".env")]).unwrap(),
            ..Policy::default()
        };
        let err = env.protected_grants(&grants).unwrap_err();
        assert!(matches!(err, Error::Capability(_)), "{err:?}");
        assert!(err.message().contains(".env"), "{}", err.message());
    }

    #[test]
    fn root_filesystem_modes() {
        assert_eq!(
            RootFilesystem::parse(&Given::symbol("read_only")).unwrap(),
            RootFilesystem::ReadOnly
        );
        assert_eq!(
            RootFilesystem::parse(&Given::symbol("host")).unwrap_err(),
            crate::policy::Error::RootFilesystem {
                shown: ":host".into()
            }
            .into()
        );
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
            crate::policy::Error::RelativeDirectory("root".into()).into()
        );
        assert!(Path::new("/w").is_absolute());
    }

    #[test]
    fn a_declaration_checks_protect_and_grant_tables_and_leaves_environment_and_network() {
        use crate::policy::network_requests::tests::Json;
        use serde_json::json;
        let keywords = Json(json!({
            ":files": {"root": "read_write"},
            ":protect": [],
            ":environment": {"A": "1"},
            ":root_filesystem": "read_only"
        }));
        let read = Policy::declared(&keywords).unwrap();
        assert!(read.policy.workspace_writable());
        assert!(read.policy.protect.entries().is_empty());
        assert_eq!(read.policy.root_filesystem, RootFilesystem::ReadOnly);
        assert_eq!(read.environment.unwrap().0, json!({"A": "1"}));
        assert!(read.network.is_none());
        let refused = |value: serde_json::Value| Policy::declared(&Json(value)).unwrap_err();
        assert!(matches!(
            refused(json!({":runtime_paths": ["a"]})),
            Error::Declaration(Misshapen::NotATable {
                what: "runtime_paths"
            })
        ));
        assert!(matches!(
            refused(json!({":protect": ".git"})),
            Error::Declaration(Misshapen::ProtectNotAList)
        ));
        assert_eq!(
            refused(json!({":filez": {}})).kind(),
            crate::error::Kind::Argument
        );
    }
}
