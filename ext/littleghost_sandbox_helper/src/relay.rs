//! Mode `relay`: the sandbox side of the built-in network gateway (SPEC G.5).
//!
//! Usage: `littleghost-sandbox-helper relay --socket PATH [--listen ADDR]
//! [--forward LISTEN=HOST:PORT]... [--ready-fd N] -- COMMAND [ARGS...]`
//!
//! Contract:
//! - Runs inside the sandbox's network namespace, where the only interface is
//!   loopback. Brings `lo` up if it is down (a fresh `unshare -n` leaves it
//!   down; bwrap brings it up itself), which needs CAP_NET_ADMIN in that
//!   namespace only when it is down.
//! - Listens on `ADDR` (default `127.0.0.1:3128`) *before* the command
//!   starts: the command can connect from its first instruction, no sleep.
//!   With `--ready-fd N` it also writes one byte to inherited descriptor `N`
//!   and closes it once listening (for a caller that waits on a pipe).
//! - Each `--forward LISTEN=HOST:PORT` is one more listener, also
//!   bound before the command starts (a port below 1024 needs the sandbox's
//!   `net.ipv4.ip_unprivileged_port_start` lowered first, which the gem's
//!   launch does from the host): each connection to it is a client
//!   that ignored the proxy variables and connected "directly" (the
//!   sandbox's `/etc/hosts` points HOST at LISTEN's address). The relay asks
//!   the gateway for `CONNECT HOST:PORT`, exactly that pair and nothing the
//!   client says, and on `200` joins the two; any other answer is passed to
//!   the client as is (a plain-HTTP client reads the gateway's 403) and the
//!   connection closed. The gateway decides, as for every proxy request.
//! - Each accepted connection is joined byte for byte to a new connection to
//!   the gateway's Unix socket `PATH` (bound read-only into the sandbox); the
//!   relay decides nothing, the gateway enforces the allowlist. If the
//!   gateway cannot be reached the client gets `502 Bad Gateway`.
//! - The relay is threads of this process, which runs the command as its
//!   child (with a parent-death signal of SIGKILL), waits for it, and exits
//!   with its status (re-raising the signal that killed it). So the relay
//!   lives exactly as long as the command, and is gone with the sandbox.
//! - Exit status: the command's; 2 for a usage error; 125 when the relay
//!   cannot be set up; 126/127 when the command cannot be run / is missing.

use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use littleghost_sandbox_restrict::relay::Forward;

const DEFAULT_LISTEN: &str = "127.0.0.1:3128";
/// The most a gateway's answer to `CONNECT` may take before its blank line.
const MAX_ANSWER_HEAD: usize = 16 * 1024;

#[derive(Debug)]
struct Options {
    socket: PathBuf,
    listen: String,
    forwards: Vec<Forward>,
    ready_fd: Option<i32>,
    command: Vec<String>,
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let (mut socket, mut listen, mut ready_fd) = (None, DEFAULT_LISTEN.to_owned(), None);
    let mut forwards = Vec::new();
    loop {
        match args.next().as_deref() {
            Some("--socket") => socket = args.next().map(PathBuf::from),
            Some("--listen") => listen = args.next().ok_or("--listen needs an address")?,
            Some("--forward") => {
                let text = args.next().unwrap_or_default();
                forwards.push(
                    Forward::parse(&text)
                        .ok_or(format!("--forward needs LISTEN=HOST:PORT, got {text:?}"))?,
                );
            }
            Some("--ready-fd") => {
                let text = args.next().unwrap_or_default();
                let fd = text.parse::<i32>().ok().filter(|fd| *fd > 2);
                ready_fd = Some(fd.ok_or(format!(
                    "--ready-fd needs a descriptor above 2, got {text:?}"
                ))?);
            }
            Some("--") => break,
            Some(other) => return Err(format!("unknown option {other:?}")),
            None => return Err("missing \"-- COMMAND\"".into()),
        }
    }
    let command: Vec<String> = args.collect();
    if command.is_empty() {
        return Err("missing the command after \"--\"".into());
    }
    Ok(Options {
        socket: socket.ok_or("--socket PATH is required")?,
        listen,
        forwards,
        ready_fd,
        command,
    })
}

