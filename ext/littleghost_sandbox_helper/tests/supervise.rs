#![cfg(target_os = "linux")]
//! The `supervise` mode under real Landlock on this machine: each test runs
//! the helper and has the confined command actually attempt the escape.
//! Skipped (with a message) only where the kernel's Landlock is below the
//! backend's minimum ABI.

use std::io::Read;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use littleghost_sandbox_core::backend::landlock::{self, Grant, Network, RootMode};

const HELPER: &str = env!("CARGO_BIN_EXE_littleghost-sandbox-helper");

fn landlock_usable() -> bool {
    let probe = landlock::probe();
    if let Some(reason) = &probe.unavailable {
        eprintln!("skipped: {reason}");
    }
    probe.unavailable.is_none()
}

struct Sandbox {
    _dir: tempfile::TempDir,
    work: PathBuf,
    tmp: PathBuf,
}

/// A workspace `work` (read-only) holding `work/src` (read-only) and
/// `work/out` (writable; a read-only grant inside a writable one is refused
/// by the plan, see `landlock::plan`), a private
/// tmp, and a secret beside them that no grant covers.
fn sandbox() -> Sandbox {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::create_dir_all(work.join("out")).unwrap();
    std::fs::write(work.join("src/code"), "code").unwrap();
    std::fs::write(dir.path().join("secret"), "secret").unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    Sandbox {
        work,
        tmp,
        _dir: dir,
    }
}

fn run(
    sandbox: &Sandbox,
    root: RootMode,
    network_none: bool,
    deny_subprocesses: bool,
    command: &[&str],
) -> Output {
    let network = if network_none {
        Network::None
    } else {
        Network::Inherit
    };
    run_with(sandbox, root, network, deny_subprocesses, command)
}

fn run_with(
    sandbox: &Sandbox,
    root: RootMode,
    network: Network,
    deny_subprocesses: bool,
    command: &[&str],
) -> Output {
    let grants = [
        Grant {
            path: sandbox.work.clone(),
            writable: false,
        },
        Grant {
            path: sandbox.work.join("src"),
            writable: false,
        },
        Grant {
            path: sandbox.work.join("out"),
            writable: true,
        },
    ];
    let plan = landlock::plan(
        root,
        &grants,
        &[PathBuf::from("/usr")],
        &sandbox.tmp,
        network,
        deny_subprocesses,
    )
    .unwrap();
    Command::new(HELPER)
        .arg("supervise")
        .args(plan.to_args())
        .arg("--")
        .args(command)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn sh(sandbox: &Sandbox, script: &str) -> Output {
    run(
        sandbox,
        RootMode::Isolated,
        true,
        false,
        &["/bin/sh", "-c", script],
    )
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn reads_outside_grants_and_writes_to_read_only_grants_are_refused() {
    if !landlock_usable() {
        return;
    }
    let s = sandbox();
    let secret = s.work.parent().unwrap().join("secret");
    let script = format!(
        "cat {w}/src/code; echo; cat {secret} && echo READ-SECRET; \
         echo x > {w}/src/new && echo WROTE-SRC; echo x >> {w}/src/code && echo APPENDED-SRC; \
         echo x > {w}/out/file && echo wrote-out; echo x > {w}/top && echo WROTE-TOP; \
         echo x > $TMPDIR_PATH/t && echo wrote-tmp; \
         echo x > /usr/evil && echo WROTE-USR; ls / > /dev/null && echo LISTED-ROOT; \
         cat /etc/passwd > /dev/null && echo READ-ETC; true",
        w = s.work.display(),
        secret = secret.display(),
    )
    .replace("$TMPDIR_PATH", &s.tmp.display().to_string());
    let output = sh(&s, &script);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.starts_with("code\n"), "{stdout}");
    assert!(
        stdout.contains("wrote-out") && stdout.contains("wrote-tmp"),
        "{stdout}"
    );
    for escape in [
        "READ-SECRET",
        "WROTE-SRC",
        "WROTE-TOP",
        "APPENDED-SRC",
        "WROTE-USR",
        "LISTED-ROOT",
        "READ-ETC",
    ] {
        assert!(!stdout.contains(escape), "{escape}: {stdout}");
    }
    assert_eq!(
        std::fs::read_to_string(s.work.join("src/code")).unwrap(),
        "code"
    );
    assert!(!s.work.join("src/new").exists());
}

#[test]
fn read_only_root_hides_other_processes_in_proc() {
    if !landlock_usable() {
        return;
    }
    let s = sandbox();
    let parent = std::process::id();
    let script = format!(
        "cat /etc/hostname > /dev/null && echo read-etc; cat /proc/{parent}/cmdline && echo READ-CMDLINE; \
         cat /proc/{parent}/environ && echo READ-ENVIRON; ls /proc/{parent}/fd && echo LISTED-FD; \
         echo x > /etc/evil && echo WROTE-ETC; true"
    );
    let output = run(
        &s,
        RootMode::ReadOnly,
        true,
        false,
        &["/bin/sh", "-c", &script],
    );
    let (stdout, stderr) = text(&output);
    assert!(stdout.contains("read-etc"), "{stdout} {stderr}");
    for escape in ["READ-CMDLINE", "READ-ENVIRON", "LISTED-FD", "WROTE-ETC"] {
        assert!(!stdout.contains(escape), "{escape}: {stdout}");
    }
}

/// A stand-in for the gateway on a Unix socket: a proxy request gets
/// "proxied", `CONNECT 10.255.255.1:80` a 200 and then "tunnelled", every
/// other `CONNECT` a 403. Returns the socket file as an inheritable `O_PATH`
/// descriptor (what the core hands the helper) and the folder holding it.
fn fake_gateway() -> (libc::c_int, tempfile::TempDir) {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                reader.read_line(&mut first).unwrap_or_default();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let answer: &[u8] = if first.starts_with("CONNECT 10.255.255.1:80 ") {
                    b"HTTP/1.1 200 Connection established\r\n\r\ntunnelled"
                } else if first.starts_with("CONNECT ") {
                    b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
                } else {
                    b"proxied"
                };
                let _ = (&stream).write_all(answer);
            });
        }
    });
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: open(2) of a NUL-terminated path; O_PATH without CLOEXEC, so
    // the helper inherits it.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH) };
    assert!(fd > 2);
    (fd, dir)
}

