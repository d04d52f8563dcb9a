//! A spawned child whose pipes and exit are watched in the background.
//!
//! Two tasks run on the shared runtime per child: one drains stdout and
//! stderr into the bounded [`Capture`], one waits for the leader's exit (a
//! pidfd where the kernel has them, else a 10 ms `waitpid(WNOHANG)` poll) and
//! reaps it. Both signal the [`Notifier`]; waiters never need a SIGCHLD
//! handler. The exit task outlives everything else, so a child is reaped even
//! when its owner gave up on it: no zombies.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::task::JoinHandle;

use super::capture::{Capture, CaptureMode, Stream};
use super::group::{group_alive, signal_group};
use super::notify::Notifier;
use super::spawn::{self, pid_of, SpawnError};
use super::{runtime, Launch, POLL_INTERVAL, TERMINATION_GRACE};

/// Bytes read from a pipe per syscall.
const READ_CHUNK: usize = 64 * 1024;

/// How the leader ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// A raw wait status.
    Status(i32),
    /// Someone else reaped the child (for example `Process.wait` with no pid).
    Unknown,
}

impl Exit {
    /// The exit status, or None if a signal killed it.
    pub fn code(self) -> Option<i32> {
        match self {
            Exit::Status(raw) if libc::WIFEXITED(raw) => Some(libc::WEXITSTATUS(raw)),
            _ => None,
        }
    }

    /// The signal that killed it, if any.
    pub fn signal(self) -> Option<i32> {
        match self {
            Exit::Status(raw) if libc::WIFSIGNALED(raw) => Some(libc::WTERMSIG(raw)),
            _ => None,
        }
    }

    /// The raw wait status, if known.
    pub fn raw(self) -> Option<i32> {
        match self {
            Exit::Status(raw) => Some(raw),
            Exit::Unknown => None,
        }
    }
}

/// Output taken by one session read pass.
#[derive(Debug, Default)]
pub struct OutputChunk {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The stream reached EOF and nothing is left to take.
    pub stdout_closed: bool,
    pub stderr_closed: bool,
}

struct State {
    capture: Capture,
    exit: Option<Exit>,
}

