//! How the gateway resolves destination names: through a [`Resolve`] seam,
//! tokio's `lookup_host` by default ([`SystemResolver`]), so a test can give
//! a name that answers differently on each lookup (DNS rebinding) and check
//! that the gateway connects only to the addresses it vetted.
//!
//! The gateway asks once per upstream connection it opens and connects only
//! to the addresses of that one answer, after vetting every one of them.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

/// A lookup in progress.
pub type Lookup<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>>;

/// Resolves a destination name to socket addresses.
pub trait Resolve: Send + Sync {
    /// The addresses of `name` at `port` (an empty list or an error: the
    /// gateway answers `502`).
    fn lookup<'a>(&'a self, name: &'a str, port: u16) -> Lookup<'a>;
}

/// The system resolver (tokio's `lookup_host`, i.e. `getaddrinfo`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup<'a>(&'a self, name: &'a str, port: u16) -> Lookup<'a> {
        Box::pin(async move { Ok(tokio::net::lookup_host((name, port)).await?.collect()) })
    }
}

/// The resolver a gateway uses.
pub type Resolver = Arc<dyn Resolve>;

/// The default: [`SystemResolver`].
pub fn system() -> Resolver {
    Arc::new(SystemResolver)
}
