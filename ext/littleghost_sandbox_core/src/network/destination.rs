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

impl Destination {
    /// Parses `authority` (`host:port`, `[v6]:port`) the way requests name
    /// their target; the host is down-cased. `default_port` is used when the
    /// port is absent (plain HTTP); `None` makes the port mandatory.
    pub fn parse(
        authority: &str,
        default_port: Option<u16>,
    ) -> std::result::Result<Destination, String> {
        let (host_text, port_text) = split_authority(authority)?;
        let port = match (port_text, default_port) {
            (Some(text), _) => parse_port(text)?,
            (None, Some(port)) => port,
            (None, None) => return Err("is missing a port (expected \"host:port\")".into()),
        };
        let host = parse_host(&host_text.to_ascii_lowercase())?;
        Ok(Destination { host, port })
    }
}

pub(super) fn split_authority(text: &str) -> std::result::Result<(&str, Option<&str>), String> {
    if text.contains("://") || text.contains('/') {
        return Err("is a URL or path, not \"host:port\"".into());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or("has an unterminated '[' (IPv6 literals are written \"[addr]:port\")")?;
        if inside.parse::<Ipv6Addr>().is_err() {
            return Err(format!("has an invalid IPv6 literal [{inside}]"));
        }
        return match after {
            "" => Ok((inside, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((inside, Some(port))),
                None => Err("has text after the IPv6 literal that is not \":port\"".into()),
            },
        };
    }
    match text.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => {
            Err("has an IPv6 literal without brackets (write \"[addr]:port\")".into())
        }
        Some((host, port)) => Ok((host, Some(port))),
        None => Ok((text, None)),
    }
}

fn parse_port(text: &str) -> std::result::Result<u16, String> {
    let valid = !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u32>() {
        Ok(port @ 1..=65535) if valid => Ok(port as u16),
        _ => Err(format!("has an invalid port {text:?} (expected 1..65535)")),
    }
}

fn parse_host(text: &str) -> std::result::Result<Host, String> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    if text.is_empty() {
        return Err("has an empty host".into());
    }
    if text.len() > 253 {
        return Err("has a host name longer than 253 characters".into());
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
            return Err(format!(
                "has an invalid host name label {label:?} (labels are 1..63 of [a-z0-9-], no leading or trailing '-')"
            ));
        }
    }
    // A dotted all-numeric name that is not a valid IPv4 address ("1.2.3.999")
    // would be read as an address by some resolvers: refuse it.
    if text
        .split('.')
        .all(|label| label.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!("has an invalid IPv4 address {text:?}"));
    }
    Ok(Host::Name(text.to_owned()))
}
