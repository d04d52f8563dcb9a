//! Starting the child: no shell, a new process group, only the explicit
//! environment, stdin closed (or kept for sessions), stdout/stderr piped.
//!
//! The child always forks and runs the async-signal-safe `pre_exec` below,
//! which marks every inherited descriptor above stderr close-on-exec: a
//! descriptor the Ruby process holds without `FD_CLOEXEC` (one inherited from
//! its own parent, or `IO#close_on_exec = false`) would otherwise reach the
//! child, and through bwrap a host directory handle escapes every mount.
//! `pre_exec` then makes the `execve` itself: std's fork path uses `execvp`,
//! whose glibc version hands a file refused with ENOEXEC to `/bin/sh` (17.1).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
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
        exec: DirectExec::new(&program, launch).map_err(SpawnError::Os)?,
    };
    // SAFETY: `apply` only makes raw syscalls (setrlimit, close_range, fcntl,
    // execve) and touches memory prepared before the fork: async-signal-safe.
    unsafe {
        command.pre_exec(move || limits.apply());
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
    exec: DirectExec,
}

impl ChildSetup {
    fn apply(&self) -> io::Result<()> {
        if let Some(seconds) = self.cpu_seconds {
            set_limit(libc::RLIMIT_CPU, seconds)?;
        }
        if let Some(bytes) = self.file_bytes {
            set_limit(libc::RLIMIT_FSIZE, bytes)?;
        }
        close_inherited_on_exec()?;
        for &fd in &self.keep_fds {
            // SAFETY: plain fcntl on a descriptor number; no allocation.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        // Only returns on failure, which std reports to the parent.
        Err(self.exec.exec())
    }
}

/// The child's `execve`, prepared before the fork (nothing may allocate after it).
struct DirectExec {
    program: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// Owns the strings `argv` and `envp` point into.
    _strings: Vec<CString>,
}

// SAFETY: the pointers refer to heap buffers owned by `_strings` and
// `program`, which are never changed or dropped while the value lives.
unsafe impl Send for DirectExec {}
unsafe impl Sync for DirectExec {}

impl DirectExec {
    /// argv as given; the environment is the explicit set, over the host's when inheriting.
    fn new(program: &Path, launch: &Launch) -> io::Result<DirectExec> {
        let c_string = |bytes: &[u8]| CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL));
        let mut variables: Vec<(OsString, OsString)> =
            if launch.inherit_environment { std::env::vars_os().collect() } else { Vec::new() };
        for (name, value) in &launch.environment {
            variables.retain(|(existing, _)| existing.as_os_str() != OsStr::new(name));
            variables.push((name.into(), value.into()));
        }
        let argv: Vec<CString> = launch.argv.iter().map(|arg| c_string(arg.as_bytes())).collect::<io::Result<_>>()?;
        let envp: Vec<CString> = variables
            .iter()
            .map(|(name, value)| c_string(&[name.as_bytes(), b"=", value.as_bytes()].concat()))
            .collect::<io::Result<_>>()?;
        let pointers = |strings: &[CString]| -> Vec<*const libc::c_char> {
            strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
        };
        let (argv_pointers, envp_pointers) = (pointers(&argv), pointers(&envp));
        Ok(DirectExec {
            program: c_string(program.as_os_str().as_bytes())?,
            argv: argv_pointers,
            envp: envp_pointers,
            _strings: argv.into_iter().chain(envp).collect(),
        })
    }

    fn exec(&self) -> io::Error {
        // SAFETY: NUL-terminated strings and NULL-terminated arrays built in `new`.
        unsafe { libc::execve(self.program.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr()) };
        io::Error::last_os_error()
    }
}

/// Marks every descriptor above stderr close-on-exec (only `keep_fds`, made
/// inheritable afterwards, survive). Marking rather than closing leaves std's
/// own exec-error pipe working.
fn close_inherited_on_exec() -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: a raw syscall with integer arguments.
        let done = unsafe {
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC)
        };
        if done == 0 {
            return Ok(());
        }
        // ENOSYS or EINVAL before Linux 5.11: mark them one by one below.
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a local; fcntl takes descriptor numbers only.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(io::Error::last_os_error());
        }
        let highest = limit.rlim_cur.min(1 << 20) as libc::c_int;
        for fd in 3..highest {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
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
