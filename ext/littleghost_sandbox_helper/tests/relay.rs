//! `helper relay` inside a fresh network namespace (`unshare -n`, needs root):
//! the child reaches an allowed host server only through the relay and the
//! gateway; a listed-but-not-allowed server gets 403; a direct connection
//! reaches nothing. Skipped (with a note) where namespaces are unavailable.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Instant;

use littleghost_sandbox_core::network::{Allowlist, Gateway, GatewayConfig};

const HELPER: &str = env!("CARGO_BIN_EXE_littleghost-sandbox-helper");

fn namespaces_available() -> bool {
    let ok = Command::new("unshare")
        .args(["-n", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: `unshare -n` is not available here (needs root)");
    }
    ok
}

/// Serves `body` to every connection after reading a request head.
fn server(body: Arc<Vec<u8>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(&body);
            });
        }
    });
    port
}

fn gateway(ports: &[u16]) -> Gateway {
    let entries: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    Gateway::start(GatewayConfig::new(Allowlist::new(&entries, true).unwrap())).unwrap()
}

fn relay_in_namespace(gateway: &Gateway, command: &[&str]) -> Output {
    Command::new("unshare")
        .arg("-n")
        .arg(HELPER)
        .args(["relay", "--socket"])
        .arg(gateway.socket_path())
        .arg("--")
        .args(command)
        .output()
        .unwrap()
}

const CLIENT: &str = r#"
import http.client, socket, sys, urllib.error, urllib.request
allowed, other = int(sys.argv[1]), int(sys.argv[2])
tunnel = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
tunnel.set_tunnel("127.0.0.1", allowed)
tunnel.request("GET", "/")
print("connect:" + tunnel.getresponse().read().decode())
proxy = urllib.request.build_opener(urllib.request.ProxyHandler({"http": "http://127.0.0.1:3128"}))
print("plain:" + proxy.open("http://127.0.0.1:%d/" % allowed, timeout=20).read().decode())
try:
    proxy.open("http://127.0.0.1:%d/" % other, timeout=20)
    print("other:reached")
except urllib.error.HTTPError as error:
    print("other:%d" % error.code)
try:
    socket.create_connection(("127.0.0.1", allowed), timeout=5)
    print("direct:reached")
except OSError:
    print("direct:failed")
"#;

#[test]
fn a_child_in_a_new_network_namespace_reaches_only_the_allowlist() {
    if !namespaces_available() {
        return;
    }
    let allowed = server(Arc::new(b"allowed body".to_vec()));
    let other = server(Arc::new(b"other body".to_vec()));
    let gateway = gateway(&[allowed]);
    let output = relay_in_namespace(
        &gateway,
        &[
            "python3",
            "-c",
            CLIENT,
            &allowed.to_string(),
            &other.to_string(),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stdout,
        "connect:allowed body\nplain:allowed body\nother:403\ndirect:failed\n"
    );
    assert_eq!(gateway.denials().len(), 1);
    assert_eq!(
        gateway.denials()[0].destination,
        format!("127.0.0.1:{other}")
    );
}

#[test]
fn the_relay_reports_readiness_and_passes_the_exit_status_on() {
    if !namespaces_available() {
        return;
    }
    let gateway = gateway(&[1]);
    let status = relay_in_namespace(&gateway, &["sh", "-c", "exit 7"]).status;
    assert_eq!(status.code(), Some(7));
    let killed = relay_in_namespace(&gateway, &["sh", "-c", "kill -TERM $$"]).status;
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(15)
    );
    assert_eq!(
        relay_in_namespace(&gateway, &["/nonexistent"])
            .status
            .code(),
        Some(127)
    );

    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills `fds`; both ends are owned below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fresh descriptors from pipe(2), owned once each.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut child = Command::new("unshare")
        .arg("-n")
        .arg(HELPER)
        .args(["relay", "--socket"])
        .arg(gateway.socket_path())
        .args(["--ready-fd", &fds[1].to_string(), "--", "sleep", "0"])
        .spawn()
        .unwrap();
    drop(write_end);
    let mut ready = Vec::new();
    std::fs::File::from(read_end)
        .read_to_end(&mut ready)
        .unwrap();
    assert_eq!(ready, b"R");
    assert!(child.wait().unwrap().success());
}

