//! Opening paths beneath a directory handle without ever following a symlink
//! (14.5). Fast path: one `openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
//! RESOLVE_NO_MAGICLINKS)`. Fallback, and the way failures are explained: one
//! `openat(O_NOFOLLOW)` per component, each relative to its parent's handle.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{self, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Added to every open: no fd leaks into children, and a FIFO or device can
/// never block us; a terminal never becomes our controlling tty.
pub(super) const ALWAYS: OFlags = OFlags::CLOEXEC
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::NOFOLLOW);

/// `flags` plus [`ALWAYS`]. `openat2` refuses `O_PATH` combined with any
/// flag it ignores, so a lookup handle gets only the ones that apply to it.
pub(super) fn with_always(flags: OFlags) -> OFlags {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if flags.contains(OFlags::PATH) {
        return flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    }
    flags | ALWAYS
}

/// A handle used only to look things up beneath it (no read permission needed).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) const DIR_HANDLE: OFlags = OFlags::PATH.union(OFlags::DIRECTORY);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) const DIR_HANDLE: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY);

/// A directory opened for reading its entries.
pub(super) const DIR_READ: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY);

/// A file opened for reading its bytes.
pub(super) const FILE_READ: OFlags = OFlags::RDONLY;

/// How paths are resolved beneath a handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strategy {
    /// `openat2` with `RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS`.
    Beneath,
    /// One `openat(O_NOFOLLOW)` per component.
    Components,
}

/// The best strategy this kernel offers, probed once per process.
pub(super) fn kernel_strategy() -> Strategy {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        static PROBE: std::sync::OnceLock<Strategy> = std::sync::OnceLock::new();
        *PROBE.get_or_init(|| {
            // ENOSYS on old kernels, EPERM under some seccomp profiles.
            let root = match fs::openat(fs::CWD, "/", with_always(DIR_HANDLE), Mode::empty()) {
                Ok(root) => root,
                Err(_) => return Strategy::Components,
            };
            match fs::openat2(
                &root,
                ".",
                with_always(DIR_HANDLE),
                Mode::empty(),
                beneath_flags(),
            ) {
                Ok(_) => Strategy::Beneath,
                Err(_) => Strategy::Components,
            }
        })
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        Strategy::Components
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn beneath_flags() -> fs::ResolveFlags {
    fs::ResolveFlags::BENEATH | fs::ResolveFlags::NO_SYMLINKS | fs::ResolveFlags::NO_MAGICLINKS
}

/// Why a component could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Missing,
    Symlink,
    NotDirectory,
    Os(Errno),
}

/// A failed walk: what went wrong and whether it was the last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WalkError {
    pub last: bool,
    pub failure: Failure,
}

/// Opens `relative` (plain components only, checked by the caller) beneath
/// `dir`. Intermediate components must be real directories; `flags` apply to
/// the last one, which is never followed either. An empty path opens `dir`
/// itself again with `flags`.
pub(super) fn open_beneath(
    strategy: Strategy,
    dir: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
) -> Result<OwnedFd, WalkError> {
    if relative.as_os_str().is_empty() {
        return fs::openat(dir, ".", with_always(flags), Mode::empty()).map_err(|errno| {
            WalkError {
                last: true,
                failure: Failure::Os(errno),
            }
        });
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if strategy == Strategy::Beneath {
        if let Ok(fd) = fs::openat2(
            dir,
            relative,
            with_always(flags),
            Mode::empty(),
            beneath_flags(),
        ) {
            return Ok(fd);
        }
        // Any failure (including EAGAIN from a concurrent rename) is redone
        // component by component, which also tells exactly what went wrong.
    }
    let _ = strategy;
    walk_components(dir, relative, flags)
}

fn walk_components(
    dir: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
) -> Result<OwnedFd, WalkError> {
    let parts = components(relative);
    let mut current: Option<OwnedFd> = None;
    for (index, part) in parts.iter().enumerate() {
        let last = index + 1 == parts.len();
        let parent = current.as_ref().map_or(dir, |fd| fd.as_fd());
        let fd = open_component(parent, part, if last { flags } else { DIR_HANDLE }, last)?;
        if last {
            return Ok(fd);
        }
        current = Some(fd);
    }
    // Only reachable with no plain components, which the caller excludes.
    Err(WalkError {
        last: true,
        failure: Failure::Missing,
    })
}

/// The plain components of `relative` (the caller has refused `..`).
pub(super) fn components(relative: &Path) -> Vec<&OsStr> {
    relative
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect()
}

/// Opens the single entry `part` of `parent` with `flags`, never following a
/// link; a failure says what the entry actually is.
pub(super) fn open_component(
    parent: BorrowedFd<'_>,
    part: &OsStr,
    flags: OFlags,
    last: bool,
) -> Result<OwnedFd, WalkError> {
    fs::openat(parent, part, with_always(flags), Mode::empty()).map_err(|errno| WalkError {
        last,
        failure: explain(
            parent,
            part,
            errno,
            last && !flags.contains(OFlags::DIRECTORY),
        ),
    })
}

/// Turns an open failure into what the entry actually is (lstat, no follow).
/// `any_type` is true when the open did not require a directory.
fn explain(parent: BorrowedFd<'_>, part: &OsStr, errno: Errno, any_type: bool) -> Failure {
    if !matches!(errno, Errno::NOENT | Errno::NOTDIR | Errno::LOOP) {
        return Failure::Os(errno);
    }
    match fs::statat(parent, part, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => Failure::Missing,
        Err(other) => Failure::Os(other),
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => Failure::Symlink,
            FileType::Directory => Failure::Os(errno),
            _ if any_type => Failure::Os(errno),
            _ => Failure::NotDirectory,
        },
    }
}

/// Opens an absolute directory path as a lookup handle, refusing symlinks in
/// every component, so the path it was opened by is its canonical path.
pub(super) fn open_absolute_dir(strategy: Strategy, path: &Path) -> Result<OwnedFd, Errno> {
    let relative = path.strip_prefix("/").map_err(|_| Errno::INVAL)?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if strategy == Strategy::Beneath {
        let resolve = fs::ResolveFlags::NO_SYMLINKS | fs::ResolveFlags::NO_MAGICLINKS;
        if let Ok(fd) = fs::openat2(
            fs::CWD,
            path,
            with_always(DIR_HANDLE),
            Mode::empty(),
            resolve,
        ) {
            return Ok(fd);
        }
    }
    let root = fs::openat(fs::CWD, "/", with_always(DIR_HANDLE), Mode::empty())?;
    if relative.as_os_str().is_empty() {
        return Ok(root);
    }
    open_beneath(strategy, root.as_fd(), relative, DIR_HANDLE).map_err(|error| {
        match error.failure {
            Failure::Missing => Errno::NOENT,
            Failure::Symlink => Errno::LOOP,
            Failure::NotDirectory => Errno::NOTDIR,
            Failure::Os(errno) => errno,
        }
    })
}
