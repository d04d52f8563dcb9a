//! Tests of [`super::spawn_in`] on both paths: real children, no Ruby.
use super::*;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;

fn launch(argv: &[&str], limits: bool) -> Launch {
    Launch {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cpu_rlimit: limits.then_some(crate::limits::plan::CpuRlimit::exact(30)),
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
    assert_eq!(
        // SAFETY: waiting for our own child into a local.
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

#[test]
fn an_executable_descriptor_runs_that_file_whatever_argv0_names_on_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("tool");
    std::fs::write(&script, "#!/bin/sh\necho \"from the descriptor: $1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let opened = OwnedFd::from(std::fs::File::open(&script).unwrap());
    // The path now names something else: only the descriptor decides.
    std::fs::remove_file(&script).unwrap();
    std::fs::write(&script, "#!/bin/sh\necho REPLACED\n").unwrap();
    for (limits, method) in [(false, Method::PosixSpawn), (true, Method::Fork)] {
        let mut launch = launch(&[script.to_str().unwrap(), "hi"], limits);
        launch.spawn_options.executable_fd = Some(opened.as_raw_fd());
        assert_eq!(
            run(&launch, method),
            (0, "from the descriptor: hi\n".into()),
            "{method:?}"
        );
    }
}

/// A launch held by [`super::super::hold`]: the pipes, with bwrap's ends
/// inherited as 3 (`--info-fd`) and 4 (`--block-fd`), checking `mounts`.
fn held_checking(
    argv: &[&str],
    pipes: &super::super::hold::Pipes,
    mounts: Vec<super::super::mount_check::ExpectedMount>,
) -> Launch {
    let hold = pipes.hold();
    let mut held = launch(argv, false);
    held.spawn_options.inherited_fds = vec![hold.info, hold.block];
    held.spawn_options.hold = Some(super::super::hold::Held {
        block: 4,
        mounts,
        ..hold.spawner
    });
    held
}

fn held(argv: &[&str], pipes: &super::super::hold::Pipes) -> Launch {
    held_checking(argv, pipes, Vec::new())
}

#[test]
fn a_held_launch_whose_namespace_cannot_be_prepared_is_killed_before_it_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    // Reports its own pid with a network namespace that is not its own
    // (a recycled pid), then would go on once released.
    let script = format!(
        "echo $$ > {0}; echo '{{\"child-pid\": '$$', \"net-namespace\": 1}}' >&3; read x <&4; echo released > {0}",
        marker.display()
    );
    let pipes = super::super::hold::Pipes::new(Some(443)).unwrap();
    let refused = spawn(&held(&["sh", "-c", &script], &pipes), false);
    let Err(SpawnError::Unenforceable(why)) = refused else {
        panic!("expected a refusal");
    };
    assert!(why.contains("below 1024"), "{why}");
    // Killed and reaped while still held: it never went on.
    let pid = std::fs::read_to_string(&marker).unwrap();
    assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists());
}

#[test]
fn a_held_bwrap_runs_its_command_with_the_port_start_lowered_in_its_own_namespace_only() {
    let Some(bwrap) = ["/usr/bin/bwrap", "/bin/bwrap"]
        .into_iter()
        .find(|path| Path::new(path).exists())
    else {
        return; // no Bubblewrap here
    };
    if !super::super::low_ports::can_lower() {
        return; // /proc/sys is read-only here
    }
    let sysctl = super::super::low_ports::SYSCTL_PATH;
    let host = std::fs::read_to_string(sysctl).unwrap();
    let pipes = super::super::hold::Pipes::new(Some(443)).unwrap();
    let argv = [
        bwrap,
        "--unshare-user",
        "--disable-userns",
        "--unshare-net",
        "--unshare-pid",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--info-fd",
        "3",
        "--block-fd",
        "4",
        "--",
        "cat",
        sysctl,
    ];
    let mut held = held(&argv, &pipes);
    held.environment = vec![("PATH".into(), "/usr/bin:/bin".into())];
    let spawned = match spawn(&held, false) {
        Ok(spawned) => spawned,
        Err(error) => panic!("{error:?}"),
    };
    drop(pipes);
    let (mut stdout, mut stderr) = (String::new(), String::new());
    std::fs::File::from(spawned.stdout)
        .read_to_string(&mut stdout)
        .unwrap();
    std::fs::File::from(spawned.stderr)
        .read_to_string(&mut stderr)
        .unwrap();
    let mut status = 0;
    // SAFETY: waiting for our own child into a local.
    unsafe { libc::waitpid(spawned.pid, &mut status, 0) };
    if stderr.contains("No permissions to create new namespace")
        || stderr.contains("setting up uid map")
    {
        return; // no unprivileged user namespaces here
    }
    assert_eq!((stdout.as_str(), stderr.as_str()), ("443\n", ""));
    assert_eq!(std::fs::read_to_string(sysctl).unwrap(), host);
}

#[test]
fn a_held_bwrap_goes_on_only_when_its_mounts_are_what_the_launch_asked_for() {
    use super::super::mount_check::{ExpectedMount, MountKind};
    let Some(bwrap) = ["/usr/bin/bwrap", "/bin/bwrap"]
        .into_iter()
        .find(|path| Path::new(path).exists())
    else {
        return; // no Bubblewrap here
    };
    let dir = tempfile::tempdir().unwrap();
    let (grant, marker) = (dir.path().join("grant"), dir.path().join("ran"));
    std::fs::create_dir(&grant).unwrap();
    #[allow(clippy::unnecessary_cast)]
    let id = {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&grant).unwrap();
        (meta.dev() as u64, meta.ino() as u64)
    };
    let (grant_path, marker_path) = (grant.to_str().unwrap(), marker.to_str().unwrap());
    let script = format!("touch {marker_path}");
    let argv = [
        bwrap,
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--die-with-parent",
        "--bind",
        "/",
        "/",
        "--ro-bind",
        grant_path,
        grant_path,
        "--tmpfs",
        "/mnt",
        "--remount-ro",
        "/mnt",
        "--info-fd",
        "3",
        "--block-fd",
        "4",
        "--",
        "sh",
        "-c",
        &script,
    ];
    let bind = |dev, ino, read_only| ExpectedMount {
        path: grant.clone(),
        kind: MountKind::Bind { dev, ino },
        read_only,
    };
    let mask = ExpectedMount {
        path: "/mnt".into(),
        kind: MountKind::Tmpfs,
        read_only: true,
    };
    // What bwrap made: it goes on and runs the command.
    let pipes = super::super::hold::Pipes::new(None).unwrap();
    let mounts = vec![bind(id.0, id.1, true), mask.clone()];
    let spawned = match spawn(&held_checking(&argv, &pipes, mounts), false) {
        Ok(spawned) => spawned,
        Err(SpawnError::Refused(error)) if error.message().contains("cannot") => {
            return; // no unprivileged user namespaces, or no statx here
        }
        Err(error) => panic!("{error:?}"),
    };
    drop(pipes);
    let mut status = 0;
    // SAFETY: waiting for our own child into a local.
    unsafe { libc::waitpid(spawned.pid, &mut status, 0) };
    assert!(marker.exists(), "the checked launch did not run");
    std::fs::remove_file(&marker).unwrap();
    // Another directory's identity, or a mask where nothing is mounted:
    // killed while held, the command never ran.
    for mounts in [
        vec![bind(id.0, id.1 + 1, true), mask.clone()],
        vec![ExpectedMount {
            path: dir.path().into(),
            ..mask.clone()
        }],
    ] {
        let pipes = super::super::hold::Pipes::new(None).unwrap();
        let refused = spawn(&held_checking(&argv, &pipes, mounts), false);
        let Err(SpawnError::Refused(error)) = refused else {
            panic!("expected a refusal");
        };
        assert!(error.message().starts_with(super::MOUNT_MOVED), "{error}");
        assert!(!marker.exists(), "a refused launch ran");
    }
}
