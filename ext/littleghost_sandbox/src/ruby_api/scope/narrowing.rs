//! `Scope.new` (SC.1–SC.10): parses the keywords into the core's
//! [`ScopeRequest`], reads the parent's state in Rust (a parent scope's
//! struct, or the sandbox's enforced policy and capabilities) and hands both
//! to [`core_scope::narrow`], which holds every narrowing rule.

use littleghost_sandbox_core::grants::Grant;
use littleghost_sandbox_core::policy::{self as core_policy, Capabilities as CoreCapabilities};
use littleghost_sandbox_core::scope::{
    self as core_scope, CapabilityRequest, NetworkAsk, NetworkChoice, NetworkMode, NetworkRequest,
    Parent, Plain, Request, ScopeRequest, SecretsRequest,
};
use magnus::{prelude::*, scan_args::get_kwargs, RArray, Ruby, TypedData, Value};
use magnus::{value::Opaque, Error, Symbol};

use super::{ScopeState, CAPABILITIES, NETWORK};
use crate::helpers::args::keywords_only;
use crate::helpers::errors::{self, core_result};
use crate::helpers::value_object::{self as vo, ValueObject};
use crate::ruby_api::mount::{grant_to_ruby, parse_access};
use crate::ruby_api::network_policy::{self, NetworkPolicy};
use crate::ruby_api::sandbox::state as sandbox;
use crate::ruby_api::{capabilities, limits, policy, workspace};

/// The keywords of `Scope.new`; an explicit nil means the same as an absent keyword.
pub(super) struct Keywords {
    sandbox: Value,
    files: Option<Value>,
    runtime_paths: Option<Value>,
    capabilities: Option<Value>,
    network: Option<Value>,
    parent_scope: Option<Value>,
}

impl Keywords {
    /// A scope of `sandbox` (or of `parent_scope`) asking for `[files,
    /// runtime_paths, capabilities, network]`.
    pub(super) fn new(
        sandbox: Value,
        parent_scope: Option<Value>,
        [files, runtime_paths, capabilities, network]: [Option<Value>; 4],
    ) -> Keywords {
        let present = |value: Option<Value>| value.filter(|v| !v.is_nil());
        Keywords {
            sandbox,
            files: present(files),
            runtime_paths: present(runtime_paths),
            capabilities: present(capabilities),
            network, // nil, true and false differ only in how they are coerced
            parent_scope: present(parent_scope),
        }
    }
}

/// Scope.new(sandbox:, files: nil, runtime_paths: nil, capabilities: nil, network: nil, parent_scope: nil).
pub(super) fn keywords(args: &[Value]) -> Result<Keywords, Error> {
    type Optional = (
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
    );
    let names = [
        "files",
        "runtime_paths",
        "capabilities",
        "network",
        "parent_scope",
    ];
    let parsed =
        get_kwargs::<_, (Value,), Optional, ()>(keywords_only(args)?, &["sandbox"], &names)?;
    let (files, runtime_paths, capabilities, network, parent_scope) = parsed.optional;
    let narrowing = [files, runtime_paths, capabilities, network];
    Ok(Keywords::new(parsed.required.0, parent_scope, narrowing))
}

/// What the parent has, as core values plus the Ruby objects a scope hands on.
struct ParentState {
    grants: Vec<Grant>,
    deny_markers: Vec<Grant>,
    capabilities: CoreCapabilities,
    capabilities_value: Value,
    network: Value,
}

