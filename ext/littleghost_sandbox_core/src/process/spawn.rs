//! Starting the child: no shell, a new process group, only the explicit
//! environment, stdin closed (or kept for sessions), stdout/stderr piped.
//!
//! Without rlimits or kept fds, std takes its `posix_spawn` fast path (the
//! program path is already resolved and `process_group` maps onto
//! `POSIX_SPAWN_SETPGROUP`); otherwise it forks and runs the async-signal-safe
//! `pre_exec` below.

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::{program, Launch};

/// Why a child could not be started.
#[derive(Debug)]
pub enum SpawnError {
    /// The program does not exist (exit 127, "command not found").
    NotFound,
    /// The program exists but cannot be executed (exit 126, "permission denied").
    NotExecutable,
    /// The working directory is missing or not a directory.
    WorkingDirectory(io::Error),
    /// Any other OS failure (pipes, fork, limits).
    Os(io::Error),
}

impl SpawnError {
    /// The errno Ruby's `Errno::*` would carry for this failure.
    pub fn errno(&self) -> i32 {
        match self {
            SpawnError::NotFound => libc::ENOENT,
            SpawnError::NotExecutable => libc::EACCES,
            SpawnError::WorkingDirectory(error) | SpawnError::Os(error) => {
                error.raw_os_error().unwrap_or(libc::EIO)
            }
        }
    }
}

/// The parent's ends of a freshly spawned child.
pub struct Spawned {
    pub pid: i32,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Spawns `launch` (the caller validated argv and environment). With
/// `keep_stdin` false, the child's stdin is a pipe that is closed at once, so
/// the child reads EOF (17.7).
pub fn spawn(launch: &Launch, keep_stdin: bool) -> Result<Spawned, SpawnError> {
    let argv0 = &launch.argv[0];
    if let Some(dir) = &launch.chdir {
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(SpawnError::WorkingDirectory(io::Error::from_raw_os_error(libc::ENOTDIR))),
            Err(error) => return Err(SpawnError::WorkingDirectory(error)),
        }
    }
    let program = program::resolve(argv0, &launch.environment, launch.chdir.as_deref())?;

    let mut command = Command::new(&program);
    command.arg0(argv0).args(&launch.argv[1..]);
    if !launch.inherit_environment {
        command.env_clear();
    }
    for (name, value) in &launch.environment {
        command.env(name, value);
    }
    if let Some(dir) = &launch.chdir {
        command.current_dir(dir);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);

    let limits = ChildSetup {
        cpu_seconds: launch.cpu_seconds,
        file_bytes: launch.file_bytes,
        keep_fds: launch.spawn_options.keep_fds.clone(),
    };
    if limits.needed() {
        // SAFETY: `apply` only makes raw syscalls (setrlimit, fcntl) and
        // touches memory captured before the fork: async-signal-safe.
        unsafe {
            command.pre_exec(move || limits.apply());
        }
    }

    let mut child = command.spawn().map_err(|error| match error.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => SpawnError::NotFound,
        Some(libc::EACCES) | Some(libc::ENOEXEC) | Some(libc::EISDIR) | Some(libc::EPERM) => {
            SpawnError::NotExecutable
        }
        _ => SpawnError::Os(error),
    })?;
    let pid = child.id() as i32;
    let stdin = child.stdin.take().map(OwnedFd::from);
    let stdin = if keep_stdin { stdin } else { None };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        // Unreachable with piped stdio; never leave the child unowned.
        let _ = rustix::process::kill_process_group(pid_of(pid), rustix::process::Signal::KILL);
        return Err(SpawnError::Os(io::Error::other("child pipes are missing")));
    };
    // Dropping `Child` neither waits nor kills; the caller owns the pid now.
    drop(child);
    Ok(Spawned { pid, stdin, stdout: stdout.into(), stderr: stderr.into() })
}

pub(crate) fn pid_of(pid: i32) -> rustix::process::Pid {
    rustix::process::Pid::from_raw(pid).expect("child pids are positive")
}

/// Work done in the child between fork and exec.
struct ChildSetup {
    cpu_seconds: Option<u64>,
    file_bytes: Option<u64>,
    keep_fds: Vec<RawFd>,
}

impl ChildSetup {
    fn needed(&self) -> bool {
        self.cpu_seconds.is_some() || self.file_bytes.is_some() || !self.keep_fds.is_empty()
    }

    fn apply(&self) -> io::Result<()> {
        if let Some(seconds) = self.cpu_seconds {
            set_limit(libc::RLIMIT_CPU, seconds)?;
        }
        if let Some(bytes) = self.file_bytes {
            set_limit(libc::RLIMIT_FSIZE, bytes)?;
        }
        for &fd in &self.keep_fds {
            // SAFETY: plain fcntl on a descriptor number; no allocation.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

fn set_limit(resource: Resource, value: u64) -> io::Result<()> {
    let limit = libc::rlimit { rlim_cur: value as libc::rlim_t, rlim_max: value as libc::rlim_t };
    // SAFETY: setrlimit is a raw syscall wrapper taking a pointer to a local.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
