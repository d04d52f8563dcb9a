//! Filesystem broker over capability handles (SPEC §14).
//!
//! Every tool-facing read, list, write and replace goes through [`Broker`].
//! Paths arrive already resolved lexically by `Workspace#resolve`; the broker
//! decides which grant governs them (14.4, 14.7), re-checks that grant roots
//! are still the directories pinned at construction (14.3), and then touches
//! the filesystem only through handles opened beneath the verified root,
//! never following a symlink (14.5). Messages name the caller's logical path,
//! never a host path (W10).
//!
//! H.1: the path only predicts which grant governs an entry. Where a stricter
//! grant (read-only, or hidden) could lie beneath the starting root, each
//! directory is opened from its parent's handle and its identity (device,
//! inode) decides the rule, so a concurrent rename can make an operation
//! fail but never land on another grant's content. Elsewhere one
//! `openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)` from the pinned root does.

pub mod anchor;
pub mod error;
mod errors;
mod operations;
pub mod own;
mod resolve;
mod transfer;
mod walk;
mod write;

#[cfg(all(test, target_os = "linux"))]
mod tests;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::grants::{Access, Grant, Identity};
pub use anchor::{Anchor, AnchorError, Anchors};
pub use error::{Error, Result};
pub use transfer::EntryInfo;

use errors::*;
use resolve::*;
use walk::Strategy;

/// What tools may do inside a directory, decided by its identity (H.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// A runtime-only grant or deny marker: outside the scope for tools.
    Hidden,
    ReadOnly,
    Writable,
}

impl Rule {
    /// True when this rule refuses reading (or, with `writes`, writing).
    fn refuses(self, writes: bool) -> bool {
        match self {
            Rule::Hidden => true,
            Rule::ReadOnly => writes,
            Rule::Writable => false,
        }
    }

    fn check(self, writes: bool) -> Result<()> {
        match self {
            Rule::Hidden => Err(Error::Outside),
            Rule::ReadOnly if writes => Err(Error::ReadOnly),
            _ => Ok(()),
        }
    }
}

/// Size limits applied by the broker (from `Limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsLimits {
    /// Largest file `read`/`replace` accept, in bytes.
    pub read_bytes: u64,
    /// Largest content `write`/`replace` produce, in bytes.
    pub write_bytes: u64,
    /// Most entries a listed directory may hold.
    pub list_entries: u64,
}

/// A brokered operation, as named by `allows?`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsOperation {
    Read,
    List,
    Write,
    Replace,
}

impl FsOperation {
    fn writes(self) -> bool {
        matches!(self, FsOperation::Write | FsOperation::Replace)
    }
}

/// How a walk failure is worded: each operation has its own messages (14.8–14.10).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wording {
    /// `read` and `replace`.
    Read,
    List,
    Write,
}

/// A grant root pinned when the broker was built.
#[derive(Debug)]
struct Root {
    /// Lexical workspace path the grant appears at.
    target: PathBuf,
    /// Canonical host path, pinned.
    realpath: PathBuf,
    /// Component counts of `target` and `realpath`, used to pick the deepest grant.
    target_depth: usize,
    realpath_depth: usize,
    dev: u64,
    ino: u64,
    /// Held so the pinned inode cannot be freed and its number reused by a new
    /// directory, and so a deleted root can be told from a moved one.
    _handle: OwnedFd,
    access: Access,
    /// Tool-visible; false for runtime-only grants and deny markers.
    visible: bool,
    /// Physical aliases of this directory keep its rules (protect_aliases or hidden).
    protecting: bool,
    /// Devices of the root and of each of its ancestors: a directory can only
    /// be renamed beneath another one on a device its own chain touches.
    chain_devs: Vec<u64>,
    /// The rule of every grant with this root's identity (the 14.4 tie rule).
    rule: Rule,
    /// Whether a stricter grant could be (or be moved) beneath this root, so
    /// that reads, or writes, must decide by identity at every directory.
    guarded_reads: bool,
    guarded_writes: bool,
}

/// The grant that governs a path, and where the path lies below its root.
struct Resolved<'b> {
    lexical: &'b Root,
    effective: &'b Root,
    writable: bool,
    /// Plain components below `effective.realpath`; empty for the root itself.
    below: PathBuf,
}

/// The filesystem broker of one scope: its grants, deny markers and limits.
#[derive(Debug)]
pub struct Broker {
    roots: Vec<Root>,
    /// Each distinct root identity (dev, ino) with the rule it imposes.
    identities: Vec<((u64, u64), Rule)>,
    limits: FsLimits,
    strategy: Strategy,
}

impl Broker {
    /// grants: the scope's grants (tool-visible and runtime-only, source = realpath).
    /// deny_markers: runtime-only grants to hide from tools (SC.8). Pins each
    /// root's identity (14.3): a missing root raises "Sandbox mount source does not exist".
    pub fn new(
        grants: Vec<Grant>,
        deny_markers: Vec<Grant>,
        limits: FsLimits,
    ) -> crate::Result<Broker> {
        Broker::anchored(grants, deny_markers, limits, None)
    }

