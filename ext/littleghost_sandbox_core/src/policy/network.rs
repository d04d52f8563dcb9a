//! NetworkPolicy (SPEC §7): inherit the host network, no network, or an
//! allowlist enforced by a gateway. Validation order is that of 7.2.

use std::path::PathBuf;

pub use super::network_mode::NetworkMode;
use super::network_rules::{AllowRequest, NetworkRules, SecretRequest};
use super::Error as Misshapen;
use super::Given;
use crate::error::{policy, Result};

/// `:connect` (tunnel by host:port) or `:http` (inspect each request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Inspection {
    Connect,
    Http,
}

impl Inspection {
    /// The mode's name (the binding shows it as a Ruby symbol).
    pub fn name(self) -> &'static str {
        match self {
            Inspection::Connect => "connect",
            Inspection::Http => "http",
        }
    }

    fn parse(name: &str) -> Option<Inspection> {
        match name {
            "connect" => Some(Inspection::Connect),
            "http" => Some(Inspection::Http),
            _ => None,
        }
    }
}

/// What the caller asked for, before validation. `allow` holds the caller's
/// entries as text (Ruby's `String(entry)`) or Hash rules, the header
/// lists are text; the
/// gateway and authorizer are objects only the binding holds, so the core
/// only learns whether they were given.
#[derive(Debug)]
pub struct NetworkRequest<'a> {
    pub mode: Given<'a>,
    pub inspection: Option<Given<'a>>,
    pub allow: Vec<AllowRequest>,
    pub secrets: Vec<SecretRequest>,
    pub upstream_ca: Option<PathBuf>,
    /// `resolve:` as (name, address text) pairs.
    pub resolve: Vec<(String, String)>,
    pub forward_headers: Vec<String>,
    pub mutation_headers: Vec<String>,
    pub gateway: bool,
    pub authorizer: bool,
}

impl<'a> NetworkRequest<'a> {
    /// A request for `mode` with every other field at its default.
    pub fn mode(mode: Given<'a>) -> NetworkRequest<'a> {
        NetworkRequest {
            mode,
            inspection: None,
            allow: Vec::new(),
            secrets: Vec::new(),
            upstream_ca: None,
            resolve: Vec::new(),
            forward_headers: Vec::new(),
            mutation_headers: Vec::new(),
            gateway: false,
            authorizer: false,
        }
    }
}

/// A validated network rule: allow entries stripped, down-cased and
/// de-duplicated (Hash entries with their HTTP rules), secrets and the
/// upstream roots ([`NetworkRules`]); header names down-cased, checked and
/// de-duplicated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NetworkPolicy {
    pub mode: NetworkMode,
    pub rules: NetworkRules,
    pub inspection: Inspection,
    pub forward_headers: Vec<String>,
    pub mutation_headers: Vec<String>,
    /// Whether a custom gateway was given (the binding holds it).
    pub gateway: bool,
    /// Whether an authorizer was given (the binding holds it).
    pub authorizer: bool,
}

impl NetworkPolicy {
    /// The destination text of every allow entry, in order.
    pub fn destinations(&self) -> Vec<String> {
        self.rules.destinations()
    }

    /// Validates `request` in the order of 7.2: mode, inspection, options
    /// only `:allowlist` takes, `:http` needs an allowlist and an authorizer,
    /// an allowlist needs entries, then the entries and header names.
    pub fn new(request: NetworkRequest<'_>) -> Result<NetworkPolicy> {
        let mode = request
            .mode
            .name()
            .and_then(NetworkMode::parse)
            .ok_or_else(|| Misshapen::NetworkMode {
                shown: request.mode.shown(),
            })?;
        let inspection =
            match &request.inspection {
                None => Inspection::Connect,
                Some(given) => given.name().and_then(Inspection::parse).ok_or_else(|| {
                    Misshapen::Inspection {
                        shown: given.shown(),
                    }
                })?,
            };
        let allowlist = mode == NetworkMode::Allowlist;
        let http = inspection == Inspection::Http;
        if !allowlist
            && (!request.allow.is_empty()
                || !request.secrets.is_empty()
                || request.upstream_ca.is_some()
                || !request.resolve.is_empty()
                || request.gateway
                || request.authorizer
                || !request.forward_headers.is_empty()
                || !request.mutation_headers.is_empty())
        {
            return Err(Misshapen::OptionsWithoutAllowlist(mode).into());
        }
        if http && !allowlist {
            return Err(Misshapen::HttpWithoutAllowlist.into());
        }
        if http && !request.authorizer {
            return Err(Misshapen::HttpWithoutAuthorizer.into());
        }
        if allowlist && request.allow.is_empty() {
            return Err(Misshapen::EmptyAllowlist.into());
        }
        Ok(NetworkPolicy {
            mode,
            rules: NetworkRules::new(&request.allow, &request.secrets, request.upstream_ca)?
                .resolving(&request.resolve)?,
            inspection,
            forward_headers: header_names("forward_headers", &request.forward_headers)?,
            mutation_headers: header_names("mutation_headers", &request.mutation_headers)?,
            gateway: request.gateway,
            authorizer: request.authorizer,
        })
    }
}

/// Ruby's `String#strip` set: whitespace and NUL.
fn strippable(c: char) -> bool {
    matches!(c, '\0' | '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ')
}

