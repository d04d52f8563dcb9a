//! Allowlist of the built-in gateway (SPEC G.7): its [`Rule`]s (destination
//! patterns with optional HTTP rules, see [`super::rules`]), and the address
//! ranges a destination may not resolve into.
//!
//! String entries first go through the NetworkPolicy normalisation of 7.3
//! (strip, down-case, de-duplicate, no whitespace); this module adds the
//! pattern syntax check that 7.3 leaves to the gateway.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::rules::{in_network, Access, HostPattern, Pattern, Rule};
use crate::error::{policy, Result};

pub use super::destination::{Destination, Host};

/// The gateway's allowlist: its rules, plus whether private destinations
/// may be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist {
    rules: Vec<Rule>,
    allow_private_destinations: bool,
}

impl Allowlist {
    /// Normalises `entries` as NetworkPolicy does (7.3), then parses each as
    /// a destination pattern (`host:port`, `*.suffix:port`, `host:*`,
    /// `net/len:port`) allowing every request. An entry naming private or
    /// reserved addresses is a PolicyError unless `allow_private_destinations`.
    pub fn new(entries: &[String], allow_private_destinations: bool) -> Result<Allowlist> {
        let normalized = crate::policy::allow_entries(entries)?;
        let rules = normalized
            .iter()
            .map(|entry| parse_pattern(entry).map(Rule::destination))
            .collect::<Result<Vec<Rule>>>()?;
        Allowlist::with_rules(rules, allow_private_destinations)
    }

    /// An allowlist of `rules` (in order; duplicates dropped). Needs one at
    /// least; a rule naming private or reserved addresses is a PolicyError
    /// unless `allow_private_destinations`.
    pub fn with_rules(rules: Vec<Rule>, allow_private_destinations: bool) -> Result<Allowlist> {
        if rules.is_empty() {
            return Err(crate::policy::Error::EmptyAllowlist.into());
        }
        let mut kept: Vec<Rule> = Vec::with_capacity(rules.len());
        for rule in rules {
            if !allow_private_destinations && names_refused_addresses(&rule.destination) {
                return Err(policy(format!(
                    "network allowlist entry \"{}\" is a private or reserved address; set allow_private_destinations: true to allow it",
                    rule.destination
                )));
            }
            if !kept.contains(&rule) {
                kept.push(rule);
            }
        }
        Ok(Allowlist {
            rules: kept,
            allow_private_destinations,
        })
    }

    /// What the rules say about `destination`; `None` when none matches.
    pub fn access(&self, destination: &Destination) -> Option<Access<'_>> {
        Access::new(
            self.rules
                .iter()
                .filter(|rule| rule.destination.matches(destination))
                .collect(),
        )
    }

    /// Whether some rule matches `destination` (whatever its HTTP rules).
    pub fn allows(&self, destination: &Destination) -> bool {
        self.access(destination).is_some()
    }

    /// Whether resolved addresses in refused ranges may be connected to.
    pub fn allow_private_destinations(&self) -> bool {
        self.allow_private_destinations
    }

    /// The rules, in the order given.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Every rule's destination pattern as text, in order.
    pub fn entries(&self) -> Vec<String> {
        let patterns = self.rules.iter().map(|rule| rule.destination.to_string());
        let mut seen = std::collections::HashSet::new();
        patterns.filter(|text| seen.insert(text.clone())).collect()
    }
}

/// Parses one normalised entry as a pattern, with the entry in the message.
pub fn parse_pattern(entry: &str) -> Result<Pattern> {
    Pattern::parse(entry).map_err(|why| policy(format!("network allowlist entry {entry:?} {why}")))
}

