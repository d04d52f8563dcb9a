//! The seccomp-BPF program every Bubblewrap child runs under. bwrap reads it
//! from a file descriptor (`--seccomp FD`) and installs it just before the
//! child's `execve`, after its own set-up.
//!
//! Always, for the native ABI:
//! - `keyctl`, `add_key` and `request_key` fail with EPERM. Keyrings are not
//!   namespaced: without this a child reads (and changes) keys in the session
//!   keyring of the Ruby process that launched it.
//!
//! With `allow_subprocesses: false` (SPEC B.6, W2), also:
//! - `fork`, `vfork` (x86_64 only; aarch64 has neither) fail with EPERM;
//! - `clone` is allowed only when its flags contain `CLONE_THREAD` (a thread
//!   of the same process); otherwise EPERM;
//! - `clone3` fails with ENOSYS: its flags live in user memory, which BPF
//!   cannot inspect, and ENOSYS makes glibc fall back to `clone`;
//! - everything else is allowed.
//!
//! A syscall from any other ABI is killed (`SECCOMP_RET_KILL_PROCESS`): the
//! i386 compat entry (`int 0x80`) on x86_64 reports another audit arch and
//! uses other numbers (fork is 2 there), and the x32 ABI reports the native
//! arch with bit 30 set in the number. The filter was not written for those
//! tables, so it cannot allow them; returning an errno for every syscall
//! would leave a program spinning in undefined states, whereas a kill is
//! immediate and visible (SIGSYS). No ordinary program in a sandbox that
//! forbids subprocesses uses a foreign ABI.
//!
//! The program is assembled by hand rather than with `seccompiler`: that
//! crate compiles one match action per filter (we need EPERM *and* ENOSYS)
//! and does not guard the x32 bit, and the program is only a dozen
//! instructions, each explained here.

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

/// One `struct sock_filter` (linux/filter.h), in native byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

// linux/bpf_common.h and linux/seccomp.h.
const BPF_LD_W_ABS: u16 = 0x00 | 0x00 | 0x20;
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JMP_JSET_K: u16 = 0x05 | 0x40;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
// struct seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low word on little-endian).
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARG0_LOW: u32 = 16;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const CLONE_THREAD: u32 = 0x0001_0000;
const EPERM: u32 = 1;
const ENOSYS: u32 = 38;

/// Where a conditional jump goes.
#[derive(Clone, Copy)]
enum To {
    Next,
    Allow,
    Deny,
    NoSys,
    Kill,
}

enum Step {
    Load(u32),
    Jump { code: u16, k: u32, yes: To, no: To },
}

/// The syscall numbers the filter inspects.
struct Table {
    /// keyctl, add_key, request_key.
    keyring: [u32; 3],
    fork: Option<u32>,
    vfork: Option<u32>,
    clone: u32,
    clone3: u32,
}

fn table(arch: Arch) -> Table {
    match arch {
        Arch::X86_64 => Table {
            keyring: [250, 248, 249],
            fork: Some(57),
            vfork: Some(58),
            clone: 56,
            clone3: 435,
        },
        Arch::Aarch64 => Table {
            keyring: [219, 217, 218],
            fork: None,
            vfork: None,
            clone: 220,
            clone3: 435,
        },
    }
}

