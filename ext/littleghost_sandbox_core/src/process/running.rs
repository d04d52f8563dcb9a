//! A spawned child whose pipes and exit are watched in the background.
//!
//! Two tasks run on the shared runtime per child: one drains stdout and
//! stderr into the bounded [`Capture`], one waits for the leader's exit (a
//! pidfd where the kernel has them, else a 10 ms `waitpid(WNOHANG)` poll) and
//! reaps it. Both signal the [`Notifier`]; waiters never need a SIGCHLD
//! handler. The exit task outlives everything else, so a child is reaped even
//! when its owner gave up on it: no zombies.
//!
//! A session reader does not have to wait for the drain task to wake up:
//! [`RunningProcess::read_chunk`] also reads the pipes itself, without
//! blocking. Every read of a pipe, by either side, happens under the state
//! lock together with storing what it read, so bytes keep their order and
//! pass through the same bound. The drain task copes with a pipe emptied
//! behind its back: its read sees EAGAIN and it waits for the next wake-up.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::task::JoinHandle;

mod failure;
mod termination;

use super::capture::{Capture, CaptureMode, Stream};
use super::group::{group_alive, signal_group};
use super::notify::Notifier;
use super::spawn::{self, pid_of, SpawnError};
use super::{runtime, spawner, Launch, POLL_INTERVAL};
pub use failure::{session_failure_subject, StartFailure};
use termination::terminate_in_background;
pub use termination::{Owner, Termination, TerminationStep};

/// Bytes read from a pipe per syscall by the drain task.
const READ_CHUNK: usize = 64 * 1024;
/// Bytes a session reader reads from a pipe itself per pass (18.5's 16 KiB).
const DIRECT_READ: usize = 16 * 1024;
/// How often a drain task that left a pipe to a polling reader checks it,
/// and how many empty checks it makes before watching the pipe again.
const QUIET_CHECK: Duration = Duration::from_millis(1);
const QUIET_CHECKS: u32 = 10;

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
    /// The read ends of stdout and stderr, shared with the drain task, until
    /// EOF or `close_output`.
    pipes: [Option<Arc<OwnedFd>>; 2],
}

/// What one non-blocking read of a pipe found.
enum Pulled {
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
    fn pull(&mut self, stream: Stream, buffer: &mut [u8]) -> Pulled {
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
    fn finish(&mut self, stream: Stream) {
        self.capture.mark_eof(stream);
        self.pipes[stream as usize] = None;
    }
}

struct Shared {
    pid: i32,
    /// The process that spawned the child (a forked copy must leave it alone).
    parent: Pid,
    /// Its [`Owner`] terminated it (the sandbox was closed).
    terminated_by_owner: AtomicBool,
    state: Mutex<State>,
    notifier: Notifier,
    /// Sessions and streaming executes want to hear about every chunk; a
    /// plain execute only about the end.
    wake_on_data: AtomicBool,
    /// A session reader also reads the pipes itself (see [`drain`]).
    direct_reader: bool,
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

impl Shared {
    fn wakes_on_data(&self) -> bool {
        self.wake_on_data.load(Ordering::Relaxed)
    }