/// Whether a pattern names an address in a refused range: an IP literal in
/// one, or a network overlapping one. Names are vetted when resolved.
fn names_refused_addresses(pattern: &Pattern) -> bool {
    match &pattern.host {
        HostPattern::Exact(Host::Ip(ip)) => refused_address(*ip),
        HostPattern::Network { address, prefix } => {
            refused_address(*address)
                || REFUSED_NETWORKS.iter().any(|(text, length)| {
                    let refused: IpAddr = text.parse().expect("a valid network");
                    let shorter = (*length).min(*prefix);
                    in_network(refused, *address, shorter) || in_network(*address, refused, shorter)
                })
        }
        _ => false,
    }
}

/// The ranges [`refused_address`] refuses, as networks (for the overlap of
/// a network entry; single addresses go through `refused_address`).
const REFUSED_NETWORKS: [(&str, u8); 26] = [
    ("0.0.0.0", 8),
    ("10.0.0.0", 8),
    ("100.64.0.0", 10),
    ("127.0.0.0", 8),
    ("169.254.0.0", 16),
    ("172.16.0.0", 12),
    ("192.0.0.0", 24),
    ("192.0.2.0", 24),
    ("192.168.0.0", 16),
    ("198.18.0.0", 15),
    ("198.51.100.0", 24),
    ("203.0.113.0", 24),
    ("224.0.0.0", 4),
    ("240.0.0.0", 4),
    ("::", 96),
    ("::ffff:0:0", 96),
    ("64:ff9b::", 32),
    ("100::", 64),
    ("2001::", 23),
    ("2001:db8::", 32),
    ("2002::", 16),
    ("fc00::", 7),
    ("fe80::", 10),
    ("fec0::", 10),
    ("ff00::", 8),
    ("::1", 128),
];

/// Whether `ip` is in a range the gateway refuses without
/// `allow_private_destinations`: loopback, private, link-local, CGNAT,
/// multicast, unspecified, broadcast, reserved, documentation, benchmarking,
/// NAT64, ULA, site-local, and IPv6 forms that embed such an IPv4 address.
pub fn refused_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18/15
        || a >= 240 // reserved 240/4
}

