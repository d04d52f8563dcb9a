//! The gateway's HTTP/1.1 engine: a sequential keep-alive loop over one
//! client connection, generic over `AsyncRead + AsyncWrite` streams so it
//! serves the plain-HTTP proxy (a Unix socket in, TCP out) and decrypted
//! inspected TLS alike ([`serve_inspected`]).
//!
//! For each request: read the head from the child (strict parser, bounded,
//! with a deadline: [`head`], [`read`]), decide it (the allow decision of
//! [`super::decide`], then stand-ins: [`forward`]), hand it to hyper's
//! client toward the destination with the body decoded from the child's
//! framing ([`body`], [`copy`], [`upstream`]; hyper frames what it sends),
//! relay hyper's response to the child, and read the next request on the
//! same connection ([`engine`]). Each request is decided on its own: one
//! naming another destination gets an upstream of its own. A `101` to a
//! request that asked for an upgrade turns the connection into a tunnel (a
//! destination whose rules read each request may only switch to WebSocket).
//!
//! What the gateway reads it checks for secrets' stand-ins: swapped for the
//! real value in the request line and header values toward a destination
//! the secret names, refused toward any other, and refused in bodies and
//! tunnels bound where the secret may not go (a body or tunnel is never
//! rewritten: the value only ever travels in a request head the gateway
//! wrote). Stand-ins are redacted from every record and message.
//!
//! Each request read (and each tunnel) leaves one [`EgressEvent`].

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::UnixStream;
use tokio::time::timeout;

use super::allowlist::Allowlist;
use super::allowlist::Destination;
use super::budget::Held;
use super::connection::{self, refusal, Refusal, Shared};
use super::decide;
use super::denial::DenialReason;
use super::egress::{Decision, EgressEvent, EgressLog};
use super::memory::Lease;
use super::pipe::{pipe, PipeWriter};
use super::rules::{is_token, Access, HostPattern, Pattern, PortPattern, Rule};
use super::secrets::{Exfiltration, Secrets};
use upstream::{Failure, Piece, Response, Upstream};

/// A stream the engine can serve.
pub(super) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// How much a read asks for at once (heads, bodies, tunnels).
const READ_SIZE: usize = 128 * 1024;
/// What a new connection's first read asks for (see [`Reader::fill`]), and
/// the floor of a reader's lease of the memory budget.
pub(super) const FIRST_ROOM: usize = 16 * 1024;
/// Longest chunk-size line (with extensions) accepted.
const MAX_CHUNK_LINE: usize = 4096;
/// Largest trailer section accepted after a chunked body.
const MAX_TRAILERS: usize = 32 * 1024;

mod body;
mod copy;
mod engine;
mod event;
mod forward;
mod fuzz;
mod head;
mod read;
mod scan;
mod upstream;

#[cfg(test)]
mod differential;
#[cfg(test)]
mod tests;

pub use body::Framing;
pub(in crate::network) use body::*;
pub(in crate::network) use copy::*;
pub(in crate::network) use engine::*;
pub(in crate::network) use event::*;
pub(in crate::network) use forward::*;
pub(in crate::network) use fuzz::*;
pub use fuzz::{Forwarded, NotForwarded, ReadRequest};
pub(in crate::network) use head::*;
pub(in crate::network) use read::*;
pub(in crate::network) use scan::*;
pub(in crate::network) use upstream::floor as upstream_floor;
