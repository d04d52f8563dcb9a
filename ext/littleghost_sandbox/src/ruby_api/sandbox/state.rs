//! The state every `LittleGhost::Sandbox` (Rust backend or Ruby subclass)
//! carries: what `new` normalised, the cached default scope, the registry of
//! its children, its denial log, a Rust backend's own state and what that
//! backend enforces. Lower files (ownership, denial, launch limits, process
//! runner, workspace) read it from here; this file imports nothing above it.

use std::cell::Cell;

use littleghost_sandbox_core::process::Owner;
use magnus::{
    gc::Marker, prelude::*, value::Opaque, DataTypeFunctions, Error, RClass, Ruby, TypedData, Value,
};

use crate::helpers::errors;
use crate::ruby_api::denial::hub::Denials;
use crate::ruby_api::network_event::hub::NetworkEvents;

/// A Sandbox (or subclass) instance as a method receiver.
pub(crate) type SandboxObj = magnus::typed_data::Obj<Sandbox>;

/// What `Sandbox.new` normalised (10.1).
#[derive(Clone, Copy)]
struct Base {
    workspace: Opaque<Value>,
    policy: Opaque<Value>,
    profiles: Opaque<Value>,
    limits: Opaque<Value>,
}

/// A sandbox's state. Every field is a `Cell` (or internally synchronised),
/// so nothing is borrowed across a call into Ruby and `mark` never waits.
#[derive(TypedData, Default)]
#[magnus(class = "LittleGhost::Sandbox", free_immediately, size, mark)]
pub struct Sandbox {
    base: Cell<Option<Base>>,
    /// The cached default scope of 16.3, built on the first file operation.
    default_scope: Cell<Option<Opaque<Value>>>,
    /// Every child this sandbox (or one of its scopes) started (H.4).
    owner: Owner,
    /// Between `open` and `close` (for `inspect`).
    opened: Cell<bool>,
    /// Its denial log and `on_denial` subscribers.
    denials: Denials,
    /// Its egress record and `on_network` subscribers.
    network: NetworkEvents,
    /// A Rust backend's own state object (Bubblewrap's, Landlock's, ...), or
    /// the platform backend Native delegates to; set once by `initialize`.
    backend: Cell<Option<Opaque<Value>>>,
    /// What a Rust backend enforces, fixed by its `initialize` (see [`set_enforced`]).
    enforced: Cell<Option<Enforced>>,
    /// The backend options `process_limits:` and `cgroup:` (read by
    /// `launch_limits`; borrowed only briefly, never across a Ruby call).
    launch_defaults: std::cell::RefCell<littleghost_sandbox_core::limits::plan::LaunchDefaults>,
}

/// The effective policy and capabilities a Rust backend stored at construction.
#[derive(Clone, Copy)]
struct Enforced {
    policy: Opaque<Value>,
    capabilities: Opaque<Value>,
    /// The instance is of the backend's own class, so no Ruby subclass can
    /// have overridden `effective_policy` or `capabilities` (a subclass may
    /// narrow them, and the binding must then ask it).
    own_class: bool,
}

impl DataTypeFunctions for Sandbox {
    fn mark(&self, marker: &Marker) {
        if let Some(base) = self.base.get() {
            marker.mark(base.workspace);
            marker.mark(base.policy);
            marker.mark(base.profiles);
            marker.mark(base.limits);
        }
        if let Some(scope) = self.default_scope.get() {
            marker.mark(scope);
        }
        self.denials.mark(marker);
        self.network.mark(marker);
        if let Some(backend) = self.backend.get() {
            marker.mark(backend);
        }
        if let Some(enforced) = self.enforced.get() {
            marker.mark(enforced.policy);
            marker.mark(enforced.capabilities);
        }
    }
}

impl Sandbox {
    /// The registry of the children this sandbox started.
    pub(crate) fn owner(&self) -> &Owner {
        &self.owner
    }

    pub(crate) fn default_scope(&self, ruby: &Ruby) -> Option<Value> {
        self.default_scope.get().map(|scope| ruby.get_inner(scope))
    }

    pub(crate) fn set_default_scope(&self, scope: Value) {
        self.default_scope.set(Some(scope.into()));
    }

    /// Its denial log and subscribers.
    pub(crate) fn denials(&self) -> &Denials {
        &self.denials
    }

    /// Its egress record and subscribers.
    pub(crate) fn network(&self) -> &NetworkEvents {
        &self.network
    }

    pub(crate) fn set_opened(&self, opened: bool) {
        self.opened.set(opened);
    }

    pub(crate) fn opened(&self) -> bool {
        self.opened.get()
    }

    /// Whether `new` (or a backend's `initialize`) stored the base state.
    pub(crate) fn initialized(&self) -> bool {
        self.base.get().is_some()
    }

    /// The effective policy and capabilities a Rust backend stored, whatever the class.
    pub(crate) fn stored_enforced(&self, ruby: &Ruby) -> Option<(Value, Value)> {
        let enforced = self.enforced.get()?;
        Some((
            ruby.get_inner(enforced.policy),
            ruby.get_inner(enforced.capabilities),
        ))
    }

    /// The stored values, when they are what Ruby dispatch would answer.
    fn authoritative(&self, ruby: &Ruby) -> Option<(Value, Value)> {
        self.enforced.get().filter(|e| e.own_class)?;
        self.stored_enforced(ruby)
    }
}

