//! The seccomp-BPF program every Bubblewrap child runs under. bwrap reads it
//! from a file descriptor (`--seccomp FD`) and installs it just before the
//! child's `execve`, after its own set-up. One [`Filter`] describes one
//! launch's program; [`filter_fd`] is the only way the backend builds it.
//!
//! Always, for the native ABI:
//! - `keyctl`, `add_key` and `request_key` fail with EPERM. Keyrings are not
//!   namespaced: without this a child reads (and changes) keys in the session
//!   keyring of the Ruby process that launched it.
//! - Nothing the child writes may carry authority on the host (SPEC H.2).
//!   Uid 0 in the child's user namespace is host root when the gem runs as
//!   root, and any other uid is the gem's user: a set-user-ID file left in a
//!   workspace would hand that identity to whoever can reach the workspace.
//!   So, with EPERM:
//!   - `chmod`, `fchmod`, `fchmodat`, `fchmodat2` whose mode has `S_ISUID` or
//!     `S_ISGID` (this also covers a set-gid directory);
//!   - `open`, `openat` with `O_CREAT` or `O_TMPFILE` and such a mode, and
//!     `creat` with such a mode;
//!   - `mknod`, `mknodat` of a character or block device, or with such a mode;
//!   - `chown`, `fchown`, `lchown`, `fchownat` naming a uid or gid other than
//!     -1 ("unchanged") or the child's own ids: no file can be handed to
//!     another user;
//!   - `setxattr`, `lsetxattr`, `fsetxattr`, `setxattrat` fail with
//!     EOPNOTSUPP, whatever the name: the name lives in user memory, which
//!     BPF cannot read, and `security.capability` (file capabilities),
//!     `security.*` and `trusted.*` are among the names. EOPNOTSUPP, not
//!     EPERM, because it is what a file system without extended attributes
//!     answers: `cp -p`, `cp -a`, `tar` and `rsync` then fall back to plain
//!     modes (with EPERM, `cp -p` fails on its POSIX ACL);
//!   - `io_uring_setup`, `io_uring_enter`, `io_uring_register`: io_uring
//!     opens files (and sets xattrs) without passing through this filter;
//!   - `openat2` fails with ENOSYS: its mode lives in user memory, and ENOSYS
//!     makes libc fall back to `openat`.
//! - No new user namespace (its capabilities would undo the dropped ones:
//!   `chroot`, mounts, a fresh keyring of its own): `unshare` and `clone`
//!   with `CLONE_NEWUSER` fail with EPERM, and `clone3` fails with ENOSYS
//!   (its flags live in user memory, which BPF cannot read; ENOSYS makes
//!   glibc fall back to `clone`), as container runtimes' filters do.
//!
//! With [`Filter::host_pids`] (the child shares the host's pid namespace:
//! the Landlock backend), calls that change *another* process and that
//! neither Landlock's signal scoping nor its ptrace check mediates are
//! allowed only for the caller itself, else EPERM (a BPF filter sees the pid
//! argument, not whose pid it is, so only 0 passes):
//! - `prlimit64` with pid 0 (glibc's `setrlimit`/`getrlimit` pass 0);
//! - `sched_setaffinity`, `sched_setscheduler`, `sched_setparam`,
//!   `sched_setattr` with pid 0;
//! - `setpriority` and `ioprio_set` for `PRIO_PROCESS`/`IOPRIO_WHO_PROCESS`
//!   0 only (a process group or a user reaches the host's processes);
//! - `perf_event_open` always (system-wide events observe every process).
//!
//! With [`Filter::deny_ipc`] (no IPC namespace of its own), System V IPC
//! (`shmget`, `shmat`, `shmctl`, `shmdt`, `semget`, `semop`, `semtimedop`,
//! `semctl`, `msgget`, `msgsnd`, `msgrcv`, `msgctl`) and POSIX message queues
//! (`mq_open` … `mq_getsetattr`) fail with EPERM: the host's segments would
//! be reachable, and what the child made would outlive it.
//!
//! With `allow_subprocesses: false` (SPEC B.6, W2), also:
//! - `fork`, `vfork` (x86_64 only; aarch64 has neither) fail with EPERM;
//! - `clone` is allowed only when its flags contain `CLONE_THREAD` (a thread
//!   of the same process); otherwise EPERM;
//! - `clone3` fails with ENOSYS: its flags live in user memory, which BPF
//!   cannot inspect, and ENOSYS makes glibc fall back to `clone`.
//!
//! Everything else is allowed. Each syscall number appears in one rule only,
//! so a rule that inspects arguments ends in allow or deny and never falls
//! through to the next rule with an argument in the accumulator. The
//! arguments checked are `int`, `mode_t`, `uid_t` or `gid_t`, which the kernel
//! truncates to 32 bits, so their low word is the whole value.
//!
//! A syscall from any other ABI is killed (`SECCOMP_RET_KILL_PROCESS`): the
//! i386 compat entry (`int 0x80`) on x86_64 reports another audit arch and
//! uses other numbers (fork is 2 there), and the x32 ABI reports the native
//! arch with bit 30 set in the number. The filter was not written for those
//! tables, so it cannot allow them; returning an errno for every syscall
//! would leave a program spinning in undefined states, whereas a kill is
//! immediate and visible (SIGSYS). No ordinary program in a sandbox uses a
//! foreign ABI.
//!
//! The program is assembled by hand rather than with `seccompiler`: that
//! crate compiles one match action per filter (we need EPERM *and* ENOSYS)
//! and does not guard the x32 bit.

