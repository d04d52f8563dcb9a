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
pub mod denial;
pub mod egress;
pub mod external;
mod external_grants;
pub mod gateway;
pub mod inspect;
pub mod log;
mod proxy;
pub mod rules;
pub mod secrets;

pub use allowlist::{refused_address, Allowlist, Destination, Host};
pub use builtin::BuiltinGateway;
pub use denial::{Denial, DenialCallback, DenialReason, Denials};
pub use egress::{Decision, EgressCallback, EgressEvent, EgressLog};
pub use external::{ExternalDeclaration, ExternalGateway};
pub use gateway::{Gateway, GatewayConfig};
pub use rules::{Access, HostPattern, Pattern, PortPattern, Rule};
pub use secrets::{Secret, Secrets};

/// For the fuzz target `request_head` (see `fuzz/`): parses a request head
/// the way the gateway does and panics if what it would forward breaks the
/// parser's promises. Not part of the API.
#[doc(hidden)]
pub fn fuzz_request_head(bytes: &[u8]) {
    proxy::check_request_head(bytes);
}
