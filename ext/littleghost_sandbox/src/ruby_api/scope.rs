//! `LittleGhost::Sandbox::Scope` (SPEC §13): a non-owning view of a sandbox
//! that can only narrow it. The narrowing rules live in the core
//! (`littleghost_sandbox_core::scope`); this file gathers the parent's state
//! through Ruby calls, hands it to the core, and keeps the resulting
//! filesystem broker in the Scope's own TypedData struct (no instance
//! variables; an allocator gives Ruby subclasses the struct too).

use std::path::PathBuf;

use littleghost_sandbox_core::denial::Operation;
use littleghost_sandbox_core::fs::{Broker, FsLimits, FsOperation};
use littleghost_sandbox_core::grants::{Grant, Identity};
use littleghost_sandbox_core::scope as core_scope;
mod narrowing;
use narrowing::{narrow_capabilities, narrow_network, requests, with_network_modes};

use std::cell::RefCell;
use std::sync::Arc;

use magnus::{
    gc::Marker, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, value::LazyId,
    value::Opaque, DataTypeFunctions, Error, IntoValue, KwArgs, RArray, RClass, RHash, RString,
    Ruby, Symbol, TypedData, Value,
};

use crate::helpers::args::{keywords_only, kwargs};
use crate::helpers::convert;
use crate::helpers::{constants, nogvl};
use crate::ruby_api::denial::{self, brokered};
use crate::ruby_api::errors::{self, core_result};
use crate::ruby_api::mount::{grant_from_ruby, grant_to_ruby};
use crate::ruby_api::sandbox::{error_message, truthy};
use crate::ruby_api::{capabilities, workspace};

/// Rust state behind a Scope: its grants, deny markers, pinned identities and
/// broker, and the Ruby objects its readers return.
pub struct ScopeState {
    broker: Broker,
    grants: Vec<Grant>,
    deny_markers: Vec<Grant>,
    identities: Vec<Identity>,
    sandbox: Opaque<Value>,
    workspace: Opaque<Value>,
    capabilities: Opaque<Value>,
    network: Opaque<Value>,
    process_grants: Opaque<Value>,
}

/// A Scope: its state once `initialize` ran. The lock is only ever held to
/// clone or replace the `Arc`, never across a call into Ruby.
#[derive(TypedData, Default)]
#[magnus(class = "LittleGhost::Sandbox::Scope", free_immediately, size, mark)]
pub struct Scope {
    state: RefCell<Option<Arc<ScopeState>>>,
}

impl DataTypeFunctions for Scope {
    fn mark(&self, marker: &Marker) {
        if let Ok(state) = self.state.try_borrow() {
            if let Some(state) = state.as_ref() {
                marker.mark(state.sandbox);
                marker.mark(state.workspace);
                marker.mark(state.capabilities);
                marker.mark(state.network);
                marker.mark(state.process_grants);
            }
        }
    }
}

// Names used on every file operation, interned once rather than per call
// (interning showed up in profiles of `read`).
static SUPPORTS: LazyId = LazyId::new("supports?");
static CAPABILITIES: LazyId = LazyId::new("capabilities");
static RESOLVE: LazyId = LazyId::new("resolve");
static FILESYSTEM_READ: LazyId = LazyId::new("filesystem_read");
static FILESYSTEM_LIST: LazyId = LazyId::new("filesystem_list");
static FILESYSTEM_WRITE: LazyId = LazyId::new("filesystem_write");
static FILESYSTEM_REPLACE: LazyId = LazyId::new("filesystem_replace");

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Scope", ruby.class_object())?;
    class.define_alloc_func::<Scope>();
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("sandbox", method!(reader_sandbox, 0))?;
    class.define_method("workspace", method!(reader_workspace, 0))?;
    class.define_method("capabilities", method!(reader_capabilities, 0))?;
    class.define_method("network", method!(reader_network, 0))?;
    class.define_method("process_grants", method!(reader_process_grants, 0))?;
    class.define_method("policy", method!(effective_policy, 0))?;
    class.define_method("effective_policy", method!(effective_policy, 0))?;
    class.define_method("supports?", method!(supports, -1))?;
    class.define_method("writable?", method!(writable, 0))?;
    class.define_method("allows?", method!(allows, -1))?;
    class.define_method("read", method!(read, -1))?;
    class.define_method("list", method!(list, -1))?;
    class.define_method("write", method!(write, -1))?;
    class.define_method("replace", method!(replace, -1))?;
    class.define_method("execute", method!(execute, -1))?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
    class.define_method("scope", method!(scope, -1))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("validate!", method!(validate, 0))?;
    class.define_method("inspect", method!(inspect, 0))?;
    Ok(())
}

