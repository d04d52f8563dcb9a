//! The supervisor's side of network `:allowlist` under the Landlock backend
//! (docs/security.md, "Allowlists under Landlock"): it answers every
//! `connect` of the restricted child, whose seccomp filter sends the call
//! here (`SECCOMP_RET_USER_NOTIF`) and whose Landlock domain denies every
//! TCP connect of its own.
//!
//! For each call the supervisor reads the address into its own memory
//! (`/proc/<tid>/mem`), checks that the notification is still pending
//! (`SECCOMP_IOCTL_NOTIF_ID_VALID`: the memory read was the caller's), and
//! decides on that copy only. It never lets the call continue, so the
//! kernel never reads the child's address again (no time-of-check race):
//! - the proxy address ([`PROXY_ADDRESS`]): the supervisor connects to the
//!   gateway's Unix socket itself;
//! - any other IPv4 or IPv6 address: the supervisor asks the gateway for
//!   `CONNECT address:port`, as the Bubblewrap relay does for a client that
//!   ignored the proxy variables; the gateway decides (and records a
//!   refusal as a denial naming that address);
//! - anything else (another family, an unreadable or short address) fails
//!   with the errno the kernel would give.
//!
//! A connection made is one end of a private loopback TCP pair, installed
//! in place of the child's socket (`SECCOMP_IOCTL_NOTIF_ADDFD` with
//! `SECCOMP_ADDFD_FLAG_SETFD`; the child keeps a real TCP socket, so
//! `TCP_NODELAY` and friends work) and joined to the gateway connection by
//! this thread; the call then returns 0. A refusal returns ECONNREFUSED.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use littleghost_sandbox_restrict::landlock::PROXY_ADDRESS;

use crate::relay::{answer_head, established, join};

/// The largest address `connect` accepts (`sizeof(struct sockaddr_storage)`).
const MAX_ADDRESS: usize = 128;

/// Receives the filter's listener over `carrier`, then answers every
/// notification until the listener ends (the child and its descendants are
/// gone). Each call is answered on a thread of its own, which then carries
/// the connection it made.
pub fn serve(carrier: UnixStream, gateway: PathBuf) {
    let Some(listener) = receive_descriptor(&carrier) else {
        return;
    };
    drop(carrier);
    let listener = Arc::new(listener);
    let gateway = Arc::new(gateway);
    loop {
        // SAFETY: seccomp_notif is plain data; all-zero is what RECV expects.
        let mut notification: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: RECV writes one seccomp_notif into `notification`.
        let received = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut notification,
            )
        };
        if received < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                // Interrupted, or the caller died before we read its call.
                Some(libc::EINTR) | Some(libc::ENOENT) => continue,
                _ => return,
            }
        }
        let (listener, gateway) = (listener.clone(), gateway.clone());
        std::thread::spawn(move || answer(&listener, &notification, &gateway));
    }
}

/// What the supervisor makes of one `connect`.
enum Decision {
    /// Join the child to the gateway: this connection, with what the
    /// gateway already sent after its answer's head.
    Join(UnixStream, Vec<u8>),
    /// Fail the call with this errno.
    Refuse(i32),
}

fn answer(listener: &OwnedFd, notification: &libc::seccomp_notif, gateway: &Path) {
    let args = notification.data.args;
    let (fd, pointer, length) = (args[0] as i32, args[1], args[2] as u32 as usize);
    let address = read_address(notification.pid, pointer, length);
    // The read was of the calling thread's memory only if its call is still
    // the one notified (the tid was not reused meanwhile).
    if !id_valid(listener, notification.id) {
        return;
    }
    let decision = match address {
        Err(errno) => Decision::Refuse(errno),
        Ok(address) => decide(address, gateway),
    };
    let (stream, rest) = match decision {
        Decision::Refuse(errno) => return respond(listener, notification.id, errno),
        Decision::Join(stream, rest) => (stream, rest),
    };
    let flags = match descriptor_flags(notification.pid, fd) {
        Ok(flags) => flags,
        Err(errno) => return respond(listener, notification.id, errno),
    };
    let Ok((theirs, mut ours)) = loopback_pair() else {
        return respond(listener, notification.id, libc::ECONNREFUSED);
    };
    if theirs
        .set_nonblocking(flags & libc::O_NONBLOCK != 0)
        .is_err()
    {
        return respond(listener, notification.id, libc::ECONNREFUSED);
    }
    let install = libc::seccomp_notif_addfd {
        id: notification.id,
        flags: libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        srcfd: theirs.as_raw_fd() as u32,
        newfd: fd as u32,
        newfd_flags: (flags & libc::O_CLOEXEC) as u32,
    };
    // SAFETY: ADDFD reads one seccomp_notif_addfd; `theirs` stays open.
    if unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD,
            &install,
        )
    } < 0
    {
        return; // the call was abandoned (its thread died or was killed)
    }
    drop(theirs);
    respond(listener, notification.id, 0);
    if !rest.is_empty() && ours.write_all(&rest).is_err() {
        return;
    }
    let _ = ours.set_nodelay(true);
    join(ours, stream);
}

