//! The `:external` gateway (SPEC G.4): the application runs its own proxy
//! and exposes its socket under one of the sandbox's runtime paths. The gem
//! vouches for nothing about the proxy; it only checks that the declared
//! roots are process grants, pins their identities at open and refuses a
//! launch after one of them was swapped.

use std::path::{Component, Path, PathBuf};

use super::external_refusal::Refusal;
use crate::error::{policy, Error, Result};

use crate::grants::Identity;

/// A declared external gateway: runtime path names with their directories,
/// and the proxy socket path inside one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalGateway {
    roots: Vec<(String, PathBuf)>,
    proxy_mount_path: PathBuf,
    pinned: Option<Vec<Identity>>,
}

/// What `ExternalGateway.new` was given, in the terms the core decides on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExternalDeclaration {
    /// (runtime path name, its workspace directory), in the order given.
    pub roots: Vec<(String, PathBuf)>,
    /// The expanded proxy socket path; None when nil was given.
    pub proxy_mount_path: Option<PathBuf>,
}

impl ExternalDeclaration {
    /// The declared gateway (not yet open), or the PolicyError the rules of
    /// [`ExternalGateway::new`] give it.
    pub fn build(self) -> Result<ExternalGateway> {
        ExternalGateway::new(self.roots, self.proxy_mount_path.unwrap_or_default())
    }
}

impl ExternalGateway {
    /// `roots` are (runtime path name, its workspace directory), non-empty;
    /// `proxy_mount_path` (already expanded) must lie inside one of them.
    pub fn new(
        roots: Vec<(String, PathBuf)>,
        proxy_mount_path: PathBuf,
    ) -> Result<ExternalGateway> {
        if roots.is_empty() {
            return Err(policy("external gateway runtime_paths cannot be empty"));
        }
        let clean = lexical(&proxy_mount_path);
        if !roots
            .iter()
            .any(|(_, root)| clean.starts_with(lexical(root)))
        {
            return Err(policy(format!(
                "external gateway proxy_mount_path {} must be inside a runtime path",
                proxy_mount_path.display()
            )));
        }
        Ok(ExternalGateway {
            roots,
            proxy_mount_path: clean,
            pinned: None,
        })
    }

    /// The runtime path names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.roots.iter().map(|(name, _)| name.as_str())
    }

    /// The proxy socket path (lexically cleaned).
    pub fn proxy_mount_path(&self) -> &Path {
        &self.proxy_mount_path
    }

    /// Whether `open` pinned the roots and `close` has not run since.
    pub fn is_open(&self) -> bool {
        self.pinned.is_some()
    }

    /// Refuses names that are not among the policy's runtime path grants.
    pub fn check_grants<'a>(
        &self,
        granted: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Result<()> {
        let missing: Vec<&str> = self
            .names()
            .filter(|name| !granted.clone().into_iter().any(|g| g == *name))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Refusal::NotGrants(missing.into_iter().map(str::to_owned).collect()).into())
    }

    /// Pins each root's (realpath, dev, ino). A missing root is a
    /// DependencyError, one that is not a directory a PolicyError.
    pub fn open(&mut self) -> Result<()> {
        let mut pinned = Vec::with_capacity(self.roots.len());
        for (name, root) in &self.roots {
            let refused = |directory| Refusal::RuntimePath {
                name: name.clone(),
                path: root.clone(),
                directory,
            };
            let metadata = std::fs::metadata(root).map_err(|_| refused(false))?;
            if !metadata.is_dir() {
                return Err(refused(true).into());
            }
            pinned.push(Identity::capture(root).ok_or_else(changed)?);
        }
        self.pinned = Some(pinned);
        Ok(())
    }

    /// Re-checks the pinned identities (before every launch).
    pub fn validate(&self) -> Result<()> {
        let Some(pinned) = &self.pinned else {
            return Err(Error::Dependency("external gateway is not open".into()));
        };
        for ((_, root), identity) in self.roots.iter().zip(pinned) {
            if Identity::capture(root).as_ref() != Some(identity) {
                return Err(changed());
            }
        }
        Ok(())
    }

    /// Forgets the pins; idempotent.
    pub fn close(&mut self) {
        self.pinned = None;
    }
}

