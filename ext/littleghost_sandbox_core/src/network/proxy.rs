//! One gateway connection: its setup and the `CONNECT` branch. The HTTP
//! engine ([`super::http`]) reads the request heads and serves plain HTTP
//! with keep-alive; a `CONNECT` comes back here to be decided, then
//! tunnelled, or, for an `inspect: true` destination, terminated with the
//! gateway's own TLS on both sides ([`super::inspect`]) and served by the
//! same engine request by request.
//!
//! Names are resolved here (through the gateway's [`super::resolve`] seam,
//! once per upstream connection) and every resolved address is vetted
//! before any connection is made; the gateway then connects only to those
//! addresses, so a DNS answer that changes between check and connect cannot
//! redirect it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UnixStream};
use tokio::time::timeout;

use super::allowlist::{refused_address, Allowlist, Destination, Host};
use super::budget::Held;
use super::denial::{DenialReason, Denials};
use super::egress::{Decision, EgressLog};
use super::http::{self, Connect, Event};
use super::inspect::{AcceptError, Inspector};
use super::resolve::Resolver;
use super::secrets::Secrets;

/// What every connection of one listener reads; a gateway's views clone it
/// with their own allowlist and secrets (gateway.rs).
#[derive(Clone)]
pub(super) struct Shared {
    pub allowlist: Allowlist,
    pub secrets: Secrets,
    pub denials: Arc<Denials>,
    pub egress: Arc<EgressLog>,
    pub resolver: Resolver,
    /// The gateway's CA and TLS configurations, when a rule asks for inspection.
    pub inspector: Option<Arc<Inspector>>,
    pub max_header_bytes: usize,
    pub handshake_timeout: Duration,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
}

/// An HTTP error answer: status line text and a short reason (never a
/// secret's value or stand-in: destinations and paths are redacted).
#[derive(Debug)]
pub(super) struct Refusal {
    pub status: &'static str,
    pub reason: String,
}

impl Refusal {
    /// The numeric status.
    pub(super) fn code(&self) -> u16 {
        self.status
            .get(..3)
            .and_then(|code| code.parse().ok())
            .unwrap_or(500)
    }
}

pub(super) fn refusal(status: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        status,
        reason: reason.into(),
    }
}

/// Serves one admitted connection; `held` is its client descriptor and
/// takes the upstream one before a destination is opened.
pub(super) async fn serve(client: UnixStream, shared: Arc<Shared>, mut held: Held) {
    if let Some(connect) = http::serve_proxy(client, &shared, &mut held).await {
        connect_branch(connect, &shared, &mut held).await;
    }
}

