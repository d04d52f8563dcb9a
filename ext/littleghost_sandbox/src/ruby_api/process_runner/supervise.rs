//! A run's supervision (17.8-17.12): the core's loop
//! ([`RunningProcess::supervise`]) with waits that poll `context.check!`,
//! stream output to the caller's block and sample memory where the kernel
//! cannot bound it (L.3); the group ends through [`terminate_group`] on
//! timeout, a limit or any error.

use littleghost_sandbox_core::process::{
    deadline::Deadline, procfs::DefaultReader, supervision::RunEnd, RunningProcess,
};
use magnus::{block::Proc, prelude::*, Error, Ruby, Symbol, Value};

use super::check_context;
use super::waiter::{reap_leader, terminate_group, Waiter};
use crate::helpers::nogvl;

/// Whether the tree of `pid` uses more than `limit` bytes now (a failed
/// read counts as not over: the child may just have exited).
fn over_memory(ruby: &Ruby, pid: i32, reader: DefaultReader, limit: u64) -> bool {
    let sampled = nogvl::blocking(ruby, || reader.sample(pid as u32));
    matches!(sampled, Ok(Ok(bytes)) if bytes > limit)
}

/// Waits until the child finished (17.8) or `timeout` seconds passed,
/// polling `context` and streaming output every slice; terminates the group
/// on timeout (17.10), past a sampled memory limit (`sampler`: the reader
/// and the limit, read every
/// [`SAMPLE_PERIOD`](littleghost_sandbox_core::process::supervision::SAMPLE_PERIOD),
/// L.3), or on any error (17.11), which it returns.
pub(super) fn supervise(
    ruby: &Ruby,
    process: &RunningProcess,
    timeout: f64,
    context: Option<Value>,
    sampler: Option<(DefaultReader, u64)>,
    stream: &mut Option<Streamer>,
) -> Result<RunEnd, Error> {
    let mut waiter = Waiter::new(process);
    let ended = process.supervise(
        Deadline::after_secs(timeout),
        sampler.map(|(_, limit)| limit),
        |limit| sampler.is_some_and(|(reader, _)| over_memory(ruby, process.pid(), reader, limit)),
        |slice| {
            waiter.wait(ruby, slice)?;
            check_context(context)?;
            match stream {
                Some(stream) => stream.flush(ruby, process),
                None => Ok(()),
            }
        },
    );
    let end = match ended {
        Ok(end) => end,
        Err(error) => {
            // 17.11: clean up, then hand back the very same exception (or kill).
            let _ = terminate_group(ruby, &mut waiter, process);
            return Err(error);
        }
    };
    match end {
        // The sandbox's `close` already terminated the group (H.4).
        RunEnd::ClosedByOwner => reap_leader(ruby, &mut waiter, process),
        RunEnd::Finished { group_alive } => {
            if group_alive {
                terminate_group(ruby, &mut waiter, process)?;
            }
            if let Some(stream) = stream {
                stream.flush(ruby, process)?;
            }
        }
        RunEnd::MemorySampled(_) | RunEnd::TimedOut => {
            terminate_group(ruby, &mut waiter, process)?;
        }
    }
    Ok(end)
}

/// Yields fresh output to the caller's block.
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
