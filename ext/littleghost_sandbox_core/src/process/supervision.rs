//! A run's supervision (17.8-17.12): when the wait for a child run to
//! completion ends, and why. The caller waits in `wait` (the Ruby binding:
//! without the GVL, polling `context.check!` and streaming output between
//! slices) and terminates the group as the end asks.

use std::time::{Duration, Instant};

use super::deadline::Deadline;
use super::RunningProcess;
use crate::denial::{Denial, Operation, Reason};

/// How often sampled memory is read (as 18.9).
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// Why [`RunningProcess::supervise`] stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The sandbox was closed (H.4): its `close` terminated the group; the
    /// leader is left to reap.
    ClosedByOwner,
    /// The leader was reaped and both pipes reached EOF (17.8). The call
    /// owns the whole group: members the leader left behind (a backgrounded
    /// daemon that closed its output, `group_alive`) are to be terminated
    /// before returning, so nothing outlives the call.
    Finished { group_alive: bool },
    /// Sampled memory (the L.3 fallback) passed this limit: terminate the group.
    MemorySampled(u64),
    /// The deadline passed (17.10): terminate the group.
    TimedOut,
}

impl RunningProcess {
    /// Waits with `wait` until the child finished, its owner terminated it,
    /// `deadline` passed or, every [`SAMPLE_PERIOD`], `over_memory(limit)`
    /// says the tree uses more than `sampled_memory`. An `Err` from `wait`
    /// is returned at once (17.11: the caller cleans up and hands it back).
    pub fn supervise<E>(
        &self,
        deadline: Deadline,
        sampled_memory: Option<u64>,
        mut over_memory: impl FnMut(u64) -> bool,
        mut wait: impl FnMut(Duration) -> Result<(), E>,
    ) -> Result<RunEnd, E> {
        let mut next_sample = Instant::now();
        loop {
            if self.terminated_by_owner() {
                return Ok(RunEnd::ClosedByOwner);
            }
            if self.finished() {
                let group_alive = self.group_alive();
                return Ok(RunEnd::Finished { group_alive });
            }
            let now = Instant::now();
            if let Some(limit) = sampled_memory.filter(|_| now >= next_sample) {
                next_sample = now + SAMPLE_PERIOD;
                if over_memory(limit) {
                    return Ok(RunEnd::MemorySampled(limit));
                }
            }
            let Some(slice) = deadline.slice() else {
                return Ok(RunEnd::TimedOut);
            };
            wait(slice)?;
        }
    }
}

impl Denial {
    /// The denial of a run of `program` ended at its output bound
    /// (`kill_on_output_limit`); a timeout is not one (it refuses nothing
    /// the program asked).
    pub fn output_kill(program: &str, max_output_bytes: u64) -> Denial {
        let exceeded = crate::limits::LimitExceeded::Output {
            bytes: max_output_bytes,
        };
        Denial::limit_kill(program, &exceeded)
    }

    /// The denial of a run whose tree asked for more processes than `tasks`
    /// (the kernel refused them with EAGAIN; nothing was killed).
    pub fn tasks_refused(program: &str, tasks: u64) -> Denial {
        let message = format!("Program task limit of {tasks} refused a new process");
        Denial::new(Operation::Execute, program, Reason::TaskLimit, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{CaptureMode, Launch, Owner};

    fn start(argv: &[&str], owner: Option<&Owner>) -> RunningProcess {
        let launch = Launch {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
            ..Launch::default()
        };
        let mode = CaptureMode::PerStream {
            limit: 100,
            stop_at_limit: false,
        };
        RunningProcess::start_owned(&launch, mode, false, owner).unwrap()
    }

    fn supervise(process: &RunningProcess, seconds: f64, memory: Option<u64>) -> RunEnd {
        let wait = |slice| -> Result<(), ()> {
            process.notifier().wait(slice, None);
            Ok(())
        };
        let deadline = Deadline::after_secs(seconds);
        process.supervise(deadline, memory, |_| true, wait).unwrap()
    }

    #[test]
    fn a_run_finishes_or_times_out() {
        let done = start(&["sh", "-c", "exit 3"], None);
        let finished = RunEnd::Finished { group_alive: false };
        assert_eq!(supervise(&done, 10.0, None), finished);
        assert_eq!(done.exit().and_then(|exit| exit.code()), Some(3));
        let slow = start(&["sleep", "5"], None);
        assert_eq!(supervise(&slow, 0.05, None), RunEnd::TimedOut);
        slow.signal_group(rustix::process::Signal::KILL);
    }

    #[test]
    fn sampled_memory_and_the_owner_end_a_run() {
        let owner = Owner::new();
        let slow = start(&["sleep", "5"], Some(&owner));
        assert_eq!(supervise(&slow, 10.0, Some(64)), RunEnd::MemorySampled(64));
        owner.terminate_all();
        assert_eq!(supervise(&slow, 10.0, None), RunEnd::ClosedByOwner);
    }

    #[test]
    fn an_error_from_the_wait_ends_supervision() {
        let slow = start(&["sleep", "5"], None);
        let ended = slow.supervise(Deadline::never(), None, |_| false, |_| Err("interrupt"));
        assert_eq!(ended, Err("interrupt"));
        slow.signal_group(rustix::process::Signal::KILL);
    }

    #[test]
    fn an_output_kill_is_a_limit_denial() {
        let denial = Denial::output_kill("cat", 10);
        assert_eq!(denial.operation, Operation::Execute);
        assert_eq!(denial.target, "cat");
        assert_eq!(denial.reason, Reason::OutputLimit);
        assert_eq!(denial.message, "Program output exceeded 10 bytes");
    }
}
