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
//! How, for one launch ([`PortStart`]):
//! 1. bwrap runs with `--info-fd` (it reports the sandbox's pid and its
//!    namespace ids once the namespaces exist) and `--block-fd` (its child
//!    waits for one byte after every setup step, before anything of the
//!    launch's runs). `--userns-block-fd` would stop earlier but bwrap
//!    refuses it with `--disable-userns`.
//! 2. The spawner reads the report, opens `/proc/PID/ns/net` and checks it is
//!    the namespace bwrap reported and not its own (a recycled pid can never
//!    point it at another namespace, least of all the host's), and asks the
//!    kernel for the user namespace owning it (`NS_GET_USERNS`).
//! 3. A fresh single-threaded child (`clone` sharing memory, like
//!    `posix_spawn`; `setns` into a user namespace refuses a multithreaded
//!    caller) enters that user namespace, then the network namespace, writes
//!    the value to `/proc/sys/net/ipv4/ip_unprivileged_port_start` (sysctl
//!    files under `/proc/sys/net` belong to the writer's network namespace)
//!    and exits. Nothing else runs in it and the sandbox cannot reach it: it
//!    is outside the sandbox's pid namespace and the sandbox is still held.
//! 4. Then one byte releases bwrap.
//!
//! If bwrap ends before it reports (a bad option, no user namespaces), there
//! is nothing to prepare and its own failure is what the caller reports. A
//! failure after that is the caller's error: the launch is killed before
//! anything of it ran.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// The sysctl written, relative to the writer's `/proc`.
pub const SYSCTL_PATH: &str = "/proc/sys/net/ipv4/ip_unprivileged_port_start";

/// How long bwrap may take to report its sandbox.
const REPORT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// One launch that waits until the host set its network namespace's
/// `ip_unprivileged_port_start` to `start`. The descriptors are the
/// parent's ends (owned by the caller until the spawn returned); bwrap
/// inherits the other ends as `--info-fd` and `--block-fd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortStart {
    /// Read end of the `--info-fd` pipe.
    pub info: RawFd,
    /// Write end of the `--block-fd` pipe.
    pub release: RawFd,
    /// The value written (the lowest port the relay listens on).
    pub start: u16,
}

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

/// The two pipes of one held launch, owned until the spawn returned.
#[derive(Debug)]
pub struct Pipes {
    info: (OwnedFd, OwnedFd),
    block: (OwnedFd, OwnedFd),
    start: u16,
}

/// The raw descriptors of [`Pipes`]: bwrap's ends and the spawner's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// bwrap's `--info-fd` (the info pipe's write end).
    pub info: RawFd,
    /// bwrap's `--block-fd` (the block pipe's read end).
    pub block: RawFd,
    /// What the spawner uses.
    pub spawner: PortStart,
}

impl Pipes {
    /// Close-on-exec pipes for a launch whose port start must become `start`.
    pub fn new(start: u16) -> io::Result<Pipes> {
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        Ok(Pipes {
            info: pipe()?,
            block: pipe()?,
            start,
        })
    }

    /// Their raw descriptors (valid while `self` lives).
    pub fn hold(&self) -> Hold {
        Hold {
            info: self.info.1.as_raw_fd(),
            block: self.block.0.as_raw_fd(),
            spawner: PortStart {
                info: self.info.0.as_raw_fd(),
                release: self.block.1.as_raw_fd(),
                start: self.start,
            },
        }
    }

    /// The descriptors, for a caller that keeps them open until the spawn.
    pub fn into_fds(self) -> [OwnedFd; 4] {
        [self.info.0, self.info.1, self.block.0, self.block.1]
    }
}

/// What bwrap's `--info-fd` reports that matters here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// The sandbox's first process, as the host's pid namespace numbers it.
    pub pid: i32,
    /// The inode of its network namespace, when bwrap could read it.
    pub net: Option<u64>,
}

