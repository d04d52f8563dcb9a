//! One gateway connection: its setup and the `CONNECT` branch. The HTTP
//! engine ([`super::http`]) reads the request heads and serves plain HTTP
//! with keep-alive; a `CONNECT` comes back here to be decided, then
//! tunnelled, or, for an `inspect: true` destination, terminated with the
//! gateway's own TLS on both sides ([`super::inspect`]) and served by the
//! same engine request by request.

use std::sync::Arc;
use std::time::Instant;

use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::time::timeout;

use super::allowlist::Destination;
use super::budget::Held;
use super::connection::{self, deny, deny_shown, fail, open, refusal, response, Refusal, Shared};
use super::decide::{self, Tunnel};
use super::denial::DenialReason;
use super::egress::Decision;
use super::http::{self, Connect, Event, InspectedLeases, FIRST_ROOM};
use super::inspect::SESSION_BUFFERS;
use super::memory::Lease;
use super::pipe;

/// How many bytes toward the child may wait in its connection (the kernel's
/// default, about 200 KiB, is drained by the relay in a fraction of a
/// millisecond: on a busy machine each refill then waits for the gateway to
/// be scheduled again). Best effort: the host's `net.core.wmem_max` caps it.
const CLIENT_SEND_BUFFER: usize = 1 << 20;

/// Serves one admitted connection; `held` is its client descriptor and
/// takes the upstream one before a destination is opened; `lease` holds
/// its reader's buffer.
pub(super) async fn serve(client: UnixStream, shared: Arc<Shared>, mut held: Held, lease: Lease) {
    let _ = rustix::net::sockopt::set_socket_send_buffer_size(&client, CLIENT_SEND_BUFFER);
    if let Some(connect) = http::serve_proxy(client, lease, &shared, &mut held).await {
        connect_branch(connect, &shared, &mut held).await;
    }
}

/// Refuses a connection a budget has no room for (`reason`: descriptors
/// or memory), before reading anything (its destination is unknown: the
/// denial names `*`): one non-blocking write of the `503`, then the socket
/// is closed.
pub(super) fn refuse_unread(client: UnixStream, shared: &Shared, reason: DenialReason) {
    shared.denials.record("*".to_owned(), reason);
    let refused = refusal(reason.status(), format!("*: {}", reason.text()));
    // A plain non-blocking write: tokio's `try_write` would refuse to try
    // before the reactor has seen the new socket writable.
    if let Ok(client) = client.into_std() {
        let _ = std::io::Write::write(&mut &client, &response(&refused, false, &shared.secrets));
    }
}