    /// [`Broker::new`] pinning every root through the open workspace's
    /// `anchors`: the handle a grant names, or one derived by a
    /// walk from the anchor containing it; a grant no anchor covers is
    /// pinned by its real path. A grant reached through a symlink is refused.
    pub fn anchored(
        grants: Vec<Grant>,
        deny_markers: Vec<Grant>,
        limits: FsLimits,
        anchors: Option<&Anchors>,
    ) -> crate::Result<Broker> {
        let strategy = walk::kernel_strategy();
        let marked = grants
            .into_iter()
            .map(|grant| (grant, false))
            .chain(deny_markers.into_iter().map(|grant| (grant, true)));
        let mut roots = marked
            .map(|(grant, marker)| {
                let anchor = anchors
                    .and_then(|a| a.for_source(&grant.source))
                    .transpose()?;
                Ok(Root::pin(&grant, marker, strategy, anchor.as_ref())?)
            })
            .collect::<crate::Result<Vec<_>>>()?;
        let identities = identity_rules(&roots);
        let rule_of = |id: (u64, u64)| {
            identities
                .iter()
                .find(|(known, _)| *known == id)
                .map_or(Rule::Hidden, |(_, rule)| *rule)
        };
        let decided: Vec<(Rule, bool, bool)> = roots
            .iter()
            .map(|root| {
                let id = (root.dev, root.ino);
                // Another identity, stricter than needed, on a chain that
                // could reach beneath this root (same device somewhere).
                let guarded = |writes: bool| {
                    identities.iter().any(|(other, rule)| {
                        *other != id
                            && rule.refuses(writes)
                            && roots.iter().any(|r| {
                                (r.dev, r.ino) == *other && r.chain_devs.contains(&root.dev)
                            })
                    })
                };
                (rule_of(id), guarded(false), guarded(true))
            })
            .collect();
        for (root, (rule, reads, writes)) in roots.iter_mut().zip(decided) {
            root.rule = rule;
            root.guarded_reads = reads;
            root.guarded_writes = writes;
        }
        Ok(Broker {
            roots,
            identities,
            limits,
            strategy,
        })
    }

    /// H.1 at build time: the broker pins its roots by path when it
    /// is built, possibly long after the workspace was opened. `recorded` is
    /// what the workspace verified at `open` (name, realpath, dev, ino): every
    /// pinned root at a recorded realpath must be that very directory, so a
    /// directory exchanged into place before the first file operation is
    /// refused ("workspace path changed after opening: NAME") instead of
    /// pinned as the grant.
    pub fn check_pins(&self, recorded: &[(String, Identity)]) -> Result<()> {
        for root in &self.roots {
            let expected = recorded
                .iter()
                .find(|(_, identity)| identity.realpath == root.realpath);
            if let Some((name, identity)) = expected {
                if (identity.dev, identity.ino) != (root.dev, root.ino) {
                    return Err(Error::PinMoved(name.clone()));
                }
            }
        }
        Ok(())
    }

    /// Forces the per-component fallback so tests cover both strategies.
    #[cfg(test)]
    fn with_component_walk(mut self) -> Broker {
        self.strategy = Strategy::Components;
        self
    }

    /// Reads a UTF-8 text file (14.8).
    pub fn read(&self, physical: &Path, logical: &str) -> crate::Result<String> {
        self.read_file(physical)
            .map_err(|error| error.on(logical).into())
    }

    /// Lists a directory, one name a line, directories suffixed with `/` (14.9).
    pub fn list(&self, physical: &Path, logical: &str) -> crate::Result<String> {
        self.list_dir(physical)
            .map_err(|error| error.on(logical).into())
    }

    /// Writes `content` atomically, replacing any existing regular file (14.10).
    pub fn write(&self, physical: &Path, logical: &str, content: &[u8]) -> crate::Result<String> {
        self.write_file(physical, logical, content)
            .map_err(|error| error.on(logical).into())
    }

    /// Replaces the single occurrence of `old_text` with `new_text` literally (14.11).
    pub fn replace(
        &self,
        physical: &Path,
        logical: &str,
        old_text: &[u8],
        new_text: &[u8],
    ) -> crate::Result<String> {
        self.replace_text(physical, logical, old_text, new_text)
            .map_err(|error| error.on(logical).into())
    }

    /// Whether `operation` on `physical` would get past the broker (14.12).
    pub fn allows(&self, operation: FsOperation, physical: &Path) -> bool {
        self.allowed(operation, physical).unwrap_or(false)
    }
}

/// The broker's wording of results, for a client whose broker runs
/// elsewhere (`crate::remote`): the same texts as a local operation's.
pub use operations::{join_listing, single_occurrence, wrote};
