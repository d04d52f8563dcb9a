//! The token, the loopback rule and the SIGTERM drain.

mod support;

use littleghost_sandbox_proto::process::v1::start_response::Event;
use littleghost_sandbox_proto::process::v1::{ExecuteRequest, StartRequest};
use support::{config, eventually, http, http_with, process_with, Daemon, Options};
use tonic::Code;

#[tokio::test(flavor = "multi_thread")]
async fn with_a_token_every_call_needs_it() {
    let daemon = Daemon::start(Options {
        token: Some("s3cret-token"),
        ..Options::default()
    });
    for authorization in [None, Some("Bearer wrong"), Some("s3cret-token")] {
        let (status, body) = http(&daemon.rest, "GET", "/v1/metadata", authorization, b"");
        assert_eq!(status, 401, "{authorization:?}");
        assert!(String::from_utf8_lossy(&body).contains("UNAUTHENTICATED"));
        let (status, _) = http(&daemon.rest, "PUT", "/v1/files/x", authorization, b"x");
        assert_eq!(status, 401);
    }
    assert!(!daemon.path("x").exists());
    assert_eq!(daemon.http("GET", "/v1/metadata", b"").0, 200);
    // Through the sandbox-router, which takes `authorization` for its own token.
    let routed = "X-Littleghost-Authorization: Bearer s3cret-token";
    assert_eq!(http_with(&daemon.rest, "GET", "/v1/metadata", routed), 200);
    let wrong = "X-Littleghost-Authorization: Bearer wrong";
    assert_eq!(http_with(&daemon.rest, "GET", "/v1/metadata", wrong), 401);
    let mut client = daemon.processes().await;
    let bare = tonic::Request::new(ExecuteRequest {
        config: Some(config(&["true"])),
    });
    assert_eq!(
        client.execute(bare).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    let mut wrong = tonic::Request::new(ExecuteRequest {
        config: Some(config(&["true"])),
    });
    wrong
        .metadata_mut()
        .insert("authorization", "Bearer wrong".parse().unwrap());
    assert_eq!(
        client.execute(wrong).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    assert_eq!(daemon.execute(&["true"]).await.unwrap().exit_code, 0);
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(support::binary())
        .arg("--root")
        .arg(dir.path())
        .args(["--grpc", "0.0.0.0:0", "--rest", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--grpc 0.0.0.0:0 is not a loopback address: give --token-file"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_answers_503_ends_the_programs_and_exits_0() {
    let mut daemon = Daemon::start(Options::default());
    let mut client = daemon.processes().await;
    let request = daemon.request(StartRequest {
        // Deaf to TERM: only the KILL after the grace ends it.
        config: Some(config(&[
            "sh",
            "-c",
            "trap '' TERM; echo ready; exec sleep 27.1828",
        ])),
        pty: None,
    });
    let mut stream = client.start(request).await.unwrap().into_inner();
    loop {
        match stream.message().await.unwrap().unwrap().event.unwrap() {
            Event::Stdout(bytes) if bytes.starts_with(b"ready") => break,
            _ => {}
        }
    }
    // "ready" comes before the shell execs the marked program.
    assert!(eventually(|| process_with("27.1828")));
    daemon.terminate();
    assert!(
        eventually(|| daemon.http("GET", "/v1/health", b"").0 == 503),
        "health never answered 503"
    );
    assert!(
        eventually(|| !process_with("27.1828")),
        "the program survived SIGTERM"
    );
    let exit = loop {
        match stream.message().await {
            Ok(Some(message)) => {
                if let Some(Event::Exit(exit)) = message.event {
                    break Some(exit);
                }
            }
            _ => break None,
        }
    };
    // Ended by a signal: TERM (143) where the leader takes it, else KILL (137).
    let code = exit.map(|e| e.exit_code);
    assert!(matches!(code, Some(137 | 143)), "{code:?}");
    assert_eq!(daemon.wait().code(), Some(0));
}