/// `cargo test -p littleghost_sandbox_helper --release -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_relay_start_and_gateway_throughput() {
    if !namespaces_available() {
        return;
    }
    bench_relay_start();
    let size = 100 * 1024 * 1024;
    let port = server(Arc::new(vec![b'x'; size]));
    let serving = gateway(&[port]);
    bench_gateway_throughput(&serving, port, size);
    bench_curl_end_to_end(&serving, port);
}

/// What the relay adds to starting a command in a fresh network namespace.
fn bench_relay_start() {
    let idle = gateway(&[1]);
    let runs = 40;
    let time = |relay: bool| {
        let start = Instant::now();
        for _ in 0..runs {
            let mut command = Command::new("unshare");
            command.arg("-n");
            if relay {
                command
                    .arg(HELPER)
                    .args(["relay", "--socket"])
                    .arg(idle.socket_path())
                    .arg("--");
            }
            assert!(command.arg("/bin/true").status().unwrap().success());
        }
        start.elapsed().as_secs_f64() * 1000.0 / runs as f64
    };
    let (plain, relayed) = (time(false), time(true));
    println!(
        "per command: unshare -n /bin/true {plain:.2} ms, with relay {relayed:.2} ms, overhead {:.2} ms",
        relayed - plain
    );
}

/// `size` bytes from the server at `port`, directly and through `serving`.
fn bench_gateway_throughput(serving: &Gateway, port: u16, size: usize) {
    let fetch = |through_gateway: bool| {
        let start = Instant::now();
        let mut received = Vec::with_capacity(size + 1024);
        if through_gateway {
            let mut stream =
                std::os::unix::net::UnixStream::connect(serving.socket_path()).unwrap();
            write!(stream, "GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n").unwrap();
            stream.read_to_end(&mut received).unwrap();
        } else {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(stream, "GET / HTTP/1.1\r\n\r\n").unwrap();
            stream.read_to_end(&mut received).unwrap();
        }
        assert!(received.len() > size);
        size as f64 / 1_048_576.0 / start.elapsed().as_secs_f64()
    };
    let direct = fetch(false);
    let proxied = fetch(true);
    println!(
        "100 MB: direct {direct:.0} MB/s, through the gateway {proxied:.0} MB/s ({:.2}x)",
        proxied / direct
    );
}

/// End to end as a child sees it: curl in the namespace, relay, gateway.
fn bench_curl_end_to_end(serving: &Gateway, port: u16) {
    let url = format!("http://127.0.0.1:{port}/");
    let curl = |prefix: &[&str]| {
        let mut args: Vec<&str> = prefix.to_vec();
        args.extend([
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{speed_download}",
            &url,
        ]);
        let output = Command::new(args[0]).args(&args[1..]).output().ok()?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        Some(text.trim().parse::<f64>().ok()? / 1_048_576.0)
    };
    let socket = serving.socket_path().to_str().unwrap().to_owned();
    let relayed_prefix = [
        "unshare",
        "-n",
        HELPER,
        "relay",
        "--socket",
        &socket,
        "--",
        "env",
        "http_proxy=http://127.0.0.1:3128",
    ];
    match (curl(&["env"]), curl(&relayed_prefix)) {
        (Some(direct), Some(relayed)) => println!(
            "100 MB with curl: direct {direct:.0} MB/s, relay + gateway {relayed:.0} MB/s ({:.2}x)",
            relayed / direct
        ),
        _ => println!("curl is not installed: end-to-end figure skipped"),
    }
}
