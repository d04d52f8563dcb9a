//! A session's rules (§18): the state of a long-lived child with stdin and
//! combined output ([`Session`]), which operations it refuses and why
//! ([`SessionError`]), and the loops of `write`, `read` and `wait`. The
//! loops never block themselves: each takes the caller's `wait` (the Ruby
//! binding waits in slices without the GVL and runs interrupts between them)
//! and hands back whatever error that returns, unchanged.
//!
//! - [`status`]: what `wait` and `terminate` return, shaped like `Process::Status`.
//! - [`monitor`]: 18.9's memory sampling loop.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::deadline::Deadline;
use super::ending::{Ending, Outcome};
use super::running::{write_stdin, Exit, Owner, RunningProcess};
use super::{CaptureMode, Launch, SpawnError};
use crate::denial::Denial;
use crate::limits::plan::{rlimit_cpu_kill, Plan};
use crate::limits::{LimitExceeded, ProcessLimits};

pub mod monitor;
pub mod status;

pub use status::SessionStatus;

/// Bytes taken from each stream per read pass (18.5).
pub const READ_PASS_BYTES: usize = 16 * 1024;

/// How long output may take to reach EOF once the whole group is gone.
const SETTLE_OUTPUT: Duration = Duration::from_millis(100);

pub use super::ending::CLOSED_BY_OWNER;

/// Why a session refuses an operation. [`is_io`](Self::is_io) errors are
/// IOError; the rest are ToolError.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// The session object never started a child.
    NotStarted,
    /// A forked copy: the child belongs to the process that started it.
    Foreign,
    /// `close` was called.
    Closed,
    /// `close_write` was called.
    StdinClosed,
    /// Writing to stdin failed (the child closed its end).
    ChildExited,
    /// The sandbox's `close` terminated the child (H.4).
    ClosedByOwner,
}

impl SessionError {
    /// Whether the error is an IOError (misuse of the session), not a ToolError.
    pub fn is_io(&self) -> bool {
        !matches!(self, SessionError::ClosedByOwner)
    }

    /// The message users see.
    pub fn message(&self) -> String {
        match self {
            SessionError::NotStarted => "process session was not started".into(),
            SessionError::Foreign => {
                "process session belongs to the process that started it".into()
            }
            SessionError::Closed => "process session is closed".into(),
            SessionError::StdinClosed => "process session stdin is closed".into(),
            SessionError::ChildExited => "sandboxed process has exited".into(),
            SessionError::ClosedByOwner => CLOSED_BY_OWNER.into(),
        }
    }
}

/// "Program timed out after SHOWN seconds", SHOWN being the timeout as the
/// caller gave it (18.6).
pub fn timed_out_message(shown: &str) -> String {
    format!("Program timed out after {shown} seconds")
}

/// A started session: the child and the flags its operations share.
pub struct Session {
    process: RunningProcess,
    /// The argv as given (for `inspect`).
    command: Vec<String>,
    output_bytes: u64,
    closed: AtomicBool,
    monitor_stop: AtomicBool,
    /// Set by the memory monitor when it ends.
    monitor_done: AtomicBool,
    /// The write mutex of 18.4, taken without holding a lock across waits.
    writing: AtomicBool,
    /// L.3's per-process `RLIMIT_CPU`, when `cpu_seconds` fell back to it:
    /// the leader's kill by it reads as the CPU limit.
    rlimit_cpu_seconds: Option<u64>,
    /// `start_program(timeout:)`, in seconds as validated (17.3).
    timeout: Option<f64>,
    /// The sampled memory limit (18.9) the monitor saw passed, in bytes.
    memory_sampled_over: OnceLock<u64>,
    /// The limit kill's one denial was claimed (by the memory monitor as it
    /// acted, or with the error): never a second.
    kill_reported: AtomicBool,
    /// The first error that ended the session as its caller recorded it:
    /// an [`Ending`], or None for a failure that is not one (the memory
    /// supervisor's). Every later call raises that one.
    recorded: OnceLock<Option<Ending>>,
}

/// How a [`Session::wait_for_exit`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    /// The leader was reaped and the group is gone.
    Exited,
    /// The deadline passed first.
    TimedOut,
}

impl Session {
    /// A session of `process`, started from `command` with combined output
    /// bounded by `output_bytes`.
    pub fn new(process: RunningProcess, command: Vec<String>, output_bytes: u64) -> Session {
        Session {
            process,
            command,
            output_bytes,
            closed: AtomicBool::new(false),
            monitor_stop: AtomicBool::new(false),
            monitor_done: AtomicBool::new(false),
            writing: AtomicBool::new(false),
            rlimit_cpu_seconds: None,
            timeout: None,
            memory_sampled_over: OnceLock::new(),
            kill_reported: AtomicBool::new(false),
            recorded: OnceLock::new(),
        }
    }

