//! The Hash a user writes for `network:`, read the way a user means it:
//! `{allow: [...]}` without `mode:` is an allowlist, and
//! `allow_private_destinations:` may stand beside `allow:` although it is an
//! option of the built-in gateway. Any other key is refused with the list of
//! the keys that exist, so a typo (`allowlist:`) is never silently ignored.

use super::declared::{present, Declared};
use super::network_requests::{allow_requests, resolve_requests, secret_requests, texts};
use super::{Given, NetworkMode, NetworkPolicy, NetworkRequest, NetworkRules};
use crate::error::{argument, policy, Result};

/// Every key a `network:` Hash (and `NetworkPolicy.new`) takes, in the order
/// messages list them.
pub const KEYS: [&str; 11] = [
    "mode",
    "allow",
    "allow_private_destinations",
    "secrets",
    "upstream_ca",
    "resolve",
    "inspection",
    "gateway",
    "authorizer",
    "forward_headers",
    "mutation_headers",
];

/// The option of the built-in gateway that users write beside `allow:`.
pub const PRIVATE_DESTINATIONS: &str = "allow_private_destinations";

/// What the declared `gateway:` is, as far as the shorthand cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclaredGateway {
    /// No `gateway:` (or nil): the built-in one.
    Absent,
    /// A provider name (`:builtin`) or a Hash of provider options.
    Options,
    /// An object or callable: it takes its own options.
    Object,
}

/// How to complete a declaration before `NetworkPolicy::new` validates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// `mode:` to add because the Hash gave `allow:` without one.
    pub implied_mode: Option<NetworkMode>,
    /// Move `allow_private_destinations:` into the gateway's options.
    pub private_destinations_to_gateway: bool,
}

/// Checks the keys of a `network:` Hash and says how to complete it.
pub fn complete(keys: &[String], gateway: DeclaredGateway) -> Result<Completion> {
    let unknown: Vec<&String> = keys
        .iter()
        .filter(|key| !KEYS.contains(&key.as_str()))
        .collect();
    if !unknown.is_empty() {
        return Err(super::Error::UnknownKeys {
            what: "network policy".to_owned(),
            unknown: unknown.into_iter().cloned().collect(),
            valid: KEYS.to_vec(),
        }
        .into());
    }
    let has = |name: &str| keys.iter().any(|key| key == name);
    // Keys that only an allowlist takes, given without `allow:` or `mode:`:
    // say which key is missing rather than Ruby's "missing keyword: :mode".
    if !has("mode") && !has("allow") {
        let given: Vec<String> = keys.iter().map(|key| format!("{key}:")).collect();
        let given = if given.is_empty() {
            "policy".to_owned()
        } else {
            given.join(", ")
        };
        return Err(argument(format!(
            "network {given} needs allow: (the \"host:port\" destinations the program may reach), or mode:"
        )));
    }
    let private = has(PRIVATE_DESTINATIONS);
    if private && gateway == DeclaredGateway::Object {
        return Err(argument(
            "network allow_private_destinations: is an option of the built-in gateway; \
             give it to the gateway object you passed as gateway:",
        ));
    }
    Ok(Completion {
        implied_mode: (!has("mode") && has("allow")).then_some(NetworkMode::Allowlist),
        private_destinations_to_gateway: private,
    })
}

/// Fail closed: HTTP rules, inspection, secrets and `upstream_ca:` are
/// enforced by the built-in gateway only, so a declaration naming another
/// gateway (an object, or the `:external` provider) cannot carry them.
pub fn check_enforced(rules: &NetworkRules, builtin: bool) -> Result<()> {
    if builtin || !rules.needs_builtin_gateway() {
        return Ok(());
    }
    Err(policy(
        "network HTTP rules (inspect:, methods:, paths:), secrets: and upstream_ca: are enforced by the built-in gateway only; drop them or use the built-in gateway",
    ))
}

/// The gateway a declared provider name gives (G.3, G.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// The gem's own enforcing gateway (`builtin`; `envoy` is an older name of it).
    Builtin,
    /// A proxy the application runs itself (`external`).
    External,
}

impl Provider {
    /// The provider `name` gives (absent: the built-in one). The external
    /// gateway enforces destinations only, so `rules` that need more are
    /// refused for it ([`check_enforced`]); an unknown name is a PolicyError.
    pub fn named(name: Option<&Given<'_>>, rules: &NetworkRules) -> Result<Provider> {
        let provider = match name.map(|given| given.name()) {
            None | Some(Some("builtin" | "envoy")) => Provider::Builtin,
            Some(Some("external")) => Provider::External,
            Some(_) => {
                let shown = name.map(Given::shown).unwrap_or_default();
                return Err(super::Error::GatewayProvider { shown }.into());
            }
        };
        if provider == Provider::External {
            check_enforced(rules, false)?;
        }
        Ok(provider)
    }
}

