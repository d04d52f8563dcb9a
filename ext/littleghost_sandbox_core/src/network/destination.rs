//! What a client names: a `host:port` [`Destination`] (a lowercase DNS name
//! or an IP literal, and a port), parsed the way requests and allowlist
//! entries write it.

use std::net::{IpAddr, Ipv6Addr};

/// A destination host: a lowercase DNS name or an IP literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
        }
    }
}

/// One `host:port` destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    pub host: Host,
    pub port: u16,
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Why a text names no destination; each reads as the end of a sentence
/// about the text ("CONNECT target ...", "network allowlist entry \"..\" ...").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("is a URL or path, not \"host:port\"")]
    UrlOrPath,
    #[error("has an unterminated '[' (IPv6 literals are written \"[addr]:port\")")]
    UnterminatedBracket,
    #[error("has an invalid IPv6 literal [{0}]")]
    Ipv6Literal(String),
    #[error("has text after the IPv6 literal that is not \":port\"")]
    AfterIpv6Literal,
    #[error("has an IPv6 literal without brackets (write \"[addr]:port\")")]
    UnbracketedIpv6,
    #[error("is missing a port (expected \"host:port\")")]
    MissingPort,
    #[error("has an invalid port {0:?} (expected 1..65535)")]
    Port(String),
    #[error("has an empty host")]
    EmptyHost,
    #[error("has a host name longer than 253 characters")]
    LongHost,
    #[error("has an invalid host name label {0:?} (labels are 1..63 of [a-z0-9-], no leading or trailing '-')")]
    Label(String),
    /// A dotted all-numeric name that is no IPv4 address.
    #[error("has an invalid IPv4 address {0:?}")]
    Ipv4(String),
}

impl Destination {
    /// Parses `authority` (`host:port`, `[v6]:port`) the way requests name
    /// their target; the host is down-cased. `default_port` is used when the
    /// port is absent (plain HTTP); `None` makes the port mandatory.
    pub fn parse(
        authority: &str,
        default_port: Option<u16>,
    ) -> std::result::Result<Destination, Malformed> {
        let (host_text, port_text) = split_authority(authority)?;
        let port = match (port_text, default_port) {
            (Some(text), _) => parse_port(text)?,
            (None, Some(port)) => port,
            (None, None) => return Err(Malformed::MissingPort),
        };
        let host = parse_host(&host_text.to_ascii_lowercase())?;
        Ok(Destination { host, port })
    }
}

pub(super) fn split_authority(text: &str) -> std::result::Result<(&str, Option<&str>), Malformed> {
    if text.contains("://") || text.contains('/') {
        return Err(Malformed::UrlOrPath);
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or(Malformed::UnterminatedBracket)?;
        if inside.parse::<Ipv6Addr>().is_err() {
            return Err(Malformed::Ipv6Literal(inside.to_owned()));
        }
        return match after {
            "" => Ok((inside, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((inside, Some(port))),
                None => Err(Malformed::AfterIpv6Literal),
            },
        };
    }
    match text.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => Err(Malformed::UnbracketedIpv6),
        Some((host, port)) => Ok((host, Some(port))),
        None => Ok((text, None)),
    }
}

fn parse_port(text: &str) -> std::result::Result<u16, Malformed> {
    let valid = !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u32>() {
        Ok(port @ 1..=65535) if valid => Ok(port as u16),
        _ => Err(Malformed::Port(text.to_owned())),
    }
}

fn parse_host(text: &str) -> std::result::Result<Host, Malformed> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    if text.is_empty() {
        return Err(Malformed::EmptyHost);
    }
    if text.len() > 253 {
        return Err(Malformed::LongHost);
    }
    for label in text.split('.') {
        let valid = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid {
            return Err(Malformed::Label(label.to_owned()));
        }
    }
    // A dotted all-numeric name that is not a valid IPv4 address ("1.2.3.999")
    // would be read as an address by some resolvers: refuse it.
    if text
        .split('.')
        .all(|label| label.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Malformed::Ipv4(text.to_owned()));
    }
    Ok(Host::Name(text.to_owned()))
}