    /// Bounds the session's life to `seconds` (positive and finite, 17.3):
    /// once they pass with the child alive, its whole tree is terminated
    /// and its next `read`/`wait` reports [`SessionError::TimedOut`].
    pub fn expire_after(&mut self, seconds: f64) {
        self.timeout = Some(seconds);
        // A timeout too long to represent never passes.
        if let Ok(lifetime) = Duration::try_from_secs_f64(seconds) {
            self.process.expire_after(lifetime);
        }
    }

    /// Spawns `launch` (18.1) with stdin kept open, output bounded by
    /// `output_bytes` combined, in a cgroup enforcing `limits`, registered
    /// with `owner`.
    pub fn start(
        launch: &Launch,
        limits: &ProcessLimits,
        output_bytes: u64,
        owner: Option<&Owner>,
    ) -> Result<Session, SpawnError> {
        let mode = Session::capture_mode(output_bytes);
        let process = RunningProcess::start_limited(launch, limits, mode, true, owner)?;
        Ok(Session::new(process, launch.argv.clone(), output_bytes))
    }

    /// The session as its launch asked: shown in `inspect` as `shown` (the
    /// caller's argv) rather than the wrapper's (bwrap, the Landlock
    /// supervisor); the leader's kill by the launch's `RLIMIT_CPU` is the
    /// CPU limit where it stands in for a whole-tree `cpu_seconds` (L.3);
    /// its life bounded by `timeout` seconds (see [`expire_after`](Self::expire_after)).
    pub fn launched_as(
        mut self,
        shown: Option<Vec<String>>,
        limits: &Plan,
        timeout: Option<f64>,
    ) -> Session {
        if let Some(command) = shown {
            self.command = command;
        }
        if limits.cpu_fallback {
            self.rlimit_cpu_seconds = limits.rlimit_cpu_seconds;
        }
        if let Some(seconds) = timeout {
            self.expire_after(seconds);
        }
        self
    }

    /// How a session's output is captured: combined, bounded by `output_bytes`
    /// (for a caller that starts the process itself, see [`crate::process::running::Starting`]).
    pub fn capture_mode(output_bytes: u64) -> CaptureMode {
        CaptureMode::Combined {
            limit: output_bytes,
        }
    }

    /// The bound on combined output (18.5).
    pub fn output_bytes(&self) -> u64 {
        self.output_bytes
    }

    /// The child.
    pub fn process(&self) -> &RunningProcess {
        &self.process
    }

    /// The session, unless it belongs to the parent of a forked process.
    pub fn owned(&self) -> Result<&Session, SessionError> {
        if self.process.owned_here() {
            Ok(self)
        } else {
            Err(SessionError::Foreign)
        }
    }