/// The gateway connection for `address`, or why the call fails.
fn decide(address: SocketAddr, gateway: &Path) -> Decision {
    let Ok(mut stream) = UnixStream::connect(gateway) else {
        return Decision::Refuse(libc::ECONNREFUSED);
    };
    if is_proxy(address) {
        return Decision::Join(stream, Vec::new());
    }
    let request = format!("CONNECT {address} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return Decision::Refuse(libc::ECONNREFUSED);
    }
    match answer_head(&mut stream) {
        Some((head, rest)) if established(&head) => Decision::Join(stream, rest),
        _ => Decision::Refuse(libc::ECONNREFUSED),
    }
}

/// The proxy address, or the same address as an IPv4-mapped IPv6 one.
fn is_proxy(address: SocketAddr) -> bool {
    let ip = match address.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
        v4 => Some(v4),
    };
    ip == Some(IpAddr::V4(*PROXY_ADDRESS.ip())) && address.port() == PROXY_ADDRESS.port()
}

/// The supervisor's copy of the `connect` address at `pointer` in thread
/// `tid`, or the errno the call fails with.
fn read_address(tid: u32, pointer: u64, length: usize) -> Result<SocketAddr, i32> {
    if !(2..=MAX_ADDRESS).contains(&length) {
        return Err(libc::EINVAL);
    }
    let memory = std::fs::File::open(format!("/proc/{tid}/mem")).map_err(|_| libc::EFAULT)?;
    let mut bytes = [0u8; MAX_ADDRESS];
    memory
        .read_exact_at(&mut bytes[..length], pointer)
        .map_err(|_| libc::EFAULT)?;
    parse_address(&bytes[..length])
}

/// A `struct sockaddr_in` or `sockaddr_in6` (native-endian family, network
/// order port and address).
fn parse_address(bytes: &[u8]) -> Result<SocketAddr, i32> {
    let family = u16::from_ne_bytes([bytes[0], bytes[1]]) as i32;
    let port = |b: &[u8]| u16::from_be_bytes([b[2], b[3]]);
    match family {
        libc::AF_INET if bytes.len() >= 16 => {
            let ip = Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7]);
            Ok(SocketAddr::new(IpAddr::V4(ip), port(bytes)))
        }
        libc::AF_INET6 if bytes.len() >= 24 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&bytes[8..24]);
            Ok(SocketAddr::new(IpAddr::V6(octets.into()), port(bytes)))
        }
        libc::AF_INET | libc::AF_INET6 => Err(libc::EINVAL),
        _ => Err(libc::EAFNOSUPPORT),
    }
}

/// The open-file flags of the child's descriptor `fd` (`O_NONBLOCK`,
/// `O_CLOEXEC`), which the installed socket keeps; ENOTSOCK or EBADF as the
/// kernel would answer when it is no socket.
fn descriptor_flags(tid: u32, fd: i32) -> Result<i32, i32> {
    let target = std::fs::read_link(format!("/proc/{tid}/fd/{fd}")).map_err(|_| libc::EBADF)?;
    if !target.to_string_lossy().starts_with("socket:") {
        return Err(libc::ENOTSOCK);
    }
    let info =
        std::fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}")).map_err(|_| libc::EBADF)?;
    info.lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .and_then(|octal| i32::from_str_radix(octal.trim(), 8).ok())
        .ok_or(libc::EBADF)
}

