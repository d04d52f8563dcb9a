//! How one launch's requested limits are enforced on this host (SPEC §25
//! L.1-L.3): by its cgroup where the kernel can, else by the documented
//! fallbacks, else refused before anything is spawned.

use std::path::PathBuf;

use super::{Enforcement, Error, ProcessLimits};

/// Limits a caller asked for (per-call values over the backend's defaults),
/// each a positive count; `None` means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requested {
    pub memory_bytes: Option<u64>,
    pub tasks: Option<u64>,
    pub cpu_seconds: Option<u64>,
    /// Own the whole tree when the host allows it (Unrestricted): nothing a
    /// launch started survives it. Silently skipped where it cannot hold;
    /// the capabilities then do not list `process_tree_ownership`.
    pub own_tree_if_possible: bool,
}

impl Requested {
    /// `self`'s limits, each replaced by `over`'s where `over` has one.
    pub fn overridden_by(self, over: Requested) -> Requested {
        Requested {
            memory_bytes: over.memory_bytes.or(self.memory_bytes),
            tasks: over.tasks.or(self.tasks),
            cpu_seconds: over.cpu_seconds.or(self.cpu_seconds),
            own_tree_if_possible: self.own_tree_if_possible || over.own_tree_if_possible,
        }
    }
}

/// How a launch is limited: `cgroup` goes to the core spawn; the rest are
/// the L.3 fallbacks the caller applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Enforced by the launch's cgroup.
    pub cgroup: ProcessLimits,
    /// Memory sampled over /proc every 100 ms (not kernel-enforced).
    pub sampled_memory_bytes: Option<u64>,
    /// The per-process `RLIMIT_CPU` (not whole-tree).
    pub rlimit_cpu_seconds: Option<u64>,
    /// `rlimit_cpu_seconds` stands in for a whole-tree `cpu_seconds` the host
    /// cannot bound (L.3, set by [`plan`]), so its kill reads as the CPU
    /// limit; false for `ProcessSession.new`'s own per-process rlimit.
    pub cpu_fallback: bool,
}

impl Plan {
    /// The `RLIMIT_CPU` a launch under this plan applies: the L.3 fallback
    /// is [`CpuRlimit::signalled`] so its kill can be told apart; a
    /// session's own `cpu_seconds` is [`CpuRlimit::exact`].
    pub fn cpu_rlimit(&self) -> Option<CpuRlimit> {
        let seconds = self.rlimit_cpu_seconds?;
        Some(match self.cpu_fallback {
            true => CpuRlimit::signalled(seconds),
            false => CpuRlimit::exact(seconds),
        })
    }

    /// How a program's end reads when `cpu_seconds` fell back to the
    /// per-process `RLIMIT_CPU` (L.3): ended by SIGXCPU (the soft limit,
    /// `cpu_seconds`) or SIGKILL (the hard limit, one second later, for a
    /// program that caught SIGXCPU), or exited with 128+SIGXCPU, the status
    /// a shell or Bubblewrap reports for a command SIGXCPU ended. Such an end
    /// is the CPU limit, reported as the cgroup's kill is: the same message,
    /// error class and denial. A descendant killed by its own rlimit shows
    /// only where it is what the program reports (the fallback is per
    /// process, as documented); any other end is not a limit kill. An exit
    /// of 137 (128+SIGKILL) is not taken for one: a SIGKILL has other causes.
    pub fn rlimit_kill(&self, end: ProgramEnd) -> Option<super::LimitExceeded> {
        rlimit_cpu_kill(self.cpu_fallback.then_some(self.rlimit_cpu_seconds?), end)
    }
}

/// `RLIMIT_CPU` for a launched program: the kernel sends SIGXCPU at `soft`
/// seconds of CPU time and SIGKILL at `hard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuRlimit {
    pub soft: u64,
    pub hard: u64,
}

impl CpuRlimit {
    /// `ProcessSession.new(cpu_seconds:)`'s documented limit: soft and hard
    /// both `seconds`, so the kernel's SIGKILL ends the program there.
    pub fn exact(seconds: u64) -> CpuRlimit {
        CpuRlimit {
            soft: seconds,
            hard: seconds,
        }
    }

    /// The L.3 fallback for `cpu_seconds`: SIGXCPU at `seconds`, whose 128+N
    /// status survives a shell or Bubblewrap in between (a SIGKILL's 137 is
    /// ambiguous), and SIGKILL one second later for a program that catches it.
    pub fn signalled(seconds: u64) -> CpuRlimit {
        CpuRlimit {
            soft: seconds,
            hard: seconds.saturating_add(1),
        }
    }
}