/// SC.2: a parent scope's own state, or the sandbox's enforced policy and capabilities.
fn parent_state(ruby: &Ruby, keywords: &Keywords, workspace: Value) -> Result<ParentState, Error> {
    if let Some(parent) = keywords.parent_scope {
        let parent = super::state(ruby, parent)?;
        return Ok(ParentState {
            grants: parent.scoped.grants.clone(),
            deny_markers: parent.scoped.deny_markers.clone(),
            capabilities: parent.scoped.capabilities.clone(),
            capabilities_value: ruby.get_inner(parent.values[CAPABILITIES]),
            network: ruby.get_inner(parent.values[NETWORK]),
        });
    }
    let policy_value = sandbox::enforced_policy(ruby, keywords.sandbox)?;
    let policy = policy::borrow(policy_value)
        .ok_or_else(|| errors::type_error(ruby, "sandbox effective_policy must be a Policy"))?;
    let grants = policy.core().process_grants(
        |name| workspace::directory(ruby, workspace, name),
        |error| errors::from_core(ruby, error),
    )?;
    let capabilities_value = sandbox::enforced_capabilities(ruby, keywords.sandbox)?;
    let capabilities = capabilities::borrow(capabilities_value)
        .ok_or_else(|| errors::type_error(ruby, "sandbox capabilities must be a Capabilities"))?;
    Ok(ParentState {
        grants,
        deny_markers: Vec::new(),
        capabilities: capabilities.core().clone(),
        capabilities_value,
        network: policy.network_value(ruby),
    })
}

/// Builds the state of a new scope: every rule is [`core_scope::narrow`]'s.
pub(super) fn build(ruby: &Ruby, keywords: &Keywords) -> Result<ScopeState, Error> {
    if sandbox::borrow(keywords.sandbox).is_none() {
        return Err(errors::type_error(
            ruby,
            "sandbox scope needs a LittleGhost::Sandbox",
        ));
    }
    let workspace = sandbox::workspace_of(ruby, keywords.sandbox);
    let parent = parent_state(ruby, keywords, workspace)?;
    let (network, coerced) = network_request(ruby, parent.network, keywords.network)?;
    let request = ScopeRequest {
        files: requests(ruby, workspace, keywords.files, "files")?,
        runtime_paths: requests(ruby, workspace, keywords.runtime_paths, "runtime_paths")?,
        capabilities: capability_request(ruby, keywords.capabilities)?,
        network,
    };
    let limits = sandbox::limits_of(ruby, keywords.sandbox);
    let limits = limits::borrow(limits)
        .ok_or_else(|| errors::type_error(ruby, "sandbox limits must be a Limits"))?
        .fs();
    let pins = workspace::borrow(workspace).and_then(|w| w.recorded_identities());
    let anchors = workspace::anchors_of(workspace);
    let core_parent = Parent {
        grants: &parent.grants,
        deny_markers: &parent.deny_markers,
        capabilities: &parent.capabilities,
        network: mode_of(ruby, parent.network)?,
    };
    let pins = pins.as_deref().map(Vec::as_slice);
    let scoped = core_result(
        ruby,
        core_scope::narrow_anchored(core_parent, &request, limits, pins, anchors.as_deref()),
    )?;
    let network = match (scoped.network, coerced) {
        (NetworkChoice::Requested, Some(policy)) => policy,
        _ => parent.network,
    };
    let capabilities = if scoped.capabilities == parent.capabilities {
        parent.capabilities_value
    } else {
        capabilities::wrap(ruby, scoped.capabilities.clone())
    };
    let process_grants = ruby.ary_new_capa(scoped.grants.len());
    for grant in &scoped.grants {
        process_grants.push(grant_to_ruby(ruby, grant)?)?;
    }
    process_grants.freeze();
    let grants = process_grants.as_value();
    let values = [keywords.sandbox, workspace, capabilities, network, grants];
    Ok(ScopeState {
        scoped,
        values: values.map(Opaque::from),
    })
}

