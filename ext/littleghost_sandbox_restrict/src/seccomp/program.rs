//! The BPF program: one rule's steps, then labels resolved into forward
//! jumps and the five returns appended.

use super::rules::{
    rules, Check, AF_INET, AF_INET6, AF_UNIX, CLONE_NEWUSER, CLONE_THREAD, ENOSYS, EOPNOTSUPP,
    EPERM, IPPROTO_TCP, MSG_FASTOPEN, O_CREAT, O_TMPFILE_BIT, SOCK_SEQPACKET, SOCK_STREAM,
    SOCK_TYPE_MASK, S_IFBLK, S_IFCHR, S_IFMT, S_ISGID, S_ISUID, UNCHANGED_ID,
};
use super::{Arch, Filter, Instruction};

// linux/bpf_common.h and linux/seccomp.h.
pub(super) const BPF_LD: u16 = 0x00;
pub(super) const BPF_W: u16 = 0x00;
pub(super) const BPF_ABS: u16 = 0x20;
pub(super) const BPF_LD_W_ABS: u16 = BPF_LD | BPF_W | BPF_ABS;
pub(super) const BPF_ALU_AND_K: u16 = 0x04 | 0x50;
pub(super) const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
pub(super) const BPF_JMP_JSET_K: u16 = 0x05 | 0x40;
pub(super) const BPF_RET_K: u16 = 0x06;
pub(super) const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub(super) const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
pub(super) const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
pub(super) const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
// struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 * i.
pub(super) const OFFSET_NR: u32 = 0;
pub(super) const OFFSET_ARCH: u32 = 4;
pub(super) const X32_SYSCALL_BIT: u32 = 0x4000_0000;

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
    Notify,
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

/// Appends the steps of one rule. On entry and on the fall-through exit the
/// accumulator holds the syscall number.
fn rule_steps(steps: &mut Vec<Step>, labels: &mut usize, nr: u32, check: Check, filter: &Filter) {
    let mut label = || {
        *labels += 1;
        *labels
    };
    let jump = |code: u16, k: u32, yes: To, no: To| Step::Jump { code, k, yes, no };
    let set_id = S_ISUID | S_ISGID;
    if let Check::Notify = check {
        steps.push(jump(BPF_JMP_JEQ_K, nr, To::Notify, To::Next));
        return;
    }
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
        Check::Always(_) | Check::Notify => unreachable!(),
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
        Check::NoNewUser { flags } => {
            steps.push(Step::Load(arg_low(flags)));
            steps.push(jump(BPF_JMP_JSET_K, CLONE_NEWUSER, To::Deny, To::Allow));
        }
        Check::OwnPid { pid } => {
            steps.push(Step::Load(arg_low(pid)));
            steps.push(jump(BPF_JMP_JEQ_K, 0, To::Allow, To::Deny));
        }
        Check::OwnTarget { which, who, own } => {
            steps.push(Step::Load(arg_low(which)));
            steps.push(jump(BPF_JMP_JEQ_K, own, To::Next, To::Deny));
            steps.push(Step::Load(arg_low(who)));
            steps.push(jump(BPF_JMP_JEQ_K, 0, To::Allow, To::Deny));
        }
        Check::TcpOnly {
            domain,
            kind,
            protocol,
        } => {
            let inet = label();
            steps.push(Step::Load(arg_low(domain)));
            steps.push(jump(BPF_JMP_JEQ_K, AF_INET, To::Label(inet), To::Next));
            steps.push(jump(BPF_JMP_JEQ_K, AF_INET6, To::Label(inet), To::Deny));
            steps.push(Step::Label(inet));
            steps.push(Step::Load(arg_low(kind)));
            steps.push(Step::And(SOCK_TYPE_MASK));
            steps.push(jump(BPF_JMP_JEQ_K, SOCK_STREAM, To::Next, To::Deny));
            steps.push(Step::Load(arg_low(protocol)));
            steps.push(jump(BPF_JMP_JEQ_K, 0, To::Allow, To::Next));
            steps.push(jump(BPF_JMP_JEQ_K, IPPROTO_TCP, To::Allow, To::Deny));
        }
        Check::StreamPair { kind } => {
            steps.push(Step::Load(arg_low(kind)));
            steps.push(Step::And(SOCK_TYPE_MASK));
            steps.push(jump(BPF_JMP_JEQ_K, SOCK_STREAM, To::Allow, To::Next));
            steps.push(jump(BPF_JMP_JEQ_K, SOCK_SEQPACKET, To::Allow, To::Deny));
        }
        Check::NoFastOpen { flags } => {
            steps.push(Step::Load(arg_low(flags)));
            steps.push(jump(BPF_JMP_JSET_K, MSG_FASTOPEN, To::Deny, To::Allow));
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
    assemble(&steps, labels)
}

/// The six returns that follow the steps: allow, EPERM, ENOSYS, EOPNOTSUPP,
/// the supervisor's decision, kill.
const RETURNS: [u32; 6] = [
    SECCOMP_RET_ALLOW,
    SECCOMP_RET_ERRNO | EPERM,
    SECCOMP_RET_ERRNO | ENOSYS,
    SECCOMP_RET_ERRNO | EOPNOTSUPP,
    SECCOMP_RET_USER_NOTIF,
    SECCOMP_RET_KILL_PROCESS,
];

/// Resolves `steps` (whose labels are numbered 1 to `labels`) into
/// instructions with relative forward jumps, followed by [`RETURNS`].
fn assemble(steps: &[Step], labels: usize) -> Vec<Instruction> {
    // Instruction index of every step (labels take none) and of every label.
    let mut index_of_step = Vec::with_capacity(steps.len());
    let mut label_index = vec![0usize; labels + 1];
    let mut count = 0;
    for step in steps {
        index_of_step.push(count);
        match step {
            Step::Label(id) => label_index[*id] = count,
            _ => count += 1,
        }
    }
    let first_return = count;
    let offset = |here: usize, to: To| -> u8 {
        let index = match to {
            To::Next => here + 1,
            To::Allow => first_return,
            To::Deny => first_return + 1,
            To::NoSys => first_return + 2,
            To::NotSupported => first_return + 3,
            To::Notify => first_return + 4,
            To::Kill => first_return + 5,
            To::Label(id) => label_index[id],
        };
        // Jumps are relative to the next instruction and only go forward.
        u8::try_from(index - here - 1).expect("the seccomp program outgrew 8-bit jumps")
    };
    let mut program = Vec::with_capacity(count + RETURNS.len());
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
    program.extend(RETURNS.iter().map(|&k| Instruction {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k,
    }));
    program
}
