//! The gateway's one allow decision, shared by the `CONNECT` branch
//! ([`super::proxy`]) and the HTTP engine ([`super::http`]): whether a
//! destination may be reached at all, how a `CONNECT` to it is served, and
//! whether one request (its method, its path, a protocol switch) is allowed
//! there (docs/spec.md, "HTTP rules").

use super::allowlist::{Allowlist, Destination};
use super::denial::DenialReason;
use super::rules::Access;

/// The rules that apply to `destination`, or `NotAllowed` when none lists it.
pub(super) fn destination<'a>(
    allowlist: &'a Allowlist,
    destination: &Destination,
) -> Result<Access<'a>, DenialReason> {
    allowlist
        .access(destination)
        .ok_or(DenialReason::NotAllowed)
}

/// How an allowed `CONNECT` is served.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Tunnel {
    /// Terminated with the gateway's TLS on both sides, each request decided.
    Inspected,
    /// Bytes relayed untouched (watched for stand-ins only).
    Opaque,
}

/// How a `CONNECT` to a destination with `access` is served. Fails closed:
/// HTTP rules on a destination whose requests an opaque tunnel would not
/// let the gateway read refuse it (`InspectionRequired`).
pub(super) fn connect(access: &Access<'_>) -> Result<Tunnel, DenialReason> {
    if access.inspect() {
        Ok(Tunnel::Inspected)
    } else if access.restricts_requests() {
        Err(DenialReason::InspectionRequired)
    } else {
        Ok(Tunnel::Opaque)
    }
}

/// Whether one request is allowed: its method and path by the rules, and
/// the protocol it asks to switch to (`upgrade`). After a switch the
/// gateway reads nothing more: a destination whose rules must read each
/// request may switch only to WebSocket (whose messages are not requests),
/// never to another HTTP (h2c) carrying requests the rules never saw.
pub(super) fn request(
    access: &Access<'_>,
    method: &str,
    path: &str,
    upgrade: Option<&str>,
) -> Result<(), DenialReason> {
    let switches_past_rules =
        access.restricts_requests() && upgrade.is_some_and(|u| !only_websocket(u));
    if !access.permits(method, path) || switches_past_rules {
        return Err(DenialReason::RequestNotAllowed);
    }
    Ok(())
}

/// Whether every protocol an `Upgrade` value offers is WebSocket
/// (`websocket`, any case, with or without a version).
fn only_websocket(upgrade: &str) -> bool {
    upgrade.split(',').all(|offered| {
        offered
            .trim()
            .split('/')
            .next()
            .is_some_and(|name| name.eq_ignore_ascii_case("websocket"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_websocket_upgrade_counts_as_websocket() {
        for yes in [
            "websocket",
            "WebSocket",
            "websocket/13",
            " websocket , WEBSOCKET",
        ] {
            assert!(only_websocket(yes), "{yes}");
        }
        for no in ["h2c", "H2C", "websocket, h2c", "TLS/1.2", "", "websocketx"] {
            assert!(!only_websocket(no), "{no}");
        }
    }
}
