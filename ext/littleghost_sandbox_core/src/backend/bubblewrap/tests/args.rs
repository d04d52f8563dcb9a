use super::*;

#[test]
fn isolated_root_emits_the_documented_order_exactly() {
    let mut launch = isolated_workspace();
    launch.grants = vec![ro("/w/skills"), rw("/w")];
    launch.environment = vec![("LITTLE_GHOST_WORKSPACE_ROOT".into(), "/w".into())];
    let argv = args(&launch, &FakeHost::debian());
    let expected: Vec<&str> = vec![
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--new-session",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--size",
        "268435456",
        "--tmpfs",
        "/",
        "--unshare-net",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/sbin",
        "/sbin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--dev",
        "/dev",
        "--size",
        "268435456",
        "--tmpfs",
        "/dev/shm",
        "--proc",
        "/proc",
        "--ro-bind",
        "/proc/sys",
        "/proc/sys",
        "--size",
        "268435456",
        "--tmpfs",
        "/tmp",
        "--size",
        "268435456",
        "--tmpfs",
        "/run",
        "--dir",
        "/w",
        "--bind",
        "/w",
        "/w",
        "--ro-bind",
        "/w/skills",
        "/w/skills",
        "--chdir",
        "/w",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--clearenv",
        "--setenv",
        "LITTLE_GHOST_WORKSPACE_ROOT",
        "/w",
    ];
    assert_eq!(argv, expected);
}

#[test]
fn read_only_root_binds_the_host_read_only_without_runtime_roots() {
    let launch = Launch::new(RootFilesystem::ReadOnly, vec![rw("/w")], "/w".into());
    let argv = args(&launch, &FakeHost::debian());
    assert_eq!(
        &argv[10..15],
        &["--ro-bind", "/", "/", "--unshare-net", "--dev"]
    );
    assert!(!has(&argv, &["--ro-bind", "/usr", "/usr"]));
    assert!(!argv.iter().any(|a| a == "--symlink"));
    assert!(!has(&argv, &["--remount-ro", "/"]));
    // /w is visible through the host root: no --dir for it.
    assert!(!has(&argv, &["--dir", "/w"]));
}

#[test]
fn read_write_root_binds_the_host_writable() {
    let launch = Launch::new(RootFilesystem::ReadWrite, vec![rw("/w")], "/w".into());
    let argv = args(&launch, &FakeHost::debian());
    assert_eq!(&argv[10..13], &["--bind", "/", "/"]);
    assert!(!has(&argv, &["--remount-ro", "/"]));
}

#[test]
fn only_inherit_keeps_the_host_network() {
    for (mode, unshared) in [
        (NetworkMode::None, true),
        (NetworkMode::Allowlist, true),
        (NetworkMode::Inherit, false),
    ] {
        let mut launch = isolated_workspace();
        launch.network = mode;
        let argv = args(&launch, &FakeHost::debian());
        assert_eq!(
            argv.iter().any(|a| a == "--unshare-net"),
            unshared,
            "{mode:?}"
        );
    }
}

#[test]
fn relay_binds_come_after_tmpfs_and_masks() {
    let mut launch = isolated_workspace();
    launch.masks = vec![PathBuf::from("/tmp")];
    let directory = PathBuf::from("/tmp/littleghost-gateway-1");
    launch.extra_ro_binds = vec![(directory.clone(), directory)];
    let argv = args(&launch, &FakeHost::debian());
    let bind = argv
        .windows(3)
        .position(|w| {
            w == [
                "--ro-bind",
                "/tmp/littleghost-gateway-1",
                "/tmp/littleghost-gateway-1",
            ]
        })
        .expect("the gateway directory is bound");
    let last_tmpfs = argv.iter().rposition(|a| a == "--tmpfs").unwrap();
    assert!(bind > last_tmpfs, "{argv:?}");
    assert!(bind < argv.iter().position(|a| a == "--chdir").unwrap());
}

#[test]
fn namespaces_session_and_capabilities_always_come_first() {
    for root in [
        RootFilesystem::Isolated,
        RootFilesystem::ReadOnly,
        RootFilesystem::ReadWrite,
    ] {
        let launch = Launch::new(root, vec![rw("/w")], "/w".into());
        let argv = args(&launch, &FakeHost::debian());
        assert_eq!(
            &argv[..10],
            &[
                "--unshare-user",
                "--disable-userns",
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--unshare-cgroup-try",
                "--new-session",
                "--die-with-parent",
                "--cap-drop",
                "ALL"
            ]
        );
        assert!(has(&argv, &["--dev", "/dev"]));
    }
}

