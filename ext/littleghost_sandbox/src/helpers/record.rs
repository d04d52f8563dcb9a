//! The frozen Ruby values over the core's kept records (`Sandbox::Denial`,
//! `Sandbox::NetworkEvent`): one reader per field the core names
//! ([`Fields`]), `==`/`eql?`/`hash` from the core record's `PartialEq` and
//! `Hash`, and `inspect` wrapping the record's one-line `Display` in its class.
//!
//! The field `method` is read with `http_method`: a reader named `method`
//! would shadow `Object#method`, which Ruby code (RSpec, `method(:x)`,
//! debuggers) relies on. `to_h` keeps the key `:method`, the name callers expect.

use std::fmt::Display;
use std::hash::Hash;

use littleghost_sandbox_core::network::log::{Field, Fields};
use magnus::{
    prelude::*, typed_data::Obj, Error, IntoValue, RArray, RHash, Ruby, TypedData, Value,
};

use crate::helpers::value_object as vo;

/// A TypedData value holding one core record.
pub trait RecordObject: TypedData + Sized + 'static {
    type Record: Fields + Display + PartialEq + Hash;
    fn new(record: Self::Record) -> Self;
    fn record(&self) -> &Self::Record;
}

/// A new frozen value for `record`.
pub fn wrap<T: RecordObject>(ruby: &Ruby, record: T::Record) -> Value {
    let object: Obj<T> = ruby.obj_wrap(T::new(record));
    let value = object.as_value();
    value.freeze();
    value
}

/// A frozen Array of new frozen values, oldest first.
pub fn list<T: RecordObject>(ruby: &Ruby, records: Vec<T::Record>) -> Result<RArray, Error> {
    let array = ruby.ary_new_capa(records.len());
    for record in records {
        array.push(wrap::<T>(ruby, record))?;
    }
    array.freeze();
    Ok(array)
}

/// A field as Ruby reads it: a name as a Symbol, text as a frozen String,
/// seconds as a Float, a time as a frozen Time, absent as nil.
fn to_ruby(ruby: &Ruby, field: Field<'_>) -> Value {
    match field {
        Field::Name(name) => ruby.to_symbol(name).as_value(),
        Field::Text(text) => vo::frozen_str(ruby, text).as_value(),
        Field::Count(count) => count.into_value_with(ruby),
        Field::Seconds(seconds) => seconds.into_value_with(ruby),
        Field::Flag(flag) => flag.into_value_with(ruby),
        Field::Time(time) => {
            let time = time.into_value_with(ruby);
            time.freeze();
            time
        }
        Field::Absent => ruby.qnil().as_value(),
    }
}

/// The reader of field `I`.
pub(crate) fn reader<T: RecordObject, const I: usize>(ruby: &Ruby, rb_self: &T) -> Value {
    to_ruby(ruby, rb_self.record().fields()[I])
}

/// to_h: every field under its name, `:method` included (see the module docs).
pub fn to_h<T: RecordObject>(ruby: &Ruby, rb_self: &T) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    let names = <T::Record as Fields>::NAMES;
    for (name, field) in names.iter().zip(rb_self.record().fields()) {
        hash.aset(ruby.to_symbol(name), to_ruby(ruby, field))?;
    }
    Ok(hash)
}

pub(crate) fn equal<T: RecordObject>(rb_self: &T, other: Value) -> bool {
    <&T>::try_convert(other).is_ok_and(|other| other.record() == rb_self.record())
}

pub(crate) fn hash<T: RecordObject>(rb_self: &T) -> i64 {
    vo::hash_code(rb_self.record())
}

/// `#<LittleGhost::Sandbox::Denial filesystem write "docs/a.md" read_only>`:
/// the core's one-line Display, wrapped in the class name.
pub(crate) fn inspect<T: RecordObject>(rb_self: Obj<T>) -> String {
    format!(
        "#<{} {}>",
        vo::class_name(rb_self.as_value()),
        rb_self.record()
    )
}

/// The name of the reader of field `name`.
pub(crate) fn reader_name(name: &str) -> &str {
    if name == "method" {
        "http_method"
    } else {
        name
    }
}

/// Defines a reader for each of `$type`'s fields (up to 12), `==`, `eql?`,
/// `hash`, `inspect` and `to_s` on `$class`.
macro_rules! define_record_methods {
    ($class:expr, $type:ty) => {{
        use magnus::{method, Module};
        use $crate::helpers::record;
        let names = <<$type as record::RecordObject>::Record as Fields>::NAMES;
        record::define_readers!($class, $type, names, [0 1 2 3 4 5 6 7 8 9 10 11]);
        $class.define_method("==", method!(record::equal::<$type>, 1))?;
        $class.define_method("eql?", method!(record::equal::<$type>, 1))?;
        $class.define_method("hash", method!(record::hash::<$type>, 0))?;
        $class.define_method("inspect", method!(record::inspect::<$type>, 0))?;
        $class.define_method("to_s", method!(record::inspect::<$type>, 0))?;
    }};
}

macro_rules! define_readers {
    ($class:expr, $type:ty, $names:expr, [$($index:literal)*]) => {$(
        if let Some(name) = $names.get($index) {
            let reader = method!(record::reader::<$type, $index>, 0);
            $class.define_method(record::reader_name(name), reader)?;
        }
    )*};
}

pub(crate) use {define_readers, define_record_methods};
