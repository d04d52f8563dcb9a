//! Network narrowing (SPEC §13, SC.10/SC.10b): the network a scope may have
//! given its parent's. An allowlist parent may be narrowed to another
//! allowlist ([`narrow_allowlist`]): fewer destinations, methods,
//! paths and secrets, never more.

use super::refusal::NetworkNarrowing;
use super::NetworkMode;
use crate::error::Result;
use crate::network::rules::{Pattern, Rule};
use crate::policy::{AllowEntry, Inspection, NetworkPolicy, NetworkRules, SecretEntry};

/// SC.10's refusal: the scope asked for more network than its parent has.
pub fn widen() -> crate::Error {
    NetworkNarrowing::Widens.into()
}

/// What a scope asks for: `nil`/`true` mean "the parent's network"; `false`
/// arrives here as `Mode(None)`. `same_as_parent` is the NetworkPolicy `==`
/// comparison with the parent, which only matters for allowlists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkRequest {
    Parent,
    Mode {
        mode: NetworkMode,
        same_as_parent: bool,
    },
    /// An allowlist [`narrow_allowlist`] made of the parent's.
    Narrowed,
}

/// Which network object the scope keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkChoice {
    /// The parent's network policy (possibly nil).
    Parent,
    /// The requested, coerced network policy.
    Requested,
}

/// SC.10/SC.10b: the network a scope may have. Returns the choice and the
/// resulting mode (`None` when the result is the parent's nil network).
/// `supported` are the parent capabilities' network modes.
pub fn narrow_network(
    parent: Option<NetworkMode>,
    request: NetworkRequest,
    supported: &[NetworkMode],
) -> Result<(NetworkChoice, Option<NetworkMode>)> {
    use NetworkMode as M;
    let (choice, mode) = match request {
        NetworkRequest::Parent => (NetworkChoice::Parent, parent),
        NetworkRequest::Narrowed => match parent {
            Some(M::Allowlist) => (NetworkChoice::Requested, Some(M::Allowlist)),
            _ => return Err(widen()),
        },
        NetworkRequest::Mode {
            mode,
            same_as_parent,
        } => match (parent, mode) {
            (Option::None, _) => return Err(widen()),
            (Some(_), M::None) => (NetworkChoice::Requested, Some(M::None)),
            (Some(M::Inherit), M::Inherit) => (NetworkChoice::Requested, Some(M::Inherit)),
            (Some(M::Allowlist), M::Allowlist) if same_as_parent => {
                (NetworkChoice::Parent, Some(M::Allowlist))
            }
            _ => return Err(widen()),
        },
    };
    if let Some(mode) = mode {
        if !supported.contains(&mode) {
            return Err(NetworkNarrowing::Unsupported(mode).into());
        }
    }
    Ok((choice, mode))
}

/// What a scope says of its parent's secrets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SecretsRequest {
    /// No `secrets:`: each parent secret still reachable through the
    /// scope's allow entries, limited to those destinations.
    #[default]
    Reachable,
    /// `secrets: [:name, ...]` or `{name => {destinations: [...]}}`: exactly
    /// these parent secrets (destinations `None`: the parent's).
    Named(Vec<(String, Option<Vec<String>>)>),
}

