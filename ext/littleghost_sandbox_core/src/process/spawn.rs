//! Starting the child: no shell, a new process group, only the explicit
//! environment, stdin closed (or kept for sessions), stdout/stderr piped,
//! default signal dispositions and an empty signal mask.
//!
//! Only the three pipes and `SpawnOptions::inherited_fds` (renumbered 3, 4,
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

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use super::error::SpawnError;
use super::plan::{c_string, ChildPlan, DirectExec};
use super::{program, Launch, SpawnOptions};
use crate::limits::{self, LaunchCgroup, ProcessLimits};

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

/// How a child was started (tests check which one was taken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    PosixSpawn,
    Fork,
}

/// `posix_spawn` cannot set rlimits, so only launches without them take it.
pub(crate) fn method_for(launch: &Launch) -> Method {
    let wants_limits = launch.cpu_seconds.is_some() || launch.file_bytes.is_some();
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
    // Refused before anything is started.
    let cgroup = launch_cgroup(limits)?;
    spawn_in(launch, cgroup, keep_stdin)
}

/// [`spawn`] inside `cgroup` (made by the caller), which the child joins
/// before it executes anything.
pub fn spawn_in(
    launch: &Launch,
    cgroup: Option<LaunchCgroup>,
    keep_stdin: bool,
) -> Result<Spawned, SpawnError> {
    if let Some(dir) = &launch.chdir {
        if let Err(error) = check_directory(dir) {
            return Err(SpawnError::WorkingDirectory(error));
        }
    }
    let program = program::resolve(
        &launch.argv[0],
        &launch.environment,
        launch.chdir.as_deref(),
    )?;
    let exec = DirectExec::new(&program, launch).map_err(SpawnError::Os)?;
    let chdir = launch
        .chdir
        .as_deref()
        .map(|dir| c_string(dir.as_os_str().as_bytes()))
        .transpose()
        .map_err(SpawnError::Os)?;

    let inherited = &launch.spawn_options.inherited_fds;
    // The child's descriptors 0 ..= last inherited are targets of dup2; every
    // source is moved above them so no dup2 overwrites a later source.
    let first_free = SpawnOptions::child_fd(inherited.len());
    let (stdin_child, stdin_parent) = pipe_above(first_free, false)?;
    let (stdout_parent, stdout_child) = pipe_above(first_free, true)?;
    let (stderr_parent, stderr_child) = pipe_above(first_free, true)?;
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
        stdio: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr_child.as_raw_fd(),
        ],
        inherited: sources,
        first_free,
        cgroup_procs: None,
        cpu_seconds: launch.cpu_seconds,
        file_bytes: launch.file_bytes,
    };
    let (started, _method) = start_in(&mut plan, cgroup.as_ref(), launch);
    // The child holds its own copies now (or failed); ours must not stay open.
    drop((stdin_child, stdout_child, stderr_child, moved));
    let pid = started?;
    #[cfg(test)]
    LAST_METHOD.with(|last| last.set(Some(_method)));
    Ok(Spawned {
        pid,
        cgroup,
        stdin: if keep_stdin { Some(stdin_parent) } else { None },
        stdout: stdout_parent,
        stderr: stderr_parent,
    })
}

