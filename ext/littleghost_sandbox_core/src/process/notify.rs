//! A notification fd: background tasks signal "something changed", waiters
//! poll it with a timeout (without the GVL, or through a fiber scheduler's
//! `IO#wait_readable`), and an interrupt handler can wake a waiter by
//! signalling it too. Writing is async-signal-safe.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

/// An eventfd (a pipe where eventfd does not exist).
#[derive(Debug)]
pub struct Notifier {
    read: OwnedFd,
    #[cfg(not(target_os = "linux"))]
    write: OwnedFd,
}

impl Notifier {
    pub fn new() -> std::io::Result<Self> {
        #[cfg(target_os = "linux")]
        {
            use rustix::event::{eventfd, EventfdFlags};
            let read = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
            Ok(Notifier { read })
        }
        #[cfg(not(target_os = "linux"))]
        {
            use rustix::pipe::{pipe_with, PipeFlags};
            let (read, write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
            Ok(Notifier { read, write })
        }
    }

    /// The fd that becomes readable when notified.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// The fd to write to; see [`notify_raw`].
    pub fn raw_write_fd(&self) -> RawFd {
        #[cfg(target_os = "linux")]
        return self.read.as_raw_fd();
        #[cfg(not(target_os = "linux"))]
        return self.write.as_raw_fd();
    }

    /// Wakes every waiter.
    pub fn notify(&self) {
        notify_raw(self.raw_write_fd());
    }

    /// Consumes pending notifications so the next wait blocks again.
    pub fn clear(&self) {
        let mut buffer = [0u8; 64];
        while let Ok(n) = rustix::io::read(&self.read, &mut buffer) {
            if n == 0 || cfg!(target_os = "linux") {
                break;
            }
        }
    }

    /// Blocks up to `timeout` until notified (or `extra` is ready), then
    /// clears the notification. Meant to run without the GVL.
    pub fn wait(&self, timeout: Duration, extra: Option<(BorrowedFd<'_>, PollFlags)>) {
        let timespec = Timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        let mut fds = Vec::with_capacity(2);
        fds.push(PollFd::new(&self.read, PollFlags::IN));
        if let Some((fd, flags)) = extra {
            fds.push(PollFd::from_borrowed_fd(fd, flags));
        }
        // EINTR or any poll error just ends this slice early.
        let _ = rustix::event::poll(&mut fds, Some(&timespec));
        self.clear();
    }
}

/// Signals a notifier by its write fd. Async-signal-safe: one `write(2)`.
pub fn notify_raw(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a local to a descriptor; EAGAIN (counter
    // full, pipe full) means a notification is already pending.
    unsafe {
        libc::write(fd, (&one as *const u64).cast(), std::mem::size_of::<u64>());
    }
}
