//! Which syscalls the filter inspects on each architecture, and what it
//! checks once the number matched (the rules of the module docs).

use super::{Arch, Filter};

// Values the checks compare against (linux/sched.h, socket.h, errno.h).
pub(super) const CLONE_THREAD: u32 = 0x0001_0000;
pub(super) const CLONE_NEWUSER: u32 = 0x1000_0000;
/// `setpriority`'s `which` for one process (sys/resource.h).
pub(super) const PRIO_PROCESS: u32 = 0;
/// `ioprio_set`'s `which` for one process (linux/ioprio.h).
pub(super) const IOPRIO_WHO_PROCESS: u32 = 1;
pub(super) const AF_UNIX: u32 = 1;
pub(super) const AF_INET: u32 = 2;
pub(super) const AF_INET6: u32 = 10;
/// A socket type's low bits (`SOCK_TYPE_MASK`): the flags `SOCK_NONBLOCK`
/// and `SOCK_CLOEXEC` sit above them.
pub(super) const SOCK_TYPE_MASK: u32 = 0xf;
pub(super) const SOCK_STREAM: u32 = 1;
pub(super) const SOCK_SEQPACKET: u32 = 5;
pub(super) const IPPROTO_TCP: u32 = 6;
/// `sendto`/`sendmsg` flag that connects an unconnected TCP socket (TCP Fast Open).
pub(super) const MSG_FASTOPEN: u32 = 0x2000_0000;
pub(super) const EPERM: u32 = 1;
pub(super) const ENOSYS: u32 = 38;
pub(super) const EOPNOTSUPP: u32 = 95;
// Both architectures use the generic values.
pub(super) const S_ISUID: u32 = 0o4000;
pub(super) const S_ISGID: u32 = 0o2000;
pub(super) const S_IFMT: u32 = 0o170000;
pub(super) const S_IFCHR: u32 = 0o020000;
pub(super) const S_IFBLK: u32 = 0o060000;
pub(super) const O_CREAT: u32 = 0o100;
/// `__O_TMPFILE`: the bit that makes `O_TMPFILE` differ from `O_DIRECTORY`.
pub(super) const O_TMPFILE_BIT: u32 = 0o20000000;
/// uid/gid -1: leave unchanged.
pub(super) const UNCHANGED_ID: u32 = u32::MAX;

/// What a rule checks once the syscall number matched. Argument numbers are
/// 0-based.
#[derive(Clone, Copy)]
pub(super) enum Check {
    /// Every call fails with this errno.
    Always(u32),
    /// EPERM when the mode has a set-id bit.
    SetIdMode { mode: u8 },
    /// EPERM when the call creates (O_CREAT, O_TMPFILE) with a set-id mode.
    CreateSetId { flags: u8, mode: u8 },
    /// EPERM for a set-id mode or a character or block device.
    Node { mode: u8 },
    /// EPERM unless each id is -1 or the child's own.
    Owner { uid: u8, gid: u8 },
    /// Allowed only with CLONE_THREAD in the flags.
    ThreadOnly { flags: u8 },
    /// EPERM when the argument (a socket domain) is `AF_UNIX`.
    UnixDomain { domain: u8 },
    /// EPERM when the flags contain `CLONE_NEWUSER`.
    NoNewUser { flags: u8 },
    /// Allowed only when the argument (a pid) is 0: the caller itself.
    OwnPid { pid: u8 },
    /// Allowed only when `which` is `own` (one process) and `who` is 0 (the
    /// caller itself).
    OwnTarget { which: u8, who: u8, own: u32 },
    /// The supervisor decides (`SECCOMP_RET_USER_NOTIF`).
    Notify,
    /// Allowed only for a TCP socket (`AF_INET`/`AF_INET6`, `SOCK_STREAM`,
    /// protocol 0 or `IPPROTO_TCP`); else EPERM.
    TcpOnly { domain: u8, kind: u8, protocol: u8 },
    /// Allowed only for `SOCK_STREAM` or `SOCK_SEQPACKET`, whose sends
    /// ignore or refuse an address; else EPERM.
    StreamPair { kind: u8 },
    /// EPERM when the flags contain `MSG_FASTOPEN`.
    NoFastOpen { flags: u8 },
}