/// The filter program for `arch`; `deny_subprocesses` adds the process rules.
pub fn program(arch: Arch, deny_subprocesses: bool) -> Vec<Instruction> {
    let table = table(arch);
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
    for nr in table.keyring {
        steps.push(Step::Jump {
            code: BPF_JMP_JEQ_K,
            k: nr,
            yes: To::Deny,
            no: To::Next,
        });
    }
    // Without the process rules, falling through reaches the first return: allow.
    if deny_subprocesses {
        for nr in [table.fork, table.vfork].into_iter().flatten() {
            steps.push(Step::Jump {
                code: BPF_JMP_JEQ_K,
                k: nr,
                yes: To::Deny,
                no: To::Next,
            });
        }
        steps.push(Step::Jump {
            code: BPF_JMP_JEQ_K,
            k: table.clone3,
            yes: To::NoSys,
            no: To::Next,
        });
        steps.push(Step::Jump {
            code: BPF_JMP_JEQ_K,
            k: table.clone,
            yes: To::Next,
            no: To::Allow,
        });
        steps.push(Step::Load(OFFSET_ARG0_LOW));
        steps.push(Step::Jump {
            code: BPF_JMP_JSET_K,
            k: CLONE_THREAD,
            yes: To::Allow,
            no: To::Deny,
        });
    }

    // The four returns follow the steps, in this order.
    let returns = [
        SECCOMP_RET_ALLOW,
        SECCOMP_RET_ERRNO | EPERM,
        SECCOMP_RET_ERRNO | ENOSYS,
        SECCOMP_RET_KILL_PROCESS,
    ];
    let first_return = steps.len();
    let offset = |here: usize, to: To| -> u8 {
        let index = match to {
            To::Next => here + 1,
            To::Allow => first_return,
            To::Deny => first_return + 1,
            To::NoSys => first_return + 2,
            To::Kill => first_return + 3,
        };
        // Jumps are relative to the next instruction; the program is far below 255 steps.
        (index - here - 1) as u8
    };
    let mut program: Vec<Instruction> = steps
        .iter()
        .enumerate()
        .map(|(here, step)| match *step {
            Step::Load(at) => Instruction {
                code: BPF_LD_W_ABS,
                jt: 0,
                jf: 0,
                k: at,
            },
            Step::Jump { code, k, yes, no } => Instruction {
                code,
                jt: offset(here, yes),
                jf: offset(here, no),
                k,
            },
        })
        .collect();
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
pub fn native_filter_bytes(deny_subprocesses: bool) -> Result<Vec<u8>> {
    let arch = Arch::native().ok_or_else(|| {
        capability(format!(
            "the bubblewrap sandbox has no seccomp filter for {}",
            std::env::consts::ARCH
        ))
    })?;
    Ok(to_bytes(&program(arch, deny_subprocesses)))
}

/// Writes the native filter into a fresh memfd, rewound to the start, and
/// returns it. It is close-on-exec: the spawner keeps it open in bwrap only
/// (`SpawnOptions::keep_fds`), so a concurrent spawn never inherits it. Use
/// one per launch: bwrap reads from the shared file offset.
pub fn filter_fd(deny_subprocesses: bool) -> Result<OwnedFd> {
    let bytes = native_filter_bytes(deny_subprocesses)?;
    let unavailable = |_| {
        capability(
            "the bubblewrap sandbox cannot prepare its subprocess filter (memfd_create failed)",
        )
    };
    let fd = rustix::fs::memfd_create("littleghost-seccomp", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(unavailable)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&bytes)
        .and_then(|_| file.seek(SeekFrom::Start(0)).map(|_| ()))
        .map_err(|_| capability("the bubblewrap sandbox cannot prepare its subprocess filter"))?;
    Ok(OwnedFd::from(file))
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

    fn install_native_filter() {
        install_filter(true);
    }

    fn install_filter(deny_subprocesses: bool) {
        let program = program(Arch::native().expect("supported arch"), deny_subprocesses);
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
    fn the_program_checks_the_arch_first_and_ends_in_four_returns() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let p = program(arch, true);
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
            let tail: Vec<u32> = p[p.len() - 4..].iter().map(|i| i.k).collect();
            assert_eq!(
                tail,
                vec![
                    SECCOMP_RET_ALLOW,
                    SECCOMP_RET_ERRNO | 1,
                    SECCOMP_RET_ERRNO | 38,
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
        // aarch64 has no fork/vfork and no x32 ABI: two fewer checks, one fewer guard.
        assert_eq!(
            program(Arch::X86_64, true).len(),
            program(Arch::Aarch64, true).len() + 3
        );
    }

    #[test]
    fn the_fd_holds_the_sock_filter_bytes_from_offset_zero() {
        let fd = filter_fd(true).unwrap();
        let mut file = std::fs::File::from(fd);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes, native_filter_bytes(true).unwrap());
        assert_eq!(bytes.len() % 8, 0);
        let flags = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }
}
