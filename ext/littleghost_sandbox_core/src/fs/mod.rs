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

mod walk;
mod write;

#[cfg(all(test, target_os = "linux"))]
mod tests;

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType};
use rustix::io::Errno;

use crate::denial::Reason;
use crate::error::{refused, tool, Error, Result};
use crate::grants::{Access, Grant, Identity};
use crate::paths;

use walk::{Failure, Strategy, WalkError};

const OUTSIDE: &str = "Path is outside the sandbox scope";
const NOT_A_FILE: &str = "Path is not a file";
const DOES_NOT_EXIST: &str = "Path does not exist";
const TRAVERSES_SYMLINK: &str = "Path cannot traverse a symbolic link";
const MULTIPLY_LINKED: &str = "Multiply-linked files are not accessible through sandbox tools";
const SOURCE_CHANGED: &str = "Sandbox mount source changed after initialization";
const READ_LIMIT: &str = "File exceeds the read limit";
const READ_ONLY: &str = "Sandbox scope is read-only";
const WRITE_LIMIT: &str = "Content exceeds the write limit";
const LIST_LIMIT: &str = "Directory exceeds the listing limit";
const NOT_UTF8: &str = "File is not valid UTF-8 text";
/// Refusals that get ": LOGICAL" appended (issue 12); the others already name
/// the path ("Text was not found in ...") or are about the grant, not the path.
const NAMES_PATH: [&str; 10] = [
    OUTSIDE,
    NOT_A_FILE,
    DOES_NOT_EXIST,
    TRAVERSES_SYMLINK,
    MULTIPLY_LINKED,
    READ_ONLY,
    NOT_UTF8,
    write::WRITE_SYMLINK,
    "Path must identify a sandbox entry",
    "Path escapes the sandbox scope",
];

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
            Rule::Hidden => Err(refused(Reason::OutsideScope, OUTSIDE)),
            Rule::ReadOnly if writes => Err(refused(Reason::ReadOnly, READ_ONLY)),
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
    pub fn new(grants: Vec<Grant>, deny_markers: Vec<Grant>, limits: FsLimits) -> Result<Broker> {
        let strategy = walk::kernel_strategy();
        let marked = grants
            .into_iter()
            .map(|grant| (grant, false))
            .chain(deny_markers.into_iter().map(|grant| (grant, true)));
        let mut roots = marked
            .map(|(grant, marker)| Root::pin(&grant, marker, strategy))
            .collect::<Result<Vec<_>>>()?;
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

    /// Issue 7 (H.1 at build time): the broker pins its roots by path when it
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
                    return Err(tool(format!(
                        "workspace path changed after opening: {name}"
                    )));
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
    pub fn read(&self, physical: &Path, logical: &str) -> Result<String> {
        self.read_file(physical)
            .map_err(|error| self.name_path(error, logical))
    }

    /// Lists a directory, one name a line, directories suffixed with `/` (14.9).
    pub fn list(&self, physical: &Path, logical: &str) -> Result<String> {
        self.list_dir(physical)
            .map_err(|error| self.name_path(error, logical))
    }

    /// Writes `content` atomically, replacing any existing regular file (14.10).
    pub fn write(&self, physical: &Path, logical: &str, content: &[u8]) -> Result<String> {
        self.write_file(physical, logical, content)
            .map_err(|error| self.name_path(error, logical))
    }

    /// Replaces the single occurrence of `old_text` with `new_text` literally (14.11).
    pub fn replace(
        &self,
        physical: &Path,
        logical: &str,
        old_text: &[u8],
        new_text: &[u8],
    ) -> Result<String> {
        self.replace_text(physical, logical, old_text, new_text)
            .map_err(|error| self.name_path(error, logical))
    }

    /// Issue 12: a refusal names the caller's logical path (never a host
    /// path) and, for a limit, the limit; today's wording stays the prefix.
    fn name_path(&self, error: Error, logical: &str) -> Error {
        let (message, reason) = match error {
            Error::Tool(message) => (message, None),
            Error::Refused(refusal) => (refusal.message, Some(refusal.reason)),
            other => return other,
        };
        let limits = &self.limits;
        let named = match message.as_str() {
            READ_LIMIT => format!("{READ_LIMIT} of {} bytes: {logical}", limits.read_bytes),
            WRITE_LIMIT => format!("{WRITE_LIMIT} of {} bytes: {logical}", limits.write_bytes),
            LIST_LIMIT => format!("{LIST_LIMIT} of {} entries: {logical}", limits.list_entries),
            m if NAMES_PATH.contains(&m) => format!("{m}: {logical}"),
            _ => message,
        };
        match reason {
            Some(reason) => refused(reason, named),
            None => Error::Tool(named),
        }
    }

    fn read_file(&self, physical: &Path) -> Result<String> {
        let resolved = self.resolve(physical, true)?;
        let root = self.verify(&resolved)?;
        let file = if resolved.effective.guarded_reads {
            let (parent, name, _) = self.open_parent(&root, &resolved, Wording::Read, false)?;
            let parent = parent.get(&root);
            rfs::openat(
                parent,
                name,
                walk::FILE_READ | walk::ALWAYS,
                rfs::Mode::empty(),
            )
            .map_err(|errno| walk_error(Wording::Read, explain_last(parent, name, errno)))?
        } else {
            walk::open_beneath(
                self.strategy,
                root.as_fd(),
                &resolved.below,
                walk::FILE_READ,
            )
            .map_err(|error| walk_error(Wording::Read, error))?
        };
        let bytes = self.read_regular(file)?;
        String::from_utf8(bytes).map_err(|_| tool(NOT_UTF8))
    }

    fn list_dir(&self, physical: &Path) -> Result<String> {
        let path = lexical_path(physical)?;
        let virtual_children = self.virtual_children(&path);
        if !self.visible_covers(&path) && !virtual_children.is_empty() {
            return Ok(join_listing(virtual_children));
        }
        let resolved = self.resolve_clean(&path, false)?;
        let root = self.verify(&resolved)?;
        let dir = if resolved.effective.guarded_reads && !resolved.below.as_os_str().is_empty() {
            let (dir, _) = self.open_dirs(
                root.as_fd(),
                resolved.effective.rule,
                &resolved.below,
                walk::DIR_READ,
                Wording::List,
                false,
            )?;
            dir.ok_or_else(|| tool(DOES_NOT_EXIST))?
        } else {
            walk::open_beneath(self.strategy, root.as_fd(), &resolved.below, walk::DIR_READ)
                .map_err(|error| walk_error(Wording::List, error))?
        };
        let listed_at = resolved.effective.realpath.join(&resolved.below);
        let mut names = self.directory_entries(dir, &listed_at)?;
        names.extend(virtual_children);
        Ok(join_listing(names))
    }

    fn write_file(&self, physical: &Path, logical: &str, content: &[u8]) -> Result<String> {
        let resolved = self.resolve(physical, true)?;
        if !resolved.writable {
            return Err(refused(Reason::ReadOnly, READ_ONLY));
        }
        self.check_write_size(content)?;
        let root = self.verify(&resolved)?;
        let (parent, name, _) = self.open_parent(&root, &resolved, Wording::Write, true)?;
        write::replace_file(parent.get(&root), name, content)?;
        Ok(wrote(content, logical))
    }

    fn replace_text(
        &self,
        physical: &Path,
        logical: &str,
        old_text: &[u8],
        new_text: &[u8],
    ) -> Result<String> {
        if old_text.is_empty() {
            return Err(tool("Text to replace cannot be empty"));
        }
        let resolved = self.resolve(physical, true)?;
        let root = self.verify(&resolved)?;
        let (parent, name, rule) = self.open_parent(&root, &resolved, Wording::Read, false)?;
        let parent = parent.get(&root);
        let file = rfs::openat(
            parent,
            name,
            walk::FILE_READ | walk::ALWAYS,
            rfs::Mode::empty(),
        )
        .map_err(|errno| walk_error(Wording::Read, explain_last(parent, name, errno)))?;
        let content = self.read_regular(file)?;
        let text = String::from_utf8(content).map_err(|_| tool(NOT_UTF8))?;
        let at = single_occurrence(&text, old_text, logical)?;
        if !resolved.writable {
            return Err(refused(Reason::ReadOnly, READ_ONLY));
        }
        rule.check(true)?;
        let mut updated = Vec::with_capacity(text.len() - old_text.len() + new_text.len());
        updated.extend_from_slice(&text.as_bytes()[..at]);
        updated.extend_from_slice(new_text);
        updated.extend_from_slice(&text.as_bytes()[at + old_text.len()..]);
        self.check_write_size(&updated)?;
        write::replace_file(parent, name, &updated)?;
        Ok(wrote(&updated, logical))
    }

    /// Whether `operation` on `physical` would get past the broker (14.12).
    pub fn allows(&self, operation: FsOperation, physical: &Path) -> bool {
        self.allowed(operation, physical).unwrap_or(false)
    }

    fn allowed(&self, operation: FsOperation, physical: &Path) -> Result<bool> {
        let path = lexical_path(physical)?;
        if operation == FsOperation::List
            && !self.visible_covers(&path)
            && !self.virtual_children(&path).is_empty()
        {
            return Ok(true);
        }
        let resolved = self.resolve_clean(&path, false)?;
        if operation.writes() && !resolved.writable {
            return Ok(false);
        }
        let root = self.verify(&resolved)?;
        let Some(name) = resolved.below.file_name() else {
            return Ok(true); // a grant root: verify opened it as a directory
        };
        let parent_path = resolved.below.parent().unwrap_or(Path::new(""));
        let parent_fd;
        let parent = if parent_path.as_os_str().is_empty() {
            root.as_fd()
        } else {
            let opened = if self.guarded(resolved.effective, operation.writes()) {
                match self.walk_dirs(
                    root.as_fd(),
                    resolved.effective.rule,
                    parent_path,
                    walk::DIR_HANDLE,
                    operation.writes(),
                ) {
                    Ok((fd, _)) => Ok(fd),
                    Err(Walked::Refused(_)) => return Ok(false),
                    Err(Walked::Failed(error)) => Err(error),
                }
            } else {
                walk::open_beneath(self.strategy, root.as_fd(), parent_path, walk::DIR_HANDLE)
            };
            match opened {
                Ok(fd) => {
                    parent_fd = fd;
                    parent_fd.as_fd()
                }
                Err(WalkError {
                    failure: Failure::Os(Errno::ACCESS),
                    ..
                }) => return Ok(true),
                Err(_) => return Ok(false),
            }
        };
        Ok(match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            // A directory that is itself a stricter grant is judged by its identity.
            Ok(stat) => {
                FileType::from_raw_mode(stat.st_mode) != FileType::Symlink
                    && !self
                        .rule_of(identity(&stat))
                        .is_some_and(|rule| rule.refuses(operation.writes()))
            }
            Err(Errno::NOENT) => operation.writes(),
            Err(Errno::ACCESS) => true,
            Err(_) => false,
        })
    }

    // ---- resolution (14.1, 14.4, 14.7) ----

    fn resolve(&self, physical: &Path, entry_required: bool) -> Result<Resolved<'_>> {
        self.resolve_clean(&lexical_path(physical)?, entry_required)
    }

    fn resolve_clean(&self, path: &Path, entry_required: bool) -> Result<Resolved<'_>> {
        let lexical = self
            .roots
            .iter()
            .filter(|root| clean_remainder(path, &root.target).is_some())
            .max_by_key(|root| root.target_depth)
            .ok_or_else(|| refused(Reason::OutsideScope, OUTSIDE))?;
        let remainder = clean_remainder(path, &lexical.target).unwrap_or(Path::new(""));
        if entry_required && remainder.as_os_str().is_empty() {
            return Err(tool("Path must identify a sandbox entry"));
        }
        // `join("")` would add a trailing slash, which the byte comparisons below must not see.
        let candidate = if remainder.as_os_str().is_empty() {
            lexical.realpath.clone()
        } else {
            lexical.realpath.join(remainder)
        };
        // Iterators rather than collected Vecs: this runs on every operation.
        let containing = || {
            self.roots.iter().filter(|root| {
                (std::ptr::eq(*root, lexical) || root.protecting)
                    && clean_remainder(&candidate, &root.realpath).is_some()
            })
        };
        let depth = |root: &Root| root.realpath_depth;
        let deepest = containing().map(depth).max().unwrap_or(0);
        let tied = || containing().filter(|root| depth(root) == deepest);
        // [DEV] tie: a tool-visible grant wins, read-only if any tied grant is.
        let effective = tied()
            .find(|root| root.visible)
            .ok_or_else(|| refused(Reason::OutsideScope, OUTSIDE))?;
        let writable = tied().all(|root| root.access.writable());
        let below = clean_remainder(&candidate, &effective.realpath)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        Ok(Resolved {
            lexical,
            effective,
            writable,
            below,
        })
    }

    fn visible_covers(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|root| root.visible && paths::is_within(path, &root.target))
    }

    /// First component below `path` of each tool-visible grant strictly beneath it, as `name/`.
    fn virtual_children(&self, path: &Path) -> Vec<Vec<u8>> {
        self.roots
            .iter()
            .filter(|root| root.visible)
            .filter_map(|root| paths::remainder(&root.target, path)?.components().next())
            .map(|first| {
                let mut name = first.as_os_str().as_bytes().to_vec();
                name.push(b'/');
                name
            })
            .collect()
    }

    // ---- identity (14.3) ----

    /// Opens the effective root afresh and checks it is the pinned directory
    /// (and the lexical root too, when it differs). What lies beneath is
    /// decided while walking down from this handle (H.1).
    fn verify(&self, resolved: &Resolved<'_>) -> Result<OwnedFd> {
        let root = self.open_pinned(resolved.effective)?;
        if !std::ptr::eq(resolved.lexical, resolved.effective) {
            self.open_pinned(resolved.lexical)?;
        }
        Ok(root)
    }

    /// Whether operations below `root` must decide by identity at every directory.
    fn guarded(&self, root: &Root, writes: bool) -> bool {
        if writes {
            root.guarded_writes
        } else {
            root.guarded_reads
        }
    }

    /// The rule of the grant whose root has this identity, if any.
    fn rule_of(&self, id: (u64, u64)) -> Option<Rule> {
        self.identities
            .iter()
            .find(|(known, _)| *known == id)
            .map(|(_, rule)| *rule)
    }

    /// Opens each directory of `dirs` from its parent's handle, starting at
    /// the verified root whose rule is `start`, with `last_flags` for the
    /// last one. Each handle's identity decides the rule from there down
    /// (H.1); the walk stops at the first directory that refuses the access.
    /// Returns the last handle (None for an empty `dirs`) and its rule.
    fn walk_dirs(
        &self,
        root: BorrowedFd<'_>,
        start: Rule,
        dirs: &Path,
        last_flags: rfs::OFlags,
        writes: bool,
    ) -> std::result::Result<(OwnedFd, Rule), Walked> {
        let mut rule = start;
        let mut current: Option<OwnedFd> = None;
        let parts = walk::components(dirs);
        for (index, part) in parts.iter().enumerate() {
            let last = index + 1 == parts.len();
            let parent = current.as_ref().map_or(root, |fd| fd.as_fd());
            let flags = if last { last_flags } else { walk::DIR_HANDLE };
            let fd = walk::open_component(parent, part, flags, last).map_err(Walked::Failed)?;
            let stat = rfs::fstat(&fd).map_err(|errno| Walked::Refused(io_error(errno)))?;
            if let Some(found) = self.rule_of(identity(&stat)) {
                rule = found;
            }
            rule.check(writes).map_err(Walked::Refused)?;
            current = Some(fd);
        }
        match current {
            Some(fd) => Ok((fd, rule)),
            None => Err(Walked::Failed(WalkError {
                last: true,
                failure: Failure::Missing,
            })),
        }
    }

    /// [`Self::walk_dirs`] with its failures worded for `wording`.
    fn open_dirs(
        &self,
        root: BorrowedFd<'_>,
        start: Rule,
        dirs: &Path,
        last_flags: rfs::OFlags,
        wording: Wording,
        writes: bool,
    ) -> Result<(Option<OwnedFd>, Rule)> {
        match self.walk_dirs(root, start, dirs, last_flags, writes) {
            Ok((fd, rule)) => Ok((Some(fd), rule)),
            Err(Walked::Refused(error)) => Err(error),
            Err(Walked::Failed(error)) => Err(walk_error(wording, error)),
        }
    }

    fn open_pinned(&self, root: &Root) -> Result<OwnedFd> {
        let fd = walk::open_absolute_dir(self.strategy, &root.realpath)
            .map_err(|_| tool(SOURCE_CHANGED))?;
        let stat = rfs::fstat(&fd).map_err(|_| tool(SOURCE_CHANGED))?;
        if identity(&stat) != (root.dev, root.ino) {
            return Err(tool(SOURCE_CHANGED));
        }
        Ok(fd)
    }

    // ---- helpers shared by the operations ----

    /// Opens the directory holding the last component of `resolved.below`
    /// and returns it with that component's name and the rule governing it
    /// (checked for `writes`). The root itself is not an entry.
    fn open_parent<'p>(
        &self,
        root: &OwnedFd,
        resolved: &'p Resolved<'_>,
        wording: Wording,
        writes: bool,
    ) -> Result<(Parent, &'p OsStr, Rule)> {
        let below = &resolved.below;
        let start = resolved.effective.rule;
        let name = below.file_name().ok_or_else(|| tool(NOT_A_FILE))?;
        let parent_path = below.parent().unwrap_or(Path::new(""));
        if parent_path.as_os_str().is_empty() {
            start.check(writes)?;
            return Ok((Parent::Root, name, start));
        }
        let intermediate = |error: WalkError| {
            walk_error(
                wording,
                WalkError {
                    last: false,
                    ..error
                },
            )
        };
        // Write and replace change the entry; read comes here only when its
        // reads are guarded, which implies guarded writes.
        if resolved.effective.guarded_writes {
            return match self.walk_dirs(root.as_fd(), start, parent_path, walk::DIR_HANDLE, writes)
            {
                Ok((fd, rule)) => Ok((Parent::Opened(fd), name, rule)),
                Err(Walked::Refused(error)) => Err(error),
                Err(Walked::Failed(error)) => Err(intermediate(error)),
            };
        }
        let fd = walk::open_beneath(self.strategy, root.as_fd(), parent_path, walk::DIR_HANDLE)
            .map_err(intermediate)?;
        Ok((Parent::Opened(fd), name, start))
    }

    /// Reads a regular, singly-linked file within the read limit (14.6, 14.8).
    fn read_regular(&self, fd: OwnedFd) -> Result<Vec<u8>> {
        let stat = rfs::fstat(&fd).map_err(io_error)?;
        check_regular(&stat)?;
        let limit = self.limits.read_bytes;
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > limit {
            return Err(refused(Reason::ReadLimit, READ_LIMIT));
        }
        const MAX_PREALLOCATION: u64 = 64 << 20;
        let mut bytes = Vec::with_capacity(size.min(MAX_PREALLOCATION) as usize + 1);
        std::fs::File::from(fd)
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| tool(format!("Could not read file: {error}")))?;
        if bytes.len() as u64 > limit {
            return Err(refused(Reason::ReadLimit, READ_LIMIT));
        }
        Ok(bytes)
    }

    fn check_write_size(&self, content: &[u8]) -> Result<()> {
        if content.len() as u64 > self.limits.write_bytes {
            return Err(refused(Reason::WriteLimit, WRITE_LIMIT));
        }
        Ok(())
    }

    /// Entry names of an open directory, suffixed and filtered (14.9, W11).
    fn directory_entries(&self, dir: OwnedFd, listed_at: &Path) -> Result<Vec<Vec<u8>>> {
        let hidden: Vec<&Root> = self
            .roots
            .iter()
            .filter(|root| {
                !root.visible
                    && !self
                        .roots
                        .iter()
                        .any(|r| r.visible && r.realpath == root.realpath)
            })
            .collect();
        let mut entries = rfs::Dir::new(dir).map_err(io_error)?;
        let mut names = Vec::new();
        let mut count: u64 = 0;
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(io_error)?;
            let lookup = entries.fd().map_err(io_error)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            count += 1;
            if count > self.limits.list_entries {
                return Err(refused(Reason::ListLimit, LIST_LIMIT));
            }
            let name_os = OsStr::from_bytes(name);
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => rfs::statat(lookup, name_os, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory)
                    .unwrap_or(false),
                _ => false,
            };
            if is_dir && self.is_hidden(&hidden, lookup, listed_at, name_os, entry.ino()) {
                continue;
            }
            let mut shown = name.to_vec();
            if is_dir {
                shown.push(b'/');
            }
            names.push(shown);
        }
        Ok(names)
    }

    /// W11: a directory that is a runtime-only grant or deny marker is not listed.
    fn is_hidden(
        &self,
        hidden: &[&Root],
        dir: BorrowedFd<'_>,
        listed_at: &Path,
        name: &OsStr,
        ino: u64,
    ) -> bool {
        if hidden.is_empty() {
            return false;
        }
        let child = listed_at.join(name);
        if hidden.iter().any(|root| root.realpath == child) {
            return true;
        }
        // A hidden directory moved or reached another way: compare identities.
        // (d_ino differs from st_ino only at mount points, covered above.)
        hidden.iter().any(|root| root.ino == ino)
            && rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|stat| {
                    hidden
                        .iter()
                        .any(|root| identity(&stat) == (root.dev, root.ino))
                })
                .unwrap_or(true)
    }
}