fn state(ruby: &Ruby, rb_self: Value) -> Result<Arc<ScopeState>, Error> {
    <&Scope>::try_convert(rb_self.as_value())
        .ok()
        .and_then(|scope| scope.state.borrow().clone())
        .ok_or_else(|| errors::type_error(ruby, "uninitialized sandbox scope"))
}

fn nil(ruby: &Ruby) -> Value {
    ruby.qnil().as_value()
}

// ---------------------------------------------------------------------------
// Construction (SC.1–SC.10).

/// Scope.new(sandbox:, files: nil, runtime_paths: nil, capabilities: nil, network: nil, parent_scope: nil): a view that can only narrow its parent.
fn initialize(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<(), Error> {
    let options = keywords_only(args)?;
    type Optional = (
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
    );
    let parsed = get_kwargs::<_, (Value,), Optional, ()>(
        options,
        &["sandbox"],
        &[
            "files",
            "runtime_paths",
            "capabilities",
            "network",
            "parent_scope",
        ],
    )?;
    let (sandbox,) = parsed.required;
    // An explicit nil means the same as an absent keyword.
    let present = |value: Option<Value>| value.filter(|v| !v.is_nil());
    let (files, runtime_paths, capabilities, network, parent_scope) = parsed.optional;
    let (files, runtime_paths, capabilities, parent_scope) = (
        present(files),
        present(runtime_paths),
        present(capabilities),
        present(parent_scope),
    );
    let workspace = match crate::ruby_api::sandbox::borrow(sandbox) {
        Some(_) => crate::ruby_api::sandbox::workspace_of(ruby, sandbox),
        None => sandbox.funcall("workspace", ())?,
    };

    // SC.2: what the parent has.
    let (parent_mounts, parent_capabilities, parent_network, parent_markers): (
        RArray,
        Value,
        Value,
        Vec<Grant>,
    ) = match parent_scope {
        Some(parent) => {
            let parent = state(ruby, parent)?;
            (
                RArray::try_convert(ruby.get_inner(parent.process_grants))?,
                ruby.get_inner(parent.capabilities),
                ruby.get_inner(parent.network),
                parent.deny_markers.clone(),
            )
        }
        None => {
            let policy = crate::ruby_api::sandbox::enforced_policy(ruby, sandbox)?;
            (
                policy.funcall("process_grants", (workspace,))?,
                crate::ruby_api::sandbox::enforced_capabilities(ruby, sandbox)?,
                policy.funcall("network", ())?,
                Vec::new(),
            )
        }
    };
    let parent_grants = parent_mounts
        .into_iter()
        .map(|mount| grant_from_ruby(ruby, mount))
        .collect::<Result<Vec<Grant>, Error>>()?;

    // SC.3–SC.8: grants and deny markers.
    let files = requests(ruby, workspace, files, "files")?;
    let runtime = requests(ruby, workspace, runtime_paths, "runtime_paths")?;
    let narrowed = core_result(
        ruby,
        core_scope::narrow_grants(
            &parent_grants,
            &parent_markers,
            files.as_deref(),
            runtime.as_deref(),
        ),
    )?;

    // SC.9–SC.10b: capabilities and network.
    let mut scope_capabilities = narrow_capabilities(ruby, parent_capabilities, capabilities)?;
    let (network, mode) = narrow_network(ruby, parent_capabilities, parent_network, network)?;
    if let Some(mode) = mode {
        scope_capabilities = with_network_modes(ruby, scope_capabilities, &[mode.name()])?;
    }

    // The broker (§14) and the identities validate! compares against (SC.16).
    let limits: Value = sandbox.funcall("limits", ())?;
    let fs_limits = FsLimits {
        read_bytes: limits.funcall("read_bytes", ())?,
        write_bytes: limits.funcall("write_bytes", ())?,
        list_entries: limits.funcall("list_entries", ())?,
    };
    let identities = core_result(ruby, core_scope::capture_identities(&narrowed.grants))?;
    let broker = core_result(
        ruby,
        Broker::new(
            narrowed.grants.clone(),
            narrowed.deny_markers.clone(),
            fs_limits,
        ),
    )?;
    // Issue 7: the roots just pinned must be what the workspace verified at `open`.
    if let Some(recorded) = workspace::borrow(workspace).and_then(|w| w.recorded_identities()) {
        core_result(ruby, broker.check_pins(&recorded))?;
    }
    let process_grants = ruby.ary_new();
    for grant in &narrowed.grants {
        process_grants.push(grant_to_ruby(ruby, grant)?)?;
    }
    process_grants.freeze();

    let state = Arc::new(ScopeState {
        broker,
        grants: narrowed.grants,
        deny_markers: narrowed.deny_markers,
        identities,
        sandbox: sandbox.into(),
        workspace: workspace.into(),
        capabilities: scope_capabilities.into(),
        network: network.into(),
        process_grants: process_grants.as_value().into(),
    });
    let scope = <&Scope>::try_convert(rb_self.as_value())?;
    *scope.state.borrow_mut() = Some(state);
    Ok(())
}

// ---------------------------------------------------------------------------
// Readers (SC.11).

/// The sandbox this scope narrows.
fn reader_sandbox(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.sandbox))
}

