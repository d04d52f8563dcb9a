//! How the gateway resolves destination names: through a [`Resolve`] seam,
//! tokio's `lookup_host` by default ([`SystemResolver`]), so a test can give
//! a name that answers differently on each lookup (DNS rebinding) and check
//! that the gateway connects only to the addresses it vetted.
//!
//! The gateway asks once per upstream connection it opens and connects only
//! to the addresses of that one answer, after vetting every one of them.
//! A declaration's `resolve:` map ([`Mapped`]) answers for its names before
//! the system is asked; its addresses are vetted like any other (a private
//! one still needs `allow_private_destinations: true`).

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
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

/// Fixed answers for some names (`resolve:`, like curl's `--resolve`),
/// the inner resolver for the others.
pub struct Mapped {
    names: Vec<(String, IpAddr)>,
    inner: Resolver,
}

impl Mapped {
    /// `names` are down-cased DNS names (the declaration checked them).
    pub fn new(names: Vec<(String, IpAddr)>, inner: Resolver) -> Mapped {
        Mapped { names, inner }
    }
}

impl Resolve for Mapped {
    fn lookup<'a>(&'a self, name: &'a str, port: u16) -> Lookup<'a> {
        let wanted = name.trim_end_matches('.');
        match self
            .names
            .iter()
            .find(|(mapped, _)| mapped.eq_ignore_ascii_case(wanted))
        {
            Some((_, address)) => {
                let found = vec![SocketAddr::new(*address, port)];
                Box::pin(async move { Ok(found) })
            }
            None => self.inner.lookup(name, port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;

    impl Resolve for Nothing {
        fn lookup<'a>(&'a self, _: &'a str, _: u16) -> Lookup<'a> {
            Box::pin(async { Err(io::Error::other("not asked")) })
        }
    }

    #[tokio::test]
    async fn a_mapped_name_answers_its_address_and_others_go_on() {
        let mapped = Mapped::new(
            vec![("api.example.test".into(), [127, 0, 0, 1].into())],
            Arc::new(Nothing),
        );
        let found = mapped.lookup("API.example.test.", 8080).await.unwrap();
        assert_eq!(found, ["127.0.0.1:8080".parse().unwrap()]);
        assert!(mapped.lookup("other.test", 80).await.is_err());
    }
}
