//! How one launch's requested limits are enforced on this host (SPEC §25
//! L.1-L.3): by its cgroup where the kernel can, else by the documented
//! fallbacks, else refused before anything is spawned.

use super::{Enforcement, ProcessLimits};

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
    /// limit; false for `ProcessSession.new`'s own per-process rlimit (18.x).
    pub cpu_fallback: bool,
}

impl Plan {
    /// How a program the kernel ended by signal reads when
    /// `cpu_seconds` fell back to the per-process `RLIMIT_CPU` (L.3). The
    /// kernel sends SIGXCPU at the soft limit and SIGKILL at the hard one
    /// (both are `cpu_seconds` here), so a program ended by either while the
    /// rlimit applies is the CPU limit, reported as the cgroup's kill is:
    /// the same message, error class and denial. Only the program itself is
    /// seen (a descendant killed by its own rlimit is not: the fallback is
    /// per process, as documented); any other end is not a limit kill.
    pub fn rlimit_kill(&self, signal: Option<i32>) -> Option<super::LimitExceeded> {
        rlimit_cpu_kill(
            self.cpu_fallback.then_some(self.rlimit_cpu_seconds?),
            signal,
        )
    }
}

/// [`Plan::rlimit_kill`] for a launch that applied `RLIMIT_CPU` of
/// `seconds` (a session keeps only that) and ended by `signal`.
pub fn rlimit_cpu_kill(seconds: Option<u64>, signal: Option<i32>) -> Option<super::LimitExceeded> {
    let seconds = seconds?;
    match signal? {
        libc::SIGXCPU | libc::SIGKILL => Some(super::LimitExceeded::Cpu { seconds }),
        _ => None,
    }
}

/// Decides how `requested` is enforced given what the host can
/// (`enforcement`); `Err(reason)` when `tasks` is asked for and cannot be
/// bounded at all (CapabilityError before spawning).
pub fn plan(requested: Requested, enforcement: &Enforcement) -> Result<Plan, String> {
    let mut plan = Plan::default();
    if let Some(tasks) = requested.tasks {
        match &enforcement.tasks {
            Ok(()) => plan.cgroup.tasks = Some(tasks),
            Err(reason) => return Err(format!("tasks cannot be limited here: {reason}")),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            own_rlimit.rlimit_kill(Some(libc::SIGKILL)),
            None,
            "18.x's own rlimit reads as a signal"
        );
        let cpu = Some(crate::limits::LimitExceeded::Cpu { seconds: 2 });
        assert_eq!(fallback.rlimit_kill(Some(libc::SIGKILL)), cpu);
        assert_eq!(fallback.rlimit_kill(Some(libc::SIGXCPU)), cpu);
        assert_eq!(fallback.rlimit_kill(Some(libc::SIGTERM)), None);
        assert_eq!(fallback.rlimit_kill(None), None);
        assert_eq!(Plan::default().rlimit_kill(Some(libc::SIGKILL)), None);
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
        let none = Enforcement::none("cannot write /sys/fs/cgroup/pids".into());
        let plan = plan(asked(), &none).unwrap();
        assert!(!plan.cgroup.wants_cgroup());
        assert_eq!(plan.sampled_memory_bytes, Some(64));
        assert_eq!(plan.rlimit_cpu_seconds, Some(1));
        assert_eq!(enforced_features(&none), ["process_cpu_limit"]);
    }

    #[test]
    fn tasks_without_a_pids_controller_are_refused_with_the_reason() {
        let none = Enforcement::none("cannot write /sys/fs/cgroup/pids".into());
        let refused = plan(
            Requested {
                tasks: Some(16),
                ..Requested::default()
            },
            &none,
        )
        .unwrap_err();
        assert!(refused.contains("/sys/fs/cgroup/pids"), "{refused}");
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
}
