//! How the Ruby value objects compare and combine where the answer is more
//! than field equality: a Mount is the same grant as another when its source
//! is the same real directory (9.1), and Capabilities intersect with another
//! report (4.4). The binding's `==`, `hash` and `intersect` call these, and
//! builds a backend's report from its own names with [`Capabilities::named`].

use std::path::PathBuf;

use super::{Capabilities, Given};
use crate::error::Result;
use crate::grants::{Access, Grant};

/// What a grant is compared and hashed by: its source's realpath (the
/// source as given when it does not exist), then its target, access and flags.
pub type GrantIdentity<'a> = (PathBuf, &'a PathBuf, Access, bool, bool);

impl Grant {
    /// See [`GrantIdentity`]; the realpath is a system call.
    pub fn identity(&self) -> GrantIdentity<'_> {
        let source = std::fs::canonicalize(&self.source).unwrap_or_else(|_| self.source.clone());
        (
            source,
            &self.target,
            self.access,
            self.protect_aliases,
            self.tools,
        )
    }

    /// Whether `other` is the same grant: the same target, access and flags
    /// (compared first, as they are cheap) and the same real source.
    pub fn same_grant(&self, other: &Grant) -> bool {
        self.target == other.target
            && self.access == other.access
            && self.protect_aliases == other.protect_aliases
            && self.tools == other.tools
            && self.identity().0 == other.identity().0
    }
}

impl Capabilities {
    /// The names of the network modes, in order.
    pub fn network_mode_names(&self) -> Vec<&'static str> {
        self.network_modes.iter().map(|mode| mode.name()).collect()
    }

    /// [`Capabilities::new`] from names a backend or probe states in Rust
    /// (each read as a Symbol), validated as if Ruby had passed them.
    pub fn named(
        features: &[&str],
        network_modes: &[&str],
        isolation: &str,
    ) -> Result<Capabilities> {
        let givens = |names: &[&str]| names.iter().map(|n| Given::named(n)).collect::<Vec<_>>();
        Capabilities::new(
            Some(&givens(features)),
            Some(&givens(network_modes)),
            Some(&Given::named(isolation)),
        )
    }

    /// [`Capabilities::intersect`] with another report.
    pub fn intersect_with(&self, other: &Capabilities) -> Capabilities {
        let modes: Vec<String> = other
            .network_modes
            .iter()
            .map(|mode| mode.name().to_owned())
            .collect();
        self.intersect(&other.features, &modes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::NetworkMode;

    fn grant(source: PathBuf, access: Access) -> Grant {
        Grant {
            source,
            target: PathBuf::from("/work"),
            access,
            tools: true,
            protect_aliases: false,
        }
    }

    #[test]
    fn a_grant_is_the_same_through_a_symlinked_source() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        let direct = grant(real.clone(), Access::ReadOnly);
        let linked = grant(real.join("link"), Access::ReadOnly);
        assert!(direct.same_grant(&linked) && linked.same_grant(&direct));
        assert_eq!(direct.identity(), linked.identity());
        assert!(!direct.same_grant(&grant(real.clone(), Access::ReadWrite)));
        let mut hidden = direct.clone();
        hidden.tools = false;
        assert!(!direct.same_grant(&hidden));
    }

    #[test]
    fn a_missing_source_compares_as_given() {
        let gone = grant(PathBuf::from("/no/such/dir"), Access::ReadOnly);
        assert_eq!(gone.identity().0, PathBuf::from("/no/such/dir"));
        assert!(gone.same_grant(&gone.clone()));
        assert!(!gone.same_grant(&grant(PathBuf::from("/no/such/other"), Access::ReadOnly)));
    }

    #[test]
    fn named_reports_resolve_aliases_and_refuse_unknown_modes() {
        let caps = Capabilities::named(&["read", "spawn", "read"], &["none"], "namespace").unwrap();
        assert_eq!(caps.features, ["filesystem_read", "process_spawn"]);
        assert_eq!(caps.network_mode_names(), ["none"]);
        assert_eq!(caps.isolation, "namespace");
        let err = Capabilities::named(&[], &["bridge"], "none").unwrap_err();
        assert_eq!(
            err,
            crate::policy::Error::UnsupportedNetworkModes(vec!["bridge".into()]).into()
        );
    }

    #[test]
    fn intersect_with_another_report() {
        let mine = Capabilities::of(
            &["process_execute", "filesystem_read", "filesystem_write"],
            &[NetworkMode::Inherit, NetworkMode::None],
            "namespace",
        );
        let theirs = Capabilities::of(
            &["filesystem_write", "process_execute"],
            &[NetworkMode::None, NetworkMode::Allowlist],
            "none",
        );
        let both = mine.intersect_with(&theirs);
        assert_eq!(both.features, ["process_execute", "filesystem_write"]);
        assert_eq!(both.network_mode_names(), ["none"]);
        assert_eq!(both.isolation, "namespace");
        assert_eq!(mine.network_mode_names(), ["inherit", "none"]);
    }
}