/// A `CONNECT`: refused when its head (or what came with it) carries a
/// stand-in, when the destination is not listed, or when its HTTP rules
/// could only be enforced by reading the requests; else the destination is
/// opened and the client tunnelled to it, every stand-in the client sends
/// cutting the tunnel. One egress event either way.
async fn connect_branch(connect: Connect<UnixStream>, shared: &Shared, held: &mut Held) {
    let Connect {
        head,
        raw,
        mut client,
        lease,
        start,
    } = connect;
    let mut event = Event::new("*".to_owned(), "CONNECT", false);
    event.arm(shared, start);
    let shown = shared.secrets.redact(&head.target).into_owned();
    // The head itself, and what came with it: a stand-in there is refused
    // before anything is resolved (a name can carry it to a DNS server).
    let carried = [raw.as_slice(), client.prefix()].concat();
    if shared
        .secrets
        .find_bound_elsewhere(&carried, None)
        .is_some()
    {
        event.destination = shown.clone();
        let refused = deny_shown(shared, shown, DenialReason::SecretExfiltration, None);
        return refuse_tunnel(&mut client, refused, event, shared, start).await;
    }
    let destination = match Destination::parse(&head.target, None) {
        Ok(destination) => destination,
        Err(why) => {
            let refused = refusal("400 Bad Request", format!("CONNECT target {why}"));
            return refuse_tunnel(&mut client, refused, event, shared, start).await;
        }
    };
    event.destination = shared.secrets.redact(&destination.to_string()).into_owned();
    let tunnel = decide::destination(&shared.allowlist, &destination)
        .and_then(|access| decide::connect(&access));
    match tunnel {
        Ok(Tunnel::Inspected) => {
            return inspect_branch((client, lease), &destination, event, shared, held, start).await
        }
        Ok(Tunnel::Opaque) => {}
        Err(reason) => {
            let refused = deny(shared, &destination, reason, None);
            return refuse_tunnel(&mut client, refused, event, shared, start).await;
        }
    }
    let opened = match connection::lease(shared, &destination, FIRST_ROOM) {
        Ok(upstream_lease) => open(&destination, shared, held)
            .await
            .map(|upstream| (upstream, upstream_lease)),
        Err(refused) => Err(refused),
    };
    let upstream = match opened {
        Ok(upstream) => upstream,
        Err(refused) => return refuse_tunnel(&mut client, refused, event, shared, start).await,
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    event.status = Some(200);
    event.decision = Decision::Allowed;
    let tunneled = http::tunnel((client, lease), upstream, shared).await;
    event.sent = tunneled.sent;
    event.received = tunneled.received;
    event.decision = Decision::Allowed;
    if tunneled.cut.is_some() {
        deny(shared, &destination, DenialReason::SecretExfiltration, None);
        event.cut(DenialReason::SecretExfiltration);
    }
    event.push(shared, start);
}

/// A CONNECT to an inspected destination: TLS to the destination first,
/// verifying its certificate for the CONNECT target (a failure is a `502` to
/// the CONNECT, with the reason), then `200`, then the child's TLS with a
/// leaf of the gateway's CA (an SNI naming another host is refused: denial
/// `HostMismatch`), then the engine serves the decrypted requests, each
/// checked against the rules and its stand-ins swapped (one egress event per
/// request, beside this CONNECT's own). Before anything is opened, the
/// memory budget must have the floors of its buffers (else `503`, denial
/// `MemoryBudget`); `client`'s lease goes on holding the client's reader.
async fn inspect_branch(
    (mut client, client_lease): (http::Rewound<UnixStream>, Lease),
    destination: &Destination,
    mut event: Event,
    shared: &Shared,
    held: &mut Held,
    start: Instant,
) {
    event.inspected = true;
    // Fail closed: never a plain tunnel where inspection was asked for.
    let Some(inspector) = shared.inspector.clone() else {
        let refused = refusal("500 Internal Server Error", "inspection is not set up");
        return refuse_tunnel(&mut client, refused, event, shared, start).await;
    };
    let upstream_floor = http::upstream_floor(shared.max_header_bytes);
    let floors = SESSION_BUFFERS + upstream_floor + pipe::FLOOR;
    // Held (the TLS sessions' part) for as long as the connection lives.
    let mut sessions = match connection::lease(shared, destination, floors) {
        Ok(lease) => lease,
        Err(refused) => return refuse_tunnel(&mut client, refused, event, shared, start).await,
    };
    let leases = InspectedLeases {
        client: client_lease,
        upstream: sessions.split_off(upstream_floor),
        to_client: sessions.split_off(pipe::FLOOR),
    };
    let upstream = match open(destination, shared, held).await {
        Ok(upstream) => upstream,
        Err(refused) => return refuse_tunnel(&mut client, refused, event, shared, start).await,
    };
    let verified = timeout(
        shared.connect_timeout,
        inspector.connect(destination, upstream),
    )
    .await;
    let upstream = match verified {
        Ok(Ok(upstream)) => upstream,
        // Never a plain tunnel instead: the CONNECT is answered 502 with
        // the reason, recorded as a denial and in the event.
        failed => {
            let (reason, why) = match failed {
                Ok(Err(failure)) => failure,
                _ => (
                    DenialReason::UpstreamTimeout,
                    "TLS handshake timed out".to_owned(),
                ),
            };
            let refused = fail(shared, destination, reason, why);
            return refuse_tunnel(&mut client, refused, event, shared, start).await;
        }
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    // The client replays what it sent before the 200 (a pipelined ClientHello).
    // A refused server name is recorded (denial and event) before the child
    // can read the alert.
    let pending = std::sync::Mutex::new(Some(event));
    let refuse_name = || {
        let taken = pending.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut event) = taken {
            let refused = deny(shared, destination, DenialReason::HostMismatch, None);
            event.refused(&refused, &shared.secrets);
            event.push(shared, start);
        }
    };
    let accepted = timeout(
        shared.handshake_timeout,
        inspector.accept(destination, client, refuse_name),
    )
    .await;
    let event = pending.into_inner().unwrap_or_else(|e| e.into_inner());
    let child = match (accepted, event) {
        (Ok(Ok(child)), Some(event)) => (child, event),
        // Refused by name: already recorded.
        (_, None) => return,
        (Ok(Err(_)) | Err(_), Some(event)) => return event.push(shared, start),
    };
    let (child, mut event) = child;
    event.status = Some(200);
    event.decision = Decision::Allowed;
    event.push(shared, start);
    http::serve_inspected(child, upstream, leases, destination, shared).await;
    drop(sessions);
}

async fn refuse_tunnel(
    client: &mut http::Rewound<UnixStream>,
    refused: Refusal,
    mut event: Event,
    shared: &Shared,
    start: Instant,
) {
    event.refused(&refused, &shared.secrets);
    // Recorded before the child can read the answer, as denials are.
    event.push(shared, start);
    let _ = client
        .write_all(&response(&refused, false, &shared.secrets))
        .await;
    // Ended in stages, as the engine ends a refused request (RFC 9112 §9.6):
    // a child that sent more with its CONNECT (a ClientHello, say) would
    // otherwise have its next write fail and could lose the answer.
    let _ = client.shutdown().await;
    shared.drain(client).await;
}