/// A scope's allowlist made from its parent's: every requested
/// allow entry must be covered by one of the parent's rules ([`Rule::covers`]:
/// same or narrower destination, methods and paths), every named secret
/// must be the parent's with destinations among its own. The result keeps
/// the parent's inspection, headers, gateway, authorizer and upstream roots;
/// `requested` may only repeat them (or leave them at their defaults).
/// Anything wider is the CapabilityError of SC.10.
pub fn narrow_allowlist(
    parent: &NetworkPolicy,
    requested: &NetworkPolicy,
    secrets: &SecretsRequest,
) -> Result<NetworkPolicy> {
    if parent.mode != NetworkMode::Allowlist || requested.mode != NetworkMode::Allowlist {
        return Err(widen());
    }
    let same_or_default = (requested.inspection == Inspection::Connect
        || requested.inspection == parent.inspection)
        && (requested.forward_headers.is_empty()
            || requested.forward_headers == parent.forward_headers)
        && (requested.mutation_headers.is_empty()
            || requested.mutation_headers == parent.mutation_headers)
        && (requested.rules.upstream_ca.is_none()
            || requested.rules.upstream_ca == parent.rules.upstream_ca)
        && (requested.rules.resolve.is_empty() || requested.rules.resolve == parent.rules.resolve);
    if !same_or_default {
        return Err(widen());
    }
    let parent_rules: Vec<Rule> = parent
        .rules
        .allow
        .iter()
        .filter_map(|entry| entry.rule().ok())
        .collect();
    let mut allow: Vec<AllowEntry> = Vec::with_capacity(requested.rules.allow.len());
    let mut scope_patterns: Vec<Pattern> = Vec::new();
    for entry in &requested.rules.allow {
        let rule = entry.rule()?;
        if !parent_rules.iter().any(|mine| mine.covers(&rule)) {
            return Err(widen());
        }
        scope_patterns.push(rule.destination);
        allow.push(entry.clone());
    }
    // A full declaration repeating secrets (with their values) names them.
    let repeated;
    let secrets = if requested.rules.secrets.is_empty() {
        secrets
    } else {
        let mut named = Vec::new();
        for secret in &requested.rules.secrets {
            let theirs = parent.rules.secrets.iter().find(|s| s.name == secret.name);
            if !theirs.is_some_and(|theirs| theirs.same_value(secret)) {
                return Err(widen());
            }
            named.push((secret.name.clone(), Some(secret.destinations.clone())));
        }
        repeated = SecretsRequest::Named(named);
        &repeated
    };
    let kept = narrow_secrets(&parent.rules.secrets, secrets, &scope_patterns)?;
    Ok(NetworkPolicy {
        rules: NetworkRules {
            allow,
            secrets: kept,
            upstream_ca: parent.rules.upstream_ca.clone(),
            resolve: parent.rules.resolve.clone(),
        },
        ..parent.clone()
    })
}

/// The parent's secrets a scope keeps, each limited to destinations both
/// the secret and the scope's allow entries reach.
fn narrow_secrets(
    parent: &[SecretEntry],
    request: &SecretsRequest,
    scope: &[Pattern],
) -> Result<Vec<SecretEntry>> {
    let parse = |texts: &[String]| -> Result<Vec<Pattern>> {
        texts
            .iter()
            .map(|t| crate::network::allowlist::parse_pattern(&t.trim().to_lowercase()))
            .collect()
    };
    let mut kept = Vec::new();
    match request {
        SecretsRequest::Reachable => {
            for secret in parent {
                let reachable = intersect(&parse(&secret.destinations)?, scope);
                if !reachable.is_empty() {
                    kept.push(secret.with_destinations(reachable));
                }
            }
        }
        SecretsRequest::Named(names) => {
            for (name, destinations) in names {
                let name = name.to_ascii_lowercase();
                let Some(secret) = parent.iter().find(|s| s.name == name) else {
                    return Err(widen());
                };
                let mine = parse(&secret.destinations)?;
                let wanted = match destinations {
                    None => mine.clone(),
                    Some(texts) => {
                        let wanted = parse(texts)?;
                        if !wanted.iter().all(|w| mine.iter().any(|m| m.covers(w))) {
                            return Err(widen());
                        }
                        wanted
                    }
                };
                let reachable = intersect(&wanted, scope);
                if reachable.is_empty() {
                    return Err(NetworkNarrowing::SecretUnreachable(name.clone()).into());
                }
                if !kept.iter().any(|s: &SecretEntry| s.name == name) {
                    kept.push(secret.with_destinations(reachable));
                }
            }
        }
    }
    Ok(kept)
}

