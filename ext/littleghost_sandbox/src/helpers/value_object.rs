//! Shared plumbing for the frozen value objects (Capabilities, Limits,
//! EnvironmentPolicy, NetworkPolicy, Policy, Mount) and Workspace: Ruby
//! coercions that must match Ruby exactly (through Ruby's C conversion
//! functions), name-ish values as the core's `Given`, freezing, hash codes of
//! core values and a readable `inspect`. Equality and hashing are the core
//! structs' own (`PartialEq`, `Hash`).

use magnus::{
    encoding::Coderange,
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    typed_data::Obj,
    value::ReprValue,
    Error, RArray, RClass, RHash, RString, Ruby, Symbol, TypedData, Value,
};
use rb_sys::VALUE;

/// Ruby's conversion function `func` (`rb_String`, `rb_Array`, ...) applied
/// to `value`, with a raise returned as an Error. These are the C functions
/// behind `Kernel#String` and friends: they run the conversion protocol
/// (`to_str`, `to_s`, `to_ary`, ...) on `value` without looking up a method
/// on Kernel.
fn c_convert(value: Value, func: unsafe extern "C" fn(VALUE) -> VALUE) -> Result<Value, Error> {
    let raw = value.as_raw();
    // SAFETY: `func` takes and returns a VALUE and may raise; `protect` turns
    // a raise into an Error. `value` is live on this stack, so the GC sees it.
    let out = protect(|| unsafe { func(raw) })?;
    // SAFETY: `out` is the VALUE Ruby just returned.
    Ok(unsafe { Value::from_raw(out) })
}

/// `Kernel#name(value)` for `String`, `Array`, `Integer` and `Hash`, e.g. `Integer("10")`.
pub fn kernel(ruby: &Ruby, name: &str, value: Value) -> Result<Value, Error> {
    let func: unsafe extern "C" fn(VALUE) -> VALUE = match name {
        "String" => rb_sys::rb_String,
        "Array" => rb_sys::rb_Array,
        "Integer" => rb_sys::rb_Integer,
        "Hash" => rb_sys::rb_Hash,
        _ => {
            return Err(Error::new(
                ruby.exception_arg_error(),
                format!("no conversion Kernel#{name}"),
            ))
        }
    };
    c_convert(value, func)
}

/// A frozen Ruby String.
pub fn frozen_str(ruby: &Ruby, text: &str) -> RString {
    let string = ruby.str_new(text);
    string.freeze();
    string
}

/// Whether `value` responds to the public method `name`.
pub fn responds(value: Value, name: &str) -> bool {
    value.respond_to(name, false).unwrap_or(false)
}

/// `value.to_sym`, or `None` when it has no `to_sym`. A String that is not
/// valid in its encoding raises ArgumentError, not Ruby's EncodingError.
pub fn try_to_sym(value: Value) -> Result<Option<Symbol>, Error> {
    if let Some(symbol) = Symbol::from_value(value) {
        return Ok(Some(symbol));
    }
    if !responds(value, "to_sym") {
        return Ok(None);
    }
    if let Some(string) = RString::from_value(value) {
        if string.enc_coderange_scan() == Coderange::Broken {
            let ruby = Ruby::get_with(value);
            return Err(Error::new(
                ruby.exception_arg_error(),
                format!(
                    "name is not valid text in its encoding; pass a Symbol or a valid String (got {})",
                    class_name(value)
                ),
            ));
        }
        let raw = string.as_raw();
        // SAFETY: rb_str_intern is String#to_sym's body; `protect` catches a
        // raise and `string` is live on this stack.
        let symbol = protect(|| unsafe { rb_sys::rb_str_intern(raw) })?;
        // SAFETY: `symbol` is the Symbol Ruby just returned.
        return Ok(Symbol::from_value(unsafe { Value::from_raw(symbol) }));
    }
    // Any other object answering to_sym (a caller's own type).
    let result: Value = value.funcall("to_sym", ())?;
    Ok(Symbol::from_value(result))
}

/// A name-ish argument (Symbol or String) as a Symbol: TypeError names `what`
/// when `value` has no `to_sym`, so callers never see NoMethodError.
pub fn name_to_sym(value: Value, what: &str) -> Result<Symbol, Error> {
    try_to_sym(value)?.ok_or_else(|| {
        let ruby = Ruby::get_with(value);
        Error::new(
            ruby.exception_type_error(),
            format!(
                "{what} must be a Symbol or String, not {}",
                class_name(value)
            ),
        )
    })
}

