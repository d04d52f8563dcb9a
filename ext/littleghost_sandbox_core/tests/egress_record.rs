//! From a client's side: every tunnel and every forwarded
//! or refused request through the gateway is an egress event, kept by the
//! gateway and handed to `on_egress`. Only what the event promises callers is
//! checked, so these hold whichever request engine records the events.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use littleghost_sandbox_core::network::{Allowlist, Decision, EgressEvent, Gateway, GatewayConfig};

const BODY: &str = "hello from the destination";

/// A one-response-per-connection HTTP server on 127.0.0.1; returns its port.
fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
                    BODY.len()
                );
            });
        }
    });
    port
}

fn send(socket: &Path, request: &str) -> String {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    out
}

/// The gateway's events once there are `count` (an exchange is recorded as it
/// ends, which may be just after the client read its answer).
fn events(gateway: &Gateway, count: usize) -> Vec<EgressEvent> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while gateway.egress().len() < count && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    gateway.egress()
}

#[test]
fn tunnels_requests_and_refusals_are_each_an_event() {
    let port = server();
    let seen: Arc<Mutex<Vec<EgressEvent>>> = Arc::default();
    let mut config =
        GatewayConfig::new(Allowlist::new(&[format!("127.0.0.1:{port}")], true).unwrap());
    let sink = seen.clone();
    config.on_egress = Some(Arc::new(move |event: &EgressEvent| {
        sink.lock().unwrap().push(event.clone())
    }));
    let gateway = Gateway::start(config).unwrap();
    let socket = gateway.socket_path();

    let plain = send(
        socket,
        &format!("GET http://127.0.0.1:{port}/a?b=1 HTTP/1.1\r\nHost: x\r\n\r\n"),
    );
    assert!(plain.ends_with(BODY), "{plain}");
    events(&gateway, 1);
    let tunnelled = send(
        socket,
        &format!(
            "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"
        ),
    );
    assert!(tunnelled.ends_with(BODY), "{tunnelled}");
    events(&gateway, 2);
    let refused = send(
        socket,
        "GET http://127.0.0.1:1/nope HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");

    let kept = events(&gateway, 3);
    assert_eq!(kept.len(), 3, "{kept:?}");
    let [plain, tunnel, refused] = &kept[..] else {
        unreachable!()
    };
    let destination = format!("127.0.0.1:{port}");
    assert_eq!(plain.destination, destination);
    assert_eq!(
        (plain.method.as_deref(), plain.path.as_deref()),
        (Some("GET"), Some("/a?b=1"))
    );
    assert_eq!(
        (plain.status, plain.decision),
        (Some(200), Decision::Allowed)
    );
    assert!(plain.bytes_received > BODY.len() as u64, "{plain:?}");
    assert!(plain.duration > Duration::ZERO);

    assert_eq!(tunnel.destination, destination);
    assert_eq!(tunnel.method.as_deref(), Some("CONNECT"));
    assert_eq!(
        (tunnel.status, tunnel.decision),
        (Some(200), Decision::Allowed)
    );
    assert!(tunnel.bytes_sent > 0 && tunnel.bytes_received > BODY.len() as u64);
    assert!(!tunnel.inspected);

    assert_eq!(refused.destination, "127.0.0.1:1");
    assert_eq!(
        (refused.method.as_deref(), refused.path.as_deref()),
        (Some("GET"), Some("/nope"))
    );
    assert_eq!(
        (refused.status, refused.decision),
        (Some(403), Decision::Denied)
    );
    assert_eq!(refused.bytes_received, 0);

    assert_eq!(
        *seen.lock().unwrap(),
        kept,
        "on_egress saw every event, in order"
    );
}

#[test]
fn a_tunnel_open_when_the_gateway_stops_is_still_recorded() {
    // A destination that accepts and never answers: the tunnel stays open.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || listener.accept().map(|(stream, _)| stream));
    let config = GatewayConfig::new(Allowlist::new(&[format!("127.0.0.1:{port}")], true).unwrap());
    let gateway = Gateway::start(config).unwrap();
    let mut stream = UnixStream::connect(gateway.socket_path()).unwrap();
    write!(
        stream,
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\nping"
    )
    .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let _upstream = held.join().unwrap().unwrap();
    gateway.stop().unwrap();
    let kept = gateway.egress();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].method.as_deref(), Some("CONNECT"));
    assert_eq!(
        (kept[0].status, kept[0].decision),
        (Some(200), Decision::Allowed)
    );
}
