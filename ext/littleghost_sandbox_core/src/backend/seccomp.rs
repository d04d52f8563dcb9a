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

use std::io::{Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;

use crate::error::{capability, Result};

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
    /// Unix socket. `socketpair` stays allowed.
    pub deny_sockets: bool,
    /// `socket(AF_UNIX, ...)` fails with EPERM (other families are allowed):
    /// the Landlock backend under `:isolated` with network `:inherit`, so the
    /// host's pathname sockets (say `/run/docker.sock`) stay out of reach as
    /// they do in Bubblewrap's empty root.
    pub deny_unix_sockets: bool,
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

// linux/bpf_common.h and linux/seccomp.h.
const BPF_LD: u16 = 0x00;
const BPF_W: u16 = 0x00;
const BPF_ABS: u16 = 0x20;
const BPF_LD_W_ABS: u16 = BPF_LD | BPF_W | BPF_ABS;
const BPF_ALU_AND_K: u16 = 0x04 | 0x50;
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JMP_JSET_K: u16 = 0x05 | 0x40;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
// struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 * i.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const CLONE_THREAD: u32 = 0x0001_0000;
const AF_UNIX: u32 = 1;
const EPERM: u32 = 1;
const ENOSYS: u32 = 38;
const EOPNOTSUPP: u32 = 95;
// Both architectures use the generic values.
const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_IFMT: u32 = 0o170000;
const S_IFCHR: u32 = 0o020000;
const S_IFBLK: u32 = 0o060000;
const O_CREAT: u32 = 0o100;
/// `__O_TMPFILE`: the bit that makes `O_TMPFILE` differ from `O_DIRECTORY`.
const O_TMPFILE_BIT: u32 = 0o20000000;
/// uid/gid -1: leave unchanged.
const UNCHANGED_ID: u32 = u32::MAX;

/// Offset of the low 32 bits of syscall argument `index`.
fn arg_low(index: u8) -> u32 {
    let base = 16 + 8 * index as u32;
    if cfg!(target_endian = "big") {
        base + 4
    } else {
        base
    }
}

/// Where a conditional jump goes.
#[derive(Clone, Copy)]
enum To {
    Next,
    Allow,
    Deny,
    NoSys,
    NotSupported,
    Kill,
    /// A [`Step::Label`] further on.
    Label(usize),
}

enum Step {
    Load(u32),
    And(u32),
    Jump {
        code: u16,
        k: u32,
        yes: To,
        no: To,
    },
    /// Marks a position; emits nothing.
    Label(usize),
}

/// What a rule checks once the syscall number matched. Argument numbers are
/// 0-based.
#[derive(Clone, Copy)]
enum Check {
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
struct Table {
    keyctl: u32,
    add_key: u32,
    request_key: u32,
    fork: Option<u32>,
    vfork: Option<u32>,
    clone: u32,
    clone3: u32,
    chmod: Option<u32>,
    fchmod: u32,
    fchmodat: u32,
    fchmodat2: u32,
    open: Option<u32>,
    openat: u32,
    openat2: u32,
    creat: Option<u32>,
    mknod: Option<u32>,
    mknodat: u32,
    chown: Option<u32>,
    fchown: u32,
    lchown: Option<u32>,
    fchownat: u32,
    setxattr: u32,
    lsetxattr: u32,
    fsetxattr: u32,
    setxattrat: u32,
    io_uring: [u32; 3],
    socket: u32,
}

fn table(arch: Arch) -> Table {
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
fn rules(arch: Arch, filter: &Filter) -> Vec<(u32, Check)> {
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

/// Appends the steps of one rule. On entry and on the fall-through exit the
/// accumulator holds the syscall number.
fn rule_steps(steps: &mut Vec<Step>, labels: &mut usize, nr: u32, check: Check, filter: &Filter) {
    let mut label = || {
        *labels += 1;
        *labels
    };
    let jump = |code: u16, k: u32, yes: To, no: To| Step::Jump { code, k, yes, no };
    let set_id = S_ISUID | S_ISGID;
    if let Check::Always(errno) = check {
        let verdict = match errno {
            ENOSYS => To::NoSys,
            EOPNOTSUPP => To::NotSupported,
            _ => To::Deny,
        };
        steps.push(jump(BPF_JMP_JEQ_K, nr, verdict, To::Next));
        return;
    }
    let other = label();
    steps.push(jump(BPF_JMP_JEQ_K, nr, To::Next, To::Label(other)));
    match check {
        Check::Always(_) => unreachable!(),
        Check::SetIdMode { mode } => {
            steps.push(Step::Load(arg_low(mode)));
            steps.push(jump(BPF_JMP_JSET_K, set_id, To::Deny, To::Allow));
        }
        Check::CreateSetId { flags, mode } => {
            steps.push(Step::Load(arg_low(flags)));
            steps.push(jump(
                BPF_JMP_JSET_K,
                O_CREAT | O_TMPFILE_BIT,
                To::Next,
                To::Allow,
            ));
            steps.push(Step::Load(arg_low(mode)));
            steps.push(jump(BPF_JMP_JSET_K, set_id, To::Deny, To::Allow));
        }
        Check::Node { mode } => {
            steps.push(Step::Load(arg_low(mode)));
            steps.push(jump(BPF_JMP_JSET_K, set_id, To::Deny, To::Next));
            steps.push(Step::And(S_IFMT));
            steps.push(jump(BPF_JMP_JEQ_K, S_IFCHR, To::Deny, To::Next));
            steps.push(jump(BPF_JMP_JEQ_K, S_IFBLK, To::Deny, To::Allow));
        }
        Check::Owner { uid, gid } => {
            let uid_ok = label();
            steps.push(Step::Load(arg_low(uid)));
            steps.push(jump(
                BPF_JMP_JEQ_K,
                UNCHANGED_ID,
                To::Label(uid_ok),
                To::Next,
            ));
            steps.push(jump(BPF_JMP_JEQ_K, filter.uid, To::Label(uid_ok), To::Deny));
            steps.push(Step::Label(uid_ok));
            steps.push(Step::Load(arg_low(gid)));
            steps.push(jump(BPF_JMP_JEQ_K, UNCHANGED_ID, To::Allow, To::Next));
            steps.push(jump(BPF_JMP_JEQ_K, filter.gid, To::Allow, To::Deny));
        }
        Check::ThreadOnly { flags } => {
            steps.push(Step::Load(arg_low(flags)));
            steps.push(jump(BPF_JMP_JSET_K, CLONE_THREAD, To::Allow, To::Deny));
        }
        Check::UnixDomain { domain } => {
            steps.push(Step::Load(arg_low(domain)));
            steps.push(jump(BPF_JMP_JEQ_K, AF_UNIX, To::Deny, To::Allow));
        }
    }
    steps.push(Step::Label(other));
}

/// The filter program of `filter` for `arch`.
pub fn program(arch: Arch, filter: &Filter) -> Vec<Instruction> {
    let mut steps = vec![
        Step::Load(OFFSET_ARCH),
        Step::Jump {
            code: BPF_JMP_JEQ_K,
            k: arch.audit(),
            yes: To::Next,
            no: To::Kill,
        },
        Step::Load(OFFSET_NR),
    ];
    if arch == Arch::X86_64 {
        steps.push(Step::Jump {
            code: BPF_JMP_JSET_K,
            k: X32_SYSCALL_BIT,
            yes: To::Kill,
            no: To::Next,
        });
    }
    let mut labels = 0;
    for (nr, check) in rules(arch, filter) {
        rule_steps(&mut steps, &mut labels, nr, check, filter);
    }
    // Falling through the last rule reaches the first return: allow.

    // Instruction index of every step (labels take none) and of every label.
    let mut index_of_step = Vec::with_capacity(steps.len());
    let mut label_index = vec![0usize; labels + 1];
    let mut count = 0;
    for step in &steps {
        index_of_step.push(count);
        match step {
            Step::Label(id) => label_index[*id] = count,
            _ => count += 1,
        }
    }
    // The five returns follow the steps, in this order.
    let returns = [
        SECCOMP_RET_ALLOW,
        SECCOMP_RET_ERRNO | EPERM,
        SECCOMP_RET_ERRNO | ENOSYS,
        SECCOMP_RET_ERRNO | EOPNOTSUPP,
        SECCOMP_RET_KILL_PROCESS,
    ];
    let first_return = count;
    let offset = |here: usize, to: To| -> u8 {
        let index = match to {
            To::Next => here + 1,
            To::Allow => first_return,
            To::Deny => first_return + 1,
            To::NoSys => first_return + 2,
            To::NotSupported => first_return + 3,
            To::Kill => first_return + 4,
            To::Label(id) => label_index[id],
        };
        // Jumps are relative to the next instruction and only go forward.
        u8::try_from(index - here - 1).expect("the seccomp program outgrew 8-bit jumps")
    };
    let mut program = Vec::with_capacity(count + returns.len());
    for (position, step) in steps.iter().enumerate() {
        let here = index_of_step[position];
        let instruction = match *step {
            Step::Label(_) => continue,
            Step::Load(at) => Instruction {
                code: BPF_LD_W_ABS,
                jt: 0,
                jf: 0,
                k: at,
            },
            Step::And(mask) => Instruction {
                code: BPF_ALU_AND_K,
                jt: 0,
                jf: 0,
                k: mask,
            },
            Step::Jump { code, k, yes, no } => Instruction {
                code,
                jt: offset(here, yes),
                jf: offset(here, no),
                k,
            },
        };
        program.push(instruction);
    }
    program.extend(returns.iter().map(|&k| Instruction {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k,
    }));
    program
}

/// The program as the bytes of a `struct sock_filter` array, which is what
/// `bwrap --seccomp FD` reads.
pub fn to_bytes(program: &[Instruction]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

/// The native filter's bytes, or CapabilityError where no filter exists for
/// this architecture (so `allow_subprocesses: false` fails closed).
pub fn native_filter_bytes(filter: &Filter) -> Result<Vec<u8>> {
    let arch = Arch::native().ok_or_else(|| {
        capability(format!(
            "the bubblewrap sandbox has no seccomp filter for {}",
            std::env::consts::ARCH
        ))
    })?;
    Ok(to_bytes(&program(arch, filter)))
}

/// Writes the native filter into a fresh memfd, rewound to the start, and
/// returns it. It is close-on-exec: the spawner keeps it open in bwrap only
/// (`SpawnOptions::keep_fds`), so a concurrent spawn never inherits it. Use
/// one per launch: bwrap reads from the shared file offset.
pub fn filter_fd(filter: &Filter) -> Result<OwnedFd> {
    let bytes = native_filter_bytes(filter)?;
    let unavailable = |_| {
        capability("the bubblewrap sandbox cannot prepare its seccomp filter (memfd_create failed)")
    };
    let fd = rustix::fs::memfd_create("littleghost-seccomp", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(unavailable)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&bytes)
        .and_then(|_| file.seek(SeekFrom::Start(0)).map(|_| ()))
        .map_err(|_| capability("the bubblewrap sandbox cannot prepare its seccomp filter"))?;
    Ok(OwnedFd::from(file))
}

/// Installs the native filter on the calling thread (and what it execs).
/// The caller must already have set `no_new_privs` (the Landlock backend's
/// `restrict_self` does). Used by the helper's `supervise` mode, in the
/// child it is about to exec, never in the Ruby process.
#[cfg(target_os = "linux")]
pub fn install(filter: &Filter) -> Result<()> {
    let arch = Arch::native().ok_or_else(|| {
        capability(format!(
            "no seccomp filter exists for {}",
            std::env::consts::ARCH
        ))
    })?;
    let mut filters: Vec<libc::sock_filter> = program(arch, filter)
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let fprog = libc::sock_fprog {
        len: u16::try_from(filters.len()).expect("the seccomp program fits in u16"),
        filter: filters.as_mut_ptr(),
    };
    // SAFETY: `fprog` points at `filters`, which outlives the call; the
    // kernel copies the program and keeps no pointer into our memory.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &fprog as *const libc::sock_fprog,
        )
    };
    if result != 0 {
        return Err(capability(format!(
            "cannot install the seccomp filter: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// Set in a re-executed copy of this test binary: the filter is installed
    /// in that fresh process, never in the multi-threaded test runner itself.
    const CHILD_MODE: &str = "LITTLEGHOST_SECCOMP_CHILD";

    fn strict() -> Filter {
        Filter::for_launch(true, None, None)
    }

    fn install_native_filter() {
        install_filter(true);
    }

    fn install_filter(deny_subprocesses: bool) {
        let filter = Filter::for_launch(deny_subprocesses, None, None);
        let program = program(Arch::native().expect("supported arch"), &filter);
        let filters: Vec<libc::sock_filter> = program
            .iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        let fprog = libc::sock_fprog {
            len: filters.len() as u16,
            filter: filters.as_ptr() as *mut _,
        };
        unsafe {
            assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
            assert_eq!(
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &fprog as *const _
                ),
                0,
                "seccomp: {}",
                std::io::Error::last_os_error()
            );
        }
    }

    fn errno_name(result: i64) -> String {
        if result >= 0 {
            return format!("ok({result})");
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EPERM) => "EPERM".into(),
            Some(libc::ENOSYS) => "ENOSYS".into(),
            Some(libc::EOPNOTSUPP) => "EOPNOTSUPP".into(),
            Some(other) => format!("errno {other}"),
            None => "?".into(),
        }
    }

    /// Runs `test` of this binary in child mode `mode` and returns its output.
    fn run_child(test: &str, mode: &str) -> std::process::Output {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(CHILD_MODE, mode)
            .output()
            .unwrap()
    }

    #[test]
    fn every_filter_denies_keyrings_and_only_the_strict_one_denies_processes() {
        const NAME: &str = "backend::seccomp::tests::every_filter_denies_keyrings_and_only_the_strict_one_denies_processes";
        if let Ok(mode) = std::env::var(CHILD_MODE) {
            if mode == "keyring-strict" || mode == "keyring-lenient" {
                install_filter(mode == "keyring-strict");
                // KEYCTL_GET_KEYRING_ID (0) of the session keyring (-3): succeeds without the filter.
                let keyctl = unsafe { libc::syscall(libc::SYS_keyctl, 0, -3i64, 0) };
                println!("keyctl: {}", errno_name(keyctl));
                let add_key = unsafe {
                    libc::syscall(
                        libc::SYS_add_key,
                        c"user".as_ptr(),
                        c"lg".as_ptr(),
                        c"x".as_ptr(),
                        1usize,
                        -3i64,
                    )
                };
                println!("add_key: {}", errno_name(add_key));
                let spawned = Command::new("/bin/true").status();
                println!("spawn: {}", if spawned.is_ok() { "ok" } else { "refused" });
            }
            return;
        }
        for (mode, spawn) in [
            ("keyring-strict", "spawn: refused"),
            ("keyring-lenient", "spawn: ok"),
        ] {
            let out = run_child(NAME, mode);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{mode}: {stdout}");
            assert!(stdout.contains("keyctl: EPERM"), "{mode}: {stdout}");
            assert!(stdout.contains("add_key: EPERM"), "{mode}: {stdout}");
            assert!(stdout.contains(spawn), "{mode}: {stdout}");
        }
    }

    #[test]
    fn a_filtered_process_cannot_fork_but_can_start_threads() {
        const NAME: &str =
            "backend::seccomp::tests::a_filtered_process_cannot_fork_but_can_start_threads";
        if std::env::var(CHILD_MODE).as_deref() == Ok("fork") {
            install_native_filter();
            // glibc's fork() is clone(SIGCHLD) without CLONE_THREAD.
            let forked = unsafe { libc::fork() };
            if forked == 0 {
                unsafe { libc::_exit(0) };
            }
            println!("fork: {}", errno_name(forked as i64));
            #[cfg(target_arch = "x86_64")]
            {
                println!(
                    "sys_fork: {}",
                    errno_name(unsafe { libc::syscall(libc::SYS_fork) })
                );
                println!(
                    "sys_vfork: {}",
                    errno_name(unsafe { libc::syscall(libc::SYS_vfork) })
                );
            }
            // Without the filter a null clone_args gives EFAULT.
            let clone3 =
                unsafe { libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 88usize) };
            println!("clone3: {}", errno_name(clone3));
            let spawned = Command::new("/bin/true").status();
            println!("spawn: {}", if spawned.is_ok() { "ok" } else { "refused" });
            let joined = std::thread::spawn(|| 6 * 7).join().unwrap();
            println!("thread: {joined}");
            return;
        }

        let out = run_child(NAME, "fork");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("fork: EPERM"), "{stdout}");
        #[cfg(target_arch = "x86_64")]
        {
            assert!(stdout.contains("sys_fork: EPERM"), "{stdout}");
            assert!(stdout.contains("sys_vfork: EPERM"), "{stdout}");
        }
        assert!(stdout.contains("clone3: ENOSYS"), "{stdout}");
        assert!(stdout.contains("spawn: refused"), "{stdout}");
        assert!(stdout.contains("thread: 42"), "{stdout}");
    }

    #[test]
    fn without_the_filter_the_same_probes_succeed() {
        // The control for the test above: it would pass for the wrong reason
        // if fork or spawning failed here anyway.
        let forked = unsafe { libc::fork() };
        if forked == 0 {
            unsafe { libc::_exit(0) };
        }
        assert!(forked > 0);
        let mut status = 0;
        unsafe { libc::waitpid(forked, &mut status, 0) };
        assert!(Command::new("/bin/true").status().unwrap().success());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn an_x32_syscall_kills_the_filtered_process() {
        const NAME: &str = "backend::seccomp::tests::an_x32_syscall_kills_the_filtered_process";
        if std::env::var(CHILD_MODE).as_deref() == Ok("x32") {
            install_native_filter();
            // x32 fork: the native arch with the x32 bit set in the number.
            unsafe { libc::syscall(libc::SYS_fork | 0x4000_0000) };
            println!("survived");
            return;
        }
        let out = run_child(NAME, "x32");
        assert_eq!(out.status.signal(), Some(libc::SIGSYS), "{:?}", out);
        assert!(!String::from_utf8_lossy(&out.stdout).contains("survived"));
    }

    #[test]
    fn the_program_checks_the_arch_first_and_ends_in_five_returns() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let p = program(arch, &strict());
            assert_eq!(
                p[0],
                Instruction {
                    code: BPF_LD_W_ABS,
                    jt: 0,
                    jf: 0,
                    k: OFFSET_ARCH
                }
            );
            assert_eq!(p[1].code, BPF_JMP_JEQ_K);
            assert_eq!(p[1].k, arch.audit());
            // The mismatch branch lands on the kill return, the last instruction.
            assert_eq!(2 + p[1].jf as usize, p.len() - 1);
            let tail: Vec<u32> = p[p.len() - 5..].iter().map(|i| i.k).collect();
            assert_eq!(
                tail,
                vec![
                    SECCOMP_RET_ALLOW,
                    SECCOMP_RET_ERRNO | 1,
                    SECCOMP_RET_ERRNO | 38,
                    SECCOMP_RET_ERRNO | 95,
                    SECCOMP_RET_KILL_PROCESS
                ]
            );
            // Every jump stays inside the program.
            for (here, insn) in p.iter().enumerate() {
                if insn.code & 0x07 == 0x05 {
                    assert!(here + 1 + (insn.jt as usize) < p.len());
                    assert!(here + 1 + (insn.jf as usize) < p.len());
                }
            }
        }
        // aarch64 has no fork/vfork and no x32 ABI: two fewer checks, one
        // fewer guard; nor open (5), creat (3), chmod (3), mknod (6), chown
        // and lchown (2 x 7).
        assert_eq!(
            program(Arch::X86_64, &strict()).len(),
            program(Arch::Aarch64, &strict()).len() + 3 + 5 + 3 + 3 + 6 + 14
        );
    }

    #[test]
    fn the_fd_holds_the_sock_filter_bytes_from_offset_zero() {
        let fd = filter_fd(&strict()).unwrap();
        let mut file = std::fs::File::from(fd);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes, native_filter_bytes(&strict()).unwrap());
        assert_eq!(bytes.len() % 8, 0);
        let flags = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }
    #[test]
    fn the_native_table_matches_the_c_library() {
        let t = table(Arch::native().expect("supported arch"));
        let c = |nr: libc::c_long| nr as u32;
        assert_eq!(
            [t.keyctl, t.add_key, t.request_key],
            [
                c(libc::SYS_keyctl),
                c(libc::SYS_add_key),
                c(libc::SYS_request_key)
            ]
        );
        assert_eq!(
            [t.clone, t.clone3],
            [c(libc::SYS_clone), c(libc::SYS_clone3)]
        );
        assert_eq!(
            [t.fchmod, t.fchmodat, t.fchmodat2],
            [
                c(libc::SYS_fchmod),
                c(libc::SYS_fchmodat),
                c(libc::SYS_fchmodat2)
            ]
        );
        assert_eq!(
            [t.openat, t.openat2],
            [c(libc::SYS_openat), c(libc::SYS_openat2)]
        );
        assert_eq!(t.mknodat, c(libc::SYS_mknodat));
        assert_eq!(
            [t.fchown, t.fchownat],
            [c(libc::SYS_fchown), c(libc::SYS_fchownat)]
        );
        assert_eq!(
            [t.setxattr, t.lsetxattr, t.fsetxattr],
            [
                c(libc::SYS_setxattr),
                c(libc::SYS_lsetxattr),
                c(libc::SYS_fsetxattr)
            ]
        );
        assert_eq!(
            t.io_uring,
            [
                c(libc::SYS_io_uring_setup),
                c(libc::SYS_io_uring_enter),
                c(libc::SYS_io_uring_register)
            ]
        );
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(
                [t.fork, t.vfork, t.chmod, t.open, t.creat, t.mknod, t.chown, t.lchown],
                [
                    libc::SYS_fork,
                    libc::SYS_vfork,
                    libc::SYS_chmod,
                    libc::SYS_open,
                    libc::SYS_creat,
                    libc::SYS_mknod,
                    libc::SYS_chown,
                    libc::SYS_lchown
                ]
                .map(|nr| Some(c(nr)))
            );
        }
    }

    /// Outcome of one raw syscall, as "ok", "EPERM", "ENOSYS" or "errno N".
    fn outcome(result: i64) -> String {
        if result >= 0 {
            "ok".into()
        } else {
            errno_name(result)
        }
    }

    #[test]
    fn a_filtered_process_cannot_plant_set_id_files_devices_foreign_owners_or_xattrs() {
        const NAME: &str = "backend::seccomp::tests::a_filtered_process_cannot_plant_set_id_files_devices_foreign_owners_or_xattrs";
        if let Ok(dir) = std::env::var(CHILD_MODE) {
            if !dir.starts_with('/') {
                return;
            }
            // The lenient filter: the planting rules hold for every child.
            install_filter(false);
            let path = |name: &str| std::ffi::CString::new(format!("{dir}/{name}")).unwrap();
            let file = path("file");
            let at = libc::AT_FDCWD as i64;
            let uid = unsafe { libc::getuid() } as i64;
            let gid = unsafe { libc::getgid() } as i64;
            let sys = |nr: libc::c_long, args: [i64; 4]| -> String {
                outcome(unsafe {
                    libc::syscall(nr, args[0], args[1], args[2], args[3], 0i64, 0i64)
                })
            };
            let p = |c: &std::ffi::CString| c.as_ptr() as i64;
            let creat = libc::O_CREAT as i64 | libc::O_WRONLY as i64;
            let mut lines = vec![
                (
                    "openat-plain",
                    sys(libc::SYS_openat, [at, p(&file), creat, 0o755]),
                ),
                (
                    "openat-suid",
                    sys(libc::SYS_openat, [at, p(&path("s1")), creat, 0o4755]),
                ),
                (
                    "openat-sgid",
                    sys(libc::SYS_openat, [at, p(&path("s2")), creat, 0o2755]),
                ),
                (
                    "openat-nocreat-suid",
                    sys(
                        libc::SYS_openat,
                        [at, p(&file), libc::O_RDONLY as i64, 0o4755],
                    ),
                ),
                (
                    "openat-tmpfile-suid",
                    sys(
                        libc::SYS_openat,
                        [
                            at,
                            p(&std::ffi::CString::new(dir.clone()).unwrap()),
                            libc::O_TMPFILE as i64 | libc::O_RDWR as i64,
                            0o4755,
                        ],
                    ),
                ),
                (
                    "openat2",
                    sys(libc::SYS_openat2, [at, p(&path("o2")), 0, 0]),
                ),
                (
                    "fchmodat-plain",
                    sys(libc::SYS_fchmodat, [at, p(&file), 0o700, 0]),
                ),
                (
                    "fchmodat-suid",
                    sys(libc::SYS_fchmodat, [at, p(&file), 0o4755, 0]),
                ),
                (
                    "fchmodat-sgid",
                    sys(libc::SYS_fchmodat, [at, p(&file), 0o2755, 0]),
                ),
                (
                    "fchmodat-sgid-dir",
                    sys(
                        libc::SYS_fchmodat,
                        [
                            at,
                            p(&std::ffi::CString::new(dir.clone()).unwrap()),
                            0o2775,
                            0,
                        ],
                    ),
                ),
                (
                    "fchmodat2-suid",
                    sys(libc::SYS_fchmodat2, [at, p(&file), 0o4755, 0]),
                ),
                (
                    "mknodat-fifo",
                    sys(
                        libc::SYS_mknodat,
                        [at, p(&path("fifo")), (libc::S_IFIFO | 0o644) as i64, 0],
                    ),
                ),
                (
                    "mknodat-char",
                    sys(
                        libc::SYS_mknodat,
                        [
                            at,
                            p(&path("null")),
                            (libc::S_IFCHR | 0o666) as i64,
                            libc::makedev(1, 3) as i64,
                        ],
                    ),
                ),
                (
                    "mknodat-block",
                    sys(
                        libc::SYS_mknodat,
                        [
                            at,
                            p(&path("blk")),
                            (libc::S_IFBLK | 0o666) as i64,
                            libc::makedev(7, 0) as i64,
                        ],
                    ),
                ),
                (
                    "mknodat-suid",
                    sys(
                        libc::SYS_mknodat,
                        [at, p(&path("reg")), (libc::S_IFREG | 0o4755) as i64, 0],
                    ),
                ),
                (
                    "fchownat-own",
                    sys(libc::SYS_fchownat, [at, p(&file), uid, gid]),
                ),
                (
                    "fchownat-unchanged",
                    sys(libc::SYS_fchownat, [at, p(&file), -1, -1]),
                ),
                (
                    "fchownat-other-uid",
                    sys(libc::SYS_fchownat, [at, p(&file), 4242, -1]),
                ),
                (
                    "fchownat-other-gid",
                    sys(libc::SYS_fchownat, [at, p(&file), -1, 4242]),
                ),
                (
                    "setxattr-user",
                    outcome(unsafe {
                        libc::setxattr(
                            file.as_ptr(),
                            c"user.lg".as_ptr(),
                            c"x".as_ptr().cast(),
                            1,
                            0,
                        )
                    } as i64),
                ),
                (
                    "setxattr-trusted",
                    outcome(unsafe {
                        libc::setxattr(
                            file.as_ptr(),
                            c"trusted.lg".as_ptr(),
                            c"x".as_ptr().cast(),
                            1,
                            0,
                        )
                    } as i64),
                ),
                (
                    "io_uring_setup",
                    sys(libc::SYS_io_uring_setup, [8, 0, 0, 0]),
                ),
            ];
            let fd = unsafe { libc::open(file.as_ptr(), libc::O_RDONLY) } as i64;
            lines.push(("fchmod-suid", sys(libc::SYS_fchmod, [fd, 0o4755, 0, 0])));
            lines.push(("fchown-other", sys(libc::SYS_fchown, [fd, 4242, 4242, 0])));
            #[cfg(target_arch = "x86_64")]
            {
                lines.push((
                    "open-suid",
                    sys(libc::SYS_open, [p(&path("s3")), creat, 0o6755, 0]),
                ));
                lines.push((
                    "creat-suid",
                    sys(libc::SYS_creat, [p(&path("s4")), 0o4755, 0, 0]),
                ));
                lines.push(("chmod-suid", sys(libc::SYS_chmod, [p(&file), 0o4755, 0, 0])));
                lines.push(("chmod-plain", sys(libc::SYS_chmod, [p(&file), 0o755, 0, 0])));
                lines.push((
                    "mknod-char",
                    sys(
                        libc::SYS_mknod,
                        [
                            p(&path("null2")),
                            (libc::S_IFCHR | 0o666) as i64,
                            libc::makedev(1, 3) as i64,
                            0,
                        ],
                    ),
                ));
                lines.push(("chown-other", sys(libc::SYS_chown, [p(&file), 4242, -1, 0])));
                lines.push((
                    "lchown-other",
                    sys(libc::SYS_lchown, [p(&file), -1, 4242, 0]),
                ));
            }
            for (name, result) in lines {
                println!("{name}: {result}");
            }
            return;
        }

        let dir = tempfile::tempdir().unwrap();
        let out = run_child(NAME, dir.path().to_str().unwrap());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut expected = vec![
            ("openat-plain", "ok"),
            ("openat-suid", "EPERM"),
            ("openat-sgid", "EPERM"),
            ("openat-nocreat-suid", "ok"),
            ("openat-tmpfile-suid", "EPERM"),
            ("openat2", "ENOSYS"),
            ("fchmodat-plain", "ok"),
            ("fchmodat-suid", "EPERM"),
            ("fchmodat-sgid", "EPERM"),
            ("fchmodat-sgid-dir", "EPERM"),
            ("fchmodat2-suid", "EPERM"),
            ("mknodat-fifo", "ok"),
            ("mknodat-char", "EPERM"),
            ("mknodat-block", "EPERM"),
            ("mknodat-suid", "EPERM"),
            ("fchownat-own", "ok"),
            ("fchownat-unchanged", "ok"),
            ("fchownat-other-uid", "EPERM"),
            ("fchownat-other-gid", "EPERM"),
            ("setxattr-user", "EOPNOTSUPP"),
            ("setxattr-trusted", "EOPNOTSUPP"),
            ("io_uring_setup", "EPERM"),
            ("fchmod-suid", "EPERM"),
            ("fchown-other", "EPERM"),
        ];
        #[cfg(target_arch = "x86_64")]
        expected.extend([
            ("open-suid", "EPERM"),
            ("creat-suid", "EPERM"),
            ("chmod-suid", "EPERM"),
            ("chmod-plain", "ok"),
            ("mknod-char", "EPERM"),
            ("chown-other", "EPERM"),
            ("lchown-other", "EPERM"),
        ]);
        for (name, result) in expected {
            assert!(
                stdout.contains(&format!("{name}: {result}\n")),
                "{name}: {result}\n{stdout}"
            );
        }
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let meta = entry.unwrap().metadata().unwrap();
            assert_eq!(meta.permissions().mode() & 0o6000, 0, "{meta:?}");
            assert!(meta.is_file() || meta.file_type().is_fifo(), "{meta:?}");
        }
        let meta = std::fs::metadata(dir.path()).unwrap();
        assert_eq!(meta.permissions().mode() & 0o6000, 0);
    }

    #[test]
    fn chown_may_name_only_the_launch_ids() {
        let filter = Filter::for_launch(false, Some(1000), Some(100));
        assert_eq!((filter.uid, filter.gid), (1000, 100));
        let host = Filter::for_launch(false, None, None);
        assert_eq!(host.uid, unsafe { libc::getuid() });
        assert_eq!(host.gid, unsafe { libc::getgid() });
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let p = program(arch, &filter);
            assert!(p.iter().any(|i| i.code == BPF_JMP_JEQ_K && i.k == 1000));
            assert!(p.iter().any(|i| i.code == BPF_JMP_JEQ_K && i.k == 100));
        }
    }
}