/// The syscall numbers of one architecture; None where it has no such call.
pub(super) struct Table {
    pub(super) keyctl: u32,
    pub(super) add_key: u32,
    pub(super) request_key: u32,
    pub(super) fork: Option<u32>,
    pub(super) vfork: Option<u32>,
    pub(super) clone: u32,
    pub(super) clone3: u32,
    pub(super) chmod: Option<u32>,
    pub(super) fchmod: u32,
    pub(super) fchmodat: u32,
    pub(super) fchmodat2: u32,
    pub(super) open: Option<u32>,
    pub(super) openat: u32,
    pub(super) openat2: u32,
    pub(super) creat: Option<u32>,
    pub(super) mknod: Option<u32>,
    pub(super) mknodat: u32,
    pub(super) chown: Option<u32>,
    pub(super) fchown: u32,
    pub(super) lchown: Option<u32>,
    pub(super) fchownat: u32,
    pub(super) setxattr: u32,
    pub(super) lsetxattr: u32,
    pub(super) fsetxattr: u32,
    pub(super) setxattrat: u32,
    pub(super) io_uring: [u32; 3],
    pub(super) socket: u32,
    pub(super) socketpair: u32,
    pub(super) connect: u32,
    pub(super) listen: u32,
    /// `sendto`, `sendmsg`, `sendmmsg`, with the index of their flags argument.
    pub(super) send: [(u32, u8); 3],
    pub(super) unshare: u32,
    pub(super) prlimit64: u32,
    pub(super) setpriority: u32,
    pub(super) ioprio_set: u32,
    /// `sched_setaffinity`, `sched_setscheduler`, `sched_setparam`,
    /// `sched_setattr`: the pid is argument 0 of each.
    pub(super) sched_set: [u32; 4],
    pub(super) perf_event_open: u32,
    /// System V IPC (`shm*`, `sem*`, `msg*`) and POSIX message queues (`mq_*`).
    pub(super) ipc: [u32; 18],
}

pub(super) fn table(arch: Arch) -> Table {
    match arch {
        Arch::X86_64 => Table {
            keyctl: 250,
            add_key: 248,
            request_key: 249,
            fork: Some(57),
            vfork: Some(58),
            clone: 56,
            clone3: 435,
            chmod: Some(90),
            fchmod: 91,
            fchmodat: 268,
            fchmodat2: 452,
            open: Some(2),
            openat: 257,
            openat2: 437,
            creat: Some(85),
            mknod: Some(133),
            mknodat: 259,
            chown: Some(92),
            fchown: 93,
            lchown: Some(94),
            fchownat: 260,
            setxattr: 188,
            lsetxattr: 189,
            fsetxattr: 190,
            setxattrat: 463,
            io_uring: [425, 426, 427],
            socket: 41,
            socketpair: 53,
            connect: 42,
            listen: 50,
            send: [(44, 3), (46, 2), (307, 3)],
            unshare: 272,
            prlimit64: 302,
            setpriority: 141,
            ioprio_set: 251,
            sched_set: [203, 144, 142, 314],
            perf_event_open: 298,
            ipc: [
                29, 30, 31, 67, // shmget shmat shmctl shmdt
                64, 65, 66, 220, // semget semop semctl semtimedop
                68, 69, 70, 71, // msgget msgsnd msgrcv msgctl
                240, 241, 242, 243, 244, 245, // mq_open .. mq_getsetattr
            ],
        },
        // The generic table (asm-generic/unistd.h): no legacy path calls.
        Arch::Aarch64 => Table {
            keyctl: 219,
            add_key: 217,
            request_key: 218,
            fork: None,
            vfork: None,
            clone: 220,
            clone3: 435,
            chmod: None,
            fchmod: 52,
            fchmodat: 53,
            fchmodat2: 452,
            open: None,
            openat: 56,
            openat2: 437,
            creat: None,
            mknod: None,
            mknodat: 33,
            chown: None,
            fchown: 55,
            lchown: None,
            fchownat: 54,
            setxattr: 5,
            lsetxattr: 6,
            fsetxattr: 7,
            setxattrat: 463,
            io_uring: [425, 426, 427],
            socket: 198,
            socketpair: 199,
            connect: 203,
            listen: 201,
            send: [(206, 3), (211, 2), (269, 3)],
            unshare: 97,
            prlimit64: 261,
            setpriority: 140,
            ioprio_set: 30,
            sched_set: [122, 119, 118, 274],
            perf_event_open: 241,
            // mq_open .. mq_getsetattr, then msg*, sem*, shm*: one run.
            ipc: [
                180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195,
                196, 197,
            ],
        },
    }
}