fn changed() -> Error {
    Error::Dependency("external gateway runtime path changed after opening".into())
}

/// `path` with `.` removed and `..` applied, without touching the filesystem.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    fn roots(dir: &Path) -> Vec<(String, PathBuf)> {
        vec![("proxy".into(), dir.join("proxy"))]
    }

    #[test]
    fn declaration_rules() {
        let dir = tempfile::tempdir().unwrap();
        let err = ExternalGateway::new(Vec::new(), dir.path().join("s")).unwrap_err();
        assert_eq!(
            err,
            policy("external gateway runtime_paths cannot be empty")
        );
        let outside = ExternalGateway::new(roots(dir.path()), dir.path().join("proxy/../other/s"))
            .unwrap_err();
        assert!(
            outside.message().ends_with("must be inside a runtime path"),
            "{outside}"
        );
        let sibling =
            ExternalGateway::new(roots(dir.path()), dir.path().join("proxy2/s")).unwrap_err();
        assert!(matches!(sibling, Error::Policy(_)));
        let gateway =
            ExternalGateway::new(roots(dir.path()), dir.path().join("proxy/./s.sock")).unwrap();
        assert_eq!(gateway.proxy_mount_path(), dir.path().join("proxy/s.sock"));
        assert!(gateway.check_grants(["proxy", "other"]).is_ok());
        let refused = gateway.check_grants(["other"]).unwrap_err();
        assert_eq!(refused, Refusal::NotGrants(vec!["proxy".into()]).into());
        assert_eq!(refused.kind(), Kind::Policy);
        assert_eq!(
            refused.worded(&|name| format!(":{name}")),
            "external gateway runtime paths are not process grants: :proxy"
        );
    }

    #[test]
    fn a_declaration_needs_its_proxy_inside_a_runtime_path() {
        let dir = tempfile::tempdir().unwrap();
        let declared = |proxy: Option<PathBuf>| ExternalDeclaration {
            roots: roots(dir.path()),
            proxy_mount_path: proxy,
        };
        assert_eq!(
            declared(None).build().unwrap_err(),
            policy("external gateway proxy_mount_path  must be inside a runtime path")
        );
        assert!(declared(Some(dir.path().join("proxy/s"))).build().is_ok());
        assert!(ExternalDeclaration::default().build().is_err());
    }

    #[test]
    fn open_pins_and_validate_detects_a_swap() {
        let dir = tempfile::tempdir().unwrap();
        let mut gateway =
            ExternalGateway::new(roots(dir.path()), dir.path().join("proxy/s")).unwrap();
        let missing = gateway.open().unwrap_err();
        assert_eq!(missing.kind(), Kind::Dependency);
        assert!(
            missing.message().contains("runtime path proxy is missing"),
            "{missing}"
        );
        std::fs::write(dir.path().join("proxy"), "").unwrap();
        let not_a_directory = gateway.open().unwrap_err();
        assert_eq!(not_a_directory.kind(), Kind::Policy);
        assert!(
            not_a_directory
                .worded(&|name| format!(":{name}"))
                .contains("runtime path :proxy is not a directory"),
            "{not_a_directory}"
        );
        std::fs::remove_file(dir.path().join("proxy")).unwrap();
        std::fs::create_dir(dir.path().join("proxy")).unwrap();
        assert!(gateway.validate().is_err(), "not open yet");
        gateway.open().unwrap();
        gateway.validate().unwrap();
        std::fs::rename(dir.path().join("proxy"), dir.path().join("old")).unwrap();
        std::fs::create_dir(dir.path().join("proxy")).unwrap();
        assert_eq!(gateway.validate().unwrap_err(), changed());
        gateway.close();
        gateway.close();
        assert!(!gateway.is_open());
    }
}