mod install;
mod program;
mod rules;

#[cfg(test)]
mod tests;

pub use install::{filter_fd, native_filter_bytes, to_bytes};
#[cfg(target_os = "linux")]
pub use install::{install, install_with_listener};
pub use program::program;

/// The architectures the filter knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    /// The architecture this library was compiled for, if the filter supports it.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }

    /// `AUDIT_ARCH_*` as reported in `seccomp_data.arch`.
    fn audit(self) -> u32 {
        match self {
            Arch::X86_64 => 0xC000_003E,
            Arch::Aarch64 => 0xC000_00B7,
        }
    }
}

/// What one launch's filter enforces on top of the rules every child gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filter {
    /// `allow_subprocesses: false`: threads only.
    pub deny_subprocesses: bool,
    /// The child's uid and gid inside its namespace: the only ids (besides
    /// -1) that `chown` may name.
    pub uid: u32,
    pub gid: u32,
    /// Network `:none` without a network namespace (the Landlock backend):
    /// `socket` fails with EPERM for every family, `AF_UNIX` included,
    /// because Landlock below ABI 9 does not mediate `connect` to a pathname
    /// Unix socket. `socketpair` stays allowed for stream and
    /// sequenced-packet pairs; a datagram pair fails with EPERM, because its
    /// `sendto` may name any socket path of the host (`/dev/log`).
    pub deny_sockets: bool,
    /// `socket(AF_UNIX, ...)` fails with EPERM (other families are allowed):
    /// the Landlock backend under `:isolated` with network `:inherit`, so the
    /// host's pathname sockets (say `/run/docker.sock`) stay out of reach as
    /// they do in Bubblewrap's empty root; a datagram `socketpair` too, as
    /// under `deny_sockets`.
    pub deny_unix_sockets: bool,
    /// The child sees the host's pids (no pid namespace): calls that change
    /// another process are allowed only on the caller itself (pid 0).
    pub host_pids: bool,
    /// The child shares the host's IPC namespace: System V IPC and POSIX
    /// message queues fail with EPERM.
    pub deny_ipc: bool,
    /// Network `:allowlist` without a network namespace (the Landlock
    /// backend): `connect` goes to the supervisor, TCP is the only socket
    /// (see the module docs). Installed with [`install_with_listener`].
    pub intercept_connect: bool,
}

impl Filter {
    /// The filter for a launch whose child runs as `uid`/`gid` inside its
    /// namespace (bwrap's `--uid`/`--gid`); unset ids are the caller's real
    /// ones, which is what bwrap maps them to.
    pub fn for_launch(deny_subprocesses: bool, uid: Option<u32>, gid: Option<u32>) -> Filter {
        Filter {
            deny_subprocesses,
            uid: uid.unwrap_or_else(|| rustix::process::getuid().as_raw()),
            gid: gid.unwrap_or_else(|| rustix::process::getgid().as_raw()),
            deny_sockets: false,
            deny_unix_sockets: false,
            host_pids: false,
            deny_ipc: false,
            intercept_connect: false,
        }
    }

    /// The same filter, its `connect` decided by a supervisor (see
    /// [`Filter::intercept_connect`]).
    pub fn with_connect_intercepted(self) -> Filter {
        Filter {
            intercept_connect: true,
            ..self
        }
    }

    /// The same filter for a child in the host's pid namespace (see
    /// [`Filter::host_pids`]).
    pub fn with_host_pids(self) -> Filter {
        Filter {
            host_pids: true,
            ..self
        }
    }

    /// The same filter, also refusing System V IPC and POSIX message queues
    /// (see [`Filter::deny_ipc`]).
    pub fn with_ipc_denied(self) -> Filter {
        Filter {
            deny_ipc: true,
            ..self
        }
    }

    /// The same filter, also refusing `socket` for `AF_UNIX`.
    pub fn with_unix_sockets_denied(self) -> Filter {
        Filter {
            deny_unix_sockets: true,
            ..self
        }
    }

    /// The same filter, also refusing `socket` (see [`Filter::deny_sockets`]).
    pub fn with_sockets_denied(self) -> Filter {
        Filter {
            deny_sockets: true,
            ..self
        }
    }
}

/// One `struct sock_filter` (linux/filter.h), in native byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}
