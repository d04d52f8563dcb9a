//! The provider registries of `Sandbox` (§12) and `Workspace` (3.9): one
//! table per base class, shared by all its subclasses, that never falls back.
//! Each table is a Hash held by Rust (a GC-marked `Lazy` static), not an
//! instance variable of the class.

use magnus::{prelude::*, value::Lazy, Error, RClass, RHash, Ruby, Symbol, Value};

use crate::helpers::errors;
use crate::helpers::{constants, value_object as vo};

/// A registry for the base class named `base`; `label` starts its messages.
pub struct Registry {
    pub base: &'static str,
    pub label: &'static str,
    /// The name → class table.
    pub table: &'static Lazy<RHash>,
}

impl Registry {
    /// The name → class table, created on first use.
    fn table(&self, ruby: &Ruby) -> Result<RHash, Error> {
        Ok(ruby.get_inner(self.table))
    }

    /// A frozen copy of the table (test hooks save it around an example).
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    pub fn snapshot(&self, ruby: &Ruby) -> Result<RHash, Error> {
        let copy = ruby.hash_new();
        copy.update(self.table(ruby)?)?;
        copy.freeze();
        Ok(copy)
    }

    /// Replaces the table's contents with `snapshot`'s.
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    pub fn restore(&self, ruby: &Ruby, snapshot: RHash) -> Result<(), Error> {
        let table = self.table(ruby)?;
        table.clear()?;
        table.update(snapshot)
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
        let key = self.key(name)?;
        self.table(ruby)?.aset(key, implementation)?;
        Ok(implementation)
    }

    /// The registered class, or the core's DependencyError for an unknown name.
    pub fn resolve(&self, ruby: &Ruby, name: Value) -> Result<Value, Error> {
        let key = self.key(name)?;
        let table = self.table(ruby)?;
        if let Some(class) = table.get(key) {
            return Ok(class);
        }
        let mut registered = Vec::new();
        table.foreach(|name: Symbol, _: Value| {
            registered.push(vo::sym_name(name)?);
            Ok(magnus::r_hash::ForEach::Continue)
        })?;
        // Not Symbol#name: a name that is not UTF-8 raises ArgumentError, not EncodingError.
        let name = vo::sym_name(key)?;
        let error =
            littleghost_sandbox_core::sandbox::providers::unknown(self.label, &name, registered);
        Err(errors::from_core(ruby, error))
    }

    /// The name `class` is registered under (the first, sorted), if any.
    pub fn name_of(&self, ruby: &Ruby, class: Value) -> Result<Option<String>, Error> {
        let mut names = Vec::new();
        self.table(ruby)?
            .foreach(|name: Symbol, registered: Value| {
                if registered.equal(class)? {
                    names.push(name.name()?.into_owned());
                }
                Ok(magnus::r_hash::ForEach::Continue)
            })?;
        Ok(names.into_iter().min())
    }

    fn key(&self, name: Value) -> Result<Symbol, Error> {
        vo::name_to_sym(name, &format!("{} provider name", self.label))
    }
}
