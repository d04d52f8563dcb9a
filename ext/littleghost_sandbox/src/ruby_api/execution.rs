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
//! Both classes are TypedData objects ([`DataObject`]) whose values live in
//! Rust (marked for the GC), not in instance variables; the runner and the
//! session build them directly ([`Execution::wrap`], [`DataObject::wrap`])
//! without a Ruby `new` call. The methods compare, hash and show Strings,
//! Integers, Floats, Symbols, nil and booleans themselves; only a value of
//! another kind (an object a caller passed to `new`) is asked through Ruby.

mod values;

use std::cell::OnceCell;

use magnus::{
    gc::Marker,
    method,
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    typed_data::Obj,
    value::Lazy,
    value::Opaque,
    DataTypeFunctions, Error, RClass, Ruby, TypedData, Value,
};

pub use values::data;
pub(crate) use values::show_plain;

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

impl DataObject {
    /// A frozen instance of `class` holding `values` (already frozen Strings).
    pub fn wrap(ruby: &Ruby, class: RClass, values: Vec<Value>) -> Value {
        let cell = OnceCell::new();
        let _ = cell.set(values.into_iter().map(Opaque::from).collect());
        let object: Obj<DataObject> = ruby.obj_wrap_as(DataObject { values: cell }, class);
        object.freeze();
        object.as_value()
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
        let values = vec![
            frozen_text(ruby, stdout.as_bytes(), false),
            frozen_text(ruby, stderr.as_bytes(), false),
            number(exit_code),
            nil,
            number(signal),
        ];
        DataObject::wrap(ruby, ruby.get_inner(&EXECUTION_CLASS), values)
    }
}

/// Defines the Data-like methods of `$shape` on `$class` (readers included).
macro_rules! define_data_class {
    ($ruby:expr, $class:expr, $shape:ty) => {{
        let ruby: &magnus::Ruby = $ruby;
        use magnus::{function, method, Module, Object};
        use $crate::ruby_api::execution::{data, DataObject, DataShape};
        let class: magnus::RClass = $class;
        DataObject::define_alloc(class);
        let readers = [
            method!(data::reader::<0>, 0),
            method!(data::reader::<1>, 0),
            method!(data::reader::<2>, 0),
            method!(data::reader::<3>, 0),
            method!(data::reader::<4>, 0),
        ];
        let names = <$shape as DataShape>::MEMBERS
            .iter()
            .chain(<$shape as DataShape>::EXTRAS);
        for (name, reader) in names.zip(readers) {
            class.define_method(*name, reader)?;
        }
        let _ = ruby;
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
    define_data_class!(ruby, class, Execution);
    class.define_method("success?", method!(success, 0))?;
    let _ = ruby.get_inner(&EXECUTION_CLASS);
    Ok(())
}

/// True iff `error` is nil and `exit_code` is 0 (or 0.0).
fn success(ruby: &Ruby, rb_self: Value) -> Result<bool, Error> {
    let values = data::values(rb_self)?;
    if !values[3].is_nil() {
        return Ok(false);
    }
    values::equal_values(values[2], ruby.integer_from_i64(0).as_value(), false)
}