/// Refuses a connection the budget has no descriptor for, before reading
/// anything (its destination is unknown: the denial names `*`): one
/// non-blocking write of the `503`, then the socket is closed.
pub(super) fn refuse_unread(client: UnixStream, shared: &Shared) {
    shared
        .denials
        .record("*".to_owned(), DenialReason::DescriptorBudget);
    let refused = refusal(
        DenialReason::DescriptorBudget.status(),
        format!("*: {}", DenialReason::DescriptorBudget.text()),
    );
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
    let Some(access) = shared.allowlist.access(&destination) else {
        let refused = deny(shared, &destination, DenialReason::NotAllowed, None);
        return refuse_tunnel(&mut client, refused, event, shared, start).await;
    };
    if access.inspect() {
        return inspect_branch(client, &destination, event, shared, held, start).await;
    }
    // Fail closed: HTTP rules on a destination whose requests this tunnel
    // would not let the gateway read.
    if access.restricts_requests() {
        let refused = deny(shared, &destination, DenialReason::InspectionRequired, None);
        return refuse_tunnel(&mut client, refused, event, shared, start).await;
    }
    let upstream = match open(&destination, shared, held).await {
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
    let tunneled = http::tunnel(client, upstream, shared).await;
    event.sent = tunneled.sent;
    event.received = tunneled.received;
    event.decision = Decision::Allowed;
    if tunneled.cut.is_some() {
        deny(shared, &destination, DenialReason::SecretExfiltration, None);
        event.decision = Decision::Denied;
    }
    event.push(shared, start);
}

/// A CONNECT to an inspected destination: TLS to the destination first,
/// verifying its certificate for the CONNECT target (a failure is a `502` to
/// the CONNECT, with the reason), then `200`, then the child's TLS with a
/// leaf of the gateway's CA (an SNI naming another host is refused: denial
/// `HostMismatch`), then the engine serves the decrypted requests, each
/// checked against the rules and its stand-ins swapped (one egress event per
/// request, beside this CONNECT's own).
async fn inspect_branch(
    mut client: http::Rewound<UnixStream>,
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
        failed => {
            let why = match failed {
                Ok(Err(why)) => why,
                _ => "timed out".to_owned(),
            };
            let shown = shared.secrets.redact(&destination.to_string()).into_owned();
            let refused = refusal(
                "502 Bad Gateway",
                format!("{shown}: TLS to the destination failed, so it is not inspected: {why}"),
            );
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
    let accepted = timeout(
        shared.handshake_timeout,
        inspector.accept(destination, client),
    )
    .await;
    let child = match accepted {
        Ok(Ok(child)) => child,
        Ok(Err(AcceptError::HostMismatch { .. })) => {
            deny(shared, destination, DenialReason::HostMismatch, None);
            return event.push(shared, start);
        }
        Ok(Err(AcceptError::Handshake(_))) | Err(_) => return event.push(shared, start),
    };
    event.status = Some(200);
    event.decision = Decision::Allowed;
    event.push(shared, start);
    http::serve_inspected(child, upstream, destination, shared).await;
}

async fn refuse_tunnel(
    client: &mut http::Rewound<UnixStream>,
    refused: Refusal,
    mut event: Event,
    shared: &Shared,
    start: Instant,
) {
    event.status = Some(refused.code());
    event.decision = Decision::Denied;
    // Recorded before the child can read the answer, as denials are.
    event.push(shared, start);
    let _ = client
        .write_all(&response(&refused, false, &shared.secrets))
        .await;
    let _ = client.shutdown().await;
}

/// Checks the allowlist, resolves, vets every address, takes the upstream
/// descriptor from the budget (once per connection) and connects to a
/// vetted address.
pub(super) async fn open(
    destination: &Destination,
    shared: &Shared,
    held: &mut Held,
) -> Result<TcpStream, Refusal> {
    if !shared.allowlist.allows(destination) {
        return Err(deny(shared, destination, DenialReason::NotAllowed, None));
    }
    let shown = shared.secrets.redact(&destination.to_string()).into_owned();
    let addresses: Vec<SocketAddr> = match &destination.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, destination.port)],
        Host::Name(name) => {
            let lookup = shared.resolver.lookup(name, destination.port);
            match timeout(shared.connect_timeout, lookup).await {
                Ok(Ok(found)) => found,
                _ => Vec::new(),
            }
        }
    };
    if addresses.is_empty() {
        return Err(refusal(
            "502 Bad Gateway",
            format!("cannot resolve {shown}"),
        ));
    }
    if !shared.allowlist.allow_private_destinations()
        && addresses
            .iter()
            .any(|address| refused_address(address.ip()))
    {
        return Err(deny(
            shared,
            destination,
            DenialReason::PrivateDestination,
            None,
        ));
    }
    if held.count() < 2 && !held.take() {
        return Err(deny(
            shared,
            destination,
            DenialReason::DescriptorBudget,
            None,
        ));
    }
    for address in addresses {
        if let Ok(Ok(stream)) = timeout(shared.connect_timeout, TcpStream::connect(address)).await {
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
    }
    Err(refusal(
        "502 Bad Gateway",
        format!("cannot connect to {shown}"),
    ))
}

/// The one place a gateway denial is made: recorded (the destination and
/// path with stand-ins redacted), and answered with the reason's status
/// (403, or 503 for the descriptor budget).
pub(super) fn deny(
    shared: &Shared,
    destination: &Destination,
    reason: DenialReason,
    request: Option<(String, String)>,
) -> Refusal {
    let shown = shared.secrets.redact(&destination.to_string()).into_owned();
    deny_shown(shared, shown, reason, request)
}

/// [`deny`] for a destination already shown as text (redacted).
fn deny_shown(
    shared: &Shared,
    shown: String,
    reason: DenialReason,
    request: Option<(String, String)>,
) -> Refusal {
    let text = format!("{shown}: {}", reason.text());
    shared.denials.record_request(shown, reason, request);
    refusal(reason.status(), text)
}

/// The gateway's own answer; `keep_alive` leaves the connection open for
/// the client's next request. Stand-ins are redacted from its text (a
/// reason can quote a URL host or a CONNECT target).
pub(super) fn response(refused: &Refusal, keep_alive: bool, secrets: &Secrets) -> Vec<u8> {
    let body = format!("littleghost gateway: {}\n", secrets.redact(&refused.reason));
    let connection = if keep_alive { "keep-alive" } else { "close" };
    format!(
        "HTTP/1.1 {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        refused.status,
        body.len()
    )
    .into_bytes()
}
