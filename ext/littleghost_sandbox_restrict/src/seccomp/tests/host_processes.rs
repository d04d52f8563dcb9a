//! The rules for a child that shares the host's pids and IPC namespace (the
//! Landlock backend): it may change only itself, reach no System V IPC or
//! POSIX message queue, and make no user namespace. Each probe runs in a
//! re-executed child with the filter installed, against its parent (this
//! test runner, which stands for the gem's Ruby process), next to a control
//! run without the filter where the same calls succeed.

use super::*;

fn launch_filter() -> Filter {
    Filter::for_launch(false, None, None)
        .with_host_pids()
        .with_ipc_denied()
}

/// The probes, printed as `name: outcome`. Each targets the parent (a
/// process outside the launch) or the caller itself (pid 0); none changes the
/// parent when allowed: the values written are the ones read first.
fn probe() {
    // SAFETY: (the whole function) raw syscalls with integer arguments or
    // pointers to locals that outlive each call.
    unsafe {
        let parent = libc::getppid();
        let mut limit = libc::rlimit64 {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let own = libc::syscall(
            libc::SYS_prlimit64,
            0,
            libc::RLIMIT_NOFILE,
            std::ptr::null::<u8>(),
            &mut limit,
        );
        println!("prlimit64 self: {}", outcome(own));
        let other = libc::syscall(
            libc::SYS_prlimit64,
            parent,
            libc::RLIMIT_NOFILE,
            std::ptr::null::<u8>(),
            &mut limit,
        );
        println!("prlimit64 parent: {}", outcome(other));
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        let set = libc::syscall(libc::SYS_setpriority, libc::PRIO_PROCESS, 0, nice);
        println!("setpriority self: {}", outcome(set));
        let parent_nice = libc::getpriority(libc::PRIO_PROCESS, parent as libc::id_t);
        let set = libc::syscall(
            libc::SYS_setpriority,
            libc::PRIO_PROCESS,
            parent,
            parent_nice,
        );
        println!("setpriority parent: {}", outcome(set));
        let set = libc::syscall(libc::SYS_setpriority, libc::PRIO_USER, 0, nice);
        println!("setpriority user: {}", outcome(set));
        let mut mask: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        libc::sched_getaffinity(0, size, &mut mask);
        let set = libc::syscall(libc::SYS_sched_setaffinity, 0, size, &mask);
        println!("sched_setaffinity self: {}", outcome(set));
        let set = libc::syscall(libc::SYS_sched_setaffinity, parent, size, &mask);
        println!("sched_setaffinity parent: {}", outcome(set));
        let param = libc::sched_param { sched_priority: 0 };
        let set = libc::syscall(
            libc::SYS_sched_setscheduler,
            parent,
            libc::SCHED_OTHER,
            &param,
        );
        println!("sched_setscheduler parent: {}", outcome(set));
        let set = libc::syscall(libc::SYS_sched_setparam, parent, &param);
        println!("sched_setparam parent: {}", outcome(set));
        // IOPRIO_WHO_PROCESS (1); class 0 ("none") is every process's default.
        let set = libc::syscall(libc::SYS_ioprio_set, 1, 0, 0);
        println!("ioprio_set self: {}", outcome(set));
        let set = libc::syscall(libc::SYS_ioprio_set, 1, parent, 0);
        println!("ioprio_set parent: {}", outcome(set));
        let shm = libc::syscall(
            libc::SYS_shmget,
            libc::IPC_PRIVATE,
            4096,
            libc::IPC_CREAT | 0o600,
        );
        if shm >= 0 {
            libc::shmctl(shm as i32, libc::IPC_RMID, std::ptr::null_mut());
        }
        println!("shmget: {}", outcome(shm));
        let sem = libc::syscall(
            libc::SYS_semget,
            libc::IPC_PRIVATE,
            1,
            libc::IPC_CREAT | 0o600,
        );
        if sem >= 0 {
            libc::semctl(sem as i32, 0, libc::IPC_RMID);
        }
        println!("semget: {}", outcome(sem));
        let msg = libc::syscall(libc::SYS_msgget, libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600);
        if msg >= 0 {
            libc::msgctl(msg as i32, libc::IPC_RMID, std::ptr::null_mut());
        }
        println!("msgget: {}", outcome(msg));
        let name = format!("/lg-seccomp-{}\0", std::process::id());
        let mq = libc::syscall(
            libc::SYS_mq_open,
            name.as_ptr(),
            libc::O_CREAT | libc::O_RDWR,
            0o600,
            std::ptr::null::<u8>(),
        );
        if mq >= 0 {
            libc::syscall(libc::SYS_mq_unlink, name.as_ptr());
        }
        println!("mq_open: {}", outcome(mq));
        let userns = libc::syscall(libc::SYS_unshare, libc::CLONE_NEWUSER);
        println!("unshare user: {}", outcome(userns));
        let clone3 = libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 88usize);
        println!("clone3: {}", outcome(clone3));
    }
    let spawned = Command::new("/bin/true").status();
    println!("spawn: {}", if spawned.is_ok() { "ok" } else { "refused" });
}

