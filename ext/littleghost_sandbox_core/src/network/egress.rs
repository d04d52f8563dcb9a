//! The egress record: one event per connection (a tunnel) and per HTTP
//! request (plain, or inspected HTTPS) through the gateway, allowed or not,
//! kept bounded like the denials and handed to an optional callback, which
//! the binding turns into `sandbox.network_log` and `on_network` events.

use std::time::{Duration, SystemTime};

use super::log::{Callback, Log};

/// What the gateway did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Passed on (a tunnel opened, a request forwarded).
    Allowed,
    /// Refused with a 4xx/5xx of the gateway's own (a denial was recorded,
    /// except for malformed requests and failed upstreams).
    Denied,
}

impl Decision {
    /// The Ruby Symbol name.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Denied => "denied",
        }
    }
}

/// One connection or request through the gateway. `bytes_sent` counts what
/// the gateway passed toward the destination after the request head (the
/// body as framed, or a tunnel's bytes); `bytes_received` what it relayed
/// from the destination to the child (response heads and bodies as framed,
/// or a tunnel's bytes; 0 for the gateway's own refusals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressEvent {
    pub at: SystemTime,
    /// `host:port` as the client named it.
    pub destination: String,
    /// `CONNECT` for a tunnel, else the request's method, when readable.
    pub method: Option<String>,
    /// The origin-form path, when the request was read.
    pub path: Option<String>,
    /// The status the child received (the gateway's own, or the destination's
    /// when readable); `None` for a tunnel cut before any answer.
    pub status: Option<u16>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub duration: Duration,
    pub decision: Decision,
    /// Whether the gateway terminated TLS to read it.
    pub inspected: bool,
}

/// Called for every event, on a gateway thread; must not block.
pub type EgressCallback = Callback<EgressEvent>;

/// The bounded egress record.
pub type EgressLog = Log<EgressEvent>;
