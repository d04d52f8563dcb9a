//! Which grant governs a path (14.1, 14.4, 14.7), whether its root is still
//! the pinned directory (14.3), and the walk down from it that decides by
//! identity where a stricter grant could lie beneath (H.1).

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs};
use rustix::io::Errno;

use super::walk::{self, Failure, Strategy, WalkError};
use super::*;
use crate::fs::anchor::Anchor;
use crate::grants::Grant;
use crate::paths;

impl Broker {
    // ---- resolution (14.1, 14.4, 14.7) ----

    pub(super) fn resolve(&self, physical: &Path, entry_required: bool) -> Result<Resolved<'_>> {
        self.resolve_clean(&lexical_path(physical)?, entry_required)
    }

    pub(super) fn resolve_clean(&self, path: &Path, entry_required: bool) -> Result<Resolved<'_>> {
        let lexical = self
            .roots
            .iter()
            .filter(|root| clean_remainder(path, &root.target).is_some())
            .max_by_key(|root| root.target_depth)
            .ok_or(Error::Outside)?;
        let remainder = clean_remainder(path, &lexical.target).unwrap_or(Path::new(""));
        if entry_required && remainder.as_os_str().is_empty() {
            return Err(Error::NotAnEntry);
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
        let effective = tied().find(|root| root.visible).ok_or(Error::Outside)?;
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

    pub(super) fn visible_covers(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|root| root.visible && paths::is_within(path, &root.target))
    }

    /// First component below `path` of each tool-visible grant strictly beneath it, as `name/`.
    pub(super) fn virtual_children(&self, path: &Path) -> Vec<Vec<u8>> {
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
    pub(super) fn verify(&self, resolved: &Resolved<'_>) -> Result<OwnedFd> {
        let root = self.open_pinned(resolved.effective)?;
        if !std::ptr::eq(resolved.lexical, resolved.effective) {
            self.open_pinned(resolved.lexical)?;
        }
        Ok(root)
    }

    /// Whether operations below `root` must decide by identity at every directory.
    pub(super) fn guarded(&self, root: &Root, writes: bool) -> bool {
        if writes {
            root.guarded_writes
        } else {
            root.guarded_reads
        }
    }

    /// The rule of the grant whose root has this identity, if any.
    pub(super) fn rule_of(&self, id: (u64, u64)) -> Option<Rule> {
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
    pub(super) fn walk_dirs(
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
    pub(super) fn open_dirs(
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

    pub(super) fn open_pinned(&self, root: &Root) -> Result<OwnedFd> {
        let changed = |errno| match exhausted(errno) {
            true => io_error(errno),
            false => Error::SourceChanged,
        };
        let fd = walk::open_absolute_dir(self.strategy, &root.realpath).map_err(changed)?;
        let stat = rfs::fstat(&fd).map_err(changed)?;
        if identity(&stat) != (root.dev, root.ino) {
            return Err(Error::SourceChanged);
        }
        Ok(fd)
    }

    // ---- the entry's parent, shared by the operations ----

    /// Opens the directory holding the last component of `resolved.below`
    /// and returns it with that component's name and the rule governing it
    /// (checked for `writes`). The root itself is not an entry.
    pub(super) fn open_parent<'p>(
        &self,
        root: &OwnedFd,
        resolved: &'p Resolved<'_>,
        wording: Wording,
        writes: bool,
    ) -> Result<(Parent, &'p OsStr, Rule)> {
        let below = &resolved.below;
        let start = resolved.effective.rule;
        let name = below.file_name().ok_or(Error::NotAFile)?;
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
}

impl Root {
    /// Pins `grant`'s root: through its workspace `anchor` when there is one
    /// (the handle `open` took, never a new resolution of the
    /// path), else by the source's real path, opened refusing symlinks.
    pub(super) fn pin(
        grant: &Grant,
        marker: bool,
        strategy: Strategy,
        anchor: Option<&Anchor>,
    ) -> Result<Root> {
        let missing = || Error::SourceMissing;
        let (realpath, handle) = match anchor {
            Some(anchor) => {
                let handle = anchor.fd().try_clone_to_owned().map_err(|errno| {
                    if exhausted(Errno::from_io_error(&errno).unwrap_or(Errno::IO)) {
                        io_error(Errno::from_io_error(&errno).unwrap_or(Errno::IO))
                    } else {
                        missing()
                    }
                })?;
                (anchor.path().to_path_buf(), handle)
            }
            None => {
                let realpath = std::fs::canonicalize(&grant.source).map_err(|_| missing())?;
                let handle =
                    walk::open_absolute_dir(strategy, &realpath).map_err(|errno| match errno {
                        Errno::NOTDIR => Error::SourceNotADirectory,
                        errno if exhausted(errno) => io_error(errno),
                        _ => missing(),
                    })?;
                (realpath, handle)
            }
        };
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
pub(super) enum Walked {
    /// A directory's identity refused the access, or could not be read.
    Refused(Error),
    /// A component could not be opened.
    Failed(WalkError),
}

/// The rule of each distinct root identity: hidden unless some grant with
/// that identity is tool-visible; read-only if any of them is (14.4 tie).
pub(super) fn identity_rules(roots: &[Root]) -> Vec<((u64, u64), Rule)> {
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
pub(super) enum Parent {
    Root,
    Opened(OwnedFd),
}

impl Parent {
    pub(super) fn get<'a>(&'a self, root: &'a OwnedFd) -> BorrowedFd<'a> {
        match self {
            Parent::Root => root.as_fd(),
            Parent::Opened(fd) => fd.as_fd(),
        }
    }
}

/// 14.1: NUL and `..` are refused before anything else; the result is cleaned.
pub(super) fn lexical_path(physical: &Path) -> Result<PathBuf> {
    let bytes = physical.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(Error::NulByte);
    }
    if bytes.split(|b| *b == b'/').any(|part| part == b"..") {
        return Err(Error::Escapes);
    }
    if !physical.is_absolute() {
        return Err(Error::Outside);
    }
    // `Workspace#resolve` hands over clean paths; clean only what is not.
    if is_clean_absolute(bytes) {
        return Ok(physical.to_path_buf());
    }
    Ok(paths::clean(physical))
}

/// True for `/` and for absolute paths without empty, `.` or `..`
/// components or a trailing slash: what `paths::clean` returns unchanged.
pub(super) fn is_clean_absolute(bytes: &[u8]) -> bool {
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
pub(super) fn clean_remainder<'a>(path: &'a Path, base: &Path) -> Option<&'a Path> {
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
pub(super) fn identity(stat: &rfs::Stat) -> (u64, u64) {
    (stat.st_dev as u64, stat.st_ino as u64)
}
