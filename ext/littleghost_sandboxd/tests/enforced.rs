//! What the daemon says of itself and of its refusals: the status a
//! refused launch gets, the reason a denial names, what `/v1/metadata`
//! publishes, what answers without the token.

mod support;

use std::time::Duration;

use littleghost_sandbox_proto::littleghost::v1::WatchDenialsRequest;
use littleghost_sandbox_proto::process::v1::ExecuteRequest;
use support::{config, Daemon, Options};
use tonic::Code;

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_or_missing_working_directory_gets_its_status_by_type() {
    let daemon = Daemon::start(Options::default());
    let run_in = |cwd: &str| {
        daemon.request(ExecuteRequest {
            config: Some(littleghost_sandbox_proto::process::v1::ProcessConfig {
                cwd: Some(cwd.into()),
                ..config(&["pwd"])
            }),
        })
    };
    let mut client = daemon.processes().await;
    // The workspace's words for a NUL byte do not begin with "workspace":
    // a status chosen by the words made this an internal error.
    let nul = client.execute(run_in("a\0b")).await.unwrap_err();
    assert_eq!(nul.code(), Code::PermissionDenied, "{nul:?}");
    let outside = client.execute(run_in("../..")).await.unwrap_err();
    assert_eq!(outside.code(), Code::PermissionDenied, "{outside:?}");
    let missing = client.execute(run_in("not-here")).await.unwrap_err();
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_denial_names_its_reason_and_says_its_words() {
    let daemon = Daemon::start(Options::default());
    let (status, _) = daemon.http("GET", "/v1/files/..%2Fescape.txt", b"");
    assert_eq!(status, 403);
    let mut denials = daemon
        .denial_client()
        .await
        .watch(daemon.request(WatchDenialsRequest { replay: true }))
        .await
        .unwrap()
        .into_inner();
    let denial = tokio::time::timeout(Duration::from_secs(10), denials.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        (denial.kind.as_str(), denial.operation.as_str()),
        ("filesystem", "read"),
        "{denial:?}"
    );
    assert_eq!(denial.reason, "escapes_scope", "{denial:?}");
    assert!(denial.message.contains("traversal"), "{denial:?}");
}

#[test]
fn metadata_publishes_what_the_policy_enforces() {
    let daemon = Daemon::start(Options {
        policy: Some(r#"{"files": {"root": "read_only"}, "process_limits": {"cpu_seconds": 5}}"#),
        ..Options::default()
    });
    let (status, metadata) = daemon.json("GET", "/v1/metadata", b"");
    assert_eq!(status, 200);
    let ours = &metadata["x-littleghost"];
    assert_eq!(
        ours["files"],
        serde_json::json!({"root": "read_only"}),
        "{metadata}"
    );
    assert_eq!(ours["network"], "none");
    assert_eq!(ours["process_limits"]["cpu_seconds"], 5);
    assert_eq!(
        ours["process_limits"]["memory_bytes"],
        serde_json::Value::Null
    );
    let backend = ours["backend"].as_str().unwrap();
    assert!(["bubblewrap", "landlock"].contains(&backend), "{metadata}");
    let features: Vec<&str> = ours["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for feature in ["filesystem_read", "process_execute", "process_spawn"] {
        assert!(features.contains(&feature), "{feature} missing: {metadata}");
    }
    // The CPU limit is enforced one way or the other; no call can ask for
    // subprocesses to be denied.
    assert!(
        features.contains(&"cpu_limit") || features.contains(&"process_cpu_limit"),
        "{metadata}"
    );
    assert!(!features.contains(&"process_spawn_denial"), "{metadata}");
    // The reference's `env` is still there.
    assert_eq!(
        metadata["env"]["SANDBOXD_IMPLEMENTATION"],
        "littleghost-sandboxd"
    );
}

#[test]
fn health_answers_without_the_token_only_when_asked_and_nothing_else_does() {
    let strict = Daemon::start(Options {
        token: Some("s3cret"),
        ..Options::default()
    });
    let (status, _) = support::http(&strict.rest, "GET", "/v1/health", None, b"");
    assert_eq!(status, 401, "every request needs the token by default");
    let daemon = Daemon::start(Options {
        token: Some("s3cret"),
        health_without_token: true,
        ..Options::default()
    });
    let (status, body) = support::http(&daemon.rest, "GET", "/v1/health", None, b"");
    assert_eq!(status, 200);
    let health: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        health,
        serde_json::json!({"status": "ok"}),
        "only liveness, not the uptime"
    );
    let with_token = daemon.json("GET", "/v1/health", b"");
    assert!(with_token.1["uptime_seconds"].is_u64(), "{with_token:?}");
    for target in [
        "/v1/metadata",
        "/v1/files/",
        "/v1/x-littleghost/allows/a?operation=filesystem_read",
    ] {
        let (status, _) = support::http(&daemon.rest, "GET", target, None, b"");
        assert_eq!(status, 401, "{target}");
    }
    let wrong = support::http(
        &daemon.rest,
        "GET",
        "/v1/metadata",
        Some("Bearer nope"),
        b"",
    );
    assert_eq!(wrong.0, 401);
}

#[test]
fn allows_answers_with_the_brokers_rules_and_the_calls_scope() {
    let daemon = Daemon::start(Options {
        policy: Some(r#"{"files": {"root": "read_write"}}"#),
        ..Options::default()
    });
    std::fs::write(daemon.path("notes.md"), "x").unwrap();
    std::os::unix::fs::symlink("/etc", daemon.path("planted")).unwrap();
    let ask = |path: &str, feature: &str, scope: Option<&str>| -> bool {
        let target = format!("/v1/x-littleghost/allows/{path}?operation={feature}");
        let (status, body) = match scope {
            None => daemon.http("GET", &target, b""),
            Some(scope) => support::request_with(
                &daemon,
                "GET",
                &target,
                &format!("x-littleghost-scope: {scope}\r\n"),
                b"",
            ),
        };
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        answer["allowed"].as_bool().unwrap()
    };
    assert!(ask("notes.md", "filesystem_write", None));
    assert!(
        ask("new.md", "filesystem_write", None),
        "a file not there yet may be written"
    );
    assert!(!ask("new.md", "filesystem_read", None), "but not read");
    assert!(!ask("..%2Fescape", "filesystem_read", None));
    assert!(!ask("planted%2Fpasswd", "filesystem_read", None));
    let read_only = r#"{"files": {"root": "read_only"}}"#;
    assert!(ask("notes.md", "filesystem_read", Some(read_only)));
    assert!(!ask("notes.md", "filesystem_write", Some(read_only)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_a_signal_ended_exits_128_plus_the_signal() {
    // The reference reports -1; no client of it reads -1 as a signal, and
    // 128 + N is what a shell or bwrap in between reports anyway
    // (docs/design.md "littleghost-sandboxd").
    let daemon = Daemon::start(Options::default());
    let killed = daemon
        .execute(&["sh", "-c", "kill -KILL $$"])
        .await
        .unwrap();
    assert_eq!(killed.exit_code, 137, "{killed:?}");
}
