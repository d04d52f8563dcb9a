//! The parts of a `network:` declaration beyond "host:port" text:
//! allow entries written as Hashes (`{destination:, inspect:, methods:,
//! paths:}`), `secrets:`, `upstream_ca:` and `resolve:`. Each is validated here, once,
//! whichever door it came through (`Sandbox.new(policy:)`, `NetworkPolicy.new`,
//! `LittleGhost.configure`, `BuiltinGateway.new`, a scope).
//!
//! A Hash entry that asks for nothing more than its destination is the same
//! entry as the destination's text: it normalises to a plain entry, so
//! `{destination: "a.test:443"}` and `"a.test:443"` are one rule (`==`,
//! `hash` and the `allow` reader agree).

use std::net::IpAddr;
use std::path::PathBuf;

use crate::error::{policy, Result};
use crate::network::allowlist::parse_pattern;
use crate::network::allowlist::{Destination, Host};
use crate::network::rules::{clean_path, is_token, Pattern, PortPattern, Rule};
use crate::network::secrets::{Secret, Secrets};

/// The keys of an allow entry written as a Hash, in the order messages list them.
pub const RULE_KEYS: [&str; 4] = ["destination", "inspect", "methods", "paths"];

/// The keys of one secret's Hash, in the order messages list them.
pub const SECRET_KEYS: [&str; 2] = ["value", "destinations"];

/// One validated allow entry: a destination (stripped, down-cased text) and
/// what may pass to it. A plain entry allows every request, uninspected.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllowEntry {
    pub destination: String,
    pub inspect: bool,
    /// Upper-case method tokens; empty allows any.
    pub methods: Vec<String>,
    /// Path prefixes, each starting with '/'; empty allows any.
    pub paths: Vec<String>,
}

impl AllowEntry {
    /// A `"host:port"` entry: any request, no inspection.
    pub fn plain(destination: String) -> AllowEntry {
        AllowEntry {
            destination,
            inspect: false,
            methods: Vec::new(),
            paths: Vec::new(),
        }
    }

    /// Whether it says no more than its destination (shown as a String).
    pub fn is_plain(&self) -> bool {
        !self.inspect && self.methods.is_empty() && self.paths.is_empty()
    }

    /// The gateway's rule: PolicyError when the destination is not a
    /// pattern (`host:port`, `*.suffix:port`, `host:*`, `net/len:port`).
    pub fn rule(&self) -> Result<Rule> {
        Ok(Rule {
            destination: parse_pattern(&self.destination)?,
            inspect: self.inspect,
            methods: self.methods.clone(),
            paths: self.paths.clone(),
        })
    }

    /// The entry of a gateway rule (for a narrowed scope's policy).
    pub fn of_rule(rule: &Rule) -> AllowEntry {
        AllowEntry {
            destination: rule.destination.to_string(),
            inspect: rule.inspect,
            methods: rule.methods.clone(),
            paths: rule.paths.clone(),
        }
    }
}

/// An allow entry as given: text (Ruby's `String(entry)`) or a Hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowRequest {
    Text(String),
    Rule(RuleRequest),
}

/// An allow entry's `inspect` as given: a flag, or another value (as it reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InspectRequest {
    Flag(bool),
    Other { shown: String },
}

/// An allow entry written as a Hash, before validation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleRequest {
    /// Every key the Hash has (names of Symbols, `inspect` of other keys).
    pub keys: Vec<String>,
    pub destination: Option<String>,
    pub inspect: Option<InspectRequest>,
    pub methods: Vec<String>,
    pub paths: Vec<String>,
}

/// One secret: its value is only readable inside the crate (the gateway
/// swaps it in); `Debug` shows "[REDACTED]" and `Hash` skips it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretEntry {
    pub name: String,
    value: String,
    pub destinations: Vec<String>,
}

impl std::fmt::Debug for SecretEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretEntry")
            .field("name", &self.name)
            .field("value", &REDACTED)
            .field("destinations", &self.destinations)
            .finish()
    }
}

