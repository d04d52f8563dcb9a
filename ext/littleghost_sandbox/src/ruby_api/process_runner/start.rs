//! Starting a child without losing an interrupt. The spawn
//! runs on the core's spawner thread; the calling thread waits for its answer
//! without the GVL, in slices an interrupt (Thread#raise, Thread#kill,
//! Timeout, Ctrl-C) ends at once through [`Wake`]. Every phase honours it:
//!
//! - before the spawn is queued: the pending interrupt is raised, nothing starts;
//! - while the spawn waits in the queue: it is withdrawn, nothing starts;
//! - while the spawner runs it, or when it answered just as the interrupt
//!   came: the child is started, then terminated (17.12, its whole tree)
//!   before the interrupt is handed back;
//! - once started, [`super::supervise`] and the session's waits take over.
//!
//! The interrupt comes back as the caller's `Err`, the very same exception
//! object (or the Thread#kill jump), for the method to return.

use std::time::Duration;

use littleghost_sandbox_core::limits::ProcessLimits;
use littleghost_sandbox_core::process::{
    self as core_process, CaptureMode, Launch, Owner, RunningProcess, SpawnError, Starting,
};
use magnus::{Error, Ruby};

use super::waiter::{terminate_group, Waiter};
use crate::helpers::nogvl::{self, Wake};

/// Starts `launch` as [`RunningProcess::start_limited`] does, interruptibly.
/// `Ok(Err)` is a failed start (for the caller to report); `Err` is an
/// interrupt, returned after whatever was started is gone.
pub fn start_interruptibly(
    ruby: &Ruby,
    launch: &Launch,
    limits: &ProcessLimits,
    mode: CaptureMode,
    keep_stdin: bool,
    owner: Option<&Owner>,
) -> Result<Result<RunningProcess, SpawnError>, Error> {
    // Before the spawn: an interrupt already pending wins, nothing starts.
    nogvl::check_interrupts(ruby)?;
    let starting = match Starting::submit(launch, limits, mode, keep_stdin, owner) {
        Ok(starting) => starting,
        Err(error) => return Ok(Err(error)),
    };
    let wake = Wake::new(starting.notifier().raw_write_fd());
    loop {
        if let Some(started) = starting.try_finish() {
            // The answer may have come just as an interrupt was requested.
            return match nogvl::check_interrupts(ruby) {
                Ok(()) => Ok(started),
                Err(interrupt) => Err(undo(ruby, started, interrupt)),
            };
        }
        wait_slice(ruby, &starting, &wake)?;
        if let Err(interrupt) = nogvl::check_interrupts(ruby) {
            if starting.cancel() {
                // Still queued: withdrawn, nothing was started.
                return Err(interrupt);
            }
            // The spawner is running it: the spawn is short and bounded, so
            // wait for it (other interrupts stay pending), then undo it.
            let started = finish_quietly(ruby, &starting);
            return Err(undo(ruby, started, interrupt));
        }
    }
}

/// Waits without the GVL for the spawner's answer, leaving further
/// interrupts pending.
fn finish_quietly(ruby: &Ruby, starting: &Starting) -> Result<RunningProcess, SpawnError> {
    let wake = Wake::new(starting.notifier().raw_write_fd());
    loop {
        if let Some(started) = starting.try_finish() {
            return started;
        }
        match wait_slice(ruby, starting, &wake) {
            Ok(Some(())) => {}
            // Another interrupt is pending, so Ruby keeps the GVL: do not spin.
            Ok(None) | Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// Waits one slice without the GVL for the spawner's answer; `Ok(None)`
/// when an interrupt was pending (see [`nogvl::without_gvl`]).
fn wait_slice(ruby: &Ruby, starting: &Starting, wake: &Wake) -> Result<Option<()>, Error> {
    wake.reset();
    let notifier = starting.notifier();
    let slice = core_process::POLL_INTERVAL;
    nogvl::without_gvl(ruby, || notifier.wait(slice, None), wake)
}

/// Terminates a child started for a caller that was interrupted (17.12: its
/// group and descendants, TERM then KILL, the leader reaped) and returns the
/// interrupt to hand back. A further interrupt during the grace cuts it short.
fn undo(ruby: &Ruby, started: Result<RunningProcess, SpawnError>, interrupt: Error) -> Error {
    if let Ok(process) = started {
        let mut waiter = Waiter::new(&process);
        let _ = terminate_group(ruby, &mut waiter, &process);
        // What is left in its cgroup (a daemon that left the tree) goes too.
        process.release_tree();
    }
    interrupt
}