/// How a program ended, as its wait status tells: the signal that ended it,
/// or the code it exited with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramEnd {
    pub signal: Option<i32>,
    pub code: Option<i32>,
}

/// [`Plan::rlimit_kill`] for a launch that applied `RLIMIT_CPU` of
/// `seconds` (a session keeps only that) and ended as `end` says.
pub fn rlimit_cpu_kill(seconds: Option<u64>, end: ProgramEnd) -> Option<super::LimitExceeded> {
    let seconds = seconds?;
    let by_signal = matches!(end.signal, Some(libc::SIGXCPU | libc::SIGKILL));
    let reported_sigxcpu = end.code == Some(128 + libc::SIGXCPU);
    (by_signal || reported_sigxcpu).then_some(super::LimitExceeded::Cpu { seconds })
}

/// What a caller can do when `tasks` cannot be enforced (docs/spec.md L.2:
/// refused, never ignored).
pub const TASKS_FIX: &str =
    "To limit tasks, give the backend `cgroup:` a delegated cgroup v2 directory \
(writable by this user), or run under `systemd-run --user --scope -p Delegate=yes`; \
or drop `tasks` from process_limits:";

/// Decides how `requested` is enforced given what the host can
/// (`enforcement`); [`Error::TasksUnenforceable`] when `tasks` is asked for
/// and cannot be bounded at all (refused before spawning).
pub fn plan(requested: Requested, enforcement: &Enforcement) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    if let Some(tasks) = requested.tasks {
        match &enforcement.tasks {
            Ok(()) => plan.cgroup.tasks = Some(tasks),
            Err(reason) => {
                return Err(Error::TasksUnenforceable {
                    reason: reason.clone(),
                })
            }
        }
    }
    if let Some(bytes) = requested.memory_bytes {
        match enforcement.memory {
            Ok(()) => plan.cgroup.memory_bytes = Some(bytes),
            Err(_) => plan.sampled_memory_bytes = Some(bytes),
        }
    }
    if let Some(seconds) = requested.cpu_seconds {
        match enforcement.cpu {
            Ok(()) => plan.cgroup.cpu_seconds = Some(seconds),
            Err(_) => {
                plan.rlimit_cpu_seconds = Some(seconds);
                plan.cpu_fallback = true;
            }
        }
    }
    plan.cgroup.own_tree = requested.own_tree_if_possible && enforcement.tree.is_ok();
    Ok(plan)
}

/// The capability feature saying how `cpu_seconds` holds when no launch
/// cgroup bounds the tree: the per-process `RLIMIT_CPU` of L.3 (each process
/// of the tree may use that much).
pub const PROCESS_CPU_LIMIT: &str = "process_cpu_limit";

/// The capability features of the launch limits here, in this order:
/// `:memory_limit` and `:task_limit` when the kernel enforces them for the
/// whole tree, then how `cpu_seconds` holds: `:cpu_limit` when
/// the tree's CPU time is bounded (a launch cgroup), else
/// [`PROCESS_CPU_LIMIT`], so that a caller can tell a whole-tree bound from
/// a per-process one without trying.
pub fn enforced_features(enforcement: &Enforcement) -> Vec<&'static str> {
    let mut features = Vec::new();
    if enforcement.memory.is_ok() {
        features.push("memory_limit");
    }
    if enforcement.tasks.is_ok() {
        features.push("task_limit");
    }
    features.push(match enforcement.cpu {
        Ok(()) => "cpu_limit",
        Err(_) => PROCESS_CPU_LIMIT,
    });
    features
}

/// What a sandbox's backend options say about every launch: the
/// `process_limits:` defaults and the `cgroup:` directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchDefaults {
    pub limits: Requested,
    /// A delegated cgroup v2 directory (the `cgroup:` option).
    pub cgroup_dir: Option<PathBuf>,
}