impl Root {
    fn pin(grant: &Grant, marker: bool, strategy: Strategy) -> Result<Root> {
        let missing = || tool("Sandbox mount source does not exist");
        let realpath = std::fs::canonicalize(&grant.source).map_err(|_| missing())?;
        let handle = walk::open_absolute_dir(strategy, &realpath).map_err(|errno| match errno {
            Errno::NOTDIR => tool("Sandbox mount source is not a directory"),
            _ => missing(),
        })?;
        let stat = rfs::fstat(&handle).map_err(|_| missing())?;
        let visible = grant.tools && !marker;
        let (dev, ino) = identity(&stat);
        let target = paths::clean(&grant.target);
        let mut chain_devs: Vec<u64> = realpath
            .ancestors()
            .filter_map(|ancestor| std::fs::symlink_metadata(ancestor).ok())
            .map(|meta| std::os::unix::fs::MetadataExt::dev(&meta))
            .collect();
        chain_devs.sort_unstable();
        chain_devs.dedup();
        Ok(Root {
            target_depth: target.components().count(),
            realpath_depth: realpath.components().count(),
            target,
            realpath,
            dev,
            ino,
            _handle: handle,
            access: grant.access,
            visible,
            protecting: grant.protect_aliases || !visible,
            chain_devs,
            // Decided in Broker::new, once every root is pinned.
            rule: Rule::Hidden,
            guarded_reads: true,
            guarded_writes: true,
        })
    }
}