/// Entry point of the mode (see the module documentation).
pub fn main(args: Vec<String>) -> ExitCode {
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("littleghost-sandbox-helper relay: {message}");
            return ExitCode::from(2);
        }
    };
    let listener = match loopback_up().and_then(|()| TcpListener::bind(&options.listen)) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!(
                "littleghost-sandbox-helper relay: cannot listen on {}: {e}",
                options.listen
            );
            return ExitCode::from(125);
        }
    };
    let mut forwarded = Vec::new();
    for forward in &options.forwards {
        match TcpListener::bind(forward.listen) {
            Ok(listener) => forwarded.push((listener, forward.clone())),
            Err(e) => {
                // Below 1024 the launch lowered the namespace's port start first.
                let low = if forward.listen.port() < 1024 {
                    " (net.ipv4.ip_unprivileged_port_start of the sandbox was not lowered)"
                } else {
                    ""
                };
                eprintln!(
                    "littleghost-sandbox-helper relay: cannot listen on {} for {}:{}: {e}{low}",
                    forward.listen, forward.host, forward.port
                );
                return ExitCode::from(125);
            }
        }
    }
    let socket = options.socket.clone();
    std::thread::spawn(move || accept_loop(listener, socket));
    for (listener, forward) in forwarded {
        let socket = options.socket.clone();
        std::thread::spawn(move || forward_loop(listener, socket, forward));
    }
    if let Some(fd) = options.ready_fd {
        // SAFETY: the caller handed us descriptor `fd` for this purpose; we
        // own it from here and close it after writing.
        let ready = unsafe { OwnedFd::from_raw_fd(fd) };
        let _ = std::fs::File::from(ready).write_all(b"R");
    }
    run(&options.command)
}

