//! `LittleGhost::Sandbox`: the base class every backend (Rust or Ruby) subclasses
//! (SPEC §10, §12). Its state (workspace, policy, profiles, limits, the cached
//! default scope and the registry of the processes it started) lives in the
//! [`Sandbox`] struct; the class has an allocator, so every subclass, Rust or
//! Ruby, gets the struct (Ruby subclasses may add their own instance
//! variables). Calls a Ruby subclass may override (`effective_policy`,
//! `capabilities`, `supports?`, `scope`, `execute_program`) still go through
//! Ruby dispatch (0.4); everything else reads the struct.

mod providers;
pub(crate) use providers::PROVIDERS;
use providers::{probe, register_provider, resolve_provider};

use std::cell::Cell;

use littleghost_sandbox_core::process::Owner;
use magnus::{
    function, gc::Marker, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args,
    value::Opaque, DataTypeFunctions, Error, KwArgs, RArray, RClass, RHash, Ruby, Symbol,
    TypedData, Value,
};

use crate::helpers::args::{keywords_only, kwargs, unknown_keys};
use crate::helpers::convert;
use crate::helpers::{constants, value_object as vo};
use crate::ruby_api::errors;

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
    /// Its denial log and `on_denial` subscribers (issue 12 item 12).
    denials: crate::ruby_api::denial::Denials,
    /// A Rust backend's own state object (Bubblewrap's, Landlock's, ...), or
    /// the platform backend Native delegates to; set once by `initialize`.
    backend: Cell<Option<Opaque<Value>>>,
    /// What a Rust backend enforces, fixed by its `initialize` (see [`set_enforced`]).
    enforced: Cell<Option<Enforced>>,
    /// The backend options `process_limits:` and `cgroup:` (read by
    /// `launch_limits`; borrowed only briefly, never across a Ruby call).
    launch_defaults: std::cell::RefCell<littleghost_sandbox_core::limits::keywords::LaunchDefaults>,
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

impl Enforced {
    /// The stored values, when they are what Ruby dispatch would answer.
    fn authoritative(self) -> Option<Self> {
        self.own_class.then_some(self)
    }
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
    pub(crate) fn denials(&self) -> &crate::ruby_api::denial::Denials {
        &self.denials
    }

    pub(crate) fn set_opened(&self, opened: bool) {
        self.opened.set(opened);
    }
}

/// The Sandbox struct behind `value` (any Sandbox or subclass instance).
pub(crate) fn borrow(value: Value) -> Option<&'static Sandbox> {
    <&Sandbox>::try_convert(value).ok()
}

/// One of the values `Sandbox.new` stored, or nil before `initialize` ran.
fn base_value(ruby: &Ruby, rb_self: Value, pick: fn(&Base) -> Opaque<Value>) -> Value {
    match borrow(rb_self).and_then(|sandbox| sandbox.base.get()) {
        Some(base) => ruby.get_inner(pick(&base)),
        None => ruby.qnil().as_value(),
    }
}

/// The workspace given to `new` (nil before `initialize` ran).
pub(crate) fn workspace_of(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.workspace)
}

/// The policy given to `new`, normalised (what backends derive their effective policy from).
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

/// The launch defaults a backend stored from its options (see `launch_limits`).
pub(crate) fn launch_defaults(
    rb_self: SandboxObj,
) -> &'static std::cell::RefCell<littleghost_sandbox_core::limits::keywords::LaunchDefaults> {
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
    match borrow(rb_self).and_then(|sandbox| sandbox.enforced.get()?.authoritative()) {
        Some(enforced) => Ok(ruby.get_inner(enforced.policy)),
        None => rb_self.funcall("effective_policy", ()),
    }
}

/// The capabilities of any sandbox: a Rust backend's stored ones, else the
/// (possibly Ruby-defined) `capabilities` of a custom provider.
pub(crate) fn enforced_capabilities(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    match borrow(rb_self).and_then(|sandbox| sandbox.enforced.get()?.authoritative()) {
        Some(enforced) => Ok(ruby.get_inner(enforced.capabilities)),
        None => rb_self.funcall("capabilities", ()),
    }
}

