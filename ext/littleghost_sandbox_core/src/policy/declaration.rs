//! A sandbox declaration written as JSON (docs/spec.md §8.1's keys, the
//! same declaration a Ruby `config.sandbox` Hash makes): what a process
//! with no Ruby (littleghost-sandboxd's `--policy FILE`) is configured by.
//! Every value goes through the validation a Ruby declaration goes
//! through ([`GrantTable::parse`], [`NetworkPolicy::new`], [`Limits::parse`]),
//! so a bad file fails with the same PolicyError a bad Hash does; a JSON
//! value of the wrong shape is named by its key.

use serde_json::{Map, Value};

use super::{
    AllowRequest, EnvironmentPolicy, GrantTable, InspectRequest, Limits, NetworkPolicy,
    NetworkRequest, Policy, ProtectList, RootFilesystem, RuleRequest, SecretRequest,
};
use super::{Given, LimitValue};
use crate::error::{policy, Result};
use crate::limits::plan::Requested;

/// The keys a JSON declaration may have.
pub const DECLARATION_KEYS: [&str; 9] = [
    "provider",
    "files",
    "runtime_paths",
    "root_filesystem",
    "environment",
    "network",
    "protect",
    "limits",
    "process_limits",
];
pub use super::process_limits::PROCESS_LIMIT_KEYS;

/// A declaration, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// `provider`; `native` when absent.
    pub provider: String,
    pub policy: Policy,
    /// The broker's and the output's bounds (`limits`).
    pub limits: Limits,
    /// The defaults of every launch (`process_limits`).
    pub process_limits: Requested,
    /// `network`'s `allow_private_destinations`: the built-in gateway's
    /// option (G.7), written beside `allow` as in a Ruby declaration.
    pub allow_private_destinations: bool,
}

impl Declaration {
    /// The declaration `text` (a JSON object) over `base`: a key it does not
    /// give keeps `base`'s value. A PolicyError names the first bad key or value.
    pub fn from_json(text: &str, base: Policy) -> Result<Declaration> {
        let value: Value = serde_json::from_str(text)
            .map_err(|error| policy(format!("sandbox declaration is not valid JSON: {error}")))?;
        let Value::Object(object) = value else {
            return Err(policy(format!(
                "sandbox declaration must be a JSON object, got {}",
                kind(&value)
            )));
        };
        Declaration::from_object(&object, base)
    }

    fn from_object(object: &Map<String, Value>, base: Policy) -> Result<Declaration> {
        let unknown: Vec<&str> = object
            .keys()
            .map(String::as_str)
            .filter(|key| !DECLARATION_KEYS.contains(key))
            .collect();
        if !unknown.is_empty() {
            return Err(policy(format!(
                "unknown sandbox declaration keys: {} (known: {})",
                unknown.join(", "),
                DECLARATION_KEYS.join(", ")
            )));
        }
        let mut policy_value = base;
        let mut allow_private_destinations = false;
        if let Some(files) = object.get("files") {
            policy_value.files = grant_table(files, "files")?;
        }
        if let Some(paths) = object.get("runtime_paths") {
            policy_value.runtime_paths = grant_table(paths, "runtime_paths")?;
        }
        if let Some(root) = object.get("root_filesystem") {
            policy_value.root_filesystem = RootFilesystem::parse(&given(root))?;
        }
        if let Some(environment) = object.get("environment") {
            policy_value.environment = environment_policy(environment)?;
        }
        if let Some(network) = object.get("network") {
            allow_private_destinations = private_destinations(network)?;
            policy_value.network = network_policy(network)?;
        }
        if let Some(protect) = object.get("protect") {
            let Value::Array(items) = protect else {
                return Err(policy(
                    "sandbox protect must be an array of relative paths (protect: [] protects nothing)",
                ));
            };
            policy_value.protect = ProtectList::parse(items.iter().map(given))?;
        }
        let provider = match object.get("provider") {
            None => "native".to_string(),
            Some(Value::String(name)) => name.clone(),
            Some(other) => {
                return Err(policy(format!(
                    "sandbox provider must be a string, got {}",
                    kind(other)
                )))
            }
        };
        Ok(Declaration {
            provider,
            policy: policy_value,
            limits: match object.get("limits") {
                Some(value) => limits(value)?,
                None => Limits::default(),
            },
            process_limits: match object.get("process_limits") {
                Some(value) => process_limits(value)?,
                None => Requested::default(),
            },
            allow_private_destinations,
        })
    }
}