/// Raises TypeError unless `value` responds to every method in `methods`, so
/// duck-typed collaborators fail with a clear message instead of NoMethodError.
pub fn require_duck(value: Value, what: &str, methods: &[&str]) -> Result<(), Error> {
    if methods.iter().all(|method| responds(value, method)) {
        return Ok(());
    }
    let ruby = Ruby::get_with(value);
    Err(Error::new(
        ruby.exception_type_error(),
        format!(
            "{what} must respond to {}, not {}",
            methods.join(", "),
            class_name(value)
        ),
    ))
}

/// The name of `value`'s class (`#<Class:0x...>` for an anonymous one).
pub fn class_name(value: Value) -> String {
    // SAFETY: the borrowed name is copied before any other Ruby call can run.
    unsafe { value.classname() }.into_owned()
}

/// `value.class.name.to_s` ("" for an anonymous class).
pub fn class_name_or_empty(value: Value) -> String {
    // SAFETY: rb_mod_name (Module#name's C body) reads a live class, GVL held.
    let name = unsafe { Value::from_raw(rb_sys::rb_mod_name(value.class().as_raw())) };
    magnus::RString::from_value(name)
        .and_then(|name| name.to_string().ok())
        .unwrap_or_default()
}

/// The pairs of anything with `each_pair` (Hash, Struct, ENV), in order: an
/// iterator that also derefs to the slice not yet taken. It keeps a
/// temporary pair Array marked so values that only it references (ENV's
/// fresh Strings) survive GC while in use.
pub struct Pairs {
    items: std::vec::IntoIter<(Value, Value)>,
    _keep_alive: Option<magnus::value::BoxValue<RArray>>,
}

impl std::ops::Deref for Pairs {
    type Target = [(Value, Value)];
    fn deref(&self) -> &Self::Target {
        self.items.as_slice()
    }
}

impl Iterator for Pairs {
    type Item = (Value, Value);
    fn next(&mut self) -> Option<(Value, Value)> {
        self.items.next()
    }
}

/// See [`Pairs`].
pub fn pairs(value: Value) -> Result<Pairs, Error> {
    if let Some(hash) = RHash::from_value(value) {
        // The caller holds the Hash, which keeps its keys and values alive.
        return Ok(Pairs {
            items: hash_pairs(hash)?.into_iter(),
            _keep_alive: None,
        });
    }
    // One call of the caller's `each_pair`, keeping what each yield passes.
    let ruby = Ruby::get_with(value);
    let yielded = ruby.ary_new();
    let keep_alive = magnus::value::BoxValue::new(yielded);
    let sink = magnus::value::Opaque::from(yielded);
    let block = ruby.proc_from_fn(move |ruby, args, _| {
        ruby.get_inner(sink).push(ruby.ary_new_from_values(args))
    });
    let _: Value = value.funcall_with_block("each_pair", (), block)?;
    let mut items = Vec::with_capacity(yielded.len());
    for args in yielded.into_iter() {
        // `yield key, value`, or `yield [key, value]` (Struct, ENV).
        let args = RArray::try_convert(args)?;
        let pair = match args.len() {
            1 => RArray::try_convert(args.entry(0)?)?,
            _ => args,
        };
        items.push((pair.entry(0)?, pair.entry(1)?));
    }
    Ok(Pairs {
        items: items.into_iter(),
        _keep_alive: Some(keep_alive),
    })
}

/// The pairs of a Hash, in order. The Hash keeps them alive for the GC.
pub fn hash_pairs(hash: RHash) -> Result<Vec<(Value, Value)>, Error> {
    let mut out = Vec::with_capacity(hash.len());
    hash.foreach(|key: Value, value: Value| {
        out.push((key, value));
        Ok(magnus::r_hash::ForEach::Continue)
    })?;
    Ok(out)
}

/// True iff `value.is_a?(Hash)`.
pub fn is_hash(ruby: &Ruby, value: Value) -> bool {
    value.is_kind_of(ruby.class_hash())
}

/// A new Hash with every key passed through `to_sym` (keys without it are kept).
pub fn symbolize_keys(ruby: &Ruby, hash: Value) -> Result<RHash, Error> {
    let out = ruby.hash_new();
    for (key, value) in pairs(hash)? {
        match try_to_sym(key)? {
            Some(symbol) => out.aset(symbol, value)?,
            None => out.aset(key, value)?,
        }
    }
    Ok(out)
}

