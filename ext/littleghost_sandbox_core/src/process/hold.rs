//! A Bubblewrap launch held after its sandbox is set up and before anything
//! of the launch runs, while the host prepares or checks it.
//!
//! How: bwrap runs with `--info-fd` (its parent reports the sandbox's first
//! process, as the host numbers it, and its namespace ids once they exist)
//! and `--block-fd` (that process reads one byte after every setup step:
//! every mount made, the final `pivot_root` done, privileges dropped; before
//! the seccomp filter, the working directory and the command).
//! `--userns-block-fd` would stop earlier, before any mount, and bwrap
//! refuses it with `--disable-userns`.
//!
//! A launch is held for either or both of:
//! - a relay listening below port 1024: the host lowers the sandbox's own
//!   `ip_unprivileged_port_start` ([`super::low_ports`]);
//! - mounts nested beneath a writable bind, which bwrap resolves by path
//!   inside the new root, where a concurrent session of the same sandbox
//!   can exchange a directory with a symlink: the host checks each one from
//!   outside ([`super::mount_check`]).
//!
//! If bwrap ends before it reports (a bad option, no user namespaces), there
//! is nothing to prepare and its own failure is what the caller reports. A
//! failure after that is returned, and the caller kills the launch while it
//! is still held: nothing of it ran.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::bwrap_report::{parse_report, Report};
use super::mount_check::{self, ExpectedMount};

/// How long bwrap may take to report its sandbox and finish setting it up.
const REPORT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The spawner's side of one held launch: its ends of the pipes (owned by
/// the caller until the spawn returned), and what to do before releasing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Read end of the `--info-fd` pipe.
    pub info: RawFd,
    /// Write end of the `--block-fd` pipe.
    pub release: RawFd,
    /// The number bwrap's `--block-fd` has in bwrap (its child reads it
    /// when set up): how the spawner tells setup is over.
    pub block: RawFd,
    /// The relay's lowest port, when it is below 1024.
    pub port_start: Option<u16>,
    /// The mounts checked from outside before the launch goes on.
    pub mounts: Vec<ExpectedMount>,
}

/// The two pipes of one held launch, owned until the spawn returned.
#[derive(Debug)]
pub struct Pipes {
    info: (OwnedFd, OwnedFd),
    block: (OwnedFd, OwnedFd),
    port_start: Option<u16>,
}

/// The raw descriptors of [`Pipes`]: bwrap's ends and the spawner's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// bwrap's `--info-fd` (the info pipe's write end).
    pub info: RawFd,
    /// bwrap's `--block-fd` (the block pipe's read end).
    pub block: RawFd,
    /// What the spawner uses (the caller fills in `block` and `mounts`).
    pub spawner: Held,
}

impl Pipes {
    /// Close-on-exec pipes for a held launch (whose port start must become
    /// `port_start`, if any).
    pub fn new(port_start: Option<u16>) -> std::io::Result<Pipes> {
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        Ok(Pipes {
            info: pipe()?,
            block: pipe()?,
            port_start,
        })
    }

    /// Their raw descriptors (valid while `self` lives).
    pub fn hold(&self) -> Hold {
        Hold {
            info: self.info.1.as_raw_fd(),
            block: self.block.0.as_raw_fd(),
            spawner: Held {
                info: self.info.0.as_raw_fd(),
                release: self.block.1.as_raw_fd(),
                block: -1,
                port_start: self.port_start,
                mounts: Vec::new(),
            },
        }
    }

    /// The descriptors, for a caller that keeps them open until the spawn.
    pub fn into_fds(self) -> [OwnedFd; 4] {
        [self.info.0, self.info.1, self.block.0, self.block.1]
    }
}

/// Why a held launch must not go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// bwrap's report of its sandbox could not be read.
    Report(ReportError),
    /// The sandbox's port start could not be lowered.
    Ports(super::low_ports::LowerError),
    /// A mount is not what the launch asked for where it asked for it.
    Mounts(mount_check::CheckError),
}

/// Why bwrap's report of its sandbox could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error("bubblewrap did not report its sandbox in time")]
    TimedOut,
    #[error("cannot wait for bubblewrap: {0}")]
    Wait(rustix::io::Errno),
    #[error("cannot read bubblewrap's report: {0}")]
    Read(rustix::io::Errno),
}

/// Prepares and checks the held bwrap process `bwrap` (the spawner's
/// child), then releases it. Ok once bwrap is released (or ended on its own
/// before reporting); Err says why it must not go on, and bwrap is still
/// held: the caller kills it.
pub fn prepare(bwrap: i32, held: &Held) -> Result<(), Refusal> {
    let Some(report) = read_report(bwrap, held.info).map_err(Refusal::Report)? else {
        release(held.release);
        return Ok(());
    };
    if let Some(start) = held.port_start {
        super::low_ports::lower(report, start).map_err(Refusal::Ports)?;
    }
    if !held.mounts.is_empty() {
        let set_up = mount_check::wait_until_held(report, held.block, REPORT_WAIT)
            .map_err(Refusal::Mounts)?;
        // A sandbox that ended while being set up ran nothing: bwrap's own
        // failure is what the caller reports.
        if set_up {
            mount_check::verify(report, &held.mounts).map_err(Refusal::Mounts)?;
        }
    }
    release(held.release);
    Ok(())
}

/// One byte on `--block-fd`: bwrap goes on. An error means bwrap is gone,
/// which the caller sees when it waits for it.
fn release(fd: RawFd) {
    // SAFETY: writing one byte from a static buffer to a descriptor the
    // caller owns for this launch.
    unsafe { libc::write(fd, b"1".as_ptr().cast(), 1) };
}

fn read_report(bwrap: i32, info: RawFd) -> Result<Option<Report>, ReportError> {
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
            return Err(ReportError::TimedOut);
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
            Err(errno) => return Err(ReportError::Wait(errno)),
        }
        let readable = !fds[0].revents().is_empty();
        let gone = fds.get(1).is_some_and(|fd| !fd.revents().is_empty())
            || (exited.is_none() && !running(bwrap));
        if readable {
            match rustix::io::read(info, &mut buffer) {
                Ok(0) => return Ok(parse_report(&text)),
                Ok(n) => text.extend_from_slice(&buffer[..n]),
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                Err(errno) => return Err(ReportError::Read(errno)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bwrap_that_ends_before_reporting_is_left_to_report_its_own_failure() {
        // `false` closes the info pipe without writing: nothing to prepare.
        let (info_read, info_write) = rustix::pipe::pipe().unwrap();
        let (release_read, release_write) = rustix::pipe::pipe().unwrap();
        drop(info_write);
        let mut child = std::process::Command::new("false").spawn().unwrap();
        let held = Held {
            info: info_read.as_raw_fd(),
            release: release_write.as_raw_fd(),
            block: 4,
            port_start: Some(443),
            mounts: Vec::new(),
        };
        assert_eq!(prepare(child.id() as i32, &held), Ok(()));
        let mut byte = [0u8; 1];
        assert_eq!(rustix::io::read(&release_read, &mut byte), Ok(1));
        let _ = child.wait();
    }
}
