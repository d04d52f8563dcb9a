use super::*;

/// Runs the real bwrap with `argv` and returns (exit code, stdout, stderr).
fn run_bwrap(
    options: &[OsString],
    command: &[&str],
    keep_fd: Option<RawFd>,
) -> (Option<i32>, String, String) {
    use std::os::unix::process::CommandExt;
    require_bwrap();
    let mut cmd = std::process::Command::new(DEFAULT_EXECUTABLE);
    cmd.args(options).arg("--").args(command).env_clear();
    if let Some(fd) = keep_fd {
        // Keep only this fd across bwrap's exec.
        // SAFETY: the closure runs between fork and exec and only calls
        // fcntl, which is async-signal-safe; it allocates nothing and
        // touches no lock.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn real_bwrap_keeps_host_sysctls_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let launch = Launch::new(
        RootFilesystem::Isolated,
        vec![rw(root.to_str().unwrap())],
        root.clone(),
    );
    let options = bubblewrap_args(&launch, &RealHost).unwrap();
    // Writes the current value back: harmless if the bind were missing.
    let script = "v=$(cat /proc/sys/fs/lease-break-time); echo $v > /proc/sys/fs/lease-break-time && echo wrote; echo $v";
    let (_, stdout, stderr) = run_bwrap(&options, &["/bin/sh", "-c", script], None);
    let host = std::fs::read_to_string("/proc/sys/fs/lease-break-time").unwrap();
    assert_eq!(stdout, host, "{stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
}

#[test]
fn real_bwrap_accepts_the_argv_and_enforces_masks_and_the_filter() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("hidden/kept")).unwrap();
    std::fs::write(root.join("hidden/secret"), "s").unwrap();
    std::fs::write(root.join("hidden/kept/file"), "k").unwrap();
    let workspace = root.to_str().unwrap();
    let mut launch = Launch::new(
        RootFilesystem::Isolated,
        vec![rw(workspace), ro(&format!("{workspace}/hidden/kept"))],
        root.clone(),
    );
    launch.masks = vec![root.join("hidden")];
    launch.workspace_paths = vec![root.clone()];
    let filter = crate::backend::seccomp::filter_fd(&crate::backend::seccomp::Filter::for_launch(
        true, None, None,
    ))
    .unwrap();
    launch.seccomp_fd = Some(filter.as_raw_fd());
    let options = bubblewrap_args(&launch, &RealHost).unwrap();
    // Builtins only until the last line: under the filter the shell cannot fork.
    let script = "echo hidden/*; read line < hidden/kept/file; echo $line; /bin/true; echo spawned";
    let (code, stdout, stderr) = run_bwrap(&options, &["/bin/sh", "-c", script], launch.seccomp_fd);
    assert_eq!(stdout, "hidden/kept\nk\n", "{stderr}");
    assert!(stderr.contains("Cannot fork"), "{stderr}");
    assert_ne!(code, Some(0));
}

#[test]
fn real_bwrap_exec_failures_match_the_classifier() {
    let launch = Launch::new(RootFilesystem::Isolated, vec![ro("/usr")], "/usr".into());
    let options = bubblewrap_args(&launch, &RealHost).unwrap();
    let (code, stdout, stderr) = run_bwrap(&options, &["no-such-program"], None);
    assert_eq!(
        classify_exec_failure(
            code,
            stdout.as_bytes(),
            stderr.as_bytes(),
            b"no-such-program"
        ),
        Some(ExecFailure::NotFound),
        "{code:?} {stderr}"
    );
    let (code, stdout, stderr) = run_bwrap(&options, &["/usr/share"], None);
    assert_eq!(
        classify_exec_failure(code, stdout.as_bytes(), stderr.as_bytes(), b"/usr/share"),
        Some(ExecFailure::NotExecutable),
        "{code:?} {stderr}"
    );
}