/// How an identity walk ended early.
enum Walked {
    /// A directory's identity refused the access, or could not be read.
    Refused(Error),
    /// A component could not be opened.
    Failed(WalkError),
}

/// The rule of each distinct root identity: hidden unless some grant with
/// that identity is tool-visible; read-only if any of them is (14.4 tie).
fn identity_rules(roots: &[Root]) -> Vec<((u64, u64), Rule)> {
    let mut rules: Vec<((u64, u64), Rule)> = Vec::new();
    for root in roots {
        let id = (root.dev, root.ino);
        if rules.iter().any(|(known, _)| *known == id) {
            continue;
        }
        let group = || roots.iter().filter(|r| (r.dev, r.ino) == id);
        let rule = if !group().any(|r| r.visible) {
            Rule::Hidden
        } else if group().any(|r| !r.access.writable()) {
            Rule::ReadOnly
        } else {
            Rule::Writable
        };
        rules.push((id, rule));
    }
    rules
}

/// The parent directory of an entry: the verified root itself, or a handle below it.
enum Parent {
    Root,
    Opened(OwnedFd),
}

impl Parent {
    fn get<'a>(&'a self, root: &'a OwnedFd) -> BorrowedFd<'a> {
        match self {
            Parent::Root => root.as_fd(),
            Parent::Opened(fd) => fd.as_fd(),
        }
    }
}