#[test]
fn upstream_example_dirs_beneath_a_tmpfs_under_read_only() {
    let launch = Launch::new(
        RootFilesystem::ReadOnly,
        vec![rw("/tmp/tenant/runs/123")],
        "/tmp/tenant/runs/123".into(),
    );
    let argv = args(&launch, &FakeHost::debian());
    let dirs: Vec<&String> = argv
        .windows(2)
        .filter(|w| w[0] == "--dir")
        .map(|w| &w[1])
        .collect();
    assert_eq!(dirs, vec!["/tmp/tenant", "/tmp/tenant/runs"]);
    assert!(position(&argv, &["--tmpfs", "/tmp"]) < position(&argv, &["--dir", "/tmp/tenant"]));
    assert!(
        position(&argv, &["--dir", "/tmp/tenant/runs"])
            < position(
                &argv,
                &["--bind", "/tmp/tenant/runs/123", "/tmp/tenant/runs/123"]
            )
    );
}

#[test]
fn isolated_dirs_cover_every_proper_ancestor_once() {
    let mut launch = Launch::new(
        RootFilesystem::Isolated,
        vec![rw("/srv/w"), ro("/srv/w/a/b")],
        "/srv/w".into(),
    );
    launch.masks = vec!["/srv/w/c".into()];
    let argv = args(&launch, &FakeHost::debian());
    let dirs: Vec<&String> = argv
        .windows(2)
        .filter(|w| w[0] == "--dir")
        .map(|w| &w[1])
        .collect();
    assert_eq!(dirs, vec!["/srv", "/srv/w", "/srv/w/a"]);
}

#[test]
fn upstream_examples_identity_binds() {
    let launch = Launch::new(
        RootFilesystem::Isolated,
        vec![ro("/w/skills"), rw("/w")],
        "/w".into(),
    );
    let argv = args(&launch, &FakeHost::debian());
    assert!(has(&argv, &["--bind", "/w", "/w"]));
    assert!(has(&argv, &["--ro-bind", "/w/skills", "/w/skills"]));
    assert!(
        position(&argv, &["--bind", "/w", "/w"])
            < position(&argv, &["--ro-bind", "/w/skills", "/w/skills"])
    );
}

#[test]
fn proc_modes() {
    let host = FakeHost::debian();
    let mut launch = isolated_workspace();
    launch.proc_mount = ProcMount::None;
    assert!(!args(&launch, &host).iter().any(|a| a == "/proc"));
    launch.proc_mount = ProcMount::Bind {
        source: "/srv/proc".into(),
        access: Access::ReadOnly,
    };
    assert!(has(
        &args(&launch, &host),
        &["--ro-bind", "/srv/proc", "/proc"]
    ));
    launch.proc_mount = ProcMount::Bind {
        source: "/srv/proc".into(),
        access: Access::ReadWrite,
    };
    assert!(has(
        &args(&launch, &host),
        &["--bind", "/srv/proc", "/proc"]
    ));
    launch.proc_mount = ProcMount::New;
    let argv = args(&launch, &host);
    assert!(position(&argv, &["--dev", "/dev"]) + 6 == position(&argv, &["--proc", "/proc"]));
    // The fresh /proc's sysctls are frozen right after it is mounted.
    assert_eq!(
        position(&argv, &["--proc", "/proc"]) + 2,
        position(&argv, &["--ro-bind", "/proc/sys", "/proc/sys"])
    );
}

#[test]
fn tmpfs_list_is_emitted_in_order_and_can_be_empty() {
    let host = FakeHost::debian();
    let mut launch = isolated_workspace();
    launch.tmpfs = vec!["/scratch".into()];
    let argv = args(&launch, &host);
    assert!(has(&argv, &["--tmpfs", "/scratch"]));
    assert!(!has(&argv, &["--tmpfs", "/tmp"]));
    launch.tmpfs.clear();
    assert_eq!(
        args(&launch, &host)
            .iter()
            .filter(|a| *a == "--tmpfs")
            .count(),
        2
    ); // only the root and /dev/shm
}

