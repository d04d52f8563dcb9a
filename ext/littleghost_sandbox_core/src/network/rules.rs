//! What an allowlist entry may say: a destination pattern (exact host,
//! `*.suffix` for any subdomain, an IP network `a.b.c.d/n`; a port or `*`),
//! and optionally HTTP rules (methods, path prefixes) and TLS inspection.
//!
//! A request's [`Destination`] is what the client named; a [`Pattern`] is
//! what the policy allows. Matching is purely textual on the name the
//! client gave (never on reverse DNS); a network pattern matches IP-literal
//! targets only, so a name is never allowed because of where it resolves
//! today (the gateway still vets every resolved address of a name).

use std::net::IpAddr;

use super::destination::{split_authority, Destination, Host, Malformed};

/// The host part of a pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Exactly this name or address.
    Exact(Host),
    /// `*.suffix`: any name with at least one more label in front of
    /// `suffix`, never `suffix` itself.
    Subdomains(String),
    /// `address/prefix`: any IP literal in the network (address masked).
    Network { address: IpAddr, prefix: u8 },
}

/// The port part of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortPattern {
    Exact(u16),
    /// `*`: any port.
    Any,
}

/// A destination pattern: `host:port`, `*.suffix:port`, `net/len:port`,
/// with `*` for any port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    pub host: HostPattern,
    pub port: PortPattern,
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HostPattern::Exact(host) => write!(f, "{host}")?,
            HostPattern::Subdomains(suffix) => write!(f, "*.{suffix}")?,
            HostPattern::Network { address, prefix } => match address {
                IpAddr::V6(v6) => write!(f, "[{v6}/{prefix}]")?,
                IpAddr::V4(v4) => write!(f, "{v4}/{prefix}")?,
            },
        }
        match self.port {
            PortPattern::Exact(port) => write!(f, ":{port}"),
            PortPattern::Any => f.write_str(":*"),
        }
    }
}

/// Why an allowlist entry's destination is no pattern; each reads as the end
/// of a sentence starting "network allowlist entry \"..\"".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadPattern {
    /// What a plain destination may not be either.
    #[error(transparent)]
    Destination(#[from] Malformed),
    #[error("has a wildcard over a single label (write \"*.example.com\", not \"*.com\")")]
    WildcardOverLabel,
    #[error("has a wildcard over an IP address (use \"net/len\")")]
    WildcardOverAddress,
    #[error("has a '*' that is not a leading \"*.\" label or the whole port")]
    Star,
    #[error("has an unterminated '[' (IPv6 networks are written \"[addr/len]:port\")")]
    UnterminatedBracket,
    #[error("is missing a port (expected \"[addr/len]:port\")")]
    BracketedNetworkPort,
    #[error("has an IPv6 network without brackets (write \"[addr/len]:port\")")]
    UnbracketedNetwork,
    #[error("is missing a port (expected \"net/len:port\")")]
    NetworkPort,
    #[error("has an invalid network {0:?}")]
    Network(String),
    #[error("has an invalid network address {0:?}")]
    NetworkAddress(String),
    #[error("has an invalid prefix length {length:?} (0..{bits})")]
    PrefixLength { length: String, bits: u8 },
    #[error("has an invalid port {0:?} (expected 1..65535 or *)")]
    Port(String),
}