/// The launch's cgroup, if it wants one, or why its limits cannot be enforced.
fn launch_cgroup(wanted: &ProcessLimits) -> Result<Option<LaunchCgroup>, SpawnError> {
    if !wanted.wants_cgroup() {
        return Ok(None);
    }
    let explicit;
    let layout = match &wanted.cgroup_dir {
        Some(dir) => {
            explicit = limits::cgroup::host_layout_with(Some(dir));
            &explicit
        }
        None => limits::host_layout(),
    };
    let layout = layout
        .as_ref()
        .map_err(|why| SpawnError::Unenforceable(why.clone()))?;
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
    let mut method = method_for(launch);
    let mut procs = None;
    let mut joined = None;
    if let Some(cgroup) = cgroup {
        let entered = if cgroup.joins_in_child() {
            method = Method::Fork;
            cgroup.procs_fd().map(|fd| procs = Some(fd))
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

/// Forks and runs [`ChildPlan::run_in_fork`]; the child reports a failure
/// before exec (stage and errno) through a close-on-exec pipe.
fn fork_exec(plan: &ChildPlan) -> Result<i32, SpawnError> {
    let (report_read, report_write) = pipe_above(plan.first_free, true)?;
    // Signals stay blocked across fork so no Ruby handler runs in the child
    // before it has reset the dispositions; the child unblocks just before exec.
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    let mut previous = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initialises `all`; pthread_sigmask fills `previous`.
    let (pid, fork_error) = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        let blocked = libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), previous.as_mut_ptr());
        if blocked != 0 {
            return Err(SpawnError::Os(io::Error::from_raw_os_error(blocked)));
        }
        let pid = libc::fork();
        if pid == 0 {
            plan.run_in_fork(report_write.as_raw_fd());
        }
        let fork_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, previous.as_ptr(), std::ptr::null_mut());
        (pid, fork_error)
    };
    if pid < 0 {
        return Err(SpawnError::Os(fork_error));
    }
    // Also set in the parent, so a group signal sent right after we return
    // cannot miss a child that has not run yet; fails harmlessly after exec.
    // SAFETY: setpgid on our own child.
    unsafe { libc::setpgid(pid, pid) };
    drop(report_write);
    let mut report = [0u8; 8];
    let mut filled = 0;
    while filled < report.len() {
        match rustix::io::read(&report_read, &mut report[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(errno) => {
                // Unknown outcome: never leave a child behind.
                let _ = rustix::process::kill_process(pid_of(pid), rustix::process::Signal::KILL);
                reap(pid);
                return Err(SpawnError::Os(errno.into()));
            }
        }
    }
    if filled == 0 {
        return Ok(pid); // the pipe closed on exec
    }
    reap(pid);
    let stage = match u32::from_ne_bytes(report[..4].try_into().expect("4 bytes")) {
        2 => ExecStage::Chdir,
        3 => ExecStage::Exec,
        _ => ExecStage::Setup,
    };
    let errno = i32::from_ne_bytes(report[4..].try_into().expect("4 bytes"));
    Err(classify_exec_errno(errno, stage, None))
}

/// Waits for a child that failed before exec (it `_exit`s at once).
fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid on our own child, writing into a local.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

impl ChildPlan {
    /// The forked child: only async-signal-safe syscalls on memory prepared
    /// before the fork. Never returns.
    unsafe fn run_in_fork(&self, report: RawFd) -> ! {
        let fail = |stage: ExecStage| -> ! {
            let errno = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            let mut message = [0u8; 8];
            message[..4].copy_from_slice(&(stage as u32).to_ne_bytes());
            message[4..].copy_from_slice(&errno.to_ne_bytes());
            libc::write(report, message.as_ptr().cast(), message.len());
            libc::_exit(127)
        };
        // Into the launch's cgroup (v2) before anything else runs.
        if let Some(procs) = self.cgroup_procs {
            if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
                fail(ExecStage::Setup);
            }
        }
        // Default dispositions first, so a signal unblocked below cannot run
        // a Ruby handler here. Errors (SIGKILL, SIGSTOP, libc-internal) are expected.
        for signal in 1..=MAX_SIGNAL {
            libc::signal(signal, libc::SIG_DFL);
        }
        if libc::setpgid(0, 0) != 0 {
            fail(ExecStage::Setup);
        }
        if let Some(seconds) = self.cpu_seconds {
            if set_limit(libc::RLIMIT_CPU, seconds).is_err() {
                fail(ExecStage::Setup);
            }
        }
        if let Some(bytes) = self.file_bytes {
            if set_limit(libc::RLIMIT_FSIZE, bytes).is_err() {
                fail(ExecStage::Setup);
            }
        }
        // Sources are all >= first_free, so no dup2 overwrites a later source;
        // dup2 clears close-on-exec on the target.
        let targets = (0..3).chain(3..self.first_free);
        for (source, target) in self.stdio.iter().chain(&self.inherited).zip(targets) {
            if libc::dup2(*source, target) < 0 {
                fail(ExecStage::Setup);
            }
        }
        if let Some(dir) = &self.chdir {
            if libc::chdir(dir.as_ptr()) != 0 {
                fail(ExecStage::Chdir);
            }
        }
        // Marking rather than closing keeps `report` open until exec succeeds.
        if close_on_exec_from(self.first_free).is_err() {
            fail(ExecStage::Setup);
        }
        let mut empty = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(empty.as_mut_ptr());
        libc::sigprocmask(libc::SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut());
        self.exec.exec();
        fail(ExecStage::Exec)
    }
}