/// 14.1: NUL and `..` are refused before anything else; the result is cleaned.
fn lexical_path(physical: &Path) -> Result<PathBuf> {
    let bytes = physical.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(tool("Path contains a null byte"));
    }
    if bytes.split(|b| *b == b'/').any(|part| part == b"..") {
        return Err(refused(
            Reason::EscapesScope,
            "Path escapes the sandbox scope",
        ));
    }
    if !physical.is_absolute() {
        return Err(refused(Reason::OutsideScope, OUTSIDE));
    }
    // `Workspace#resolve` hands over clean paths; clean only what is not.
    if is_clean_absolute(bytes) {
        return Ok(physical.to_path_buf());
    }
    Ok(paths::clean(physical))
}

/// True for `/` and for absolute paths without empty, `.` or `..`
/// components or a trailing slash: what `paths::clean` returns unchanged.
fn is_clean_absolute(bytes: &[u8]) -> bool {
    match bytes {
        b"/" => true,
        [b'/', rest @ ..] => rest
            .split(|b| *b == b'/')
            .all(|part| !part.is_empty() && part != b"." && part != b".."),
        _ => false,
    }
}

/// `Path::strip_prefix` for clean absolute paths (see [`is_clean_absolute`]),
/// which every path the broker compares is: lexical paths, grant targets,
/// canonical roots and their joins. Comparing bytes gives the same answer
/// as comparing components, without splitting paths on every operation.
fn clean_remainder<'a>(path: &'a Path, base: &Path) -> Option<&'a Path> {
    let path = path.as_os_str().as_bytes();
    let base = base.as_os_str().as_bytes();
    let rest = if base == b"/" {
        path.strip_prefix(b"/")?
    } else {
        match path.strip_prefix(base)? {
            [] => &[],
            [b'/', rest @ ..] => rest,
            _ => return None,
        }
    };
    Some(Path::new(OsStr::from_bytes(rest)))
}

