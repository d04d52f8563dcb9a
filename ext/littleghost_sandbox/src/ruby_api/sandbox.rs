//! `LittleGhost::Sandbox`: the base class every backend (Rust or Ruby) subclasses.
//! (Registry only for now; the rest of SPEC §10/§12 follows.)

use magnus::{function, prelude::*, Error, RClass, RHash, Ruby, Symbol, Value};

use crate::helpers::constants;
use crate::ruby_api::errors;

pub fn init(_ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    sandbox.define_singleton_method("register_provider", function!(register_provider, 2))?;
    sandbox.define_singleton_method("resolve_provider", function!(resolve_provider, 1))?;
    Ok(())
}

/// The one provider registry shared by `Sandbox` and all its subclasses.
fn registry(ruby: &Ruby) -> Result<RHash, Error> {
    let base = constants::class(ruby, "LittleGhost::Sandbox")?;
    let existing: Option<RHash> = base.ivar_get("@__providers").ok().flatten();
    match existing {
        Some(hash) => Ok(hash),
        None => {
            let hash = ruby.hash_new();
            base.ivar_set("@__providers", hash)?;
            Ok(hash)
        }
    }
}

/// Sandbox.register_provider(name, implementation): registers a trusted backend class.
fn register_provider(ruby: &Ruby, name: Value, implementation: Value) -> Result<Value, Error> {
    let base = constants::class(ruby, "LittleGhost::Sandbox")?;
    let is_sandbox_class = RClass::from_value(implementation)
        .map(|class| class.as_value().equal(base).unwrap_or(false) || class.is_inherited(base))
        .unwrap_or(false);
    if !is_sandbox_class {
        return Err(errors::argument_error(ruby, "sandbox provider must be a Sandbox class"));
    }
    let key: Symbol = name.funcall("to_sym", ())?;
    registry(ruby)?.aset(key, implementation)?;
    Ok(implementation)
}

/// Sandbox.resolve_provider(name): the registered class, never a fallback.
fn resolve_provider(ruby: &Ruby, name: Value) -> Result<Value, Error> {
    let key: Symbol = name.funcall("to_sym", ())?;
    match registry(ruby)?.get(key) {
        Some(class) => Ok(class),
        None => Err(errors::dependency_error(
            ruby,
            format!("sandbox provider :{} is not available", key.name()?),
        )),
    }
}
