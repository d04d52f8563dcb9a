//! Process runner, sessions and supervision: the one place every backend
//! launches a host process.
//!
//! - [`program`]: argv and environment checks, and finding the program (127/126).
//! - [`spawn`]: starting the child (no shell, new process group, explicit
//!   environment, closed stdin, rlimits, inherited fds, the launch's cgroup
//!   from [`crate::limits`]): `posix_spawn` when no rlimits are asked for,
//!   else a fork of our own. `plan` holds what both paths consume and
//!   [`error`] why a start failed.
//! - [`capture`]: bounded output buffers, UTF-8 scrubbing and the truncation marker.
//! - [`running`]: a spawned child whose pipes and exit are watched by the
//!   shared tokio runtime, with a notification fd callers can wait on.
//! - [`group`]: process-group signals and liveness (17.12 building blocks);
//!   [`running::Termination`] is the one TERM/grace/KILL protocol and
//!   [`running::Owner`] terminates everything a sandbox started (H.4).
//! - [`session`]: a long-lived child's rules (§18): refusals, the loops of
//!   `write`, `read` and `wait`, the memory monitor, the status.
//! - [`supervision`]: when the wait for a run to completion ends, and why.
//! - [`runtime`]: the per-process tokio runtime, re-created after `fork`.
//! - [`spawner`]: the long-lived thread every child is started from (H.5).
//! - [`hold`]: a bwrap launch held once its sandbox is set up, until the
//!   host lowered `ip_unprivileged_port_start` in the sandbox's own network
//!   namespace ([`low_ports`]) and checked its mounts nested beneath a
//!   writable bind ([`mount_check`]).
//! - [`terminal`]: a pseudo-terminal a launch runs on instead of pipes.
//! - [`procfs`]: memory readers (`/proc` snapshot parser, `ps` rows).
//!
//! Waiting is left to the caller (the Ruby binding), which must keep Ruby
//! responsive: it waits on [`Notifier`] in short slices and decides when to
//! terminate. Nothing here installs a signal handler.

pub mod arguments;
pub mod bwrap_report;
pub mod capture;
pub mod deadline;
pub mod ending;
pub mod error;
pub mod group;
pub mod hold;
pub mod low_ports;
pub mod mount_check;
pub mod notify;
mod plan;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod posix_spawn;
pub mod procfs;
pub mod program;
pub mod running;
pub mod runtime;
pub mod session;
pub mod spawn;
pub mod spawner;
mod string_command;
pub mod supervision;
pub mod terminal;

use std::os::fd::RawFd;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::limits::plan::CpuRlimit;
pub use crate::limits::{LimitExceeded, ProcessLimits};

pub use capture::{CaptureMode, Stream, TRUNCATION_MARKER};
pub use error::SpawnError;
pub use notify::Notifier;
pub use program::{validate_argv, validate_environment, validate_launch};
pub use running::{
    write_stdin, Exit, OutputChunk, Owner, RunningProcess, Starting, Termination, TerminationStep,
};
pub use rustix::event::PollFlags;
pub use string_command::is_command_line;

/// How often waiters poll (17.8, 18.6): a bound on how late a timeout,
/// cancellation or interrupt is noticed.
pub const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Grace between SIGTERM and SIGKILL when a group is terminated (17.12).
pub const TERMINATION_GRACE: Duration = Duration::from_millis(500);

/// Gives the CPU to another runnable thread (`sched_yield`). A caller that
/// polls a session in a loop and finds nothing calls this so the child it is
/// waiting for, or the drain task, can run when the CPUs are busy.
pub fn yield_cpu() {
    rustix::thread::sched_yield();
}

/// Backend extras for a launch. Small on purpose.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnOptions {
    /// Parent descriptors handed to the child, which sees them as 3, 4, ...
    /// in this order ([`SpawnOptions::child_fd`]); for example a seccomp
    /// program passed as `bwrap --seccomp 3`. Every other descriptor above
    /// stderr is closed in the child. The parent's descriptors are untouched.
    pub inherited_fds: Vec<RawFd>,
    /// A parent descriptor of the file to execute instead of looking up
    /// `argv[0]` (the gem's sealed helper copy): the child holds it as the
    /// descriptor after `inherited_fds` and executes it from there, so no
    /// path is resolved between the gem's checks and the `execve`. The
    /// executed program inherits that descriptor (the helper marks it
    /// close-on-exec first thing).
    pub executable_fd: Option<RawFd>,
    /// Once started, the child (bwrap) is held until the host has prepared
    /// and checked its sandbox ([`hold`]).
    pub hold: Option<hold::Held>,
}

impl SpawnOptions {
    /// The descriptor number the child sees for `inherited_fds[index]`.
    pub fn child_fd(index: usize) -> RawFd {
        3 + index as RawFd
    }
}

/// Everything needed to start one child process.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The program and its arguments; `argv[0]` is executed directly (17.1).
    pub argv: Vec<String>,
    /// Explicit environment; later entries win over earlier ones and over inherited values.
    pub environment: Vec<(String, String)>,
    /// Start from the host environment instead of an empty one (the caller
    /// has already applied the double opt-in of 17.6).
    pub inherit_environment: bool,
    /// Working directory of the child.
    pub chdir: Option<PathBuf>,
    /// `RLIMIT_CPU`, applied in the child before exec; a SIGXCPU before the
    /// SIGKILL also lowers the soft core limit to 0 (no core file from it).
    pub cpu_rlimit: Option<CpuRlimit>,
    /// `RLIMIT_FSIZE` (soft and hard), applied in the child before exec.
    pub file_bytes: Option<u64>,
    /// Backend extras.
    pub spawn_options: SpawnOptions,
}
