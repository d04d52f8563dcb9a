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
pub mod external;
mod external_grants;
pub mod gateway;
mod proxy;

pub use allowlist::{refused_address, Allowlist, Destination, Host};
pub use builtin::BuiltinGateway;
pub use denial::{Denial, DenialCallback, DenialReason, Denials};
pub use external::{ExternalDeclaration, ExternalGateway};
pub use gateway::{Gateway, GatewayConfig};