/// A JSON value as a name-ish [`Given`]: a string names itself.
fn given(value: &Value) -> Given<'static> {
    match value {
        Value::String(text) => {
            let shown = format!("{text:?}");
            Given::new(Some(text.clone()), move || shown.clone())
        }
        other => Given::other(&other.to_string()),
    }
}

/// How a JSON value's type reads in a message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object<'v>(value: &'v Value, label: &str) -> Result<&'v Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(policy(format!(
            "sandbox {label} must be an object, got {}",
            kind(other)
        ))),
    }
}

fn strings(value: Option<&Value>, label: &str) -> Result<Vec<String>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.clone()),
                other => Err(policy(format!(
                    "sandbox {label} entries must be strings, got {}",
                    kind(other)
                ))),
            })
            .collect(),
        Some(other) => Err(policy(format!(
            "sandbox {label} must be an array of strings, got {}",
            kind(other)
        ))),
    }
}

fn grant_table(value: &Value, label: &str) -> Result<GrantTable> {
    let map = match value {
        Value::Object(map) => map,
        _ => return Err(policy(format!("sandbox {label} must be an object"))),
    };
    GrantTable::parse(
        label,
        map.iter()
            .map(|(name, access)| (given(&Value::String(name.clone())), given(access))),
    )
}

/// `{"NAME": "value"}`, or `{"set": {...}, "inherit": true}`.
fn environment_policy(value: &Value) -> Result<EnvironmentPolicy> {
    let map = object(value, "environment")?;
    let nested = map.contains_key("set") || map.contains_key("inherit");
    let empty = Map::new();
    let (values, inherit) = if nested {
        let inherit = match map.get("inherit") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(other) => {
                return Err(policy(format!(
                    "sandbox environment inherit must be true or false, got {}",
                    kind(other)
                )))
            }
        };
        let set = match map.get("set") {
            Some(set) => object(set, "environment set")?,
            None => &empty,
        };
        (set, inherit)
    } else {
        (map, false)
    };
    let mut pairs = Vec::with_capacity(values.len());
    for (name, value) in values {
        let Value::String(text) = value else {
            return Err(policy(format!(
                "sandbox environment value of {name} must be a string, got {}",
                kind(value)
            )));
        };
        pairs.push((name.as_bytes().to_vec(), text.as_bytes().to_vec()));
    }
    Ok(EnvironmentPolicy::new(inherit, pairs))
}

/// `"none"`, `"inherit"`, or `{"mode": "allowlist", "allow": [...], ...}`.
fn network_policy(value: &Value) -> Result<Option<NetworkPolicy>> {
    let map = match value {
        Value::Null => return Ok(None),
        Value::String(_) => {
            return NetworkPolicy::new(NetworkRequest::mode(given(value))).map(Some)
        }
        Value::Object(map) => map,
        other => {
            return Err(policy(format!(
                "sandbox network must be \"none\", \"inherit\" or an object, got {}",
                kind(other)
            )))
        }
    };
    const KEYS: [&str; 8] = [
        "mode",
        "allow",
        "allow_private_destinations",
        "secrets",
        "inspection",
        "resolve",
        "forward_headers",
        "mutation_headers",
    ];
    if let Some(key) = map.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(policy(format!(
            "unknown sandbox network key: {key} (known: {})",
            KEYS.join(", ")
        )));
    }
    // `allow` without `mode` is an allowlist, as in a Ruby declaration.
    let implied = Value::String("allowlist".into());
    let absent = if map.contains_key("allow") {
        &implied
    } else {
        &Value::Null
    };
    let mode = given(map.get("mode").unwrap_or(absent));
    let mut request = NetworkRequest::mode(mode);
    request.inspection = map.get("inspection").map(given);
    request.forward_headers = strings(map.get("forward_headers"), "network forward_headers")?;
    request.mutation_headers = strings(map.get("mutation_headers"), "network mutation_headers")?;
    if let Some(allow) = map.get("allow") {
        let Value::Array(entries) = allow else {
            return Err(policy(format!(
                "sandbox network allow must be an array, got {}",
                kind(allow)
            )));
        };
        request.allow = entries.iter().map(allow_request).collect::<Result<_>>()?;
    }
    if let Some(secrets) = map.get("secrets") {
        request.secrets = object(secrets, "network secrets")?
            .iter()
            .map(|(name, value)| secret_request(name, value))
            .collect::<Result<_>>()?;
    }
    if let Some(resolve) = map.get("resolve") {
        for (name, address) in object(resolve, "network resolve")? {
            let Value::String(address) = address else {
                return Err(policy(format!(
                    "sandbox network resolve address of {name} must be a string"
                )));
            };
            request.resolve.push((name.clone(), address.clone()));
        }
    }
    NetworkPolicy::new(request).map(Some)
}

