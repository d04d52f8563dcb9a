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
//!
//! Execution is a TypedData object ([`Execution`]) whose values live in Rust
//! (marked for the GC), not in instance variables; the runner builds it
//! directly from the core's result ([`Execution::wrap`]) without a Ruby
//! `new` call. `ProcessSession::Chunk` keeps the instance-variable storage.

use std::cell::OnceCell;

use magnus::{
    gc::Marker,
    method,
    prelude::*,
    scan_args::scan_args,
    typed_data::Obj,
    value::Lazy,
    value::{Opaque, ReprValue},
    DataTypeFunctions, Error, RArray, RClass, RHash, RString, Ruby, Symbol, TypedData, Value,
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
    /// Values live in instance variables (with `attr_reader`s); otherwise
    /// the shape overrides [`load`](Self::load) and [`store`](Self::store).
    const IVARS: bool = true;

    /// Every value, MEMBERS then EXTRAS.
    fn load(rb_self: Value) -> Result<Vec<Value>, Error> {
        let object = magnus::RObject::try_convert(rb_self)?;
        Self::MEMBERS
            .iter()
            .chain(Self::EXTRAS)
            .map(|name| object.ivar_get::<_, Value>(format!("@{name}").as_str()))
            .collect()
    }

    /// Stores every value (MEMBERS then EXTRAS) into a fresh instance.
    fn store(_ruby: &Ruby, rb_self: Value, values: Vec<Value>) -> Result<(), Error> {
        let object = magnus::RObject::try_convert(rb_self)?;
        for (name, value) in Self::MEMBERS.iter().chain(Self::EXTRAS).zip(values) {
            object.ivar_set(format!("@{name}").as_str(), value)?;
        }
        Ok(())
    }
}

/// Execution: `stdout`, `stderr`, `exit_code`, `error` (+ extra `signal`).
pub struct ExecutionShape;

impl DataShape for ExecutionShape {
    const MEMBERS: &'static [&'static str] = &["stdout", "stderr", "exit_code", "error"];
    const OPTIONAL: &'static [&'static str] = &["error"];
    const EXTRAS: &'static [&'static str] = &["signal"];
    const IVARS: bool = false;

    fn load(rb_self: Value) -> Result<Vec<Value>, Error> {
        Ok(fields(rb_self)?.to_vec())
    }

    fn store(ruby: &Ruby, rb_self: Value, values: Vec<Value>) -> Result<(), Error> {
        let execution = <&Execution>::try_convert(rb_self)?;
        let values: [Value; 5] = values
            .try_into()
            .map_err(|_| argument_error(ruby, "wrong number of Execution values"))?;
        execution
            .fields
            .set(values.map(Opaque::from))
            .map_err(|_| Error::new(ruby.exception_frozen_error(), "Execution is immutable"))
    }
}

/// `LittleGhost::Sandbox::Execution`: stdout, stderr, exit_code, error, signal.
#[derive(Default, TypedData)]
#[magnus(
    class = "LittleGhost::Sandbox::Execution",
    free_immediately,
    size,
    mark
)]
pub struct Execution {
    fields: OnceCell<[Opaque<Value>; 5]>,
}

impl DataTypeFunctions for Execution {
    fn mark(&self, marker: &Marker) {
        if let Some(values) = self.fields.get() {
            for value in values {
                marker.mark(*value);
            }
        }
    }
}

static EXECUTION_CLASS: Lazy<RClass> = Lazy::new(|ruby| {
    crate::helpers::constants::class(ruby, "LittleGhost::Sandbox::Execution")
        .expect("Execution is defined at load")
});