pub(crate) fn requested_policy(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.policy)
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    sandbox.define_alloc_func::<Sandbox>();
    let _ = ruby;
    sandbox.define_singleton_method("register_provider", function!(register_provider, 2))?;
    sandbox.define_singleton_method("resolve_provider", function!(resolve_provider, 1))?;
    sandbox.define_singleton_method("probe", method!(probe, -1))?;
    sandbox.define_method("initialize", method!(initialize, -1))?;
    sandbox.define_method("workspace", method!(workspace, 0))?;
    sandbox.define_method("policy", method!(policy, 0))?;
    sandbox.define_method("limits", method!(limits, 0))?;
    sandbox.define_method("effective_policy", method!(effective_policy, 0))?;
    sandbox.define_method("capabilities", method!(capabilities, 0))?;
    sandbox.define_method("supports?", method!(supports, -1))?;
    sandbox.define_method("allows?", method!(allows, -1))?;
    sandbox.define_method("writable?", method!(writable, 0))?;
    sandbox.define_method("scope", method!(scope, -1))?;
    sandbox.define_method("open", method!(open, -1))?;
    sandbox.define_method("close", method!(close, 0))?;
    sandbox.define_method("read", method!(abstract_read, -1))?;
    sandbox.define_method("list", method!(abstract_list, -1))?;
    sandbox.define_method("write", method!(abstract_write, -1))?;
    sandbox.define_method("replace", method!(abstract_replace, -1))?;
    sandbox.define_method("execute_program", method!(abstract_execute_program, -1))?;
    sandbox.define_method("start_program", method!(abstract_start_program, -1))?;
    sandbox.define_method("inspect", method!(inspect, 0))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Small conveniences shared by the Sandbox, Scope and Unrestricted bindings.

/// The message of a Ruby error, whether it was raised in Ruby or built in Rust.
pub(crate) fn error_message(error: &Error) -> String {
    match error.error_type() {
        magnus::error::ErrorType::Exception(exception) => exception
            .funcall::<_, _, String>("message", ())
            .unwrap_or_default(),
        magnus::error::ErrorType::Error(_, message) => message.to_string(),
        magnus::error::ErrorType::Jump(_) => String::new(),
    }
}

/// Ruby truthiness: everything but nil and false.
pub(crate) fn truthy(value: Value) -> bool {
    value.to_bool()
}

/// `LittleGhost::Sandbox::Capabilities.new(features: [], network_modes: [])`.
pub(crate) fn empty_capabilities(ruby: &Ruby) -> Result<Value, Error> {
    crate::ruby_api::capabilities::empty(ruby)
}

fn name_of_class(value: Value) -> String {
    value
        .class()
        .funcall::<_, _, Option<String>>("name", ())
        .ok()
        .flatten()
        .unwrap_or_else(|| value.class().inspect())
}

// ---------------------------------------------------------------------------
// Construction and readers (10.1, 10.2).

/// `workspace`, `policy`, `profiles` and `limits` as given to `Sandbox.new`.
pub(crate) type BaseOptions = (Value, Option<Value>, Option<Value>, Option<Value>);

/// Parses the keywords of `Sandbox.new` (workspace, policy, profiles, limits) as Ruby would.
pub(crate) fn base_options(args: &[Value]) -> Result<BaseOptions, Error> {
    let options = keywords_only(args)?;
    let parsed = get_kwargs::<_, (Value,), (Option<Value>, Option<Value>, Option<Value>), ()>(
        options,
        &["workspace"],
        &["policy", "profiles", "limits"],
    )?;
    let (workspace,) = parsed.required;
    let (policy, profiles, limits) = parsed.optional;
    Ok((workspace, policy, profiles, limits))
}

/// Binds the sandbox to `workspace`, normalising `policy`, `profiles` and `limits`; performs no filesystem I/O.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let (workspace, policy, profiles, limits) = base_options(args)?;
    assign(ruby, rb_self, workspace, policy, profiles, limits)
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
    let limits_class = constants::class(ruby, "LittleGhost::Sandbox::Limits")?;
    let policy: Value = policy_class.funcall("coerce", (policy,))?;
    let limits: Value = match limits {
        Some(limits) => limits_class.funcall("coerce", (limits,))?,
        None => limits_class.funcall("coerce", (ruby.hash_new(),))?,
    };
    let profiles = normalize_profiles(ruby, profiles)?;
    check_grant_names(ruby, workspace, policy)?;
    store(
        ruby,
        rb_self,
        workspace,
        policy,
        profiles.as_value(),
        limits,
    )
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

