//! `LittleGhost::Sandbox::Scope` (SPEC §13): a non-owning view of a sandbox
//! that can only narrow it. The narrowing rules live in the core
//! (`littleghost_sandbox_core::scope::narrow`); `narrowing.rs` parses the
//! keywords and reads the parent's state in Rust. The result (core grants,
//! capabilities and the filesystem broker) sits in the Scope's TypedData
//! struct, so a file operation reaches the broker without Ruby dispatch.
//!
//! Backends parse a file operation with [`FileArguments`] and run it on a
//! Scope value with [`operate`]. `execute`, `execute_program`,
//! `start_program` (delegated to the sandbox), `scope` (a nested
//! `Scope.new`), `open` and `close` (a scope owns nothing) are Ruby, in
//! `lib/littleghost/sandbox/scope.rb`.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;

use littleghost_sandbox_core::denial::Operation;
use littleghost_sandbox_core::error::{Error as CoreError, Kind};
use littleghost_sandbox_core::policy as core_policy;
use littleghost_sandbox_core::scope::{self as core_scope, Scoped};
use littleghost_sandbox_core::workspace as workspace_core;
use magnus::{
    gc::Marker, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, value::LazyId,
    value::Opaque, DataTypeFunctions, Error, RArray, RClass, RHash, RString, Ruby, TypedData,
    Value,
};

use crate::helpers::errors::message as error_message;
use crate::helpers::errors::{self, core_result};
use crate::helpers::{constants, convert, nogvl, value_object as vo};
use crate::ruby_api::denial::{self, brokered};
use crate::ruby_api::{capabilities, workspace};

mod narrowing;

/// Rust state behind a Scope: what the core built, and the Ruby objects its readers return.
pub struct ScopeState {
    scoped: Scoped,
    /// The sandbox, workspace, capabilities, network and process grants (see [`SANDBOX`] ...).
    values: [Opaque<Value>; 5],
}

/// Indexes into [`ScopeState::values`], the order of `Scope`'s readers.
const SANDBOX: usize = 0;
const WORKSPACE: usize = 1;
const CAPABILITIES: usize = 2;
const NETWORK: usize = 3;
const PROCESS_GRANTS: usize = 4;

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
                state.values.iter().for_each(|value| marker.mark(*value));
            }
        }
    }
}

/// Interned once: `resolve` on a duck-typed workspace is on every file operation.
static RESOLVE: LazyId = LazyId::new("resolve");

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Scope", ruby.class_object())?;
    class.define_alloc_func::<Scope>();
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("sandbox", method!(reader::<SANDBOX>, 0))?;
    class.define_method("workspace", method!(reader::<WORKSPACE>, 0))?;
    class.define_method("capabilities", method!(reader::<CAPABILITIES>, 0))?;
    class.define_method("network", method!(reader::<NETWORK>, 0))?;
    class.define_method("process_grants", method!(reader::<PROCESS_GRANTS>, 0))?;
    class.define_method("policy", method!(effective_policy, 0))?;
    class.define_method("effective_policy", method!(effective_policy, 0))?;
    class.define_method("supports?", method!(supports, -1))?;
    class.define_method("writable?", method!(writable, 0))?;
    class.define_method("allows?", method!(allows, -1))?;
    class.define_method("read", method!(file_method::<READ>, -1))?;
    class.define_method("list", method!(file_method::<LIST>, -1))?;
    class.define_method("write", method!(file_method::<WRITE>, -1))?;
    class.define_method("replace", method!(file_method::<REPLACE>, -1))?;
    class.define_method("validate!", method!(validate, 0))?;
    class.define_method("inspect", method!(inspect, 0))?;
    Ok(())
}

fn state(ruby: &Ruby, rb_self: Value) -> Result<Arc<ScopeState>, Error> {
    <&Scope>::try_convert(rb_self)
        .ok()
        .and_then(|scope| scope.state.borrow().clone())
        .ok_or_else(|| errors::type_error(ruby, "uninitialized sandbox scope"))
}

// ---------------------------------------------------------------------------
// Construction (SC.1–SC.10) and readers (SC.11).