impl Pattern {
    /// Parses an allowlist entry's destination (already stripped and
    /// down-cased): `host:port`, `[v6]:port`, `*.example.com:443`,
    /// `db.internal:*`, `10.1.0.0/16:5432`, `[fd00::/8]:443`. The error is
    /// the end of a sentence starting "network allowlist entry \"..\"".
    pub fn parse(text: &str) -> Result<Pattern, BadPattern> {
        if let Some((network, port)) = network_parts(text)? {
            let (address, prefix) = parse_network(network)?;
            return Ok(Pattern {
                host: HostPattern::Network { address, prefix },
                port: parse_port_pattern(port)?,
            });
        }
        let (host_text, port_text) = split_authority(text)?;
        let port = match port_text {
            Some(port) => parse_port_pattern(port)?,
            None => return Err(Malformed::MissingPort.into()),
        };
        let host = match host_text.strip_prefix("*.") {
            Some(suffix) => match Destination::parse(&format!("{suffix}:1"), None)?.host {
                Host::Name(name) if name.contains('.') => HostPattern::Subdomains(name),
                Host::Name(_) => return Err(BadPattern::WildcardOverLabel),
                Host::Ip(_) => return Err(BadPattern::WildcardOverAddress),
            },
            None if host_text.contains('*') => return Err(BadPattern::Star),
            None => {
                let named = format!("{}:1", bracket(host_text));
                HostPattern::Exact(Destination::parse(&named, None)?.host)
            }
        };
        Ok(Pattern { host, port })
    }

    /// Whether `destination` (as the client named it) is in the pattern.
    pub fn matches(&self, destination: &Destination) -> bool {
        let port = match self.port {
            PortPattern::Exact(port) => port == destination.port,
            PortPattern::Any => true,
        };
        port && self.host_matches(&destination.host)
    }

    fn host_matches(&self, given: &Host) -> bool {
        match (&self.host, given) {
            (HostPattern::Exact(host), given) => host == given,
            (HostPattern::Subdomains(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .and_then(|front| front.strip_suffix('.'))
                .is_some_and(|front| !front.is_empty()),
            (HostPattern::Network { address, prefix }, Host::Ip(ip)) => {
                in_network(*ip, *address, *prefix)
            }
            _ => false,
        }
    }

    /// Whether every destination `other` matches is matched by `self` (for
    /// narrowing: a scope's pattern must be covered by one of its parent's).
    pub fn covers(&self, other: &Pattern) -> bool {
        let port = match (self.port, other.port) {
            (PortPattern::Any, _) => true,
            (PortPattern::Exact(a), PortPattern::Exact(b)) => a == b,
            (PortPattern::Exact(_), PortPattern::Any) => false,
        };
        port && match (&self.host, &other.host) {
            (a, b) if a == b => true,
            (HostPattern::Subdomains(_), HostPattern::Exact(host)) => self.host_matches(host),
            (HostPattern::Subdomains(mine), HostPattern::Subdomains(theirs)) => theirs
                .strip_suffix(mine.as_str())
                .is_some_and(|front| front.is_empty() || front.ends_with('.')),
            (HostPattern::Network { address, prefix }, HostPattern::Exact(Host::Ip(ip))) => {
                in_network(*ip, *address, *prefix)
            }
            (
                HostPattern::Network { address, prefix },
                HostPattern::Network {
                    address: inner,
                    prefix: inner_prefix,
                },
            ) => inner_prefix >= prefix && in_network(*inner, *address, *prefix),
            _ => false,
        }
    }

    /// The pattern's exact destination, if it names exactly one.
    pub fn exact(&self) -> Option<Destination> {
        match (&self.host, self.port) {
            (HostPattern::Exact(host), PortPattern::Exact(port)) => Some(Destination {
                host: host.clone(),
                port,
            }),
            _ => None,
        }
    }
}

/// Re-brackets an IPv6 literal `split_authority` unwrapped.
fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// `(network, port)` when `text` is a network pattern (`a.b.c.d/n:port` or
/// `[v6/n]:port`), `None` when it is not one.
fn network_parts(text: &str) -> Result<Option<(&str, &str)>, BadPattern> {
    if !text.contains('/') || text.contains("://") {
        return Ok(None);
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or(BadPattern::UnterminatedBracket)?;
        let port = after
            .strip_prefix(':')
            .ok_or(BadPattern::BracketedNetworkPort)?;
        return Ok(Some((inside, port)));
    }
    match text.rsplit_once(':') {
        Some((network, port)) if !network.contains(':') => Ok(Some((network, port))),
        Some(_) => Err(BadPattern::UnbracketedNetwork),
        None => Err(BadPattern::NetworkPort),
    }
}

fn parse_network(text: &str) -> Result<(IpAddr, u8), BadPattern> {
    let (address, length) = text
        .split_once('/')
        .ok_or_else(|| BadPattern::Network(text.to_owned()))?;
    let address: IpAddr = address
        .parse()
        .map_err(|_| BadPattern::NetworkAddress(address.to_owned()))?;
    let bits = if address.is_ipv4() { 32 } else { 128 };
    let valid =
        !length.is_empty() && length.len() <= 3 && length.bytes().all(|b| b.is_ascii_digit());
    let prefix = match length.parse::<u8>() {
        Ok(prefix) if valid && prefix <= bits => prefix,
        _ => {
            let length = length.to_owned();
            return Err(BadPattern::PrefixLength { length, bits });
        }
    };
    Ok((mask(address, prefix), prefix))
}

fn parse_port_pattern(text: &str) -> Result<PortPattern, BadPattern> {
    if text == "*" {
        return Ok(PortPattern::Any);
    }
    let valid = !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u32>() {
        Ok(port @ 1..=65535) if valid => Ok(PortPattern::Exact(port as u16)),
        _ => Err(BadPattern::Port(text.to_owned())),
    }
}

fn mask(address: IpAddr, prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let mask = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - prefix)
            };
            IpAddr::V4((bits & mask).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let mask = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - prefix)
            };
            IpAddr::V6((bits & mask).into())
        }
    }
}

