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
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rustix::process::{Pid, Signal};
use tokio::task::JoinHandle;

mod background;
mod failure;
mod termination;

use super::capture::{CaptureMode, Stream};
use super::group::{group_alive, signal_group};
use super::notify::Notifier;
use super::spawn::{self, ChildStdio, SpawnError};
use super::terminal::Terminal;
use super::{runtime, spawner, Launch};
use crate::limits::{watch::watch_cpu, LaunchCgroup, LimitExceeded, ProcessLimits};
use background::{drain_both, lock, open_pidfd, set_nonblocking, watch_exit, Pulled, Shared};
pub use failure::{session_failure_subject, StartFailure};
use termination::{expire, terminate_in_background};
pub use termination::{Owner, Termination, TerminationStep};

/// Bytes a session reader reads from a pipe itself per pass (18.5's 16 KiB).
const DIRECT_READ: usize = 16 * 1024;

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

    /// How the program ended, for the limits' reading of it.
    pub fn program_end(self) -> crate::limits::plan::ProgramEnd {
        crate::limits::plan::ProgramEnd {
            signal: self.signal(),
            code: self.code(),
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

/// A child leading its own process group, with background capture.
pub struct RunningProcess {
    shared: Arc<Shared>,
    /// Dropped with the process: kills what is left in it and removes it.
    cgroup: Option<Arc<LaunchCgroup>>,
    owner: Pid,
    io_task: Mutex<Option<JoinHandle<()>>>,
    stdin: Mutex<Option<Arc<OwnedFd>>>,
}

/// A launch handed to the [`spawner`] thread whose caller has not taken the
/// answer yet. The caller waits on
/// [`notifier`](Self::notifier) in slices it can interrupt; an interrupted
/// caller [`cancel`](Self::cancel)s a spawn that has not begun (nothing is
/// started), or else waits for it and terminates what it started.
pub struct Starting {
    handoff: spawner::Handoff<Result<RunningProcess, SpawnError>>,
}

impl Starting {
    /// Queues the spawn of `launch` (in a cgroup enforcing `limits`) on the
    /// spawner thread and returns at once. The spawner also starts watching
    /// the child and registers it with `owner` as soon as it exists, so a
    /// sandbox closed while the caller waits for the GVL still reaches it.
    pub fn submit(
        launch: &Launch,
        limits: &ProcessLimits,
        mode: CaptureMode,
        keep_stdin: bool,
        owner: Option<&Owner>,
    ) -> Result<Starting, SpawnError> {
        Self::submit_with(
            launch,
            limits,
            mode,
            ChildStdio::Pipes { keep_stdin },
            owner,
        )
    }

    /// [`submit`](Self::submit) with the child's stdio as `stdio` says.
    fn submit_with(
        launch: &Launch,
        limits: &ProcessLimits,
        mode: CaptureMode,
        stdio: ChildStdio,
        owner: Option<&Owner>,
    ) -> Result<Starting, SpawnError> {
        // Made before anything is spawned, so that a failure to make them
        // never leaves a child nobody watches.
        let handle = runtime::handle().map_err(SpawnError::Os)?;
        let notifier = Notifier::new().map_err(SpawnError::Os)?;
        let (launch, limits, owner) = (launch.clone(), limits.clone(), owner.cloned());
        // Counted from before the spawn until adopted, so a `close` meanwhile waits for it.
        let launching = owner.as_ref().map(Owner::launching);
        let handoff = spawner::submit(move || {
            let spawned = spawn::spawn_limited_with(&launch, &limits, stdio);
            let adopted = spawned.and_then(|spawned| {
                RunningProcess::adopt_spawned(spawned, (handle, notifier), mode, owner.as_ref())
            });
            drop(launching);
            adopted
        })
        .map_err(SpawnError::Os)?;
        Ok(Starting { handoff })
    }

    /// Readable once the spawner answered; an interrupt handler may signal
    /// its write fd to end a wait early.
    pub fn notifier(&self) -> &Notifier {
        self.handoff.notifier()
    }

    /// Withdraws a spawn that has not begun: true if nothing was or will be
    /// started. False once the spawner runs it: take its answer and
    /// terminate the child.
    pub fn cancel(&self) -> bool {
        self.handoff.cancel()
    }

    /// The started child, once the spawner answered; `None` before.
    /// Answers once.
    pub fn try_finish(&self) -> Option<Result<RunningProcess, SpawnError>> {
        Some(match self.handoff.try_take()? {
            Ok(started) => started,
            Err(error) => Err(SpawnError::Os(error)),
        })
    }

    /// Waits (blocking, uninterruptibly) for the spawner's answer.
    pub fn finish(self) -> Result<RunningProcess, SpawnError> {
        loop {
            if let Some(started) = self.try_finish() {
                return started;
            }
            self.notifier().wait(super::POLL_INTERVAL, None);
        }
    }
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
        Self::start_limited(launch, &ProcessLimits::default(), mode, keep_stdin, owner)
    }

    /// [`start_owned`](Self::start_owned) in a cgroup enforcing `limits`
    /// ([`crate::limits`]): a CPU watcher terminates the tree past
    /// `cpu_seconds`, [`limit_exceeded`](Self::limit_exceeded) says which
    /// limit stopped it, and dropping the process kills what is left in the
    /// cgroup and removes it.
    pub fn start_limited(
        launch: &Launch,
        limits: &ProcessLimits,
        mode: CaptureMode,
        keep_stdin: bool,
        owner: Option<&Owner>,
    ) -> Result<Self, SpawnError> {
        Starting::submit(launch, limits, mode, keep_stdin, owner)?.finish()
    }

    /// [`start_limited`](Self::start_limited) on `terminal` ([`super::terminal`]):
    /// its output is all stdout, read from the master, and
    /// [`stdin`](Self::stdin) writes to the master.
    pub fn start_on_terminal(
        launch: &Launch,
        limits: &ProcessLimits,
        mode: CaptureMode,
        terminal: Terminal,
        owner: Option<&Owner>,
    ) -> Result<Self, SpawnError> {
        let stdio = ChildStdio::Terminal(terminal);
        Starting::submit_with(launch, limits, mode, stdio, owner)?.finish()
    }

    /// Starts watching a freshly spawned child (the half of
    /// [`start_limited`](Self::start_limited) after the spawner's answer).
    fn adopt_spawned(
        spawned: spawn::Spawned,
        (handle, notifier): (tokio::runtime::Handle, Notifier),
        mode: CaptureMode,
        owner: Option<&Owner>,
    ) -> Result<Self, SpawnError> {
        let me = rustix::process::getpid();
        let pid = spawned.pid;
        let pidfd = open_pidfd(pid);
        // Cannot fail on a fresh pipe; if it did, reads would block a worker.
        let nonblocking = [spawned.stdout.as_fd(), spawned.stderr.as_fd()]
            .into_iter()
            .chain(spawned.stdin.as_ref().map(|fd| fd.as_fd()))
            .try_for_each(set_nonblocking);
        if let Err(error) = nonblocking {
            signal_group(pid, Signal::KILL);
            let shared = Shared::new(pid, me, mode, notifier, [None, None], Weak::new());
            handle.spawn(watch_exit(Arc::new(shared), pidfd));
            return Err(SpawnError::Os(error));
        }
        let stdout = Arc::new(spawned.stdout);
        let stderr = Arc::new(spawned.stderr);
        let cgroup = spawned.cgroup.map(Arc::new);
        let weak = cgroup.as_ref().map_or_else(Weak::new, Arc::downgrade);
        let pipes = [Some(stdout.clone()), Some(stderr.clone())];
        let shared = Arc::new(Shared::new(pid, me, mode, notifier, pipes, weak));
        if let Some(cgroup) = &cgroup {
            // Past cpu_seconds: the one termination protocol, then the rest of the cgroup.
            let terminate = terminate_in_background(shared.clone());
            handle.spawn(watch_cpu(Arc::downgrade(cgroup), terminate));
        }
        if let Some(owner) = owner {
            owner.adopt(&shared);
        }
        let io_task = handle.spawn(drain_both(shared.clone(), stdout, stderr));
        handle.spawn(watch_exit(shared.clone(), pidfd));
        Ok(RunningProcess {
            shared,
            cgroup,
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

    /// Which kernel-enforced limit stopped the tree, if any (SPEC L.2).
    pub fn limit_exceeded(&self) -> Option<LimitExceeded> {
        self.cgroup.as_ref().and_then(|cgroup| cgroup.exceeded())
    }

    /// The `tasks` limit, if the kernel refused a process at it (no kill:
    /// the program saw EAGAIN and went on).
    pub fn tasks_refused(&self) -> Option<u64> {
        self.cgroup
            .as_ref()
            .and_then(|cgroup| cgroup.tasks_refused())
    }

    /// The launch ended (a session's `close`): kills everything left in its
    /// cgroup (a `setsid` daemon) and removes the cgroup now rather than
    /// when the process is dropped. A no-op without a cgroup.
    pub fn release_tree(&self) {
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
            let _ = cgroup.remove();
        }
    }

    /// CPU time the whole tree used so far, where it runs in a cgroup.
    pub fn tree_cpu_time(&self) -> Option<Duration> {
        self.cgroup.as_ref().and_then(|cgroup| cgroup.cpu_usage())
    }

    /// Whether its [`Owner`] terminated the child ([`Owner::terminate_all`]).
    pub fn terminated_by_owner(&self) -> bool {
        self.shared.terminated_by_owner.load(Ordering::SeqCst)
    }

    /// Bounds the child's life (a session's `timeout:`): once `lifetime`
    /// passes with it still alive, its whole tree is terminated in the
    /// background (17.12, then its cgroup) and [`timed_out`](Self::timed_out)
    /// becomes true. A lifetime too long to represent never passes.
    pub fn expire_after(&self, lifetime: Duration) {
        match runtime::handle() {
            Ok(handle) => {
                handle.spawn(expire(Arc::downgrade(&self.shared), lifetime));
            }
            // Without a runtime nothing could end it on time: fail closed.
            Err(_) => self.signal_group(Signal::KILL),
        }
    }

    /// Whether [`expire_after`](Self::expire_after)'s lifetime passed while
    /// the child ran (it is then being, or has been, terminated).
    pub fn timed_out(&self) -> bool {
        self.shared.timed_out.load(Ordering::SeqCst)
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
mod tests;
