//! Programs over gRPC: confined by the policy, limited, streamed, timed out.

mod support;

use std::time::Duration;

use littleghost_sandbox_proto::littleghost::v1::WatchDenialsRequest;
use littleghost_sandbox_proto::process::v1::start_response::Event;
use littleghost_sandbox_proto::process::v1::write_stdin_request::Payload;
use littleghost_sandbox_proto::process::v1::{
    ExecuteRequest, SendSignalRequest, StartRequest, WriteStdinRequest,
};
use support::{config, eventually, process_with, Daemon, Options};
use tonic::Code;

#[tokio::test(flavor = "multi_thread")]
async fn a_confined_program_cannot_read_etc_shadow() {
    // The daemon runs as root here: unconfined, this read would succeed.
    let readable_here = std::fs::read("/etc/shadow").is_ok();
    let daemon = Daemon::start(Options::default());
    std::fs::write(daemon.path("mine.txt"), "workspace file").unwrap();
    let read = daemon.execute(&["cat", "mine.txt"]).await.unwrap();
    assert_eq!(
        (read.exit_code, read.stdout.as_slice()),
        (0, &b"workspace file"[..])
    );
    let shadow = daemon.execute(&["cat", "/etc/shadow"]).await.unwrap();
    assert_ne!(
        shadow.exit_code, 0,
        "read /etc/shadow (readable unconfined: {readable_here})"
    );
    assert!(shadow.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn network_none_holds() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let daemon = Daemon::start(Options::default());
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
    let result = daemon.execute(&["bash", "-c", &script]).await.unwrap();
    assert_ne!(result.exit_code, 0);
    assert!(
        listener.accept().is_err(),
        "the sandbox reached the host's loopback"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_limit_kills_and_is_streamed_back_as_a_denial() {
    let daemon = Daemon::start(Options {
        policy: Some(r#"{"process_limits": {"cpu_seconds": 1}}"#),
        ..Options::default()
    });
    let mut denials = daemon
        .denial_client()
        .await
        .watch(daemon.request(WatchDenialsRequest { replay: true }))
        .await
        .unwrap()
        .into_inner();
    let spin = daemon
        .execute(&["sh", "-c", "while :; do :; done"])
        .await
        .unwrap();
    assert_ne!(spin.exit_code, 0);
    let denial = tokio::time::timeout(Duration::from_secs(10), denials.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        (denial.kind.as_str(), denial.operation.as_str()),
        ("limit", "execute")
    );
    assert!(denial.message.contains("CPU time"), "{denial:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn start_streams_output_and_takes_stdin() {
    let daemon = Daemon::start(Options::default());
    let mut client = daemon.processes().await;
    let request = daemon.request(StartRequest {
        config: Some(config(&["sh", "-c", "echo started; cat; echo done >&2"])),
        pty: None,
    });
    let mut stream = client.start(request).await.unwrap().into_inner();
    let Some(Event::Init(init)) = stream.message().await.unwrap().unwrap().event else {
        panic!("the first event is not InitEvent");
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut sent = false;
    let exit = loop {
        let event = stream
            .message()
            .await
            .unwrap()
            .expect("an ExitEvent ends the stream");
        match event.event.unwrap() {
            Event::Stdout(bytes) => stdout.extend(bytes),
            Event::Stderr(bytes) => stderr.extend(bytes),
            Event::Exit(exit) => break exit,
            Event::Init(_) => panic!("a second InitEvent"),
        }
        if stdout.starts_with(b"started\n") && !sent {
            sent = true;
            for payload in [Payload::Input(b"ping\n".to_vec()), Payload::Eof(())] {
                let write = daemon.request(WriteStdinRequest {
                    process_id: init.process_id,
                    payload: Some(payload),
                });
                client.write_stdin(write).await.unwrap();
            }
        }
    };
    assert_eq!(stdout, b"started\nping\n");
    assert_eq!(stderr, b"done\n");
    assert_eq!(exit.exit_code, 0);
    let gone = daemon.request(WriteStdinRequest {
        process_id: init.process_id,
        payload: Some(Payload::Input(b"late".to_vec())),
    });
    assert_eq!(
        client.write_stdin(gone).await.unwrap_err().code(),
        Code::NotFound
    );
    let signal = daemon.request(SendSignalRequest {
        process_id: init.process_id,
        signal: 15,
    });
    assert_eq!(
        client.send_signal(signal).await.unwrap_err().code(),
        Code::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_execute_past_its_deadline_ends_the_program() {
    let daemon = Daemon::start(Options::default());
    let mut request = daemon.request(ExecuteRequest {
        config: Some(config(&["sleep", "31.4159"])),
    });
    request.set_timeout(Duration::from_millis(300));
    let status = daemon.processes().await.execute(request).await.unwrap_err();
    assert!(
        matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
        "{status:?}"
    );
    assert!(
        eventually(|| !process_with("31.4159")),
        "the program outlived its deadline"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_command_is_refused_as_sandboxd_does() {
    let daemon = Daemon::start(Options::default());
    let empty = daemon.execute(&[]).await.unwrap_err();
    assert_eq!(empty.code(), Code::InvalidArgument);
    let outside = daemon
        .processes()
        .await
        .execute(daemon.request(ExecuteRequest {
            config: Some(littleghost_sandbox_proto::process::v1::ProcessConfig {
                cwd: Some("../..".into()),
                ..config(&["pwd"])
            }),
        }))
        .await
        .unwrap_err();
    assert_eq!(outside.code(), Code::PermissionDenied, "{outside:?}");
    let missing = daemon.execute(&["no-such-program-here"]).await.unwrap();
    assert_eq!(missing.exit_code, 127);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_calls_scope_takes_the_network_away() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let daemon = Daemon::start(Options {
        policy: Some(r#"{"network": "inherit"}"#),
        ..Options::default()
    });
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
    let run = |scope: Option<&str>| {
        let mut request = daemon.request(ExecuteRequest {
            config: Some(config(&["bash", "-c", &script])),
        });
        if let Some(scope) = scope {
            request
                .metadata_mut()
                .insert("x-littleghost-scope", scope.parse().unwrap());
        }
        request
    };
    let mut client = daemon.processes().await;
    // The policy's network reaches the listener; the scope's `none` does not.
    let inherited = client.execute(run(None)).await.unwrap().into_inner();
    assert_eq!(inherited.exit_code, 0, "{inherited:?}");
    listener.set_nonblocking(true).unwrap();
    while listener.accept().is_ok() {}
    let narrowed = client
        .execute(run(Some(r#"{"network": "none"}"#)))
        .await
        .unwrap()
        .into_inner();
    assert_ne!(narrowed.exit_code, 0);
    assert!(
        listener.accept().is_err(),
        "the scoped program reached the listener"
    );
    let widened = Daemon::start(Options::default());
    let mut request = widened.request(ExecuteRequest {
        config: Some(config(&["true"])),
    });
    request.metadata_mut().insert(
        "x-littleghost-scope",
        r#"{"network": "inherit"}"#.parse().unwrap(),
    );
    let refused = widened
        .processes()
        .await
        .execute(request)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
}

/// A `Start` with `x-littleghost-run: true`: everything it streamed, and its exit code.
async fn started_run(daemon: &Daemon, argv: &[&str]) -> (Vec<u8>, Vec<u8>, i32) {
    let mut client = daemon.processes().await;
    let mut request = daemon.request(StartRequest {
        config: Some(config(argv)),
        pty: None,
    });
    request
        .metadata_mut()
        .insert("x-littleghost-run", "true".parse().unwrap());
    let mut stream = client.start(request).await.unwrap().into_inner();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    loop {
        let event = stream.message().await.unwrap().expect("an ExitEvent");
        match event.event.unwrap() {
            Event::Stdout(bytes) => stdout.extend(bytes),
            Event::Stderr(bytes) => stderr.extend(bytes),
            Event::Exit(exit) => return (stdout, stderr, exit.exit_code),
            Event::Init(_) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_start_asking_for_a_run_is_launched_bounded_and_shown_as_execute() {
    let daemon = Daemon::start(Options {
        policy: Some(r#"{"limits": {"output_bytes": 4}}"#),
        ..Options::default()
    });
    // stdin is closed from the start: `cat` ends at once, nobody writes to it.
    let argv = ["sh", "-c", "cat; printf 0123456789; printf abcdefgh >&2"];
    let streamed = tokio::time::timeout(Duration::from_secs(60), started_run(&daemon, &argv))
        .await
        .expect("a run's stdin is closed, so cat ends");
    assert_eq!(streamed, (b"0123".to_vec(), b"abcd".to_vec(), 0));
    let executed = daemon.execute(&argv).await.unwrap();
    assert_eq!(
        streamed,
        (executed.stdout, executed.stderr, executed.exit_code)
    );
    // bwrap's own exec failure, in the shell's words (with room for them).
    let daemon = Daemon::start(Options::default());
    let missing = started_run(&daemon, &["no-such-program-here"]).await;
    let executed = daemon.execute(&["no-such-program-here"]).await.unwrap();
    assert_eq!(
        missing,
        (executed.stdout, executed.stderr, executed.exit_code)
    );
    assert_eq!(missing.2, 127);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_named_path_is_granted_as_the_policy_says_and_nothing_more() {
    // Bubblewrap binds the grant; Landlock grants it by the handle opened at start.
    for provider in ["bubblewrap", "landlock"] {
        let outside = tempfile::tempdir().unwrap();
        let docs = std::fs::canonicalize(outside.path()).unwrap().join("docs");
        std::fs::create_dir(&docs).unwrap();
        std::fs::write(docs.join("readme"), "named").unwrap();
        std::fs::write(outside.path().join("secret"), "no").unwrap();
        let policy = format!(
            r#"{{"provider": "{provider}", "files": {{"root": "read_write", "docs": "read_only"}}}}"#
        );
        let daemon = Daemon::start(Options {
            policy: Some(&policy),
            paths: vec![("docs", docs.clone())],
            ..Default::default()
        });
        let read = daemon
            .execute(&[
                "/bin/sh",
                "-c",
                "cat \"$LITTLE_GHOST_WORKSPACE_DOCS/readme\"",
            ])
            .await
            .unwrap();
        assert_eq!(
            (read.exit_code, read.stdout.as_slice()),
            (0, &b"named"[..]),
            "{provider}"
        );
        let write = daemon
            .execute(&[
                "/bin/sh",
                "-c",
                "echo x > \"$LITTLE_GHOST_WORKSPACE_DOCS/planted\"",
            ])
            .await
            .unwrap();
        assert_ne!(
            write.exit_code, 0,
            "{provider} wrote through a read_only grant"
        );
        assert!(!docs.join("planted").exists());
        // The directory beside it, never named, stays out of reach.
        let beside = daemon
            .execute(&[
                "/bin/sh",
                "-c",
                "cat \"$LITTLE_GHOST_WORKSPACE_DOCS/../secret\"",
            ])
            .await
            .unwrap();
        assert_ne!(beside.exit_code, 0, "{provider}");
        assert!(beside.stdout.is_empty());
    }
}

#[test]
fn a_policy_granting_a_name_no_path_gives_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        r#"{"files": {"root": "read_write", "docs": "read_only"}}"#,
    )
    .unwrap();
    let output = std::process::Command::new(support::binary())
        .arg("--root")
        .arg(dir.path().join("root"))
        .arg("--policy")
        .arg(&policy)
        .args(["--grpc", "127.0.0.1:0", "--rest", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("grants :docs, which is not a workspace path"),
        "{said}"
    );
}
