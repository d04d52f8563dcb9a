//! B.2: the functional probe of a bwrap executable and the reasons it reports.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// B.2: the functional probe: can this bwrap create the namespaces we need?
pub fn probe_argv(executable: &Path) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![executable.as_os_str().to_owned()];
    // --disable-userns is probed too: every launch uses it. So is a fresh
    // procfs (the default `proc: :new`): a container that masks parts of its
    // /proc (podman's or Docker's masked paths) lets the namespaces be made
    // but refuses that mount, and every launch would then fail.
    for part in [
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
        "/bin/true",
    ] {
        argv.push(part.into());
    }
    argv
}

/// B.2: the reason for a missing executable, with what to do about it.
pub fn missing_reason(executable: &Path) -> String {
    format!(
        "Bubblewrap is not installed at {} (install it with `apt-get install bubblewrap`, or pass bubblewrap: PATH)",
        executable.display()
    )
}

/// B.2: why the functional probe failed: bwrap's first stderr line, or a
/// generic phrase, followed by the remedy: the container one when bwrap
/// tripped over a read-only or masked /proc (what a container runtime sets
/// up by default), else the usual user-namespace one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Bubblewrap is installed but unavailable: {} ({})",
    .first_line.as_deref().unwrap_or("the namespace probe failed"),
    self.remedy()
)]
pub struct ProbeFailure {
    /// bwrap's first non-empty stderr line, trimmed.
    pub first_line: Option<String>,
}

impl ProbeFailure {
    /// The failure bwrap described on `stderr`.
    pub fn from_stderr(stderr: &[u8]) -> ProbeFailure {
        let text = String::from_utf8_lossy(stderr);
        let first = text.lines().map(str::trim).find(|line| !line.is_empty());
        ProbeFailure {
            first_line: first.map(str::to_owned),
        }
    }

    /// bwrap met a read-only or masked /proc, as inside a container.
    pub fn in_container(&self) -> bool {
        self.first_line.as_deref().is_some_and(|line| {
            line.contains("/proc/sys/user/max_user_namespaces") || line.contains("mount proc")
        })
    }

    fn remedy(&self) -> &'static str {
        if self.in_container() {
            "inside a container, /proc is read-only or partly masked: run it with \
             --security-opt systempaths=unconfined (Docker also needs seccomp=unconfined and \
             apparmor=unconfined; Kubernetes: securityContext.procMount: Unmasked), or let Native use Landlock"
        } else {
            "enable unprivileged user namespaces: \
             sysctl -w kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, \
             or allow bwrap in the AppArmor/SELinux policy"
        }
    }
}

/// True iff `path` is a regular file this process may execute.
pub fn is_executable_file(path: &Path) -> bool {
    path.is_file() && rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

/// A probed executable's path and file identity: device, inode, mtime.
type ProbeKey = (PathBuf, u64, u64, i64);

/// Executables whose functional probe passed, keyed by path and file
/// identity, so a replaced binary is probed again (W18).
static PROBED: Mutex<Option<HashSet<ProbeKey>>> = Mutex::new(None);

fn probe_key(executable: &Path) -> Option<ProbeKey> {
    let meta = std::fs::metadata(executable).ok()?;
    Some((
        executable.to_path_buf(),
        meta.dev(),
        meta.ino(),
        meta.mtime(),
    ))
}

/// B.2 and B.5 step 6: runs the functional probe (5 s, 16 KiB of stderr)
/// unless it already passed for this executable in this process, and
/// returns why it failed otherwise. The probe takes milliseconds; the
/// bound only guards against a wedged kernel.
pub fn functional_probe(executable: &Path) -> std::result::Result<(), ProbeFailure> {
    let key = probe_key(executable);
    let cached = |key: &ProbeKey| {
        PROBED
            .lock()
            .map(|set| set.as_ref().is_some_and(|s| s.contains(key)))
            .unwrap_or(false)
    };
    if key.as_ref().is_some_and(cached) {
        return Ok(());
    }
    let argv = probe_argv(executable);
    let spawned = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = spawned else {
        return Err(ProbeFailure::from_stderr(b""));
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let mut stderr = Vec::new();
    if let Some(pipe) = child.stderr.take() {
        let _ = pipe.take(16 * 1024).read_to_end(&mut stderr);
    }
    match status {
        Some(status) if status.success() => {
            if let (Some(key), Ok(mut set)) = (key, PROBED.lock()) {
                set.get_or_insert_with(HashSet::new).insert(key);
            }
            Ok(())
        }
        _ => Err(ProbeFailure::from_stderr(&stderr)),
    }
}