fn run(command: &[String]) -> ExitCode {
    let mut child = Command::new(&command[0]);
    child.args(&command[1..]);
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe {
        child.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = match child.status() {
        Ok(status) => status,
        Err(e) => {
            eprintln!(
                "littleghost-sandbox-helper relay: cannot run {:?}: {e}",
                command[0]
            );
            let missing = e.kind() == std::io::ErrorKind::NotFound;
            return ExitCode::from(if missing { 127 } else { 126 });
        }
    };
    if let Some(code) = status.code() {
        return ExitCode::from(code as u8);
    }
    let signal = status.signal().unwrap_or(libc::SIGKILL);
    // SAFETY: restoring the default action and raising the child's signal on
    // ourselves, so our parent sees the same death; plain libc calls.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    ExitCode::from(128 + signal as u8)
}

fn accept_loop(listener: TcpListener, socket: PathBuf) {
    for client in listener.incoming().flatten() {
        let socket = socket.clone();
        std::thread::spawn(move || relay(client, &socket));
    }
}

fn forward_loop(listener: TcpListener, socket: PathBuf, forward: Forward) {
    for client in listener.incoming().flatten() {
        let (socket, forward) = (socket.clone(), forward.clone());
        std::thread::spawn(move || tunnel(client, &socket, &forward));
    }
}

/// A client of a `--forward` listener: `CONNECT HOST:PORT` through the
/// gateway, then the two joined; a refusal goes back to the client as is.
fn tunnel(mut client: TcpStream, socket: &std::path::Path, forward: &Forward) {
    let _ = client.set_nodelay(true);
    let Some(mut gateway) = gateway_or_502(&mut client, socket) else {
        return;
    };
    let target = format!("{}:{}", forward.host, forward.port);
    let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    if gateway.write_all(request.as_bytes()).is_err() {
        return;
    }
    let Some((head, rest)) = answer_head(&mut gateway) else {
        return;
    };
    if !established(&head) {
        // The gateway's refusal (403 and its reason, 502...), then the close.
        let _ = client.write_all(&head);
        let _ = client.write_all(&rest);
        copy(&mut gateway, &mut client);
        let _ = client.shutdown(Shutdown::Write);
        drain(&mut client);
        return;
    }
    if !rest.is_empty() && client.write_all(&rest).is_err() {
        return;
    }
    join(client, gateway);
}

/// How long a refused client may take to finish sending before it is closed.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads and drops what a refused client still sends, until it closes (or
/// [`DRAIN_TIME`] passes): closing a socket with unread input resets the
/// connection, and the reset can destroy the refusal the client has not read
/// yet (a client that sends its request before reading, such as bash's
/// `/dev/tcp`, would see nothing).
fn drain(client: &mut TcpStream) {
    let deadline = std::time::Instant::now() + DRAIN_TIME;
    let mut buffer = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() || client.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match std::io::Read::read(client, &mut buffer) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Reads the gateway's answer up to its blank line: (the head, what came after it).
pub(crate) fn answer_head(gateway: &mut UnixStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut read = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = read.split_off(end + 4);
            return Some((read, rest));
        }
        if read.len() > MAX_ANSWER_HEAD {
            return None;
        }
        match std::io::Read::read(gateway, &mut buffer) {
            Ok(0) => return (!read.is_empty()).then(|| (read, Vec::new())),
            Ok(n) => read.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// `HTTP/1.x 200 ...`: the tunnel is open.
pub(crate) fn established(head: &[u8]) -> bool {
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let mut words = line.split(|b| *b == b' ');
    words.next().is_some_and(|v| v.starts_with(b"HTTP/1.")) && words.next() == Some(b"200")
}

/// A new connection to the gateway, or None after answering the client 502.
fn gateway_or_502(client: &mut TcpStream, socket: &std::path::Path) -> Option<UnixStream> {
    match UnixStream::connect(socket) {
        Ok(gateway) => Some(gateway),
        Err(_) => {
            let body = "littleghost relay: the network gateway is not reachable\n";
            let _ = write!(
                client,
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            None
        }
    }
}

/// Joins one client to one new gateway connection until both sides finish.
fn relay(mut client: TcpStream, socket: &std::path::Path) {
    let _ = client.set_nodelay(true);
    let Some(gateway) = gateway_or_502(&mut client, socket) else {
        return;
    };
    join(client, gateway);
}

/// Copies both ways until both sides finish.
pub(crate) fn join(mut client: TcpStream, gateway: UnixStream) {
    let (Ok(mut client_in), Ok(mut gateway_out)) = (client.try_clone(), gateway.try_clone()) else {
        return;
    };
    let upward = std::thread::spawn(move || {
        copy(&mut client_in, &mut gateway_out);
        let _ = gateway_out.shutdown(Shutdown::Write);
    });
    let mut gateway_in = gateway;
    copy(&mut gateway_in, &mut client);
    let _ = client.shutdown(Shutdown::Write);
    let _ = upward.join();
}

/// Copies until end of input or an error, in large chunks (std's copy uses
/// 8 KiB, which halves throughput here).
fn copy(from: &mut impl std::io::Read, to: &mut impl Write) {
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Sets IFF_UP on `lo` when it is down.
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: plain socket(2) call; the result is checked before use.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor we just opened and nobody else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (to, from) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *to = *from as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the name and writes the flags of `request`,
    // which lives for the whole call.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut request) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: after SIOCGIFFLAGS the union holds the flags.
    let flags = unsafe { request.ifr_ifru.ifru_flags };
    if flags & libc::IFF_UP as libc::c_short != 0 {
        return Ok(());
    }
    request.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: as above; SIOCSIFFLAGS only reads `request`.
    if unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &request) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments() {
        let options = parse(args(&[
            "--socket",
            "/s",
            "--ready-fd",
            "5",
            "--",
            "true",
            "x",
        ]))
        .unwrap();
        assert_eq!(options.socket, PathBuf::from("/s"));
        assert_eq!(
            (options.listen.as_str(), options.ready_fd),
            (DEFAULT_LISTEN, Some(5))
        );
        assert_eq!(options.command, ["true", "x"]);
        assert!(parse(args(&["--", "true"]))
            .unwrap_err()
            .contains("--socket"));
        assert!(parse(args(&["--socket", "/s", "--"]))
            .unwrap_err()
            .contains("command"));
        assert!(parse(args(&["--socket", "/s"]))
            .unwrap_err()
            .contains("-- COMMAND"));
        assert!(parse(args(&["--socket", "/s", "--ready-fd", "1", "--", "x"])).is_err());
        let options = parse(args(&[
            "--socket",
            "/s",
            "--forward",
            "127.80.0.1:443=example.com:443",
            "--",
            "node",
        ]))
        .unwrap();
        assert_eq!(options.forwards.len(), 1);
        assert_eq!(options.forwards[0].host, "example.com");
        assert!(
            parse(args(&["--socket", "/s", "--forward", "x", "--", "node"]))
                .unwrap_err()
                .contains("--forward")
        );
        assert!(established(b"HTTP/1.1 200 Connection Established\r\n\r\n"));
        assert!(!established(b"HTTP/1.1 403 Forbidden\r\n\r\n"));
        assert!(!established(b"SSH-2.0 200\r\n\r\n"));
        assert!(parse(args(&["--bogus"]))
            .unwrap_err()
            .contains("unknown option"));
    }
}