#[test]
fn under_an_allowlist_the_supervisor_makes_every_connection_of_the_child() {
    if !landlock_usable() || !Path::new("/usr/bin/python3").exists() {
        return;
    }
    let s = sandbox();
    let (gateway, _folder) = fake_gateway();
    // A host listener the child must not reach directly.
    let host = TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();
    let script = format!(
        "import socket\n\
         def attempt(name, address, send=b''):\n\
         \x20   try:\n\
         \x20       c = socket.create_connection(address, timeout=10)\n\
         \x20       c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n\
         \x20       c.sendall(send)\n\
         \x20       print(name, c.recv(100).decode())\n\
         \x20   except OSError as e:\n\
         \x20       print(name, 'refused', e.errno)\n\
         attempt('proxy', ('127.0.0.1', 3128), b'GET http://x/ HTTP/1.1\\r\\n\\r\\n')\n\
         attempt('allowed', ('10.255.255.1', 80))\n\
         attempt('denied', ('10.255.255.2', 80))\n\
         attempt('host', ('127.0.0.1', {port}))\n\
         attempt('proxy port elsewhere', ('127.0.0.2', 3128))\n\
         for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW):\n\
         \x20   try:\n\
         \x20       socket.socket(socket.AF_INET, kind)\n\
         \x20       print('opened', kind)\n\
         \x20   except OSError as e:\n\
         \x20       print('socket refused', e.errno)\n"
    );
    let output = run_with(
        &s,
        RootMode::Isolated,
        Network::Gateway(gateway),
        false,
        &["/usr/bin/python3", "-c", &script],
    );
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout} {stderr}");
    let refused = format!("refused {}", libc::ECONNREFUSED);
    for line in [
        "proxy proxied".to_string(),
        "allowed tunnelled".to_string(),
        format!("denied {refused}"),
        format!("host {refused}"),
        format!("proxy port elsewhere {refused}"),
        format!("socket refused {}", libc::EPERM),
    ] {
        assert!(
            stdout.contains(&line),
            "missing {line:?} in {stdout} {stderr}"
        );
    }
    assert!(!stdout.contains("opened"), "{stdout}");
    // Nothing reached the host's listener: the child never connected itself.
    assert!(host.accept().is_err());
}

/// Python (from /usr) attempts a connection; prints "connected" or the error.
fn connect_script(target: &str) -> String {
    format!(
        "import socket,sys\ntry:\n    {target}\n    print('connected')\nexcept OSError as e:\n    print('refused', e)\n"
    )
}

