//! `LittleGhost::Sandboxes::Native` (SPEC §22): the platform's isolated
//! backend (Seatbelt on macOS, Bubblewrap on Linux), chosen at construction
//! and delegated to. It never falls back to Unrestricted.

use magnus::{function, method, prelude::*, Error, RHash, RModule, Ruby, Value};

use crate::helpers::args::{call_with, keywords_only, split_args};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::probe;
use crate::ruby_api::bubblewrap::platform_or_host;
use crate::ruby_api::capabilities;
use crate::ruby_api::sandbox::SandboxObj;

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class =
        sandboxes.define_class("Native", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("backend", method!(backend, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("effective_policy", method!(effective_policy, 0))?;
    class.define_method("capabilities", method!(capabilities_of, 0))?;
    class.define_method("writable?", method!(writable, 0))?;
    class.define_method("allows?", method!(allows, -1))?;
    class.define_method("scope", method!(scope, -1))?;
    class.define_method("read", method!(read, -1))?;
    class.define_method("list", method!(list, -1))?;
    class.define_method("write", method!(write, -1))?;
    class.define_method("replace", method!(replace, -1))?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
    Ok(())
}

/// The backend class for `platform`, or None where there is no native sandbox.
fn platform_backend(ruby: &Ruby, platform: &str) -> Result<Option<Value>, Error> {
    let name = if platform.contains("darwin") {
        "LittleGhost::Sandboxes::Seatbelt"
    } else if platform.contains("linux") {
        "LittleGhost::Sandboxes::Bubblewrap"
    } else {
        return Ok(None);
    };
    Ok(Some(constants::class(ruby, name)?.as_value()))
}

fn unavailable(platform: &str) -> String {
    format!("native sandboxing is unavailable on {platform}")
}

/// Delegates to `Seatbelt.probe` on macOS and `Bubblewrap.probe` on Linux; unavailable elsewhere.
fn probe(ruby: &Ruby, args: &[Value]) -> Result<Value, Error> {
    let options: RHash = keywords_only(args)?;
    let platform_value = platform_or_host(ruby, options.delete(ruby.to_symbol("platform"))?)?;
    let platform = convert::display_string(ruby, platform_value)?;
    match platform_backend(ruby, &platform)? {
        Some(class) => {
            options.aset(ruby.to_symbol("platform"), platform_value)?;
            call_with(class, "probe", &[], options)
        }
        None => Ok(probe::result(ruby, Some(unavailable(&platform)), || {
            capabilities::empty(ruby)
        })?
        .as_value()),
    }
}

/// Builds the platform backend with `(workspace:, platform:, **options)`; raises UnsupportedPlatformError elsewhere.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let options: RHash = keywords_only(args)?;
    let Some(workspace) = options.delete::<_, Option<Value>>(ruby.to_symbol("workspace"))? else {
        return Err(crate::ruby_api::errors::argument_error(
            ruby,
            "missing keyword: :workspace",
        ));
    };
    let platform_value = platform_or_host(ruby, options.delete(ruby.to_symbol("platform"))?)?;
    let platform = convert::display_string(ruby, platform_value)?;
    let Some(class) = platform_backend(ruby, &platform)? else {
        return Err(crate::ruby_api::errors::unsupported_platform_error(
            ruby,
            unavailable(&platform),
        ));
    };
    options.aset(ruby.to_symbol("workspace"), workspace)?;
    options.aset(ruby.to_symbol("platform"), platform_value)?;
    let backend = call_with(class, "new", &[], options)?;
    rb_self.ivar_set("@backend", backend)?;
    crate::ruby_api::sandbox::store(
        ruby,
        rb_self,
        backend.funcall("workspace", ())?,
        backend.funcall("policy", ())?,
        ruby.hash_new().as_value(),
        backend.funcall("limits", ())?,
    )
}

/// The platform backend every operation is delegated to.
fn backend(rb_self: SandboxObj) -> Result<Value, Error> {
    rb_self.ivar_get("@backend")
}

fn delegate(rb_self: SandboxObj, name: &str, args: &[Value]) -> Result<Value, Error> {
    let (positionals, keywords) = split_args(args)?;
    call_with(backend(rb_self)?, name, &positionals, keywords)
}

/// Opens the platform backend and returns this Native sandbox; with a block, yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "open", args)?;
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self.as_value())
}

/// Closes the platform backend.
fn close(rb_self: SandboxObj) -> Result<Value, Error> {
    backend(rb_self)?.funcall("close", ())
}

/// The platform backend's effective policy.
fn effective_policy(rb_self: SandboxObj) -> Result<Value, Error> {
    backend(rb_self)?.funcall("effective_policy", ())
}

/// The platform backend's capabilities.
fn capabilities_of(rb_self: SandboxObj) -> Result<Value, Error> {
    backend(rb_self)?.funcall("capabilities", ())
}

/// The platform backend's answer to `writable?`.
fn writable(rb_self: SandboxObj) -> Result<Value, Error> {
    backend(rb_self)?.funcall("writable?", ())
}

/// The platform backend's answer to `allows?`.
fn allows(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "allows?", args)
}

/// A scope of the platform backend.
fn scope(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "scope", args)
}

/// Reads through the platform backend.
fn read(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "read", args)
}

/// Lists through the platform backend.
fn list(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "list", args)
}

/// Writes through the platform backend.
fn write(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "write", args)
}

/// Replaces text through the platform backend.
fn replace(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "replace", args)
}

/// Executes a program in the platform backend.
fn execute_program(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "execute_program", args)
}

/// Starts a program session in the platform backend.
fn start_program(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    delegate(rb_self, "start_program", args)
}
