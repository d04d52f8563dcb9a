//! Grants: a workspace directory with an access mode and a visibility.
//! The rule "a grant can only narrow" lives here (`Grant::narrow`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::kind::Kind;
use crate::paths;

/// Why a grant cannot be narrowed as asked (9.4, SC.3 to SC.7, SC.16): a
/// scope or a mount may only narrow what its parent grants. Every one is a
/// [`Kind::Capability`] refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Narrowing {
    /// The requested target is not beneath the parent grant's.
    #[error("sandbox scope mount {} is outside its parent mount {}", .target.display(), .parent.display())]
    OutsideMount { target: PathBuf, parent: PathBuf },
    /// A scope asked for a directory no parent grant of its kind names.
    #[error("sandbox scope cannot expose a path outside its parent")]
    OutsideParent,
    #[error("sandbox scope cannot make a read-only mount writable")]
    Writable,
    /// The target resolves (through a symlink) outside the parent grant.
    #[error("sandbox scope mount {} escapes its parent", .0.display())]
    Escapes(PathBuf),
    /// The target's real directory is not the one its parent grant gives.
    #[error("sandbox scope mount {} must come from its parent", .0.display())]
    ForeignSource(PathBuf),
    #[error("sandbox scope mount source is unavailable")]
    SourceUnavailable,
    #[error("sandbox scope mount source changed after initialization")]
    SourceChanged,
}

impl Narrowing {
    /// Always [`Kind::Capability`]: the scope tries to widen.
    pub fn kind(&self) -> Kind {
        Kind::Capability
    }
}

/// The result of narrowing a grant.
pub type Result<T, E = Narrowing> = std::result::Result<T, E>;

/// `:read_only` or `:read_write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

impl Access {
    /// Parses the Ruby symbol name.
    pub fn parse(name: &str) -> Option<Access> {
        match name {
            "read_only" => Some(Access::ReadOnly),
            "read_write" => Some(Access::ReadWrite),
            _ => None,
        }
    }

    /// The Ruby symbol name.
    pub fn name(self) -> &'static str {
        match self {
            Access::ReadOnly => "read_only",
            Access::ReadWrite => "read_write",
        }
    }

    pub fn writable(self) -> bool {
        self == Access::ReadWrite
    }
}

/// A directory made available to tools and/or processes (Ruby: `Sandbox::Mount`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Grant {
    /// Host directory (physical).
    pub source: PathBuf,
    /// Where it appears: for workspace grants the same lexical absolute path.
    pub target: PathBuf,
    pub access: Access,
    /// True for a tool-visible ("file") grant, false for a process-only ("runtime") grant.
    pub tools: bool,
    /// Physical aliases of this directory keep its access (SC.6, 14.4).
    pub protect_aliases: bool,
}

impl Grant {
    /// True iff `path` equals the target or lies beneath it (9.3).
    pub fn covers(&self, path: &Path) -> bool {
        paths::is_within(path, &self.target)
    }

    /// A narrower grant at `target` with `access` (9.4): the receiver must
    /// cover the target, access may only narrow, and the new source is the
    /// realpath of the corresponding directory, which must stay inside the
    /// receiver's realpath.
    pub fn narrow(&self, target: &Path, access: Access) -> Result<Grant> {
        let target = paths::clean(target);
        if !self.covers(&target) {
            return Err(Narrowing::OutsideMount {
                target,
                parent: self.target.clone(),
            });
        }
        if access.writable() && !self.access.writable() {
            return Err(Narrowing::Writable);
        }
        let base = realpath(&self.source)?;
        let relative = paths::remainder(&target, &self.target).unwrap_or(Path::new(""));
        let source = realpath(&base.join(relative))?;
        if !paths::is_within(&source, &base) {
            return Err(Narrowing::Escapes(target));
        }
        Ok(Grant {
            source,
            target,
            access,
            tools: self.tools,
            protect_aliases: self.protect_aliases,
        })
    }
}

/// Where a directory really is: used to pin grant roots and detect swaps.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    pub realpath: PathBuf,
    pub dev: u64,
    pub ino: u64,
}

impl Identity {
    /// Captures the current identity of `path`, or `None` if it is gone or unreadable.
    pub fn capture(path: &Path) -> Option<Identity> {
        let realpath = std::fs::canonicalize(path).ok()?;
        let meta = std::fs::metadata(&realpath).ok()?;
        Some(Identity {
            realpath,
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// `realpath(3)` with the scope error messages of 9.4.
pub fn realpath(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|_| Narrowing::SourceUnavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(dir: &Path, access: Access) -> Grant {
        Grant {
            source: dir.to_path_buf(),
            target: dir.to_path_buf(),
            access,
            tools: true,
            protect_aliases: true,
        }
    }

    #[test]
    fn narrow_refuses_widening_and_outside_targets() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let ro = grant(&root, Access::ReadOnly);
        let err = ro.narrow(&root.join("sub"), Access::ReadWrite).unwrap_err();
        assert!(err.to_string().contains("read-only mount writable"));
        let err = ro
            .narrow(Path::new("/elsewhere"), Access::ReadOnly)
            .unwrap_err();
        assert!(err.to_string().contains("outside its parent mount"));
        let narrowed = ro.narrow(&root.join("sub"), Access::ReadOnly).unwrap();
        assert_eq!(narrowed.source, root.join("sub"));
    }

    #[test]
    fn narrow_refuses_a_symlink_that_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let rw = grant(&root, Access::ReadWrite);
        let err = rw.narrow(&root.join("link"), Access::ReadOnly).unwrap_err();
        assert!(err.to_string().contains("escapes its parent"));
        let err = rw
            .narrow(&root.join("missing"), Access::ReadOnly)
            .unwrap_err();
        assert!(err.to_string().contains("unavailable"));
    }
}