/// Issue 12: a grant naming a path the workspace lacks is a PolicyError at
/// `new` that lists the workspace's names (checked for Workspace instances;
/// other workspace objects are checked when the grants are built).
fn check_grant_names(ruby: &Ruby, workspace: Value, policy: Value) -> Result<(), Error> {
    let (Some(workspace), Some(policy)) = (
        crate::ruby_api::workspace::borrow(workspace),
        crate::ruby_api::policy::borrow(policy),
    ) else {
        return Ok(());
    };
    let Some(names) = workspace.path_names() else {
        return Ok(());
    };
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let core = policy.core();
    let grants = core
        .files
        .entries()
        .iter()
        .map(|(name, _)| ("files", name.as_str()))
        .chain(
            core.runtime_paths
                .entries()
                .iter()
                .map(|(name, _)| ("runtime_paths", name.as_str())),
        );
    errors::core_result(
        ruby,
        littleghost_sandbox_core::workspace::check_grant_names(grants, &names),
    )
}

/// `profiles.to_h` with Symbol keys, frozen (10.1).
fn normalize_profiles(ruby: &Ruby, profiles: Option<Value>) -> Result<RHash, Error> {
    let normalized = ruby.hash_new();
    if let Some(profiles) = profiles {
        if !profiles.respond_to("to_h", false)? {
            return Err(errors::policy_error(
                ruby,
                "sandbox profiles must be a Hash",
            ));
        }
        let hash: RHash = profiles.funcall("to_h", ())?;
        hash.foreach(|key: Value, value: Value| {
            let key: Symbol = vo::name_to_sym(key, "sandbox profile name")?;
            normalized.aset(key, value)?;
            Ok(magnus::r_hash::ForEach::Continue)
        })?;
    }
    normalized.freeze();
    Ok(normalized)
}

/// The Workspace whose files and processes this sandbox governs.
fn workspace(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.workspace)
}

/// The normalised policy requested by trusted configuration.
fn policy(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.policy)
}

/// The file and process output bounds enforced by this sandbox.
fn limits(ruby: &Ruby, rb_self: Value) -> Value {
    base_value(ruby, rb_self, |base| base.limits)
}

/// The policy the backend enforces; the base enforces exactly the requested policy.
fn effective_policy(ruby: &Ruby, rb_self: Value) -> Value {
    match borrow(rb_self).and_then(|sandbox| sandbox.enforced.get()) {
        Some(enforced) => ruby.get_inner(enforced.policy),
        None => base_value(ruby, rb_self, |base| base.policy),
    }
}

/// Operations and network modes this backend implements; the base implements none.
fn capabilities(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    match borrow(rb_self).and_then(|sandbox| sandbox.enforced.get()) {
        Some(enforced) => Ok(ruby.get_inner(enforced.capabilities)),
        None => empty_capabilities(ruby),
    }
}

/// Whether the backend implements `feature` (and, for `:network`, the mode `value`).
fn supports(rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (feature,) = args.required;
    let (value,) = args.optional;
    let capabilities: Value = rb_self.funcall("capabilities", ())?;
    capabilities.funcall("supports?", (feature, value))
}

/// Whether an operation is allowed, optionally on a logical `path`; never raises for a path or scope problem.
fn allows(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<bool, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (operation,) = args.required;
    let path = args.optional.0.filter(|p| !p.is_nil());
    // A wrong type is misuse, not a path problem: it raises (H.6).
    if let Some(path) = path {
        convert::path_string(ruby, path, "path")?;
    }
    let answer = match path {
        None => rb_self
            .funcall::<_, _, Value>("supports?", (operation,))
            .map(truthy),
        Some(path) => rb_self
            .funcall::<_, _, Value>("scope", ())
            .and_then(|scope| scope.funcall::<_, _, Value>("allows?", (operation, path)))
            .map(truthy),
    };
    match answer {
        Ok(answer) => Ok(answer),
        Err(error) if error.is_kind_of(ruby.exception_standard_error()) => Ok(false),
        Err(error) => Err(error),
    }
}

