//! A run's supervision loop (17.8-17.12): waits for the child, polls
//! `context.check!`, streams output to the caller's block, samples memory
//! where the kernel cannot bound it (L.3), and ends the group through
//! [`terminate_group`] on timeout, a limit or any error.

use std::time::{Duration, Instant};

use littleghost_sandbox_core::process::{
    deadline::Deadline, procfs::DefaultReader, Exit, RunningProcess,
};
use magnus::{block::Proc, prelude::*, Error, Ruby, Symbol, Value};

use super::check_context;
use super::waiter::{reap_leader, terminate_group, Waiter};
use crate::helpers::nogvl;
use crate::ruby_api::errors::tool_error;

/// Why [`supervise`] gave up on the child.
pub(super) enum Supervised {
    /// The deadline passed; the group was terminated and the leader reaped.
    TimedOut,
    /// An exception (interrupt, `check!`, the block, a closed sandbox).
    Raised(Error),
    /// The sampled memory (L.3 fallback) passed this limit; the group was
    /// terminated.
    MemorySampled(u64),
}

/// What [`supervise`] watches besides the child's exit.
pub(super) struct Supervision {
    pub(super) timeout: f64,
    pub(super) context: Option<Value>,
    /// The reader and limit of sampled memory (L.3), every [`SAMPLE_PERIOD`].
    pub(super) sampler: Option<(DefaultReader, u64)>,
}

/// How often sampled memory is read (as 18.9).
const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// Whether the tree of `pid` uses more than `limit` bytes now (a failed
/// read counts as not over: the child may just have exited).
fn over_memory(ruby: &Ruby, pid: i32, (reader, limit): (DefaultReader, u64)) -> bool {
    let sampled = nogvl::blocking(ruby, || reader.sample(pid as u32));
    matches!(sampled, Ok(Ok(bytes)) if bytes > limit)
}

impl From<Error> for Supervised {
    fn from(error: Error) -> Self {
        Supervised::Raised(error)
    }
}

/// Waits until the child finished (17.8), polling `context` and streaming
/// output every slice; terminates the group on timeout (17.10) or on any
/// error (17.11).
pub(super) fn supervise(
    ruby: &Ruby,
    process: &RunningProcess,
    Supervision {
        timeout,
        context,
        sampler,
    }: Supervision,
    stream: &mut Option<Streamer>,
) -> Result<Exit, Supervised> {
    let started = Instant::now();
    let mut next_sample = started;
    let deadline = Deadline::after_secs(timeout);
    let mut waiter = Waiter::new(process);
    loop {
        if process.terminated_by_owner() {
            // The sandbox was closed (H.4): its `close` terminated the group.
            reap_leader(ruby, &mut waiter, process);
            let closed = crate::ruby_api::ownership::CLOSED_MESSAGE;
            return Err(tool_error(ruby, closed).into());
        }
        if process.finished() {
            // The call owns the whole group: members a finished leader left
            // behind (a backgrounded daemon that closed its output) are
            // terminated before returning, so nothing outlives the call.
            if process.group_alive() {
                terminate_group(ruby, &mut waiter, process)?;
            }
            if let Some(stream) = stream {
                stream.flush(ruby, process)?;
            }
            return Ok(process.exit().unwrap_or(Exit::Unknown));
        }
        let now = Instant::now();
        if let Some(sampler) = sampler.filter(|_| now >= next_sample) {
            next_sample = now + SAMPLE_PERIOD;
            if over_memory(ruby, process.pid(), sampler) {
                terminate_group(ruby, &mut waiter, process)?;
                return Err(Supervised::MemorySampled(sampler.1));
            }
        }
        let Some(slice) = deadline.slice() else {
            terminate_group(ruby, &mut waiter, process)?;
            return Err(Supervised::TimedOut);
        };
        let waited = waiter
            .wait(ruby, slice)
            .and_then(|()| check_context(context))
            .and_then(|()| match stream {
                Some(stream) => stream.flush(ruby, process),
                None => Ok(()),
            });
        if let Err(error) = waited {
            // 17.11: clean up, then hand back the very same exception (or kill).
            let _ = terminate_group(ruby, &mut waiter, process);
            return Err(error.into());
        }
    }
}

/// Yields fresh output to the caller's block (issue 12 item 11).
pub(super) struct Streamer {
    block: Proc,
    cursor: [usize; 2],
    names: [Symbol; 2],
}

impl Streamer {
    pub(super) fn new(ruby: &Ruby, block: Proc) -> Self {
        Streamer {
            block,
            cursor: [0, 0],
            names: [ruby.to_symbol("stdout"), ruby.to_symbol("stderr")],
        }
    }

    /// Yields what arrived since the last call, stdout first.
    fn flush(&mut self, ruby: &Ruby, process: &RunningProcess) -> Result<(), Error> {
        let fresh = process.output_since(&mut self.cursor);
        for (name, bytes) in self.names.into_iter().zip(fresh) {
            if !bytes.is_empty() {
                let chunk = ruby.str_from_slice(&bytes);
                chunk.freeze();
                let _: Value = self.block.call((name, chunk))?;
            }
        }
        Ok(())
    }
}