/// Scope.new(sandbox:, files: nil, runtime_paths: nil, capabilities: nil, network: nil, parent_scope: nil): a view that can only narrow its parent.
fn initialize(ruby: &Ruby, rb_self: &Scope, args: &[Value]) -> Result<(), Error> {
    let keywords = narrowing::keywords(args)?;
    let state = narrowing::build(ruby, &keywords)?;
    *rb_self.state.borrow_mut() = Some(Arc::new(state));
    Ok(())
}

/// `sandbox`, `workspace`, `capabilities`, `network` (nil when the scope
/// keeps the backend's default) and `process_grants` (frozen Mounts, longest
/// target first): what `Scope.new` fixed.
fn reader<const I: usize>(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.values[I]))
}

/// `supports?(feature, value = nil)`: what the scope's own capabilities
/// allow, from its Rust state (as `allows?`, `writable?` and the file
/// operations answer), not from a method a subclass may override.
fn supports(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<bool, Error> {
    let own = reader::<CAPABILITIES>(ruby, rb_self)?;
    let own = capabilities::borrow(own)
        .ok_or_else(|| errors::type_error(ruby, "uninitialized sandbox scope"))?;
    capabilities::supports(ruby, own, args)
}

/// The scope's NetworkPolicy or nil (for the backends' launch options).
pub(crate) fn reader_network(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    reader::<NETWORK>(ruby, rb_self)
}

/// The scope's grants as frozen Mounts (for the backends' launch options).
pub(crate) fn reader_process_grants(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    reader::<PROCESS_GRANTS>(ruby, rb_self)
}

/// The policy the sandbox enforces (`sandbox.effective_policy`).
fn effective_policy(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let sandbox = reader::<SANDBOX>(ruby, rb_self)?;
    crate::ruby_api::sandbox::state::enforced_policy(ruby, sandbox)
}

// ---------------------------------------------------------------------------
// Predicates (SC.11, SC.13).

/// Whether the scope at `rb_self` allows the canonical `feature` (for the backends).
pub(crate) fn supports_feature(ruby: &Ruby, rb_self: Value, feature: &str) -> Result<bool, Error> {
    Ok(state(ruby, rb_self)?.scoped.supports(feature))
}

/// True iff the scope allows filesystem writes and some tool-visible grant is writable.
fn writable(ruby: &Ruby, rb_self: Value) -> Result<bool, Error> {
    Ok(state(ruby, rb_self)?.scoped.writable())
}

/// Whether `operation` is allowed, optionally on a logical `path`; false instead of raising for a bad path.
pub(crate) fn allows(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<bool, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (operation,) = args.required;
    let path = args.optional.0.filter(|p| !p.is_nil());
    // A wrong type is misuse, not a path problem: it raises (H.6).
    let path = path.map(|path| convert::path_string(ruby, path, "path"));
    let path = path.transpose()?;
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
    path: Option<RString>,
) -> Result<bool, Error> {
    let feature = core_result(ruby, core_policy::normalize_feature(&vo::given(operation)?))?;
    let state = state(ruby, rb_self)?;
    if !state.scoped.supports(&feature) {
        return Ok(false); // without resolving the path
    }
    let physical = path.map(|path| resolve(ruby, &state, path)).transpose()?;
    Ok(state.scoped.allows(&feature, physical.as_deref()))
}

// ---------------------------------------------------------------------------
// File operations (SC.12). The broker's I/O runs without the GVL; it never
// blocks indefinitely (every open is non-blocking), so it need not be woken.
// Releasing the GVL costs under 0.1 us per call here (measured against a
// direct call on a 4 KiB read), so small operations release it too rather
// than guess a size threshold.

/// The steps every file operation shares before the broker: check!,
/// capability, resolve. A reference the workspace refuses (`../x`, an
/// absolute path, an unknown name) is a denial of `operation`, reported
/// through [`brokered`] as the broker's refusals are.
fn prepare(
    ruby: &Ruby,
    state: &ScopeState,
    context: Option<Value>,
    (operation, feature): (Operation, &str),
    path: Value,
) -> Result<(PathBuf, String), Error> {
    // The exception raised by check! propagates as the same object (1.3).
    crate::ruby_api::process_runner::check_context(context)?;
    if !state.scoped.supports(feature) {
        let sandbox = ruby.get_inner(state.values[SANDBOX]);
        return Err(denial::capability_refused(ruby, sandbox, feature, path));
    }
    let logical = convert::path_string(ruby, path, "path")?;
    let result = resolve_reference(ruby, state, logical)?.map_err(|error| {
        // SAFETY: the bytes are copied before any other Ruby call.
        let reference = unsafe { logical.as_slice() }.to_vec();
        workspace_core::refused_reference(&reference, error)
    });
    let sandbox = ruby.get_inner(state.values[SANDBOX]);
    let logical = convert::lossy(logical);
    let physical = brokered(ruby, sandbox, operation, &logical, result)?;
    Ok((physical, logical))
}

/// `workspace.resolve(path)` for `allows?`: its ArgumentError and KeyError become ToolError with the same message.
fn resolve(ruby: &Ruby, state: &ScopeState, logical: RString) -> Result<PathBuf, Error> {
    resolve_reference(ruby, state, logical)?
        .map_err(|error| errors::tool_error(ruby, error.message()))
}

/// `workspace.resolve(path)` (in Rust for a plain Workspace): `Ok(Err(..))`
/// holds its ArgumentError or KeyError as a core error, to be classified
/// (`refused_reference`) or raised as a ToolError with the same message.
fn resolve_reference(
    ruby: &Ruby,
    state: &ScopeState,
    logical: RString,
) -> Result<Result<PathBuf, CoreError>, Error> {
    let workspace = ruby.get_inner(state.values[WORKSPACE]);
    if let Some(native) = workspace::native(ruby, workspace) {
        return match native.resolve_core(&convert::path_of(logical)) {
            Ok(physical) => Ok(Ok(physical)),
            // Worded as Ruby shows it first, like a duck-typed workspace's own errors.
            Err(error) => match error.kind() {
                Kind::Argument => Ok(Err(CoreError::Argument(errors::ruby_message(&error)))),
                Kind::Key => Ok(Err(CoreError::Key(errors::ruby_message(&error)))),
                _ => Err(errors::from_core(ruby, error)),
            },
        };
    }
    // A Workspace subclass or a duck-typed workspace: its own `resolve`.
    match workspace.funcall::<_, _, RString>(*RESOLVE, (logical,)) {
        Ok(physical) => Ok(Ok(convert::path_of(physical))),
        Err(error) if error.is_kind_of(ruby.exception_arg_error()) => {
            Ok(Err(CoreError::Argument(error_message(&error))))
        }
        Err(error) if error.is_kind_of(ruby.exception_key_error()) => {
            Ok(Err(CoreError::Key(error_message(&error))))
        }
        Err(error) => Err(error),
    }
}

/// `context:`, the one keyword of a file operation.
pub(crate) fn context_keyword(args: RHash) -> Result<Option<Value>, Error> {
    if args.is_empty() {
        return Ok(None); // the usual call; get_kwargs would intern its names
    }
    let parsed = get_kwargs::<_, (), (Option<Value>,), ()>(args, &[], &["context"])?;
    Ok(parsed.optional.0)
}

/// The file operations, indexed by the const parameter of the methods that run them.
pub(crate) const READ: usize = 0;
pub(crate) const LIST: usize = 1;
pub(crate) const WRITE: usize = 2;
pub(crate) const REPLACE: usize = 3;
pub(crate) const FILE_OPERATIONS: [Operation; 4] = [
    Operation::Read,
    Operation::List,
    Operation::Write,
    Operation::Replace,
];

/// The arguments of `read(path)`, `list(path = ".")`, `write(path, content)`
/// or `replace(path, old_text, new_text)`. Kept on the stack, where the GC
/// sees the Values (the default "." is referenced nowhere else).
pub(crate) struct FileArguments {
    pub(crate) path: Value,
    /// `content`, or `old_text` and `new_text`.
    texts: [Option<Value>; 2],
    pub(crate) keywords: RHash,
}

impl FileArguments {
    pub(crate) fn parse(
        ruby: &Ruby,
        operation: Operation,
        args: &[Value],
    ) -> Result<FileArguments, Error> {
        let args = scan_args::<(), (), RArray, (), RHash, ()>(args)?;
        let given = args.splat;
        ruby.check_arity(given.len(), core_scope::file_arguments(operation))?;
        let path = if given.is_empty() {
            ruby.str_new(".").as_value() // `list`'s default, the only path that may be absent
        } else {
            given.entry(0)?
        };
        let text = |index: usize| {
            let given = (index < given.len()).then(|| given.entry(index as isize));
            given.transpose()
        };
        Ok(FileArguments {
            path,
            texts: [text(1)?, text(2)?],
            keywords: args.keywords,
        })
    }

    /// The texts as bytes; each must be a String.
    pub(crate) fn texts(&self) -> Result<Vec<Vec<u8>>, Error> {
        let text = |value: &Value| Ok(convert::bytes(RString::try_convert(*value)?));
        self.texts.iter().flatten().map(text).collect()
    }
}

/// `read`, `list`, `write` and `replace` of a Scope: reads UTF-8 text, lists a
/// directory, writes a file or replaces the single occurrence of a text at a
/// logical path through the broker (`FILE_OPERATIONS[OP]`).
fn file_method<const OP: usize>(
    ruby: &Ruby,
    rb_self: Value,
    args: &[Value],
) -> Result<String, Error> {
    let operation = FILE_OPERATIONS[OP];
    let args = FileArguments::parse(ruby, operation, args)?;
    let texts = args.texts()?;
    let context = context_keyword(args.keywords)?;
    operate(ruby, rb_self, (operation, &texts), args.path, context)
}

/// One file operation with its texts on the scope at `rb_self`: check!,
/// capability, resolve, then the broker without the GVL.
pub(crate) fn operate(
    ruby: &Ruby,
    rb_self: Value,
    (operation, texts): (Operation, &[Vec<u8>]),
    path: Value,
    context: Option<Value>,
) -> Result<String, Error> {
    let state = state(ruby, rb_self)?;
    let feature = core_scope::file_feature(operation).unwrap_or("filesystem_read");
    let (physical, logical) = prepare(ruby, &state, context, (operation, feature), path)?;
    let broker = &state.scoped.broker;
    let result = nogvl::blocking(ruby, || match (operation, texts) {
        (Operation::Write, [content]) => broker.write(&physical, &logical, content),
        (Operation::Replace, [old, new]) => broker.replace(&physical, &logical, old, new),
        (Operation::List, _) => broker.list(&physical, &logical),
        _ => broker.read(&physical, &logical),
    })?;
    let sandbox = ruby.get_inner(state.values[SANDBOX]);
    brokered(ruby, sandbox, operation, &logical, result)
}

// ---------------------------------------------------------------------------
// Construction without dispatch and lifecycle (SC.15, SC.16).

/// `Scope.new(sandbox: sandbox)` without Ruby dispatch: the default scope a
/// backend's file operations go through (16.3; `sandbox/scoped_files.rs`).
pub(crate) fn default_scope(ruby: &Ruby, sandbox: Value) -> Result<Value, Error> {
    narrowed(ruby, sandbox, [None; 4])
}

/// `Scope.new(sandbox:, files:, runtime_paths:, capabilities:, network:)`
/// without Ruby dispatch (`Sandbox#scope`).
pub(crate) fn narrowed(
    ruby: &Ruby,
    sandbox: Value,
    options: [Option<Value>; 4],
) -> Result<Value, Error> {
    let keywords = narrowing::Keywords {
        sandbox,
        parent_scope: None,
        asked: options,
    };
    let state = narrowing::build(ruby, &keywords)?;
    let scope = Scope {
        state: RefCell::new(Some(Arc::new(state))),
    };
    Ok(ruby.obj_wrap(scope).as_value())
}

/// Raises CapabilityError if a grant root changed since the scope was built; otherwise returns self.
pub(crate) fn validate(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    core_result(ruby, state(ruby, rb_self)?.scoped.validate())?;
    Ok(rb_self)
}

/// A short description listing the scope's grant targets and access, without the sandbox.
fn inspect(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    let class = rb_self.class();
    let grants = match state(ruby, rb_self) {
        Ok(state) => state.scoped.grants_summary(),
        Err(_) => "uninitialized".to_owned(),
    };
    Ok(format!("#<{} grants=[{}]>", class.inspect(), grants))
}
