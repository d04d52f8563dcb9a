//! Kernel-enforced limits for a launch's whole process tree (SPEC §25 L.1-L.3).
//!
//! Every launch that asks for [`ProcessLimits`] (or to own its tree) runs in a
//! cgroup made for it ([`launch::LaunchCgroup`]) and removed after it:
//!
//! - **memory** (`memory_bytes`): v2 `memory.max` with `memory.swap.max` 0,
//!   v1 `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes` where it
//!   exists. The kernel charges anonymous memory, tmpfs pages and page cache
//!   the tree causes, and OOM-kills inside the cgroup; the launch then
//!   reports [`LimitExceeded::Memory`] ("Program memory exceeded N bytes").
//! - **tasks** (`tasks`): `pids.max`; `fork`/`clone` fail with EAGAIN inside
//!   the tree and nothing is killed.
//! - **CPU** (`cpu_seconds`): CPU time of the whole tree, read from v1
//!   `cpuacct.usage` or v2 `cpu.stat` by a watcher task on the shared runtime
//!   ([`watch::watch_cpu`]), which terminates the tree through the one
//!   termination protocol and records [`LimitExceeded::Cpu`] ("Program CPU
//!   time exceeded N seconds").
//! - **ownership**: when the launch ends, everything left in the cgroup is
//!   killed (`cgroup.kill`, or freeze-then-KILL on v1) and the cgroup removed,
//!   so a `setsid` daemon dies with its launch.
//!
//! The child is inside the cgroup before it executes anything (see
//! [`launch::LaunchCgroup::join_current_thread`] for how).
//!
//! Where no writable cgroup exists, [`probe`] says so and why (the path that
//! could not be written); the binding then falls back as L.3 documents
//! (sampled memory, per-process `RLIMIT_CPU`, CapabilityError for `tasks`).
//! [`crate::process::spawn`] refuses a launch whose limits cannot be enforced
//! with [`crate::process::SpawnError::Unenforceable`] before anything runs.

pub mod cgroup;
pub mod launch;
pub mod plan;
mod report;
pub mod watch;

pub use cgroup::Unavailable;
pub use launch::LaunchCgroup;

use std::sync::OnceLock;

/// Whole-tree limits for one launch; `None` means unlimited. Passed next to
/// the [`crate::process::Launch`] ([`crate::process::spawn::spawn_limited`],
/// [`crate::process::RunningProcess::start_limited`]); a launch whose limits
/// the host cannot enforce is refused with
/// [`crate::process::SpawnError::Unenforceable`] before anything runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Memory of the whole tree (anonymous, tmpfs and page cache), bytes.
    pub memory_bytes: Option<u64>,
    /// Processes and threads of the whole tree alive at once.
    pub tasks: Option<u64>,
    /// CPU time of the whole tree, seconds.
    pub cpu_seconds: Option<u64>,
    /// Run in a cgroup even without limits, so that everything the launch
    /// left behind is killed when it ends (Unrestricted owns its tree).
    pub own_tree: bool,
    /// A delegated cgroup v2 directory for launch cgroups (the backend's
    /// `cgroup:` option); `LITTLEGHOST_CGROUP` or the own cgroup without it.
    pub cgroup_dir: Option<std::path::PathBuf>,
}

impl ProcessLimits {
    /// Whether this launch needs a cgroup at all.
    pub fn wants_cgroup(&self) -> bool {
        self.own_tree
            || self.memory_bytes.is_some()
            || self.tasks.is_some()
            || self.cpu_seconds.is_some()
    }
}

/// Why the kernel (or the CPU watcher) stopped a launch's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitExceeded {
    /// The cgroup saw an OOM kill under `memory_bytes`.
    Memory { bytes: u64 },
    /// The tree used more than `cpu_seconds` of CPU time and was terminated.
    Cpu { seconds: u64 },
    /// A session's combined output passed `output_bytes` (18.5), or a run's
    /// passed `max_output_bytes` with `kill_on_output_limit`, and the group
    /// was terminated.
    Output { bytes: u64 },
}