/// The rules of `filter` on `arch`, as (syscall number, check).
pub(super) fn rules(arch: Arch, filter: &Filter) -> Vec<(u32, Check)> {
    let t = table(arch);
    let mut rules: Vec<(Option<u32>, Check)> = vec![
        // The hot path first: every file open passes here.
        (Some(t.openat), Check::CreateSetId { flags: 2, mode: 3 }),
        (t.open, Check::CreateSetId { flags: 1, mode: 2 }),
        (Some(t.openat2), Check::Always(ENOSYS)),
        (t.creat, Check::SetIdMode { mode: 1 }),
        (t.chmod, Check::SetIdMode { mode: 1 }),
        (Some(t.fchmod), Check::SetIdMode { mode: 1 }),
        (Some(t.fchmodat), Check::SetIdMode { mode: 2 }),
        (Some(t.fchmodat2), Check::SetIdMode { mode: 2 }),
        (t.mknod, Check::Node { mode: 1 }),
        (Some(t.mknodat), Check::Node { mode: 2 }),
        (t.chown, Check::Owner { uid: 1, gid: 2 }),
        (Some(t.fchown), Check::Owner { uid: 1, gid: 2 }),
        (t.lchown, Check::Owner { uid: 1, gid: 2 }),
        (Some(t.fchownat), Check::Owner { uid: 2, gid: 3 }),
    ];
    for nr in [t.setxattr, t.lsetxattr, t.fsetxattr, t.setxattrat] {
        rules.push((Some(nr), Check::Always(EOPNOTSUPP)));
    }
    for nr in t
        .io_uring
        .into_iter()
        .chain([t.keyctl, t.add_key, t.request_key])
    {
        rules.push((Some(nr), Check::Always(EPERM)));
    }
    // No new user namespace, whose capabilities would reopen what dropping
    // them closed (chroot, mounts of its own): clone3's flags live in user
    // memory, so it fails with ENOSYS and libc falls back to clone.
    rules.push((Some(t.clone3), Check::Always(ENOSYS)));
    rules.push((Some(t.unshare), Check::NoNewUser { flags: 0 }));
    if filter.deny_subprocesses {
        rules.push((t.fork, Check::Always(EPERM)));
        rules.push((t.vfork, Check::Always(EPERM)));
        rules.push((Some(t.clone), Check::ThreadOnly { flags: 0 }));
    } else {
        rules.push((Some(t.clone), Check::NoNewUser { flags: 0 }));
    }
    if filter.host_pids {
        // Calls that change another process and that neither Landlock's
        // scoping nor its ptrace check mediates: only the caller itself.
        rules.push((Some(t.prlimit64), Check::OwnPid { pid: 0 }));
        for nr in t.sched_set {
            rules.push((Some(nr), Check::OwnPid { pid: 0 }));
        }
        rules.push((
            Some(t.setpriority),
            Check::OwnTarget {
                which: 0,
                who: 1,
                own: PRIO_PROCESS,
            },
        ));
        rules.push((
            Some(t.ioprio_set),
            Check::OwnTarget {
                which: 0,
                who: 1,
                own: IOPRIO_WHO_PROCESS,
            },
        ));
        // System-wide (pid -1) events observe every process on a CPU.
        rules.push((Some(t.perf_event_open), Check::Always(EPERM)));
    }
    if filter.deny_ipc {
        for nr in t.ipc {
            rules.push((Some(nr), Check::Always(EPERM)));
        }
    }
    if filter.intercept_connect {
        // A connection only through the supervisor: TCP sockets alone, their
        // `connect` decided by it, no Fast Open (a `sendto` that connects),
        // no listener (`listen` binds a port of its own), no datagram pair
        // (a `sendto` naming a host's socket path).
        rules.push((
            Some(t.socket),
            Check::TcpOnly {
                domain: 0,
                kind: 1,
                protocol: 2,
            },
        ));
        rules.push((Some(t.socketpair), Check::StreamPair { kind: 1 }));
        rules.push((Some(t.connect), Check::Notify));
        rules.push((Some(t.listen), Check::Always(EPERM)));
        for (nr, flags) in t.send {
            rules.push((Some(nr), Check::NoFastOpen { flags }));
        }
    } else if filter.deny_sockets {
        rules.push((Some(t.socket), Check::Always(EPERM)));
        rules.push((Some(t.socketpair), Check::StreamPair { kind: 1 }));
    } else if filter.deny_unix_sockets {
        rules.push((Some(t.socket), Check::UnixDomain { domain: 0 }));
        rules.push((Some(t.socketpair), Check::StreamPair { kind: 1 }));
    }
    rules
        .into_iter()
        .filter_map(|(nr, check)| nr.map(|nr| (nr, check)))
        .collect()
}
