//! How an error message shows a plain value ([`show_plain`]), the way
//! `inspect` would, without asking Ruby.
//!
//! Strings go through Ruby's own C body (`rb_str_inspect`); Integers, Floats,
//! Symbols, nil and booleans are written here.

use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    Error, Fixnum, Float, RString, Symbol, Value,
};

/// String#inspect through its C body.
fn inspect_text(text: RString) -> Result<String, Error> {
    // SAFETY: a live String, GVL held; a raise is caught by `protect`.
    let raw = protect(|| unsafe { rb_sys::rb_str_inspect(text.as_raw()) })?;
    // SAFETY: rb_str_inspect returned a live String.
    RString::try_convert(unsafe { Value::from_raw(raw) })?.to_string()
}

/// How `inspect` shows a String, a number, a Symbol, nil or a boolean
/// (`None` for any other object).
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
