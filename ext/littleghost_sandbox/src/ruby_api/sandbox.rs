//! `LittleGhost::Sandbox`: the base class every backend (Rust or Ruby) subclasses
//! (SPEC §10, §12). State lives in instance variables set by a Rust
//! `initialize`, and every internal call goes through Ruby dispatch so that
//! overrides in Ruby subclasses win (0.4).

use magnus::{
    function, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, KwArgs,
    RArray, RClass, RHash, RObject, Ruby, Symbol, Value,
};

use crate::helpers::args::{keywords_only, kwargs, unknown_keys};
use crate::helpers::convert;
use crate::helpers::probe;
use crate::helpers::registry::Registry;
use crate::helpers::{constants, value_object as vo};
use crate::ruby_api::errors;

pub fn init(_ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
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
    sandbox.define_method("execute", method!(execute, -1))?;
    sandbox.define_method("read", method!(abstract_read, -1))?;
    sandbox.define_method("list", method!(abstract_list, -1))?;
    sandbox.define_method("write", method!(abstract_write, -1))?;
    sandbox.define_method("replace", method!(abstract_replace, -1))?;
    sandbox.define_method("execute_program", method!(abstract_execute_program, -1))?;
    sandbox.define_method("start_program", method!(abstract_start_program, -1))?;
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
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let (workspace, policy, profiles, limits) = base_options(args)?;
    assign(ruby, rb_self, workspace, policy, profiles, limits)
}

/// Stores the normalised state of 10.1; backends written in Rust call it from their own `initialize`.
pub(crate) fn assign(
    ruby: &Ruby,
    rb_self: RObject,
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
    rb_self.ivar_set("@workspace", workspace)?;
    rb_self.ivar_set("@policy", policy)?;
    rb_self.ivar_set("@profiles", profiles)?;
    rb_self.ivar_set("@limits", limits)?;
    Ok(())
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
fn workspace(rb_self: RObject) -> Result<Value, Error> {
    rb_self.ivar_get("@workspace")
}

/// The normalised policy requested by trusted configuration.
fn policy(rb_self: RObject) -> Result<Value, Error> {
    rb_self.ivar_get("@policy")
}

/// The file and process output bounds enforced by this sandbox.
fn limits(rb_self: RObject) -> Result<Value, Error> {
    rb_self.ivar_get("@limits")
}

/// The policy the backend enforces; the base enforces exactly the requested policy.
fn effective_policy(rb_self: Value) -> Result<Value, Error> {
    rb_self.funcall("policy", ())
}

/// Operations and network modes this backend implements; the base implements none.
fn capabilities(ruby: &Ruby, _rb_self: Value) -> Result<Value, Error> {
    empty_capabilities(ruby)
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
fn scope(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
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
    rb_self: RObject,
    profile: Value,
) -> Result<[Option<Value>; 4], Error> {
    let name: Symbol = vo::name_to_sym(profile, "sandbox profile name")?;
    let profiles: RHash = rb_self.ivar_get("@profiles")?;
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
fn close(_rb_self: Value) {}

/// Executes `command` through `/bin/sh -c` by calling `execute_program`; the only API that interprets shell syntax.
fn execute(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let (command,) = args.required;
    let parsed = get_kwargs::<_, (Value,), (Option<Value>, Option<Value>), RHash>(
        args.keywords,
        &["timeout"],
        &["context", "max_output_bytes"],
    )?;
    let (timeout,) = parsed.required;
    let (context, max_output_bytes) = parsed.optional;
    let options = parsed.splat;
    let nil = ruby.qnil().as_value();
    options.aset(ruby.to_symbol("timeout"), timeout)?;
    options.aset(ruby.to_symbol("context"), context.unwrap_or(nil))?;
    options.aset(
        ruby.to_symbol("max_output_bytes"),
        max_output_bytes.unwrap_or(nil),
    )?;
    let script: Value = ruby.module_kernel().funcall("String", (command,))?;
    let argv = ruby.ary_new_from_values(&[
        ruby.str_new("/bin/sh").as_value(),
        ruby.str_new("-c").as_value(),
        script,
    ]);
    rb_self.funcall("execute_program", (argv, KwArgs(options)))
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
// Provider registry and probe (§12).

/// The one provider registry shared by `Sandbox` and all its subclasses.
const PROVIDERS: Registry = Registry {
    base: "LittleGhost::Sandbox",
    label: "sandbox",
};

/// Registers a trusted backend class under a configuration name.
fn register_provider(ruby: &Ruby, name: Value, implementation: Value) -> Result<Value, Error> {
    PROVIDERS.register(ruby, name, implementation, || {
        errors::argument_error(ruby, "sandbox provider must be a Sandbox class")
    })
}

/// Resolves a registered backend class without ever falling back to another.
fn resolve_provider(ruby: &Ruby, name: Value) -> Result<Value, Error> {
    PROVIDERS.resolve(ruby, name)
}

/// Reports whether a registered backend could start here, without building or opening a sandbox.
fn probe(ruby: &Ruby, _rb_self: Value, args: &[Value]) -> Result<RHash, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let (name,) = args.required;
    let options = args.keywords;
    let dependency_error = constants::class(ruby, "LittleGhost::DependencyError")?;
    let unavailable = |error: Error| -> Result<RHash, Error> {
        if error.is_kind_of(dependency_error) {
            probe::result(ruby, Some(error_message(&error)), || {
                empty_capabilities(ruby)
            })
        } else {
            Err(error)
        }
    };
    let class: Value = match resolve_provider(ruby, name) {
        Ok(class) => class,
        Err(error) => return unavailable(error),
    };
    if defines_own_probe(ruby, class)? {
        return match class.funcall("probe", (KwArgs(options),)) {
            Ok(result) => Ok(result),
            Err(error) => unavailable(error),
        };
    }
    if !options.is_empty() {
        let key: Symbol = vo::name_to_sym(name, "sandbox provider name")?;
        return Err(errors::argument_error(
            ruby,
            format!(
                "sandbox provider :{} does not accept probe options",
                key.name()?
            ),
        ));
    }
    probe::result(ruby, None, || empty_capabilities(ruby))
}

/// True iff `class` (or an ancestor below Sandbox) defines its own singleton `probe`.
fn defines_own_probe(ruby: &Ruby, class: Value) -> Result<bool, Error> {
    let base = constants::class(ruby, "LittleGhost::Sandbox")?;
    let method: Value = class.funcall("method", (ruby.to_symbol("probe"),))?;
    let owner: Value = method.funcall("owner", ())?;
    let base_singleton: Value = base.funcall("singleton_class", ())?;
    Ok(!owner.equal(base_singleton)?)
}

// ---------------------------------------------------------------------------
// The child environment merge and opt-in (16.4, 17.6) are the core's `launch::plan`.

/// W13 (15.2, 16.2): whether some tool-visible grant of the effective policy is
/// writable; runtime-only grants do not count. Read from `files`, whose entries
/// are exactly the tool-visible grants (8.5), so nothing touches the disk.
pub(crate) fn has_writable_file_grant(rb_self: Value) -> Result<bool, Error> {
    let policy: Value = rb_self.funcall("effective_policy", ())?;
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
