//! Where the daemon listens and the token it wants: checked when the
//! provider is built, before any connection (docs/spec.md 1.4: a malformed
//! endpoint is misuse).

use super::error::Error;

/// The header (gRPC metadata) carrying a scope's narrowings.
pub const SCOPE_HEADER: &str = "x-littleghost-scope";

/// The daemon's two addresses and the bearer token, if it needs one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `HOST:PORT` of the gRPC server.
    pub grpc: String,
    /// `HOST:PORT` of the REST server (given as `http://HOST:PORT`).
    pub rest: String,
    /// Sent as `authorization: Bearer TOKEN` with every call.
    pub token: Option<String>,
}

impl Endpoint {
    /// Checks `grpc` (`HOST:PORT`, or `http://HOST:PORT`), `rest`
    /// (`http://HOST:PORT`) and `token` (printable, no spaces).
    pub fn new(grpc: &str, rest: &str, token: Option<&str>) -> Result<Endpoint, Error> {
        let grpc = host_port("grpc", grpc.strip_prefix("http://").unwrap_or(grpc))?;
        let Some(rest) = rest.strip_prefix("http://") else {
            return Err(Error::Endpoint(format!(
                "remote endpoint rest: must be http://HOST:PORT (got {rest:?}); reach a daemon \
                 elsewhere through a tunnel or the sandbox router"
            )));
        };
        let rest = host_port("rest", rest.trim_end_matches('/'))?;
        if let Some(token) = token {
            if token.is_empty() || token.chars().any(|c| c.is_control() || c == ' ') {
                return Err(Error::Endpoint(
                    "remote token must be non-empty, without spaces or control characters".into(),
                ));
            }
        }
        Ok(Endpoint {
            grpc,
            rest,
            token: token.map(str::to_string),
        })
    }

    /// The `authorization` header value, if a token was given.
    pub fn authorization(&self) -> Option<String> {
        self.token.as_ref().map(|token| format!("Bearer {token}"))
    }
}

/// `HOST:PORT` with a non-empty host and a port number, nothing else.
fn host_port(label: &str, text: &str) -> Result<String, Error> {
    let refused = || {
        Error::Endpoint(format!(
            "remote endpoint {label}: must be HOST:PORT (got {text:?})"
        ))
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(refused)?;
    let host_ok = !host.is_empty()
        && !host.contains(['/', '?', '#', '@', ' '])
        && (!host.contains(':') || (host.starts_with('[') && host.ends_with(']')));
    if !host_ok || port.parse::<u16>().is_err() {
        return Err(refused());
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_host_and_port() {
        let endpoint =
            Endpoint::new("127.0.0.1:9090", "http://127.0.0.1:8080/", Some("t")).unwrap();
        assert_eq!(endpoint.grpc, "127.0.0.1:9090");
        assert_eq!(endpoint.rest, "127.0.0.1:8080");
        assert_eq!(endpoint.authorization().as_deref(), Some("Bearer t"));
        assert!(Endpoint::new("[::1]:9090", "http://[::1]:8080", None).is_ok());
    }

    #[test]
    fn malformed_endpoints_and_tokens_are_refused() {
        for (grpc, rest) in [
            ("localhost", "http://localhost:8080"),
            ("localhost:x", "http://localhost:8080"),
            ("localhost:9090", "https://localhost:8080"),
            ("localhost:9090", "localhost:8080"),
            ("localhost:9090", "http://a/b:8080"),
        ] {
            assert!(Endpoint::new(grpc, rest, None).is_err(), "{grpc} {rest}");
        }
        assert!(Endpoint::new("h:1", "http://h:2", Some("a b")).is_err());
        assert!(Endpoint::new("h:1", "http://h:2", Some("")).is_err());
    }
}
