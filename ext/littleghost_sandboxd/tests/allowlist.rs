//! A `network` allowlist in the daemon's policy: the built-in gateway runs
//! from start to shutdown, on Bubblewrap and on Landlock alike.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use littleghost_sandbox_proto::littleghost::v1::WatchDenialsRequest;
use support::{Daemon, Options};

/// A loopback HTTP server answering `allowed` and keeping each request's head.
fn server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            kept.lock().unwrap().push(head);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nallowed",
            );
        }
    });
    (port, heads)
}

async fn allowlisted_requests(provider: &str) {
    let (port, heads) = server();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    let policy = format!(
        r#"{{"provider": "{provider}",
            "network": {{"allow": ["127.0.0.1:{port}"], "allow_private_destinations": true,
                         "secrets": {{"api": {{"value": "real-token-123",
                                              "destinations": ["127.0.0.1:{port}"]}}}}}}}}"#
    );
    let mut daemon = Daemon::start(Options {
        policy: Some(&policy),
        ..Options::default()
    });
    let mut denials = daemon
        .denial_client()
        .await
        .watch(daemon.request(WatchDenialsRequest { replay: true }))
        .await
        .unwrap()
        .into_inner();

    // The proxy variables lead curl to the gateway; the header carries the stand-in.
    let script = format!(
        "curl -sS --max-time 20 -H \"Authorization: Bearer $LITTLEGHOST_SECRET_API\" \
         http://127.0.0.1:{port}/; echo; echo \"seen=$LITTLEGHOST_SECRET_API\""
    );
    let allowed = daemon.execute(&["sh", "-c", &script]).await.unwrap();
    let stdout = String::from_utf8_lossy(&allowed.stdout).to_string();
    let stderr = String::from_utf8_lossy(&allowed.stderr).to_string();
    assert_eq!(allowed.exit_code, 0, "{stdout} {stderr}");
    assert!(stdout.starts_with("allowed\n"), "{stdout} {stderr}");
    let seen = stdout
        .lines()
        .find_map(|l| l.strip_prefix("seen="))
        .unwrap();
    assert!(seen.starts_with("lgsecret_"), "the child saw {seen:?}");
    assert!(!stdout.contains("real-token-123"));
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].contains("Authorization: Bearer real-token-123"),
        "{heads:?}"
    );
    assert!(!heads[0].contains(seen), "{heads:?}");

    // Another port: the gateway refuses (--noproxy '' keeps curl on the proxy).
    let script = format!(
        "curl -s --noproxy '' --max-time 20 -o /dev/null -w '%{{http_code}}' \
         http://127.0.0.1:{other_port}/"
    );
    let refused = daemon.execute(&["sh", "-c", &script]).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&refused.stdout), "403");
    assert!(
        other.accept().is_err(),
        "the sandbox reached a port not allowed"
    );
    let denial = tokio::time::timeout(Duration::from_secs(10), denials.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        (denial.kind.as_str(), denial.target.as_str()),
        ("network", format!("127.0.0.1:{other_port}").as_str()),
        "{denial:?}"
    );

    // Shutdown stops the gateway: its directory (and the socket in it) is gone.
    let directory = gateway_directory(daemon.child.id());
    assert!(directory.is_dir(), "{directory:?}");
    daemon.terminate();
    assert!(daemon.wait().success());
    assert!(!directory.exists(), "{directory:?} outlived the daemon");
}

/// The gateway's private directory, which the daemon holds open while it serves.
fn gateway_directory(pid: u32) -> std::path::PathBuf {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .find(|target| {
            let name = target.file_name().map(|n| n.to_string_lossy().to_string());
            name.is_some_and(|n| n.starts_with("littleghost-gateway-"))
        })
        .expect("the daemon holds no gateway directory")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowlist_runs_the_gateway_under_bubblewrap() {
    allowlisted_requests("bubblewrap").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowlist_runs_the_gateway_under_landlock() {
    allowlisted_requests("landlock").await;
}
