//! Starting the child: no shell, a new process group, only the explicit
//! environment, stdin closed (or kept for sessions), stdout/stderr piped,
//! default signal dispositions and an empty signal mask. A launch on a
//! [`Terminal`] has its slave on all three instead and leads a new session
//! whose controlling terminal it is (always the fork path).
//!
//! Only the three pipes (or the slave) and `SpawnOptions::inherited_fds` (renumbered 3, 4,
//! ...) reach the child: a descriptor the Ruby process holds without
//! `FD_CLOEXEC` (one inherited from its own parent, or
//! `IO#close_on_exec = false`) would otherwise leak, and through bwrap a host
//! directory handle escapes every mount.
//!
//! Two ways to start it, with the same result:
//! - glibc `posix_spawn` ([`super::posix_spawn`]) when no rlimits are asked
//!   for. It clones with `CLONE_VM | CLONE_VFORK`, so its cost does not grow
//!   with the Ruby heap the way `fork`'s page-table copy does.
//! - otherwise our own `fork` + `execve` ([`fork_exec`]), which can call
//!   `setrlimit` in the child. It is not std's `Command`: std's exec-error
//!   pipe may sit at a number in 3.. that the renumbering would overwrite,
//!   and its `execvp` hands a file refused with ENOEXEC to `/bin/sh` (17.1).
//!
//! Neither path searches PATH ([`program::resolve`] already did) and neither
//! falls back to a shell: ENOEXEC is reported as "not executable".
//!
//! A launch with `SpawnOptions::executable_fd` executes that descriptor
//! instead (the gem's sealed helper): it is inherited like the others and
//! both paths `execve` `/proc/self/fd/N` of the child's copy, which the
//! kernel opens from the descriptor, not from any file system path.
//!
//! A launch with `SpawnOptions::hold` is a bwrap held on `--block-fd`: once
//! it is started, [`super::hold`] prepares its network namespace and checks
//! its mounts, and releases it before the spawn returns; if that fails, the
//! child is killed and reaped before anything of it ran, and the launch is
//! `Unenforceable` (the ports) or `Refused` (a mount moved).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

mod fork;
#[cfg(test)]
pub(crate) use fork::{LAST_JOIN, REFUSE_CLONE3};

pub use super::error::SpawnError;
use super::plan::{c_string, ChildPlan, DirectExec};
use super::terminal::Terminal;
use super::{program, Launch, SpawnOptions};
use crate::limits::{self, LaunchCgroup, ProcessLimits};
use fork::fork_exec;

/// A mount nested beneath a writable bind is not where, or not what, the
/// launch asked for once bwrap set the sandbox up (a directory on its path
/// was exchanged with a symlink meanwhile).
pub const MOUNT_MOVED: &str = "sandbox mount destination changed while the sandbox was set up";

/// The parent's ends of a freshly spawned child.
pub struct Spawned {
    pub pid: i32,
    /// The launch's cgroup (when it has limits or owns its tree); dropping
    /// it kills what is left in it and removes it.
    pub cgroup: Option<LaunchCgroup>,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// What the child's stdin, stdout and stderr are.
pub enum ChildStdio {
    /// Three pipes; with `keep_stdin` false, stdin is closed at once so the
    /// child reads EOF (17.7).
    Pipes { keep_stdin: bool },
    /// The terminal's slave on all three, and the controlling terminal of a
    /// new session the child leads ([`super::terminal`]). The parent's
    /// stdout and stdin are the master; its stderr ends at once.
    Terminal(Terminal),
}

/// How a child was started (tests check which one was taken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    PosixSpawn,
    Fork,
}

/// `posix_spawn` cannot set rlimits, so only launches without them take it.
pub(crate) fn method_for(launch: &Launch) -> Method {
    let wants_limits = launch.cpu_rlimit.is_some() || launch.file_bytes.is_some();
    if cfg!(all(target_os = "linux", target_env = "gnu")) && !wants_limits {
        Method::PosixSpawn
    } else {
        Method::Fork
    }
}

