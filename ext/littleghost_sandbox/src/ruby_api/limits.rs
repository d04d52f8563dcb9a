//! `LittleGhost::Sandbox::Limits` (SPEC §5): byte and entry caps for file
//! operations and captured output. Names, defaults and rules are the core's
//! `policy::Limits`; this file converts each value with Ruby's `Integer()`.

use littleghost_sandbox_core::policy::{self as core, LimitValue};
use magnus::{
    function, method, prelude::*, scan_args::scan_args, typed_data::Obj, Error, RClass, RHash,
    Ruby, TypedData, Value,
};

use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::network_policy::Declared;

/// A frozen set of limits holding the core's value.
#[magnus::wrap(class = "LittleGhost::Sandbox::Limits", free_immediately, size)]
pub struct Limits(core::Limits);

/// The core limits `value` wraps, if it is a Limits.
pub(crate) fn borrow(value: Value) -> Option<&'static core::Limits> {
    <&Limits>::try_convert(value).ok().map(|limits| &limits.0)
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Limits", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.const_set(
        "DEFAULTS",
        vo::value_to_h(ruby, &Limits(core::Limits::default()))?,
    )?;
    class.define_singleton_method("new", method!(new, -1))?;
    class.define_singleton_method("coerce", function!(coerce, 1))?;
    vo::define_value_methods!(class, Limits, true, [0, 1, 2, 3])
}

impl vo::ValueObject for Limits {
    type Core = core::Limits;

    // read_bytes: the largest file `read` returns; write_bytes: the largest
    // content `write` or `replace` accepts (both in bytes); list_entries: the
    // most entries `list` returns; output_bytes: the most bytes of process
    // output captured per stream. In the core's `fields` order.
    const FIELDS: &'static [(&'static str, vo::Reader<Self>)] = &[
        ("read_bytes", |ruby, l| Ok(ruby.into_value(l.0.read_bytes))),
        (
            "write_bytes",
            |ruby, l| Ok(ruby.into_value(l.0.write_bytes)),
        ),
        ("list_entries", |ruby, l| {
            Ok(ruby.into_value(l.0.list_entries))
        }),
        ("output_bytes", |ruby, l| {
            Ok(ruby.into_value(l.0.output_bytes))
        }),
    ];

    fn core(&self) -> &core::Limits {
        &self.0
    }
}

/// Limits.coerce(value): a Limits unchanged, or `new(**value.to_h)` with Symbol keys.
/// Rust callers (Sandbox#initialize) may call it directly instead of dispatching.
pub(crate) fn coerce(ruby: &Ruby, value: Value) -> Result<Value, Error> {
    if borrow(value).is_some() {
        return Ok(value);
    }
    let hash = if vo::is_hash(ruby, value) {
        value
    } else if value.is_nil() {
        ruby.hash_new().as_value()
    } else if vo::responds(value, "to_h") {
        // An Array of pairs, a Struct, or a caller's own type.
        value.funcall("to_h", ())?
    } else {
        return Err(errors::policy_error(ruby, "sandbox limits must be a Hash"));
    };
    let options = vo::symbolize_keys(ruby, hash)?;
    Ok(build(ruby, Limits::class(ruby), options)?.as_value())
}

/// Limits.new(**values): the defaults with `values` merged over them; each must be a positive integer.
fn new(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Obj<Limits>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    build(ruby, class, args.keywords)
}

fn build(ruby: &Ruby, class: RClass, keywords: RHash) -> Result<Obj<Limits>, Error> {
    let keywords = Declared(ruby, keywords.as_value());
    let limits = core::Limits::declared(&keywords, |value| integer(ruby, value.1))?;
    Ok(vo::frozen_obj(ruby, Limits(limits), class))
}

/// `Integer(value)` as the core sees it; a StandardError from the conversion means "not an integer".
fn integer(ruby: &Ruby, value: Value) -> Result<LimitValue, Error> {
    let integer = match vo::kernel(ruby, "Integer", value) {
        Ok(integer) => magnus::Integer::try_convert(integer)?,
        // A StandardError (not an Interrupt or SystemExit) is a refused conversion.
        Err(error) if error.is_kind_of(ruby.exception_standard_error()) => {
            return Ok(LimitValue::NotInteger)
        }
        Err(error) => return Err(error),
    };
    Ok(match integer.to_i64() {
        Ok(n) => LimitValue::Integer(n),
        Err(_)
            if magnus::RBignum::from_value(integer.as_value()).is_some_and(|b| b.is_negative()) =>
        {
            LimitValue::TooSmall
        }
        Err(_) => LimitValue::TooLarge,
    })
}