/// The name of a Symbol (`:foo` → `"foo"`).
/// A name that is not UTF-8 text (a binary or broken Symbol) raises
/// ArgumentError naming its class, not Ruby's EncodingError.
pub fn sym_name(symbol: Symbol) -> Result<String, Error> {
    let ruby = Ruby::get_with(symbol);
    // SAFETY: rb_sym2str returns the Symbol's frozen name String; GVL held.
    let name = unsafe { RString::from_value(Value::from_raw(rb_sys::rb_sym2str(symbol.as_raw()))) };
    let invalid = || {
        Error::new(
            ruby.exception_arg_error(),
            "name is not valid UTF-8 text; pass a Symbol or a valid String (got Symbol)",
        )
    };
    let Some(name) = name else {
        return Err(invalid());
    };
    let ascii_compatible = name.enc_get() == ruby.utf8_encindex()
        || name.enc_get() == ruby.usascii_encindex()
        || name.enc_get() == ruby.ascii8bit_encindex();
    if !ascii_compatible {
        return Err(invalid());
    }
    // SAFETY: the bytes are copied before any other Ruby call.
    let bytes = unsafe { name.as_slice() }.to_vec();
    String::from_utf8(bytes).map_err(|_| invalid())
}

/// `value.inspect`, but Symbol-keyed Hashes read `{root: :read_only}` on every Ruby.
#[allow(clippy::only_used_in_recursion)]
pub fn inspect_value(ruby: &Ruby, value: Value) -> Result<String, Error> {
    if let Some(hash) = RHash::from_value(value) {
        let mut parts = Vec::new();
        for (key, item) in hash_pairs(hash)? {
            let item = inspect_value(ruby, item)?;
            match Symbol::from_value(key) {
                Some(symbol) if simple_symbol(&symbol.name()?) => {
                    parts.push(format!("{}: {item}", symbol.name()?))
                }
                _ => parts.push(format!("{} => {item}", inspect_value(ruby, key)?)),
            }
        }
        return Ok(format!("{{{}}}", parts.join(", ")));
    }
    if let Some(array) = RArray::from_value(value) {
        let parts = array
            .into_iter()
            .map(|item| inspect_value(ruby, item))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(format!("[{}]", parts.join(", ")));
    }
    let text: RString = value.funcall("inspect", ())?;
    text.to_string()
}

fn simple_symbol(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// A name-ish Ruby value as the core's [`Given`](littleghost_sandbox_core::policy::Given):
/// its `to_sym` name when it has one, shown by `inspect` only if a rule refuses it.
pub fn given(value: Value) -> Result<littleghost_sandbox_core::policy::Given<'static>, Error> {
    let name = try_to_sym(value)?.map(sym_name).transpose()?;
    Ok(littleghost_sandbox_core::policy::Given::new(
        name,
        move || inspect_value(&Ruby::get_with(value), value).unwrap_or_default(),
    ))
}

/// `Array(value)` (nil or absent is empty), except that a Range or an
/// Enumerator raises TypeError naming its class before it is expanded, so
/// `(1..)` or `(1..10**7)` costs nothing.
pub fn array_items(ruby: &Ruby, value: Option<Value>) -> Result<RArray, Error> {
    let Some(value) = value.filter(|value| !value.is_nil()) else {
        return Ok(ruby.ary_new());
    };
    if let Some(array) = RArray::from_value(value) {
        return Ok(array);
    }
    let lazy = [ruby.class_range(), ruby.class_enumerator()];
    if lazy.iter().any(|class| value.is_kind_of(*class)) {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("expected an Array (got {})", class_name(value)),
        ));
    }
    RArray::try_convert(kernel(ruby, "Array", value)?)
}

