//! Destination matching (`network/rules.rs`, `network/destination.rs`):
//! the input is an allowlist entry and a destination as a request names it
//! (`host[:port]`, port 80 by default), separated by the first newline. When
//! the gateway takes both, it allows the destination exactly when the model
//! below says so: an exact name (case aside) or address, `*.suffix` for a
//! name with at least one more label (never the apex, never an address),
//! an address in a network `net/len` (an IPv4-mapped IPv6 address counts as
//! the IPv4 address it carries; never a name), and the port or `*`.
//! The model parses the texts itself; it shares no code with the gateway.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use littleghost_sandbox_core::network::{Allowlist, Destination};

#[derive(Debug)]
enum Host {
    Name(String),
    Ip(IpAddr),
}

#[derive(Debug)]
enum HostPattern {
    Exact(Host),
    Subdomains(String),
    Network(IpAddr, u32),
}

/// A DNS name as the gateway's documentation defines one: labels of 1..63
/// of `[a-z0-9-]`, no `-` at either end, at most 253 bytes, not all labels
/// numeric (a resolver could take that for an address).
fn is_name(text: &str) -> bool {
    text.len() <= 253
        && text.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
        && !text
            .split('.')
            .all(|label| label.bytes().all(|b| b.is_ascii_digit()))
}

fn port(text: &str) -> Option<u16> {
    let digits = (1..=5).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| text.parse::<u16>().ok())
        .flatten()
        .filter(|&p| p > 0)
}

/// `host[:port]` or `[v6][:port]` into its host text (brackets removed,
/// whether it had them) and port text.
fn split(text: &str) -> Option<(&str, bool, Option<&str>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        return match after {
            "" => Some((inside, true, None)),
            _ => Some((inside, true, Some(after.strip_prefix(':')?))),
        };
    }
    match text.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => None,
        Some((host, port)) => Some((host, false, Some(port))),
        None => Some((text, false, None)),
    }
}

fn host(text: &str, bracketed: bool) -> Option<Host> {
    if bracketed {
        return text.parse::<Ipv6Addr>().ok().map(|ip| Host::Ip(ip.into()));
    }
    if let Ok(ip) = text.parse::<Ipv4Addr>() {
        return Some(Host::Ip(ip.into()));
    }
    is_name(text).then(|| Host::Name(text.to_owned()))
}

fn destination(text: &str) -> Option<(Host, u16)> {
    let text = text.to_ascii_lowercase();
    let (host_text, bracketed, port_text) = split(&text)?;
    let port = match port_text {
        Some(text) => port(text)?,
        None => 80,
    };
    Some((host(host_text, bracketed)?, port))
}

/// An entry as the policy normalises it (stripped, down-cased), then parsed.
fn pattern(entry: &str) -> Option<(HostPattern, Option<u16>)> {
    let text = entry
        .trim_matches(['\0', '\t', '\n', '\x0b', '\x0c', '\r', ' '])
        .to_lowercase();
    let (host_text, bracketed, port_text) = split(&text)?;
    let port = match port_text? {
        "*" => None,
        text => Some(port(text)?),
    };
    if let Some((address, length)) = host_text.split_once('/') {
        // (Either family in brackets; an IPv6 one only in brackets.)
        let address: IpAddr = address.parse().ok()?;
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let digits = (1..=3).contains(&length.len()) && length.bytes().all(|b| b.is_ascii_digit());
        let length: u32 = length.parse().ok().filter(|&l| digits && l <= bits)?;
        return Some((HostPattern::Network(address, length), port));
    }
    if let Some(suffix) = host_text.strip_prefix("*.") {
        let valid = !bracketed && suffix.contains('.') && is_name(suffix);
        return valid.then(|| (HostPattern::Subdomains(suffix.to_owned()), port));
    }
    Some((HostPattern::Exact(host(host_text, bracketed)?), port))
}

/// The first `length` bits of `ip`, as a number of its family's width.
fn bits(ip: IpAddr, length: u32) -> u128 {
    let (value, width) = match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    };
    if length == 0 {
        0
    } else {
        value >> (width - length)
    }
}

fn matches((pattern, port): &(HostPattern, Option<u16>), (host, given): &(Host, u16)) -> bool {
    let port_ok = port.is_none_or(|p| p == *given);
    let host_ok = match (pattern, host) {
        (HostPattern::Exact(Host::Name(a)), Host::Name(b)) => a == b,
        (HostPattern::Exact(Host::Ip(a)), Host::Ip(b)) => a == b,
        (HostPattern::Subdomains(suffix), Host::Name(name)) => name
            .strip_suffix(suffix.as_str())
            .and_then(|front| front.strip_suffix('.'))
            .is_some_and(|front| !front.is_empty()),
        (HostPattern::Network(network, length), Host::Ip(ip)) => {
            let ip = match ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*ip, IpAddr::V4),
                v4 => *v4,
            };
            ip.is_ipv4() == network.is_ipv4() && bits(ip, *length) == bits(*network, *length)
        }
        _ => false,
    };
    port_ok && host_ok
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some((entry, named)) = text.split_once('\n') else {
        return;
    };
    let Ok(allowlist) = Allowlist::new(&[entry.to_owned()], true) else {
        return;
    };
    let Ok(destination) = Destination::parse(named, Some(80)) else {
        return;
    };
    let model = pattern(entry).zip(self::destination(named));
    let allowed = allowlist.allows(&destination);
    match model {
        Some((pattern, named)) => assert_eq!(
            allowed,
            matches(&pattern, &named),
            "{pattern:?} {named:?} (engine: {destination:?})"
        ),
        None => assert!(!allowed, "the model cannot read {entry:?} / {named:?}"),
    }
});
