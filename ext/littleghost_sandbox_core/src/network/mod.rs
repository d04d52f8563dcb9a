//! The built-in enforcing network gateway (SPEC §20, G.3/G.5/G.7).
//!
//! [`gateway::Gateway`] listens on a Unix socket in a private directory and
//! serves HTTP `CONNECT` and plain-HTTP forward requests to exactly the
//! destinations of an [`allowlist::Allowlist`]; everything else gets `403`
//! and a [`denial::Denial`] record. The helper's `relay` mode bridges
//! `127.0.0.1:3128` inside a sandbox's network namespace to that socket.

pub mod allowlist;
pub mod budget;
pub mod builtin;
mod connection;
mod decide;
pub mod denial;
pub mod destination;
pub mod egress;
pub mod external;
mod external_grants;
pub mod external_refusal;
pub mod folder;
pub mod gateway;
mod http;
pub mod inspect;
pub mod log;
pub mod memory;
mod pipe;
mod proxy;
pub mod queue;
pub mod resolve;
pub mod rules;
pub mod secrets;

pub use allowlist::{refused_address, Allowlist, Destination, Host};
pub use builtin::BuiltinGateway;
pub use denial::{Denial, DenialCallback, DenialReason, Denials};
pub use egress::{Decision, EgressCallback, EgressEvent, EgressLog};
pub use external::{ExternalDeclaration, ExternalGateway};
pub use gateway::{Gateway, GatewayConfig, GatewayView};
pub use resolve::{Resolve, Resolver, SystemResolver};
pub use rules::{Access, HostPattern, Pattern, PortPattern, Rule};
pub use secrets::{Secret, Secrets};

/// For the fuzz target `request_head` (see `fuzz/`): parses a request head
/// the way the gateway does and panics if what it would forward breaks the
/// parser's promises. Not part of the API.
#[doc(hidden)]
pub fn fuzz_request_head(bytes: &[u8]) {
    http::check_request_head(bytes);
}

/// For the fuzz targets `request_head`, `http_rules` and `secrets`: the head
/// the plain-HTTP proxy would forward for the request head `raw` (without
/// its blank line) under `allowlist` (`None`: the named destination with no
/// rules) and `secrets`, and its body's framing; `Err` says why the engine
/// refuses it. Decided by the engine's own steps, without I/O, so a target
/// can hold the result against a model of its own. Not part of the API.
#[doc(hidden)]
pub fn fuzz_forward(
    raw: &[u8],
    allowlist: Option<&Allowlist>,
    secrets: &Secrets,
) -> Result<FuzzForwarded, FuzzNotForwarded> {
    http::forward_request(raw, allowlist, secrets)
}

#[doc(hidden)]
pub use http::{
    Forwarded as FuzzForwarded, Framing as FuzzFraming, NotForwarded as FuzzNotForwarded,
};

/// For the fuzz target `request_hyper`: the first request of `bytes` as the
/// engine reads it from a child (head and decoded body, and how many bytes
/// it took), or `None` when the engine refuses it or its body is
/// incomplete. Not part of the API.
#[doc(hidden)]
pub fn fuzz_read_request(bytes: &[u8]) -> Option<FuzzReadRequest> {
    http::read_request(bytes)
}

#[doc(hidden)]
pub use http::ReadRequest as FuzzReadRequest;

/// For the fuzz target `chunked`: decodes chunked framing whole and in
/// pieces and panics if the two disagree or a step leaves its input.
#[doc(hidden)]
pub fn fuzz_chunked(bytes: &[u8]) {
    http::check_chunked(bytes);
}
