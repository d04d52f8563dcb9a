//! Which syscalls the filter inspects on each architecture, and what it
//! checks once the number matched (the rules of the module docs).

use super::{Arch, Filter};

// Values the checks compare against (linux/sched.h, socket.h, errno.h).
pub(super) const CLONE_THREAD: u32 = 0x0001_0000;
pub(super) const AF_UNIX: u32 = 1;
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
    if filter.deny_subprocesses {
        rules.push((t.fork, Check::Always(EPERM)));
        rules.push((t.vfork, Check::Always(EPERM)));
        rules.push((Some(t.clone3), Check::Always(ENOSYS)));
        rules.push((Some(t.clone), Check::ThreadOnly { flags: 0 }));
    }
    if filter.deny_sockets {
        rules.push((Some(t.socket), Check::Always(EPERM)));
    } else if filter.deny_unix_sockets {
        rules.push((Some(t.socket), Check::UnixDomain { domain: 0 }));
    }
    rules
        .into_iter()
        .filter_map(|(nr, check)| nr.map(|nr| (nr, check)))
        .collect()
}
