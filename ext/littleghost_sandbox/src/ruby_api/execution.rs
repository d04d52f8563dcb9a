//! `LittleGhost::Sandbox::Execution` (§11) and the Data-like storage it
//! shares with `ProcessSession::Chunk` (0.6).
//!
//! Both classes are TypedData objects ([`DataObject`]) whose values live in
//! Rust (marked for the GC), not in instance variables; the runner and the
//! session build them directly ([`Execution::wrap`], [`DataObject::wrap`])
//! without a Ruby `new` call. Rust defines what is hot or holds that state:
//! the allocator, the member readers, `success?`, and the two methods the
//! Ruby side builds on (the private `initialize_values` and the protected
//! `data_values`), plus the private constants `MEMBERS`, `OPTIONAL` and
//! `EXTRAS` taken from the class's [`DataShape`].
//!
//! The rest of the Data protocol (keyword or positional constructor with
//! Data's messages, `==`/`eql?`/`hash` by value, `to_h`, `with`, `inspect`,
//! `members`, `deconstruct(_keys)`) is Ruby-shaped and not on a hot path: it
//! lives in `lib/littleghost/sandbox/data_like.rb` (one implementation for
//! every Ruby; Data only exists from 3.2), and Rust never calls it.
//!
//! Execution also has `signal` (W16): the number of the signal that killed the
//! child, or nil. It is an optional extra keyword, not a member, so `members`,
//! `to_h`, `==`, `hash` and `inspect` cover exactly the four documented
//! members; `with` carries it over.
//!
//! [`show_plain`] (how an error message shows a plain value, like `inspect`)
//! lives here too; other classes' messages use it.

use std::cell::OnceCell;

use littleghost_sandbox_core::process::ending::Outcome;

use magnus::{
    gc::Marker,
    method,
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    typed_data::Obj,
    value::Lazy,
    value::Opaque,
    DataTypeFunctions, Error, Fixnum, Float, RArray, RClass, RString, Ruby, Symbol, TypedData,
    Value,
};

/// The shape of a Data-like class.
pub trait DataShape: 'static {
    /// Members in order (readers, `to_h`, `inspect`, positional arguments).
    const MEMBERS: &'static [&'static str];
    /// Members that default to nil when omitted.
    const OPTIONAL: &'static [&'static str];
    /// Extra keywords stored and read like members but outside value semantics.
    const EXTRAS: &'static [&'static str];
}

/// The values of an Execution or a Chunk: MEMBERS then EXTRAS, set once by
/// `initialize` (or [`DataObject::wrap`]) and marked for the GC.
#[derive(Default, TypedData)]
#[magnus(
    class = "LittleGhost::Sandbox::Execution",
    free_immediately,
    size,
    mark
)]
pub struct DataObject {
    values: OnceCell<Box<[Opaque<Value>]>>,
}

impl DataTypeFunctions for DataObject {
    fn mark(&self, marker: &Marker) {
        for value in self.values.get().into_iter().flatten() {
            marker.mark(*value);
        }
    }
}

/// The allocator of every Data-like class: an uninitialized [`DataObject`]
/// of the allocated class.
unsafe extern "C" fn allocate(class: rb_sys::VALUE) -> rb_sys::VALUE {
    // SAFETY: Ruby calls an allocator with the GVL held and a live class.
    let ruby = unsafe { Ruby::get_unchecked() };
    // SAFETY: as above; the class is a live VALUE.
    match RClass::from_value(unsafe { Value::from_raw(class) }) {
        Some(class) => ruby.obj_wrap_as(DataObject::default(), class).as_raw(),
        None => ruby.qnil().as_raw(),
    }
}

impl DataObject {
    /// A frozen instance of `class` holding `values` (already frozen Strings).
    ///
    /// The values come in a Ruby Array the caller filled as each was made,
    /// because the GC does not see Rust's heap: a value only a `Vec` held
    /// could be collected by the next allocation (the object's own, under
    /// `GC.stress` always), and its slot reused. The object is made first and
    /// marks the values once they are set; until then the Array, on this
    /// stack, holds them.
    pub fn wrap(ruby: &Ruby, class: RClass, values: RArray) -> Value {
        let object: Obj<DataObject> = ruby.obj_wrap_as(DataObject::default(), class);
        let _ = object
            .values
            .set(values.into_iter().map(Opaque::from).collect());
        // RB_GC_GUARD: the Array stays on the stack until the object holds its values.
        std::hint::black_box(values);
        object.freeze();
        object.as_value()
    }

    /// Makes `class` allocate [`DataObject`]s (magnus's `define_alloc_func`
    /// ties a TypedData to one class; Execution and Chunk share this one).
    pub fn define_alloc(class: RClass) {
        // SAFETY: `allocate` has the signature Ruby expects; GVL held.
        unsafe { rb_sys::rb_define_alloc_func(class.as_raw(), Some(allocate)) }
    }
}