    /// `pid=N alive=BOOL[ closed] command=[...]`, the body of `inspect`.
    /// A forked copy never reaps or signals the parent's
    /// child, so it shows `alive=false`.
    pub fn describe(&self) -> String {
        let closed = if self.is_closed() { " closed" } else { "" };
        let alive = self.process.owned_here() && self.process.alive();
        format!(
            "pid={} alive={alive}{closed} command={:?}",
            self.process.pid(),
            self.command
        )
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// `Err(Closed)` once `close` was called.
    pub fn check_open(&self) -> Result<(), SessionError> {
        if self.is_closed() {
            Err(SessionError::Closed)
        } else {
            Ok(())
        }
    }

    /// `Err` for a write refused before it starts (18.4): `close` was
    /// called, or the sandbox's `close` terminated the child (H.4).
    pub fn check_writable(&self) -> Result<(), SessionError> {
        self.check_open()?;
        match self.process.terminated_by_owner() {
            true => Err(SessionError::ClosedByOwner),
            false => Ok(()),
        }
    }

    /// How the session ended other than by its program's own exit, the
    /// first of: the memory monitor ended the tree (18.9, it acts before
    /// anything else can), the sandbox closed the session (H.4), its
    /// `timeout:` passed, a kernel limit stopped the tree (L.2), the
    /// per-process `RLIMIT_CPU` standing in for it killed the leader (L.3),
    /// output passed its bound (18.5).
    pub fn ending(&self) -> Option<Ending> {
        if let Some(&bytes) = self.memory_sampled_over.get() {
            return Some(Ending::Limit(LimitExceeded::Memory { bytes }));
        }
        if self.process.terminated_by_owner() {
            return Some(Ending::ClosedByOwner);
        }
        if let Some(seconds) = self.timeout.filter(|_| self.process.timed_out()) {
            return Some(Ending::TimedOut(seconds));
        }
        if let Some(exceeded) = self.process.limit_exceeded() {
            return Some(Ending::Limit(exceeded));
        }
        let end = self
            .process
            .exit()
            .map(Exit::program_end)
            .unwrap_or_default();
        if let Some(exceeded) = rlimit_cpu_kill(self.rlimit_cpu_seconds, end) {
            return Some(Ending::Limit(exceeded));
        }
        let bytes = self.output_bytes;
        let output = self
            .process
            .overflowed()
            .then_some(LimitExceeded::Output { bytes });
        output.map(Ending::Limit)
    }

    /// 18.9: the memory monitor saw the tree above `limit`: from now on
    /// that is how the session ended (its next call raises it, with the
    /// output), and the group is handed to the one termination protocol
    /// (17.12) in the background.
    pub fn end_at_sampled_memory(&self, limit: u64) -> Ending {
        // The first such call counts.
        let _ = self.memory_sampled_over.set(limit);
        self.process.terminate_detached();
        Ending::Limit(LimitExceeded::Memory { bytes: limit })
    }

    /// The denial of `ending` for the session of `program`, for the one
    /// caller that reports the kill (the memory monitor as it acts, or the
    /// call that raises the error): None for every later one, and for an
    /// end that is no denial.
    pub fn kill_denial(&self, ending: &Ending, program: &str) -> Option<Denial> {
        let denial = ending.denial(program)?;
        (!self.kill_reported.swap(true, Ordering::SeqCst)).then_some(denial)
    }

    /// Records the error that ended the session (an [`Ending`], or None for
    /// the memory supervisor's failure); the first one counts.
    pub fn record(&self, ending: Option<Ending>) {
        let _ = self.recorded.set(ending);
    }

    /// Whether an error that ended the session was recorded.
    pub fn recorded(&self) -> bool {
        self.recorded.get().is_some()
    }

    /// `alive?` answers without raising: the sandbox's close (H.4) or the
    /// `timeout:` ended the session from outside (`read` and `wait` say
    /// why), and no other error (a memory limit that ended it first) was
    /// recorded.
    pub fn ended_from_outside(&self) -> bool {
        let outside = matches!(
            self.ending(),
            Some(Ending::ClosedByOwner | Ending::TimedOut(_))
        );
        outside && matches!(self.recorded.get(), None | Some(Some(Ending::TimedOut(_))))
    }

    /// What the ended session wrote that no `read` handed out: `taken`
    /// (what the read that passed an output bound took), then what is left
    /// (up to the bound); and how it ended.
    pub fn outcome(&self, taken: (Vec<u8>, Vec<u8>)) -> Outcome {
        let (mut stdout, mut stderr) = taken;
        let (rest_out, rest_err) = self.unread_output();
        stdout.extend_from_slice(&rest_out);
        stderr.extend_from_slice(&rest_err);
        Outcome {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            exit: self.process.exit(),
        }
    }

    /// Marks the session closed; true for the one call that must clean up
    /// (not a forked copy, not closed before).
    pub fn begin_close(&self) -> bool {
        self.process.owned_here() && !self.closed.swap(true, Ordering::SeqCst)
    }

    /// Asks the memory monitor to stop.
    pub fn stop_monitor(&self) {
        self.monitor_stop.store(true, Ordering::SeqCst);
    }

    /// Whether the memory monitor was asked to stop.
    pub fn monitor_stopped(&self) -> bool {
        self.monitor_stop.load(Ordering::SeqCst)
    }

    /// Whether the memory monitor ended (see [`MonitorRun`]).
    pub fn monitor_finished(&self) -> bool {
        self.monitor_done.load(Ordering::SeqCst)
    }

    /// Held by the memory monitor while it runs; however it ends, dropping
    /// it makes [`monitor_finished`](Self::monitor_finished) true.
    pub fn monitor_run(&self) -> MonitorRun<'_> {
        MonitorRun(&self.monitor_done)
    }

