//! Mode `relay`: the sandbox side of the built-in network gateway (SPEC G.5).
//!
//! Usage: `littleghost-sandbox-helper relay --socket PATH [--listen ADDR]
//! [--ready-fd N] -- COMMAND [ARGS...]`
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

const DEFAULT_LISTEN: &str = "127.0.0.1:3128";

#[derive(Debug)]
struct Options {
    socket: PathBuf,
    listen: String,
    ready_fd: Option<i32>,
    command: Vec<String>,
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let (mut socket, mut listen, mut ready_fd) = (None, DEFAULT_LISTEN.to_owned(), None);
    loop {
        match args.next().as_deref() {
            Some("--socket") => socket = args.next().map(PathBuf::from),
            Some("--listen") => listen = args.next().ok_or("--listen needs an address")?,
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
    let socket = options.socket.clone();
    std::thread::spawn(move || accept_loop(listener, socket));
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

/// Joins one client to one new gateway connection until both sides finish.
fn relay(mut client: TcpStream, socket: &std::path::Path) {
    let _ = client.set_nodelay(true);
    let gateway = match UnixStream::connect(socket) {
        Ok(gateway) => gateway,
        Err(_) => {
            let body = "littleghost relay: the network gateway is not reachable\n";
            let _ = write!(
                client,
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            return;
        }
    };
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
    if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: after SIOCGIFFLAGS the union holds the flags.
    let flags = unsafe { request.ifr_ifru.ifru_flags };
    if flags & libc::IFF_UP as libc::c_short != 0 {
        return Ok(());
    }
    request.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: as above; SIOCSIFFLAGS only reads `request`.
    if unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &request) } < 0 {
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
        assert!(parse(args(&["--bogus"]))
            .unwrap_err()
            .contains("unknown option"));
    }
}