impl LimitExceeded {
    /// The ToolError message of L.2.
    pub fn message(&self) -> String {
        match self {
            LimitExceeded::Memory { bytes } => {
                format!(
                    "Program memory exceeded {}",
                    crate::shown::count(*bytes, "byte")
                )
            }
            LimitExceeded::Cpu { seconds } => {
                format!(
                    "Program CPU time exceeded {}",
                    crate::shown::count(*seconds, "second")
                )
            }
            // 18.5's wording, "bytes" whatever the count.
            LimitExceeded::Output { bytes } => format!("Program output exceeded {bytes} bytes"),
        }
    }
}

/// Launch limits that cannot be enforced here (docs/spec.md §25 L.2:
/// refused, never ignored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `tasks` asked for where no cgroup can bound them; `reason` is why
    /// (the path that could not be written, or the missing controller).
    #[error("tasks cannot be limited here: {reason}. {}", plan::TASKS_FIX)]
    TasksUnenforceable { reason: Unavailable },
}

impl Error {
    /// Every one is a control that cannot be enforced.
    pub fn kind(&self) -> crate::error::kind::Kind {
        crate::error::kind::Kind::Capability
    }
}

/// What this process can enforce through cgroups; each `Err` says why not
/// (the path it could not write, or the controller that is missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    pub memory: Result<(), Unavailable>,
    pub tasks: Result<(), Unavailable>,
    pub cpu: Result<(), Unavailable>,
    /// Whole-tree ownership (kill everything left when the launch ends).
    pub tree: Result<(), Unavailable>,
}

impl Enforcement {
    /// The first reason `limits` cannot be enforced, if any, as the process
    /// runner's `SpawnError::Unenforceable` carries it (text).
    pub fn refusal(&self, limits: &ProcessLimits) -> Option<String> {
        let wanted = [
            (limits.memory_bytes.is_some(), &self.memory),
            (limits.tasks.is_some(), &self.tasks),
            (limits.cpu_seconds.is_some(), &self.cpu),
            (limits.own_tree, &self.tree),
        ];
        wanted
            .into_iter()
            .find_map(|(asked, status)| match (asked, status) {
                (true, Err(reason)) => Some(reason.to_string()),
                _ => None,
            })
    }
}

/// What the host cgroup layout lets this process enforce when launches use
/// the delegated directory `explicit` (a backend's `cgroup:` option), or
/// [`probe`]'s answer without one. Each directory is examined once.
pub fn probe_with(explicit: Option<&std::path::Path>) -> Enforcement {
    let Some(dir) = explicit else {
        return probe().clone();
    };
    static PROBED: std::sync::Mutex<Vec<(std::path::PathBuf, Enforcement)>> =
        std::sync::Mutex::new(Vec::new());
    let mut probed = PROBED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, known)) = probed.iter().find(|(known, _)| known == dir) {
        return known.clone();
    }
    let enforcement = match cgroup::detect_host(Some(dir)) {
        Ok(layout) => layout.enforcement(),
        Err(reason) => Enforcement::none(reason),
    };
    probed.push((dir.to_path_buf(), enforcement.clone()));
    enforcement
}

/// What the host cgroup layout lets this process enforce (computed once;
/// `LITTLEGHOST_CGROUP` is read on the first call).
pub fn probe() -> &'static Enforcement {
    static PROBED: OnceLock<Enforcement> = OnceLock::new();
    PROBED.get_or_init(|| match host_layout() {
        Ok(layout) => layout.enforcement(),
        Err(reason) => Enforcement::none(reason.clone()),
    })
}

/// This host's layout for this process, detected once (see [`cgroup::detect`]).
pub fn host_layout() -> &'static std::result::Result<cgroup::Layout, Unavailable> {
    static LAYOUT: OnceLock<std::result::Result<cgroup::Layout, Unavailable>> = OnceLock::new();
    LAYOUT.get_or_init(|| cgroup::detect_host(None))
}

impl Enforcement {
    /// Nothing can be enforced, for `reason`.
    pub fn none(reason: Unavailable) -> Enforcement {
        Enforcement {
            memory: Err(reason.clone()),
            tasks: Err(reason.clone()),
            cpu: Err(reason.clone()),
            tree: Err(reason),
        }
    }
}

#[cfg(test)]
mod tests;