/// (st_dev, st_ino); their integer types differ between targets.
#[allow(clippy::unnecessary_cast)]
fn identity(stat: &rfs::Stat) -> (u64, u64) {
    (stat.st_dev as u64, stat.st_ino as u64)
}

/// 14.6, on the open handle.
fn check_regular(stat: &rfs::Stat) -> Result<()> {
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(tool(NOT_A_FILE));
    }
    if stat.st_nlink > 1 {
        return Err(refused(Reason::MultiplyLinked, MULTIPLY_LINKED));
    }
    Ok(())
}

/// Explains a failed open of a single entry `name` in `parent`.
fn explain_last(parent: BorrowedFd<'_>, name: &OsStr, errno: Errno) -> WalkError {
    let failure = match errno {
        Errno::NOENT | Errno::LOOP => match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                Failure::Symlink
            }
            Err(Errno::NOENT) => Failure::Missing,
            _ => Failure::Os(errno),
        },
        other => Failure::Os(other),
    };
    WalkError {
        last: true,
        failure,
    }
}

/// The message for a failed walk, worded for the operation (14.5, 14.8–14.10).
fn walk_error(wording: Wording, error: WalkError) -> Error {
    let message = match (error.failure, wording) {
        (Failure::Symlink, Wording::Read) if error.last => "Path cannot be a symbolic link",
        (Failure::Symlink, Wording::Write) if error.last => {
            "Write target cannot be a symbolic link"
        }
        (Failure::Symlink, _) => TRAVERSES_SYMLINK,
        (Failure::Missing | Failure::NotDirectory, Wording::Write) => {
            "Write target parent does not exist"
        }
        (Failure::NotDirectory, Wording::List) => "Path is not a directory",
        (Failure::Missing | Failure::NotDirectory, _) => DOES_NOT_EXIST,
        (Failure::Os(errno), _) => return errno_error(errno),
    };
    if error.failure == Failure::Symlink {
        return refused(Reason::Symlink, message);
    }
    tool(message)
}