#[test]
fn every_tmpfs_gets_the_launch_size_and_dev_turns_read_only() {
    let host = FakeHost::debian();
    for root in [
        RootFilesystem::Isolated,
        RootFilesystem::ReadOnly,
        RootFilesystem::ReadWrite,
    ] {
        let mut launch = Launch::new(root, vec![rw("/w")], "/w".into());
        launch.masks = vec!["/w/.git".into()];
        launch.tmpfs_size = 8 * 1024 * 1024;
        let argv = args(&launch, &host);
        let tmpfs: Vec<usize> = (0..argv.len()).filter(|&i| argv[i] == "--tmpfs").collect();
        let expected = if root == RootFilesystem::Isolated {
            5
        } else {
            4
        };
        assert_eq!(tmpfs.len(), expected, "{root:?}: {argv:?}");
        for i in tmpfs {
            assert_eq!(argv[i - 2..i], ["--size", "8388608"], "{root:?}: {argv:?}");
        }
        assert!(has(&argv, &["--size", "8388608", "--tmpfs", "/dev/shm"]));
        // /dev freezes after everything mounted into it.
        assert!(position(&argv, &["--remount-ro", "/dev"]) > position(&argv, &["--chdir"]));
    }
    assert_eq!(
        Launch::new(RootFilesystem::Isolated, vec![], "/".into()).tmpfs_size,
        DEFAULT_TMPFS_SIZE
    );
    assert_eq!(DEFAULT_TMPFS_SIZE, 256 * 1024 * 1024);
}

#[test]
fn compatibility_roots_follow_the_host() {
    let mut host = FakeHost::debian();
    host.entries.insert("/bin".into(), HostEntry::Directory);
    host.entries.remove(Path::new("/lib64"));
    host.entries.insert("/sbin".into(), HostEntry::Other);
    let argv = args(&isolated_workspace(), &host);
    assert!(has(&argv, &["--ro-bind", "/bin", "/bin"]));
    assert!(has(&argv, &["--symlink", "usr/lib", "/lib"]));
    assert!(!argv.iter().any(|a| a == "/lib64" || a == "/sbin"));
    // A runtime root that is not a directory is skipped.
    host.entries.remove(Path::new("/usr"));
    assert!(!args(&isolated_workspace(), &host)
        .iter()
        .any(|a| a == "/usr"));
}

#[test]
fn masks_become_read_only_tmpfs_after_the_binds() {
    let mut launch = isolated_workspace();
    launch.masks = vec!["/w/.git".into()];
    let argv = args(&launch, &FakeHost::debian());
    let bind = position(&argv, &["--bind", "/w", "/w"]);
    let mask = position(&argv, &["--tmpfs", "/w/.git", "--remount-ro", "/w/.git"]);
    assert!(bind < mask && mask < position(&argv, &["--chdir", "/w"]));
}

#[test]
fn a_grant_kept_beneath_a_mask_is_bound_before_the_mask_turns_read_only() {
    let mut launch = Launch::new(
        RootFilesystem::Isolated,
        vec![rw("/w"), ro("/w/a/b")],
        "/w".into(),
    );
    launch.masks = vec!["/w/a".into()];
    let argv = args(&launch, &FakeHost::debian());
    let tmpfs = position(&argv, &["--tmpfs", "/w/a"]);
    let bind = position(&argv, &["--ro-bind", "/w/a/b", "/w/a/b"]);
    let remount = position(&argv, &["--remount-ro", "/w/a"]);
    assert!(position(&argv, &["--bind", "/w", "/w"]) < tmpfs && tmpfs < bind && bind < remount);
}

#[test]
fn environment_inherit_uid_gid_and_seccomp() {
    let host = FakeHost::debian();
    let mut launch = isolated_workspace();
    launch.environment = vec![("A".into(), "1".into()), ("B".into(), "two words".into())];
    launch.inherit_environment = true;
    launch.uid = Some(1000);
    launch.gid = Some(0);
    launch.seccomp_fd = Some(7);
    let argv = args(&launch, &host);
    assert!(!argv.iter().any(|a| a == "--clearenv"));
    let tail: Vec<&str> = argv[position(&argv, &["--setenv", "A"])..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        vec![
            "--setenv",
            "A",
            "1",
            "--setenv",
            "B",
            "two words",
            "--uid",
            "1000",
            "--gid",
            "0",
            "--seccomp",
            "7"
        ]
    );
    launch.inherit_environment = false;
    let argv = args(&launch, &host);
    assert_eq!(
        position(&argv, &["--clearenv"]) + 1,
        position(&argv, &["--setenv", "A"])
    );
}

