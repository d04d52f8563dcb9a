use super::*;

#[test]
fn probe_argv_is_the_functional_check_of_b2() {
    assert_eq!(
        strings(&probe_argv(Path::new("/usr/bin/bwrap"))),
        vec![
            "/usr/bin/bwrap",
            "--unshare-user",
            "--disable-userns",
            "--unshare-pid",
            "--new-session",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--",
            "/bin/true"
        ]
    );
}

#[test]
fn the_functional_probe_passes_here_and_fails_for_a_non_bwrap() {
    require_bwrap();
    assert_eq!(functional_probe(Path::new(DEFAULT_EXECUTABLE)), Ok(()));
    // /bin/false "probes" unsuccessfully: the reason names the generic failure.
    let reason = functional_probe(Path::new("/bin/false"))
        .unwrap_err()
        .to_string();
    assert!(
        reason.contains("installed but unavailable: the namespace probe failed"),
        "{reason}"
    );
    assert!(is_executable_file(Path::new(DEFAULT_EXECUTABLE)));
    assert!(!is_executable_file(Path::new("/nonexistent/bwrap")));
    assert!(!is_executable_file(Path::new("/usr")));
}

#[test]
fn probe_reasons_say_what_to_do() {
    let missing = missing_reason(Path::new("/nonexistent/bwrap"));
    assert!(missing.starts_with("Bubblewrap is not installed at /nonexistent/bwrap"));
    assert!(missing.contains("apt-get install bubblewrap"));
    let failed =
        ProbeFailure::from_stderr(b"\nbwrap: No permissions to creating new namespace\nmore\n")
            .to_string();
    assert!(failed.starts_with("Bubblewrap is installed but unavailable: bwrap: No permissions to creating new namespace ("));
    assert!(failed.contains("user namespaces"));
    assert!(ProbeFailure::from_stderr(b"")
        .to_string()
        .contains("unavailable: the namespace probe failed"));
}

#[test]
fn a_container_masked_proc_gets_the_container_remedy() {
    // What bwrap says inside podman's or Docker's default container (a
    // read-only /proc/sys), and when only /proc/sys is unmasked (the other
    // masked paths still refuse a fresh procfs).
    for stderr in [
        &b"bwrap: cannot open /proc/sys/user/max_user_namespaces: Read-only file system\n"[..],
        &b"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"[..],
    ] {
        let failure = ProbeFailure::from_stderr(stderr);
        assert!(failure.in_container());
        let reason = failure.to_string();
        assert!(
            reason.starts_with("Bubblewrap is installed but unavailable: bwrap: "),
            "{reason}"
        );
        assert!(
            reason.contains("--security-opt systempaths=unconfined"),
            "{reason}"
        );
        assert!(reason.contains("procMount: Unmasked"), "{reason}");
        assert!(!reason.contains("sysctl"), "{reason}");
    }
}

#[test]
fn exec_failures_are_read_as_shell_statuses() {
    let missing = b"bwrap: execvp nope: No such file or directory\n";
    assert_eq!(
        classify_exec_failure(Some(1), b"", missing, b"nope"),
        Some(ExecFailure::NotFound)
    );
    let denied = b"bwrap: execvp /w/x.sh: Permission denied\n";
    assert_eq!(
        classify_exec_failure(Some(1), b"", denied, b"/w/x.sh"),
        Some(ExecFailure::NotExecutable)
    );
    assert_eq!(ExecFailure::NotFound.exit_code(), 127);
    assert_eq!(
        ExecFailure::NotFound.message("nope"),
        "nope: command not found\n"
    );
    assert_eq!(ExecFailure::NotExecutable.exit_code(), 126);
    assert_eq!(
        ExecFailure::NotExecutable.message("x"),
        "x: permission denied\n"
    );
    // The program's own output is never reinterpreted.
    assert_eq!(
        classify_exec_failure(Some(1), b"out", missing, b"nope"),
        None
    );
    assert_eq!(classify_exec_failure(Some(2), b"", missing, b"nope"), None);
    assert_eq!(classify_exec_failure(Some(1), b"", missing, b"other"), None);
    assert_eq!(
        classify_exec_failure(
            Some(1),
            b"",
            b"prefix\nbwrap: execvp nope: No such file or directory\n",
            b"nope"
        ),
        None
    );
    assert_eq!(classify_exec_failure(None, b"", missing, b"nope"), None);
}
