//! `LittleGhost::Sandbox::Execution` (§11) and the Data-like machinery it
//! shares with `ProcessSession::Chunk` (0.6).
//!
//! One Rust implementation serves every Ruby version (Data only exists from
//! 3.2): keyword (or positional) constructor, readers, `==`/`eql?`/`hash` by
//! value, `to_h`, `with`, `inspect`, `members`, `deconstruct(_keys)`, frozen
//! instances with frozen Strings (0.5).
//!
//! Execution also has `signal` (W16): the number of the signal that killed the
//! child, or nil. It is an optional extra keyword, not a member, so `members`,
//! `to_h`, `==`, `hash` and `inspect` cover exactly the four documented
//! members; `with` carries it over.

use magnus::{
    method, prelude::*, scan_args::scan_args, value::ReprValue, Error, RArray, RClass, RHash,
    RString, Ruby, Symbol, Value,
};

use crate::ruby_api::errors::argument_error;

/// The shape of a Data-like class.
pub trait DataShape: 'static {
    /// Members in order (readers, `to_h`, `inspect`, positional arguments).
    const MEMBERS: &'static [&'static str];
    /// Members that default to nil when omitted.
    const OPTIONAL: &'static [&'static str];
    /// Extra keywords stored and read like members but outside value semantics.
    const EXTRAS: &'static [&'static str];
}

/// Execution: `stdout`, `stderr`, `exit_code`, `error` (+ extra `signal`).
pub struct ExecutionShape;

impl DataShape for ExecutionShape {
    const MEMBERS: &'static [&'static str] = &["stdout", "stderr", "exit_code", "error"];
    const OPTIONAL: &'static [&'static str] = &["error"];
    const EXTRAS: &'static [&'static str] = &["signal"];
}

/// Defines the Data-like methods of `$shape` on `$class`.
macro_rules! define_data_class {
    ($ruby:expr, $class:expr, $shape:ty) => {{
        let ruby: &magnus::Ruby = $ruby;
        use magnus::{function, method, Module, Object};
        use $crate::ruby_api::execution::data;
        let class: magnus::RClass = $class;
        for name in <$shape as $crate::ruby_api::execution::DataShape>::MEMBERS
            .iter()
            .chain(<$shape as $crate::ruby_api::execution::DataShape>::EXTRAS)
        {
            // attr_reader is private; funcall ignores visibility.
            let _: magnus::Value = class.funcall("attr_reader", (ruby.to_symbol(name),))?;
        }
        class.define_singleton_method("members", function!(data::class_members::<$shape>, 0))?;
        class.define_method("initialize", method!(data::initialize::<$shape>, -1))?;
        class.define_method("members", method!(data::members::<$shape>, 0))?;
        class.define_method("to_h", method!(data::to_h::<$shape>, -1))?;
        class.define_method("with", method!(data::with::<$shape>, -1))?;
        class.define_method("==", method!(data::equal::<$shape>, 1))?;
        class.define_method("eql?", method!(data::eql::<$shape>, 1))?;
        class.define_method("hash", method!(data::hash::<$shape>, 0))?;
        class.define_method("inspect", method!(data::inspect::<$shape>, 0))?;
        class.define_method("to_s", method!(data::inspect::<$shape>, 0))?;
        class.define_method("deconstruct", method!(data::deconstruct::<$shape>, 0))?;
        class.define_method(
            "deconstruct_keys",
            method!(data::deconstruct_keys::<$shape>, 1),
        )?;
    }};
}
pub(crate) use define_data_class;

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Execution", ruby.class_object())?;
    define_data_class!(ruby, class, ExecutionShape);
    class.define_method("success?", method!(success, 0))?;
    Ok(())
}

/// True iff `error` is nil and `exit_code` is 0.
fn success(rb_self: Value) -> Result<bool, Error> {
    let error: Value = rb_self.funcall("error", ())?;
    if !error.is_nil() {
        return Ok(false);
    }
    let code: Value = rb_self.funcall("exit_code", ())?;
    code.funcall::<_, _, bool>("==", (0,))
}

/// Generic method bodies; see [`define_data_class`].
pub mod data {
    use super::*;

    fn ivar_name(member: &str) -> String {
        format!("@{member}")
    }

