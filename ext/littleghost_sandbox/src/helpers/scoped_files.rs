//! File operations of the Rust backends (15.1, 16.3): each goes through the
//! sandbox's cached default scope, so the broker's rules of §14 apply in
//! full. `context&.check!` runs first, before any I/O (2.2), including
//! building the default scope; the scope is then called without `context:`.

use magnus::{
    method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, RClass, RHash, Ruby,
    Value,
};

use crate::helpers::convert;
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::scope;

/// Defines `read`, `list`, `write` and `replace` on a sandbox class whose
/// default scope is `Scope.new(sandbox: self)` (16.3).
pub fn define(class: RClass) -> Result<(), Error> {
    class.define_method("read", method!(read::<false>, -1))?;
    class.define_method("list", method!(list::<false>, -1))?;
    class.define_method("write", method!(write::<false>, -1))?;
    class.define_method("replace", method!(replace::<false>, -1))?;
    Ok(())
}

/// Unrestricted's (15.5): the four and `allows?`, through a default scope
/// built by the sandbox's own `#scope` (a subclass may override it).
pub fn define_through_scope_hook(class: RClass) -> Result<(), Error> {
    class.define_method("read", method!(read::<true>, -1))?;
    class.define_method("list", method!(list::<true>, -1))?;
    class.define_method("write", method!(write::<true>, -1))?;
    class.define_method("replace", method!(replace::<true>, -1))?;
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

/// The arguments a Scope operation is called with: `positionals`, and an
/// empty keyword Hash when the caller passed keywords (the method's own
/// keyword flag is still set, so the last argument is read as keywords).
fn scope_args(
    ruby: &Ruby,
    given: &[Value],
    mut positionals: Vec<Value>,
    fixed: usize,
) -> Vec<Value> {
    if given.len() > fixed {
        positionals.push(ruby.hash_new().as_value());
    }
    positionals
}

/// Calls `context&.check!` before any I/O (2.2).
fn checked(keywords: RHash) -> Result<(), Error> {
    if keywords.is_empty() {
        return Ok(()); // the usual call; get_kwargs would intern its names
    }
    let parsed = get_kwargs::<_, (), (Option<Value>,), ()>(keywords, &[], &["context"])?;
    crate::ruby_api::process_runner::check_context(parsed.optional.0)
}

/// Reads UTF-8 text at a logical path through the sandbox's default scope.
fn read<const HOOK: bool>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<String, Error> {
    let parsed = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    checked(parsed.keywords)?;
    let call = scope_args(ruby, args, vec![parsed.required.0], 1);
    scope::read(ruby, default_scope::<HOOK>(ruby, rb_self)?, &call)
}

/// Lists a directory at a logical path (default ".") through the sandbox's default scope.
fn list<const HOOK: bool>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<String, Error> {
    let parsed = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    checked(parsed.keywords)?;
    let given = usize::from(parsed.optional.0.is_some());
    let path = parsed
        .optional
        .0
        .unwrap_or_else(|| ruby.str_new(".").as_value());
    let call = scope_args(ruby, args, vec![path], given);
    scope::list(ruby, default_scope::<HOOK>(ruby, rb_self)?, &call)
}

/// Writes a file at a logical path through the sandbox's default scope.
fn write<const HOOK: bool>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<String, Error> {
    let parsed = scan_args::<(Value, Value), (), (), (), RHash, ()>(args)?;
    checked(parsed.keywords)?;
    let (path, content) = parsed.required;
    let call = scope_args(ruby, args, vec![path, content], 2);
    scope::write(ruby, default_scope::<HOOK>(ruby, rb_self)?, &call)
}

/// Replaces one exact occurrence of text through the sandbox's default scope.
fn replace<const HOOK: bool>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<String, Error> {
    let parsed = scan_args::<(Value, Value, Value), (), (), (), RHash, ()>(args)?;
    checked(parsed.keywords)?;
    let (path, old_text, new_text) = parsed.required;
    let call = scope_args(ruby, args, vec![path, old_text, new_text], 3);
    scope::replace(ruby, default_scope::<HOOK>(ruby, rb_self)?, &call)
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