/// A `network:` declaration read out of its keyword table and validated:
/// the policy, and the gateway and authorizer values only the caller can
/// hold (the core learns whether they were given).
#[derive(Debug)]
pub struct NetworkDeclaration<D> {
    pub policy: NetworkPolicy,
    pub gateway: GatewayValue<D>,
    /// The authorizer, unless absent or nothing.
    pub authorizer: Option<D>,
}

/// The `gateway:` a declaration keeps.
#[derive(Debug)]
pub enum GatewayValue<D> {
    /// As declared (`None`: absent or nothing, the built-in one).
    Declared(Option<D>),
    /// The declared provider options (a table, a provider name, or `None`),
    /// with `allow_private_destinations` given beside `allow:` moved in.
    WithPrivateDestinations { options: Option<D>, allow: D },
}

/// Reads a `network:` declaration (`NetworkPolicy.new`'s keywords) as the
/// user means it ([`complete`]), then validates it ([`NetworkPolicy::new`],
/// [`check_enforced`]), converting each value in the order 7.2 checks them.
pub fn declared<D: Declared>(keywords: &D) -> std::result::Result<NetworkDeclaration<D>, D::Error> {
    let mut values: Vec<(String, D)> = Vec::new();
    for (key, value) in keywords.pairs()?.unwrap_or_default() {
        let name = match key.keyword() {
            Some(name) => name,
            None => key.shown()?,
        };
        values.push((name, value));
    }
    let names: Vec<String> = values.iter().map(|(name, _)| name.clone()).collect();
    let mut take = |name: &str| {
        let index = values.iter().position(|(key, _)| key == name)?;
        Some(values.remove(index).1)
    };
    let gateway = present(take("gateway"));
    let kind = match &gateway {
        None => DeclaredGateway::Absent,
        Some(value) if value.keyword().is_some() || value.pairs()?.is_some() => {
            DeclaredGateway::Options
        }
        Some(_) => DeclaredGateway::Object,
    };
    complete(&names, kind).map_err(|error| keywords.misshapen(error))?;
    // `allow:` without `mode:` is an allowlist (complete refused neither).
    let mode = match take("mode") {
        Some(mode) => mode.given()?,
        None => Given::named(NetworkMode::Allowlist.name()),
    };
    let inspection = take("inspection").map(|value| value.given()).transpose()?;
    let allow = allow_requests(present(take("allow")).as_ref())?;
    let secrets = secret_requests(present(take("secrets")).as_ref())?;
    let upstream_ca = present(take("upstream_ca"))
        .map(|path| path.expanded_path("network upstream_ca"))
        .transpose()?;
    let resolve = resolve_requests(present(take("resolve")).as_ref())?;
    let forward_headers = texts(present(take("forward_headers")).as_ref())?;
    let mutation_headers = texts(present(take("mutation_headers")).as_ref())?;
    let authorizer = present(take("authorizer"));
    let private_destinations = take(PRIVATE_DESTINATIONS);
    let request = NetworkRequest {
        mode,
        inspection,
        allow,
        secrets,
        upstream_ca,
        resolve,
        forward_headers,
        mutation_headers,
        // Private destinations make the built-in gateway's options a gateway.
        gateway: gateway.is_some() || private_destinations.is_some(),
        authorizer: authorizer.is_some(),
    };
    let policy = NetworkPolicy::new(request).map_err(|error| keywords.misshapen(error))?;
    let builtin = kind != DeclaredGateway::Object;
    check_enforced(&policy.rules, builtin).map_err(|error| keywords.misshapen(error))?;
    let gateway = match private_destinations {
        Some(allow) => GatewayValue::WithPrivateDestinations {
            options: gateway,
            allow,
        },
        None => GatewayValue::Declared(gateway),
    };
    Ok(NetworkDeclaration {
        policy,
        gateway,
        authorizer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_provider_name_chooses_the_gateway() {
        let rules = NetworkRules::default();
        let named = |name: &str| Provider::named(Some(&Given::symbol(name)), &rules);
        assert_eq!(Provider::named(None, &rules).unwrap(), Provider::Builtin);
        assert_eq!(named("builtin").unwrap(), Provider::Builtin);
        assert_eq!(named("envoy").unwrap(), Provider::Builtin);
        assert_eq!(named("external").unwrap(), Provider::External);
        let unknown = named("squid").unwrap_err();
        assert_eq!(unknown.kind(), crate::error::Kind::Policy);
        assert_eq!(
            unknown.to_string(),
            "unknown network gateway provider :squid"
        );
        let no_name = Provider::named(Some(&Given::other("3")), &rules).unwrap_err();
        assert_eq!(no_name.to_string(), "unknown network gateway provider 3");
    }

    #[test]
    fn the_external_gateway_refuses_rules_only_the_built_in_one_enforces() {
        let allow = [crate::policy::AllowRequest::Text("a.test:443".into())];
        let mut rules = NetworkRules::new(&allow, &[], None).unwrap();
        let external = Some(&Given::symbol("external"));
        assert_eq!(
            Provider::named(external, &rules).unwrap(),
            Provider::External
        );
        rules.allow[0].inspect = true;
        let refused = Provider::named(external, &rules).unwrap_err();
        assert!(refused
            .to_string()
            .contains("enforced by the built-in gateway only"));
        assert_eq!(Provider::named(None, &rules).unwrap(), Provider::Builtin);
    }

    #[test]
    fn allow_without_mode_means_allowlist() {
        let completion = complete(&keys(&["allow"]), DeclaredGateway::Absent).unwrap();
        assert_eq!(completion.implied_mode, Some(NetworkMode::Allowlist));
        let explicit = complete(&keys(&["mode", "allow"]), DeclaredGateway::Absent).unwrap();
        assert_eq!(explicit.implied_mode, None);
        let none = complete(&keys(&["mode"]), DeclaredGateway::Absent).unwrap();
        assert_eq!(none.implied_mode, None);
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_valid_keys() {
        let error = complete(&keys(&["allowlist", "allow"]), DeclaredGateway::Absent).unwrap_err();
        assert_eq!(error.kind(), crate::error::Kind::Argument);
        assert!(error
            .to_string()
            .starts_with("unknown network policy key: allowlist (valid keys: mode, allow,"));
        let text = error.worded(&|name| format!(":{name}"));
        assert!(
            text.contains("unknown network policy key: :allowlist"),
            "{text}"
        );
        assert!(
            text.contains(":mode, :allow, :allow_private_destinations"),
            "{text}"
        );
        let two = complete(&keys(&["a", "b"]), DeclaredGateway::Absent).unwrap_err();
        assert!(two.to_string().contains("keys: a, b"), "{two}");
    }

    #[test]
    fn keys_without_allow_or_mode_name_the_missing_allow() {
        let error = complete(&keys(&["secrets"]), DeclaredGateway::Absent).unwrap_err();
        assert!(matches!(error, crate::Error::Argument(_)));
        assert_eq!(
            error.to_string(),
            "network secrets: needs allow: (the \"host:port\" destinations the program may reach), or mode:"
        );
        assert!(complete(&keys(&["mode", "secrets"]), DeclaredGateway::Absent).is_ok());
    }

    #[test]
    fn private_destinations_go_to_the_built_in_gateway_only() {
        let keys = keys(&["allow", PRIVATE_DESTINATIONS]);
        assert!(
            complete(&keys, DeclaredGateway::Absent)
                .unwrap()
                .private_destinations_to_gateway
        );
        assert!(
            complete(&keys, DeclaredGateway::Options)
                .unwrap()
                .private_destinations_to_gateway
        );
        assert!(complete(&keys, DeclaredGateway::Object).is_err());
    }

    #[test]
    fn a_declaration_reads_as_the_user_means_it() {
        use crate::policy::network_requests::tests::Json;
        use serde_json::json;
        let allow = Json(json!({":allow": ["a.test:443"], ":authorizer": null}));
        let read = declared(&allow).unwrap();
        assert_eq!(read.policy.mode, NetworkMode::Allowlist);
        assert!(matches!(read.gateway, GatewayValue::Declared(None)));
        assert!(read.authorizer.is_none() && !read.policy.authorizer);
        let private = Json(json!({
            ":allow": ["a.test:443"],
            ":allow_private_destinations": true,
            ":gateway": ":builtin"
        }));
        let read = declared(&private).unwrap();
        let GatewayValue::WithPrivateDestinations { options, allow } = read.gateway else {
            panic!("{:?}", read.gateway)
        };
        assert_eq!(
            (options.unwrap().0, allow.0),
            (json!(":builtin"), json!(true))
        );
        assert!(read.policy.gateway);
        // The moved option is a gateway, which mode none does not take.
        let none = Json(json!({":mode": ":none", ":allow_private_destinations": true}));
        assert_eq!(
            declared(&none).unwrap_err().kind(),
            crate::error::Kind::Policy
        );
        let unknown = Json(json!({":allowlist": []})).0;
        let error = declared(&Json(unknown)).unwrap_err();
        assert_eq!(error.kind(), crate::error::Kind::Argument);
        let worded = error.worded(&|name| format!(":{name}"));
        assert!(worded.contains("key: :allowlist"), "{worded}");
    }

    #[test]
    fn a_gateway_object_cannot_carry_rules_only_the_built_in_one_enforces() {
        use crate::policy::network_requests::tests::Json;
        use serde_json::json;
        let object = Json(json!({
            ":allow": [{"destination": "a.test:443", "methods": ["GET"]}],
            ":gateway": 42
        }));
        let error = declared(&object).unwrap_err();
        assert!(
            error.to_string().contains("built-in gateway only"),
            "{error}"
        );
    }
}