/// Whether `ip` is inside `network/prefix` (an IPv4-mapped IPv6 address is
/// compared as the IPv4 address it carries).
pub fn in_network(ip: IpAddr, network: IpAddr, prefix: u8) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    ip.is_ipv4() == network.is_ipv4() && mask(ip, prefix) == network
}

/// One allowlist entry: a destination pattern and what may pass to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    pub destination: Pattern,
    /// Terminate TLS (a CONNECT to this destination) with a certificate of
    /// the sandbox's own CA so HTTP rules and secrets apply inside it.
    pub inspect: bool,
    /// Upper-case methods allowed; empty means any.
    pub methods: Vec<String>,
    /// Path prefixes allowed (each starts with '/'); empty means any.
    pub paths: Vec<String>,
}

impl Rule {
    /// A plain `host:port` entry: any request, no inspection.
    pub fn destination(destination: Pattern) -> Rule {
        Rule {
            destination,
            inspect: false,
            methods: Vec::new(),
            paths: Vec::new(),
        }
    }

    /// Whether the rule limits requests (so the gateway must read them).
    pub fn restricts_requests(&self) -> bool {
        !self.methods.is_empty() || !self.paths.is_empty()
    }

    /// Whether a request `method path` passes the rule's HTTP rules. `path`
    /// is the request target in origin form; its path part must be clean
    /// ([`clean_path`]) before a prefix is compared.
    pub fn permits(&self, method: &str, path: &str) -> bool {
        let method_ok = self.methods.is_empty() || self.methods.iter().any(|m| m == method);
        let path_ok = self.paths.is_empty()
            || clean_path(path).is_some_and(|clean| {
                self.paths
                    .iter()
                    .any(|prefix| clean.starts_with(prefix.as_str()))
            });
        method_ok && path_ok
    }

    /// Whether this rule allows nothing `other` does not: same or narrower
    /// destination, methods and paths, and inspection kept where asked.
    pub fn covers(&self, other: &Rule) -> bool {
        let methods = self.methods.is_empty()
            || (!other.methods.is_empty()
                && other.methods.iter().all(|m| self.methods.contains(m)));
        let paths = self.paths.is_empty()
            || (!other.paths.is_empty()
                && other
                    .paths
                    .iter()
                    .all(|p| self.paths.iter().any(|mine| p.starts_with(mine.as_str()))));
        self.destination.covers(&other.destination)
            && methods
            && paths
            && (!self.inspect || other.inspect)
    }
}

