//! Checking, from the host, that a held Bubblewrap sandbox has each mount
//! nested beneath a writable bind where the launch asked for it (see
//! `docs/security.md`, "Grants are handles, not paths").
//!
//! Why: bwrap takes each destination as a path and resolves it inside the
//! new root, following symlinks. Beneath a writable bind, a concurrent
//! session of the same sandbox can exchange a directory on that path with a
//! symlink (`renameat2(RENAME_EXCHANGE)`) between the gem's own check and
//! bwrap's `mount`, and the read-only view (or a scope's mask) lands on the
//! symlink's target while the real directory stays writable (or visible).
//! Once a mount is made it is attached to the directory itself, so renaming
//! it later moves the mount along: checking the finished sandbox once,
//! before anything of it runs, is enough.
//!
//! How, for a launch [`super::hold`] holds:
//! 1. [`wait_until_held`]: the reported process is bwrap's, in the mount
//!    namespace bwrap reported (not ours), and it sits in `read` on its
//!    `--block-fd` (`/proc/PID/syscall`), which it reaches only after every
//!    mount, the final `pivot_root` and the privilege drop.
//! 2. [`verify`]: from `/proc/PID/root` (that process's root, reachable by
//!    the host process as root and as the same unprivileged uid: both are
//!    `PTRACE_MODE_READ` checks the sandbox's creator passes), each
//!    destination is opened with `openat2(RESOLVE_IN_ROOT |
//!    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, so no symlink on the
//!    way is followed, and [`judge`] decides from what `statx` and
//!    `fstatfs` say: a mount root; for a bind, the (device, inode) of the
//!    grant's handle; for a mask, a tmpfs; read-only where the launch made
//!    it read-only.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::io::Errno;

use super::bwrap_report::Report;

/// Why a held sandbox failed the check: it must not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("cannot read the sandbox's mount namespace: {0}")]
    NamespaceUnreadable(Errno),
    #[error("the sandbox's process is gone (its pid names another mount namespace)")]
    OtherNamespace,
    #[error("cannot tell whether the sandbox is set up: {0}")]
    SetupUnreadable(Errno),
    #[error("bubblewrap did not finish setting up the sandbox in time")]
    SetupTimedOut,
    #[error("cannot reach the sandbox's root: {0}")]
    RootUnreachable(Errno),
    #[error("{} cannot be checked ({errno}): it was moved while the sandbox was set up", path.display())]
    Uncheckable { path: PathBuf, errno: Errno },
    #[error("{} was moved while the sandbox was set up: {why}", path.display())]
    Moved { path: PathBuf, why: &'static str },
}

/// The errno of an I/O error (EIO when it carries none).
fn errno_of(error: &std::io::Error) -> Errno {
    Errno::from_io_error(error).unwrap_or(Errno::IO)
}

/// What a launch's mount at one destination must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedMount {
    /// The destination inside the sandbox (absolute).
    pub path: PathBuf,
    pub kind: MountKind,
    /// The launch made it read-only.
    pub read_only: bool,
}

/// What is mounted at an [`ExpectedMount`]'s destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountKind {
    /// A bind of the grant whose handle has this (device, inode).
    Bind { dev: u64, ino: u64 },
    /// A fresh tmpfs (a mask).
    Tmpfs,
}

/// What the host saw at a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// The root of a mount (`STATX_ATTR_MOUNT_ROOT`).
    pub mount_root: bool,
    pub dev: u64,
    pub ino: u64,
    /// Its file system is a tmpfs.
    pub tmpfs: bool,
    /// Its mount is read-only.
    pub read_only: bool,
}

/// Whether `observed` is the mount `expected` asks for; Err says what differs.
pub fn judge(expected: &ExpectedMount, observed: &Observed) -> Result<(), &'static str> {
    if !observed.mount_root {
        return Err("nothing is mounted there");
    }
    match expected.kind {
        MountKind::Bind { dev, ino } if (observed.dev, observed.ino) != (dev, ino) => {
            return Err("another directory is mounted there");
        }
        MountKind::Tmpfs if !observed.tmpfs => return Err("no mask is mounted there"),
        _ => {}
    }
    if expected.read_only && !observed.read_only {
        return Err("it is not read-only there");
    }
    Ok(())
}

