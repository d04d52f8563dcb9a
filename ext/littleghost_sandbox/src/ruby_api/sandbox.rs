//! `LittleGhost::Sandbox`: the base class every backend (Rust or Ruby)
//! subclasses (SPEC §10, §12). Its state lives in [`state::Sandbox`]; the
//! class has an allocator, so every subclass, Rust or Ruby, gets the struct.
//! This file binds the methods that read or build that state; the rules are
//! the core's `sandbox` module, and the Ruby-shaped rest (`supports?`,
//! `allows?`, `writable?`, the abstract operations) is
//! lib/littleghost/sandbox/base.rb.

pub(crate) mod backend;
mod inspect;
pub(crate) mod launch;
pub(crate) mod probe;
mod providers;
pub(crate) mod scoped_files;
pub(crate) mod state;

pub(crate) use providers::PROVIDERS;
pub(crate) use state::{
    backend_of, backend_state, backend_value, borrow, enforced_capabilities, enforced_policy,
    forget_default_scope, limits_of, requested_policy, set_backend, set_enforced, store,
    workspace_of, Sandbox, SandboxObj,
};

use littleghost_sandbox_core::sandbox as rules;
use magnus::{
    method,
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    scan_args::get_kwargs,
    scan_args::scan_args,
    Error, KwArgs, RClass, RHash, Ruby, Symbol, Value,
};

use crate::helpers::args::{keywords, keywords_only, kwargs};
use crate::helpers::errors;
use crate::helpers::{constants, value_object as vo};

pub fn init(_ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    sandbox.define_alloc_func::<Sandbox>();
    providers::init(sandbox)?;
    sandbox.define_method("initialize", method!(initialize, -1))?;
    sandbox.define_method("workspace", method!(workspace_of, 0))?;
    sandbox.define_method("policy", method!(requested_policy, 0))?;
    sandbox.define_method("limits", method!(limits_of, 0))?;
    sandbox.define_method("effective_policy", method!(effective_policy, 0))?;
    sandbox.define_method("capabilities", method!(capabilities, 0))?;
    sandbox.define_method("scope", method!(scope, -1))?;
    sandbox.define_method("open", method!(open, -1))?;
    sandbox.define_method("close", method!(close, 0))?;
    sandbox.define_method("inspect", method!(inspect, 0))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Small conveniences shared by the Sandbox, Scope and backend bindings.

/// The message of a Ruby error, whether it was raised in Ruby or built in Rust.
pub(crate) fn error_message(error: &Error) -> String {
    errors::message(error)
}

// ---------------------------------------------------------------------------
// Construction and readers (10.1, 10.2).

/// Binds the sandbox to `workspace`, normalising `policy`, `profiles` and `limits`; performs no filesystem I/O.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let optional = ["policy", "profiles", "limits"];
    let values = keywords(ruby, keywords_only(args)?, &["workspace"], &optional)?;
    // An explicit nil means the same as an absent keyword.
    let [policy, profiles, limits] = [1, 2, 3].map(|i| values[i].filter(|v| !v.is_nil()));
    assign(ruby, rb_self, values[0].unwrap(), policy, profiles, limits)
}

/// Stores the normalised state of 10.1; backends written in Rust call it from their own `initialize`.
pub(crate) fn assign(
    ruby: &Ruby,
    rb_self: SandboxObj,
    workspace: Value,
    policy: Option<Value>,
    profiles: Option<Value>,
    limits: Option<Value>,
) -> Result<(), Error> {
    vo::require_duck(workspace, "sandbox workspace", &["root", "resolve"])?;
    let policy_class = constants::class(ruby, "LittleGhost::Sandbox::Policy")?;
    let policy = policy.unwrap_or_else(|| ruby.qnil().as_value());
    let policy = crate::ruby_api::policy::coerce_with(ruby, policy_class, policy, ruby.hash_new())?;
    let limits = limits.unwrap_or_else(|| ruby.hash_new().as_value());
    let limits = crate::ruby_api::limits::coerce(ruby, limits)?;
    let profiles = normalize_profiles(ruby, profiles)?;
    // Checked for Workspace instances; other workspace objects are
    // checked when the grants are built.
    if let (Some(workspace), Some(policy)) = (
        crate::ruby_api::workspace::borrow(workspace),
        crate::ruby_api::policy::borrow(policy),
    ) {
        if let Some(names) = workspace.path_names() {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            errors::core_result(ruby, rules::check_grant_names(policy.core(), &names))?;
        }
    }
    store(
        ruby,
        rb_self,
        workspace,
        policy,
        profiles.as_value(),
        limits,
    )
}

/// `profiles.to_h` with Symbol keys, frozen (10.1).
fn normalize_profiles(ruby: &Ruby, profiles: Option<Value>) -> Result<RHash, Error> {
    let normalized = ruby.hash_new();
    if let Some(profiles) = profiles {
        let hash = match RHash::from_value(profiles) {
            Some(hash) => hash,
            // A user's Hash-like object.
            None if profiles.respond_to("to_h", false)? => profiles.funcall("to_h", ())?,
            None => {
                return Err(errors::policy_error(
                    ruby,
                    "sandbox profiles must be a Hash",
                ))
            }
        };
        for (key, value) in vo::hash_pairs(hash)? {
            normalized.aset(vo::name_to_sym(key, "sandbox profile name")?, value)?;
        }
    }
    normalized.freeze();
    Ok(normalized)
}