/// The Sandbox struct behind `value` (any Sandbox or subclass instance).
pub(crate) fn borrow(value: Value) -> Option<&'static Sandbox> {
    <&Sandbox>::try_convert(value).ok()
}

/// One of the values `Sandbox.new` stored (`pick` chooses), or nil before `initialize` ran.
fn base_value(ruby: &Ruby, rb_self: Value, pick: fn(Base) -> Opaque<Value>) -> Value {
    match borrow(rb_self).and_then(|sandbox| sandbox.base.get()) {
        Some(base) => ruby.get_inner(pick(base)),
        None => ruby.qnil().as_value(),
    }
}

/// The workspace given to `new` (nil before `initialize` ran).
pub(crate) fn workspace_of(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.workspace)
}

/// The limits given to `new`, coerced (nil before `initialize` ran).
pub(crate) fn limits_of(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.limits)
}

/// The profiles given to `new`, normalised (nil before `initialize` ran).
pub(crate) fn profiles_of(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.profiles)
}

/// Drops the cached default scope (a reopened Unrestricted sandbox pins anew).
pub(crate) fn forget_default_scope(rb_self: Value) {
    if let Some(sandbox) = borrow(rb_self) {
        sandbox.default_scope.set(None);
    }
}

/// The policy given to `new`, normalised (what backends derive their effective policy from).
pub(crate) fn requested_policy(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.policy)
}

/// Stores already-normalised state (Native copies its platform backend's).
pub(crate) fn store(
    ruby: &Ruby,
    rb_self: SandboxObj,
    workspace: Value,
    policy: Value,
    profiles: Value,
    limits: Value,
) -> Result<(), Error> {
    let sandbox = borrow(rb_self.as_value())
        .ok_or_else(|| errors::type_error(ruby, "not a LittleGhost::Sandbox"))?;
    sandbox.base.set(Some(Base {
        workspace: workspace.into(),
        policy: policy.into(),
        profiles: profiles.into(),
        limits: limits.into(),
    }));
    Ok(())
}

/// A Rust backend's own state, kept in its sandbox's `backend` field (the
/// instance's own data is the base class's [`Sandbox`]); ToolError
/// "BACKEND sandbox is not initialized" before its `initialize` ran.
pub(crate) fn backend_state<T: TypedData>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    backend: &str,
) -> Result<&'static T, Error> {
    backend_value(ruby, rb_self)
        .and_then(|value| <&T>::try_convert(value).ok())
        .ok_or_else(|| errors::tool_error(ruby, format!("{backend} sandbox is not initialized")))
}

/// The backend object stored by [`set_backend`], if any.
pub(crate) fn backend_value(ruby: &Ruby, rb_self: SandboxObj) -> Option<Value> {
    rb_self.backend.get().map(|value| ruby.get_inner(value))
}

/// The backend a Sandbox value forwards to (a Native's), if any.
pub(crate) fn backend_of(ruby: &Ruby, value: Value) -> Option<Value> {
    borrow(value)?
        .backend
        .get()
        .map(|value| ruby.get_inner(value))
}

/// The launch defaults a backend stored from its options (see `launch_limits`).
pub(crate) fn launch_defaults(
    rb_self: SandboxObj,
) -> &'static std::cell::RefCell<littleghost_sandbox_core::limits::plan::LaunchDefaults> {
    // An Obj<Sandbox> always converts; `borrow` gives the GC-lived reference.
    let sandbox = borrow(rb_self.as_value()).expect("a SandboxObj holds a Sandbox");
    &sandbox.launch_defaults
}

/// Stores a backend's state object (or Native's platform backend) in the sandbox.
pub(crate) fn set_backend(rb_self: SandboxObj, value: Value) {
    rb_self.backend.set(Some(value.into()));
}

/// Records what a Rust backend enforces; `effective_policy` and `capabilities`
/// then answer from the struct, and the binding reads it without Ruby dispatch.
/// `backend_class` is the Rust backend's class: for an instance of a Ruby
/// subclass the binding keeps asking Ruby, which honours its overrides.
pub(crate) fn set_enforced(
    rb_self: SandboxObj,
    backend_class: RClass,
    policy: Value,
    capabilities: Value,
) {
    rb_self.enforced.set(Some(Enforced {
        policy: policy.into(),
        capabilities: capabilities.into(),
        own_class: rb_self.class().equal(backend_class).unwrap_or(false),
    }));
}

/// The effective policy of any sandbox: a Rust backend's stored one, else the
/// (possibly Ruby-defined) `effective_policy` of a custom provider.
pub(crate) fn enforced_policy(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    match borrow(rb_self).and_then(|sandbox| sandbox.authoritative(ruby)) {
        Some((policy, _)) => Ok(policy),
        None => rb_self.funcall("effective_policy", ()),
    }
}

/// The capabilities of any sandbox: a Rust backend's stored ones, else the
/// (possibly Ruby-defined) `capabilities` of a custom provider.
pub(crate) fn enforced_capabilities(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    match borrow(rb_self).and_then(|sandbox| sandbox.authoritative(ruby)) {
        Some((_, capabilities)) => Ok(capabilities),
        None => rb_self.funcall("capabilities", ()),
    }
}
