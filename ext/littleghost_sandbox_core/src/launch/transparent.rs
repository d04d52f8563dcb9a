//! Allowlisted destinations reachable by clients that ignore the
//! proxy variables (Node.js before 22.21, a static binary, a raw socket).
//!
//! Under `:allowlist` the child lives in a network namespace with only
//! loopback. For each exact `host:port` the allowlist names, the relay also
//! listens on a loopback address of the sandbox's own (`127.80.0.N` for a
//! host name, the address itself for `localhost` or a `127.x.y.z` literal)
//! at that port, and the sandbox's `/etc/hosts` maps the name to that
//! address. A client that connects "directly" reaches the relay, which asks
//! the gateway for `CONNECT host:port` and then joins the two: the gateway
//! still decides (allowlist, private addresses, its budget) and records its
//! denials. The relay only ever asks for the exact pair the listener was
//! made for, so nothing new is reachable.
//!
//! The input is a plain list of (host, port) pairs, the exact entries of
//! the allowlist (see [`exact_destinations`]); how entries are written is
//! the allowlist's business.

use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};

use crate::network::{Host, Pattern};
use crate::policy::NetworkRules;

pub use littleghost_sandbox_restrict::relay::Forward;

/// Where the relay's proxy listens ([`super::RELAY_PROXY_URL`]).
const PROXY_LISTEN: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 3128);

/// `net.ipv4.ip_unprivileged_port_start` of a new network namespace.
pub const DEFAULT_UNPRIVILEGED_PORT_START: u16 = 1024;

/// What the sandbox gets for its allowlist: the relay's extra listeners and
/// the `/etc/hosts` lines that point names at them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transparent {
    pub forwards: Vec<Forward>,
    /// (address, name) lines the sandbox's `/etc/hosts` starts with.
    pub hosts: Vec<(Ipv4Addr, String)>,
}

impl Transparent {
    /// The listeners for `destinations` (exact pairs): one loopback address
    /// per name, listening on each of its allowlisted ports. A port below
    /// 1024 is served too: the launch then lowers the sandbox's own
    /// `net.ipv4.ip_unprivileged_port_start` first
    /// ([`unprivileged_port_start`](Self::unprivileged_port_start)), because
    /// the relay runs in the user namespace bwrap's `--disable-userns` nests
    /// inside the one owning the network namespace, where no capability of
    /// its own reaches those ports.
    pub fn plan(destinations: &[(String, u16)]) -> Transparent {
        Transparent::plan_serving(destinations, true)
    }

    /// [`plan`](Self::plan), where `low_ports` says whether the launch can
    /// lower the sandbox's port start. Without it a port below 1024 is not
    /// served, and a name with such a port gets no `/etc/hosts` line at all,
    /// so it never resolves to a loopback address nobody listens on (Ruby's
    /// `Net::HTTP` skips the proxy for a name that resolves to loopback);
    /// clients that honour the proxy variables reach it as before.
    pub fn plan_serving(destinations: &[(String, u16)], low_ports: bool) -> Transparent {
        let servable = |port: u16| low_ports || port >= DEFAULT_UNPRIVILEGED_PORT_START;
        let mut plan = Transparent::default();
        let mut names: Vec<String> = Vec::new();
        for (host, _) in destinations {
            let host = host.to_ascii_lowercase();
            if needs_name(&host) && !names.contains(&host) {
                names.push(host);
            }
        }
        let mut next = 0u32;
        for name in names {
            let ports: Vec<u16> = destinations
                .iter()
                .filter(|(host, _)| host.eq_ignore_ascii_case(&name))
                .map(|(_, port)| *port)
                .collect();
            if !ports.iter().all(|port| servable(*port)) {
                continue;
            }
            next += 1;
            // 127.80.0.1 ... 127.80.255.254: one address per name.
            if next > 0xfffe {
                break;
            }
            let address = Ipv4Addr::new(127, 80, (next >> 8) as u8, next as u8);
            plan.hosts.push((address, name.clone()));
            for port in ports {
                plan.push(SocketAddrV4::new(address, port), &name, port);
            }
        }
        for (host, port) in destinations {
            match loopback(host) {
                Some(address) if servable(*port) => {
                    plan.push(SocketAddrV4::new(address, *port), host, *port)
                }
                _ => {}
            }
        }
        plan
    }

    /// The value the sandbox's own `net.ipv4.ip_unprivileged_port_start`
    /// must have for the relay to bind every listener: the lowest listening
    /// port, when it is below the kernel's default of 1024 (a new network
    /// namespace starts at 1024); None when no listener needs it, so such a
    /// launch pays nothing. The sysctl is per network namespace: lowering it
    /// lets processes of that namespace (the relay and the program) bind
    /// those ports of the sandbox's own loopback and nothing else.
    pub fn unprivileged_port_start(&self) -> Option<u16> {
        self.forwards
            .iter()
            .map(|forward| forward.listen.port())
            .min()
            .filter(|port| *port < DEFAULT_UNPRIVILEGED_PORT_START)
    }