/// Whether filesystem mutation is allowed; the base answers from its capabilities.
fn writable(ruby: &Ruby, rb_self: Value) -> Result<bool, Error> {
    let answer: Value = rb_self.funcall("supports?", (ruby.to_symbol("filesystem_write"),))?;
    Ok(truthy(answer))
}

// ---------------------------------------------------------------------------
// Scopes (10.8).

const PROFILE_KEYS: [&str; 4] = ["files", "runtime_paths", "capabilities", "network"];

/// A non-owning, capability-reduced Scope built from a named profile or explicit options.
fn scope(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    let (profile,) = args.optional;
    let options = args.keywords;
    let parsed = get_kwargs::<
        _,
        (),
        (Option<Value>, Option<Value>, Option<Value>, Option<Value>),
        (),
    >(options, &[], &PROFILE_KEYS)?;
    let (files, runtime_paths, capabilities, network) = parsed.optional;
    // An explicit nil means the same as an absent keyword.
    let explicit = [files, runtime_paths, capabilities, network].map(|v| v.filter(|v| !v.is_nil()));
    let selection = match profile {
        None => explicit,
        Some(profile) => {
            if explicit.iter().any(Option::is_some) {
                return Err(errors::argument_error(
                    ruby,
                    "scope profile cannot be combined with explicit options",
                ));
            }
            profile_options(ruby, rb_self, profile)?
        }
    };
    let mut pairs = vec![("sandbox", rb_self.as_value())];
    for (name, value) in PROFILE_KEYS.iter().zip(selection) {
        pairs.push((name, value.unwrap_or_else(|| ruby.qnil().as_value())));
    }
    let scope_class = constants::class(ruby, "LittleGhost::Sandbox::Scope")?;
    scope_class.funcall("new", (KwArgs(kwargs(ruby, &pairs)?),))
}

/// Looks up a profile and returns its four options in PROFILE_KEYS order.
fn profile_options(
    ruby: &Ruby,
    rb_self: Value,
    profile: Value,
) -> Result<[Option<Value>; 4], Error> {
    let name: Symbol = vo::name_to_sym(profile, "sandbox profile name")?;
    let profiles = base_value(ruby, rb_self, |base| base.profiles);
    let profiles = RHash::from_value(profiles).unwrap_or_else(|| ruby.hash_new());
    let Some(mut options) = profiles.get(name) else {
        return Err(errors::policy_error(
            ruby,
            format!("unknown sandbox scope profile: {}", name.name()?),
        ));
    };
    if options.respond_to("call", false)? {
        let workspace: Value = rb_self.funcall("workspace", ())?;
        let policy: Value = rb_self.funcall("effective_policy", ())?;
        let call_options = kwargs(ruby, &[("workspace", workspace), ("policy", policy)])?;
        options = options.funcall("call", (KwArgs(call_options),))?;
    }
    if !options.respond_to("transform_keys", false)? {
        return Err(errors::policy_error(
            ruby,
            "sandbox scope profile must be a Hash",
        ));
    }
    let to_sym: magnus::block::Proc = ruby.to_symbol("to_sym").funcall("to_proc", ())?;
    let options: RHash = options.funcall_with_block("transform_keys", (), to_sym)?;
    let unknown = unknown_keys(options, |name| PROFILE_KEYS.contains(&name))?;
    if !unknown.is_empty() {
        return Err(errors::policy_error(
            ruby,
            format!(
                "unknown sandbox scope profile options: {}",
                unknown.join(", ")
            ),
        ));
    }
    let mut selection = [None; 4];
    for (slot, name) in selection.iter_mut().zip(PROFILE_KEYS) {
        *slot = options.get(ruby.to_symbol(name)).filter(|v| !v.is_nil());
    }
    Ok(selection)
}

// ---------------------------------------------------------------------------
// Lifecycle and operations (10.9–10.11).

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

fn abstract_operation(ruby: &Ruby, rb_self: Value, operation: &str) -> Error {
    errors::abstract_method_error(
        ruby,
        format!("{} does not implement {operation}", name_of_class(rb_self)),
    )
}