/// A connected loopback TCP pair only this process holds: a listener on an
/// ephemeral port accepts exactly the connection it made (another process
/// connecting in between is dropped), then closes.
fn loopback_pair() -> std::io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let theirs = TcpStream::connect(listener.local_addr()?)?;
    let expected = theirs.local_addr()?;
    listener.set_nonblocking(true)?;
    loop {
        let (ours, peer) = listener.accept()?;
        if peer == expected {
            ours.set_nonblocking(false)?;
            return Ok((theirs, ours));
        }
    }
}

fn id_valid(listener: &OwnedFd, id: u64) -> bool {
    // SAFETY: ID_VALID reads one u64.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &id,
        ) == 0
    }
}

/// Ends the call: 0, or -1 with `errno`.
fn respond(listener: &OwnedFd, id: u64, errno: i32) {
    let response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: -errno,
        flags: 0,
    };
    // SAFETY: SEND reads one seccomp_notif_resp. ENOENT (the call was
    // abandoned meanwhile) needs nothing more.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &response,
        )
    };
}

/// Sends `fd` over `carrier` (`SCM_RIGHTS`): the child gives the supervisor
/// its filter's listener before it execs.
pub fn send_descriptor(carrier: &UnixStream, fd: &OwnedFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = [0u8; 64];
    // SAFETY: msghdr is plain data; the pointers set below outlive sendmsg,
    // and the control buffer has room for one descriptor's header.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(
            libc::CMSG_DATA(header).cast::<libc::c_int>(),
            fd.as_raw_fd(),
        );
        if libc::sendmsg(carrier.as_raw_fd(), &message, 0) != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The descriptor [`send_descriptor`] sent, or None when the child ended
/// without sending one.
fn receive_descriptor(carrier: &UnixStream) -> Option<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = [0u8; 64];
    // SAFETY: as in send_descriptor; the kernel writes at most
    // `msg_controllen` bytes of control data, and MSG_CMSG_CLOEXEC marks
    // the received descriptor close-on-exec.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = control.len() as _;
        if libc::recvmsg(carrier.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC) != 1 {
            return None;
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
        {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>());
        Some(OwnedFd::from_raw_fd(fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sockaddr_in(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut bytes = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        bytes.extend(port.to_be_bytes());
        bytes.extend(ip);
        bytes.extend([0u8; 8]);
        bytes
    }

    #[test]
    fn only_the_proxy_address_is_the_proxy() {
        let proxy = parse_address(&sockaddr_in([127, 0, 0, 1], 3128)).unwrap();
        assert!(is_proxy(proxy));
        assert!(is_proxy("[::ffff:127.0.0.1]:3128".parse().unwrap()));
        assert!(!is_proxy("127.0.0.2:3128".parse().unwrap()));
        assert!(!is_proxy("127.0.0.1:3129".parse().unwrap()));
        assert!(!is_proxy("[::1]:3128".parse().unwrap()));
    }

    #[test]
    fn addresses_are_parsed_from_the_copy_or_refused() {
        assert_eq!(
            parse_address(&sockaddr_in([10, 1, 2, 3], 443)),
            Ok("10.1.2.3:443".parse().unwrap())
        );
        assert_eq!(
            parse_address(&sockaddr_in([10, 1, 2, 3], 443)[..8]),
            Err(libc::EINVAL)
        );
        let mut unix = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        unix.extend(b"/run/x.sock\0");
        assert_eq!(parse_address(&unix), Err(libc::EAFNOSUPPORT));
        let mut v6 = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
        v6.extend(80u16.to_be_bytes());
        v6.extend([0u8; 4]);
        v6.extend(std::net::Ipv6Addr::LOCALHOST.octets());
        assert_eq!(parse_address(&v6), Ok("[::1]:80".parse().unwrap()));
    }

    #[test]
    fn a_loopback_pair_is_connected_end_to_end() {
        let (mut theirs, mut ours) = loopback_pair().unwrap();
        theirs.write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        std::io::Read::read_exact(&mut ours, &mut got).unwrap();
        assert_eq!(&got, b"ping");
        assert_eq!(theirs.peer_addr().unwrap(), ours.local_addr().unwrap());
    }
}
