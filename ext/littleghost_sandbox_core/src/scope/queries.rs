//! What a built scope answers (SC.11–SC.13): which features it allows, whether
//! it can write, whether an operation is allowed on a path, whether its roots
//! are unchanged, and how `inspect` lists its grants. Also which capability each file operation needs
//! and how many arguments it takes.

use std::ops::RangeInclusive;
use std::path::Path;

use super::Scoped;
use crate::denial::Operation;
use crate::error::Result;
use crate::fs::FsOperation;

impl Scoped {
    /// Whether the scope allows the canonical `feature`; `network` asks for any mode.
    pub fn supports(&self, feature: &str) -> bool {
        match feature {
            "network" => self.capabilities.supports_network(None),
            _ => self.capabilities.supports(feature),
        }
    }

    /// SC.11: writes are allowed and some tool-visible grant is writable.
    pub fn writable(&self) -> bool {
        self.supports("filesystem_write")
            && self.grants.iter().any(|g| g.tools && g.access.writable())
    }

    /// SC.13: whether the canonical `feature` is allowed and, given the
    /// `physical` path a logical one resolved to, allowed there. A feature
    /// that is not a file operation asks only whether the path is visible.
    pub fn allows(&self, feature: &str, physical: Option<&Path>) -> bool {
        if !self.supports(feature) {
            return false;
        }
        physical.is_none_or(|path| self.broker.allows(file_operation(feature), path))
    }

    /// SC.16: every grant root still is the directory captured when the scope was built.
    pub fn validate(&self) -> Result<()> {
        super::validate_identities(&self.grants, &self.identities)
    }

    /// The grants as `inspect` lists them: `TARGET:ACCESS`, with
    /// `(runtime)` after a grant tools cannot see, joined by ", ".
    pub fn grants_summary(&self) -> String {
        self.grants
            .iter()
            .map(|g| {
                let runtime = if g.tools { "" } else { "(runtime)" };
                format!("{}:{}{runtime}", g.target.display(), g.access.name())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The broker operation SC.13 asks about for the canonical `feature`: a
/// feature that is not a file operation asks only whether the path is
/// visible (a read).
pub fn file_operation(feature: &str) -> FsOperation {
    match feature {
        "filesystem_write" => FsOperation::Write,
        "filesystem_replace" => FsOperation::Replace,
        "filesystem_list" => FsOperation::List,
        _ => FsOperation::Read,
    }
}

/// The capability a file operation needs (SC.12); `None` for a process or a connection.
pub fn file_feature(operation: Operation) -> Option<&'static str> {
    match operation {
        Operation::Read => Some("filesystem_read"),
        Operation::List => Some("filesystem_list"),
        Operation::Write => Some("filesystem_write"),
        Operation::Replace => Some("filesystem_replace"),
        Operation::Execute | Operation::Connect | Operation::Request => None,
    }
}

/// How many arguments a file operation takes (SC.12): `read(path)`,
/// `list(path = ".")`, `write(path, content)` and `replace(path, old_text,
/// new_text)`; the path comes first, the texts after it.
pub fn file_arguments(operation: Operation) -> RangeInclusive<usize> {
    match operation {
        Operation::List => 0..=1,
        Operation::Write => 2..=2,
        Operation::Replace => 3..=3,
        _ => 1..=1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Access;
    use crate::policy::NetworkMode;
    use crate::scope::tests::{caps, grant, limits};
    use crate::scope::{narrow, Parent, ScopeRequest};

    #[test]
    fn list_alone_may_omit_its_path_and_write_and_replace_take_texts() {
        assert_eq!(file_arguments(Operation::Read), 1..=1);
        assert_eq!(file_arguments(Operation::List), 0..=1);
        assert_eq!(file_arguments(Operation::Write), 2..=2);
        assert_eq!(file_arguments(Operation::Replace), 3..=3);
    }

    /// A scope of `root` (tools, `access`) and `root/cache` (runtime, read-write).
    fn scoped(root: &Path, access: Access, features: &[&str], modes: &[NetworkMode]) -> Scoped {
        let cache = root.join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let grants = vec![
            grant(root, access, true),
            grant(&cache, Access::ReadWrite, false),
        ];
        let capabilities = caps(features, modes);
        let parent = Parent {
            grants: &grants,
            deny_markers: &[],
            capabilities: &capabilities,
            network: modes.first().copied(),
        };
        narrow(parent, &ScopeRequest::default(), limits(), None).unwrap()
    }

    #[test]
    fn supports_asks_the_capabilities_and_network_means_any_mode() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let scope = scoped(&root, Access::ReadOnly, &["filesystem_read"], &[]);
        assert!(scope.supports("filesystem_read"));
        assert!(!scope.supports("filesystem_write"));
        assert!(!scope.supports("network"));
        let scope = scoped(&root, Access::ReadOnly, &[], &[NetworkMode::Inherit]);
        assert!(scope.supports("network"));
    }

    #[test]
    fn writable_needs_the_feature_and_a_writable_tool_grant() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let write = ["filesystem_write"];
        assert!(scoped(&root, Access::ReadWrite, &write, &[]).writable());
        // The runtime grant is writable, but tools cannot see it.
        assert!(!scoped(&root, Access::ReadOnly, &write, &[]).writable());
        assert!(!scoped(&root, Access::ReadWrite, &["filesystem_read"], &[]).writable());
    }

    #[test]
    fn allows_checks_the_feature_then_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let features = ["filesystem_read", "filesystem_write", "process_execute"];
        let scope = scoped(&root, Access::ReadOnly, &features, &[]);
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("cache/x"), "x").unwrap();
        assert!(scope.allows("filesystem_read", None));
        assert!(scope.allows("filesystem_write", None));
        assert!(!scope.allows("filesystem_list", None));
        assert!(scope.allows("filesystem_read", Some(&root.join("a.txt"))));
        assert!(!scope.allows("filesystem_write", Some(&root.join("a.txt"))));
        // Not a file operation: only whether the path is visible to tools.
        assert!(scope.allows("process_execute", Some(&root.join("a.txt"))));
        assert!(!scope.allows("process_execute", Some(&root.join("cache/x"))));
        assert!(!scope.allows("filesystem_read", Some(Path::new("/elsewhere"))));
    }

    #[test]
    fn validate_refuses_a_root_replaced_after_the_scope_was_built() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("ws");
        std::fs::create_dir(&root).unwrap();
        let scope = scoped(&root, Access::ReadOnly, &[], &[]);
        assert!(scope.validate().is_ok());
        std::fs::rename(&root, root.with_file_name("old")).unwrap();
        std::fs::create_dir(&root).unwrap();
        let err = scope.validate().unwrap_err();
        assert!(
            err.message().contains("changed after initialization"),
            "{err}"
        );
    }

    #[test]
    fn grants_summary_lists_targets_access_and_runtime_grants() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let scope = scoped(&root, Access::ReadOnly, &[], &[]);
        let expected = format!(
            "{}:read_write(runtime), {}:read_only",
            root.join("cache").display(),
            root.display()
        );
        assert_eq!(scope.grants_summary(), expected);
    }

    #[test]
    fn each_file_operation_needs_its_own_feature() {
        assert_eq!(file_feature(Operation::Read), Some("filesystem_read"));
        assert_eq!(file_feature(Operation::List), Some("filesystem_list"));
        assert_eq!(file_feature(Operation::Write), Some("filesystem_write"));
        assert_eq!(file_feature(Operation::Replace), Some("filesystem_replace"));
        assert_eq!(file_feature(Operation::Execute), None);
    }
}