#[test]
fn a_child_in_the_host_pid_namespace_changes_only_itself_and_reaches_no_ipc() {
    const NAME: &str = "seccomp::tests::host_processes::a_child_in_the_host_pid_namespace_changes_only_itself_and_reaches_no_ipc";
    match std::env::var(CHILD_MODE).as_deref() {
        Ok("host-filtered") => {
            install_in_child(&launch_filter());
            return probe();
        }
        Ok("host-unfiltered") => return probe(),
        _ => {}
    }
    let run = |mode: &str| {
        let out = run_child(NAME, mode);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{mode}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let filtered = run("host-filtered");
    for line in [
        "prlimit64 self: ok",
        "prlimit64 parent: EPERM",
        "setpriority self: ok",
        "setpriority parent: EPERM",
        "setpriority user: EPERM",
        "sched_setaffinity self: ok",
        "sched_setaffinity parent: EPERM",
        "sched_setscheduler parent: EPERM",
        "sched_setparam parent: EPERM",
        "ioprio_set self: ok",
        "ioprio_set parent: EPERM",
        "shmget: EPERM",
        "semget: EPERM",
        "msgget: EPERM",
        "mq_open: EPERM",
        "unshare user: EPERM",
        "clone3: ENOSYS",
        "spawn: ok",
    ] {
        assert!(filtered.contains(line), "missing {line:?} in:\n{filtered}");
    }
    // The control: the same calls on the parent pass without the filter
    // (same uid), so the refusals above are the filter's.
    let unfiltered = run("host-unfiltered");
    for line in [
        "prlimit64 parent: ok",
        "setpriority parent: ok",
        "sched_setaffinity parent: ok",
        "sched_setscheduler parent: ok",
        "ioprio_set parent: ok",
        "shmget: ok",
        "msgget: ok",
    ] {
        assert!(
            unfiltered.contains(line),
            "missing {line:?} in:\n{unfiltered}"
        );
    }
}

#[test]
fn the_bubblewrap_filter_keeps_pids_and_ipc_to_its_namespaces_but_refuses_user_namespaces() {
    // Bubblewrap gives the child its own pid and IPC namespaces: the
    // host-pid and IPC rules stay out of its filter; the user-namespace
    // rules are in every filter.
    let bwrap = Filter::for_launch(false, None, None);
    let landlock = launch_filter();
    let t = table(Arch::native().expect("supported arch"));
    let checks = |filter: &Filter| -> Vec<u32> {
        super::super::rules::rules(Arch::native().unwrap(), filter)
            .into_iter()
            .map(|(nr, _)| nr)
            .collect()
    };
    let (b, l) = (checks(&bwrap), checks(&landlock));
    for nr in [t.clone3, t.unshare, t.clone] {
        assert!(b.contains(&nr) && l.contains(&nr), "{nr}");
    }
    for nr in t.ipc.iter().chain(&t.sched_set).chain(&[
        t.prlimit64,
        t.setpriority,
        t.ioprio_set,
        t.perf_event_open,
    ]) {
        assert!(!b.contains(nr) && l.contains(nr), "{nr}");
    }
    // Each syscall number has one rule only.
    let mut sorted = l.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), l.len());
}

#[test]
fn the_new_numbers_match_the_c_library() {
    let t = table(Arch::native().expect("supported arch"));
    let c = |nr: libc::c_long| nr as u32;
    assert_eq!(
        [
            t.unshare,
            t.prlimit64,
            t.setpriority,
            t.ioprio_set,
            t.perf_event_open
        ],
        [
            c(libc::SYS_unshare),
            c(libc::SYS_prlimit64),
            c(libc::SYS_setpriority),
            c(libc::SYS_ioprio_set),
            c(libc::SYS_perf_event_open)
        ]
    );
    assert_eq!(
        t.sched_set,
        [
            c(libc::SYS_sched_setaffinity),
            c(libc::SYS_sched_setscheduler),
            c(libc::SYS_sched_setparam),
            c(libc::SYS_sched_setattr)
        ]
    );
    let mut ipc = t.ipc;
    ipc.sort_unstable();
    let mut expected = [
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_shmdt,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semctl,
        libc::SYS_semtimedop,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_mq_open,
        libc::SYS_mq_unlink,
        libc::SYS_mq_timedsend,
        libc::SYS_mq_timedreceive,
        libc::SYS_mq_notify,
        libc::SYS_mq_getsetattr,
    ]
    .map(c);
    expected.sort_unstable();
    assert_eq!(ipc, expected);
}

#[test]
fn the_largest_filter_still_fits_eight_bit_jumps_on_every_arch() {
    let largest = Filter::for_launch(true, None, None)
        .with_host_pids()
        .with_ipc_denied()
        .with_sockets_denied();
    for arch in [Arch::X86_64, Arch::Aarch64] {
        // `assemble` panics when a jump outgrows 8 bits.
        let p = program(arch, &largest);
        assert!(p.len() < 256, "{arch:?}: {}", p.len());
    }
}