    /// 18.4: writes `bytes` to stdin, one writer at a time. `wait(None)`
    /// waits for another writer's turn to end, `wait(Some(stdin))` for room
    /// in the pipe; returns the byte count.
    pub fn write<E>(
        &self,
        bytes: &[u8],
        mut wait: impl FnMut(Option<&OwnedFd>) -> Result<(), E>,
        refused: impl Fn(SessionError) -> E,
    ) -> Result<usize, E> {
        while self
            .writing
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            wait(None)?;
        }
        let _turn = WriteTurn(&self.writing);
        let mut written = 0;
        while written < bytes.len() {
            match self.write_some(&bytes[written..]).map_err(&refused)? {
                Written::Bytes(count) => written += count,
                Written::Blocked(stdin) => wait(Some(&stdin))?,
            }
        }
        Ok(written)
    }

    /// One attempt to write `bytes` (an interrupted write is retried).
    fn write_some(&self, bytes: &[u8]) -> Result<Written, SessionError> {
        loop {
            self.check_open()?;
            let stdin = self.process.stdin().ok_or(SessionError::StdinClosed)?;
            match write_stdin(&stdin, bytes) {
                Ok(count) => return Ok(Written::Bytes(count)),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    return Ok(Written::Blocked(stdin))
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(SessionError::ChildExited),
            }
        }
    }

    /// Once the whole group is gone, EOF on the pipes is a moment away
    /// (unless a process outside the group holds them): waits up to 100 ms
    /// for it, so that `wait` followed by `read` sees everything the child wrote.
    pub fn settle_output<E>(
        &self,
        mut wait: impl FnMut(Duration) -> Result<(), E>,
    ) -> Result<(), E> {
        let give_up = Deadline::after(SETTLE_OUTPUT);
        while !self.process.output_complete()
            && self.process.exit().is_some()
            && !self.process.group_alive()
        {
            match give_up.slice() {
                Some(slice) => wait(slice)?,
                None => break,
            }
        }
        Ok(())
    }

    /// 18.6: waits until the session is no longer alive or `deadline`
    /// passes. Before each look at the child, `check` may end the wait
    /// (a recorded resource error); between the look and the wait, `poll`
    /// may (`context.check!`).
    pub fn wait_for_exit<E>(
        &self,
        deadline: Deadline,
        mut check: impl FnMut() -> Result<(), E>,
        mut poll: impl FnMut() -> Result<(), E>,
        mut wait: impl FnMut(Duration) -> Result<(), E>,
    ) -> Result<WaitEnd, E> {
        loop {
            check()?;
            if !self.process.alive() {
                return Ok(WaitEnd::Exited);
            }
            poll()?;
            let Some(slice) = deadline.slice() else {
                return Ok(WaitEnd::TimedOut);
            };
            wait(slice)?;
        }
    }

    /// 18.5: output for up to `deadline` (a passed one reads once), in
    /// passes with `wait` in between. Once output passed its bound the read
    /// ends with [`past_bound`](ReadOutput::past_bound) set and what it took
    /// so far: the caller terminates the group and raises the session's
    /// error carrying that output (with [`unread_output`](Self::unread_output)).
    pub fn read<E>(
        &self,
        deadline: Deadline,
        mut wait: impl FnMut(Duration) -> Result<(), E>,
    ) -> Result<ReadOutput, E> {
        self.process.try_reap();
        self.settle_output(&mut wait)?;
        let mut output = ReadOutput::default();
        output.both_closed = loop {
            let chunk = self.process.read_chunk(READ_PASS_BYTES);
            output.stdout.extend_from_slice(&chunk.stdout);
            output.stderr.extend_from_slice(&chunk.stderr);
            if self.process.overflowed() {
                output.past_bound = true;
                return Ok(output);
            }
            let both = chunk.stdout_closed && chunk.stderr_closed;
            // Pipes close a moment before the leader becomes reapable;
            // within the timeout, give the exit a chance so `eof` reflects it.
            match deadline.slice() {
                Some(_) if both && !self.process.alive() => break true,
                Some(slice) => wait(slice)?,
                None => break both,
            }
        };
        if output.stdout.is_empty() && output.stderr.is_empty() && !output.both_closed {
            // Callers poll `read(timeout: 0)` for a reply (a positive timeout
            // waits out its deadline, 18.5). Spinning without yielding keeps the
            // child off a busy CPU; an empty pass steps aside for a moment.
            super::yield_cpu();
        }
        Ok(output)
    }

    /// Everything captured that no `read` took yet (within the output
    /// bound), stdout then stderr. Once output passed its bound nothing more
    /// is pulled from the pipes: this is what the program wrote up to the
    /// bound, for the error that ends the session.
    pub fn unread_output(&self) -> (Vec<u8>, Vec<u8>) {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        loop {
            let chunk = self.process.read_chunk(READ_PASS_BYTES);
            if chunk.stdout.is_empty() && chunk.stderr.is_empty() {
                return (stdout, stderr);
            }
            stdout.extend_from_slice(&chunk.stdout);
            stderr.extend_from_slice(&chunk.stderr);
        }
    }
}

/// What one `read` collected.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReadOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Both pipes reached EOF; with the child gone, the chunk's `eof`.
    pub both_closed: bool,
    /// Output passed the session's bound during this read (18.5): the read
    /// ended there, holding what it took before.
    pub past_bound: bool,
}

/// The outcome of one write attempt.
enum Written {
    Bytes(usize),
    /// The pipe is full: wait for room on this stdin.
    Blocked(Arc<OwnedFd>),
}

/// Releases the write turn when dropped.
struct WriteTurn<'a>(&'a AtomicBool);

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// See [`Session::monitor_run`].
pub struct MonitorRun<'a>(&'a AtomicBool);

impl Drop for MonitorRun<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests;