impl std::hash::Hash for SecretEntry {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.destinations.hash(state);
    }
}

/// What every reader shows in place of a secret's value.
pub const REDACTED: &str = "[REDACTED]";

impl SecretEntry {
    /// The gateway's secret, with a fresh random stand-in.
    pub fn secret(&self) -> Result<Secret> {
        Secret::new(&self.name, &self.value, &self.destinations)
    }

    /// Whether `other` holds the same value (a scope repeating a secret).
    pub fn same_value(&self, other: &SecretEntry) -> bool {
        self.value == other.value
    }

    /// This secret with other (already validated) destinations (scopes).
    pub fn with_destinations(&self, destinations: Vec<String>) -> SecretEntry {
        SecretEntry {
            destinations,
            ..self.clone()
        }
    }
}

/// A secret as given, before validation.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SecretRequest {
    pub name: String,
    /// The keys of the secret's Hash (`None`: it was not a Hash).
    pub keys: Option<Vec<String>>,
    /// The value when it is a String.
    pub value: Option<String>,
    pub destinations: Vec<String>,
}

impl std::fmt::Debug for SecretRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretRequest")
            .field("name", &self.name)
            .field("destinations", &self.destinations)
            .finish_non_exhaustive()
    }
}

/// The validated rules of a declaration: entries, secrets, upstream roots.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct NetworkRules {
    pub allow: Vec<AllowEntry>,
    pub secrets: Vec<SecretEntry>,
    /// A PEM file of extra roots the gateway trusts upstream (read at `open`).
    pub upstream_ca: Option<PathBuf>,
    /// Names the gateway resolves to these addresses instead of asking DNS
    /// (`resolve:`, like curl's `--resolve`), in the order given.
    pub resolve: Vec<(String, IpAddr)>,
}

impl NetworkRules {
    /// Validates the entries (de-duplicated in order), then the secrets
    /// (each destination must be covered by an allow entry, and an HTTPS one
    /// by an `inspect: true` entry: a secret that could never be sent is a
    /// mistake, not a no-op), then `upstream_ca:` (only inspected
    /// connections verify against it, so it needs one).
    pub fn new(
        allow: &[AllowRequest],
        secrets: &[SecretRequest],
        upstream_ca: Option<PathBuf>,
    ) -> Result<NetworkRules> {
        let allow = allow_entries(allow)?;
        let secrets = secret_entries(secrets, &allow)?;
        if upstream_ca.is_some() && !allow.iter().any(|entry| entry.inspect) {
            return Err(policy(
                "network upstream_ca: is only used to verify inspected destinations, and no allow entry has inspect: true (add {destination: \"host:443\", inspect: true}, or drop upstream_ca: and put the CA in the host's store)",
            ));
        }
        Ok(NetworkRules {
            allow,
            secrets,
            upstream_ca,
            resolve: Vec::new(),
        })
    }

    /// These rules with `resolve:` (name => IP address text), each name a
    /// DNS name (down-cased), each address an IP literal (IPv6 with or
    /// without brackets), a name given once: PolicyError otherwise.
    pub fn resolving(mut self, requests: &[(String, String)]) -> Result<NetworkRules> {
        self.resolve = resolve_entries(requests)?;
        Ok(self)
    }

    /// The address `resolve:` gives `name`, if any.
    pub fn resolved(&self, name: &str) -> Option<IpAddr> {
        self.resolve
            .iter()
            .find(|(mapped, _)| mapped.eq_ignore_ascii_case(name))
            .map(|(_, address)| *address)
    }

    /// The destination text of each entry, in order (what `NO_PROXY` and
    /// other gateways read).
    pub fn destinations(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.allow
            .iter()
            .map(|e| e.destination.clone())
            .filter(|d| seen.insert(d.clone()))
            .collect()
    }

