//! How a run or a session ended other than by its program's own exit (its
//! sandbox closed, H.4; its timeout passed, 17.10; a limit ended it, L.2),
//! as a typed value with its wording and its denial, and what the ended
//! program wrote ([`Outcome`]). One mechanism for the one-shot run and the
//! session: both decide here what error ends them, and the caller only
//! words it as its language raises errors.

use super::arguments;
use super::running::{Exit, RunningProcess};
use super::supervision::RunEnd;
use crate::denial::Denial;
use crate::limits::{plan::Plan, LimitExceeded};

/// The message a child's next operation raises (ToolError) once its
/// sandbox's `close` terminated it (H.4).
pub const CLOSED_BY_OWNER: &str = "Program was terminated because the sandbox was closed";

/// Why a run or a session ended other than by its program's own exit.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The sandbox's `close` terminated the program (H.4).
    ClosedByOwner,
    /// The timeout of this many seconds passed and the tree was terminated (17.10).
    TimedOut(f64),
    /// A limit ended the tree (L.2): memory, CPU time or output.
    Limit(LimitExceeded),
}

impl Ending {
    /// The message users see.
    pub fn message(&self) -> String {
        match self {
            Ending::ClosedByOwner => CLOSED_BY_OWNER.into(),
            Ending::TimedOut(seconds) => arguments::run_timed_out(*seconds),
            Ending::Limit(exceeded) => exceeded.message(),
        }
    }

    /// The denial the end is for a run of `program`: a limit's kill is one;
    /// a timeout refuses nothing the program asked, and a closed sandbox
    /// was its owner's doing.
    pub fn denial(&self, program: &str) -> Option<Denial> {
        match self {
            Ending::Limit(exceeded) => Some(Denial::limit_kill(program, exceeded)),
            Ending::ClosedByOwner | Ending::TimedOut(_) => None,
        }
    }

    /// Whether output the program wrote before it ended may still be on
    /// its way: past an output bound nothing more is pulled from the pipes.
    pub fn output_pending(&self) -> bool {
        !matches!(self, Ending::Limit(LimitExceeded::Output { .. }))
    }
}

/// What an ended program wrote and how it ended: what a run returns, and
/// what the error that ended a run or a session carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    /// None while the leader is not reaped.
    pub exit: Option<Exit>,
}

impl Outcome {
    /// The exit status, or None if it did not exit normally.
    pub fn code(&self) -> Option<i32> {
        self.exit.and_then(Exit::code)
    }

    /// The signal that killed the leader, or None.
    pub fn signal(&self) -> Option<i32> {
        self.exit.and_then(Exit::signal)
    }
}

impl RunningProcess {
    /// What a run wrote (each stream within its bound, truncation marked)
    /// and how it ended.
    pub fn outcome(&self) -> Outcome {
        let (stdout, stderr) = self.take_output();
        Outcome {
            stdout,
            stderr,
            exit: self.exit(),
        }
    }

    /// How a run supervised under `timeout` seconds and `limits` ended;
    /// None for its own exit. A limit the kernel enforced shows once the
    /// run finished, as does the per-process `RLIMIT_CPU` standing in for
    /// the tree's CPU time (L.3), which kills by signal.
    pub fn ending(&self, end: RunEnd, timeout: f64, limits: &Plan) -> Option<Ending> {
        match end {
            RunEnd::ClosedByOwner => Some(Ending::ClosedByOwner),
            RunEnd::TimedOut => Some(Ending::TimedOut(timeout)),
            RunEnd::MemorySampled(bytes) => Some(Ending::Limit(LimitExceeded::Memory { bytes })),
            RunEnd::Finished { .. } => {
                let end = self.exit().map(Exit::program_end).unwrap_or_default();
                let exceeded = self.limit_exceeded().or_else(|| limits.rlimit_kill(end));
                exceeded.map(Ending::Limit)
            }
        }
    }