/// SC.3: nil keeps the category; a Hash, an Array of names or of `[name, access]` pairs replaces it.
fn requests(
    ruby: &Ruby,
    workspace: Value,
    value: Option<Value>,
    category: &str,
) -> Result<Option<Vec<Request>>, Error> {
    let Some(value) = value else { return Ok(None) };
    let request = |name: Value, access: Option<Value>| -> Result<Request, Error> {
        let name: Symbol = vo::name_to_sym(name, "sandbox scope grant name")?;
        let access = access.map(|a| parse_access(ruby, a)).transpose()?;
        let directory = workspace::directory(ruby, workspace, &name.name()?)?;
        Ok(Request::new(directory, access))
    };
    if vo::responds(value, "each_pair") {
        // `pairs` keeps a duck's pairs alive while they are converted.
        let pairs = vo::pairs(value)?;
        return pairs
            .into_iter()
            .map(|(n, a)| request(n, Some(a)))
            .collect::<Result<_, _>>()
            .map(Some);
    }
    let Some(array) = RArray::from_value(value) else {
        return Err(errors::policy_error(
            ruby,
            format!("sandbox scope {category} must be a Hash or an Array"),
        ));
    };
    let mut requests = Vec::with_capacity(array.len());
    for entry in array {
        requests.push(match RArray::from_value(entry) {
            Some(pair) if pair.len() == 2 => request(pair.entry(0)?, Some(pair.entry(1)?))?,
            Some(_) => {
                return Err(errors::policy_error(
                    ruby,
                    format!(
                        "sandbox scope {category} entries must be names or [name, access] pairs"
                    ),
                ))
            }
            None => request(entry, None)?,
        });
    }
    Ok(Some(requests))
}

/// SC.9: nil keeps the parent's; a Capabilities intersects; an Array keeps the parent's features it names.
fn capability_request(ruby: &Ruby, requested: Option<Value>) -> Result<CapabilityRequest, Error> {
    let Some(requested) = requested else {
        return Ok(CapabilityRequest::Parent);
    };
    if let Some(theirs) = capabilities::borrow(requested) {
        return Ok(CapabilityRequest::intersecting(theirs.core()));
    }
    let Some(list) = RArray::from_value(requested) else {
        return Err(errors::policy_error(
            ruby,
            "sandbox scope capabilities must be an Array or Sandbox::Capabilities",
        ));
    };
    let features = list
        .into_iter()
        .map(|feature| core_result(ruby, core_policy::normalize_feature(&vo::given(feature)?)))
        .collect::<Result<Vec<String>, Error>>()?;
    Ok(CapabilityRequest::Features(features))
}

/// The mode of a NetworkPolicy, `None` for nil; anything else is a TypeError.
fn mode_of(ruby: &Ruby, network: Value) -> Result<Option<NetworkMode>, Error> {
    if network.is_nil() {
        return Ok(None);
    }
    let network = network_policy::borrow(network)
        .ok_or_else(|| errors::type_error(ruby, "sandbox scope network must be a NetworkPolicy"))?;
    Ok(Some(network.core().mode))
}

/// SC.10: `nil`/`true` keep the parent's network, `false` means `:none`,
/// anything else is coerced to a NetworkPolicy; [`core_scope::scope_network`]
/// decides what the scope gets (the requested policy, or an allowlist
/// narrowed from the parent's, returned with the request).
fn network_request(
    ruby: &Ruby,
    parent: Value,
    requested: Option<Value>,
) -> Result<(NetworkRequest, Option<Value>), Error> {
    let value = match requested {
        None => return Ok((NetworkRequest::Parent, None)),
        Some(value) if value.is_nil() || value.is_kind_of(ruby.class_true_class()) => {
            return Ok((NetworkRequest::Parent, None))
        }
        Some(value) if value.is_kind_of(ruby.class_false_class()) => {
            ruby.to_symbol("none").as_value()
        }
        Some(value) => value,
    };
    let theirs = network_policy::borrow(parent);
    let (value, secrets) = scope_secrets(ruby, value)?;
    let only_secrets = value.is_none();
    let policy = match value {
        Some(value) => network_policy::coerce(ruby, NetworkPolicy::class(ruby), value)?,
        None => ruby.qnil().as_value(),
    };
    let ask = match (network_policy::borrow(policy), &secrets) {
        (None, Some(secrets)) if only_secrets => NetworkAsk::Secrets(secrets),
        (None, _) => {
            let message = "sandbox scope network must be a NetworkPolicy";
            return Err(errors::type_error(ruby, message));
        }
        (Some(ours), _) => NetworkAsk::Policy {
            requested: ours.core(),
            secrets: secrets.as_ref(),
            same_as_parent: secrets.is_none()
                && match theirs {
                    Some(theirs) if vo::same_class(policy, parent) => {
                        ours.same(ruby, theirs, false)?
                    }
                    _ => false,
                },
            parents_objects: parents_objects(ruby, ours, theirs)?,
        },
    };
    let parent_core = theirs.map(|theirs| theirs.core());
    let (request, narrowed) = core_result(ruby, core_scope::scope_network(parent_core, ask))?;
    match (narrowed, theirs) {
        (Some(narrowed), Some(theirs)) => {
            let policy = network_policy::wrap_like(ruby, narrowed, theirs);
            Ok((request, Some(policy)))
        }
        _ => Ok((request, Some(policy))),
    }
}