/// Execution: `stdout`, `stderr`, `exit_code`, `error` (+ extra `signal`).
pub struct Execution;

impl DataShape for Execution {
    const MEMBERS: &'static [&'static str] = &["stdout", "stderr", "exit_code", "error"];
    const OPTIONAL: &'static [&'static str] = &["error"];
    const EXTRAS: &'static [&'static str] = &["signal"];
}

static EXECUTION_CLASS: Lazy<RClass> = Lazy::new(|ruby| {
    crate::helpers::constants::class(ruby, "LittleGhost::Sandbox::Execution")
        .expect("Execution is defined at load")
});

/// A frozen String copy of `bytes`' text.
pub(crate) fn frozen_text(ruby: &Ruby, text: &[u8], binary: bool) -> Value {
    let string = if binary {
        ruby.str_from_slice(text)
    } else {
        ruby.str_new(&String::from_utf8_lossy(text))
    };
    string.freeze();
    string.as_value()
}

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
        let nil = ruby.qnil().as_value();
        let number = |n: Option<i32>| n.map_or(nil, |n| ruby.integer_from_i64(n.into()).as_value());
        // Each value goes into the Array as it is made (see DataObject::wrap);
        // a push within capacity cannot fail.
        let values = ruby.ary_new_capa(5);
        let _ = values.push(frozen_text(ruby, stdout.as_bytes(), false));
        let _ = values.push(frozen_text(ruby, stderr.as_bytes(), false));
        let _ = values.push(number(exit_code));
        let _ = values.push(nil);
        let _ = values.push(number(signal));
        DataObject::wrap(ruby, ruby.get_inner(&EXECUTION_CLASS), values)
    }

    /// A frozen Execution of what an ended program wrote and how it ended.
    pub fn of(ruby: &Ruby, outcome: &Outcome) -> Value {
        let (stdout, stderr) = (&outcome.stdout, &outcome.stderr);
        Execution::wrap(ruby, stdout, stderr, outcome.code(), outcome.signal())
    }
}

/// Defines the Rust half of `$shape` on `$class`: [`data::define`] and the
/// private `initialize_values` (a macro: magnus's `method!` takes no generic
/// parameter of an enclosing function).
macro_rules! define_data_class {
    ($ruby:expr, $class:expr, $shape:ty) => {{
        use magnus::{method, Module};
        use $crate::ruby_api::execution::data;
        let class: magnus::RClass = $class;
        data::define::<$shape>($ruby, class)?;
        let initialize_values = method!(data::initialize_values::<$shape>, 1);
        class.define_private_method("initialize_values", initialize_values)?;
    }};
}
pub(crate) use define_data_class;

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Execution", ruby.class_object())?;
    define_data_class!(ruby, class, Execution);
    class.define_method("success?", method!(success, 0))?;
    let _ = ruby.get_inner(&EXECUTION_CLASS);
    Ok(())
}

/// True iff `error` is nil and `exit_code` is 0 (or, for a value a caller
/// passed to `new`, `== 0`: 0.0 too).
fn success(ruby: &Ruby, rb_self: Value) -> Result<bool, Error> {
    let values = data::values(rb_self)?;
    let code = values[2];
    if !values[3].is_nil() || code.is_nil() {
        return Ok(false);
    }
    if let Some(number) = Fixnum::from_value(code) {
        return Ok(number.to_i64() == 0);
    }
    let zero = ruby.integer_from_i64(0);
    Ok(code.funcall::<_, _, Value>("==", (zero,))?.to_bool())
}

/// The storage methods the Ruby side (`DataLike`) builds on.
pub mod data {
    use magnus::{method, Module};

    use super::*;

    /// Defines on `class` the allocator, the readers of `S`'s members and
    /// extras, the private constants `MEMBERS`, `OPTIONAL` and `EXTRAS`
    /// (frozen Arrays of Symbols), and the protected `data_values` that
    /// `DataLike` builds on (with `initialize_values`, see
    /// [`define_data_class`](super::define_data_class)).
    pub fn define<S: DataShape>(ruby: &Ruby, class: RClass) -> Result<(), Error> {
        DataObject::define_alloc(class);
        let readers = [
            method!(reader::<0>, 0),
            method!(reader::<1>, 0),
            method!(reader::<2>, 0),
            method!(reader::<3>, 0),
            method!(reader::<4>, 0),
        ];
        for (name, reader) in S::MEMBERS.iter().chain(S::EXTRAS).zip(readers) {
            class.define_method(*name, reader)?;
        }
        for (constant, names) in [
            ("MEMBERS", S::MEMBERS),
            ("OPTIONAL", S::OPTIONAL),
            ("EXTRAS", S::EXTRAS),
        ] {
            let symbols = ruby.ary_from_iter(names.iter().map(|name| ruby.to_symbol(name)));
            symbols.freeze();
            class.const_set(constant, symbols)?;
        }
        class.define_protected_method("data_values", method!(data_values, 0))?;
        Ok(())
    }