/// The sandbox's Workspace.
fn reader_workspace(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.workspace))
}

/// The features and network modes this scope allows.
fn reader_capabilities(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.capabilities))
}

/// The scope's NetworkPolicy, or nil when it keeps the backend's default.
pub(crate) fn reader_network(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.network))
}

/// The scope's grants as frozen Mounts, longest target first.
pub(crate) fn reader_process_grants(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.process_grants))
}

/// The policy the sandbox enforces (`sandbox.effective_policy`).
fn effective_policy(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let sandbox = reader_sandbox(ruby, rb_self)?;
    crate::ruby_api::sandbox::enforced_policy(ruby, sandbox)
}

/// Whether this scope allows `feature` (and, for `:network`, the mode `value`).
fn supports(rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (feature,) = args.required;
    let (value,) = args.optional;
    let capabilities: Value = rb_self.funcall(*CAPABILITIES, ())?;
    capabilities.funcall(*SUPPORTS, (feature, value))
}

pub(crate) fn supports_feature(ruby: &Ruby, rb_self: Value, feature: &str) -> Result<bool, Error> {
    let interned = match feature {
        "filesystem_read" => Some(&FILESYSTEM_READ),
        "filesystem_list" => Some(&FILESYSTEM_LIST),
        "filesystem_write" => Some(&FILESYSTEM_WRITE),
        "filesystem_replace" => Some(&FILESYSTEM_REPLACE),
        _ => None,
    };
    let own = ruby.get_inner(state(ruby, rb_self)?.capabilities);
    if let Some(own) = capabilities::borrow(own) {
        return Ok(own.core().supports(feature));
    }
    let symbol = match interned {
        Some(id) => (**id).into_value_with(ruby),
        None => ruby.to_symbol(feature).as_value(),
    };
    let answer: Value = rb_self.funcall(*SUPPORTS, (symbol,))?;
    Ok(truthy(answer))
}

/// True iff the scope allows filesystem writes and some tool-visible grant is writable.
fn writable(ruby: &Ruby, rb_self: Value) -> Result<bool, Error> {
    if !supports_feature(ruby, rb_self, "filesystem_write")? {
        return Ok(false);
    }
    let state = state(ruby, rb_self)?;
    Ok(state.grants.iter().any(|g| g.tools && g.access.writable()))
}

/// Whether `operation` is allowed, optionally on a logical `path`; false instead of raising for a bad path.
pub(crate) fn allows(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<bool, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (operation,) = args.required;
    let path = args.optional.0.filter(|p| !p.is_nil());
    // A wrong type is misuse, not a path problem: it raises (H.6).
    let path = match path {
        Some(path) => Some(convert::path_string(ruby, path, "path")?.as_value()),
        None => None,
    };
    match allows_or_raise(ruby, rb_self, operation, path) {
        Ok(answer) => Ok(answer),
        Err(error) if is_refusal(ruby, &error)? => Ok(false),
        Err(error) => Err(error),
    }
}

/// The errors SC.13 turns into `false`.
fn is_refusal(ruby: &Ruby, error: &Error) -> Result<bool, Error> {
    Ok(
        error.is_kind_of(constants::class(ruby, "LittleGhost::PolicyError")?)
            || error.is_kind_of(constants::class(ruby, "LittleGhost::ToolError")?)
            || error.is_kind_of(ruby.exception_key_error())
            || error.is_kind_of(ruby.exception_arg_error()),
    )
}