    /// The denials a run of `program` that ended as `ending` is: its limit
    /// kill; or, ended by its own exit, its output bound (`output_kill`,
    /// the bound when the run stops there) and a process the kernel refused
    /// at `tasks` (nothing was killed: the program's own exit stands).
    pub fn run_denials(
        &self,
        ending: Option<&Ending>,
        program: &str,
        output_kill: Option<u64>,
    ) -> Vec<Denial> {
        if let Some(ending) = ending {
            return ending.denial(program).into_iter().collect();
        }
        let output = output_kill.filter(|_| self.overflowed());
        let output = output.map(|bytes| Denial::output_kill(program, bytes));
        let tasks = self.tasks_refused();
        let tasks = tasks.map(|tasks| Denial::tasks_refused(program, tasks));
        output.into_iter().chain(tasks).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::denial::Reason;
    use crate::process::{CaptureMode, Launch};

    fn run(script: &str, limit: usize) -> RunningProcess {
        let launch = Launch {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
            ..Launch::default()
        };
        let mode = CaptureMode::PerStream {
            limit,
            stop_at_limit: true,
        };
        let process = RunningProcess::start(&launch, mode, false).unwrap();
        while !process.finished() {
            process
                .notifier()
                .wait(std::time::Duration::from_millis(10), None);
        }
        process
    }

    #[test]
    fn each_ending_has_its_wording_and_only_a_limit_is_a_denial() {
        assert_eq!(Ending::ClosedByOwner.message(), CLOSED_BY_OWNER);
        assert_eq!(
            Ending::TimedOut(1.5).message(),
            "Command timed out after 1.5 seconds"
        );
        let memory = Ending::Limit(LimitExceeded::Memory { bytes: 64 });
        assert_eq!(memory.message(), "Program memory exceeded 64 bytes");
        let denial = memory.denial("app").unwrap();
        assert_eq!(
            (denial.reason, denial.target.as_str()),
            (Reason::MemoryLimit, "app")
        );
        assert_eq!(Ending::TimedOut(1.0).denial("app"), None);
        assert_eq!(Ending::ClosedByOwner.denial("app"), None);
    }

    #[test]
    fn only_past_an_output_bound_is_no_output_pending() {
        assert!(Ending::TimedOut(1.0).output_pending());
        assert!(Ending::Limit(LimitExceeded::Cpu { seconds: 1 }).output_pending());
        assert!(!Ending::Limit(LimitExceeded::Output { bytes: 8 }).output_pending());
    }

    #[test]
    fn a_run_ends_as_its_supervision_saw_it_or_by_its_own_exit() {
        let process = run("echo out; echo err >&2; exit 3", 100);
        let plan = Plan::default();
        let finished = RunEnd::Finished { group_alive: false };
        assert_eq!(process.ending(finished, 2.0, &plan), None);
        assert_eq!(
            process.ending(RunEnd::TimedOut, 2.0, &plan),
            Some(Ending::TimedOut(2.0))
        );
        assert_eq!(
            process.ending(RunEnd::MemorySampled(64), 2.0, &plan),
            Some(Ending::Limit(LimitExceeded::Memory { bytes: 64 }))
        );
        assert_eq!(
            process.ending(RunEnd::ClosedByOwner, 2.0, &plan),
            Some(Ending::ClosedByOwner)
        );
        let outcome = process.outcome();
        assert_eq!(
            (outcome.stdout.as_str(), outcome.stderr.as_str()),
            ("out\n", "err\n")
        );
        assert_eq!((outcome.code(), outcome.signal()), (Some(3), None));
    }

    #[test]
    fn the_cpu_rlimit_standing_in_for_the_tree_reads_as_the_cpu_limit() {
        let process = run("kill -XCPU $$", 100);
        let plan = Plan {
            rlimit_cpu_seconds: Some(2),
            cpu_fallback: true,
            ..Plan::default()
        };
        let finished = RunEnd::Finished { group_alive: false };
        assert_eq!(
            process.ending(finished, 5.0, &plan),
            Some(Ending::Limit(LimitExceeded::Cpu { seconds: 2 }))
        );
        assert_eq!(process.ending(finished, 5.0, &Plan::default()), None);
    }

    #[test]
    fn a_run_past_its_bound_is_a_denial_only_when_it_stops_there() {
        let process = run("printf 0123456789", 4);
        // A run that drops the excess (no bound given here) refuses nothing.
        assert!(process.run_denials(None, "app", None).is_empty());
        let denials = process.run_denials(None, "app", Some(4));
        assert_eq!(denials.len(), 1);
        assert_eq!(denials[0].reason, Reason::OutputLimit);
        assert_eq!(denials[0].message, "Program output exceeded 4 bytes");
        assert!(run("true", 4).run_denials(None, "app", Some(4)).is_empty());
        let timed_out = Some(&Ending::TimedOut(1.0));
        assert!(process.run_denials(timed_out, "app", Some(4)).is_empty());
        let cpu = Ending::Limit(LimitExceeded::Cpu { seconds: 1 });
        let denials = process.run_denials(Some(&cpu), "app", Some(4));
        assert_eq!(denials.len(), 1);
        assert_eq!(denials[0].reason, Reason::CpuLimit);
    }
}