    /// Every value (MEMBERS then EXTRAS) of an initialized object.
    pub fn values(rb_self: Value) -> Result<Vec<Value>, Error> {
        let ruby = Ruby::get_with(rb_self);
        let object = <&DataObject>::try_convert(rb_self)?;
        match object.values.get() {
            Some(values) => Ok(values.iter().map(|value| ruby.get_inner(*value)).collect()),
            None => Err(Error::new(
                ruby.exception_runtime_error(),
                format!(
                    "{} was not initialized",
                    crate::helpers::value_object::class_name_or_empty(rb_self)
                ),
            )),
        }
    }

    /// The value at `I` (a member or an extra).
    pub fn reader<const I: usize>(rb_self: Value) -> Result<Value, Error> {
        Ok(values(rb_self)?[I])
    }

    /// `data_values`: every value as an Array (MEMBERS then EXTRAS).
    fn data_values(ruby: &Ruby, rb_self: Value) -> Result<RArray, Error> {
        Ok(ruby.ary_from_iter(values(rb_self)?))
    }

    /// `initialize_values(values)`: stores `values` (MEMBERS then EXTRAS,
    /// checked by the caller) once and freezes the object.
    pub fn initialize_values<S: DataShape>(
        ruby: &Ruby,
        rb_self: Obj<DataObject>,
        values: RArray,
    ) -> Result<(), Error> {
        let expected = S::MEMBERS.len() + S::EXTRAS.len();
        if values.len() != expected {
            let message = format!("{expected} values expected, {} given", values.len());
            return Err(crate::helpers::errors::argument_error(ruby, message));
        }
        let values = (0..expected)
            .map(|index| Ok(Opaque::from(frozen_string(values.entry(index as isize)?))))
            .collect::<Result<Box<[_]>, Error>>()?;
        rb_self
            .values
            .set(values)
            .map_err(|_| Error::new(ruby.exception_frozen_error(), "can't modify frozen value"))?;
        rb_self.freeze();
        Ok(())
    }
}

/// An unfrozen String as a frozen copy (the caller's String stays as it is;
/// stored values are frozen, 0.5); any other value as it is. The one place
/// this happens, for `new`, `with`, `dup` and a direct `initialize_values`.
fn frozen_string(value: Value) -> Value {
    match RString::from_value(value) {
        Some(text) if !text.is_frozen() => {
            // SAFETY: a live String, GVL held; String#dup's C body.
            let copy = unsafe { Value::from_raw(rb_sys::rb_str_dup(text.as_raw())) };
            copy.freeze();
            copy
        }
        _ => value,
    }
}

/// String#inspect through its C body.
fn inspect_text(text: RString) -> Result<String, Error> {
    // SAFETY: a live String, GVL held; a raise is caught by `protect`.
    let raw = protect(|| unsafe { rb_sys::rb_str_inspect(text.as_raw()) })?;
    // SAFETY: rb_str_inspect returned a live String.
    RString::try_convert(unsafe { Value::from_raw(raw) })?.to_string()
}

/// How `inspect` shows a String, a number, a Symbol, nil or a boolean, for
/// an error message and without asking Ruby (`None` for any other object).
pub(crate) fn show_plain(value: Value) -> Result<Option<String>, Error> {
    if let Some(text) = RString::from_value(value) {
        return inspect_text(text).map(Some);
    }
    if let Some(number) = Fixnum::from_value(value) {
        return Ok(Some(number.to_i64().to_string()));
    }
    if let Some(number) = Float::from_value(value) {
        let shown = littleghost_sandbox_core::process::arguments::float_text(number.to_f64());
        return Ok(Some(shown));
    }
    if value.is_nil() {
        return Ok(Some("nil".into()));
    }
    if magnus::value::Qtrue::from_value(value).is_some()
        || magnus::value::Qfalse::from_value(value).is_some()
    {
        return Ok(Some(value.to_bool().to_string()));
    }
    let Some(symbol) = Symbol::from_value(value) else {
        return Ok(None);
    };
    let name = symbol.name()?;
    if littleghost_sandbox_core::shown::bare_symbol(&name) {
        return Ok(Some(format!(":{name}")));
    }
    let text = magnus::Ruby::get_with(value).str_new(&name);
    Ok(Some(format!(":{}", inspect_text(text)?)))
}