/// `String(value)` as UTF-8 text: an object without a String conversion
/// raises TypeError and text that is not valid UTF-8 ArgumentError, both
/// naming the value's class (never NoMethodError or EncodingError).
pub fn string_of(ruby: &Ruby, value: Value) -> Result<String, Error> {
    let string = match RString::from_value(value) {
        Some(string) => string,
        None if Symbol::from_value(value).is_some() => {
            return sym_name(Symbol::from_value(value).expect("checked"))
        }
        None if !responds(value, "to_str") && !responds(value, "to_s") => {
            return Err(Error::new(
                ruby.exception_type_error(),
                format!("expected a String (got {})", class_name(value)),
            ))
        }
        None => RString::try_convert(kernel(ruby, "String", value)?)?,
    };
    // RString#to_string transcodes to UTF-8 and refuses what is not valid
    // text, as convert::text does (which itself reads Hashes through here).
    string.to_string().map_err(|_| {
        Error::new(
            ruby.exception_arg_error(),
            format!("expected valid UTF-8 text (got {})", class_name(value)),
        )
    })
}

/// A Ruby Integer hash code for a Rust value (consistent with its `Eq`).
pub fn hash_code(value: &impl std::hash::Hash) -> i64 {
    use std::hash::Hasher;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish() as i64
}

/// How a value object reads one of its fields as a Ruby value.
pub(crate) type Reader<T> = fn(&Ruby, &T) -> Result<Value, Error>;

/// A frozen TypedData value object over a core struct: equality and hashing
/// are the core value's (`PartialEq`, `Hash`) and the Ruby objects it
/// [holds](ValueObject::held) besides; `inspect` and `to_h` show
/// [`FIELDS`](ValueObject::FIELDS), each field a reader ([`field`]).
/// [`define_value_methods!`] defines the Ruby methods.
pub(crate) trait ValueObject: TypedData + Sized + 'static {
    /// The core value compared and hashed.
    type Core: PartialEq + std::hash::Hash;

    /// The labelled readers, in the order `inspect` shows them.
    const FIELDS: &'static [(&'static str, Reader<Self>)] = &[];

    fn core(&self) -> &Self::Core;

    /// The Ruby objects it holds besides its core value (none by default),
    /// compared with `==`, or `eql?` for `eql?`.
    fn held(&self, _ruby: &Ruby) -> Vec<Value> {
        Vec::new()
    }

    /// Equal to `other` of the same class; `strict` is `eql?` rather than `==`.
    fn same(&self, ruby: &Ruby, other: &Self, strict: bool) -> Result<bool, Error> {
        if self.core() != other.core() {
            return Ok(false);
        }
        for (mine, theirs) in self.held(ruby).into_iter().zip(other.held(ruby)) {
            if !ruby_eq(mine, theirs, strict)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A hash code consistent with `same(other, true)`.
    fn hash_code(&self, ruby: &Ruby) -> Result<i64, Error> {
        let held = self
            .held(ruby)
            .into_iter()
            .map(|value| value.hash()?.to_i64());
        let held = held.collect::<Result<Vec<i64>, Error>>()?;
        Ok(hash_code(&(self.core(), held)))
    }
}

/// The reader `T::FIELDS[I]` as a Ruby method (see [`define_value_methods!`]).
pub(crate) fn field<T: ValueObject, const I: usize>(
    ruby: &Ruby,
    rb_self: &T,
) -> Result<Value, Error> {
    (T::FIELDS[I].1)(ruby, rb_self)
}

/// `a.eql?(b)` when `strict`, else `a == b`: how a value object compares the
/// Ruby objects it holds besides its core value.
pub(crate) fn ruby_eq(a: Value, b: Value, strict: bool) -> Result<bool, Error> {
    if strict {
        a.eql(b)
    } else {
        a.equal(b)
    }
}

/// `==` (or `eql?` when `strict`): the same class and [`ValueObject::same`].
pub(crate) fn value_same<T: ValueObject>(
    ruby: &Ruby,
    rb_self: Obj<T>,
    other: Value,
    strict: bool,
) -> Result<bool, Error> {
    if !same_class(rb_self.as_value(), other) {
        return Ok(false);
    }
    match <&T>::try_convert(other) {
        Ok(theirs) if std::ptr::eq(theirs, &*rb_self) => Ok(true),
        Ok(theirs) => rb_self.same(ruby, theirs, strict),
        Err(_) => Ok(false),
    }
}

/// `inspect` of a value object: `#<Class label=value ...>`.
pub(crate) fn value_inspect<T: ValueObject>(ruby: &Ruby, rb_self: Obj<T>) -> Result<String, Error> {
    let mut out = format!("#<{}", class_name(rb_self.as_value()));
    let values = field_values(ruby, &*rb_self)?;
    for ((label, _), value) in T::FIELDS.iter().zip(values) {
        out.push_str(&format!(" {label}={}", inspect_value(ruby, value)?));
    }
    out.push('>');
    Ok(out)
}

/// `to_h` of a value object: its fields in a frozen Symbol-keyed Hash.
pub(crate) fn value_to_h<T: ValueObject>(ruby: &Ruby, rb_self: &T) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    let values = field_values(ruby, rb_self)?;
    for ((label, _), value) in T::FIELDS.iter().zip(values) {
        hash.aset(ruby.to_symbol(label), value)?;
    }
    hash.freeze();
    Ok(hash)
}