/// Highest signal number reset to its default disposition.
#[cfg(target_os = "linux")]
const MAX_SIGNAL: libc::c_int = 64;
#[cfg(not(target_os = "linux"))]
const MAX_SIGNAL: libc::c_int = 31;

/// Marks every descriptor from `first` on close-on-exec.
fn close_on_exec_from(first: RawFd) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: a raw syscall with integer arguments.
        let done = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                first as u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if done == 0 {
            return Ok(());
        }
        // ENOSYS or EINVAL before Linux 5.11: mark them one by one below.
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills a local; fcntl takes descriptor numbers only.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(io::Error::last_os_error());
        }
        let highest = limit.rlim_cur.min(1 << 20) as libc::c_int;
        for fd in first..highest {
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
    let limit = libc::rlimit {
        rlim_cur: value as libc::rlim_t,
        rlim_max: value as libc::rlim_t,
    };
    // SAFETY: setrlimit is a raw syscall wrapper taking a pointer to a local.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;

    fn launch(argv: &[&str], limits: bool) -> Launch {
        Launch {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cpu_seconds: limits.then_some(30),
            ..Launch::default()
        }
    }

    /// Spawns, checks the method taken, waits and returns (exit code, stdout).
    fn run(launch: &Launch, expected: Method) -> (i32, String) {
        let spawned = spawn(launch, false).unwrap();
        assert_eq!(LAST_METHOD.with(|last| last.get()), Some(expected));
        let mut stdout = String::new();
        std::fs::File::from(spawned.stdout)
            .read_to_string(&mut stdout)
            .unwrap();
        let mut status = 0;
        // SAFETY: waiting for our own child into a local.
        assert_eq!(
            unsafe { libc::waitpid(spawned.pid, &mut status, 0) },
            spawned.pid
        );
        (libc::WEXITSTATUS(status), stdout)
    }

    /// Opens `path` without close-on-exec, as Ruby's `IO#close_on_exec = false` leaves it.
    fn inheritable(path: &Path) -> OwnedFd {
        let file = OwnedFd::from(std::fs::File::open(path).unwrap());
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFD, 0) };
        file
    }

    #[test]
    fn posix_spawn_is_taken_without_rlimits_and_fork_with_them() {
        assert_eq!(method_for(&launch(&["true"], false)), Method::PosixSpawn);
        assert_eq!(
            method_for(&Launch {
                file_bytes: Some(1),
                ..launch(&["true"], false)
            }),
            Method::Fork
        );
        assert_eq!(
            run(&launch(&["sh", "-c", "exit 7"], false), Method::PosixSpawn).0,
            7
        );
        // The limit really reaches the forked child.
        assert_eq!(
            run(&launch(&["sh", "-c", "ulimit -t"], true), Method::Fork),
            (0, "30\n".into())
        );
    }

    #[test]
    fn only_stdio_and_inherited_fds_reach_the_child_on_both_paths() {
        let dir = tempfile::tempdir().unwrap();
        let (leaked_path, kept_path) = (dir.path().join("leaked"), dir.path().join("kept"));
        std::fs::write(&leaked_path, "").unwrap();
        std::fs::write(&kept_path, "").unwrap();
        let leaked = inheritable(&leaked_path);
        let kept = inheritable(&kept_path);
        // The shell's own descriptors (ls and readlink run as its children),
        // as numbers then targets. readlink fails on the one the glob opened
        // and closed, so its exit code is not checked.
        let script = "ls /proc/$$/fd; readlink /proc/$$/fd/*";
        for (limits, method) in [(false, Method::PosixSpawn), (true, Method::Fork)] {
            let (_, listing) = run(&launch(&["sh", "-c", script], limits), method);
            let numbers: Vec<&str> = listing
                .lines()
                .filter(|line| line.parse::<u32>().is_ok())
                .collect();
            assert_eq!(numbers, ["0", "1", "2"], "{method:?}: {listing}");
            assert!(
                !listing.contains(leaked_path.to_str().unwrap()),
                "{method:?} leaked: {listing}"
            );

            let mut with_kept = launch(&["sh", "-c", script], limits);
            with_kept.spawn_options.inherited_fds = vec![kept.as_raw_fd()];
            let (_, listing) = run(&with_kept, method);
            let numbers: Vec<&str> = listing
                .lines()
                .filter(|line| line.parse::<u32>().is_ok())
                .collect();
            assert_eq!(numbers, ["0", "1", "2", "3"], "{method:?}: {listing}");
            assert_eq!(
                listing.lines().last(),
                Some(kept_path.to_str().unwrap()),
                "{method:?}: {listing}"
            );
            assert!(
                !listing.contains(leaked_path.to_str().unwrap()),
                "{method:?} leaked: {listing}"
            );
        }
        // The parent's descriptors are untouched.
        for fd in [&leaked, &kept] {
            // SAFETY: fcntl on descriptors we own.
            assert_eq!(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) }, 0);
        }
    }

    #[test]
    fn inherited_fds_in_the_target_range_are_renumbered_without_clobbering() {
        // Parent fds 3 and 4 may hold anything; ask for them swapped.
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("first"), dir.path().join("second"));
        std::fs::write(&first, "").unwrap();
        std::fs::write(&second, "").unwrap();
        let (first_fd, second_fd) = (inheritable(&first), inheritable(&second));
        let script = "readlink /proc/$$/fd/3 /proc/$$/fd/4";
        for (limits, method) in [(false, Method::PosixSpawn), (true, Method::Fork)] {
            let mut swapped = launch(&["sh", "-c", script], limits);
            swapped.spawn_options.inherited_fds = vec![second_fd.as_raw_fd(), first_fd.as_raw_fd()];
            let expected = format!("{}\n{}\n", second.display(), first.display());
            assert_eq!(run(&swapped, method), (0, expected), "{method:?}");
        }
    }

    #[test]
    fn an_executable_without_a_shebang_is_refused_and_no_shell_runs() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("not-a-program");
        let marker = dir.path().join("shell-ran");
        std::fs::write(&script, format!("touch {}\n", marker.display())).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        for limits in [false, true] {
            let result = spawn(&launch(&[script.to_str().unwrap()], limits), false);
            assert!(
                matches!(result, Err(SpawnError::NotExecutable)),
                "limits {limits}: {:?}",
                result.err()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!marker.exists());
    }

    #[test]
    fn a_working_directory_is_applied_on_both_paths() {
        let dir = tempfile::tempdir().unwrap();
        for (limits, method) in [(false, Method::PosixSpawn), (true, Method::Fork)] {
            let launch = Launch {
                chdir: Some(dir.path().to_path_buf()),
                ..launch(&["pwd"], limits)
            };
            assert_eq!(
                run(&launch, method),
                (0, format!("{}\n", dir.path().display()))
            );
        }
    }
}
