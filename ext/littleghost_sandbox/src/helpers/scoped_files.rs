//! File operations of the Bubblewrap and Seatbelt sandboxes (16.3): each
//! goes through the sandbox's cached default scope, so the broker's rules of
//! §14 apply in full.

use magnus::{method, prelude::*, Error, KwArgs, RClass, Ruby, Value};

use crate::helpers::args::{call_with, kwargs, split_args};
use crate::helpers::constants;
use crate::ruby_api::sandbox::SandboxObj;

/// Defines `read`, `list`, `write` and `replace` on a sandbox class.
pub fn define(class: RClass) -> Result<(), Error> {
    class.define_method("read", method!(read, -1))?;
    class.define_method("list", method!(list, -1))?;
    class.define_method("write", method!(write, -1))?;
    class.define_method("replace", method!(replace, -1))?;
    Ok(())
}

/// The cached default scope of 16.3 (`Scope.new(sandbox: self)`), built on first use.
fn default_scope(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    let sandbox = crate::ruby_api::sandbox::borrow(rb_self.as_value())
        .ok_or_else(|| crate::ruby_api::errors::type_error(ruby, "not a LittleGhost::Sandbox"))?;
    if let Some(scope) = sandbox.default_scope(ruby) {
        return Ok(scope);
    }
    let class = constants::class(ruby, "LittleGhost::Sandbox::Scope")?;
    let scope: Value = class.funcall(
        "new",
        (KwArgs(kwargs(ruby, &[("sandbox", rb_self.as_value())])?),),
    )?;
    sandbox.set_default_scope(scope);
    Ok(scope)
}

/// A file operation through the cached default scope (so §14 applies in full).
fn through_scope(
    ruby: &Ruby,
    rb_self: SandboxObj,
    name: &str,
    args: &[Value],
) -> Result<Value, Error> {
    let (positionals, keywords) = split_args(args)?;
    let scope = default_scope(ruby, rb_self)?;
    call_with(scope, name, &positionals, keywords)
}

/// Reads UTF-8 text at a logical path through the sandbox's default scope.
fn read(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    through_scope(ruby, rb_self, "read", args)
}

/// Lists a directory at a logical path through the sandbox's default scope.
fn list(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    through_scope(ruby, rb_self, "list", args)
}

/// Writes a file at a logical path through the sandbox's default scope.
fn write(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    through_scope(ruby, rb_self, "write", args)
}

/// Replaces one exact occurrence of text through the sandbox's default scope.
fn replace(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    through_scope(ruby, rb_self, "replace", args)
}
