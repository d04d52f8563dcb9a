//! `Scope.new` (SC.1–SC.10): has the core read the keywords into its
//! [`ScopeRequest`] (`scope::keywords`, through [`Keyword`] on a Ruby
//! value), gathers the parent's state (a parent scope's struct, or the
//! sandbox's enforced policy and capabilities) as the core's [`Inherited`],
//! and hands both to [`core_scope::narrow`], which holds every narrowing rule.

use littleghost_sandbox_core::error::Error as CoreError;
use littleghost_sandbox_core::policy::Capabilities as CoreCapabilities;
use littleghost_sandbox_core::scope::keywords::{
    self as asked, network_keyword, Keyword, Misshapen,
};
use littleghost_sandbox_core::scope::{
    self as core_scope, keywords::NetworkKeyword, Inherited, NetworkAsk, NetworkChoice,
    NetworkMode, NetworkRequest, ScopeRequest, SecretsRequest,
};
use magnus::{prelude::*, scan_args::get_kwargs, Ruby, TypedData, Value};
use magnus::{value::Opaque, Error};

use super::{ScopeState, CAPABILITIES, NETWORK};
use crate::helpers::args::keywords_only;
use crate::helpers::errors::{self, core_result};
use crate::helpers::value_object::{self as vo, ValueObject};
use crate::ruby_api::mount::grant_to_ruby;
use crate::ruby_api::network_policy::{self, Declared, NetworkPolicy};
use crate::ruby_api::sandbox::state as sandbox;
use crate::ruby_api::{capabilities, limits, policy, workspace};

/// The keywords of `Scope.new`: the sandbox, the scope it narrows (if
/// any) and what it asks for, `[files, runtime_paths, capabilities,
/// network]`, where nil means the same as an absent keyword.
pub(super) struct Keywords {
    pub(super) sandbox: Value,
    pub(super) parent_scope: Option<Value>,
    pub(super) asked: [Option<Value>; 4],
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
    Ok(Keywords {
        sandbox: parsed.required.0,
        parent_scope: parent_scope.filter(|v| !v.is_nil()),
        asked: [files, runtime_paths, capabilities, network],
    })
}

/// What the parent hands on, plus the Ruby objects a scope keeps of it.
struct ParentState {
    inherited: Inherited,
    capabilities: Value,
    network: Value,
}