struct Shared {
    pid: i32,
    state: Mutex<State>,
    notifier: Notifier,
    /// Sessions want to hear about every chunk; execute only about the end.
    wake_on_data: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not make the child unmanageable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn try_reap(&self) -> Option<Exit> {
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

fn accept(shared: &Arc<Shared>, stream: Stream, bytes: &[u8]) {
    let overflowed_now = lock(&shared.state).capture.accept(stream, bytes);
    if overflowed_now {
        tokio::spawn(terminate_in_background(shared.clone()));
    }
    if shared.wake_on_data || overflowed_now {
        shared.notifier.notify();
    }
}

/// Registers a descriptor we own exclusively with the runtime's reactor.
fn register(fd: OwnedFd) -> Option<AsyncFd<OwnedFd>> {
    // SAFETY: the AsyncFd takes ownership of `fd`, so the descriptor stays
    // open exactly as long as it is registered and nobody else registers it.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.ok()
}

async fn drain(shared: Arc<Shared>, fd: OwnedFd, stream: Stream) {
    let mut buffer = vec![0u8; READ_CHUNK];
    if let Some(pipe) = register(fd) {
        loop {
            let Ok(mut ready) = pipe.readable().await else {
                break;
            };
            let result = ready.try_io(|pipe| {
                rustix::io::read(pipe.get_ref(), &mut buffer[..]).map_err(io::Error::from)
            });
            match result {
                Ok(Ok(0)) => break,
                Ok(Ok(n)) => accept(&shared, stream, &buffer[..n]),
                Ok(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(_)) => break,
                Err(_would_block) => {}
            }
        }
    }
    lock(&shared.state).capture.mark_eof(stream);
    shared.notifier.notify();
}

async fn watch_exit(shared: Arc<Shared>, pidfd: Option<OwnedFd>) {
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

/// 17.12 for a group the caller is not waiting on (a session that passed its
/// output bound): TERM, up to 0.5 s of grace, then KILL.
async fn terminate_in_background(shared: Arc<Shared>) {
    signal_group(shared.pid, Signal::TERM);
    let deadline = Instant::now() + TERMINATION_GRACE;
    while Instant::now() < deadline {
        shared.try_reap();
        if !group_alive(shared.pid) {
            return;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    signal_group(shared.pid, Signal::KILL);
}

fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let flags = fcntl_getfl(fd)?;
    fcntl_setfl(fd, flags | OFlags::NONBLOCK)?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn open_pidfd(pid: i32) -> Option<OwnedFd> {
    rustix::process::pidfd_open(pid_of(pid), rustix::process::PidfdFlags::empty()).ok()
}

#[cfg(not(target_os = "linux"))]
fn open_pidfd(_pid: i32) -> Option<OwnedFd> {
    None
}

/// A child leading its own process group, with background capture.
pub struct RunningProcess {
    shared: Arc<Shared>,
    owner: Pid,
    io_task: Mutex<Option<JoinHandle<()>>>,
    stdin: Mutex<Option<Arc<OwnedFd>>>,
}

impl RunningProcess {
    /// Spawns `launch` and starts watching it. With `keep_stdin`, stdin stays
    /// open for [`write_stdin`](Self::write_stdin); otherwise the child reads EOF.
    pub fn start(launch: &Launch, mode: CaptureMode, keep_stdin: bool) -> Result<Self, SpawnError> {
        let handle = runtime::handle().map_err(SpawnError::Os)?;
        let notifier = Notifier::new().map_err(SpawnError::Os)?;
        let spawned = spawn::spawn(launch, keep_stdin)?;
        let pid = spawned.pid;
        let pidfd = open_pidfd(pid);
        for fd in [spawned.stdout.as_fd(), spawned.stderr.as_fd()]
            .into_iter()
            .chain(spawned.stdin.as_ref().map(|fd| fd.as_fd()))
        {
            // Cannot fail on a fresh pipe; if it did, reads would block a worker.
            if let Err(error) = set_nonblocking(fd) {
                signal_group(pid, Signal::KILL);
                let shared = Shared {
                    pid,
                    state: Mutex::new(State {
                        capture: Capture::new(mode),
                        exit: None,
                    }),
                    notifier,
                    wake_on_data: false,
                };
                handle.spawn(watch_exit(Arc::new(shared), pidfd));
                return Err(SpawnError::Os(error));
            }
        }
        let shared = Arc::new(Shared {
            pid,
            state: Mutex::new(State {
                capture: Capture::new(mode),
                exit: None,
            }),
            notifier,
            wake_on_data: matches!(mode, CaptureMode::Combined { .. }),
        });
        let (stdout, stderr) = (spawned.stdout, spawned.stderr);
        let drains = {
            let shared = shared.clone();
            async move {
                tokio::join!(
                    drain(shared.clone(), stdout, Stream::Stdout),
                    drain(shared, stderr, Stream::Stderr)
                );
            }
        };
        let io_task = handle.spawn(drains);
        handle.spawn(watch_exit(shared.clone(), pidfd));
        Ok(RunningProcess {
            shared,
            owner: rustix::process::getpid(),
            io_task: Mutex::new(Some(io_task)),
            stdin: Mutex::new(spawned.stdin.map(Arc::new)),
        })
    }

    /// The child's pid, which is also its process group id.
    pub fn pid(&self) -> i32 {
        self.shared.pid
    }

    /// Whether the calling process is the one that spawned the child (false
    /// in a forked copy, which must leave the child alone).
    pub fn owned_here(&self) -> bool {
        self.owner == rustix::process::getpid()
    }

    /// Signalled whenever capture or exit state changes.
    pub fn notifier(&self) -> &Notifier {
        &self.shared.notifier
    }

    /// Reaps the leader if it has exited, without blocking.
    pub fn try_reap(&self) -> Option<Exit> {
        self.shared.try_reap()
    }

    /// How the leader ended, if it has been reaped.
    pub fn exit(&self) -> Option<Exit> {
        lock(&self.shared.state).exit
    }

    /// `kill(0, -pgid)` succeeds or fails with EPERM.
    pub fn group_alive(&self) -> bool {
        group_alive(self.shared.pid)
    }

    /// 18.3: the leader is unreaped or any group member is alive.
    pub fn alive(&self) -> bool {
        self.try_reap().is_none() || self.group_alive()
    }

    /// Signals the whole group (ESRCH and EPERM ignored).
    pub fn signal_group(&self, signal: Signal) {
        signal_group(self.shared.pid, signal);
    }

    /// Both pipes reached EOF (everything the child wrote is buffered).
    pub fn output_complete(&self) -> bool {
        lock(&self.shared.state).capture.complete()
    }

    /// 17.8: the leader was reaped and both pipes reached EOF.
    pub fn finished(&self) -> bool {
        lock(&self.shared.state).capture.complete() && self.try_reap().is_some()
    }

    /// The final stdout and stderr text (17.9); empties the buffers.
    pub fn take_output(&self) -> (String, String) {
        let mut state = lock(&self.shared.state);
        (
            state.capture.render(Stream::Stdout),
            state.capture.render(Stream::Stderr),
        )
    }

    /// Takes up to `max_each` buffered bytes from each stream (18.5).
    pub fn read_chunk(&self, max_each: usize) -> OutputChunk {
        let mut state = lock(&self.shared.state);
        let capture = &mut state.capture;
        OutputChunk {
            stdout: capture.take(Stream::Stdout, max_each),
            stderr: capture.take(Stream::Stderr, max_each),
            stdout_closed: capture.closed(Stream::Stdout),
            stderr_closed: capture.closed(Stream::Stderr),
        }
    }

    /// The combined output bound was passed (sessions).
    pub fn overflowed(&self) -> bool {
        lock(&self.shared.state).capture.overflowed()
    }

    /// The child's stdin, if still open. The Arc keeps the fd valid while a
    /// writer waits without locks; `close_stdin` drops the session's share.
    pub fn stdin(&self) -> Option<Arc<OwnedFd>> {
        lock(&self.stdin).clone()
    }

    /// Closes the parent's end of stdin (idempotent).
    pub fn close_stdin(&self) {
        lock(&self.stdin).take();
    }

    /// Stops draining and closes stdout and stderr (idempotent). The exit
    /// watcher keeps running until the leader is reaped.
    pub fn close_output(&self) {
        if let Some(task) = lock(&self.io_task).take() {
            if self.owned_here() && runtime::owned_by_this_process() {
                task.abort();
            } else {
                std::mem::forget(task);
            }
        }
    }
}

/// One non-blocking `write(2)` to the child's stdin. EAGAIN means "wait for
/// POLLOUT"; EPIPE means the child closed its end.
pub fn write_stdin(fd: &OwnedFd, bytes: &[u8]) -> io::Result<usize> {
    rustix::io::write(fd, bytes).map_err(io::Error::from)
}

impl Drop for RunningProcess {
    fn drop(&mut self) {
        if !self.owned_here() {
            // A forked copy: the child and the runtime belong to the parent.
            if let Some(task) = lock(&self.io_task).take() {
                std::mem::forget(task);
            }
            return;
        }
        // Nobody will wait on an unreaped child any more: kill its group.
        // The exit watcher still reaps the leader.
        if self.exit().is_none() && self.try_reap().is_none() {
            self.signal_group(Signal::KILL);
        }
        self.close_output();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn launch(argv: &[&str]) -> Launch {
        Launch {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
            ..Launch::default()
        }
    }

    fn wait_finished(process: &RunningProcess) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !process.finished() {
            assert!(Instant::now() < deadline, "child did not finish");
            process.notifier().wait(POLL_INTERVAL, None);
        }
    }

    #[test]
    fn captures_both_streams_and_the_exit_status() {
        let process = RunningProcess::start(
            &launch(&["sh", "-c", "printf out; printf err >&2; exit 3"]),
            CaptureMode::PerStream { limit: 100 },
            false,
        )
        .unwrap();
        wait_finished(&process);
        assert_eq!(
            process.take_output(),
            ("out".to_string(), "err".to_string())
        );
        assert_eq!(process.exit().unwrap().code(), Some(3));
    }

    #[test]
    fn a_flood_is_drained_and_bounded() {
        let process = RunningProcess::start(
            &launch(&["head", "-c", "20000000", "/dev/zero"]),
            CaptureMode::PerStream { limit: 1000 },
            false,
        )
        .unwrap();
        wait_finished(&process);
        let (stdout, _) = process.take_output();
        assert_eq!(stdout.len(), 1000 + super::super::TRUNCATION_MARKER.len());
        assert_eq!(process.exit().unwrap().code(), Some(0));
    }

    #[test]
    fn the_child_gets_only_the_explicit_environment_and_eof_on_stdin() {
        std::env::set_var("LITTLEGHOST_CORE_TEST_SECRET", "hunter2");
        let process = RunningProcess::start(
            &Launch {
                environment: vec![("ONLY".into(), "this".into())],
                ..launch(&["/usr/bin/env"])
            },
            CaptureMode::PerStream { limit: 10_000 },
            false,
        )
        .unwrap();
        wait_finished(&process);
        assert_eq!(process.take_output().0, "ONLY=this\n");

        let cat = RunningProcess::start(
            &launch(&["cat"]),
            CaptureMode::PerStream { limit: 10 },
            false,
        )
        .unwrap();
        wait_finished(&cat);
        assert_eq!(cat.exit().unwrap().code(), Some(0));
    }

    #[test]
    fn the_child_leads_a_new_group_and_a_signal_death_has_no_code() {
        let process = RunningProcess::start(
            &launch(&["sleep", "30"]),
            CaptureMode::PerStream { limit: 10 },
            false,
        )
        .unwrap();
        let pgid = rustix::process::getpgid(Some(pid_of(process.pid()))).unwrap();
        assert_eq!(pgid.as_raw_nonzero().get(), process.pid());
        process.signal_group(Signal::KILL);
        wait_finished(&process);
        let exit = process.exit().unwrap();
        assert_eq!((exit.code(), exit.signal()), (None, Some(libc::SIGKILL)));
        assert!(!process.alive());
    }

    #[test]
    fn missing_and_non_executable_programs_are_told_apart() {
        let missing = RunningProcess::start(
            &launch(&["no-such-program-x"]),
            CaptureMode::PerStream { limit: 1 },
            false,
        );
        assert!(matches!(missing, Err(SpawnError::NotFound)));
        let denied = RunningProcess::start(
            &launch(&["/etc/hostname"]),
            CaptureMode::PerStream { limit: 1 },
            false,
        );
        assert!(matches!(denied, Err(SpawnError::NotExecutable)));
    }
}
