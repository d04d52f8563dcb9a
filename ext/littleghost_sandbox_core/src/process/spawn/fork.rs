//! The `fork` + `execve` path (taken when rlimits are asked for): the parent
//! side waits for the child's report, the child side runs only
//! async-signal-safe calls on memory prepared before the fork.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use super::super::plan::ChildPlan;
use super::{classify_exec_errno, pid_of, pipe_above, ExecStage, SpawnError};

/// Forks and runs [`ChildPlan::run_in_fork`]; the child reports a failure
/// before exec (stage and errno) through a close-on-exec pipe.
pub(super) fn fork_exec(plan: &ChildPlan) -> Result<i32, SpawnError> {
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
        let mut pid = -1;
        if let Some(dir) = plan.cgroup_dir {
            pid = clone_into_cgroup(dir);
            if pid == 0 {
                plan.run_in_fork(report_write.as_raw_fd(), None);
            }
            #[cfg(test)]
            LAST_JOIN.with(|last| last.set(Some(pid > 0)));
        }
        // No cgroup, or the kernel refused to clone into it: the child joins
        // by writing to `cgroup.procs`.
        if pid < 0 {
            pid = libc::fork();
            if pid == 0 {
                plan.run_in_fork(report_write.as_raw_fd(), plan.cgroup_procs);
            }
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
    // Not for a terminal's child: made a group leader first, its `setsid`
    // would fail (it leads its group once that ran, before the report below).
    if !plan.terminal {
        // SAFETY: setpgid on our own child.
        unsafe { libc::setpgid(pid, pid) };
    }
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

#[cfg(test)]
thread_local! {
    /// Whether this thread's last fork with a v2 cgroup cloned the child
    /// straight into it (false: the `cgroup.procs` fallback).
    pub(crate) static LAST_JOIN: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
    /// Tests set it to take the fallback as a kernel without `clone3` would.
    pub(crate) static REFUSE_CLONE3: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `clone3(CLONE_INTO_CGROUP)` of a fork-like child (no shared memory, no
/// new stack) that starts inside the v2 cgroup `dir`: the pid in the parent,
/// 0 in the child, -1 when the kernel refuses (before 5.7, or a seccomp
/// profile that answers `clone3` with ENOSYS), so the caller can `fork`.
///
/// Unlike glibc's `fork` it runs no `atfork` handlers and leaves glibc's
/// idea of the thread id stale in the child; the child only makes raw,
/// async-signal-safe calls and then execs, so neither matters.
///
/// # Safety
/// The child must do only what a `fork` child may (see `run_in_fork`).
unsafe fn clone_into_cgroup(dir: RawFd) -> libc::pid_t {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        #[cfg(test)]
        if REFUSE_CLONE3.with(|refuse| refuse.get()) {
            return -1;
        }
        /// `struct clone_args` up to `cgroup` (CLONE_ARGS_SIZE_VER2).
        #[repr(C)]
        #[derive(Default)]
        struct CloneArgs {
            flags: u64,
            pidfd: u64,
            child_tid: u64,
            parent_tid: u64,
            exit_signal: u64,
            stack: u64,
            stack_size: u64,
            tls: u64,
            set_tid: u64,
            set_tid_size: u64,
            cgroup: u64,
        }
        const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
        let args = CloneArgs {
            flags: CLONE_INTO_CGROUP,
            exit_signal: libc::SIGCHLD as u64,
            cgroup: dir as u64,
            ..CloneArgs::default()
        };
        // SAFETY: the kernel reads `args` (a local of the size passed); the
        // caller keeps the child to async-signal-safe calls.
        let pid = libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        );
        if pid < 0 {
            -1
        } else {
            pid as libc::pid_t
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = dir;
        -1
    }
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
    /// before the fork. Never returns. `join` is the v2 `cgroup.procs` to
    /// write `0` to (None: no cgroup, or cloned into it already).
    ///
    /// # Safety
    ///
    /// Call only in the child of a `fork`/`clone` made by this module, before
    /// anything else runs there: the parent may have held locks (the
    /// allocator's among them) at the fork, so this must not allocate, lock or
    /// unwind, and every pointer it uses (argv, environment, paths) must have
    /// been built by the parent before the fork and stay untouched until exec.
    /// `report` must be the write end of the parent's status pipe (close on
    /// exec), and `join`, when given, an open `cgroup.procs` descriptor.
    unsafe fn run_in_fork(&self, report: RawFd, join: Option<RawFd>) -> ! {
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
        if let Some(procs) = join {
            if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
                fail(ExecStage::Setup);
            }
        }
        // Default dispositions first, so a signal unblocked below cannot run
        // a Ruby handler here. Errors (SIGKILL, SIGSTOP, libc-internal) are expected.
        for signal in 1..=MAX_SIGNAL {
            libc::signal(signal, libc::SIG_DFL);
        }
        if self.terminal {
            if libc::setsid() < 0 {
                fail(ExecStage::Setup);
            }
        } else if libc::setpgid(0, 0) != 0 {
            fail(ExecStage::Setup);
        }
        if let Some(cpu) = self.cpu_rlimit {
            if set_limits(libc::RLIMIT_CPU, cpu.soft, cpu.hard).is_err() {
                fail(ExecStage::Setup);
            }
            // No core file from a SIGXCPU (the hard core limit stays).
            if cpu.soft < cpu.hard && set_soft_limit(libc::RLIMIT_CORE, 0).is_err() {
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
        // The session's controlling terminal: its stdin, the terminal's slave.
        if self.terminal && libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
            fail(ExecStage::Setup);
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
    set_limits(resource, value, value)
}

/// Sets `resource`'s soft limit to `soft` and its hard limit to `hard`.
fn set_limits(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit is a raw syscall wrapper taking a pointer to a local.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Lowers `resource`'s soft limit to `soft`, keeping the hard limit.
fn set_soft_limit(resource: Resource, soft: u64) -> io::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the local it is given; setrlimit reads it.
    unsafe {
        if libc::getrlimit(resource, &mut limit) != 0 {
            return Err(io::Error::last_os_error());
        }
        limit.rlim_cur = (soft as libc::rlim_t).min(limit.rlim_max);
        if libc::setrlimit(resource, &limit) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