/// Step 1: waits until the reported process sits in `read` on `block` (its
/// `--block-fd`), at most `wait`. Ok(false) when it ended first (bwrap
/// failed on its own, before anything of the launch ran: its own failure is
/// what the caller reports). Err when it is not bwrap's sandbox (another
/// mount namespace than reported, or ours), or on time out.
pub fn wait_until_held(report: Report, block: i32, wait: Duration) -> Result<bool, CheckError> {
    let proc = format!("/proc/{}", report.pid);
    let gone = |e: &std::io::Error| {
        e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
    };
    let namespace = |path: &str| std::fs::metadata(path).map(|m| inode(&m));
    let theirs = match namespace(&format!("{proc}/ns/mnt")) {
        Ok(theirs) => theirs,
        Err(e) if gone(&e) => return Ok(false),
        Err(e) => return Err(CheckError::NamespaceUnreadable(errno_of(&e))),
    };
    let ours = namespace("/proc/thread-self/ns/mnt");
    if report.mnt.is_some_and(|reported| reported != theirs)
        || ours.is_ok_and(|ours| ours == theirs)
    {
        return Err(CheckError::OtherNamespace);
    }
    let deadline = Instant::now() + wait;
    let syscall = format!("{proc}/syscall");
    loop {
        let text = match std::fs::read_to_string(&syscall) {
            Ok(text) => text,
            Err(e) if gone(&e) => return Ok(false),
            Err(e) => return Err(CheckError::SetupUnreadable(errno_of(&e))),
        };
        if blocked_reading(&text, block) {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Err(CheckError::SetupTimedOut);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// `/proc/PID/syscall` says the task is blocked in `read(fd, ...)`: the
/// system call number, then its arguments in hex (`running` while it runs).
pub fn blocked_reading(text: &str, fd: i32) -> bool {
    let mut words = text.split_whitespace();
    let number = words.next().and_then(|n| n.parse::<i64>().ok());
    let first = words
        .next()
        .and_then(|a| i64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
    number == Some(libc::SYS_read) && first == Some(i64::from(fd))
}

#[allow(clippy::unnecessary_cast)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.ino() as u64
}

/// Step 2: every one of `mounts`, looked at from the held process's root.
pub fn verify(report: Report, mounts: &[ExpectedMount]) -> Result<(), CheckError> {
    use rustix::fs::{Mode, OFlags};
    let root = rustix::fs::open(
        format!("/proc/{}/root", report.pid),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(CheckError::RootUnreachable)?;
    for expected in mounts {
        let path = expected.path.clone();
        let observed = observe(&root, &expected.path)
            .map_err(|errno| CheckError::Uncheckable { path, errno })?;
        judge(expected, &observed).map_err(|why| CheckError::Moved {
            path: expected.path.clone(),
            why,
        })?;
    }
    Ok(())
}

/// What `path` (absolute, inside `root`) is, reached with no symlink.
fn observe(root: &OwnedFd, path: &Path) -> rustix::io::Result<Observed> {
    use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags, StatxAttributes, StatxFlags};
    let relative = path.strip_prefix("/").unwrap_or(path);
    let resolve = ResolveFlags::IN_ROOT | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    // No O_NOFOLLOW: with it, a symlink as the last component would be
    // opened itself; without it, RESOLVE_NO_SYMLINKS refuses it (ELOOP).
    let fd = rustix::fs::openat2(
        root.as_fd(),
        relative,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        resolve,
    )?;
    let stat = rustix::fs::statx(
        &fd,
        "",
        AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BASIC_STATS,
    )?;
    if !stat
        .stx_attributes_mask
        .contains(StatxAttributes::MOUNT_ROOT)
    {
        // Linux before 5.8 cannot say; refusing is the safe answer.
        return Err(rustix::io::Errno::NOSYS);
    }
    let fs = rustix::fs::fstatfs(&fd)?;
    let vfs = rustix::fs::fstatvfs(&fd)?;
    #[allow(clippy::unnecessary_cast)]
    Ok(Observed {
        mount_root: stat.stx_attributes.contains(StatxAttributes::MOUNT_ROOT),
        dev: libc::makedev(stat.stx_dev_major, stat.stx_dev_minor) as u64,
        ino: stat.stx_ino,
        tmpfs: fs.f_type as i64 == libc::TMPFS_MAGIC as i64,
        read_only: vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
    })
}

#[cfg(test)]
mod tests;