/// The narrower of each pair of patterns where one covers the other, as text.
fn intersect(secret: &[Pattern], scope: &[Pattern]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in secret {
        for a in scope {
            let narrower = if a.covers(s) {
                Some(s)
            } else if s.covers(a) {
                Some(a)
            } else {
                None
            };
            if let Some(pattern) = narrower.map(ToString::to_string) {
                if !out.contains(&pattern) {
                    out.push(pattern);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{
        AllowRequest, Given, NetworkRequest as Declared, RuleRequest, SecretRequest,
    };

    fn policy_of(allow: Vec<AllowRequest>, secrets: &[(&str, &[&str])]) -> NetworkPolicy {
        NetworkPolicy::new(Declared {
            allow,
            secrets: secrets
                .iter()
                .map(|(name, destinations)| SecretRequest {
                    name: name.to_string(),
                    keys: Some(vec!["value".into(), "destinations".into()]),
                    value: Some(format!("value-of-{name}")),
                    destinations: destinations.iter().map(|d| d.to_string()).collect(),
                })
                .collect(),
            ..Declared::mode(Given::symbol("allowlist"))
        })
        .unwrap()
    }

    fn text(t: &str) -> AllowRequest {
        AllowRequest::Text(t.into())
    }

    fn rule(destination: &str, methods: &[&str], paths: &[&str]) -> AllowRequest {
        AllowRequest::Rule(RuleRequest {
            keys: vec!["destination".into(), "methods".into(), "paths".into()],
            destination: Some(destination.into()),
            inspect: None,
            methods: methods.iter().map(|m| m.to_string()).collect(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
        })
    }

    // Port 8443: a secret bound to port 443 needs an inspected entry (network_rules.rs).
    fn parent() -> NetworkPolicy {
        policy_of(
            vec![
                text("*.github.com:8443"),
                rule("api.example.com:443", &["GET", "HEAD"], &["/v1/"]),
                text("10.0.0.0/8:*"),
            ],
            &[
                ("github", &["*.github.com:8443"]),
                ("other", &["10.1.2.3:80"]),
            ],
        )
    }

    #[test]
    fn a_scope_may_drop_destinations_methods_paths_and_secrets() {
        let requested = policy_of(
            vec![
                text("api.github.com:8443"),
                rule("api.example.com:443", &["GET"], &["/v1/users/"]),
                text("10.1.0.0/16:5432"),
            ],
            &[],
        );
        let narrowed = narrow_allowlist(&parent(), &requested, &SecretsRequest::Reachable).unwrap();
        assert_eq!(narrowed.rules.allow, requested.rules.allow);
        // github still reaches api.github.com; "other" (10.1.2.3:80) is no longer reachable.
        assert_eq!(narrowed.rules.secrets.len(), 1);
        assert_eq!(narrowed.rules.secrets[0].name, "github");
        assert_eq!(
            narrowed.rules.secrets[0].destinations,
            ["api.github.com:8443"]
        );
        let none = narrow_allowlist(&parent(), &requested, &SecretsRequest::Named(vec![])).unwrap();
        assert!(none.rules.secrets.is_empty());
    }

    #[test]
    fn a_scope_cannot_add_a_destination_method_path_or_secret() {
        let refused = |requested: NetworkPolicy, secrets: SecretsRequest| {
            let error = narrow_allowlist(&parent(), &requested, &secrets).unwrap_err();
            assert_eq!(error, widen(), "{error}");
            assert_eq!(error.kind(), crate::error::Kind::Capability);
            assert_eq!(error.message(), "sandbox scope cannot widen network access");
        };
        refused(
            policy_of(vec![text("github.com:8443")], &[]),
            SecretsRequest::Reachable,
        );
        refused(
            policy_of(vec![text("api.github.com:*")], &[]),
            SecretsRequest::Reachable,
        );
        refused(
            policy_of(vec![text("api.example.com:443")], &[]),
            SecretsRequest::Reachable,
        );
        refused(
            policy_of(vec![rule("api.example.com:443", &["POST"], &["/v1/"])], &[]),
            SecretsRequest::Reachable,
        );
        refused(
            policy_of(vec![rule("api.example.com:443", &["GET"], &["/v2/"])], &[]),
            SecretsRequest::Reachable,
        );
        refused(
            policy_of(vec![text("11.0.0.0/8:1")], &[]),
            SecretsRequest::Reachable,
        );
        let some = policy_of(vec![text("api.github.com:8443")], &[]);
        refused(
            some.clone(),
            SecretsRequest::Named(vec![("aws".into(), None)]),
        );
        refused(
            some.clone(),
            SecretsRequest::Named(vec![(
                "github".into(),
                Some(vec!["gist.example.com:443".into()]),
            )]),
        );
        let error = narrow_allowlist(
            &parent(),
            &some,
            &SecretsRequest::Named(vec![("other".into(), None)]),
        )
        .unwrap_err();
        assert!(error
            .message()
            .contains("no destination in the scope's allow list"));
    }

    #[test]
    fn a_narrowed_request_needs_an_allowlist_parent() {
        assert!(narrow_network(None, NetworkRequest::Narrowed, &[NetworkMode::Allowlist]).is_err());
        assert!(narrow_network(
            Some(NetworkMode::Inherit),
            NetworkRequest::Narrowed,
            &[NetworkMode::Allowlist]
        )
        .is_err());
        let (choice, mode) = narrow_network(
            Some(NetworkMode::Allowlist),
            NetworkRequest::Narrowed,
            &[NetworkMode::Allowlist],
        )
        .unwrap();
        assert_eq!(
            (choice, mode),
            (NetworkChoice::Requested, Some(NetworkMode::Allowlist))
        );
    }
}
