//! Ruby values to the numbers the core's rules take (17.3), and the errors
//! that carry a `cause`. `Float()`/`Integer()` run as Ruby's own C
//! conversions (`rb_Float`, `rb_Integer`), not as a Kernel method call.

use crate::helpers::limit_keywords::{self as keywords, Given};
use littleghost_sandbox_core::process::arguments;
use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    value::ReprValue,
    Error, Exception, Fixnum, Float, Integer, KwArgs, RClass, Ruby, Value,
};

use crate::helpers::errors::argument_error;
use crate::helpers::{args, constants};
use crate::ruby_api::launch_limits::integer_given;

/// `Float(value)`: Integers and Floats directly, anything else through
/// Ruby's conversion (a String, a Rational, a user's `to_f`).
pub fn kernel_float(value: Value) -> Result<f64, Error> {
    if let Some(number) = Fixnum::from_value(value) {
        return Ok(number.to_i64() as f64);
    }
    if let Some(number) = Float::from_value(value) {
        return Ok(number.to_f64());
    }
    // SAFETY: rb_Float is called with the GVL held on a live VALUE; a raise
    // is caught by `protect` and returned as Err.
    let converted = protect(|| unsafe { rb_sys::rb_Float(value.as_raw()) })?;
    // SAFETY: rb_Float returned a live Float VALUE.
    let float = unsafe { Value::from_raw(converted) };
    Ok(Float::from_value(float).map_or(f64::NAN, |number| number.to_f64()))
}

/// `Integer(value)` as the core's [`Given`].
pub fn kernel_integer(value: Value) -> Result<Given, Error> {
    if let Some(integer) = Integer::from_value(value) {
        return Ok(integer_given(integer));
    }
    // SAFETY: as in `kernel_float`, with rb_Integer.
    let converted = protect(|| unsafe { rb_sys::rb_Integer(value.as_raw()) })?;
    // SAFETY: rb_Integer returned a live Integer VALUE.
    let integer = unsafe { Value::from_raw(converted) };
    Ok(Integer::from_value(integer).map_or(Given::NotInteger, integer_given))
}

/// 17.3: `Float(value)`, positive and finite; otherwise ArgumentError "timeout must be positive".
pub fn validate_timeout(ruby: &Ruby, value: Value) -> Result<f64, Error> {
    let seconds = kernel_float(value).unwrap_or(f64::NAN);
    arguments::timeout_seconds(seconds).map_err(|message| argument_error(ruby, message))
}

/// 17.3: `max_output_bytes` through `Integer()` and positive; nil means `default`.
pub fn validate_output_bytes(ruby: &Ruby, value: Value, default: u64) -> Result<u64, Error> {
    if value.is_nil() {
        return Ok(default);
    }
    positive_integer(ruby, value, "max_output_bytes")
}

/// `Integer(value)` that must be positive; ArgumentError "NAME must be a positive Integer" otherwise.
pub fn positive_integer(ruby: &Ruby, value: Value, name: &str) -> Result<u64, Error> {
    let given = kernel_integer(value).unwrap_or(Given::NotInteger);
    keywords::positive(name, given).map_err(|message| argument_error(ruby, message))
}

/// A keywords-only call checked as Ruby checks one (ArgumentError for an
/// unknown keyword, listing the valid ones, or a missing one of the first
/// `required` of `names`): the value of each of `names` in order, None
/// when absent, `Some(nil)` when given as nil.
pub fn keywords<const N: usize>(
    ruby: &Ruby,
    args: &[Value],
    names: [&str; N],
    required: usize,
) -> Result<[Option<Value>; N], Error> {
    let hash = args::keywords_only(args)?;
    args::keywords(ruby, hash, &names[..required], &names[required..])?;
    Ok(names.map(|name| hash.get(ruby.to_symbol(name))))
}

/// The `SystemCallError` subclass instance (`Errno::EXXX`) for `errno`.
pub fn errno_exception(ruby: &Ruby, errno: i32, message: Option<&str>) -> Result<Exception, Error> {
    let text = message.map(|text| ruby.str_new(text));
    // SAFETY: rb_syserr_new_str builds (never raises for a valid errno) with
    // the GVL held; `protect` catches anything it raises.
    let raw = protect(|| unsafe {
        rb_sys::rb_syserr_new_str(errno, text.map_or(rb_sys::Qnil as _, |text| text.as_raw()))
    })?;
    // SAFETY: a live exception VALUE.
    Exception::try_convert(unsafe { Value::from_raw(raw) })
}

/// ToolError "MESSAGE (Errno::EXXX)" whose `cause` is that Errno (1.2: no errno text).
pub fn with_errno_cause(ruby: &Ruby, message: &str, errno: i32) -> Error {
    let build = || -> Result<Error, Error> {
        let cause = errno_exception(ruby, errno, None)?;
        let class_name = crate::helpers::value_object::class_name_or_empty(cause.as_value());
        let class = constants::class(ruby, "LittleGhost::ToolError")?;
        error_with_cause(
            ruby,
            class,
            &format!("{message} ({class_name})"),
            cause.as_value(),
        )
    };
    build().unwrap_or_else(|error| error)
}

/// An exception of `class` with `message` whose `cause` is `cause`, made by
/// raising it once: Ruby has no C API that sets a cause, so this is the one
/// `Kernel#raise` the binding makes.
pub fn error_with_cause(
    ruby: &Ruby,
    class: RClass,
    message: &str,
    cause: Value,
) -> Result<Error, Error> {
    let kwargs = ruby.hash_new();
    kwargs.aset(ruby.to_symbol("cause"), cause)?;
    match ruby
        .module_kernel()
        .funcall::<_, _, Value>("raise", (class, message, KwArgs(kwargs)))
    {
        Err(error) => Ok(error),
        Ok(_) => Err(Error::new(ruby.exception_runtime_error(), "raise returned")),
    }
}
