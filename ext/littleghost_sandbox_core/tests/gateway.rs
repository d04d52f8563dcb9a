//! The built-in gateway seen from a client: loopback HTTP servers started
//! here stand in for the internet (no network in CI), hence
//! `allow_private_destinations: true` except where that option is the test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use littleghost_sandbox_core::grants::Access;
use littleghost_sandbox_core::network::{Allowlist, DenialReason, Gateway, GatewayConfig};

/// A one-response-per-connection HTTP server on 127.0.0.1.
struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

fn server(name: &'static str) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (count, seen) = (connections.clone(), heads.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                }
                seen.lock().unwrap().push(head);
                let body = format!("hello from {name}");
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    Server {
        port,
        connections,
        heads,
    }
}

fn gateway(entries: &[String], private: bool) -> Gateway {
    let allowlist = Allowlist::new(entries, private).unwrap();
    Gateway::start(GatewayConfig::new(allowlist)).unwrap()
}

fn client(socket: &Path) -> UnixStream {
    let stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

fn exchange(socket: &Path, request: &str) -> String {
    let mut stream = client(socket);
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    out
}

/// CONNECT, then one GET through the tunnel; returns (CONNECT answer, response).
fn tunnel(socket: &Path, target: &str) -> (String, String) {
    let mut stream = client(socket);
    write!(
        stream,
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    if !status.contains(" 200 ") {
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        return (status + &rest, String::new());
    }
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
        line.clear();
    }
    write!(stream, "GET / HTTP/1.1\r\nHost: {target}\r\n\r\n").unwrap();
    let mut response = String::new();
    let _ = reader.read_to_string(&mut response);
    (status, response)
}

fn entry(port: u16) -> Vec<String> {
    vec![format!("127.0.0.1:{port}")]
}

#[test]
fn an_allowed_server_is_reached_by_connect_and_plain_http() {
    let allowed = server("allowed");
    let gateway = gateway(&entry(allowed.port), true);
    let (status, response) = tunnel(
        gateway.socket_path(),
        &format!("127.0.0.1:{}", allowed.port),
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(response.ends_with("hello from allowed"), "{response}");

    let plain = exchange(
        gateway.socket_path(),
        &format!(
            "GET http://127.0.0.1:{}/path?q=1 HTTP/1.1\r\nHost: spoofed.test\r\nProxy-Connection: keep-alive\r\n\r\n",
            allowed.port
        ),
    );
    assert!(plain.starts_with("HTTP/1.1 200 OK"), "{plain}");
    assert!(plain.ends_with("hello from allowed"));
    let heads = allowed.heads.lock().unwrap();
    let last = heads.last().unwrap();
    assert!(last.starts_with("GET /path?q=1 HTTP/1.1\r\n"), "{last}");
    assert!(
        last.contains(&format!("Host: 127.0.0.1:{}\r\n", allowed.port)),
        "{last}"
    );
    assert!(
        !last.contains("spoofed") && !last.contains("Proxy-Connection"),
        "{last}"
    );
    assert!(gateway.denials().is_empty());
}

#[test]
fn a_sandbox_mounts_the_socket_directory_read_only_at_the_same_path() {
    let gateway = gateway(&entry(1), true);
    let mount = gateway.mount();
    assert_eq!(mount.source, gateway.directory());
    assert_eq!(mount.target, gateway.directory());
    assert_eq!(mount.access, Access::ReadOnly);
    assert!(!mount.tools && !mount.protect_aliases);
    assert!(gateway.socket_path().starts_with(&mount.target));
}

#[test]
fn an_unlisted_server_gets_403_and_a_recorded_denial() {
    let allowed = server("allowed");
    let other = server("other");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut config = GatewayConfig::new(Allowlist::new(&entry(allowed.port), true).unwrap());
    config.on_denial = Some(Arc::new(move |denial| {
        sink.lock().unwrap().push(denial.destination.clone())
    }));
    let gateway = Gateway::start(config).unwrap();

    let (status, _) = tunnel(gateway.socket_path(), &format!("127.0.0.1:{}", other.port));
    assert!(status.starts_with("HTTP/1.1 403 Forbidden"), "{status}");
    assert!(status.contains("not in the allowlist"), "{status}");
    let plain = exchange(
        gateway.socket_path(),
        &format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", other.port),
    );
    assert!(plain.starts_with("HTTP/1.1 403 Forbidden"), "{plain}");
    // Same host, other port; and the listed port by another name.
    let (status, _) = tunnel(
        gateway.socket_path(),
        &format!("localhost:{}", allowed.port),
    );
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");

    assert_eq!(
        other.connections.load(Ordering::SeqCst),
        0,
        "no connection reached the unlisted server"
    );
    let denials = gateway.denials();
    let expected = [
        format!("127.0.0.1:{}", other.port),
        format!("127.0.0.1:{}", other.port),
        format!("localhost:{}", allowed.port),
    ];
    let recorded: Vec<String> = denials.iter().map(|d| d.destination.clone()).collect();
    assert_eq!(recorded, expected);
    assert!(denials.iter().all(|d| d.reason == DenialReason::NotAllowed));
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[test]
fn a_name_resolving_to_a_private_address_is_refused_without_the_option() {
    let target = server("private");
    let name = vec![format!("localhost:{}", target.port)];
    let refusing = gateway(&name, false);
    let (status, _) = tunnel(refusing.socket_path(), &name[0]);
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    assert!(status.contains("private or reserved"), "{status}");
    let plain = exchange(
        refusing.socket_path(),
        &format!("GET http://{}/ HTTP/1.1\r\n\r\n", name[0]),
    );
    assert!(plain.starts_with("HTTP/1.1 403"), "{plain}");
    assert_eq!(target.connections.load(Ordering::SeqCst), 0);
    let denials = refusing.denials();
    assert_eq!(denials.len(), 2);
    assert!(denials
        .iter()
        .all(|d| d.reason == DenialReason::PrivateDestination));

    // The same entry with the option reaches the server (via 127.0.0.1 or ::1).
    let server_v4_only = target.port;
    let allowing = gateway(&name, true);
    let (status, response) = tunnel(
        allowing.socket_path(),
        &format!("localhost:{server_v4_only}"),
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(response.ends_with("hello from private"));
}

#[test]
fn bad_requests_get_4xx_without_a_denial() {
    let gateway = gateway(&entry(1), true);
    let origin = exchange(gateway.socket_path(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(origin.starts_with("HTTP/1.1 400"), "{origin}");
    let https = exchange(
        gateway.socket_path(),
        "GET https://a.test/ HTTP/1.1\r\n\r\n",
    );
    assert!(https.starts_with("HTTP/1.1 400"), "{https}");
    let big = format!(
        "GET http://a.test/ HTTP/1.1\r\nX: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let mut stream = client(gateway.socket_path());
    let _ = stream.write_all(big.as_bytes());
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    let no_port = exchange(gateway.socket_path(), "CONNECT a.test HTTP/1.1\r\n\r\n");
    assert!(no_port.starts_with("HTTP/1.1 400"), "{no_port}");
    assert!(gateway.denials().is_empty());
}

#[test]
fn fifty_concurrent_connections_all_succeed() {
    let allowed = server("busy");
    let gateway = Arc::new(gateway(&entry(allowed.port), true));
    let target = format!("127.0.0.1:{}", allowed.port);
    let threads: Vec<_> = (0..50)
        .map(|i| {
            let (gateway, target) = (gateway.clone(), target.clone());
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    tunnel(gateway.socket_path(), &target).1
                } else {
                    exchange(
                        gateway.socket_path(),
                        &format!("GET http://{target}/ HTTP/1.1\r\n\r\n"),
                    )
                }
            })
        })
        .collect();
    for thread in threads {
        let response = thread.join().unwrap();
        assert!(response.ends_with("hello from busy"), "{response}");
    }
    assert_eq!(allowed.connections.load(Ordering::SeqCst), 50);
}

#[test]
fn stop_with_a_connection_open_leaves_nothing() {
    // An upstream that accepts and then holds the connection open.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (held_tx, held_rx) = std::sync::mpsc::channel::<TcpStream>();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = held_tx.send(stream);
        }
    });
    let gateway = gateway(&entry(port), true);
    let (socket, directory) = (
        gateway.socket_path().to_owned(),
        gateway.directory().to_owned(),
    );
    let mode = std::fs::metadata(&directory).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o700
    );

    let mut open = client(&socket);
    write!(open, "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").unwrap();
    let mut established = [0u8; 39];
    open.read_exact(&mut established).unwrap();
    assert!(established.starts_with(b"HTTP/1.1 200"));
    let mut upstream = held_rx.recv().unwrap();
    upstream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();

    gateway.stop().unwrap();
    gateway.stop().unwrap();
    assert!(!gateway.is_running());
    assert!(!directory.exists(), "directory removed");
    assert!(UnixStream::connect(&socket).is_err(), "nothing listens");
    let mut rest = Vec::new();
    assert_eq!(
        open.read_to_end(&mut rest).unwrap_or(0),
        0,
        "client connection closed"
    );
    let mut byte = [0u8; 1];
    assert_eq!(
        upstream.read(&mut byte).unwrap_or(0),
        0,
        "upstream connection closed"
    );
}

#[test]
fn dropping_a_gateway_stops_it() {
    let directory = {
        let gateway = gateway(&entry(1), true);
        gateway.directory().to_owned()
    };
    assert!(!directory.exists());
}