/// Parses bwrap's `--info-fd` JSON object (`{"child-pid": N,
/// "net-namespace": M, ...}`) once it is complete (its closing brace has
/// arrived); None before that, or when it has no positive `child-pid`.
pub fn parse_report(text: &[u8]) -> Option<Report> {
    let text = std::str::from_utf8(text).ok()?;
    let end = text.find('}')?;
    let object = &text[..end];
    let number = |key: &str| -> Option<u64> {
        let quoted = format!("\"{key}\"");
        let rest = &object[object.find(&quoted)? + quoted.len()..];
        let rest = rest.trim_start().strip_prefix(':')?.trim_start();
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        rest[..digits].parse().ok()
    };
    let pid = i32::try_from(number("child-pid")?)
        .ok()
        .filter(|pid| *pid > 0)?;
    Some(Report {
        pid,
        net: number("net-namespace"),
    })
}

/// Steps 2 to 4 of the module documentation for the bwrap process `bwrap`
/// (the spawner's child). Ok once bwrap is released (or ended on its own
/// before reporting); Err says why the sandbox's ports could not be
/// lowered, and bwrap is still held: the caller kills it.
pub fn prepare(bwrap: i32, ports: &PortStart) -> Result<(), String> {
    let Some(report) = read_report(bwrap, ports.info)? else {
        release(ports.release);
        return Ok(());
    };
    lower(report, ports.start)?;
    release(ports.release);
    Ok(())
}

/// One byte on `--block-fd`: bwrap goes on. An error means bwrap is gone,
/// which the caller sees when it waits for it.
fn release(fd: RawFd) {
    // SAFETY: writing one byte from a static buffer to a descriptor the
    // caller owns for this launch.
    unsafe { libc::write(fd, b"1".as_ptr().cast(), 1) };
}

/// Reads the report until it is complete; None if bwrap ended first.
fn read_report(bwrap: i32, info: RawFd) -> Result<Option<Report>, String> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    use std::os::fd::BorrowedFd;
    // SAFETY: the caller keeps `info` open until this returns.
    let info = unsafe { BorrowedFd::borrow_raw(info) };
    // bwrap's exit ends the wait too (the caller may hold the pipe's other end).
    let exited = rustix::process::Pid::from_raw(bwrap).and_then(|pid| {
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
    });
    let deadline = std::time::Instant::now() + REPORT_WAIT;
    let mut text = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        if let Some(report) = parse_report(&text) {
            return Ok(Some(report));
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err("bubblewrap did not report its sandbox in time".into());
        }
        // Slices, so a missing pidfd (Linux < 5.3) still notices an exit.
        let slice = left.min(std::time::Duration::from_millis(100));
        let timeout = Timespec::try_from(slice).unwrap_or_default();
        let mut fds = vec![PollFd::from_borrowed_fd(info, PollFlags::IN)];
        if let Some(pidfd) = &exited {
            fds.push(PollFd::new(pidfd, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(format!("cannot wait for bubblewrap: {errno}")),
        }
        let readable = !fds[0].revents().is_empty();
        let gone = fds.get(1).is_some_and(|fd| !fd.revents().is_empty())
            || (exited.is_none() && !running(bwrap));
        if readable {
            match rustix::io::read(info, &mut buffer) {
                Ok(0) => return Ok(parse_report(&text)),
                Ok(n) => text.extend_from_slice(&buffer[..n]),
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                Err(errno) => return Err(format!("cannot read bubblewrap's report: {errno}")),
            }
        } else if gone {
            return Ok(parse_report(&text));
        }
    }
}

/// `bwrap` has not exited (without reaping it).
fn running(bwrap: i32) -> bool {
    // SAFETY: waitid on our own child with WNOWAIT: it stays waitable.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        libc::waitid(libc::P_PID, bwrap as libc::id_t, &mut info, flags) == 0 && info.si_pid() == 0
    }
}

/// `_IO(0xb7, 0x1)`: the user namespace owning a namespace.
#[cfg(target_os = "linux")]
const NS_GET_USERNS: libc::c_ulong = 0xb701;

