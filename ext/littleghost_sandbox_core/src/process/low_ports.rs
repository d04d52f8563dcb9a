//! Lowering `net.ipv4.ip_unprivileged_port_start` in a Bubblewrap
//! sandbox's own network namespace before its command runs, so the relay
//! can listen on an allowlisted port below 1024 (see
//! [`crate::launch::transparent`]).
//!
//! Why the host does it: bwrap's `--disable-userns` runs the command in a
//! user namespace nested inside the one that owns the sandbox's network
//! namespace, so nothing inside (the relay included) has a capability over
//! that network namespace. The host process created the outer user
//! namespace (it is root, or the uid that owns it), so it has every
//! capability there; no capability is handed to anything inside.
//!
//! How, for one launch held by [`super::hold`] (bwrap is set up, its
//! command has not started):
//! 1. The spawner opens `/proc/PID/ns/net` of the process bwrap reported and
//!    checks it is the namespace bwrap reported and not its own (a recycled
//!    pid can never point it at another namespace, least of all the host's),
//!    and asks the kernel for the user namespace owning it (`NS_GET_USERNS`).
//! 2. A fresh single-threaded child (`clone` sharing memory, like
//!    `posix_spawn`; `setns` into a user namespace refuses a multithreaded
//!    caller) enters that user namespace, then the network namespace, writes
//!    the value to `/proc/sys/net/ipv4/ip_unprivileged_port_start` (sysctl
//!    files under `/proc/sys/net` belong to the writer's network namespace)
//!    and exits. Nothing else runs in it and the sandbox cannot reach it: it
//!    is outside the sandbox's pid namespace and the sandbox is still held.
//! 3. Then [`super::hold`] releases bwrap.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::bwrap_report::Report;

/// Why the sandbox's port start could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// `step` failed with `errno`.
    #[error("{step}: {errno}")]
    Step {
        step: &'static str,
        errno: rustix::io::Errno,
    },
    #[error("the sandbox's process is gone (its pid names another network namespace)")]
    OtherNamespace,
    #[error("the process that enters the sandbox's namespaces ended with status {0}")]
    EntryEnded(i32),
    #[error("lowering ip_unprivileged_port_start needs Linux")]
    NotLinux,
}

impl LowerError {
    fn step(step: &'static str, error: &io::Error) -> LowerError {
        let errno = rustix::io::Errno::from_io_error(error).unwrap_or(rustix::io::Errno::IO);
        LowerError::Step { step, errno }
    }
}

/// The sysctl written, relative to the writer's `/proc`.
pub const SYSCTL_PATH: &str = "/proc/sys/net/ipv4/ip_unprivileged_port_start";