/// Reads UTF-8 text at a logical `path`; backends implement it.
fn abstract_read(ruby: &Ruby, rb_self: Value, _args: &[Value]) -> Result<Value, Error> {
    Err(abstract_operation(ruby, rb_self, "read"))
}

/// Lists the directory at a logical `path`; backends implement it.
fn abstract_list(ruby: &Ruby, rb_self: Value, _args: &[Value]) -> Result<Value, Error> {
    Err(abstract_operation(ruby, rb_self, "list"))
}

/// Writes `content` to a logical `path`; backends implement it.
fn abstract_write(ruby: &Ruby, rb_self: Value, _args: &[Value]) -> Result<Value, Error> {
    Err(abstract_operation(ruby, rb_self, "write"))
}

/// Replaces one exact occurrence of text at a logical `path`; backends implement it.
fn abstract_replace(ruby: &Ruby, rb_self: Value, _args: &[Value]) -> Result<Value, Error> {
    Err(abstract_operation(ruby, rb_self, "replace"))
}

/// Executes an argument vector without a shell; backends implement it.
fn abstract_execute_program(ruby: &Ruby, rb_self: Value, _args: &[Value]) -> Result<Value, Error> {
    Err(abstract_operation(ruby, rb_self, "execute_program"))
}

/// Starts an owned, duplex child process; backends implement it.
fn abstract_start_program(ruby: &Ruby, rb_self: Value, _args: &[Value]) -> Result<Value, Error> {
    Err(abstract_operation(ruby, rb_self, "start_program"))
}

// ---------------------------------------------------------------------------
// The child environment merge and opt-in (16.4, 17.6) are the core's `launch::plan`.

/// W13 (15.2, 16.2): whether some tool-visible grant of `policy` is
/// writable; runtime-only grants do not count. Read from `files`, whose entries
/// are exactly the tool-visible grants (8.5), so nothing touches the disk.
pub(crate) fn has_writable_file_grant(policy: Value) -> Result<bool, Error> {
    let files: RHash = policy.funcall("files", ())?;
    let accesses: RArray = files.funcall("values", ())?;
    for access in accesses {
        let name: String = access.funcall("to_s", ())?;
        if name == "read_write" {
            return Ok(true);
        }
    }
    Ok(false)
}

// ---------------------------------------------------------------------------
// inspect (issue 12 item 8).

/// `#<CLASS provider=:NAME root="/w" files={root: :read_write} runtime_paths={} network=:none open|closed>`:
/// what a user needs, read from the effective policy; never internal state.
fn inspect(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    let class_name = name_of_class(rb_self);
    let Some(base) = borrow(rb_self).and_then(|sandbox| sandbox.base.get()) else {
        return Ok(format!("#<{class_name} uninitialized>"));
    };
    let mut out = format!("#<{class_name}");
    if let Some(provider) = PROVIDERS.name_of(ruby, rb_self.class().as_value())? {
        out.push_str(&format!(" provider=:{provider}"));
    }
    let workspace = ruby.get_inner(base.workspace);
    if let Ok(root) = workspace.funcall::<_, _, Value>("root", ()) {
        out.push_str(&format!(" root={}", vo::inspect_value(ruby, root)?));
    }
    let policy = rb_self
        .funcall::<_, _, Value>("effective_policy", ())
        .unwrap_or_else(|_| ruby.get_inner(base.policy));
    for (label, reader) in [("files", "files"), ("runtime_paths", "runtime_paths")] {
        if let Ok(grants) = policy.funcall::<_, _, Value>(reader, ()) {
            out.push_str(&format!(" {label}={}", vo::inspect_value(ruby, grants)?));
        }
    }
    let network = policy
        .funcall::<_, _, Value>("network", ())
        .ok()
        .filter(|network| !network.is_nil())
        .and_then(|network| network.funcall::<_, _, Value>("mode", ()).ok());
    let network = match network {
        Some(mode) => vo::inspect_value(ruby, mode)?,
        None => "default".to_owned(),
    };
    out.push_str(&format!(" network={network}"));
    let opened = borrow(rb_self).is_some_and(|sandbox| sandbox.opened.get());
    out.push_str(if opened { " open>" } else { " closed>" });
    Ok(out)
}