impl Execution {
    /// A frozen Execution of a finished (or cut-off) child, with frozen
    /// Strings and `error` nil, built without a Ruby `new` call.
    pub fn wrap(
        ruby: &Ruby,
        stdout: &str,
        stderr: &str,
        exit_code: Option<i32>,
        signal: Option<i32>,
    ) -> Value {
        let text = |text: &str| {
            let string = ruby.str_new(text);
            string.freeze();
            string.as_value()
        };
        let nil = ruby.qnil().as_value();
        let number = |n: Option<i32>| n.map_or(nil, |n| ruby.integer_from_i64(n.into()).as_value());
        let fields = OnceCell::new();
        let _ = fields.set(
            [
                text(stdout),
                text(stderr),
                number(exit_code),
                nil,
                number(signal),
            ]
            .map(Opaque::from),
        );
        let object: Obj<Execution> =
            ruby.obj_wrap_as(Execution { fields }, ruby.get_inner(&EXECUTION_CLASS));
        object.freeze();
        object.as_value()
    }
}

/// The values of an initialized Execution.
pub(crate) fn fields(rb_self: Value) -> Result<[Value; 5], Error> {
    let ruby = Ruby::get_with(rb_self);
    let execution = <&Execution>::try_convert(rb_self)?;
    match execution.fields.get() {
        Some(values) => Ok(values.map(|value| ruby.get_inner(value))),
        None => Err(Error::new(
            ruby.exception_runtime_error(),
            "Execution was not initialized",
        )),
    }
}

macro_rules! execution_reader {
    ($name:ident, $index:expr) => {
        fn $name(rb_self: Value) -> Result<Value, Error> {
            Ok(fields(rb_self)?[$index])
        }
    };
}
execution_reader!(stdout, 0);
execution_reader!(stderr, 1);
execution_reader!(exit_code, 2);
execution_reader!(error, 3);
execution_reader!(signal, 4);

/// Defines the Data-like methods of `$shape` on `$class`.
macro_rules! define_data_class {
    ($ruby:expr, $class:expr, $shape:ty) => {{
        let ruby: &magnus::Ruby = $ruby;
        use magnus::{function, method, Module, Object};
        use $crate::ruby_api::execution::data;
        let class: magnus::RClass = $class;
        if <$shape as $crate::ruby_api::execution::DataShape>::IVARS {
            for name in <$shape as $crate::ruby_api::execution::DataShape>::MEMBERS
                .iter()
                .chain(<$shape as $crate::ruby_api::execution::DataShape>::EXTRAS)
            {
                // attr_reader is private; funcall ignores visibility.
                let _: magnus::Value = class.funcall("attr_reader", (ruby.to_symbol(name),))?;
            }
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
    class.define_alloc_func::<Execution>();
    define_data_class!(ruby, class, ExecutionShape);
    class.define_method("stdout", method!(stdout, 0))?;
    class.define_method("stderr", method!(stderr, 0))?;
    class.define_method("exit_code", method!(exit_code, 0))?;
    class.define_method("error", method!(error, 0))?;
    class.define_method("signal", method!(signal, 0))?;
    class.define_method("success?", method!(success, 0))?;
    let _ = ruby.get_inner(&EXECUTION_CLASS);
    Ok(())
}

/// True iff `error` is nil and `exit_code` is 0.
fn success(rb_self: Value) -> Result<bool, Error> {
    let [_, _, code, error, _] = fields(rb_self)?;
    if !error.is_nil() {
        return Ok(false);
    }
    if let Some(code) = magnus::Fixnum::from_value(code) {
        return Ok(code.to_i64() == 0);
    }
    code.funcall::<_, _, bool>("==", (0,))
}

/// Generic method bodies; see [`define_data_class`].
pub mod data {
    use super::*;

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
        let values = values
            .into_iter()
            .map(|value| frozen_value(value.unwrap_or_else(|| ruby.qnil().as_value())))
            .collect::<Result<Vec<_>, Error>>()?;
        S::store(ruby, rb_self, values)?;
        rb_self.freeze();
        Ok(())
    }

    fn member_values<S: DataShape>(rb_self: Value) -> Result<Vec<Value>, Error> {
        let mut values = S::load(rb_self)?;
        values.truncate(S::MEMBERS.len());
        Ok(values)
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
        let merged = ruby.hash_new();
        let values = S::load(rb_self)?;
        for (index, (name, value)) in S::MEMBERS.iter().chain(S::EXTRAS).zip(values).enumerate() {
            // Extras are carried over only when set.
            if index < S::MEMBERS.len() || !value.is_nil() {
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