impl LaunchDefaults {
    /// One call's limits: its keywords over these defaults; with
    /// `own_tree`, the launch owns its tree wherever the host allows.
    pub fn for_call(&self, call: Requested, own_tree: bool) -> Requested {
        let mut requested = self.limits.overridden_by(call);
        requested.own_tree_if_possible = own_tree;
        requested
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Unavailable;

    fn all_enforced() -> Enforcement {
        Enforcement {
            memory: Ok(()),
            tasks: Ok(()),
            cpu: Ok(()),
            tree: Ok(()),
        }
    }

    fn asked() -> Requested {
        Requested {
            memory_bytes: Some(64),
            tasks: None,
            cpu_seconds: Some(1),
            own_tree_if_possible: true,
        }
    }

    #[test]
    fn an_rlimit_cpu_kill_is_the_cpu_limit() {
        let fallback = Plan {
            rlimit_cpu_seconds: Some(2),
            cpu_fallback: true,
            ..Plan::default()
        };
        let own_rlimit = Plan {
            cpu_fallback: false,
            ..fallback.clone()
        };
        let signal = |signal| ProgramEnd {
            signal: Some(signal),
            code: None,
        };
        let code = |code| ProgramEnd {
            signal: None,
            code: Some(code),
        };
        assert_eq!(
            own_rlimit.rlimit_kill(signal(libc::SIGKILL)),
            None,
            "a session's own rlimit reads as a signal"
        );
        let cpu = Some(crate::limits::LimitExceeded::Cpu { seconds: 2 });
        assert_eq!(fallback.rlimit_kill(signal(libc::SIGKILL)), cpu);
        assert_eq!(fallback.rlimit_kill(signal(libc::SIGXCPU)), cpu);
        assert_eq!(fallback.rlimit_kill(signal(libc::SIGTERM)), None);
        assert_eq!(fallback.rlimit_kill(ProgramEnd::default()), None);
        assert_eq!(Plan::default().rlimit_kill(signal(libc::SIGKILL)), None);
        // What a shell or Bubblewrap reports for a command SIGXCPU ended.
        assert_eq!(fallback.rlimit_kill(code(128 + libc::SIGXCPU)), cpu);
        assert_eq!(own_rlimit.rlimit_kill(code(128 + libc::SIGXCPU)), None);
        // 128+SIGKILL has other causes (an OOM kill); 0 and 1 are exits.
        for other in [0, 1, 128 + libc::SIGKILL, 128 + libc::SIGTERM] {
            assert_eq!(fallback.rlimit_kill(code(other)), None, "exit {other}");
        }
    }

    #[test]
    fn enforceable_limits_go_to_the_cgroup() {
        let plan = plan(
            Requested {
                tasks: Some(16),
                ..asked()
            },
            &all_enforced(),
        )
        .unwrap();
        assert_eq!(plan.cgroup.memory_bytes, Some(64));
        assert_eq!(plan.cgroup.tasks, Some(16));
        assert_eq!(plan.cgroup.cpu_seconds, Some(1));
        assert!(plan.cgroup.own_tree);
        assert_eq!(plan.sampled_memory_bytes, None);
        assert_eq!(plan.rlimit_cpu_seconds, None);
        assert_eq!(
            enforced_features(&all_enforced()),
            ["memory_limit", "task_limit", "cpu_limit"]
        );
    }

    #[test]
    fn without_a_cgroup_memory_is_sampled_and_cpu_per_process() {
        let none = Enforcement::none(Unavailable::NoV1Hierarchy { controller: "pids" });
        let plan = plan(asked(), &none).unwrap();
        assert!(!plan.cgroup.wants_cgroup());
        assert_eq!(plan.sampled_memory_bytes, Some(64));
        assert_eq!(plan.rlimit_cpu_seconds, Some(1));
        assert_eq!(enforced_features(&none), ["process_cpu_limit"]);
    }

    #[test]
    fn tasks_without_a_pids_controller_are_refused_with_the_reason() {
        let none = Enforcement::none(Unavailable::NoV1Hierarchy { controller: "pids" });
        let refused = plan(
            Requested {
                tasks: Some(16),
                ..Requested::default()
            },
            &none,
        )
        .unwrap_err();
        assert_eq!(
            refused,
            Error::TasksUnenforceable {
                reason: Unavailable::NoV1Hierarchy { controller: "pids" }
            }
        );
        assert!(refused.to_string().starts_with(
            "tasks cannot be limited here: no cgroup v1 pids hierarchy is mounted. To limit tasks"
        ));
    }

    #[test]
    fn per_call_values_override_defaults() {
        let defaults = Requested {
            memory_bytes: Some(1),
            tasks: Some(2),
            ..Requested::default()
        };
        let call = Requested {
            memory_bytes: Some(10),
            ..Requested::default()
        };
        let merged = defaults.overridden_by(call);
        assert_eq!(merged.memory_bytes, Some(10));
        assert_eq!(merged.tasks, Some(2));
        assert_eq!(merged.cpu_seconds, None);
    }

    #[test]
    fn a_call_overrides_the_defaults_per_limit() {
        let stored = LaunchDefaults {
            limits: Requested {
                memory_bytes: Some(1),
                tasks: Some(2),
                ..Requested::default()
            },
            cgroup_dir: None,
        };
        let call = Requested {
            tasks: Some(9),
            ..Requested::default()
        };
        let merged = stored.for_call(call, true);
        assert_eq!(merged.memory_bytes, Some(1));
        assert_eq!(merged.tasks, Some(9));
        assert!(merged.own_tree_if_possible);
    }
}