fn refused_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || segments[0] & 0xfe00 == 0xfc00 // unique local fc00::/7
        || segments[0] & 0xffc0 == 0xfe80 // link-local fe80::/10
        || segments[0] & 0xffc0 == 0xfec0 // site-local fec0::/10
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || (segments[0] == 0x2001 && segments[1] < 0x0200) // Teredo, benchmarking, ORCHID...
        || (segments[0] == 0x0064 && segments[1] == 0xff9b) // NAT64 64:ff9b::/96 and 64:ff9b:1::/48
        || segments[0] == 0x2002 // 6to4 embeds an IPv4 address
        || segments[0] == 0x0100 && segments[1..4] == [0, 0, 0] // discard-only 100::/64
        || segments[..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible ::a.b.c.d (deprecated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str], private: bool) -> Result<Allowlist> {
        let owned: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
        Allowlist::new(&owned, private)
    }

    fn error(entry: &str) -> String {
        list(&[entry], true).unwrap_err().message().to_owned()
    }

    #[test]
    fn entries_match_exactly_and_case_insensitively() {
        let allow = list(&[" API.Example.com:443", "[::1]:8080", "10.0.0.1:80"], true).unwrap();
        let parse = |text: &str| Destination::parse(text, Some(80)).unwrap();
        assert!(allow.allows(&parse("api.example.com:443")));
        assert!(allow.allows(&parse("API.EXAMPLE.COM:443")));
        assert!(!allow.allows(&parse("api.example.com:80")));
        assert!(!allow.allows(&parse("api.example.com")));
        assert!(!allow.allows(&parse("example.com:443")));
        assert!(!allow.allows(&parse("x.api.example.com:443")));
        assert!(allow.allows(&parse("[0:0::1]:8080")));
        assert!(allow.allows(&parse("10.0.0.1")));
        assert_eq!(allow.entries()[1], "[::1]:8080");
    }

    #[test]
    fn malformed_entries_raise_policy_errors() {
        assert_eq!(
            error("example.com"),
            "network allowlist entry \"example.com\" is missing a port (expected \"host:port\")"
        );
        assert!(error("example.com:0").contains("invalid port \"0\""));
        assert!(error("example.com:65536").contains("invalid port"));
        assert!(error("example.com:+80").contains("invalid port"));
        assert!(error("example.com:").contains("invalid port \"\""));
        assert!(error(":443").contains("empty host"));
        assert!(error("-bad.com:443").contains("invalid host name label \"-bad\""));
        assert!(error("a..b:443").contains("invalid host name label \"\""));
        assert!(error("a_b.com:443").contains("invalid host name label"));
        assert_eq!(
            error("https://a.com:443"),
            "network allowlist entry \"https://a.com:443\" is a URL or path, not \"host:port\""
        );
        assert!(error("::1:443").contains("without brackets"));
        assert!(error("[::1:443").contains("unterminated"));
        assert!(error("[zz]:443").contains("invalid IPv6 literal"));
        assert!(error("1.2.3.999:80").contains("invalid IPv4 address"));
        assert!(error(&format!("{}.com:1", "a".repeat(64))).contains("invalid host name label"));
        // 7.3 messages still come from NetworkPolicy's normalisation.
        assert_eq!(error(" "), "network allowlist entries cannot be empty");
        assert_eq!(
            error("a b:1"),
            "network allowlist entry \"a b:1\" cannot contain whitespace"
        );
        assert!(list(&[], false)
            .unwrap_err()
            .message()
            .contains("non-empty allow list"));
    }

    #[test]
    fn private_literal_entries_need_the_option() {
        for entry in [
            "127.0.0.1:80",
            "10.1.2.3:443",
            "[::1]:80",
            "[fd00::1]:80",
            "169.254.169.254:80",
        ] {
            let text = list(&[entry], false).unwrap_err().message().to_owned();
            assert!(text.contains("allow_private_destinations"), "{text}");
            assert!(list(&[entry], true).is_ok());
        }
        assert!(list(&["93.184.216.34:443", "localhost:80"], false).is_ok());
        for network in [
            "10.1.0.0/16:5432",
            "0.0.0.0/0:443",
            "8.0.0.0/5:1",
            "[fd00::/8]:1",
            "[::/0]:1",
        ] {
            let text = list(&[network], false).unwrap_err().message().to_owned();
            assert!(
                text.contains("allow_private_destinations"),
                "{network}: {text}"
            );
            assert!(list(&[network], true).is_ok());
        }
        assert!(list(&["8.8.0.0/16:53", "[2606:4700::/32]:443"], false).is_ok());
    }

    #[test]
    fn patterns_are_entries_too() {
        let allow = list(
            &["*.example.com:443", "db.test:*", "10.1.0.0/16:5432"],
            true,
        )
        .unwrap();
        let parse = |text: &str| Destination::parse(text, None).unwrap();
        assert!(allow.allows(&parse("a.example.com:443")));
        assert!(!allow.allows(&parse("example.com:443")));
        assert!(allow.allows(&parse("db.test:5432")));
        assert!(allow.allows(&parse("10.1.9.9:5432")));
        assert!(!allow.allows(&parse("10.2.9.9:5432")));
        assert_eq!(
            allow.entries(),
            ["*.example.com:443", "db.test:*", "10.1.0.0/16:5432"]
        );
    }

    #[test]
    fn refused_ranges() {
        let refused = [
            "0.0.0.0",
            "127.0.0.1",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "198.51.100.1",
            "203.0.113.1",
            "198.18.0.1",
            "192.0.0.8",
            "::",
            "::1",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "::127.0.0.1",
        ];
        for text in refused {
            assert!(
                refused_address(text.parse().unwrap()),
                "{text} should be refused"
            );
        }
        for text in [
            "93.184.216.34",
            "1.1.1.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(
                !refused_address(text.parse().unwrap()),
                "{text} should be public"
            );
        }
    }
}