/// Maps an OS error on a sandbox entry to a message without host paths.
fn errno_error(errno: Errno) -> Error {
    match errno {
        // A socket, a FIFO without a reader, a directory opened for writing...
        Errno::ISDIR | Errno::NXIO | Errno::NODEV | Errno::OPNOTSUPP => tool(NOT_A_FILE),
        // Bad input the caller can fix: say what to change rather than echo the errno.
        Errno::NAMETOOLONG => {
            tool("Path name is too long; shorten each component to at most 255 bytes")
        }
        other => io_error(other),
    }
}

/// An OS failure no rule of §14 names, in our own words: the OS's error text
/// is never embedded (1.2), but the model still learns what it can act on.
fn io_error(errno: Errno) -> Error {
    let reason = match errno {
        Errno::NOSPC | Errno::DQUOT => ": no space left on the host filesystem",
        Errno::ROFS => ": the host filesystem is read-only",
        Errno::ACCESS | Errno::PERM => ": the host refused access",
        _ => "",
    };
    tool(format!("Sandbox filesystem operation failed{reason}"))
}

/// Byte offset of the only non-overlapping occurrence of `old_text` (14.11).
fn single_occurrence(text: &str, old_text: &[u8], logical: &str) -> Result<usize> {
    let not_found = || tool(format!("Text was not found in {logical}"));
    // Text that is not UTF-8 cannot match whole characters of UTF-8 content.
    let needle = std::str::from_utf8(old_text).map_err(|_| not_found())?;
    let mut occurrences = text.match_indices(needle).map(|(at, _)| at);
    let first = occurrences.next().ok_or_else(not_found)?;
    if occurrences.next().is_some() {
        return Err(tool(format!("Text occurs more than once in {logical}")));
    }
    Ok(first)
}

fn wrote(content: &[u8], logical: &str) -> String {
    format!("Wrote {} bytes to {}", content.len(), logical)
}

/// Sorts bytewise after suffixing, de-duplicates and joins with newlines.
fn join_listing(mut names: Vec<Vec<u8>>) -> String {
    names.sort();
    names.dedup();
    let joined = names.join(&b"\n"[..]);
    String::from_utf8(joined)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}