    /// Whether it says more than destinations (only the built-in gateway enforces that).
    pub fn needs_builtin_gateway(&self) -> bool {
        self.allow.iter().any(|e| !e.is_plain())
            || !self.secrets.is_empty()
            || self.upstream_ca.is_some()
            || !self.resolve.is_empty()
    }

    /// The gateway's rules, in order.
    pub fn rules(&self) -> Result<Vec<Rule>> {
        self.allow.iter().map(AllowEntry::rule).collect()
    }

    /// The gateway's secrets, each with a fresh stand-in.
    pub fn gateway_secrets(&self) -> Result<Secrets> {
        Secrets::new(
            self.secrets
                .iter()
                .map(SecretEntry::secret)
                .collect::<Result<_>>()?,
        )
    }
}

/// Every entry validated and de-duplicated in order.
pub fn allow_entries(requests: &[AllowRequest]) -> Result<Vec<AllowEntry>> {
    let mut out: Vec<AllowEntry> = Vec::with_capacity(requests.len());
    let mut seen = std::collections::HashSet::new();
    for request in requests {
        let entry = match request {
            AllowRequest::Text(text) => AllowEntry::plain(destination_text(text)?),
            AllowRequest::Rule(rule) => rule_entry(rule)?,
        };
        if seen.insert(entry.clone()) {
            out.push(entry);
        }
    }
    Ok(out)
}

fn destination_text(text: &str) -> Result<String> {
    let mut normalized = super::allow_entries(&[text.to_owned()])?;
    Ok(normalized.remove(0))
}

fn unknown_keys(what: &str, keys: &[String], valid: &[&'static str]) -> Result<()> {
    let unknown: Vec<String> = keys
        .iter()
        .filter(|key| !valid.contains(&key.as_str()))
        .cloned()
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(super::Error::UnknownKeys {
        what: what.to_owned(),
        unknown,
        valid: valid.to_vec(),
    }
    .into())
}

fn rule_entry(request: &RuleRequest) -> Result<AllowEntry> {
    unknown_keys("network allow entry", &request.keys, &RULE_KEYS)?;
    let destination = match &request.destination {
        Some(text) => destination_text(text)?,
        None => return Err(super::Error::AllowEntryWithoutDestination.into()),
    };
    // A Hash entry is new: its destination must be a pattern now.
    parse_pattern(&destination)?;
    let inspect = match &request.inspect {
        None | Some(InspectRequest::Flag(false)) => false,
        Some(InspectRequest::Flag(true)) => true,
        Some(InspectRequest::Other { shown }) => {
            return Err(policy(format!(
                "network allow entry {destination:?} inspect: must be true or false, got {shown}"
            )))
        }
    };
    let mut methods: Vec<String> = Vec::new();
    for method in &request.methods {
        let upper = method.to_ascii_uppercase();
        if upper.is_empty() || !upper.bytes().all(is_token) {
            return Err(policy(format!(
                "network allow entry {destination:?} method {method:?} is not an HTTP method token"
            )));
        }
        if !methods.contains(&upper) {
            methods.push(upper);
        }
    }
    let mut paths: Vec<String> = Vec::new();
    for path in &request.paths {
        let shape = path.starts_with('/')
            && !path.chars().any(|c| c.is_whitespace() || c.is_control())
            && !path.contains(['?', '#'])
            && escapes_are_stable(path)
            && clean_path(path) == Some(path.as_str());
        if !shape {
            return Err(policy(format!(
                "network allow entry {destination:?} path {path:?} must start with \"/\" and be a clean path (no whitespace, control characters, ? or #, dot segments, encoded / \\ . NUL or %, nor a % that does not start an escape)"
            )));
        }
        if !paths.contains(path) {
            paths.push(path.clone());
        }
    }
    Ok(AllowEntry {
        destination,
        inspect,
        methods,
        paths,
    })
}

/// Whether every `%` in a path prefix starts an escape (two hex digits)
/// that is not itself a `%` (`%25`). A prefix is compared with the path as
/// sent; only then does the path read as the prefix however often a server
/// decodes it. A stray `%` or a `%25` would join the path's next characters
/// into an escape the prefix never had: under `/x%25`, `/x%2530` reads
/// `/x0` decoded twice (docs/security.md "Paths however a server decodes them").
fn escapes_are_stable(prefix: &str) -> bool {
    prefix.match_indices('%').all(|(at, _)| {
        prefix.get(at + 1..at + 3).is_some_and(|hex| {
            hex.bytes().all(|b| b.is_ascii_hexdigit()) && !hex.eq_ignore_ascii_case("25")
        })
    })
}

/// Every secret validated; each destination covered by an allow entry.
pub fn secret_entries(
    requests: &[SecretRequest],
    allow: &[AllowEntry],
) -> Result<Vec<SecretEntry>> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let patterns: Vec<Pattern> = allow
        .iter()
        .filter_map(|entry| Pattern::parse(&entry.destination).ok())
        .collect();
    let mut out: Vec<SecretEntry> = Vec::with_capacity(requests.len());
    for request in requests {
        let name = request.name.to_ascii_lowercase();
        let Some(keys) = &request.keys else {
            return Err(super::Error::SecretNotATable { name }.into());
        };
        unknown_keys(&format!("network secret {name:?}"), keys, &SECRET_KEYS)?;
        let Some(value) = &request.value else {
            return Err(super::Error::SecretWithoutValue { name }.into());
        };
        // The core's checks (name, value, destinations); the stand-in it draws is dropped.
        let checked = Secret::new(&name, value, &request.destinations)?;
        for pattern in checked.destinations() {
            if !patterns.iter().any(|p| p.covers(pattern)) {
                return Err(policy(format!(
                    "network secret {name:?} destination \"{pattern}\" is not covered by the allow list (the secret could never be sent there)"
                )));
            }
        }
        https_destinations_inspected(&name, checked.destinations(), allow)?;
        if out.iter().any(|s| s.name == checked.name()) {
            return Err(policy(format!("network secret {name:?} is declared twice")));
        }
        out.push(SecretEntry {
            name: checked.name().to_owned(),
            value: value.clone(),
            destinations: super::allow_entries(&request.destinations)?,
        });
    }
    Ok(out)
}

