//! What runs in the background for a [`RunningProcess`](super::RunningProcess):
//! the state shared with its tasks, the drain task of each pipe and the exit
//! watcher that reaps the leader.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::{Pid, WaitOptions};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::super::capture::{Capture, CaptureMode, Stream};
use super::super::notify::Notifier;
use super::super::spawn::pid_of;
use super::super::{runtime, POLL_INTERVAL};
use super::termination::terminate_in_background;
use super::Exit;
use crate::limits::LaunchCgroup;

/// Bytes read from a pipe per syscall by the drain task.
const READ_CHUNK: usize = 64 * 1024;
/// How often a drain task that left a pipe to a polling reader checks it,
/// and how many empty checks it makes before watching the pipe again.
const QUIET_CHECK: Duration = Duration::from_millis(1);
const QUIET_CHECKS: u32 = 10;

pub(super) struct State {
    pub(super) capture: Capture,
    pub(super) exit: Option<Exit>,
    /// The read ends of stdout and stderr, shared with the drain task, until
    /// EOF or `close_output`.
    pub(super) pipes: [Option<Arc<OwnedFd>>; 2],
}

/// What one non-blocking read of a pipe found.
pub(super) enum Pulled {
    /// Bytes were stored; true if they passed the combined bound just now.
    Data {
        overflowed_now: bool,
    },
    Eof,
    /// Nothing to read now (EAGAIN, EINTR).
    Nothing,
    /// The stream already ended (someone saw EOF) or output was closed.
    Gone,
    Failed,
}

impl State {
    /// Reads `stream`'s pipe once into `buffer` and stores what came. Runs
    /// under the state lock, which keeps every reader's bytes in order.
    pub(super) fn pull(&mut self, stream: Stream, buffer: &mut [u8]) -> Pulled {
        let Some(pipe) = &self.pipes[stream as usize] else {
            return Pulled::Gone;
        };
        match rustix::io::read(pipe, &mut *buffer) {
            Ok(0) => Pulled::Eof,
            Ok(n) => Pulled::Data {
                overflowed_now: self.capture.accept(stream, &buffer[..n]),
            },
            Err(Errno::AGAIN | Errno::INTR) => Pulled::Nothing,
            Err(_) => Pulled::Failed,
        }
    }

    /// No more output will come from `stream`.
    pub(super) fn finish(&mut self, stream: Stream) {
        self.capture.mark_eof(stream);
        self.pipes[stream as usize] = None;
    }
}

/// Both pipes drained until EOF (the I/O task of a [`RunningProcess`](super::RunningProcess)).
pub(super) async fn drain_both(shared: Arc<Shared>, stdout: Arc<OwnedFd>, stderr: Arc<OwnedFd>) {
    tokio::join!(
        drain(shared.clone(), stdout, Stream::Stdout),
        drain(shared, stderr, Stream::Stderr)
    );
}

pub(super) struct Shared {
    pub(super) pid: i32,
    /// The process that spawned the child (a forked copy must leave it alone).
    pub(super) parent: Pid,
    /// Its [`Owner`] terminated it (the sandbox was closed).
    pub(super) terminated_by_owner: AtomicBool,
    /// Its lifetime (a session's `timeout:`) passed while it ran, and it was terminated.
    pub(super) timed_out: AtomicBool,
    pub(super) state: Mutex<State>,
    pub(super) notifier: Notifier,
    /// Sessions and streaming executes want to hear about every chunk; a
    /// plain execute only about the end.
    pub(super) wake_on_data: AtomicBool,
    /// A session reader also reads the pipes itself (see [`drain`]).
    pub(super) direct_reader: bool,
    /// The launch's cgroup, held by the [`RunningProcess`] (C9).
    pub(super) cgroup: Weak<LaunchCgroup>,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not make the child unmanageable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// The shared state of a child just spawned with output `pipes` (none
    /// when it is only being reaped): a session (combined capture) hears
    /// about every chunk and reads the pipes itself too.
    pub(super) fn new(
        pid: i32,
        parent: Pid,
        mode: CaptureMode,
        notifier: Notifier,
        pipes: [Option<Arc<OwnedFd>>; 2],
        cgroup: Weak<LaunchCgroup>,
    ) -> Shared {
        let session = pipes[0].is_some() && matches!(mode, CaptureMode::Combined { .. });
        Shared {
            pid,
            parent,
            terminated_by_owner: AtomicBool::new(false),
            timed_out: AtomicBool::new(false),
            state: Mutex::new(State {
                capture: Capture::new(mode),
                exit: None,
                pipes,
            }),
            notifier,
            wake_on_data: AtomicBool::new(session),
            direct_reader: session,
            cgroup,
        }
    }

