//! The relay mode's `--forward LISTEN=HOST:PORT` argument: one listener the
//! helper's `relay` opens inside a sandbox's network namespace for a client
//! that ignores the proxy variables. The core makes these
//! (`littleghost_sandbox_core::launch::Transparent`); the helper parses them.

use std::net::SocketAddrV4;

/// One listener of the relay: connections to `listen` become `CONNECT
/// host:port` through the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub listen: SocketAddrV4,
    pub host: String,
    pub port: u16,
}

impl Forward {
    /// The relay's `--forward` value: `LISTEN=HOST:PORT`.
    pub fn argument(&self) -> String {
        format!("{}={}:{}", self.listen, self.host, self.port)
    }

    /// Parses [`argument`](Self::argument)'s form back (the relay's side).
    pub fn parse(text: &str) -> Option<Forward> {
        let (listen, target) = text.split_once('=')?;
        let (host, port) = target.rsplit_once(':')?;
        let host = host.to_owned();
        if !valid_host(&host) {
            return None;
        }
        Some(Forward {
            listen: listen.parse().ok()?,
            host,
            port: port.parse().ok().filter(|port| *port > 0)?,
        })
    }
}

/// A name that can be written into `/etc/hosts` and given to the relay as
/// is: letters, digits, `-` and `.`, 1 to 253 characters, no empty label.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forward_argument_must_be_well_formed() {
        assert!(Forward::parse("127.80.0.1:443=example.com:443").is_some());
        assert!(Forward::parse("127.80.0.1:443").is_none());
        assert!(Forward::parse("nonsense=example.com:443").is_none());
        assert!(Forward::parse("127.80.0.1:443=exa mple.com:443").is_none());
        assert!(Forward::parse("127.80.0.1:443=example.com:0").is_none());
    }
}