/// Steps 2 and 3: the reported network namespace, checked, then the child
/// that writes `start` into its sysctl.
#[cfg(target_os = "linux")]
fn lower(report: Report, start: u16) -> Result<(), String> {
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::MetadataExt;
    let failed = |what: &str, error: io::Error| format!("{what}: {error}");
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
        return Err(
            "the sandbox's process is gone (its pid names another network namespace)".into(),
        );
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
fn lower(_report: Report, _start: u16) -> Result<(), String> {
    Err("lowering ip_unprivileged_port_start needs Linux".into())
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
fn run_entry(entry: &Entry) -> Result<(), String> {
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
        return Err(format!(
            "cannot start the process that enters the sandbox's namespaces: {}",
            io::Error::last_os_error()
        ));
    }
    let mut status = 0;
    // SAFETY: waitpid on the child just made, into a local.
    while unsafe { libc::waitpid(pid, &mut status, libc::__WALL) } < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(format!(
                "cannot wait for the process that enters the sandbox's namespaces: {error}"
            ));
        }
    }
    drop(stack);
    let error = io::Error::from_raw_os_error(entry.errno.load(Ordering::SeqCst));
    let step = match entry.stage.load(Ordering::SeqCst) {
        0 if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 => return Ok(()),
        0 => {
            return Err(format!(
                "the process that enters the sandbox's namespaces ended with status {status}"
            ))
        }
        1 => "cannot enter the user namespace owning the sandbox's network",
        2 => "cannot enter the sandbox's network namespace",
        3 => "cannot open net.ipv4.ip_unprivileged_port_start in the sandbox",
        _ => "cannot write net.ipv4.ip_unprivileged_port_start in the sandbox",
    };
    Err(format!("{step}: {error}"))
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
    fn the_report_is_read_once_its_object_is_complete() {
        let full = b"{\n    \"child-pid\": 27871,\n    \"mnt-namespace\": 4026532181,\n    \"net-namespace\": 4026532183,\n    \"pid-namespace\": 4026532182\n}\n";
        assert_eq!(
            parse_report(full),
            Some(Report {
                pid: 27871,
                net: Some(4026532183)
            })
        );
        // Not yet complete: wait for more.
        assert_eq!(parse_report(&full[..40]), None);
        // Older bwrap, or namespace ids it could not read: the pid alone.
        assert_eq!(
            parse_report(b"{\n    \"child-pid\": 12\n}\n"),
            Some(Report { pid: 12, net: None })
        );
        // Nothing usable.
        assert_eq!(parse_report(b"{}"), None);
        assert_eq!(parse_report(b"{\"child-pid\": 0}"), None);
        assert_eq!(parse_report(b"{\"child-pid\": -5}"), None);
        assert_eq!(parse_report(b"{\"child-pid\": 99999999999}"), None);
        assert_eq!(parse_report(b"\xff{\"child-pid\": 1}"), None);
    }

    #[test]
    fn a_bwrap_that_ends_before_reporting_is_left_to_report_its_own_failure() {
        // `false` closes the info pipe without writing: nothing to prepare.
        let (info_read, info_write) = rustix::pipe::pipe().unwrap();
        let (release_read, release_write) = rustix::pipe::pipe().unwrap();
        drop(info_write);
        let mut child = std::process::Command::new("false").spawn().unwrap();
        use std::os::fd::AsRawFd;
        let ports = PortStart {
            info: info_read.as_raw_fd(),
            release: release_write.as_raw_fd(),
            start: 443,
        };
        assert_eq!(prepare(child.id() as i32, &ports), Ok(()));
        let mut byte = [0u8; 1];
        assert_eq!(rustix::io::read(&release_read, &mut byte), Ok(1));
        let _ = child.wait();
    }

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
        };
        let refused = lower(report, 443).unwrap_err();
        assert!(refused.contains("another network namespace"), "{refused}");
        // A reported inode that is not the pid's namespace is refused too.
        let report = Report {
            pid: std::process::id() as i32,
            net: Some(1),
        };
        assert!(lower(report, 443).is_err());
    }
}