/// Each entry stripped and down-cased, de-duplicated in order; empty entries
/// and entries containing whitespace are refused.
pub(crate) fn allow_entries(entries: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    // Linear in the number of entries (40,000 entries took 1.5 s when it was quadratic).
    let mut seen = std::collections::HashSet::new();
    for entry in entries {
        let text = entry.trim_matches(strippable).to_lowercase();
        if text.is_empty() {
            return Err(policy("network allowlist entries cannot be empty"));
        }
        if text.chars().any(char::is_whitespace) {
            return Err(policy(format!(
                "network allowlist entry {text:?} cannot contain whitespace"
            )));
        }
        if seen.insert(text.clone()) {
            out.push(text);
        }
    }
    Ok(out)
}

/// Down-cased header names matching `/\A[a-z0-9][a-z0-9-]*\z/`, de-duplicated.
fn header_names(label: &str, entries: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in entries {
        let text = entry.to_lowercase();
        let valid = text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid {
            return Err(policy(format!(
                "network {label} entry {text:?} is not a valid header name (letters, digits and '-')"
            )));
        }
        if seen.insert(text.clone()) {
            out.push(text);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn allowlist(allow: &[&str]) -> NetworkRequest<'static> {
        NetworkRequest {
            allow: allow
                .iter()
                .map(|s| AllowRequest::Text(s.to_string()))
                .collect(),
            ..NetworkRequest::mode(Given::symbol("allowlist"))
        }
    }

    fn message(request: NetworkRequest<'_>) -> String {
        NetworkPolicy::new(request)
            .unwrap_err()
            .message()
            .to_owned()
    }

    #[test]
    fn modes_and_defaults() {
        let none = NetworkPolicy::new(NetworkRequest::mode(Given::symbol("none"))).unwrap();
        assert_eq!(none.mode, NetworkMode::None);
        assert_eq!(none.inspection, Inspection::Connect);
        assert!(none.rules.allow.is_empty() && !none.gateway && !none.authorizer);
    }

    #[test]
    fn allow_entries_are_stripped_downcased_and_unique() {
        let policy = NetworkPolicy::new(allowlist(&[
            " API.Example.com:443 \0",
            "api.example.com:443",
            "b.test:80",
        ]))
        .unwrap();
        assert_eq!(
            policy.destinations(),
            strings(&["api.example.com:443", "b.test:80"])
        );
        assert_eq!(
            message(allowlist(&["  "])),
            "network allowlist entries cannot be empty"
        );
        assert_eq!(
            message(allowlist(&["a b:1"])),
            "network allowlist entry \"a b:1\" cannot contain whitespace"
        );
    }

    #[test]
    fn header_names_are_checked() {
        let policy = NetworkPolicy::new(NetworkRequest {
            forward_headers: strings(&["X-Trace", "x-trace"]),
            ..allowlist(&["a:1"])
        })
        .unwrap();
        assert_eq!(policy.forward_headers, strings(&["x-trace"]));
        for bad in ["-x", "x y", "x_y", ""] {
            let text = message(NetworkRequest {
                mutation_headers: strings(&[bad]),
                ..allowlist(&["a:1"])
            });
            assert!(text.starts_with("network mutation_headers entry"), "{text}");
            assert!(text.ends_with("is not a valid header name (letters, digits and '-')"));
        }
    }

    #[test]
    fn validation_order_of_7_2() {
        let bad_mode = NetworkRequest {
            inspection: Some(Given::symbol("bogus")),
            ..NetworkRequest::mode(Given::symbol("host"))
        };
        let refused = |request: NetworkRequest<'_>| NetworkPolicy::new(request).unwrap_err();
        let shown = |text: &str| text.to_owned();
        assert_eq!(
            refused(bad_mode),
            Misshapen::NetworkMode {
                shown: shown(":host")
            }
            .into()
        );
        assert_eq!(
            refused(NetworkRequest::mode(Given::other("3"))),
            Misshapen::NetworkMode { shown: shown("3") }.into()
        );
        let bad_inspection = NetworkRequest {
            inspection: Some(Given::symbol("tls")),
            allow: vec![AllowRequest::Text("a:1".into())],
            ..NetworkRequest::mode(Given::symbol("none"))
        };
        assert_eq!(
            refused(bad_inspection),
            Misshapen::Inspection {
                shown: shown(":tls")
            }
            .into()
        );
        let extra = NetworkRequest {
            gateway: true,
            ..NetworkRequest::mode(Given::symbol("none"))
        };
        assert_eq!(
            refused(extra),
            Misshapen::OptionsWithoutAllowlist(NetworkMode::None).into()
        );
        let http_inherit = NetworkRequest {
            inspection: Some(Given::symbol("http")),
            ..NetworkRequest::mode(Given::symbol("inherit"))
        };
        assert_eq!(
            refused(http_inherit),
            Misshapen::HttpWithoutAllowlist.into()
        );
        let no_authorizer = NetworkRequest {
            inspection: Some(Given::symbol("http")),
            ..allowlist(&[])
        };
        assert_eq!(
            refused(no_authorizer),
            Misshapen::HttpWithoutAuthorizer.into()
        );
        assert_eq!(refused(allowlist(&[])), Misshapen::EmptyAllowlist.into());
        assert_eq!(Misshapen::EmptyAllowlist.kind(), crate::error::Kind::Policy);
    }
}