/// Fail closed: a secret is swapped only in requests the gateway reads, and
/// HTTPS (port 443, which a `*` port includes) is read only where an
/// `inspect: true` entry covers it; an uninspected tunnel would carry the
/// stand-in to the destination unseen (a 401 and no denial). So each such
/// destination must be covered by an inspected entry (docs/security.md,
/// "Secrets need inspection over HTTPS").
pub fn https_destinations_inspected(
    name: &str,
    destinations: &[Pattern],
    allow: &[AllowEntry],
) -> Result<()> {
    let inspected: Vec<Pattern> = allow
        .iter()
        .filter(|entry| entry.inspect)
        .filter_map(|entry| Pattern::parse(&entry.destination).ok())
        .collect();
    for destination in destinations {
        if destination.port == PortPattern::Exact(HTTPS_PORT)
            || destination.port == PortPattern::Any
        {
            let https = Pattern {
                host: destination.host.clone(),
                port: PortPattern::Exact(HTTPS_PORT),
            };
            if !inspected.iter().any(|pattern| pattern.covers(&https)) {
                return Err(policy(format!(
                    "network secret {name:?} destination \"{destination}\" is reached over HTTPS (port 443), where the gateway swaps a secret only with inspect: true; declare {{destination: \"{https}\", inspect: true}} in allow: (or give the secret a non-HTTPS port)"
                )));
            }
        }
    }
    Ok(())
}

const HTTPS_PORT: u16 = 443;

