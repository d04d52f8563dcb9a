//! Unit tests of the filter. Those that need the filter installed re-execute
//! this test binary and install it in that fresh child (see `CHILD_MODE`).

mod connect_interception;
mod host_processes;
mod planting;

use super::program::{
    BPF_JMP_JEQ_K, BPF_LD_W_ABS, OFFSET_ARCH, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO,
    SECCOMP_RET_KILL_PROCESS,
};
use super::rules::table;
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
    install_in_child(&Filter::for_launch(deny_subprocesses, None, None));
}

/// Installs `filter` the way the helper does (`no_new_privs`, then the
/// module's own [`install`]); only in a re-executed child, never in the test
/// runner.
fn install_in_child(filter: &Filter) {
    assert_eq!(
        // SAFETY: prctl with plain integer arguments.
        unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) },
        0
    );
    install(filter).expect("seccomp filter installed");
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
    const NAME: &str =
        "seccomp::tests::every_filter_denies_keyrings_and_only_the_strict_one_denies_processes";
    if let Ok(mode) = std::env::var(CHILD_MODE) {
        if mode == "keyring-strict" || mode == "keyring-lenient" {
            install_filter(mode == "keyring-strict");
            // KEYCTL_GET_KEYRING_ID (0) of the session keyring (-3): succeeds without the filter.
            // SAFETY: integer arguments only; the outcome is reported, not trusted.
            let keyctl = unsafe { libc::syscall(libc::SYS_keyctl, 0, -3i64, 0) };
            println!("keyctl: {}", errno_name(keyctl));
            // SAFETY: the type, description and payload are static C strings
            // (the length covers the payload); the call only reads them.
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
    const NAME: &str = "seccomp::tests::a_filtered_process_cannot_fork_but_can_start_threads";
    if std::env::var(CHILD_MODE).as_deref() == Ok("fork") {
        install_native_filter();
        // glibc's fork() is clone(SIGCHLD) without CLONE_THREAD.
        // SAFETY: the filter should refuse it; if it did not, the forked
        // child only calls _exit below.
        let forked = unsafe { libc::fork() };
        if forked == 0 {
            // SAFETY: _exit is async-signal-safe and never returns.
            unsafe { libc::_exit(0) };
        }
        println!("fork: {}", errno_name(forked as i64));
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: the filter refuses fork before the kernel forks; the
            // parent's assertions fail should it succeed.
            let fork = unsafe { libc::syscall(libc::SYS_fork) };
            println!("sys_fork: {}", errno_name(fork));
            // SAFETY: likewise for vfork, so no child ever shares this stack.
            let vfork = unsafe { libc::syscall(libc::SYS_vfork) };
            println!("sys_vfork: {}", errno_name(vfork));
        }
        // Without the filter a null clone_args gives EFAULT.
        // SAFETY: with a null clone_args the kernel creates nothing (EFAULT
        // at worst); the filter answers ENOSYS before that.
        let clone3 = unsafe { libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 88usize) };
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
    // SAFETY: the child calls only _exit, which is async-signal-safe, so
    // forking the multi-threaded test runner is sound.
    let forked = unsafe { libc::fork() };
    if forked == 0 {
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(0) };
    }
    assert!(forked > 0);
    let mut status = 0;
    // SAFETY: reaps our own child into a local.
    unsafe { libc::waitpid(forked, &mut status, 0) };
    assert!(Command::new("/bin/true").status().unwrap().success());
}

#[cfg(target_arch = "x86_64")]
#[test]
fn an_x32_syscall_kills_the_filtered_process() {
    const NAME: &str = "seccomp::tests::an_x32_syscall_kills_the_filtered_process";
    if std::env::var(CHILD_MODE).as_deref() == Ok("x32") {
        install_native_filter();
        // x32 fork: the native arch with the x32 bit set in the number.
        // SAFETY: the filter kills the process before the kernel sees the call.
        unsafe { libc::syscall(libc::SYS_fork | 0x4000_0000) };
        println!("survived");
        return;
    }
    let out = run_child(NAME, "x32");
    assert_eq!(out.status.signal(), Some(libc::SIGSYS), "{:?}", out);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("survived"));
}

#[test]
fn the_program_checks_the_arch_first_and_ends_in_six_returns() {
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
        let tail: Vec<u32> = p[p.len() - 6..].iter().map(|i| i.k).collect();
        assert_eq!(
            tail,
            vec![
                SECCOMP_RET_ALLOW,
                SECCOMP_RET_ERRNO | 1,
                SECCOMP_RET_ERRNO | 38,
                SECCOMP_RET_ERRNO | 95,
                0x7fc0_0000,
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
    // SAFETY: F_GETFD on a descriptor `file` owns; it reads flags only.
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
fn chown_may_name_only_the_launch_ids() {
    let filter = Filter::for_launch(false, Some(1000), Some(100));
    assert_eq!((filter.uid, filter.gid), (1000, 100));
    let host = Filter::for_launch(false, None, None);
    // SAFETY: getuid and getgid take nothing and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    assert_eq!(host.uid, uid);
    assert_eq!(host.gid, gid);
    for arch in [Arch::X86_64, Arch::Aarch64] {
        let p = program(arch, &filter);
        assert!(p.iter().any(|i| i.code == BPF_JMP_JEQ_K && i.k == 1000));
        assert!(p.iter().any(|i| i.code == BPF_JMP_JEQ_K && i.k == 100));
    }
}
