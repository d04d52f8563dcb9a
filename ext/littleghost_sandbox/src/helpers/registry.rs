//! The provider registries of `Sandbox` (§12) and `Workspace` (3.9): one
//! table per base class, shared by all its subclasses, that never falls back.
//! The table is the core's [`providers::Registry`] of class handles; this
//! file checks what may be registered and converts names.

use std::sync::{Mutex, MutexGuard};

use littleghost_sandbox_core::sandbox::providers;
use magnus::{
    prelude::*, rb_sys::AsRawValue, value::Opaque, Error, RClass, RHash, Ruby, Symbol, Value,
};

use crate::helpers::errors;
use crate::helpers::{constants, value_object as vo};

/// A registry for the base class named `base`; its label starts its messages.
pub struct Registry {
    base: &'static str,
    table: Mutex<providers::Registry<Opaque<Value>>>,
}

impl Registry {
    pub const fn new(base: &'static str, label: &'static str) -> Registry {
        Registry {
            base,
            table: Mutex::new(providers::Registry::new(label)),
        }
    }

    /// Never held across a call into Ruby.
    fn table(&self) -> MutexGuard<'_, providers::Registry<Opaque<Value>>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A frozen Hash copy of the table (test hooks save it around an example).
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    pub fn snapshot(&self, ruby: &Ruby) -> Result<RHash, Error> {
        let copy = ruby.hash_new();
        let entries = self.table().entries();
        for (name, class) in entries {
            copy.aset(ruby.to_symbol(name), ruby.get_inner(class))?;
        }
        copy.freeze();
        Ok(copy)
    }

    /// Replaces the table's contents with `snapshot`'s.
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    pub fn restore(&self, snapshot: RHash) -> Result<(), Error> {
        let mut restored = providers::Registry::new(self.table().label());
        for (name, class) in vo::hash_pairs(snapshot)? {
            restored.register(vo::sym_name(Symbol::try_convert(name)?)?, class.into());
        }
        *self.table() = restored;
        Ok(())
    }

    /// Stores `implementation` under `name` if it is the base class or a subclass;
    /// otherwise returns `refusal` (each registry words its ArgumentError).
    pub fn register(
        &self,
        ruby: &Ruby,
        name: Value,
        implementation: Value,
        refusal: impl FnOnce() -> Error,
    ) -> Result<Value, Error> {
        let base = constants::class(ruby, self.base)?;
        let is_member = RClass::from_value(implementation)
            .map(|class| class.as_value().equal(base).unwrap_or(false) || class.is_inherited(base))
            .unwrap_or(false);
        if !is_member {
            return Err(refusal());
        }
        let name = self.key(name)?;
        // The table is Rust's, which the GC does not see: the class stays alive.
        magnus::gc::register_mark_object(implementation);
        self.table().register(name, implementation.into());
        Ok(implementation)
    }

    /// The registered class, or the core's DependencyError for an unknown name.
    pub fn resolve(&self, ruby: &Ruby, name: Value) -> Result<Value, Error> {
        let name = self.key(name)?;
        let resolved = self.table().resolve(&name);
        errors::core_result(ruby, resolved).map(|class| ruby.get_inner(class))
    }

    /// The name `class` is registered under (the first, sorted), if any.
    pub fn name_of(&self, ruby: &Ruby, class: Value) -> Option<String> {
        let is =
            |registered: &Opaque<Value>| ruby.get_inner(*registered).as_raw() == class.as_raw();
        self.table().name_of(is)
    }

    /// Not Symbol#name: a name that is not UTF-8 raises ArgumentError, not EncodingError.
    fn key(&self, name: Value) -> Result<String, Error> {
        let label = self.table().label();
        vo::sym_name(vo::name_to_sym(name, &format!("{label} provider name"))?)
    }
}