/// `resolve:` checked: a DNS name (not an IP literal, no port, no
/// wildcard) and an IP address each, one address per name.
fn resolve_entries(requests: &[(String, String)]) -> Result<Vec<(String, IpAddr)>> {
    let mut out: Vec<(String, IpAddr)> = Vec::with_capacity(requests.len());
    for (name, address) in requests {
        let name = name.trim().to_ascii_lowercase();
        // Parsed as a destination with a placeholder port: a name, exactly as given.
        let named = matches!(
            Destination::parse(&name, Some(1)),
            Ok(Destination { host: Host::Name(parsed), port: 1 }) if parsed == name
        );
        if !named {
            return Err(policy(format!(
                "network resolve: {name:?} is not a host name (a DNS name such as \"api.example.com\", without a port)"
            )));
        }
        let text = address.trim();
        let bare = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text);
        let Ok(ip) = bare.parse::<IpAddr>() else {
            return Err(policy(format!(
                "network resolve: {name:?} => {address:?} is not an IP address"
            )));
        };
        match out.iter().find(|(seen, _)| *seen == name) {
            Some((_, seen)) if *seen == ip => {}
            Some(_) => {
                return Err(policy(format!(
                    "network resolve: {name:?} is given two addresses"
                )))
            }
            None => out.push((name, ip)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(entry: &str) -> AllowRequest {
        AllowRequest::Text(entry.into())
    }

    fn rule(destination: &str, methods: &[&str], paths: &[&str]) -> RuleRequest {
        let mut keys = vec!["destination".to_string()];
        if !methods.is_empty() {
            keys.push("methods".into());
        }
        if !paths.is_empty() {
            keys.push("paths".into());
        }
        RuleRequest {
            keys,
            destination: Some(destination.into()),
            methods: methods.iter().map(|s| s.to_string()).collect(),
            paths: paths.iter().map(|s| s.to_string()).collect(),
            inspect: None,
        }
    }

    fn secret(name: &str, value: &str, destinations: &[&str]) -> SecretRequest {
        SecretRequest {
            name: name.into(),
            keys: Some(vec!["value".into(), "destinations".into()]),
            value: Some(value.into()),
            destinations: destinations.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn message(error: crate::Error) -> String {
        error.message().to_owned()
    }

    #[test]
    fn a_hash_entry_saying_only_its_destination_is_the_plain_entry() {
        let entries = allow_entries(&[
            text("A.test:443"),
            AllowRequest::Rule(rule(" a.TEST:443", &[], &[])),
        ])
        .unwrap();
        assert_eq!(entries, [AllowEntry::plain("a.test:443".into())]);
    }

    #[test]
    fn methods_are_upper_cased_tokens_and_paths_clean_prefixes() {
        let entries = allow_entries(&[AllowRequest::Rule(rule(
            "api.github.com:443",
            &["get", "HEAD", "Get"],
            &["/repos/org/", "/repos/org/"],
        ))])
        .unwrap();
        assert_eq!(entries[0].methods, ["GET", "HEAD"]);
        assert_eq!(entries[0].paths, ["/repos/org/"]);
        assert!(!entries[0].is_plain());
        let escaped = allow_entries(&[AllowRequest::Rule(rule("a.test:1", &[], &["/a%41/b%7E"]))]);
        assert_eq!(escaped.unwrap()[0].paths, ["/a%41/b%7E"]);
        for bad in ["GE T", "", "G\u{0}", "GET/"] {
            let error = allow_entries(&[AllowRequest::Rule(rule("a.test:1", &[bad], &[]))]);
            assert!(
                message(error.unwrap_err()).contains("is not an HTTP method token"),
                "{bad:?}"
            );
        }
        for bad in [
            "repos",
            "/a b",
            "/a\tb",
            "/a/../b",
            "/a/%2e%2e/",
            "/a/%252e%252e/",
            "/x/%25%32%65%25%32%65/",
            "/x/..%3f/",
            "/a?x",
            "/a\u{7}",
            // Fuzz finding (`http_rules`): a `%` that is no escape, or an
            // encoded `%`, lets the path after the prefix complete an escape.
            "/rfrfff%%",
            "/x%25",
            "/x%25/",
            "/x%4",
            "/x%zz/",
        ] {
            let error = allow_entries(&[AllowRequest::Rule(rule("a.test:1", &[], &[bad]))]);
            assert!(
                message(error.unwrap_err()).contains("must start with \"/\""),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_unknown_key_lists_the_valid_ones_and_inspect_is_a_boolean() {
        let mut typo = rule("a.test:1", &[], &[]);
        typo.keys.push("method".into());
        let error = allow_entries(&[AllowRequest::Rule(typo)]).unwrap_err();
        assert_eq!(error.kind(), crate::error::Kind::Argument);
        assert_eq!(
            error.worded(&|name| format!(":{name}")),
            "unknown network allow entry key: :method (valid keys: :destination, :inspect, :methods, :paths)"
        );
        assert_eq!(
            message(error),
            "unknown network allow entry key: method (valid keys: destination, inspect, methods, paths)"
        );
        let mut odd = rule("a.test:1", &[], &[]);
        odd.inspect = Some(InspectRequest::Other {
            shown: "\"yes\"".into(),
        });
        let error = allow_entries(&[AllowRequest::Rule(odd)]).unwrap_err();
        assert!(message(error).contains("inspect: must be true or false, got \"yes\""));
        let mut missing = rule("a.test:1", &[], &[]);
        missing.destination = None;
        assert!(allow_entries(&[AllowRequest::Rule(missing)]).is_err());
        let bad = allow_entries(&[AllowRequest::Rule(rule("*.com:1", &[], &[]))]).unwrap_err();
        assert!(message(bad).contains("single label"));
    }

    fn inspected(destination: &str) -> AllowRequest {
        AllowRequest::Rule(RuleRequest {
            keys: vec!["destination".into(), "inspect".into()],
            destination: Some(destination.into()),
            inspect: Some(InspectRequest::Flag(true)),
            ..RuleRequest::default()
        })
    }

    #[test]
    fn a_secret_bound_to_https_needs_an_inspected_entry() {
        let secret = |d: &[&str]| [secret("github", "ghp_value_4", d)];
        let error = NetworkRules::new(
            &[text("api.github.com:443")],
            &secret(&["api.github.com:443"]),
            None,
        )
        .unwrap_err();
        assert!(matches!(error, crate::Error::Policy(_)));
        let shown = message(error);
        assert!(shown.contains("inspect: true"), "{shown}");
        assert!(!shown.contains("ghp_value_4"));
        // Any port includes 443.
        let any = NetworkRules::new(&[text("db.test:*")], &secret(&["db.test:*"]), None);
        assert!(message(any.unwrap_err()).contains("\"db.test:443\", inspect: true"));
        // An inspected entry covering it, even a wildcard, is enough.
        for allow in [
            vec![inspected("api.github.com:443")],
            vec![text("api.github.com:443"), inspected("*.github.com:443")],
        ] {
            NetworkRules::new(&allow, &secret(&["api.github.com:443"]), None).unwrap();
        }
        // Another port is plain HTTP through the proxy (or a tunnel that cuts on a stand-in).
        NetworkRules::new(
            &[text("localhost:8080")],
            &secret(&["localhost:8080"]),
            None,
        )
        .unwrap();
    }

    #[test]
    fn upstream_ca_needs_an_inspected_destination() {
        let ca = Some(PathBuf::from("/etc/ca.pem"));
        let error = NetworkRules::new(&[text("a.test:443")], &[], ca.clone()).unwrap_err();
        assert!(matches!(error, crate::Error::Policy(_)));
        assert!(message(error).contains("inspect: true"));
        NetworkRules::new(&[inspected("a.test:443")], &[], ca).unwrap();
    }

    #[test]
    fn resolve_maps_host_names_to_addresses() {
        let map = |pairs: &[(&str, &str)]| -> Result<NetworkRules> {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect();
            NetworkRules::new(&[text("a.test:80")], &[], None)?.resolving(&pairs)
        };
        let rules = map(&[("API.Example.test", "127.0.0.1"), ("v6.test", "[::1]")]).unwrap();
        assert_eq!(
            rules.resolved("api.example.test"),
            Some([127, 0, 0, 1].into())
        );
        assert_eq!(rules.resolved("v6.test"), Some("::1".parse().unwrap()));
        assert_eq!(rules.resolved("other.test"), None);
        assert!(rules.needs_builtin_gateway());
        for (name, address, expected) in [
            ("", "127.0.0.1", "is not a host name"),
            ("a.test:80", "127.0.0.1", "is not a host name"),
            ("*.a.test", "127.0.0.1", "is not a host name"),
            ("10.0.0.1", "127.0.0.1", "is not a host name"),
            ("a.test", "localhost", "is not an IP address"),
            ("a.test", "", "is not an IP address"),
        ] {
            let error = map(&[(name, address)]).unwrap_err();
            assert!(matches!(error, crate::Error::Policy(_)));
            assert!(message(error).contains(expected), "{name:?} {address:?}");
        }
        let twice = map(&[("a.test", "10.0.0.1"), ("A.test", "10.0.0.2")]).unwrap_err();
        assert!(message(twice).contains("two addresses"));
    }

    #[test]
    fn wildcard_any_port_and_network_entries_become_rules() {
        let rules = NetworkRules::new(
            &[
                text("*.githubusercontent.com:443"),
                text("db.internal:*"),
                text("10.1.0.0/16:5432"),
            ],
            &[],
            None,
        )
        .unwrap()
        .rules()
        .unwrap();
        let shown: Vec<String> = rules.iter().map(|r| r.destination.to_string()).collect();
        assert_eq!(
            shown,
            [
                "*.githubusercontent.com:443",
                "db.internal:*",
                "10.1.0.0/16:5432"
            ]
        );
    }

    #[test]
    fn a_secret_must_go_somewhere_the_allow_list_reaches_and_never_shows_its_value() {
        let allow = [inspected("*.github.com:443"), text("db.internal:*")];
        let rules = NetworkRules::new(
            &allow,
            &[secret("GitHub", "ghp_value_1", &["api.github.com:443"])],
            None,
        )
        .unwrap();
        assert_eq!(rules.secrets[0].name, "github");
        let shown = format!("{rules:?}");
        assert!(
            !shown.contains("ghp_value_1") && shown.contains(REDACTED),
            "{shown}"
        );
        let error = NetworkRules::new(
            &allow,
            &[secret("github", "ghp_value_2", &["github.com:443"])],
            None,
        )
        .unwrap_err();
        let text = message(error);
        assert!(text.contains("not covered by the allow list"), "{text}");
        assert!(!text.contains("ghp_value_2"));
        let mut no_value = secret("github", "x", &["api.github.com:443"]);
        no_value.value = None;
        let text = message(NetworkRules::new(&allow, &[no_value], None).unwrap_err());
        assert_eq!(
            text,
            "network secret \"github\" needs value: (the value is not shown)"
        );
        let mut typo = secret("github", "ghp_value_3", &["api.github.com:443"]);
        typo.keys = Some(vec!["value".into(), "destination".into()]);
        let error = NetworkRules::new(&allow, &[typo], None).unwrap_err();
        assert_eq!(error.kind(), crate::error::Kind::Argument);
        assert!(!message(error).contains("ghp_value_3"));
        let twice = [
            secret("github", "a1", &["api.github.com:443"]),
            secret("GITHUB", "a2", &["api.github.com:443"]),
        ];
        assert!(message(NetworkRules::new(&allow, &twice, None).unwrap_err()).contains("twice"));
    }
}