#[test]
fn bad_environment_names_are_refused_before_any_argv() {
    for (name, value) in [("", "x"), ("A=B", "x"), ("A\0", "x"), ("A", "x\0y")] {
        let mut launch = isolated_workspace();
        launch.environment = vec![(name.into(), value.into())];
        let err = bubblewrap_args(&launch, &FakeHost::debian()).unwrap_err();
        assert!(matches!(err, crate::Error::Argument(_)), "{name:?}");
    }
}

#[test]
fn cwd_must_lie_in_a_selected_grant_or_a_workspace_free_tmpfs() {
    let grants = vec![rw("/w"), ro("/w/src")];
    let tmpfs = vec![PathBuf::from("/tmp"), PathBuf::from("/run")];
    let ws = vec![PathBuf::from("/w"), PathBuf::from("/w/src")];
    assert_eq!(
        validate_cwd(Path::new("/w/src/x"), &grants, &[], &tmpfs, &ws).unwrap(),
        PathBuf::from("/w/src/x")
    );
    assert_eq!(
        validate_cwd(Path::new("/w/./a/../b"), &grants, &[], &tmpfs, &ws).unwrap(),
        PathBuf::from("/w/b")
    );
    assert!(validate_cwd(Path::new("/tmp/scratch"), &grants, &[], &tmpfs, &ws).is_ok());
    for outside in ["/etc", "/w2", "relative"] {
        let err = validate_cwd(Path::new(outside), &grants, &[], &tmpfs, &ws).unwrap_err();
        assert_eq!(
            err,
            tool(format!("{CWD_OUTSIDE_SCOPE}: {outside}")),
            "{outside}"
        );
    }
    // Only src and out granted: the workspace root still is where a program starts (bwrap makes it,
    // holding only the grants), but nothing above the workspace is.
    let only = vec![ro("/w/src"), rw("/w/out")];
    let root_only = vec![PathBuf::from("/w")];
    assert!(validate_cwd(Path::new("/w"), &only, &[], &tmpfs, &root_only).is_ok());
    assert!(validate_cwd(Path::new("/"), &only, &[], &tmpfs, &root_only).is_err());
    assert!(validate_cwd(Path::new("/w/docs"), &only, &[], &tmpfs, &root_only).is_err());
    // A workspace under /tmp that the scope dropped is never a working directory.
    let ws_in_tmp = vec![PathBuf::from("/tmp/ws")];
    assert!(validate_cwd(Path::new("/tmp/ws"), &[], &[], &tmpfs, &ws_in_tmp).is_err());
    assert!(validate_cwd(Path::new("/tmp/other"), &[], &[], &tmpfs, &ws_in_tmp).is_err());
    // A masked directory is not a working directory, but a grant kept beneath it is.
    let masks = vec![PathBuf::from("/w/cache")];
    assert!(validate_cwd(Path::new("/w/cache/x"), &grants, &masks, &tmpfs, &ws).is_err());
    let kept = vec![rw("/w"), ro("/w/cache/keep")];
    assert!(validate_cwd(Path::new("/w/cache/keep"), &kept, &masks, &tmpfs, &ws).is_ok());
}

#[test]
fn argv_refuses_a_cwd_outside_the_launch() {
    let mut launch = isolated_workspace();
    launch.cwd = "/etc".into();
    assert_eq!(
        bubblewrap_args(&launch, &FakeHost::debian()).unwrap_err(),
        tool(format!("{CWD_OUTSIDE_SCOPE}: /etc"))
    );
}

#[test]
fn only_bwraps_leading_new_session_is_removed() {
    let mut argv = strings(&[
        "/usr/bin/bwrap",
        "--unshare-user",
        "--unshare-pid",
        "--new-session",
        "--die-with-parent",
        "--bind",
        "/",
        "/",
        "--",
        "--new-session",
    ]);
    keep_session(&mut argv);
    assert_eq!(
        argv,
        strings(&[
            "/usr/bin/bwrap",
            "--unshare-user",
            "--unshare-pid",
            "--die-with-parent",
            "--bind",
            "/",
            "/",
            "--",
            "--new-session",
        ])
    );
    let mut helper = strings(&["helper", "--bind", "--new-session", "sh"]);
    keep_session(&mut helper);
    assert_eq!(helper.len(), 4);
    let mut empty = Vec::new();
    keep_session(&mut empty);
    assert!(empty.is_empty());
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}