#[cfg(test)]
thread_local! {
    /// The method of this thread's last successful spawn.
    pub(crate) static LAST_METHOD: std::cell::Cell<Option<Method>> = const { std::cell::Cell::new(None) };
}

/// Spawns `launch` (the caller validated argv and environment). With
/// `keep_stdin` false, the child's stdin is a pipe that is closed at once, so
/// the child reads EOF (17.7).
pub fn spawn(launch: &Launch, keep_stdin: bool) -> Result<Spawned, SpawnError> {
    spawn_limited(launch, &ProcessLimits::default(), keep_stdin)
}

/// [`spawn`] inside a cgroup made for this launch that enforces `limits`
/// ([`crate::limits`]); [`SpawnError::Unenforceable`] (nothing started) where
/// the host cannot.
pub fn spawn_limited(
    launch: &Launch,
    limits: &ProcessLimits,
    keep_stdin: bool,
) -> Result<Spawned, SpawnError> {
    spawn_limited_with(launch, limits, ChildStdio::Pipes { keep_stdin })
}

/// [`spawn_limited`] with the child's stdio as `stdio` says.
pub fn spawn_limited_with(
    launch: &Launch,
    limits: &ProcessLimits,
    stdio: ChildStdio,
) -> Result<Spawned, SpawnError> {
    // Refused before anything is started.
    let cgroup = launch_cgroup(limits)?;
    spawn_in_with(launch, cgroup, stdio)
}

/// [`spawn`] inside `cgroup` (made by the caller), which the child joins
/// before it executes anything.
pub fn spawn_in(
    launch: &Launch,
    cgroup: Option<LaunchCgroup>,
    keep_stdin: bool,
) -> Result<Spawned, SpawnError> {
    spawn_in_with(launch, cgroup, ChildStdio::Pipes { keep_stdin })
}

fn spawn_in_with(
    launch: &Launch,
    cgroup: Option<LaunchCgroup>,
    stdio: ChildStdio,
) -> Result<Spawned, SpawnError> {
    if let Some(dir) = &launch.chdir {
        if let Err(error) = check_directory(dir) {
            return Err(SpawnError::WorkingDirectory(error));
        }
    }
    let mut inherited = launch.spawn_options.inherited_fds.clone();
    let program = match launch.spawn_options.executable_fd {
        // The child's own copy of the descriptor, by the number it will have.
        Some(fd) => {
            inherited.push(fd);
            PathBuf::from(format!(
                "/proc/self/fd/{}",
                SpawnOptions::child_fd(inherited.len() - 1)
            ))
        }
        None => program::resolve(
            &launch.argv[0],
            &launch.environment,
            launch.chdir.as_deref(),
        )?,
    };
    let exec = DirectExec::new(&program, launch).map_err(SpawnError::Os)?;
    let chdir = launch
        .chdir
        .as_deref()
        .map(|dir| c_string(dir.as_os_str().as_bytes()))
        .transpose()
        .map_err(SpawnError::Os)?;

    let inherited = &inherited;
    // The child's descriptors 0 ..= last inherited are targets of dup2; every
    // source is moved above them so no dup2 overwrites a later source.
    let first_free = SpawnOptions::child_fd(inherited.len());
    let ends = StdioEnds::make(stdio, first_free)?;
    let mut moved = Vec::new();
    let mut sources = Vec::with_capacity(inherited.len());
    for &fd in inherited {
        if fd >= first_free {
            sources.push(fd);
        } else {
            let copy = dup_above(fd, first_free).map_err(SpawnError::Os)?;
            sources.push(copy.as_raw_fd());
            moved.push(copy);
        }
    }
    let mut plan = ChildPlan {
        exec,
        chdir,
        stdio: ends.child_fds(),
        terminal: ends.terminal,
        inherited: sources,
        first_free,
        cgroup_dir: None,
        cgroup_procs: None,
        cpu_rlimit: launch.cpu_rlimit,
        file_bytes: launch.file_bytes,
    };
    let (started, _method) = start_in(&mut plan, cgroup.as_ref(), launch);
    // The child holds its own copies now (or failed); ours must not stay open.
    drop((ends.child, moved));
    let pid = started?;
    if let Some(held) = &launch.spawn_options.hold {
        if let Err(refusal) = super::hold::prepare(pid, held) {
            // Nothing of the launch has run: bwrap holds its child.
            kill_and_reap(pid);
            return Err(match refusal {
                // Read before either check: it is not the ports' failure alone.
                super::hold::Refusal::Report(why) => SpawnError::Unenforceable(format!(
                    "the sandbox cannot be checked before it runs: {why}"
                )),
                super::hold::Refusal::Ports(why) => SpawnError::Unenforceable(format!(
                    "the relay cannot listen on an allowlisted port below 1024: {why}"
                )),
                super::hold::Refusal::Mounts(why) => {
                    SpawnError::Refused(crate::error::policy(format!("{MOUNT_MOVED}: {why}")))
                }
            });
        }
    }
    #[cfg(test)]
    LAST_METHOD.with(|last| last.set(Some(_method)));
    Ok(Spawned {
        pid,
        cgroup,
        stdin: ends.stdin,
        stdout: ends.stdout,
        stderr: ends.stderr,
    })
}