/// `allow_private_destinations` of a `network` object: true or false (absent: false).
fn private_destinations(network: &Value) -> Result<bool> {
    match network.get("allow_private_destinations") {
        None | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(other) => Err(policy(format!(
            "sandbox network allow_private_destinations must be true or false, got {}",
            kind(other)
        ))),
    }
}

fn allow_request(entry: &Value) -> Result<AllowRequest> {
    match entry {
        Value::String(text) => Ok(AllowRequest::Text(text.clone())),
        Value::Object(map) => {
            let mut rule = RuleRequest {
                keys: map.keys().cloned().collect(),
                ..RuleRequest::default()
            };
            if let Some(destination) = map.get("destination") {
                rule.destination = Some(match destination {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
            }
            rule.inspect = map.get("inspect").map(|value| match value {
                Value::Bool(flag) => InspectRequest::Flag(*flag),
                other => InspectRequest::Other {
                    shown: other.to_string(),
                },
            });
            rule.methods = strings(map.get("methods"), "network allow methods")?;
            rule.paths = strings(map.get("paths"), "network allow paths")?;
            Ok(AllowRequest::Rule(rule))
        }
        other => Err(policy(format!(
            "sandbox network allow entries must be strings or objects, got {}",
            kind(other)
        ))),
    }
}

fn secret_request(name: &str, value: &Value) -> Result<SecretRequest> {
    let mut request = SecretRequest {
        name: name.to_string(),
        ..SecretRequest::default()
    };
    if let Value::Object(map) = value {
        request.keys = Some(map.keys().cloned().collect());
        request.value = match map.get("value") {
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        };
        request.destinations = strings(map.get("destinations"), "network secret destinations")?;
    }
    Ok(request)
}

fn limit_value(value: &Value) -> LimitValue {
    match value {
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(n), _) => LimitValue::Integer(n),
            (None, Some(_)) => LimitValue::TooLarge,
            _ => LimitValue::NotInteger,
        },
        _ => LimitValue::NotInteger,
    }
}

fn limits(value: &Value) -> Result<Limits> {
    let map = object(value, "limits")?;
    let given_pairs = map
        .iter()
        .map(|(name, value)| (given(&Value::String(name.clone())), value))
        .collect();
    Limits::parse(given_pairs, |value| {
        Ok::<_, std::convert::Infallible>(limit_value(value))
    })
    .unwrap_or_else(|never| match never {})
}

