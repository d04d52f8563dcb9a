//! The Sandbox provider registry and `Sandbox.probe` (§12).

use magnus::{
    function, method, prelude::*, scan_args::scan_args, Error, KwArgs, RClass, RHash, Ruby, Value,
};

use crate::helpers::constants;
use crate::helpers::errors;
use crate::helpers::registry::Registry;
use crate::ruby_api::capabilities;
use crate::ruby_api::sandbox::probe;

/// The one provider registry shared by `Sandbox` and all its subclasses.
pub(crate) static PROVIDERS: Registry = Registry::new("LittleGhost::Sandbox", "sandbox");

pub(super) fn init(sandbox: RClass) -> Result<(), Error> {
    sandbox.define_singleton_method("register_provider", function!(register_provider, 2))?;
    sandbox.define_singleton_method("resolve_provider", function!(resolve_provider, 1))?;
    sandbox.define_singleton_method("probe", method!(probe, -1))
}

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

/// `Sandbox.probe(name, **options)`: reports whether a registered backend
/// could start here, without building or opening a sandbox, by calling the
/// provider class's own `probe`. A provider without one inherits this
/// method, which it reaches without a name (`Provider.probe(**options)`):
/// available, with no capabilities, and it takes no options.
fn probe(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<RHash, Error> {
    let args = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    let options = args.keywords;
    let unavailable = |error: Error| -> Result<RHash, Error> {
        let dependency_error = constants::class(ruby, "LittleGhost::DependencyError")?;
        if !error.is_kind_of(dependency_error) {
            return Err(error);
        }
        probe::result(ruby, Some(errors::message(&error)), || {
            capabilities::empty(ruby)
        })
    };
    let Some(name) = args.optional.0 else {
        return probe_without_hook(ruby, rb_self, options);
    };
    let class = match PROVIDERS.resolve(ruby, name) {
        Ok(class) => class,
        Err(error) => return unavailable(error),
    };
    // The provider's own `probe` (a documented hook a Ruby subclass may define).
    match class.funcall("probe", (KwArgs(options),)) {
        Ok(result) => Ok(result),
        Err(error) => unavailable(error),
    }
}

/// The answer for a registered provider that defines no `probe` of its own;
/// the base class (or an unregistered class) still needs the name.
fn probe_without_hook(ruby: &Ruby, class: Value, options: RHash) -> Result<RHash, Error> {
    let Some(name) = PROVIDERS.name_of(ruby, class) else {
        return Err(errors::argument_error(
            ruby,
            "wrong number of arguments (given 0, expected 1)",
        ));
    };
    if !options.is_empty() {
        return Err(errors::argument_error(
            ruby,
            format!("sandbox provider :{name} does not accept probe options"),
        ));
    }
    probe::result(ruby, None, || capabilities::empty(ruby))
}
