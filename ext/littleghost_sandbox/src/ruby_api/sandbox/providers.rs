//! The Sandbox provider registry and `Sandbox.probe` (§12).

use magnus::{prelude::*, scan_args::scan_args, Error, KwArgs, RHash, Ruby, Symbol, Value};

use super::{empty_capabilities, error_message};
use crate::helpers::registry::Registry;
use crate::helpers::{constants, probe, value_object as vo};
use crate::ruby_api::errors;

// ---------------------------------------------------------------------------
// Provider registry and probe (§12).

/// The one provider registry shared by `Sandbox` and all its subclasses.
pub(crate) static PROVIDERS: Registry = Registry {
    base: "LittleGhost::Sandbox",
    label: "sandbox",
    table: &SANDBOX_PROVIDERS,
};
static SANDBOX_PROVIDERS: magnus::value::Lazy<RHash> =
    magnus::value::Lazy::new(|ruby| ruby.hash_new());

/// Registers a trusted backend class under a configuration name.
pub(super) fn register_provider(
    ruby: &Ruby,
    name: Value,
    implementation: Value,
) -> Result<Value, Error> {
    PROVIDERS.register(ruby, name, implementation, || {
        errors::argument_error(ruby, "sandbox provider must be a Sandbox class")
    })
}

/// Resolves a registered backend class without ever falling back to another.
pub(super) fn resolve_provider(ruby: &Ruby, name: Value) -> Result<Value, Error> {
    PROVIDERS.resolve(ruby, name)
}

/// Reports whether a registered backend could start here, without building or opening a sandbox.
pub(super) fn probe(ruby: &Ruby, _rb_self: Value, args: &[Value]) -> Result<RHash, Error> {
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
pub(super) fn defines_own_probe(ruby: &Ruby, class: Value) -> Result<bool, Error> {
    let base = constants::class(ruby, "LittleGhost::Sandbox")?;
    let method: Value = class.funcall("method", (ruby.to_symbol("probe"),))?;
    let owner: Value = method.funcall("owner", ())?;
    let base_singleton: Value = base.funcall("singleton_class", ())?;
    Ok(!owner.equal(base_singleton)?)
}