#[test]
fn host_tcp_listener_and_abstract_socket_are_unreachable_under_none() {
    if !landlock_usable() || !Path::new("/usr/bin/python3").exists() {
        return;
    }
    let s = sandbox();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let name = format!("littleghost-test-{}", std::process::id());
    let _abstract =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    let tcp_attempt = connect_script(&format!(
        "socket.create_connection(('127.0.0.1', {port}), timeout=5)"
    ));
    let unix_attempt = connect_script(&format!(
        "u = socket.socket(socket.AF_UNIX); u.connect('\\0{name}')"
    ));
    for (network_none, attempt) in [
        (true, &tcp_attempt),
        (true, &unix_attempt),
        (false, &unix_attempt),
    ] {
        let output = run(
            &s,
            RootMode::Isolated,
            network_none,
            false,
            &["/usr/bin/python3", "-c", attempt],
        );
        let (stdout, stderr) = text(&output);
        assert!(
            stdout.starts_with("refused"),
            "none={network_none}: {stdout} {stderr}"
        );
    }
    // The same TCP attempt under :inherit connects: the listener is real.
    let output = run(
        &s,
        RootMode::Isolated,
        false,
        false,
        &["/usr/bin/python3", "-c", &tcp_attempt],
    );
    assert!(
        text(&output).0.starts_with("connected"),
        "{:?}",
        text(&output)
    );
    // socketpair stays available under :none.
    let pair = "import socket\na, b = socket.socketpair(); a.send(b'x'); print('pair', b.recv(1))";
    let output = run(
        &s,
        RootMode::Isolated,
        true,
        false,
        &["/usr/bin/python3", "-c", pair],
    );
    assert!(
        text(&output).0.starts_with("pair b'x'"),
        "{:?}",
        text(&output)
    );
}

#[test]
fn the_child_cannot_signal_the_process_that_launched_it() {
    if !landlock_usable() {
        return;
    }
    let s = sandbox();
    let script = format!(
        "kill -0 {} && echo SIGNALLED; kill -0 $$ && echo self-ok",
        std::process::id()
    );
    let output = sh(&s, &script);
    let (stdout, stderr) = text(&output);
    assert!(!stdout.contains("SIGNALLED"), "{stdout}");
    assert!(stdout.contains("self-ok"), "{stdout} {stderr}");
}

#[test]
fn fork_is_refused_without_subprocesses_and_allowed_with_them() {
    if !landlock_usable() {
        return;
    }
    let s = sandbox();
    let script = "/bin/true && echo SPAWNED";
    let denied = run(
        &s,
        RootMode::Isolated,
        true,
        true,
        &["/bin/sh", "-c", script],
    );
    assert!(!text(&denied).0.contains("SPAWNED"), "{:?}", text(&denied));
    let allowed = run(
        &s,
        RootMode::Isolated,
        true,
        false,
        &["/bin/sh", "-c", script],
    );
    assert!(text(&allowed).0.contains("SPAWNED"), "{:?}", text(&allowed));
}

#[test]
fn descendants_are_gone_when_the_command_exits_and_its_status_is_kept() {
    if !landlock_usable() {
        return;
    }
    let s = sandbox();
    // A daemonized grandchild (new session, parent gone) and a plain one.
    let output = sh(
        &s,
        "setsid /bin/sleep 1000 & a=$!; /bin/sleep 1000 & echo $a $!; exit 7",
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(7), "{stderr}");
    for pid in stdout.split_whitespace() {
        let pid: i32 = pid.parse().unwrap();
        // SAFETY: signal 0 only checks existence.
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1, "sleep {pid} survived");
    }
    let killed = sh(&s, "kill -KILL $$");
    assert_eq!(killed.status.signal(), Some(libc::SIGKILL));
}