/// Both sides of the child's stdio before the spawn.
struct StdioEnds {
    /// The child's stdin, stdout and stderr (all >= `first_free`); the
    /// parent closes its copies once the child holds its own.
    child: [OwnedFd; 3],
    stdin: Option<OwnedFd>,
    stdout: OwnedFd,
    stderr: OwnedFd,
    terminal: bool,
}

impl StdioEnds {
    fn make(stdio: ChildStdio, first_free: RawFd) -> Result<StdioEnds, SpawnError> {
        let os = |error: io::Error| SpawnError::Os(error);
        match stdio {
            ChildStdio::Pipes { keep_stdin } => {
                let (stdin_child, stdin_parent) = pipe_above(first_free, false)?;
                let (stdout_parent, stdout_child) = pipe_above(first_free, true)?;
                let (stderr_parent, stderr_child) = pipe_above(first_free, true)?;
                Ok(StdioEnds {
                    child: [stdin_child, stdout_child, stderr_child],
                    stdin: keep_stdin.then_some(stdin_parent),
                    stdout: stdout_parent,
                    stderr: stderr_parent,
                    terminal: false,
                })
            }
            ChildStdio::Terminal(terminal) => {
                let slave = || dup_above(terminal.slave.as_raw_fd(), first_free).map_err(os);
                let child = [slave()?, slave()?, slave()?];
                let input = dup_above(terminal.master.as_raw_fd(), 0).map_err(os)?;
                // Everything the program writes comes through the master.
                let (no_stderr, _closed) = pipe_above(0, true)?;
                Ok(StdioEnds {
                    child,
                    stdin: Some(input),
                    stdout: terminal.master,
                    stderr: no_stderr,
                    terminal: true,
                })
            }
        }
    }

    fn child_fds(&self) -> [RawFd; 3] {
        self.child.each_ref().map(AsRawFd::as_raw_fd)
    }
}

/// Ends a child that must not go on (its process group, then itself) and reaps it.
fn kill_and_reap(pid: i32) {
    // SAFETY: signals to our own child's group and to it, then waitpid on it.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
    }
}

/// The launch's cgroup, if it wants one, or why its limits cannot be enforced.
fn launch_cgroup(wanted: &ProcessLimits) -> Result<Option<LaunchCgroup>, SpawnError> {
    if !wanted.wants_cgroup() {
        return Ok(None);
    }
    let explicit;
    let layout = match &wanted.cgroup_dir {
        Some(dir) => {
            explicit = limits::cgroup::detect_host(Some(dir));
            &explicit
        }
        None => limits::host_layout(),
    };
    let layout = layout
        .as_ref()
        .map_err(|why| SpawnError::Unenforceable(why.to_string()))?;
    if let Some(why) = layout.enforcement().refusal(wanted) {
        return Err(SpawnError::Unenforceable(why));
    }
    LaunchCgroup::create(layout, wanted)
        .map(Some)
        .map_err(|error| SpawnError::Unenforceable(format!("cannot make a launch cgroup: {error}")))
}

