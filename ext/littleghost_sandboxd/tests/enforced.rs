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