/// A `token` character of RFC 9110 (methods and header names).
pub fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// The path part of an origin-form target when it has no dot segment (nor
/// one with `;` parameters, `..;x` or `..%3bx`), no encoded `/`, `\`, `.`
/// or NUL, however many times encoded (`%252e` is `%2e` to a server that
/// decodes twice), and no backslash: the form where a prefix compare means
/// what it says (a server would not resolve `/a/../b`, `/a/..;/b` or
/// `/a%2f..%2fb` past the prefix). `None` refuses the request.
pub fn clean_path(target: &str) -> Option<&str> {
    let path = target.split(['?', '#']).next().unwrap_or_default();
    if !path.starts_with('/') {
        return None;
    }
    // Every reading a server could make is checked: the path as sent, then
    // decoded once, twice... up to a fixed point (each round that changes
    // the text shortens it; a text still changing after the bound is
    // refused), so `%25%32%65` (`%2e` after one decoding, `.` after two)
    // is caught like `%252e`.
    let mut reading = path.as_bytes().to_vec();
    for _ in 0..MAX_DECODINGS {
        if !clean_reading(&reading) {
            return None;
        }
        let decoded = percent_decode(&reading);
        if decoded == reading {
            return Some(path);
        }
        reading = decoded;
    }
    None
}

/// How many decodings of a path [`clean_path`] follows before refusing it.
const MAX_DECODINGS: usize = 8;

/// One reading of a path: no backslash, no encoded `/ \ .` or NUL, and no
/// dot segment, a segment compared without its `;` parameters or anything
/// from a `?` or `#` on (servers that strip parameters, Tomcat, Jetty,
/// Spring, resolve `/a/..;/b` to `/b`; one that decodes the whole target
/// before splitting off the query reads `..%3f` as `..`).
fn clean_reading(reading: &[u8]) -> bool {
    let lower = String::from_utf8_lossy(reading).to_ascii_lowercase();
    if lower.contains('\\') || lower.contains('\0') {
        return false;
    }
    if ["%2f", "%5c", "%2e", "%00"]
        .iter()
        .any(|bad| lower.contains(bad))
    {
        return false;
    }
    !lower.split('/').any(|segment| {
        let mut name = segment;
        for cut in [";", "?", "#", "%3b", "%3f", "%23"] {
            name = name.split(cut).next().unwrap_or_default();
        }
        name == "." || name == ".."
    })
}

/// `text` with every `%XX` (two hex digits) decoded once.
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if text[at] == b'%' && at + 2 < text.len() {
            if let (Some(high), Some(low)) = (hex(text[at + 1]), hex(text[at + 2])) {
                out.push((high * 16 + low) as u8);
                at += 3;
                continue;
            }
        }
        out.push(text[at]);
        at += 1;
    }
    out
}

/// What the allowlist says about one destination: the rules that match it.
#[derive(Debug, Clone)]
pub struct Access<'a> {
    rules: Vec<&'a Rule>,
}