/// The values of [`ValueObject::FIELDS`], in a Ruby Array, which keeps each
/// marked for the GC while the next is made.
fn field_values<T: ValueObject>(ruby: &Ruby, value: &T) -> Result<RArray, Error> {
    let values = ruby.ary_new_capa(T::FIELDS.len());
    for (_, reader) in T::FIELDS {
        values.push(reader(ruby, value)?)?;
    }
    Ok(values)
}

/// Defines `==`, `eql?`, `hash`, `inspect` and `to_s` (and `to_h` when asked)
/// of a [`ValueObject`] type on a class, in a function returning
/// `Result<(), Error>`: `vo::define_value_methods!(class, Limits, true)`;
/// `vo::define_value_methods!(class, Limits, true, [0, 1, 2, 3])` also
/// defines the readers of those [`ValueObject::FIELDS`], named by their
/// labels. (A macro, as magnus's `method!` wraps its function in a nested
/// `fn`, which cannot name a generic caller's type parameter; here the type
/// is concrete.)
macro_rules! define_value_methods {
    ($class:expr, $type:ty, $to_h:expr, [$($index:literal),*]) => {{
        use crate::helpers::value_object::{self as vo, ValueObject};
        let class: magnus::RClass = $class;
        $(magnus::Module::define_method(
            class,
            <$type as ValueObject>::FIELDS[$index].0,
            magnus::method!(vo::field::<$type, $index>, 0),
        )?;)*
        vo::define_value_methods!(class, $type, $to_h)
    }};
    ($class:expr, $type:ty, $to_h:expr) => {{
        use crate::helpers::value_object as vo;
        use magnus::{method, Module};
        let class: magnus::RClass = $class;
        use magnus::{typed_data::Obj, Ruby, Value};
        class.define_method(
            "==",
            method!(|ruby: &Ruby, obj: Obj<$type>, other: Value| vo::value_same(ruby, obj, other, false), 1),
        )?;
        class.define_method(
            "eql?",
            method!(|ruby: &Ruby, obj: Obj<$type>, other: Value| vo::value_same(ruby, obj, other, true), 1),
        )?;
        class.define_method(
            "hash",
            method!(|ruby: &Ruby, obj: &$type| vo::ValueObject::hash_code(obj, ruby), 0),
        )?;
        class.define_method("inspect", method!(vo::value_inspect::<$type>, 0))?;
        class.define_alias("to_s", "inspect")?;
        if $to_h {
            class.define_method("to_h", method!(vo::value_to_h::<$type>, 0))?;
        }
        Ok::<(), magnus::Error>(())
    }};
}
pub(crate) use define_value_methods;

/// `data` wrapped as a frozen instance of `class` (its own class or a subclass).
pub(crate) fn frozen_obj<T: TypedData>(ruby: &Ruby, data: T, class: RClass) -> Obj<T> {
    let object = ruby.obj_wrap_as(data, class);
    object.freeze();
    object
}

/// A frozen Array of the Symbols named `names`.
pub fn frozen_symbols<S: AsRef<str>>(ruby: &Ruby, names: &[S]) -> RArray {
    let array = ruby.ary_from_iter(names.iter().map(|name| ruby.to_symbol(name.as_ref())));
    array.freeze();
    array
}

/// A frozen Array of frozen Strings.
pub fn frozen_strings<'a>(ruby: &Ruby, items: impl IntoIterator<Item = &'a String>) -> RArray {
    let array = ruby.ary_from_iter(items.into_iter().map(|s| frozen_str(ruby, s)));
    array.freeze();
    array
}

/// True iff `a` and `b` are instances of the same class (a subclass is another class).
pub fn same_class(a: Value, b: Value) -> bool {
    a.class().equal(b.class()).unwrap_or(false)
}
