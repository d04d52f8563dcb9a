//! File operations of the Rust backends (15.1, 16.3): each goes through the
//! sandbox's cached default scope, so the broker's rules of §14 apply in
//! full. `context&.check!` runs first, before any I/O (2.2), including
//! building the default scope; the scope is then called without `context:`.

use magnus::{method, prelude::*, scan_args::scan_args, Error, RClass, Ruby, Value};

use crate::helpers::convert;
use crate::ruby_api::process_runner::check_context;
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::scope::{self, FILE_OPERATIONS, LIST, READ, REPLACE, WRITE};

/// Defines `read`, `list`, `write` and `replace` on a sandbox class whose
/// default scope is `Scope.new(sandbox: self)` (16.3).
pub fn define(class: RClass) -> Result<(), Error> {
    class.define_method("read", method!(file_method::<READ, false>, -1))?;
    class.define_method("list", method!(file_method::<LIST, false>, -1))?;
    class.define_method("write", method!(file_method::<WRITE, false>, -1))?;
    class.define_method("replace", method!(file_method::<REPLACE, false>, -1))?;
    Ok(())
}

/// Unrestricted's (15.5): the four and `allows?`, through a default scope
/// built by the sandbox's own `#scope` (a subclass may override it).
pub fn define_through_scope_hook(class: RClass) -> Result<(), Error> {
    class.define_method("read", method!(file_method::<READ, true>, -1))?;
    class.define_method("list", method!(file_method::<LIST, true>, -1))?;
    class.define_method("write", method!(file_method::<WRITE, true>, -1))?;
    class.define_method("replace", method!(file_method::<REPLACE, true>, -1))?;
    class.define_method("allows?", method!(allows, -1))
}

/// A new `Scope.new(sandbox: self)`, built without dispatch.
pub(crate) fn new_scope(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    crate::ruby_api::scope::default_scope(ruby, rb_self.as_value())
}

/// The cached default scope, built on first use (by `#scope` when `HOOK`).
fn default_scope<const HOOK: bool>(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    if let Some(scope) = rb_self.default_scope(ruby) {
        return Ok(scope);
    }
    let scope = if HOOK {
        rb_self.funcall("scope", ())?
    } else {
        new_scope(ruby, rb_self)?
    };
    rb_self.set_default_scope(scope);
    Ok(scope)
}

/// `read`, `list`, `write` and `replace` of a sandbox (`FILE_OPERATIONS[OP]`)
/// through its default scope: reads UTF-8 text, lists a directory (default
/// "."), writes a file or replaces one exact occurrence of a text at a logical
/// path. `context&.check!` runs before the default scope is built (2.2).
fn file_method<const OP: usize, const HOOK: bool>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<String, Error> {
    let operation = FILE_OPERATIONS[OP];
    let args = scope::FileArguments::parse(ruby, operation, args)?;
    check_context(scope::context_keyword(args.keywords)?)?;
    require_opened_workspace(ruby, rb_self)?;
    let default_scope = default_scope::<HOOK>(ruby, rb_self)?;
    let texts = args.texts()?;
    scope::operate(ruby, default_scope, (operation, &texts), args.path, None)
}

/// A plain Workspace that was never opened and whose root does not exist yet
/// would answer every path with "does not exist": say what to do instead.
/// A root that exists is usable unopened, as upstream allows.
fn require_opened_workspace(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let workspace = crate::ruby_api::sandbox::workspace_of(ruby, rb_self.as_value());
    // An open workspace (every file operation's case) costs one flag read;
    // only an unopened one has its root looked up and stat'ed.
    match crate::ruby_api::workspace::native(ruby, workspace) {
        Some(native) if !native.is_open() => {}
        _ => return Ok(()),
    }
    let root = crate::ruby_api::sandbox::launch::workspace_root(workspace)?;
    if root.is_dir() {
        return Ok(());
    }
    Err(crate::helpers::errors::tool_error(
        ruby,
        format!(
            "Workspace is not open: call workspace.open first (it creates the root {})",
            root.display()
        ),
    ))
}

/// Whether an operation is allowed, optionally on a logical `path`, answered by the cached default scope; never raises for a path or scope problem.
fn allows(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<bool, Error> {
    let parsed = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    // A wrong type is misuse, not a path problem: it raises (H.6).
    if let Some(path) = parsed.optional.0.filter(|p| !p.is_nil()) {
        convert::path_string(ruby, path, "path")?;
    }
    match default_scope::<true>(ruby, rb_self).and_then(|scope| scope::allows(ruby, scope, args)) {
        Ok(answer) => Ok(answer),
        Err(error) if error.is_kind_of(ruby.exception_standard_error()) => Ok(false),
        Err(error) => Err(error),
    }
}