/// Starts `plan` inside `cgroup` (see [`crate::limits::launch`] for how the
/// child gets there before it executes anything).
fn start_in(
    plan: &mut ChildPlan,
    cgroup: Option<&LaunchCgroup>,
    launch: &Launch,
) -> (Result<i32, SpawnError>, Method) {
    // posix_spawn cannot make a controlling terminal.
    let mut method = match plan.terminal {
        true => Method::Fork,
        false => method_for(launch),
    };
    let mut procs = None;
    let mut dir = None;
    let mut joined = None;
    if let Some(cgroup) = cgroup {
        let entered = if cgroup.joins_in_child() {
            method = Method::Fork;
            cgroup.procs_fd().and_then(|fd| {
                procs = Some(fd);
                cgroup.dir_fd().map(|fd| dir = Some(fd))
            })
        } else {
            cgroup
                .join_current_thread()
                .map(|guard| joined = Some(guard))
        };
        if let Err(error) = entered {
            return (Err(SpawnError::Os(error)), method);
        }
    }
    plan.cgroup_procs = procs.as_ref().map(AsRawFd::as_raw_fd);
    plan.cgroup_dir = dir.as_ref().map(AsRawFd::as_raw_fd);
    let started = match method {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        Method::PosixSpawn => super::posix_spawn::spawn(plan).map_err(|errno| {
            classify_exec_errno(errno, ExecStage::Unknown, launch.chdir.as_deref())
        }),
        _ => fork_exec(plan),
    };
    // The spawner thread leaves the launch's cgroups (v1).
    drop(joined);
    (started, method)
}

pub(crate) fn pid_of(pid: i32) -> rustix::process::Pid {
    rustix::process::Pid::from_raw(pid).expect("child pids are positive")
}

fn check_directory(dir: &Path) -> io::Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        Err(error) => Err(error),
    }
}

/// Which step of the child failed (the fork path knows; `posix_spawn` does not).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExecStage {
    Setup = 1,
    Chdir = 2,
    Exec = 3,
    /// posix_spawn's failure, which does not say the stage (glibc only).
    #[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
    Unknown = 4,
}

/// 17.4: exec's ENOENT is 127, a refused file 126; a working directory that
/// vanished since [`check_directory`] is reported as such.
fn classify_exec_errno(errno: i32, stage: ExecStage, chdir: Option<&Path>) -> SpawnError {
    let error = io::Error::from_raw_os_error(errno);
    let chdir_failed = match stage {
        ExecStage::Chdir => true,
        ExecStage::Unknown => chdir.is_some_and(|dir| check_directory(dir).is_err()),
        ExecStage::Setup | ExecStage::Exec => false,
    };
    if chdir_failed {
        return SpawnError::WorkingDirectory(error);
    }
    if stage == ExecStage::Setup {
        return SpawnError::Os(error);
    }
    match errno {
        libc::ENOENT | libc::ENOTDIR => SpawnError::NotFound,
        libc::EACCES | libc::ENOEXEC | libc::EISDIR | libc::EPERM => SpawnError::NotExecutable,
        _ => SpawnError::Os(error),
    }
}

/// A close-on-exec pipe whose child end (the write end if `child_writes`) is
/// numbered at least `floor`. Returns (read end, write end).
fn pipe_above(floor: RawFd, child_writes: bool) -> Result<(OwnedFd, OwnedFd), SpawnError> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|errno| SpawnError::Os(errno.into()))?;
    let raise = |fd: OwnedFd| -> Result<OwnedFd, SpawnError> {
        if fd.as_raw_fd() >= floor {
            Ok(fd)
        } else {
            dup_above(fd.as_raw_fd(), floor).map_err(SpawnError::Os)
        }
    };
    Ok(if child_writes {
        (read, raise(write)?)
    } else {
        (raise(read)?, write)
    })
}

/// A close-on-exec copy of `fd` numbered at least `floor`.
fn dup_above(fd: RawFd, floor: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl on a descriptor number; the result is a new descriptor we own.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` was just opened and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

#[cfg(test)]
mod tests;
