//! The rules for a child whose connections a supervisor makes (network
//! `:allowlist` under the Landlock backend): TCP is the only socket it can
//! open, `connect` goes to the listener's holder, and neither Fast Open,
//! `listen` nor a datagram pair reaches anything. Each probe runs in a
//! re-executed child with the filter installed, next to a control run
//! without it where the same calls succeed.

use super::*;

/// The probes, printed as `name: outcome`.
fn probe() {
    let socket = |domain: i32, kind: i32, protocol: i32| {
        // SAFETY: socket(2) with integer arguments; a descriptor made is leaked
        // in this short-lived child.
        outcome(unsafe { libc::socket(domain, kind, protocol) } as i64)
    };
    println!("tcp: {}", socket(libc::AF_INET, libc::SOCK_STREAM, 0));
    println!(
        "tcp6 nonblocking: {}",
        socket(
            libc::AF_INET6,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK,
            libc::IPPROTO_TCP
        )
    );
    println!("udp: {}", socket(libc::AF_INET, libc::SOCK_DGRAM, 0));
    println!(
        "raw: {}",
        socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP)
    );
    println!(
        "sctp: {}",
        socket(libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_SCTP)
    );
    println!("mptcp: {}", socket(libc::AF_INET, libc::SOCK_STREAM, 262));
    println!("unix: {}", socket(libc::AF_UNIX, libc::SOCK_STREAM, 0));
    println!("netlink: {}", socket(libc::AF_NETLINK, libc::SOCK_RAW, 0));
    println!("packet: {}", socket(libc::AF_PACKET, libc::SOCK_RAW, 0));
    let pair = |kind: i32| {
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two descriptors into `fds`.
        outcome(unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) } as i64)
    };
    println!("stream pair: {}", pair(libc::SOCK_STREAM));
    println!("datagram pair: {}", pair(libc::SOCK_DGRAM));
    // SAFETY: (the rest) raw socket calls on a TCP socket this child owns,
    // with pointers to locals that outlive each call.
    unsafe {
        let tcp = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 9u16.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let pointer = (&address as *const libc::sockaddr_in).cast::<libc::sockaddr>();
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let sent = libc::sendto(
            tcp,
            b"x".as_ptr().cast(),
            1,
            libc::MSG_FASTOPEN,
            pointer,
            size,
        );
        println!("fast open: {}", outcome(sent as i64));
        let fresh = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        println!("listen: {}", outcome(libc::listen(fresh, 1) as i64));
        // No supervisor holds the listener here: the notified call fails.
        let connected = libc::connect(
            libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0),
            pointer,
            size,
        );
        println!("connect: {}", outcome(connected as i64));
    }
}

#[test]
fn a_child_whose_connections_a_supervisor_makes_opens_tcp_sockets_only() {
    const NAME: &str = "seccomp::tests::connect_interception::a_child_whose_connections_a_supervisor_makes_opens_tcp_sockets_only";
    match std::env::var(CHILD_MODE).as_deref() {
        Ok("intercepted") => {
            assert_eq!(
                // SAFETY: prctl with plain integer arguments.
                unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) },
                0
            );
            let filter = Filter::for_launch(false, None, None).with_connect_intercepted();
            drop(install_with_listener(&filter).expect("the filter and its listener"));
            return probe();
        }
        Ok("open") => return probe(),
        _ => {}
    }
    let run = |mode: &str| {
        let out = run_child(NAME, mode);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{mode}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let filtered = run("intercepted");
    for line in [
        "tcp: ok",
        "tcp6 nonblocking: ok",
        "udp: EPERM",
        "raw: EPERM",
        "sctp: EPERM",
        "mptcp: EPERM",
        "unix: EPERM",
        "netlink: EPERM",
        "packet: EPERM",
        "stream pair: ok",
        "datagram pair: EPERM",
        "fast open: EPERM",
        "listen: EPERM",
        "connect: ENOSYS",
    ] {
        assert!(filtered.contains(line), "missing {line:?} in:\n{filtered}");
    }
    // The control: without the filter the same calls are the kernel's.
    let open = run("open");
    for line in [
        "udp: ok",
        "unix: ok",
        "netlink: ok",
        "datagram pair: ok",
        "listen: ok",
    ] {
        assert!(open.contains(line), "missing {line:?} in:\n{open}");
    }
    assert!(!open.contains("connect: ENOSYS"), "{open}");
}

#[test]
fn the_intercepting_filter_still_fits_eight_bit_jumps_on_every_arch() {
    let largest = Filter::for_launch(true, None, None)
        .with_host_pids()
        .with_ipc_denied()
        .with_connect_intercepted();
    for arch in [Arch::X86_64, Arch::Aarch64] {
        // `assemble` panics when a jump outgrows 8 bits.
        let p = program(arch, &largest);
        assert!(p.len() < 256, "{arch:?}: {}", p.len());
    }
}

#[test]
fn the_socket_numbers_match_the_c_library() {
    let t = super::super::rules::table(Arch::native().expect("supported arch"));
    let c = |nr: libc::c_long| nr as u32;
    assert_eq!(
        [t.socket, t.socketpair, t.connect, t.listen],
        [
            c(libc::SYS_socket),
            c(libc::SYS_socketpair),
            c(libc::SYS_connect),
            c(libc::SYS_listen)
        ]
    );
    assert_eq!(
        t.send.map(|(nr, _)| nr),
        [
            c(libc::SYS_sendto),
            c(libc::SYS_sendmsg),
            c(libc::SYS_sendmmsg)
        ]
    );
}