/// Whether a launch could write the sysctl at all: false where the `/proc`
/// the host sees mounts `/proc/sys` read-only (most containers), where
/// serving a port below 1024 would only make every such launch fail.
pub fn can_lower() -> bool {
    #[cfg(target_os = "linux")]
    {
        let directory = std::path::Path::new(SYSCTL_PATH)
            .parent()
            .expect("the path has a directory");
        rustix::fs::statvfs(directory)
            .is_ok_and(|vfs| !vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// `_IO(0xb7, 0x1)`: the user namespace owning a namespace.
#[cfg(target_os = "linux")]
const NS_GET_USERNS: libc::c_ulong = 0xb701;

/// Steps 1 and 2: the reported network namespace, checked, then the child
/// that writes `start` into its sysctl.
#[cfg(target_os = "linux")]
pub(super) fn lower(report: Report, start: u16) -> Result<(), LowerError> {
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::MetadataExt;
    let failed = |what: &'static str, error: io::Error| LowerError::step(what, &error);
    let path = format!("/proc/{}/ns/net", report.pid);
    let net = std::fs::File::open(&path)
        .map_err(|e| failed("cannot open the sandbox's network namespace", e))?;
    let inode = net
        .metadata()
        .map_err(|e| failed("cannot read the sandbox's network namespace", e))?
        .ino();
    let own = std::fs::metadata("/proc/thread-self/ns/net").map(|m| m.ino());
    if report.net.is_some_and(|reported| reported != inode)
        || own.as_ref().is_ok_and(|own| *own == inode)
    {
        return Err(LowerError::OtherNamespace);
    }
    // SAFETY: an ioctl on a namespace descriptor we own; the result is a new descriptor.
    let user = unsafe { libc::ioctl(net.as_raw_fd(), NS_GET_USERNS as _) };
    if user < 0 {
        return Err(failed(
            "cannot find the user namespace owning the sandbox's network",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: `user` was just opened and nothing else owns it.
    let user = unsafe { OwnedFd::from_raw_fd(user) };
    let value = start.to_string();
    let sysctl = std::ffi::CString::new(SYSCTL_PATH).expect("no NUL in the path");
    let entry = Entry {
        user: user.as_raw_fd(),
        net: net.as_raw_fd(),
        path: sysctl.as_ptr(),
        value: value.as_ptr(),
        len: value.len(),
        stage: std::sync::atomic::AtomicI32::new(0),
        errno: std::sync::atomic::AtomicI32::new(0),
    };
    run_entry(&entry)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn lower(_report: Report, _start: u16) -> Result<(), LowerError> {
    Err(LowerError::NotLinux)
}

/// What the entering child needs, prepared before it exists (it shares our
/// memory and only makes system calls), and where it leaves its failure.
#[cfg(target_os = "linux")]
struct Entry {
    user: RawFd,
    net: RawFd,
    path: *const libc::c_char,
    value: *const u8,
    len: usize,
    /// 0: done; else the step that failed (1 user, 2 network, 3 open, 4 write).
    stage: std::sync::atomic::AtomicI32,
    errno: std::sync::atomic::AtomicI32,
}

/// Runs [`enter`] in a child sharing our memory (the caller waits, as
/// `vfork` does) and reports its outcome.
#[cfg(target_os = "linux")]
fn run_entry(entry: &Entry) -> Result<(), LowerError> {
    use std::sync::atomic::Ordering;
    let mut stack = vec![0u8; 64 * 1024];
    // SAFETY: the top of `stack`, aligned down to 16 bytes, stays inside it.
    let top = unsafe {
        let end = stack.as_mut_ptr().add(stack.len());
        end.sub(end as usize % 16)
    };
    // CLONE_VFORK: we sleep until the child exits, so `entry` and `stack`
    // outlive it. No exit signal: only a waitpid(__WALL) of this pid reaps it,
    // nobody else's waitpid(-1) can.
    let flags = libc::CLONE_VM | libc::CLONE_VFORK;
    let arg = entry as *const Entry as *mut libc::c_void;
    // SAFETY: `enter` only makes system calls on `entry`, which lives (with
    // `stack`) until the child is gone.
    let pid = unsafe { libc::clone(enter, top.cast(), flags, arg) };
    if pid < 0 {
        return Err(LowerError::step(
            "cannot start the process that enters the sandbox's namespaces",
            &io::Error::last_os_error(),
        ));
    }
    let mut status = 0;
    // SAFETY: waitpid on the child just made, into a local.
    while unsafe { libc::waitpid(pid, &mut status, libc::__WALL) } < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(LowerError::step(
                "cannot wait for the process that enters the sandbox's namespaces",
                &error,
            ));
        }
    }
    drop(stack);
    let error = io::Error::from_raw_os_error(entry.errno.load(Ordering::SeqCst));
    let step = match entry.stage.load(Ordering::SeqCst) {
        0 if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 => return Ok(()),
        0 => return Err(LowerError::EntryEnded(status)),
        1 => "cannot enter the user namespace owning the sandbox's network",
        2 => "cannot enter the sandbox's network namespace",
        3 => "cannot open net.ipv4.ip_unprivileged_port_start in the sandbox",
        _ => "cannot write net.ipv4.ip_unprivileged_port_start in the sandbox",
    };
    Err(LowerError::step(step, &error))
}

/// The child of [`run_entry`]: enters the user namespace, then the network
/// namespace, and writes the value. System calls only: it runs on our memory
/// with our thread's TLS while that thread sleeps.
#[cfg(target_os = "linux")]
extern "C" fn enter(arg: *mut libc::c_void) -> libc::c_int {
    use std::sync::atomic::Ordering;
    // SAFETY: `arg` is the `Entry` `run_entry` keeps alive until we exit.
    let entry = unsafe { &*(arg as *const Entry) };
    let fail = |stage: i32| -> libc::c_int {
        let errno = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        entry.errno.store(errno, Ordering::SeqCst);
        entry.stage.store(stage, Ordering::SeqCst);
        1
    };
    // SAFETY: plain system calls on descriptors and buffers `entry` holds.
    unsafe {
        if libc::setns(entry.user, libc::CLONE_NEWUSER) != 0 {
            return fail(1);
        }
        if libc::setns(entry.net, libc::CLONE_NEWNET) != 0 {
            return fail(2);
        }
        let fd = libc::open(entry.path, libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return fail(3);
        }
        if libc::write(fd, entry.value.cast(), entry.len) != entry.len as isize {
            return fail(4);
        }
        libc::close(fd);
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_naming_our_own_network_namespace_is_refused() {
        // Our own pid with our own namespace: never the host's sysctl.
        let own = std::fs::metadata("/proc/thread-self/ns/net").map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.ino()
        });
        let report = Report {
            pid: std::process::id() as i32,
            net: own.ok(),
            mnt: None,
        };
        let refused = lower(report, 443).unwrap_err();
        assert_eq!(refused, LowerError::OtherNamespace);
        // A reported inode that is not the pid's namespace is refused too.
        let report = Report {
            pid: std::process::id() as i32,
            net: Some(1),
            mnt: None,
        };
        assert!(lower(report, 443).is_err());
    }
}
