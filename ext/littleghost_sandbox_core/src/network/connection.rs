//! What every connection of one gateway listener shares ([`Shared`]: the
//! rules, secrets, logs and limits), and the two things both the `CONNECT`
//! branch ([`super::proxy`]) and the HTTP engine ([`super::http`]) do with
//! it: refuse (a [`Refusal`], recorded by [`deny`], answered by
//! [`response`]) and reach a destination ([`open`]: resolve once, vet
//! every address, connect only to a vetted one).
//!
//! Names are resolved here (through the gateway's [`super::resolve`] seam,
//! once per upstream connection) and every resolved address is vetted
//! before any connection is made; the gateway then connects only to those
//! addresses, so a DNS answer that changes between check and connect cannot
//! redirect it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::allowlist::{refused_address, Allowlist, Destination, Host};
use super::budget::Held;
use super::denial::{DenialReason, Denials};
use super::egress::EgressLog;
use super::inspect::Inspector;
use super::memory::{Lease, Memory};
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
    /// The gateway's memory budget, shared by its views.
    pub memory: Arc<Memory>,
    pub max_header_bytes: usize,
    pub handshake_timeout: Duration,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
}

/// The longest a connection the gateway ended waits for the client to end
/// its side (the engine's `close`, a refused `CONNECT`): long enough for a client to finish sending
/// and read its answer, short enough that a refused client cannot keep its
/// descriptor and memory slots by sending forever (nginx's `lingering_time`
/// is the same 30 s).
pub(super) const LINGER: Duration = Duration::from_secs(30);

impl Shared {
    /// Reads and drops what a client the gateway ended still sends, until
    /// the client ends its side: at most [`LINGER`], or the idle timeout
    /// where that is shorter.
    pub async fn drain(&self, client: &mut (impl AsyncRead + Unpin)) {
        let mut sink = [0u8; 8 * 1024];
        let drained =
            async { while matches!(client.read(&mut sink).await, Ok(read) if read > 0) {} };
        let _ = timeout(self.idle_timeout.min(LINGER), drained).await;
    }
}

/// An HTTP error answer: status line text and a short reason (never a
/// secret's value or stand-in: destinations and paths are redacted).
#[derive(Debug)]
pub(super) struct Refusal {
    pub status: &'static str,
    pub reason: String,
    /// The denial recorded for it (its reason and the upstream's words),
    /// which the egress event repeats; `None` for a malformed request head.
    pub denied: Option<(DenialReason, Option<String>)>,
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
        denied: None,
    }
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
    let addresses: Vec<SocketAddr> = match &destination.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, destination.port)],
        Host::Name(name) => {
            let lookup = shared.resolver.lookup(name, destination.port);
            match timeout(shared.connect_timeout, lookup).await {
                Ok(Ok(found)) if found.is_empty() => {
                    return Err(fail(shared, destination, DenialReason::Dns, "no address"));
                }
                Ok(Ok(found)) => found,
                Ok(Err(why)) => {
                    return Err(fail(
                        shared,
                        destination,
                        DenialReason::Dns,
                        why.to_string(),
                    ))
                }
                Err(_) => return Err(fail(shared, destination, DenialReason::Dns, "timed out")),
            }
        }
    };
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
    let mut failures = Vec::new();
    for address in addresses {
        match timeout(shared.connect_timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(why)) => failures.push(format!("{address}: {why}")),
            Err(_) => failures.push(format!("{address}: timed out")),
        }
    }
    Err(fail(
        shared,
        destination,
        DenialReason::UpstreamUnreachable,
        failures.join("; "),
    ))
}

/// A lease of `floor` bytes of the memory budget for a buffer of a
/// connection to `destination`, or its refusal (`503`, denial
/// `MemoryBudget`) when the budget has not that much free.
pub(super) fn lease(
    shared: &Shared,
    destination: &Destination,
    floor: usize,
) -> Result<Lease, Refusal> {
    shared
        .memory
        .lease(floor)
        .ok_or_else(|| deny(shared, destination, DenialReason::MemoryBudget, None))
}

/// The one place a gateway denial is made: recorded (the destination and
/// path with stand-ins redacted), and answered with the reason's status
/// (403, or 503 for the descriptor and memory budgets).
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
pub(super) fn deny_shown(
    shared: &Shared,
    shown: String,
    reason: DenialReason,
    request: Option<(String, String)>,
) -> Refusal {
    let text = format!("{shown}: {}", reason.text());
    shared.denials.record_request(shown, reason, request);
    Refusal {
        denied: Some((reason, None)),
        ..refusal(reason.status(), text)
    }
}

/// A destination that failed the gateway (it did not resolve, answer or
/// verify): recorded as a denial with `detail`, the resolver's, the
/// system's or the TLS library's words, which the answer's body repeats.
pub(super) fn fail(
    shared: &Shared,
    destination: &Destination,
    reason: DenialReason,
    detail: impl Into<String>,
) -> Refusal {
    fail_request(shared, destination, reason, detail, None)
}

/// [`fail`] for an HTTP request (its method and path).
pub(super) fn fail_request(
    shared: &Shared,
    destination: &Destination,
    reason: DenialReason,
    detail: impl Into<String>,
    request: Option<(String, String)>,
) -> Refusal {
    let shown = shared.secrets.redact(&destination.to_string()).into_owned();
    let detail = shared.secrets.redact(&detail.into()).into_owned();
    let text = format!("{shown}: {}: {detail}", reason.text());
    shared
        .denials
        .record_detailed(shown, reason, request, Some(detail.clone()));
    Refusal {
        denied: Some((reason, Some(detail))),
        ..refusal(reason.status(), text)
    }
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