impl<'a> Access<'a> {
    pub(super) fn new(rules: Vec<&'a Rule>) -> Option<Access<'a>> {
        (!rules.is_empty()).then_some(Access { rules })
    }

    /// Whether a CONNECT to it is terminated and read (any matching rule asks).
    pub fn inspect(&self) -> bool {
        self.rules.iter().any(|rule| rule.inspect)
    }

    /// Whether its requests must be read to be allowed (no matching rule
    /// allows every request).
    pub fn restricts_requests(&self) -> bool {
        self.rules.iter().all(|rule| rule.restricts_requests())
    }

    /// Whether the request passes some matching rule.
    pub fn permits(&self, method: &str, path: &str) -> bool {
        self.rules.iter().any(|rule| rule.permits(method, path))
    }

    /// The matching rules.
    pub fn rules(&self) -> &[&'a Rule] {
        &self.rules
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Pattern {
        Pattern::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn dest(text: &str) -> Destination {
        Destination::parse(text, None).unwrap()
    }

    #[test]
    fn exact_patterns_match_as_before() {
        let p = pattern("api.example.com:443");
        assert!(p.matches(&dest("api.example.com:443")));
        assert!(!p.matches(&dest("api.example.com:80")));
        assert!(!p.matches(&dest("x.api.example.com:443")));
        assert_eq!(p.to_string(), "api.example.com:443");
        assert_eq!(p.exact(), Some(dest("api.example.com:443")));
        assert!(pattern("[::1]:8080").matches(&dest("[0::1]:8080")));
    }

    #[test]
    fn a_wildcard_matches_subdomains_never_the_apex() {
        let p = pattern("*.githubusercontent.com:443");
        assert!(p.matches(&dest("raw.githubusercontent.com:443")));
        assert!(p.matches(&dest("a.b.githubusercontent.com:443")));
        assert!(!p.matches(&dest("githubusercontent.com:443")));
        assert!(!p.matches(&dest("evilgithubusercontent.com:443")));
        assert!(!p.matches(&dest("raw.githubusercontent.com:80")));
        assert!(!p.matches(&dest("githubusercontent.com.evil.test:443")));
        assert_eq!(p.to_string(), "*.githubusercontent.com:443");
        assert_eq!(p.exact(), None);
    }

    #[test]
    fn any_port_and_networks() {
        let p = pattern("db.internal:*");
        assert!(p.matches(&dest("db.internal:5432")) && p.matches(&dest("db.internal:1")));
        assert_eq!(p.to_string(), "db.internal:*");
        let net = pattern("10.1.0.0/16:5432");
        assert!(net.matches(&dest("10.1.200.3:5432")));
        assert!(!net.matches(&dest("10.2.0.1:5432")));
        assert!(!net.matches(&dest("10.1.0.1:5433")));
        assert!(
            !net.matches(&dest("db.internal:5432")),
            "names never match networks"
        );
        assert_eq!(pattern("10.1.2.3/16:1").to_string(), "10.1.0.0/16:1");
        let v6 = pattern("[fd00::/8]:*");
        assert!(v6.matches(&dest("[fd12::1]:443")));
        assert!(!v6.matches(&dest("[fe80::1]:443")));
    }

    #[test]
    fn malformed_patterns_say_why() {
        for (text, why) in [
            ("*.com:443", "single label"),
            ("a.*.com:443", "leading"),
            ("*:443", "leading"),
            ("*.1.2.3.4:443", "IP address"),
            ("a.com:**", "invalid port"),
            ("a.com", "missing a port"),
            ("10.0.0.0/33:1", "prefix length"),
            ("10.0.0.0/:1", "prefix length"),
            ("10.0.0/8:1", "network address"),
            ("fd00::/8:1", "without brackets"),
            ("10.0.0.0/8", "missing a port"),
            ("http://a.com:1", "URL"),
        ] {
            let error = Pattern::parse(text).unwrap_err();
            assert!(error.to_string().contains(why), "{text}: {error}");
        }
    }

    #[test]
    fn covering_is_narrowing() {
        assert!(pattern("*.example.com:443").covers(&pattern("api.example.com:443")));
        assert!(pattern("*.example.com:443").covers(&pattern("*.api.example.com:443")));
        assert!(!pattern("*.example.com:443").covers(&pattern("example.com:443")));
        assert!(!pattern("*.example.com:443").covers(&pattern("api.example.com:*")));
        assert!(pattern("a.test:*").covers(&pattern("a.test:80")));
        assert!(pattern("10.0.0.0/8:1").covers(&pattern("10.1.0.0/16:1")));
        assert!(!pattern("10.1.0.0/16:1").covers(&pattern("10.0.0.0/8:1")));
        assert!(pattern("10.0.0.0/8:1").covers(&pattern("10.9.9.9:1")));
    }

    #[test]
    fn http_rules_check_method_and_a_clean_path_prefix() {
        let rule = Rule {
            methods: vec!["GET".into(), "HEAD".into()],
            paths: vec!["/repos/org/".into()],
            ..Rule::destination(pattern("api.github.com:443"))
        };
        assert!(rule.permits("GET", "/repos/org/x?y=1"));
        assert!(!rule.permits("POST", "/repos/org/x"));
        assert!(!rule.permits("GET", "/repos/other/x"));
        assert!(!rule.permits("GET", "/repos/org"));
        assert!(rule.permits("GET", "/repos/org/x;v=1/y..;"));
        // An encoded `%` before harmless text is only text.
        assert!(rule.permits("GET", "/repos/org/100%25/x%2541"));
        for sneaky in [
            "/repos/org/../other/x",
            "/repos/org/%2e%2e/other",
            "/repos/org/..%2fother",
            "/repos/org/x%2F..",
            "/repos/org\\..\\x",
            "/repos/org/./x",
            "/repos/org/..;/other/x",
            "/repos/org/..;jsessionid=1/other",
            "/repos/org/.;x/..;y/..;z/other",
            "/repos/org/%252e%252e/other",
            "/repos/org/%25252E%25252E/other",
            "/repos/org/..%252fother",
            "/repos/org/..%3b/other",
            "/repos/org/..%3Bx/other",
            "/repos/org/..%253b/other",
            "http://api.github.com/repos/org/x",
        ] {
            assert!(!rule.permits("GET", sneaky), "{sneaky}");
        }
    }

    /// Fuzz findings F1 and F2: a path a server decoding twice (or
    /// decoding before it splits off `?`/`#`) reads outside the prefix.
    #[test]
    fn a_path_is_refused_when_any_decoding_of_it_leaves_the_prefix() {
        let rule = Rule {
            methods: vec!["GET".into()],
            paths: vec!["/repos/org/".into()],
            ..Rule::destination(pattern("localhost:8080"))
        };
        for sneaky in [
            "/repos/org/%25%32%65%25%32%65/admin",
            "/repos/org/%25%32e%25%32e/admin",
            "/repos/org/%2525%32%65%2525%32%65/admin",
            "/repos/org/..%25%32%66admin",
            "/repos/org/x%25%35%63..%25%35%63admin",
            "/repos/org/x%25%30%30",
            "/repos/org/..%3f/admin",
            "/repos/org/..%3F/admin",
            "/repos/org/..%23/admin",
            "/repos/org/..%253f/admin",
        ] {
            assert!(!rule.permits("GET", sneaky), "{sneaky}");
        }
        // Decoding ends: harmless encodings still pass.
        assert!(rule.permits("GET", "/repos/org/100%25/x%2541%"));
        assert!(rule.permits("GET", "/repos/org/a%20b?q=..%3f"));
        assert_eq!(clean_path("/x/%25%32%65%25%32%65/"), None);
        assert_eq!(clean_path("/x/%252e%252e/"), None);
        let open = Rule::destination(pattern("a.test:80"));
        assert!(open.permits("DELETE", "/anything/../x"));
    }

    #[test]
    fn a_rule_covers_only_narrower_rules() {
        let parent = Rule {
            methods: vec!["GET".into(), "HEAD".into()],
            paths: vec!["/repos/".into()],
            inspect: true,
            ..Rule::destination(pattern("*.github.com:443"))
        };
        let narrower = Rule {
            methods: vec!["GET".into()],
            paths: vec!["/repos/org/".into()],
            inspect: true,
            ..Rule::destination(pattern("api.github.com:443"))
        };
        assert!(parent.covers(&narrower));
        assert!(!narrower.covers(&parent));
        let wider_method = Rule {
            methods: vec!["POST".into()],
            ..narrower.clone()
        };
        assert!(!parent.covers(&wider_method));
        let any_method = Rule {
            methods: vec![],
            ..narrower.clone()
        };
        assert!(!parent.covers(&any_method));
        let uninspected = Rule {
            inspect: false,
            ..narrower.clone()
        };
        assert!(!parent.covers(&uninspected));
    }
}