    /// Reacts to bytes just stored: 18.5 terminates the group in the
    /// background once the combined bound is passed; waiters hear about it.
    fn stored(self: &Arc<Self>, overflowed_now: bool, wake: bool) {
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
async fn drain(shared: Arc<Shared>, pipe: Arc<OwnedFd>, stream: Stream) {
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
        Self::start_owned(launch, mode, keep_stdin, None)
    }

    /// [`start`](Self::start), registering the child with `owner` so that
    /// [`Owner::terminate_all`] reaches it. The child is started from the
    /// [`spawner`] thread, so its parent-death link follows the process.
    pub fn start_owned(
        launch: &Launch,
        mode: CaptureMode,
        keep_stdin: bool,
        owner: Option<&Owner>,
    ) -> Result<Self, SpawnError> {
        let handle = runtime::handle().map_err(SpawnError::Os)?;
        let notifier = Notifier::new().map_err(SpawnError::Os)?;
        let spawned = {
            let launch = launch.clone();
            spawner::run(move || spawn::spawn(&launch, keep_stdin)).map_err(SpawnError::Os)??
        };
        let me = rustix::process::getpid();
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
                    parent: me,
                    terminated_by_owner: AtomicBool::new(false),
                    state: Mutex::new(State {
                        capture: Capture::new(mode),
                        exit: None,
                        pipes: [None, None],
                    }),
                    notifier,
                    wake_on_data: AtomicBool::new(false),
                    direct_reader: false,
                };
                handle.spawn(watch_exit(Arc::new(shared), pidfd));
                return Err(SpawnError::Os(error));
            }
        }
        let stdout = Arc::new(spawned.stdout);
        let stderr = Arc::new(spawned.stderr);
        let shared = Arc::new(Shared {
            pid,
            parent: me,
            terminated_by_owner: AtomicBool::new(false),
            state: Mutex::new(State {
                capture: Capture::new(mode),
                exit: None,
                pipes: [Some(stdout.clone()), Some(stderr.clone())],
            }),
            notifier,
            wake_on_data: AtomicBool::new(matches!(mode, CaptureMode::Combined { .. })),
            direct_reader: matches!(mode, CaptureMode::Combined { .. }),
        });
        let drains = {
            let shared = shared.clone();
            async move {
                tokio::join!(
                    drain(shared.clone(), stdout, Stream::Stdout),
                    drain(shared, stderr, Stream::Stderr)
                );
            }
        };
        if let Some(owner) = owner {
            owner.adopt(&shared);
        }
        let io_task = handle.spawn(drains);
        handle.spawn(watch_exit(shared.clone(), pidfd));
        Ok(RunningProcess {
            shared,
            owner: me,
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

    /// Starts 17.12's termination (TERM sent); drive it with [`Termination::step`].
    pub fn begin_termination(&self) -> Termination {
        Termination::begin(self.shared.clone())
    }

    /// Whether its [`Owner`] terminated the child ([`Owner::terminate_all`]).
    pub fn terminated_by_owner(&self) -> bool {
        self.shared.terminated_by_owner.load(Ordering::SeqCst)
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

    /// Takes up to `max_each` bytes from each stream (18.5): what the drain
    /// task buffered, topped up by one non-blocking read of each pipe on the
    /// caller's thread, so a reply is seen without waiting for the drain task.
    pub fn read_chunk(&self, max_each: usize) -> OutputChunk {
        let mut buffer = [0u8; DIRECT_READ];
        let mut overflowed_now = false;
        let mut finished = false;
        let mut state = lock(&self.shared.state);
        for stream in [Stream::Stdout, Stream::Stderr] {
            let buffered = state.capture.stream(stream).data.len();
            let room = max_each.saturating_sub(buffered).min(DIRECT_READ);
            if room == 0 || state.capture.overflowed() {
                continue;
            }
            match state.pull(stream, &mut buffer[..room]) {
                Pulled::Data {
                    overflowed_now: now,
                } => overflowed_now |= now,
                Pulled::Eof => {
                    state.finish(stream);
                    finished = true;
                }
                // Left to the drain task, which ends the stream on failure.
                Pulled::Nothing | Pulled::Gone | Pulled::Failed => {}
            }
        }
        let capture = &mut state.capture;
        let chunk = OutputChunk {
            stdout: capture.take(Stream::Stdout, max_each),
            stderr: capture.take(Stream::Stderr, max_each),
            stdout_closed: capture.closed(Stream::Stdout),
            stderr_closed: capture.closed(Stream::Stderr),
        };
        drop(state);
        // The bytes went straight to this reader: only an overflow or an EOF
        // is news for other waiters.
        self.shared.stored(overflowed_now, finished);
        chunk
    }

    /// From now on the [`Notifier`] fires on every chunk of output, not only
    /// at the end, so a caller can stream it with [`output_since`](Self::output_since).
    pub fn stream_output(&self) {
        self.shared.wake_on_data.store(true, Ordering::Relaxed);
    }

    /// The kept bytes of stdout and stderr past `cursor` (per-stream capture),
    /// advancing it: what a streaming caller has not seen yet, in order.
    pub fn output_since(&self, cursor: &mut [usize; 2]) -> [Vec<u8>; 2] {
        let state = lock(&self.shared.state);
        [Stream::Stdout, Stream::Stderr].map(|stream| {
            let fresh = state
                .capture
                .since(stream, cursor[stream as usize])
                .to_vec();
            cursor[stream as usize] += fresh.len();
            fresh
        })
    }

    /// Runs 17.12's [`Termination`] on the shared runtime, for a caller that
    /// does not wait for it (a memory monitor that saw the limit passed).
    pub fn terminate_detached(&self) {
        if let Ok(handle) = runtime::handle() {
            handle.spawn(terminate_in_background(self.shared.clone()));
        } else {
            self.signal_group(Signal::KILL);
        }
    }

    /// The output bound was passed: the combined one (sessions), or a
    /// per-stream one with `stop_at_limit` (the group is then terminated).
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
        let pipes = std::mem::take(&mut lock(&self.shared.state).pipes);
        if let Some(task) = lock(&self.io_task).take() {
            if self.owned_here() && runtime::owned_by_this_process() {
                task.abort();
            } else {
                std::mem::forget(task);
            }
        }
        // The aborted task drops its share of each pipe; these are the rest.
        drop(pipes);
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
            std::mem::forget(std::mem::take(&mut lock(&self.shared.state).pipes));
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
    use super::super::group::process_alive;
    use super::*;
    use std::time::{Duration, Instant};

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
            assert!(
                Instant::now() < deadline,
                "child did not finish: complete {} exit {:?}",
                process.output_complete(),
                process.exit()
            );
            process.notifier().wait(POLL_INTERVAL, None);
        }
    }

    #[test]
    fn captures_both_streams_and_the_exit_status() {
        let process = RunningProcess::start(
            &launch(&["sh", "-c", "printf out; printf err >&2; exit 3"]),
            CaptureMode::PerStream {
                limit: 100,
                stop_at_limit: false,
            },
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
            CaptureMode::PerStream {
                limit: 1000,
                stop_at_limit: false,
            },
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
            CaptureMode::PerStream {
                limit: 10_000,
                stop_at_limit: false,
            },
            false,
        )
        .unwrap();
        wait_finished(&process);
        assert_eq!(process.take_output().0, "ONLY=this\n");

        let cat = RunningProcess::start(
            &launch(&["cat"]),
            CaptureMode::PerStream {
                limit: 10,
                stop_at_limit: false,
            },
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
            CaptureMode::PerStream {
                limit: 10,
                stop_at_limit: false,
            },
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

    /// Reads a session's stdout with `read_chunk` until EOF, racing the drain task.
    fn read_all_stdout(process: &RunningProcess, max_each: usize) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut stdout = Vec::new();
        loop {
            let chunk = process.read_chunk(max_each);
            assert!(chunk.stdout.len() <= max_each);
            stdout.extend_from_slice(&chunk.stdout);
            if chunk.stdout_closed {
                return stdout;
            }
            assert!(Instant::now() < deadline, "no EOF on stdout");
        }
    }

    #[test]
    fn direct_reads_and_the_drain_task_keep_the_bytes_in_order() {
        let expected: Vec<u8> = (1..=200_000)
            .map(|n| format!("{n}\n"))
            .collect::<String>()
            .into_bytes();
        for max_each in [7, 4096, 16 * 1024] {
            let process = RunningProcess::start(
                &launch(&["seq", "1", "200000"]),
                CaptureMode::Combined { limit: 10_000_000 },
                false,
            )
            .unwrap();
            let stdout = read_all_stdout(&process, max_each);
            assert!(stdout == expected, "bytes lost or reordered");
            wait_finished(&process);
        }
    }

    #[test]
    fn a_child_is_still_drained_after_a_polling_reader_stops_reading() {
        // 200 polled round trips (the drain task steps back while a reader
        // polls), then 2 MB nobody reads: the child must still finish (W15).
        let script = "for i in $(seq 200); do read line; echo \"$line\"; done; \
                      sleep 0.2; head -c 2000000 /dev/zero";
        let process = RunningProcess::start(
            &launch(&["sh", "-c", script]),
            CaptureMode::Combined { limit: 10_000_000 },
            true,
        )
        .unwrap();
        let stdin = process.stdin().unwrap();
        for round in 0..200 {
            let line = format!("{round}\n");
            assert_eq!(write_stdin(&stdin, line.as_bytes()).unwrap(), line.len());
            let mut received = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(10);
            while !received.ends_with(line.as_bytes()) {
                received.extend(process.read_chunk(16 * 1024).stdout);
                assert!(Instant::now() < deadline, "no echo of round {round}");
            }
            assert_eq!(received, line.as_bytes());
        }
        wait_finished(&process);
        assert_eq!(process.exit().unwrap().code(), Some(0));
        assert_eq!(process.read_chunk(usize::MAX).stdout.len(), 2_000_000);
    }

    #[test]
    fn a_direct_read_past_the_combined_bound_terminates_the_group() {
        let process = RunningProcess::start(
            &launch(&["sh", "-c", "while :; do echo flood; done"]),
            CaptureMode::Combined { limit: 1000 },
            false,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut kept = 0;
        while !process.overflowed() {
            kept += process.read_chunk(16 * 1024).stdout.len();
            assert!(Instant::now() < deadline, "bound never passed");
        }
        assert!(kept <= 1000);
        wait_finished(&process);
        assert_eq!(process.exit().unwrap().signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn closing_output_closes_the_pipes_so_a_writer_gets_sigpipe() {
        let process = RunningProcess::start(
            &launch(&[
                "sh",
                "-c",
                "sleep 0.3; while :; do echo more || exit 7; done",
            ]),
            CaptureMode::Combined { limit: 1 << 40 },
            false,
        )
        .unwrap();
        process.read_chunk(16);
        process.close_output();
        wait_finished_exit(&process);
        let exit = process.exit().unwrap();
        assert!(
            exit.signal() == Some(libc::SIGPIPE) || exit.code() == Some(7),
            "{exit:?}"
        );
    }

    fn wait_finished_exit(process: &RunningProcess) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while process.try_reap().is_none() {
            assert!(Instant::now() < deadline, "child did not exit");
            process.notifier().wait(POLL_INTERVAL, None);
        }
    }

    #[test]
    fn an_owner_terminates_every_live_child_and_marks_it() {
        let owner = Owner::new();
        let start = |argv: &[&str]| {
            RunningProcess::start_owned(
                &launch(argv),
                CaptureMode::Combined { limit: 100 },
                true,
                Some(&owner),
            )
            .unwrap()
        };
        let sleeper = start(&["sleep", "30"]);
        // Ignores TERM: only the KILL after the grace ends it.
        let stubborn = start(&[
            "sh",
            "-c",
            "trap '' TERM; echo ready; while :; do sleep 1; done",
        ]);
        let finished = start(&["true"]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !stubborn.read_chunk(100).stdout.starts_with(b"ready") {
            assert!(Instant::now() < deadline, "stubborn child never started");
        }
        wait_finished(&finished);
        let dropped = start(&["sleep", "30"]);
        drop(dropped);
        assert_eq!(owner.terminate_all(), 2);
        for process in [&sleeper, &stubborn] {
            assert!(process.terminated_by_owner());
            assert!(!process.alive());
        }
        assert!(!finished.terminated_by_owner());
        assert_eq!(sleeper.exit().unwrap().signal(), Some(libc::SIGTERM));
        assert_eq!(stubborn.exit().unwrap().signal(), Some(libc::SIGKILL));
        // Nothing left to terminate.
        assert_eq!(owner.terminate_all(), 0);
    }

    #[test]
    fn missing_and_non_executable_programs_are_told_apart() {
        let missing = RunningProcess::start(
            &launch(&["no-such-program-x"]),
            CaptureMode::PerStream {
                limit: 1,
                stop_at_limit: false,
            },
            false,
        );
        assert!(matches!(missing, Err(SpawnError::NotFound)));
        let denied = RunningProcess::start(
            &launch(&["/etc/hostname"]),
            CaptureMode::PerStream {
                limit: 1,
                stop_at_limit: false,
            },
            false,
        );
        assert!(matches!(denied, Err(SpawnError::NotExecutable)));
    }

    #[test]
    fn stop_at_limit_terminates_a_flood_at_the_cap() {
        let process = RunningProcess::start(
            &launch(&["sh", "-c", "yes; sleep 60"]),
            CaptureMode::PerStream {
                limit: 10,
                stop_at_limit: true,
            },
            false,
        )
        .unwrap();
        wait_finished(&process);
        assert!(process.overflowed());
        assert_eq!(process.exit().and_then(Exit::signal), Some(libc::SIGTERM));
        let (stdout, _) = process.take_output();
        assert_eq!(stdout, "y\ny\ny\ny\ny\n\n[output truncated]");
    }

    #[test]
    fn output_since_streams_each_byte_once_in_order() {
        let process = RunningProcess::start(
            &launch(&["sh", "-c", "printf ab; printf cd >&2; printf ef"]),
            CaptureMode::PerStream {
                limit: 100,
                stop_at_limit: false,
            },
            false,
        )
        .unwrap();
        process.stream_output();
        let mut cursor = [0, 0];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        while !process.finished() {
            let [o, e] = process.output_since(&mut cursor);
            out.extend(o);
            err.extend(e);
            process.notifier().wait(POLL_INTERVAL, None);
        }
        let [o, e] = process.output_since(&mut cursor);
        out.extend(o);
        err.extend(e);
        assert_eq!((out.as_slice(), err.as_slice()), (&b"abef"[..], &b"cd"[..]));
        assert_eq!(process.take_output(), ("abef".into(), "cd".into()));
    }

    #[test]
    fn terminate_detached_ends_a_descendant_that_left_the_group() {
        let process = RunningProcess::start(
            &launch(&["sh", "-c", "setsid sleep 60 & echo $!; wait"]),
            CaptureMode::Combined { limit: 1000 },
            false,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut text = Vec::new();
        while !text.ends_with(b"\n") {
            assert!(Instant::now() < deadline, "no pid from the child");
            text.extend(process.read_chunk(64).stdout);
            process.notifier().wait(POLL_INTERVAL, None);
        }
        let escaped: i32 = String::from_utf8(text).unwrap().trim().parse().unwrap();
        assert!(process_alive(escaped));
        process.terminate_detached();
        while process_alive(escaped) || process.alive() {
            assert!(Instant::now() < deadline, "the descendant survived");
            std::thread::sleep(POLL_INTERVAL);
        }
    }
}
