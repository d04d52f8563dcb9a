//! The strict request parser and the descriptor budget, seen from a client of the built-in gateway:
//! what the destination receives is exactly what the gateway says it
//! forwards, and a client holding connections open meets the descriptor
//! budget (503 and a denial) instead of exhausting the host's descriptors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use littleghost_sandbox_core::network::budget::Pool;
use littleghost_sandbox_core::network::{Allowlist, DenialReason, Gateway, GatewayConfig};

/// A destination that records every request head it receives and answers 200.
fn recording_server() -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 {
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                    line.clear();
                }
                let _ = tx.send(head);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            });
        }
    });
    (port, rx)
}

fn start(port: u16, configure: impl FnOnce(&mut GatewayConfig)) -> Gateway {
    let allowlist = Allowlist::new(&[format!("127.0.0.1:{port}")], true).unwrap();
    let mut config = GatewayConfig::new(allowlist);
    configure(&mut config);
    Gateway::start(config).unwrap()
}

fn connect(socket: &Path) -> UnixStream {
    let stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

fn exchange(socket: &Path, request: &[u8]) -> String {
    let mut stream = connect(socket);
    // Refused at accept, the answer may come (and the socket close) before
    // the request is written; what was answered is read all the same.
    let _ = stream.write_all(request);
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    out
}

/// Invariant: a request whose request line or header fields hide a bare LF
/// (or CR, or any control byte) is refused with 400 and never reaches the
/// destination; so the destination can never see the client's
/// `Proxy-Authorization` or a `Host` of the client's choosing.
#[test]
fn a_smuggled_header_never_reaches_the_destination() {
    let (port, heads) = recording_server();
    let gateway = start(port, |_| {});
    let socket = gateway.socket_path();
    let smuggling = [
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\nHost:internal.example\r\nAccept: */*\nProxy-Authorization: smuggled\r\n\r\n"),
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nAccept: */*\nHost: internal.example\nProxy-Authorization: smuggled\r\n\r\n"),
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nAccept: */*\rProxy-Authorization: smuggled\r\n\r\n"),
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nX: \u{0}\r\nProxy-Authorization: smuggled\r\n\r\n"),
        format!("GET http://127.0.0.1:{port}/ HTTP/1.9\r\nProxy-Authorization: smuggled\r\n\r\n"),
    ];
    for request in &smuggling {
        let answer = exchange(socket, request.as_bytes());
        assert!(
            answer.starts_with("HTTP/1.1 400 "),
            "{request:?} got {answer}"
        );
    }
    assert!(
        heads.recv_timeout(Duration::from_millis(200)).is_err(),
        "a refused request reached the destination"
    );

    // The same request with clean line ends is forwarded, stripped.
    let clean = format!(
        "GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: internal.example\r\nProxy-Authorization: secret\r\nAccept: */*\r\n\r\n"
    );
    let answer = exchange(socket, clean.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    let head = heads.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        head,
        format!(
            "GET /x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n"
        )
    );
    assert!(gateway.denials().is_empty(), "a 400 is not a denial");
}

/// Invariant: a request whose `Connection` lists `TE` or `Trailer` (which
/// say how a chunked body may end) is refused with 400 and a denial before
/// anything reaches the destination, as one listing `Content-Length`,
/// `Transfer-Encoding` or `Host` is; `Connection: Upgrade`, which every
/// WebSocket client sends, still goes through.
#[test]
fn a_connection_header_naming_te_or_trailer_is_refused() {
    let (port, heads) = recording_server();
    let gateway = start(port, |_| {});
    let socket = gateway.socket_path();
    for listed in ["TE\r\nTE: trailers", "trailer\r\nTrailer: X-Sum"] {
        let request = format!(
            "POST http://127.0.0.1:{port}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive, {listed}\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n"
        );
        let answer = exchange(socket, request.as_bytes());
        assert!(
            answer.starts_with("HTTP/1.1 400 "),
            "{listed:?} got {answer}"
        );
    }
    assert!(
        heads.recv_timeout(Duration::from_millis(200)).is_err(),
        "a refused request reached the destination"
    );
    let reasons: Vec<DenialReason> = gateway.denials().iter().map(|d| d.reason).collect();
    assert_eq!(reasons, [DenialReason::MalformedRequest; 2]);
    let upgrade = format!(
        "GET http://127.0.0.1:{port}/ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    );
    let mut stream = connect(socket);
    stream.write_all(upgrade.as_bytes()).unwrap();
    let head = heads.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(head.contains("Upgrade: websocket\r\n"), "{head}");
}

/// A `CONNECT` to `127.0.0.1:port` through the gateway at `socket`, left
/// open, with the status line it was answered.
fn open_tunnel(socket: &Path, port: u16) -> (UnixStream, String) {
    let mut stream = connect(socket);
    // A connection refused at accept may be answered and closed before this
    // is written (EPIPE): its 503 is still there to read.
    let _ = write!(stream, "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    let mut status = String::new();
    BufReader::new(stream.try_clone().unwrap())
        .read_line(&mut status)
        .unwrap();
    (stream, status)
}

/// Invariant: what a tunnel's readers buffer comes out of the gateway's
/// memory budget; past it a client gets 503 and a `memory_budget` denial,
/// and a connection that closes gives its bytes back.
#[test]
fn tunnels_beyond_the_memory_budget_get_503_and_a_denial() {
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = upstream.local_addr().unwrap().port();
    let held_upstream = std::thread::spawn(move || {
        upstream
            .incoming()
            .take(2)
            .filter_map(Result::ok)
            .collect::<Vec<_>>()
    });
    // Two readers of 16 KiB each per tunnel: two tunnels.
    let gateway = start(port, |config| config.memory_budget = 64 * 1024);
    let socket = gateway.socket_path();
    let open_tunnel = || open_tunnel(socket, port);
    let first = open_tunnel();
    let second = open_tunnel();
    assert!(first.1.starts_with("HTTP/1.1 200 "), "{}", first.1);
    assert!(second.1.starts_with("HTTP/1.1 200 "), "{}", second.1);
    let (_third, status) = open_tunnel();
    assert!(status.starts_with("HTTP/1.1 503 "), "{status}");
    let denials = gateway.denials();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].reason, DenialReason::MemoryBudget);
    drop(held_upstream.join().unwrap());
    drop((first, second));
    // Closed tunnels give their bytes back: a new one is served (answered
    // 502 here, the upstream listener being gone, but not 503).
    let mut answer = String::new();
    for _ in 0..200 {
        answer = exchange(
            socket,
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        if !answer.starts_with("HTTP/1.1 503 ") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(answer.starts_with("HTTP/1.1 502 "), "{answer}");
}

/// Invariant: each tunnel's two descriptors come out of the budget; past it
/// a client gets 503 and a `descriptor_budget` denial, and a connection
/// that closes gives its descriptors back.
#[test]
fn tunnels_beyond_the_descriptor_budget_get_503_and_a_denial() {
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = upstream.local_addr().unwrap().port();
    let held_upstream = std::thread::spawn(move || {
        upstream
            .incoming()
            .take(2)
            .filter_map(Result::ok)
            .collect::<Vec<_>>()
    });
    // Four descriptors for this gateway: two tunnels.
    let gateway = start(port, |config| config.pool = Pool::fixed(8));
    let socket = gateway.socket_path();
    let open_tunnel = || open_tunnel(socket, port);
    let first = open_tunnel();
    let second = open_tunnel();
    assert!(first.1.starts_with("HTTP/1.1 200 "), "{}", first.1);
    assert!(second.1.starts_with("HTTP/1.1 200 "), "{}", second.1);
    let (_third, status) = open_tunnel();
    assert!(status.starts_with("HTTP/1.1 503 "), "{status}");
    let denials = gateway.denials();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].reason, DenialReason::DescriptorBudget);
    assert_eq!(
        denials[0].destination, "*",
        "refused before its request was read"
    );
    drop(held_upstream.join().unwrap());
    drop((first, second));
    // Closed tunnels give their descriptors back: a new one is served
    // (answered 502 here, the upstream listener being gone, but not 503).
    let mut answer = String::new();
    for _ in 0..200 {
        answer = exchange(
            socket,
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        if !answer.starts_with("HTTP/1.1 503 ") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!answer.starts_with("HTTP/1.1 503 "), "{answer}");
}

/// A refused CONNECT is ended in stages, as a refused request is: a child
/// that sends more after its CONNECT (its ClientHello, say) can still write
/// once it has read the 403, and the gateway closes when the child ends.
/// Closed at once, the write below (larger than a socket buffer, so it
/// waits for the gateway to read) fails with a broken pipe.
#[test]
fn a_refused_connect_reads_on_until_the_client_ends() {
    let (port, _heads) = recording_server();
    let gateway = start(port, |_| {});
    let mut child = connect(gateway.socket_path());
    child
        .write_all(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    child.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 403 "), "{answer}");
    child.write_all(&vec![0x16; 4 << 20]).unwrap();
    child.shutdown(std::net::Shutdown::Write).unwrap();
    gateway.stop().unwrap();
}