/// SC.2: a parent scope's own state, or the sandbox's enforced policy and capabilities.
fn parent_state(ruby: &Ruby, keywords: &Keywords, workspace: Value) -> Result<ParentState, Error> {
    if let Some(parent) = keywords.parent_scope {
        let parent = super::state(ruby, parent)?;
        return Ok(ParentState {
            inherited: Inherited::of_scope(&parent.scoped),
            capabilities: ruby.get_inner(parent.values[CAPABILITIES]),
            network: ruby.get_inner(parent.values[NETWORK]),
        });
    }
    let policy_value = sandbox::enforced_policy(ruby, keywords.sandbox)?;
    let policy = policy::borrow(policy_value)
        .ok_or_else(|| errors::type_error(ruby, "sandbox effective_policy must be a Policy"))?;
    let capabilities = sandbox::enforced_capabilities(ruby, keywords.sandbox)?;
    let reported = capabilities::borrow(capabilities)
        .ok_or_else(|| errors::type_error(ruby, "sandbox capabilities must be a Capabilities"))?;
    let inherited = Inherited::of_sandbox(
        policy.core(),
        reported.core(),
        |name| workspace::directory(ruby, workspace, name),
        |error| errors::from_core(ruby, error),
    )?;
    Ok(ParentState {
        inherited,
        capabilities,
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
    let [files, runtime_paths, capabilities, network] = keywords.asked;
    let (network, coerced) = network_request(ruby, parent.network, network)?;
    let given = |value: Option<Value>| value.map(|value| Declared(ruby, value));
    let directory = |name: &str| workspace::directory(ruby, workspace, name);
    let request = ScopeRequest {
        files: asked::grant_requests(given(files).as_ref(), "files", directory)?,
        runtime_paths: asked::grant_requests(
            given(runtime_paths).as_ref(),
            "runtime_paths",
            directory,
        )?,
        capabilities: asked::capability_request(given(capabilities).as_ref())?,
        network,
    };
    let limits = sandbox::limits_of(ruby, keywords.sandbox);
    let limits = limits::borrow(limits)
        .ok_or_else(|| errors::type_error(ruby, "sandbox limits must be a Limits"))?
        .fs();
    let pins = workspace::borrow(workspace).and_then(|w| w.recorded_identities());
    let anchors = workspace::anchors_of(workspace);
    let core_parent = parent.inherited.parent(mode_of(ruby, parent.network)?);
    let pins = pins.as_deref().map(Vec::as_slice);
    let scoped = core_result(
        ruby,
        core_scope::narrow_anchored(core_parent, &request, limits, pins, anchors.as_deref()),
    )?;
    let network = match (scoped.network, coerced) {
        (NetworkChoice::Requested, Some(policy)) => policy,
        _ => parent.network,
    };
    let capabilities = if scoped.capabilities == parent.inherited.capabilities {
        parent.capabilities
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
    let value = match network_keyword(requested.map(|v| Declared(ruby, v)).as_ref()) {
        NetworkKeyword::Parent => return Ok((NetworkRequest::Parent, None)),
        NetworkKeyword::Off => ruby.to_symbol("none").as_value(),
        NetworkKeyword::Declared => requested.expect("declared"),
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
    let policy = match (narrowed, theirs) {
        (Some(narrowed), Some(theirs)) => network_policy::wrap_like(ruby, narrowed, theirs),
        _ => policy,
    };
    Ok((request, Some(policy)))
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
    let Some(request) = asked::secrets_asked(&Declared(ruby, value))? else {
        return Ok((Some(value), None));
    };
    let copy = vo::symbolize_keys(ruby, value)?;
    let _: Option<Value> = copy.delete(ruby.to_symbol("secrets"))?;
    let rest = (!copy.is_empty()).then_some(copy.as_value());
    Ok((rest, Some(request)))
}

/// A scope's request values as the core reads them: Ruby's own types
/// (`Array`, `Hash` or anything with `each_pair`, `Sandbox::Capabilities`),
/// and the core's refusals worded in them.
impl Keyword for Declared<'_> {
    fn misshapen_request(&self, error: Misshapen) -> Error {
        let ruby = self.0;
        match error {
            Misshapen::Grants { category } => errors::policy_error(
                ruby,
                format!("sandbox scope {category} must be a Hash or an Array"),
            ),
            Misshapen::GrantEntry { category } => errors::policy_error(
                ruby,
                format!("sandbox scope {category} entries must be names or [name, access] pairs"),
            ),
            Misshapen::Capabilities => errors::policy_error(
                ruby,
                "sandbox scope capabilities must be an Array or Sandbox::Capabilities",
            ),
            Misshapen::Secrets => errors::argument_error(
                ruby,
                "sandbox scope network secrets: names the parent's secrets: an Array of names, or name => {destinations: [...]} (no value:)",
            ),
        }
    }

    fn refused(&self, error: CoreError) -> Error {
        errors::from_core(self.0, error)
    }

    fn each_pair(
        &self,
        each: &mut dyn FnMut(Self, Self) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        if !vo::responds(self.1, "each_pair") {
            return Ok(false);
        }
        // `pairs` keeps a duck's pairs alive while they are converted.
        for (key, value) in vo::pairs(self.1)? {
            each(Declared(self.0, key), Declared(self.0, value))?;
        }
        Ok(true)
    }

    fn name(&self) -> Result<String, Error> {
        let name = vo::name_to_sym(self.1, "sandbox scope grant name")?;
        Ok(name.name()?.into_owned())
    }

    fn capabilities(&self) -> Option<CoreCapabilities> {
        capabilities::borrow(self.1).map(|theirs| theirs.core().clone())
    }
}