    fn symbol_list(names: &[&str]) -> String {
        names
            .iter()
            .map(|name| format!(":{name}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Strings become frozen copies (0.5); other values are kept as given.
    fn frozen_value(value: Value) -> Result<Value, Error> {
        if let Some(string) = RString::from_value(value) {
            if !string.is_frozen() {
                let copy: RString = string.funcall("dup", ())?;
                copy.freeze();
                return Ok(copy.as_value());
            }
        }
        Ok(value)
    }

    /// The member names as Symbols.
    pub fn class_members<S: DataShape>(ruby: &Ruby) -> RArray {
        let array = ruby.ary_from_iter(S::MEMBERS.iter().map(|name| ruby.to_symbol(name)));
        array.freeze();
        array
    }

    /// The member names as Symbols.
    pub fn members<S: DataShape>(ruby: &Ruby, _rb_self: Value) -> RArray {
        class_members::<S>(ruby)
    }

    /// Builds the value from keywords (or positional values in member order) and freezes it.
    pub fn initialize<S: DataShape>(
        ruby: &Ruby,
        rb_self: Value,
        args: &[Value],
    ) -> Result<(), Error> {
        let args = scan_args::<(), (), RArray, (), RHash, ()>(args)?;
        let positional = args.splat;
        let keywords = args.keywords;
        if positional.len() > S::MEMBERS.len() {
            return Err(argument_error(
                ruby,
                format!(
                    "wrong number of arguments (given {}, expected 0..{})",
                    positional.len(),
                    S::MEMBERS.len()
                ),
            ));
        }
        let mut values: Vec<Option<Value>> = vec![None; S::MEMBERS.len() + S::EXTRAS.len()];
        for (index, value) in positional.into_iter().enumerate() {
            values[index] = Some(value);
        }
        let mut unknown = Vec::new();
        keywords.foreach(|key: Value, value: Value| {
            let name: String = match Symbol::from_value(key) {
                Some(symbol) => symbol.name()?.into_owned(),
                None => key.funcall::<_, _, RString>("to_s", ())?.to_string()?,
            };
            match S::MEMBERS
                .iter()
                .chain(S::EXTRAS)
                .position(|member| *member == name)
            {
                Some(index) if values[index].is_some() => {
                    return Err(argument_error(ruby, format!("duplicate value for :{name}")));
                }
                Some(index) => values[index] = Some(value),
                None => unknown.push(name),
            }
            Ok(magnus::r_hash::ForEach::Continue)
        })?;
        if !unknown.is_empty() {
            let names: Vec<&str> = unknown.iter().map(String::as_str).collect();
            let noun = if names.len() == 1 {
                "keyword"
            } else {
                "keywords"
            };
            return Err(argument_error(
                ruby,
                format!("unknown {noun}: {}", symbol_list(&names)),
            ));
        }
        let missing: Vec<&str> = S::MEMBERS
            .iter()
            .zip(&values)
            .filter(|(name, value)| value.is_none() && !S::OPTIONAL.contains(name))
            .map(|(name, _)| *name)
            .collect();
        if !missing.is_empty() {
            let noun = if missing.len() == 1 {
                "keyword"
            } else {
                "keywords"
            };
            return Err(argument_error(
                ruby,
                format!("missing {noun}: {}", symbol_list(&missing)),
            ));
        }
        let object = magnus::RObject::try_convert(rb_self)?;
        for (name, value) in S::MEMBERS.iter().chain(S::EXTRAS).zip(values) {
            let value = frozen_value(value.unwrap_or_else(|| ruby.qnil().as_value()))?;
            object.ivar_set(ivar_name(name).as_str(), value)?;
        }
        rb_self.freeze();
        Ok(())
    }

    fn member_values<S: DataShape>(rb_self: Value) -> Result<Vec<Value>, Error> {
        let object = magnus::RObject::try_convert(rb_self)?;
        S::MEMBERS
            .iter()
            .map(|name| object.ivar_get::<_, Value>(ivar_name(name).as_str()))
            .collect()
    }

    /// A Hash of member names to values; a block maps each pair like `Hash#to_h`.
    pub fn to_h<S: DataShape>(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
        scan_args::<(), (), (), (), (), ()>(args)?;
        let hash = ruby.hash_new();
        for (name, value) in S::MEMBERS.iter().zip(member_values::<S>(rb_self)?) {
            hash.aset(ruby.to_symbol(name), value)?;
        }
        match ruby.block_proc() {
            Ok(block) => hash.funcall_with_block("to_h", (), block),
            Err(_) => Ok(hash.as_value()),
        }
    }

    /// A copy with the given members replaced (self when none are given).
    pub fn with<S: DataShape>(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
        let args = scan_args::<(), (), RArray, (), RHash, ()>(args)?;
        if !args.splat.is_empty() {
            return Err(argument_error(
                ruby,
                format!(
                    "wrong number of arguments (given {}, expected 0)",
                    args.splat.len()
                ),
            ));
        }
        if args.keywords.is_empty() {
            return Ok(rb_self);
        }
        let object = magnus::RObject::try_convert(rb_self)?;
        let merged = ruby.hash_new();
        for (name, value) in S::MEMBERS.iter().zip(member_values::<S>(rb_self)?) {
            merged.aset(ruby.to_symbol(name), value)?;
        }
        for name in S::EXTRAS {
            let value: Value = object.ivar_get(ivar_name(name).as_str())?;
            if !value.is_nil() {
                merged.aset(ruby.to_symbol(name), value)?;
            }
        }
        let merged: RHash = merged.funcall("merge", (args.keywords,))?;
        rb_self.class().funcall("new", (magnus::KwArgs(merged),))
    }

    fn same_class(rb_self: Value, other: Value) -> bool {
        rb_self
            .class()
            .funcall::<_, _, bool>("equal?", (other.class(),))
            .unwrap_or(false)
    }

    fn compare<S: DataShape>(rb_self: Value, other: Value, method: &str) -> Result<bool, Error> {
        if rb_self.funcall::<_, _, bool>("equal?", (other,))? {
            return Ok(true);
        }
        if !same_class(rb_self, other) {
            return Ok(false);
        }
        for (mine, theirs) in member_values::<S>(rb_self)?
            .into_iter()
            .zip(member_values::<S>(other)?)
        {
            if !mine.funcall::<_, _, bool>(method, (theirs,))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Same class and every member `==`.
    pub fn equal<S: DataShape>(rb_self: Value, other: Value) -> Result<bool, Error> {
        compare::<S>(rb_self, other, "==")
    }

    /// Same class and every member `eql?`.
    pub fn eql<S: DataShape>(rb_self: Value, other: Value) -> Result<bool, Error> {
        compare::<S>(rb_self, other, "eql?")
    }

    /// A hash of the class and the member values.
    pub fn hash<S: DataShape>(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
        let array = ruby.ary_new();
        array.push(rb_self.class())?;
        for value in member_values::<S>(rb_self)? {
            array.push(value)?;
        }
        array.funcall("hash", ())
    }

    /// `#<data ClassName member=value, ...>`, like Data#inspect.
    pub fn inspect<S: DataShape>(rb_self: Value) -> Result<String, Error> {
        let class_name: Value = rb_self.class().funcall("name", ())?;
        let mut text = String::from("#<data ");
        if !class_name.is_nil() {
            text.push_str(&RString::try_convert(class_name)?.to_string()?);
            text.push(' ');
        }
        let mut parts = Vec::with_capacity(S::MEMBERS.len());
        for (name, value) in S::MEMBERS.iter().zip(member_values::<S>(rb_self)?) {
            let shown: RString = value.funcall("inspect", ())?;
            parts.push(format!("{name}={}", shown.to_string()?));
        }
        text.push_str(&parts.join(", "));
        text.push('>');
        Ok(text)
    }

    /// The member values in order (array pattern matching).
    pub fn deconstruct<S: DataShape>(ruby: &Ruby, rb_self: Value) -> Result<RArray, Error> {
        let array = ruby.ary_new();
        for value in member_values::<S>(rb_self)? {
            array.push(value)?;
        }
        Ok(array)
    }

    /// The requested members as a Hash (hash pattern matching); nil means all.
    pub fn deconstruct_keys<S: DataShape>(
        ruby: &Ruby,
        rb_self: Value,
        keys: Value,
    ) -> Result<RHash, Error> {
        let hash = ruby.hash_new();
        let wanted: Option<RArray> = if keys.is_nil() {
            None
        } else {
            Some(RArray::try_convert(keys)?)
        };
        for (name, value) in S::MEMBERS.iter().zip(member_values::<S>(rb_self)?) {
            let symbol = ruby.to_symbol(name);
            let include = match wanted {
                None => true,
                Some(list) => list.includes(symbol),
            };
            if include {
                hash.aset(symbol, value)?;
            }
        }
        Ok(hash)
    }
}