    pub(super) fn try_reap(&self) -> Option<Exit> {
        let mut state = lock(&self.state);
        if let Some(exit) = state.exit {
            return Some(exit);
        }
        let exit = match rustix::process::waitpid(Some(pid_of(self.pid)), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => Exit::Status(status.as_raw()),
            Ok(None) | Err(Errno::INTR) => return None,
            Err(_) => Exit::Unknown,
        };
        state.exit = Some(exit);
        drop(state);
        self.notifier.notify();
        Some(exit)
    }
}

impl Shared {
    pub(super) fn wakes_on_data(&self) -> bool {
        self.wake_on_data.load(Ordering::Relaxed)
    }

    /// Reacts to bytes just stored: 18.5 terminates the group in the
    /// background once the combined bound is passed; waiters hear about it.
    pub(super) fn stored(self: &Arc<Self>, overflowed_now: bool, wake: bool) {
        if overflowed_now {
            if let Ok(handle) = runtime::handle() {
                handle.spawn(terminate_in_background(self.clone()));
            }
        }
        if wake || overflowed_now {
            self.notifier.notify();
        }
    }
}

/// Registers a descriptor with the runtime's reactor. Only the task that
/// registered it polls it; a session reader may read a shared pipe directly.
fn register<T: AsRawFd>(fd: T) -> Option<AsyncFd<T>> {
    // SAFETY: the AsyncFd owns `fd` (an OwnedFd, or a share of an Arc'd one),
    // so the descriptor stays open and the same for as long as it is registered.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.ok()
}

/// Drains one pipe into the capture until EOF.
///
/// A session caller polling `read` takes replies straight from the pipe, and
/// each reply would also wake this task: an extra thread wake-up per round
/// trip, which on a busy machine costs more than the round trip itself. So
/// when a wake-up finds the pipe already emptied by such a reader, the task
/// stops watching the pipe and checks it every [`QUIET_CHECK`] instead. It
/// watches again as soon as it finds bytes the reader left, or after
/// [`QUIET_CHECKS`] empty checks (a silent child costs no timer). Either way
/// the pipe never goes unread for long, so a child nobody reads never blocks
/// (W15), and every byte still passes the bound in order.
pub(super) async fn drain(shared: Arc<Shared>, pipe: Arc<OwnedFd>, stream: Stream) {
    let mut buffer = vec![0u8; READ_CHUNK];
    'watching: while let Some(watched) = register(pipe.clone()) {
        loop {
            let Ok(mut ready) = watched.readable().await else {
                break 'watching;
            };
            let pulled = lock(&shared.state).pull(stream, &mut buffer);
            match pulled {
                Pulled::Data { overflowed_now } => {
                    shared.stored(overflowed_now, shared.wakes_on_data())
                }
                Pulled::Nothing => {
                    ready.clear_ready();
                    // Only session readers empty the pipe behind our back.
                    if shared.direct_reader {
                        break;
                    }
                }
                // Gone: a session reader saw EOF first. (Tokio never clears
                // a closed readiness, so waiting on would spin.)
                Pulled::Eof | Pulled::Gone | Pulled::Failed => break 'watching,
            }
        }
        drop(watched);
        for _ in 0..QUIET_CHECKS {
            tokio::time::sleep(QUIET_CHECK).await;
            let pulled = lock(&shared.state).pull(stream, &mut buffer);
            match pulled {
                Pulled::Data { overflowed_now } => {
                    shared.stored(overflowed_now, shared.wakes_on_data());
                    continue 'watching;
                }
                Pulled::Nothing => {}
                Pulled::Eof | Pulled::Gone | Pulled::Failed => break 'watching,
            }
        }
        // A silent child: watch again rather than tick forever.
    }
    lock(&shared.state).finish(stream);
    shared.notifier.notify();
}

pub(super) async fn watch_exit(shared: Arc<Shared>, pidfd: Option<OwnedFd>) {
    if let Some(exit_fd) = pidfd.and_then(register) {
        loop {
            if shared.try_reap().is_some() {
                return;
            }
            match exit_fd.readable().await {
                Ok(mut ready) => ready.clear_ready(),
                Err(_) => break,
            }
        }
    }
    while shared.try_reap().is_none() {
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

pub(super) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let flags = fcntl_getfl(fd)?;
    fcntl_setfl(fd, flags | OFlags::NONBLOCK)?;
    Ok(())
}

#[cfg(target_os = "linux")]
pub(super) fn open_pidfd(pid: i32) -> Option<OwnedFd> {
    rustix::process::pidfd_open(pid_of(pid), rustix::process::PidfdFlags::empty()).ok()
}

#[cfg(not(target_os = "linux"))]
pub(super) fn open_pidfd(_pid: i32) -> Option<OwnedFd> {
    None
}