#[test]
fn sigterm_to_the_supervisor_ends_the_whole_tree() {
    if !landlock_usable() {
        return;
    }
    let s = sandbox();
    let plan = landlock::plan(
        RootMode::Isolated,
        &[],
        &[PathBuf::from("/usr")],
        &s.tmp,
        Network::None,
        false,
    )
    .unwrap();
    let mut child = Command::new(HELPER)
        .arg("supervise")
        .args(plan.to_args())
        .args([
            "--",
            "/bin/sh",
            "-c",
            "trap '' TERM; setsid /bin/sleep 1000 & echo $!; wait",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = [0u8; 16];
    let n = child.stdout.as_mut().unwrap().read(&mut line).unwrap();
    let pid: i32 = String::from_utf8_lossy(&line[..n]).trim().parse().unwrap();
    // SAFETY: signals the helper we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    // SAFETY: signal 0 only checks existence.
    assert_eq!(unsafe { libc::kill(pid, 0) }, -1, "sleep {pid} survived");
}

#[test]
fn a_malformed_plan_runs_nothing() {
    let output = Command::new(HELPER)
        .args([
            "supervise",
            "--read",
            "relative",
            "--network",
            "none",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
}

#[test]
fn the_child_holds_no_capability_and_cannot_read_host_process_memory_maps_or_environment() {
    if !landlock_usable() {
        return;
    }
    // A plan that reads the whole host, /proc included: the ptrace rules
    // must hold on their own (as root, CAP_SYS_PTRACE would bypass them).
    let parent = std::process::id();
    let script = format!(
        "while read line; do case $line in CapEff*|CapPrm*|CapBnd*|CapAmb*) echo $line;; esac; done < /proc/$$/status; \
         cat /proc/{parent}/environ && echo READ-ENVIRON; cat /proc/{parent}/maps && echo READ-MAPS; true"
    );
    let output = Command::new(HELPER)
        .args([
            "supervise",
            "--read",
            "/",
            "--network",
            "none",
            "--",
            "/bin/sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
        assert!(
            stdout.contains(&format!("{set}: 0000000000000000")),
            "{set}: {stdout} {stderr}"
        );
    }
    assert!(
        !stdout.contains("READ-ENVIRON") && !stdout.contains("READ-MAPS"),
        "{stdout}"
    );
}

#[test]
fn host_pathname_unix_sockets_are_unreachable_under_inherit_with_an_isolated_root() {
    if !landlock_usable() || !Path::new("/usr/bin/python3").exists() {
        return;
    }
    let s = sandbox();
    let socket = s.work.parent().unwrap().join("host.sock");
    let _listener = UnixListener::bind(&socket).unwrap();
    let attempt = connect_script(&format!(
        "u = socket.socket(socket.AF_UNIX); u.connect({:?})",
        socket.display().to_string()
    ));
    let isolated = run(
        &s,
        RootMode::Isolated,
        false,
        false,
        &["/usr/bin/python3", "-c", &attempt],
    );
    assert!(
        text(&isolated).0.starts_with("refused"),
        "{:?}",
        text(&isolated)
    );
    // With the host's root readable, as in Bubblewrap, the socket is reachable.
    let read_only = run(
        &s,
        RootMode::ReadOnly,
        false,
        false,
        &["/usr/bin/python3", "-c", &attempt],
    );
    assert!(
        text(&read_only).0.starts_with("connected"),
        "{:?}",
        text(&read_only)
    );
}

/// Host segments of `size` bytes (`/proc/sysvipc/shm` lists this IPC
/// namespace's: key, shmid, perms, size, ...).
fn host_segments(size: u64) -> Vec<String> {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter(|line| line.split_whitespace().nth(3) == Some(&size.to_string()))
        .map(|line| line.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect()
}

#[test]
fn system_v_ipc_of_the_host_is_out_of_reach_and_nothing_the_child_makes_outlives_it() {
    if !landlock_usable() || !std::path::Path::new("/usr/bin/ipcmk").exists() {
        return;
    }
    // Root: its own IPC namespace (the segment is made there and goes with
    // the launch); otherwise the filter refuses it. The host keeps none.
    let size = 64 * 1024 * 1024 + 8192;
    let before = host_segments(size);
    let s = sandbox();
    let output = sh(
        &s,
        &format!("/usr/bin/ipcmk -M {size} && echo made; /usr/bin/ipcs -m; echo done"),
    );
    let (stdout, stderr) = text(&output);
    assert!(stdout.contains("done"), "{stdout} {stderr}");
    let after = host_segments(size);
    for id in after.iter().filter(|id| !before.contains(id)) {
        let _ = Command::new("/usr/bin/ipcrm").args(["-m", id]).status();
    }
    assert_eq!(after, before, "a segment outlived the launch: {stdout}");
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        assert!(
            stdout.contains("made"),
            "root gets its own namespace: {stdout} {stderr}"
        );
    } else {
        assert!(!stdout.contains("made"), "{stdout}");
    }
}