/// The policy the backend enforces; the base enforces exactly the requested policy.
fn effective_policy(ruby: &Ruby, rb_self: Value) -> Value {
    match borrow(rb_self).and_then(|sandbox| sandbox.stored_enforced(ruby)) {
        Some((policy, _)) => policy,
        None => requested_policy(ruby, rb_self),
    }
}

/// Operations and network modes this backend implements; the base implements none.
fn capabilities(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    match borrow(rb_self).and_then(|sandbox| sandbox.stored_enforced(ruby)) {
        Some((_, capabilities)) => Ok(capabilities),
        None => crate::ruby_api::capabilities::empty(ruby),
    }
}

// ---------------------------------------------------------------------------
// Scopes (10.8).

/// A non-owning, capability-reduced Scope built from a named profile or explicit options.
fn scope(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    let (profile,) = args.optional;
    type Four = (Option<Value>, Option<Value>, Option<Value>, Option<Value>);
    let parsed = get_kwargs::<_, (), Four, ()>(args.keywords, &[], &rules::PROFILE_KEYS)?;
    let (files, runtime_paths, capabilities, network) = parsed.optional;
    // An explicit nil means the same as an absent keyword.
    let explicit = [files, runtime_paths, capabilities, network].map(|v| v.filter(|v| !v.is_nil()));
    let given = explicit.iter().any(Option::is_some);
    errors::core_result(ruby, rules::check_scope_selection(profile.is_some(), given))?;
    let selection = match profile {
        None => explicit,
        Some(profile) => profile_options(ruby, rb_self, profile)?,
    };
    // Every option is given, as nil when absent (or given as nil).
    let selection = selection.map(|value| Some(value.unwrap_or_else(|| ruby.qnil().as_value())));
    crate::ruby_api::scope::narrowed(ruby, rb_self.as_value(), selection)
}

/// Looks up a profile and returns its four options in PROFILE_KEYS order.
fn profile_options(
    ruby: &Ruby,
    rb_self: Value,
    profile: Value,
) -> Result<[Option<Value>; 4], Error> {
    let name: Symbol = vo::name_to_sym(profile, "sandbox profile name")?;
    let profiles = state::profiles_of(ruby, rb_self);
    let profiles = RHash::from_value(profiles).unwrap_or_else(|| ruby.hash_new());
    let Some(mut options) = profiles.get(name) else {
        return Err(errors::from_core(
            ruby,
            rules::unknown_profile(&name.name()?),
        ));
    };
    if options.respond_to("call", false)? {
        let workspace = workspace_of(ruby, rb_self);
        let policy = enforced_policy(ruby, rb_self)?;
        let call_options = kwargs(ruby, &[("workspace", workspace), ("policy", policy)])?;
        // The user's profile callable.
        options = options.funcall("call", (KwArgs(call_options),))?;
    }
    let Some(options) = RHash::from_value(options) else {
        return Err(errors::policy_error(
            ruby,
            "sandbox scope profile must be a Hash",
        ));
    };
    let mut named = Vec::new();
    for (key, value) in vo::hash_pairs(options)? {
        let key = vo::name_to_sym(key, "sandbox scope profile option")?;
        named.push((key.name()?.into_owned(), value));
    }
    errors::core_result(ruby, rules::profiles::selection(&named))
}

// ---------------------------------------------------------------------------
// Lifecycle (10.9).

/// Opens run-scoped resources and returns self (the base owns none); with a block, yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    get_kwargs::<_, (), (Option<Value>,), ()>(options, &[], &["run"])?;
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self)
}

/// Releases sandbox resources; the base owns none.
fn close(rb_self: Value) {
    if let Some(sandbox) = borrow(rb_self) {
        sandbox.set_opened(false);
    }
}

// ---------------------------------------------------------------------------
// inspect.

/// The core's summary (`#<CLASS provider=:NAME root="/w" ... open|closed>`),
/// read from the effective policy; never internal state.
fn inspect(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    // SAFETY: the class name is copied into an owned String before any other Ruby call.
    let class_name = unsafe { rb_self.classname() }.into_owned();
    let Some(sandbox) = borrow(rb_self).filter(|sandbox| sandbox.initialized()) else {
        return Ok(format!("#<{class_name} uninitialized>"));
    };
    // The object's class, not a singleton class (a Native forwarding a backend-only method has one).
    // SAFETY: rb_obj_class of a live object never raises.
    let class = unsafe { Value::from_raw(rb_sys::rb_obj_class(rb_self.as_raw())) };
    let provider = PROVIDERS.name_of(ruby, class);
    // A user's workspace object may be any duck type with `root`.
    let root = match workspace_of(ruby, rb_self).funcall::<_, _, Value>("root", ()) {
        Ok(root) => Some(vo::inspect_value(ruby, root)?),
        Err(_) => None,
    };
    let policy = enforced_policy(ruby, rb_self).unwrap_or_else(|_| requested_policy(ruby, rb_self));
    let summary = inspect::Summary {
        class_name: &class_name,
        provider: provider.as_deref(),
        root: root.as_deref(),
        policy: crate::ruby_api::policy::borrow(policy).map(|policy| policy.core()),
        // A Native is open exactly when the backend it forwards to is.
        open: backend_of(ruby, rb_self)
            .and_then(state::borrow)
            .unwrap_or(sandbox)
            .opened(),
    };
    // Symbol#inspect of a grant name; it does not fail for a Symbol.
    let symbol = |name: &str| vo::inspect_value(ruby, ruby.to_symbol(name).as_value());
    Ok(summary.render(|name| symbol(name).unwrap_or_else(|_| format!(":{name:?}"))))
}