fn process_limits(value: &Value) -> Result<Requested> {
    let map = object(value, "process_limits")?;
    if let Some(key) = map
        .keys()
        .find(|key| !PROCESS_LIMIT_KEYS.contains(&key.as_str()))
    {
        return Err(policy(format!(
            "unknown sandbox process_limits key: {key} (known: {})",
            PROCESS_LIMIT_KEYS.join(", ")
        )));
    }
    let count = |name: &str| -> Result<Option<u64>> {
        match map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => match value.as_u64() {
                Some(n) if n > 0 && n <= i64::MAX as u64 => Ok(Some(n)),
                _ => Err(policy(format!(
                    "sandbox process_limits {name} must be a positive integer, got {value}"
                ))),
            },
        }
    };
    Ok(Requested {
        memory_bytes: count("memory_bytes")?,
        tasks: count("tasks")?,
        cpu_seconds: count("cpu_seconds")?,
        own_tree_if_possible: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::grants::Access;
    use crate::policy::NetworkMode;

    fn parse(text: &str) -> Result<Declaration> {
        Declaration::from_json(text, Policy::default())
    }

    fn message(text: &str) -> String {
        match parse(text).unwrap_err() {
            Error::Policy(message) => message,
            other => other.to_string(),
        }
    }

    #[test]
    fn allow_private_destinations_stands_beside_allow() {
        let text =
            r#"{"network": {"allow": ["127.0.0.1:80"], "allow_private_destinations": true}}"#;
        assert!(parse(text).unwrap().allow_private_destinations);
        assert!(
            !parse(r#"{"network": {"allow": ["a.test:80"]}}"#)
                .unwrap()
                .allow_private_destinations
        );
        let text = r#"{"network": {"allow": ["a.test:80"], "allow_private_destinations": "yes"}}"#;
        assert!(message(text).contains("allow_private_destinations must be true or false"));
    }

    #[test]
    fn an_empty_object_keeps_the_base() {
        let declaration = parse("{}").unwrap();
        assert_eq!(declaration.policy, Policy::default());
        assert_eq!(declaration.provider, "native");
        assert_eq!(declaration.process_limits, Requested::default());
    }

    #[test]
    fn every_key_reaches_the_policy() {
        let declaration = parse(
            r#"{"provider": "native", "files": {"root": "read_write"},
                "runtime_paths": {"home": "read_only"}, "root_filesystem": "read_only",
                "environment": {"set": {"A": "1"}, "inherit": true},
                "network": {"mode": "allowlist", "allow": [{"destination": "example.com:443", "inspect": true}],
                            "secrets": {"TOKEN": {"value": "s3cret", "destinations": ["example.com:443"]}}},
                "protect": [".git", "secrets"], "limits": {"read_bytes": 10},
                "process_limits": {"memory_bytes": 1048576, "tasks": 8}}"#,
        )
        .unwrap();
        let policy = declaration.policy;
        assert_eq!(policy.files.get("root"), Some(Access::ReadWrite));
        assert_eq!(policy.runtime_paths.get("home"), Some(Access::ReadOnly));
        assert_eq!(policy.root_filesystem, RootFilesystem::ReadOnly);
        assert!(policy.environment.inherit());
        let network = policy.network.unwrap();
        assert_eq!(network.mode, NetworkMode::Allowlist);
        assert_eq!(network.destinations(), ["example.com:443"]);
        assert_eq!(network.rules.secrets.len(), 1);
        assert_eq!(policy.protect.entries().len(), 2);
        assert_eq!(declaration.limits.read_bytes, 10);
        assert_eq!(declaration.process_limits.memory_bytes, Some(1 << 20));
        assert_eq!(declaration.process_limits.tasks, Some(8));
    }

    #[test]
    fn a_plain_network_mode_is_a_string() {
        let network = parse(r#"{"network": "inherit"}"#).unwrap().policy.network;
        assert_eq!(network.unwrap().mode, NetworkMode::Inherit);
        assert!(parse(r#"{"network": null}"#)
            .unwrap()
            .policy
            .network
            .is_none());
    }

    #[test]
    fn bad_input_is_named() {
        assert!(message("[1]").contains("must be a JSON object, got an array"));
        assert!(message("{").contains("not valid JSON"));
        assert!(message(r#"{"file": {}}"#).contains("unknown sandbox declaration keys: file"));
        assert!(message(r#"{"files": {"root": "rw"}}"#).contains("must be read_only or read_write"));
        assert!(message(r#"{"files": []}"#).contains("files must be an object"));
        assert!(message(r#"{"root_filesystem": 1}"#).contains("root_filesystem must be"));
        assert!(message(r#"{"network": "open"}"#).contains("network"));
        assert!(
            message(r#"{"network": {"mode": "allowlist", "allowed": []}}"#)
                .contains("unknown sandbox network key: allowed")
        );
        assert!(message(r#"{"process_limits": {"memory": 1}}"#)
            .contains("unknown sandbox process_limits key: memory"));
        assert!(message(r#"{"process_limits": {"tasks": 0}}"#).contains("positive integer"));
        assert!(message(r#"{"limits": {"read_bytes": "x"}}"#).contains("must be an integer"));
        assert!(message(r#"{"protect": ".git"}"#).contains("protect must be an array"));
        assert!(message(r#"{"environment": {"A": 1}}"#).contains("environment value of A"));
    }
}