    /// Adds a listener unless its address is taken (the proxy's, or an
    /// earlier entry's).
    fn push(&mut self, listen: SocketAddrV4, host: &str, port: u16) {
        if listen == PROXY_LISTEN || self.forwards.iter().any(|f| f.listen == listen) {
            return;
        }
        self.forwards.push(Forward {
            listen,
            host: host.to_owned(),
            port,
        });
    }

    /// The sandbox's `/etc/hosts`: these names first, then the host's own
    /// file (its localhost lines and the rest) without the served names, so
    /// a served name has exactly one address (glibc returns every line that
    /// names a host).
    pub fn hosts_file(&self, host_file: &str) -> String {
        let mut text =
            String::from("# littleghost-sandbox: allowlisted names served by the relay\n");
        for (address, name) in &self.hosts {
            text.push_str(&format!("{address}\t{name}\n"));
        }
        let served = |name: &str| self.hosts.iter().any(|(_, n)| n.eq_ignore_ascii_case(name));
        let mut localhost = false;
        for line in host_file.lines() {
            let entry = line.split('#').next().unwrap_or_default();
            let mut words = entry.split_whitespace();
            let Some(address) = words.next() else {
                text.push_str(line);
                text.push('\n');
                continue;
            };
            let names: Vec<&str> = words.collect();
            localhost |= names.iter().any(|n| n.eq_ignore_ascii_case("localhost"));
            let kept: Vec<&str> = names.iter().copied().filter(|n| !served(n)).collect();
            if kept.len() == names.len() {
                text.push_str(line);
                text.push('\n');
            } else if !kept.is_empty() {
                text.push_str(&format!("{address}\t{}\n", kept.join(" ")));
            }
        }
        if !localhost {
            text.push_str("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
        }
        text
    }
}

/// The exact `host:port` entries of an allowlist (what the gateway's own
/// [`Pattern::exact`] says names one destination), as pairs whose host is a
/// DNS name or an IPv4 address. Anything else is left to the proxy path.
pub fn exact_destinations(allow: &[String]) -> Vec<(String, u16)> {
    allow
        .iter()
        .filter_map(|entry| {
            let exact = Pattern::parse(entry.trim()).ok()?.exact()?;
            match exact.host {
                Host::Name(_) | Host::Ip(IpAddr::V4(_)) => {
                    Some((exact.host.to_string(), exact.port))
                }
                Host::Ip(IpAddr::V6(_)) => None,
            }
        })
        .collect()
}

/// The exact destinations of `rules` a tunnel can serve: those the
/// gateway would tunnel a `CONNECT` to (or inspect it). A destination whose
/// HTTP rules (methods, paths) need the requests read and that is not
/// inspected gets no listener: the gateway refuses such a tunnel, while a
/// client that resolves the name to the listener's loopback address goes
/// there instead of the proxy (Ruby's `Net::HTTP` does), which would lose
/// the plain-HTTP requests the proxy path allows.
pub fn tunnelled_destinations(rules: &NetworkRules) -> Vec<(String, u16)> {
    let exact = exact_destinations(&rules.destinations());
    let Ok(allowlist) = rules
        .rules()
        .and_then(|rules| crate::network::Allowlist::with_rules(rules, true))
    else {
        return exact;
    };
    exact
        .into_iter()
        .filter(|(host, port)| {
            crate::network::Destination::parse(&format!("{host}:{port}"), None)
                .ok()
                .and_then(|destination| {
                    let access = allowlist.access(&destination)?;
                    Some(access.inspect() || !access.restricts_requests())
                })
                .unwrap_or(false)
        })
        .collect()
}

/// A host name needing its own address: not an IP literal, not `localhost`.
fn needs_name(host: &str) -> bool {
    host.parse::<Ipv4Addr>().is_err() && !host.eq_ignore_ascii_case("localhost")
}

/// The sandbox's own loopback address standing for `host`: `localhost` and
/// `127.x.y.z` are themselves; any other address cannot be made local.
fn loopback(host: &str) -> Option<Ipv4Addr> {
    if host.eq_ignore_ascii_case("localhost") {
        return Some(Ipv4Addr::LOCALHOST);
    }
    host.parse::<Ipv4Addr>().ok().filter(Ipv4Addr::is_loopback)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, u16)]) -> Vec<(String, u16)> {
        items.iter().map(|(h, p)| (h.to_string(), *p)).collect()
    }

    #[test]
    fn only_exact_entries_become_pairs() {
        let allow: Vec<String> = [
            "example.com:443",
            "*.example.com:443",
            "localhost:8080",
            "[::1]:80",
            "bad host:80",
            "127.0.0.1:9",
            "x.test:0",
            "x.test:http",
            "evil.test\n1.2.3.4 bank.test:80",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            exact_destinations(&allow),
            pairs(&[("example.com", 443), ("localhost", 8080), ("127.0.0.1", 9)])
        );
    }

    #[test]
    fn a_destination_whose_requests_must_be_read_gets_a_listener_only_when_inspected() {
        use crate::policy::{AllowEntry, NetworkRules};
        let entry = |destination: &str, inspect: bool, methods: &[&str]| AllowEntry {
            destination: destination.into(),
            inspect,
            methods: methods.iter().map(|m| m.to_string()).collect(),
            paths: Vec::new(),
        };
        let rules = NetworkRules {
            allow: vec![
                entry("plain.test:80", false, &[]),
                entry("ruled.test:80", false, &["GET"]),
                entry("inspected.test:443", true, &["GET"]),
                // Another entry allowing every request opens the tunnel again.
                entry("both.test:80", false, &["GET"]),
                entry("both.test:80", false, &[]),
                entry("*.wild.test:443", false, &[]),
            ],
            ..NetworkRules::default()
        };
        assert_eq!(
            tunnelled_destinations(&rules),
            pairs(&[
                ("plain.test", 80),
                ("inspected.test", 443),
                ("both.test", 80)
            ])
        );
    }

    #[test]
    fn each_name_gets_its_own_address_and_loopback_entries_listen_as_themselves() {
        let plan = Transparent::plan(&pairs(&[
            ("registry.test", 9443),
            ("registry.test", 8443),
            ("other.test", 8080),
            ("localhost", 8080),
            ("127.0.0.1", 3128),
            ("10.0.0.1", 8080),
            ("127.0.0.2", 80),
        ]));
        let r = Ipv4Addr::new(127, 80, 0, 1);
        let o = Ipv4Addr::new(127, 80, 0, 2);
        assert_eq!(
            plan.hosts,
            vec![(r, "registry.test".into()), (o, "other.test".into())]
        );
        let shown: Vec<String> = plan.forwards.iter().map(Forward::argument).collect();
        assert_eq!(
            shown,
            [
                "127.80.0.1:9443=registry.test:9443",
                "127.80.0.1:8443=registry.test:8443",
                "127.80.0.2:8080=other.test:8080",
                "127.0.0.1:8080=localhost:8080",
                "127.0.0.2:80=127.0.0.2:80",
            ]
        );
        for forward in &plan.forwards {
            assert_eq!(Forward::parse(&forward.argument()).as_ref(), Some(forward));
        }
    }

    #[test]
    fn a_port_below_1024_is_served_and_asks_for_the_lowest_port_start() {
        let plan = Transparent::plan(&pairs(&[
            ("low.test", 443),
            ("low.test", 8443),
            ("high.test", 8080),
            ("localhost", 80),
        ]));
        assert_eq!(
            plan.hosts,
            vec![
                (Ipv4Addr::new(127, 80, 0, 1), "low.test".into()),
                (Ipv4Addr::new(127, 80, 0, 2), "high.test".into())
            ]
        );
        let shown: Vec<String> = plan.forwards.iter().map(Forward::argument).collect();
        assert_eq!(
            shown,
            [
                "127.80.0.1:443=low.test:443",
                "127.80.0.1:8443=low.test:8443",
                "127.80.0.2:8080=high.test:8080",
                "127.0.0.1:80=localhost:80",
            ]
        );
        // The lowest listening port, so 80 ..= 1023 become bindable, no lower.
        assert_eq!(plan.unprivileged_port_start(), Some(80));
    }

    #[test]
    fn where_the_port_start_cannot_be_lowered_a_name_with_a_low_port_is_left_to_the_proxy() {
        let plan = Transparent::plan_serving(
            &pairs(&[
                ("low.test", 443),
                ("low.test", 8443),
                ("high.test", 8080),
                ("localhost", 80),
            ]),
            false,
        );
        assert_eq!(
            plan.hosts,
            vec![(Ipv4Addr::new(127, 80, 0, 1), "high.test".into())]
        );
        assert_eq!(plan.forwards.len(), 1);
        assert_eq!(plan.unprivileged_port_start(), None);
    }

    #[test]
    fn only_a_listener_below_1024_lowers_the_port_start() {
        let start =
            |items: &[(&str, u16)]| Transparent::plan(&pairs(items)).unprivileged_port_start();
        // Nothing served, or every port at 1024 or more: the launch pays nothing.
        assert_eq!(start(&[]), None);
        assert_eq!(start(&[("a.test", 1024), ("b.test", 8443)]), None);
        assert_eq!(start(&[("a.test", 1023)]), Some(1023));
        assert_eq!(start(&[("a.test", 8443), ("b.test", 443)]), Some(443));
        // An entry that gets no listener (an address that cannot be made
        // local, IPv6) asks for nothing.
        assert_eq!(start(&[("10.0.0.1", 443)]), None);
        // The proxy's own address is never a listener.
        assert_eq!(start(&[("127.0.0.1", 3128)]), None);
    }

    #[test]
    fn the_hosts_file_puts_allowlisted_names_before_the_hosts_own_lines() {
        let plan = Transparent::plan(&pairs(&[("example.com", 8443)]));
        let host_file = "127.0.0.1 localhost\n# a comment\n93.184.216.34 example.com\n10.0.0.1 Example.COM www.example.com # web";
        let text = plan.hosts_file(host_file);
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "127.80.0.1\texample.com",
                "127.0.0.1 localhost",
                "10.0.0.1\twww.example.com"
            ]
        );
        assert!(text.contains("# a comment"));
        assert!(plan.hosts_file("").contains("127.0.0.1\tlocalhost"));
    }
}