fn allows_or_raise(
    ruby: &Ruby,
    rb_self: Value,
    operation: Value,
    path: Option<Value>,
) -> Result<bool, Error> {
    let class = constants::class(ruby, "LittleGhost::Sandbox::Capabilities")?;
    let operation: Symbol = class.funcall("normalize", (operation,))?;
    let supported: Value = rb_self.funcall("supports?", (operation,))?;
    let Some(path) = path else {
        return Ok(truthy(supported));
    };
    if !truthy(supported) {
        return Ok(false);
    }
    let physical = resolve(ruby, rb_self, path)?;
    let operation = match operation.name()?.as_ref() {
        "filesystem_write" => FsOperation::Write,
        "filesystem_replace" => FsOperation::Replace,
        "filesystem_list" => FsOperation::List,
        // Anything else asks only whether the path is visible.
        _ => FsOperation::Read,
    };
    Ok(state(ruby, rb_self)?.broker.allows(operation, &physical))
}

// ---------------------------------------------------------------------------
// File operations (SC.12). The broker's I/O runs without the GVL; it never
// blocks indefinitely (every open is non-blocking), so it need not be woken.
// Releasing the GVL costs under 0.1 us per call here (measured against a
// direct call on a 4 KiB read), so small operations release it too rather
// than guess a size threshold.

/// The steps every file operation shares before the broker: check!, capability, resolve.
fn prepare(
    ruby: &Ruby,
    rb_self: Value,
    context: Option<Value>,
    feature: &str,
    path: Value,
) -> Result<(PathBuf, String), Error> {
    if let Some(context) = context.filter(|c| !c.is_nil()) {
        // The exception raised by check! propagates as the same object (1.3).
        context.funcall::<_, _, Value>("check!", ())?;
    }
    if !supports_feature(ruby, rb_self, feature)? {
        let sandbox = ruby.get_inner(state(ruby, rb_self)?.sandbox);
        return Err(denial::capability_refused(ruby, sandbox, feature, path));
    }
    let logical = convert::path_string(ruby, path, "path")?;
    let physical = resolve(ruby, rb_self, logical.as_value())?;
    Ok((physical, convert::lossy(logical)))
}

/// `workspace.resolve(path)` through Ruby; its ArgumentError and KeyError become ToolError with the same message.
fn resolve(ruby: &Ruby, rb_self: Value, path: Value) -> Result<PathBuf, Error> {
    let workspace = ruby.get_inner(state(ruby, rb_self)?.workspace);
    match workspace.funcall::<_, _, RString>(*RESOLVE, (path,)) {
        Ok(physical) => Ok(convert::path_of(physical)),
        Err(error)
            if error.is_kind_of(ruby.exception_arg_error())
                || error.is_kind_of(ruby.exception_key_error()) =>
        {
            Err(errors::tool_error(ruby, error_message(&error)))
        }
        Err(error) => Err(error),
    }
}

fn context_keyword(args: RHash) -> Result<Option<Value>, Error> {
    if args.is_empty() {
        return Ok(None); // the usual call; get_kwargs would intern its names
    }
    let parsed = get_kwargs::<_, (), (Option<Value>,), ()>(args, &[], &["context"])?;
    Ok(parsed.optional.0)
}

/// Reads UTF-8 text at a logical `path` through the broker.
pub(crate) fn read(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<String, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let context = context_keyword(args.keywords)?;
    let (physical, logical) = prepare(ruby, rb_self, context, "filesystem_read", args.required.0)?;
    let state = state(ruby, rb_self)?;
    let result = nogvl::blocking(ruby, || state.broker.read(&physical, &logical))?;
    brokered(
        ruby,
        ruby.get_inner(state.sandbox),
        Operation::Read,
        &logical,
        result,
    )
}