/// Whether the gateway and authorizer `ours` names are absent or `theirs`'s.
fn parents_objects(
    ruby: &Ruby,
    ours: &NetworkPolicy,
    theirs: Option<&NetworkPolicy>,
) -> Result<bool, Error> {
    let Some(theirs) = theirs else {
        return Ok(false);
    };
    let object = |mine: Value, parents: Value| -> Result<bool, Error> {
        Ok(mine.is_nil() || vo::ruby_eq(mine, parents, false)?)
    };
    Ok(
        object(ours.gateway_value(ruby), theirs.gateway_value(ruby))?
            && object(ours.authorizer_value(ruby), theirs.authorizer_value(ruby))?,
    )
}

/// Splits `secrets:` off a scope's network Hash: the rest (None when only
/// `secrets:` was given) and the secrets it names (None when absent, or
/// when it declares values: then the Hash is a whole declaration).
fn scope_secrets(
    ruby: &Ruby,
    value: Value,
) -> Result<(Option<Value>, Option<SecretsRequest>), Error> {
    if !vo::is_hash(ruby, value) {
        return Ok((Some(value), None));
    }
    let copy = vo::symbolize_keys(ruby, value)?;
    let key = ruby.to_symbol("secrets");
    let Some(given) = copy.get(key) else {
        return Ok((Some(value), None));
    };
    let request = core_scope::secrets_request(&plain(ruby, given)?).map_err(|_| {
        errors::argument_error(
            ruby,
            "sandbox scope network secrets: names the parent's secrets: an Array of names, or name => {destinations: [...]} (no value:)",
        )
    })?;
    let Some(request) = request else {
        return Ok((Some(value), None));
    };
    let _: Value = copy.delete(key)?;
    let rest = (!copy.is_empty()).then_some(copy.as_value());
    Ok((rest, Some(request)))
}

/// `value` as plain data: nil, an Array, a Hash (keys as text, as
/// `symbolize_keys` reads them) or anything else as its text.
fn plain(ruby: &Ruby, value: Value) -> Result<Plain, Error> {
    if value.is_nil() {
        return Ok(Plain::Nil);
    }
    if let Some(items) = RArray::from_value(value) {
        let items = items.into_iter().map(|item| plain(ruby, item));
        return Ok(Plain::List(items.collect::<Result<_, _>>()?));
    }
    if !vo::is_hash(ruby, value) {
        return Ok(Plain::Text(vo::string_of(ruby, value)?));
    }
    let mut entries = Vec::new();
    for (key, item) in vo::hash_pairs(vo::symbolize_keys(ruby, value)?)? {
        entries.push((vo::string_of(ruby, key)?, plain(ruby, item)?));
    }
    Ok(Plain::Table(entries))
}