/// Lists the directory at a logical `path` (default ".") through the broker.
pub(crate) fn list(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<String, Error> {
    let args = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    let context = context_keyword(args.keywords)?;
    let path = args
        .optional
        .0
        .unwrap_or_else(|| ruby.str_new(".").as_value());
    let (physical, logical) = prepare(ruby, rb_self, context, "filesystem_list", path)?;
    let state = state(ruby, rb_self)?;
    let result = nogvl::blocking(ruby, || state.broker.list(&physical, &logical))?;
    brokered(
        ruby,
        ruby.get_inner(state.sandbox),
        Operation::List,
        &logical,
        result,
    )
}

/// Writes the String `content` to a logical `path` through the broker.
pub(crate) fn write(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<String, Error> {
    let args = scan_args::<(Value, Value), (), (), (), RHash, ()>(args)?;
    let context = context_keyword(args.keywords)?;
    let (path, content) = args.required;
    let (physical, logical) = prepare(ruby, rb_self, context, "filesystem_write", path)?;
    let content = convert::bytes(RString::try_convert(content)?);
    let state = state(ruby, rb_self)?;
    let result = nogvl::blocking(ruby, || state.broker.write(&physical, &logical, &content))?;
    brokered(
        ruby,
        ruby.get_inner(state.sandbox),
        Operation::Write,
        &logical,
        result,
    )
}

/// Replaces the single occurrence of `old_text` with `new_text` (inserted literally) at a logical `path`.
pub(crate) fn replace(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<String, Error> {
    let args = scan_args::<(Value, Value, Value), (), (), (), RHash, ()>(args)?;
    let context = context_keyword(args.keywords)?;
    let (path, old_text, new_text) = args.required;
    let (physical, logical) = prepare(ruby, rb_self, context, "filesystem_replace", path)?;
    let old_text = convert::bytes(RString::try_convert(old_text)?);
    let new_text = convert::bytes(RString::try_convert(new_text)?);
    let state = state(ruby, rb_self)?;
    let result = nogvl::blocking(ruby, || {
        state
            .broker
            .replace(&physical, &logical, &old_text, &new_text)
    })?;
    brokered(
        ruby,
        ruby.get_inner(state.sandbox),
        Operation::Replace,
        &logical,
        result,
    )
}

// ---------------------------------------------------------------------------
// Processes (SC.14).

fn delegate_process(
    ruby: &Ruby,
    rb_self: Value,
    args: &[Value],
    method: &str,
) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    if !supports_feature(ruby, rb_self, "process_execute")? {
        return Err(errors::tool_error(
            ruby,
            "Sandbox scope does not allow process execute",
        ));
    }
    let options = args.keywords;
    options.aset(ruby.to_symbol("scope"), rb_self)?;
    let sandbox = reader_sandbox(ruby, rb_self)?;
    // A streaming block (issue 12 item 11) goes along to the sandbox.
    match ruby.block_proc() {
        Ok(block) => sandbox.funcall_with_block(method, (args.required.0, KwArgs(options)), block),
        Err(_) => sandbox.funcall(method, (args.required.0, KwArgs(options))),
    }
}

/// Runs `command` through the sandbox's shell (`sandbox.execute`) within this scope.
fn execute(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    delegate_process(ruby, rb_self, args, "execute")
}

/// Runs an argument vector through `sandbox.execute_program` within this scope.
fn execute_program(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    delegate_process(ruby, rb_self, args, "execute_program")
}

/// Starts a ProcessSession through `sandbox.start_program` within this scope.
fn start_program(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    delegate_process(ruby, rb_self, args, "start_program")
}

// ---------------------------------------------------------------------------
// Nesting and lifecycle (SC.15, SC.16).

/// A nested scope that narrows this one's current grants, capabilities and network.
fn scope(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    let names = ["files", "runtime_paths", "capabilities", "network"];
    let parsed = get_kwargs::<
        _,
        (),
        (Option<Value>, Option<Value>, Option<Value>, Option<Value>),
        (),
    >(options, &[], &names)?;
    let (files, runtime_paths, capabilities, network) = parsed.optional;
    let nil = nil(ruby);
    let sandbox = reader_sandbox(ruby, rb_self)?;
    let pairs = [
        ("sandbox", sandbox),
        ("files", files.unwrap_or(nil)),
        ("runtime_paths", runtime_paths.unwrap_or(nil)),
        ("capabilities", capabilities.unwrap_or(nil)),
        ("network", network.unwrap_or(nil)),
        ("parent_scope", rb_self.as_value()),
    ];
    rb_self
        .class()
        .funcall("new", (KwArgs(kwargs(ruby, &pairs)?),))
}

/// Returns self; a scope owns nothing and never touches its parent. With a block, yields self, closes (a no-op) and returns the block's value.
fn open(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    get_kwargs::<_, (), (Option<Value>,), ()>(options, &[], &["run"])?;
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self.as_value())
}

/// Returns nil; a scope owns nothing.
fn close(_rb_self: Value) {}

/// Raises CapabilityError if a grant root changed since the scope was built; otherwise returns self.
pub(crate) fn validate(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let state = state(ruby, rb_self)?;
    core_result(
        ruby,
        core_scope::validate_identities(&state.grants, &state.identities),
    )?;
    Ok(rb_self)
}

/// A short description listing the scope's grant targets and access, without the sandbox.
fn inspect(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    let class = rb_self.class();
    let grants = match state(ruby, rb_self) {
        Ok(state) => state
            .grants
            .iter()
            .map(|g| {
                format!(
                    "{}:{}{}",
                    g.target.display(),
                    g.access.name(),
                    if g.tools { "" } else { "(runtime)" }
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => "uninitialized".to_owned(),
    };
    Ok(format!("#<{} grants=[{}]>", class.inspect(), grants))
}
