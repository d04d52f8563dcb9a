//! `LittleGhost::Sandbox::Limits` (SPEC §5): byte and entry caps for file
//! operations and captured output.

use magnus::{
    function, method, prelude::*, scan_args::scan_args, Error, IntoValue, RClass, RHash, RObject,
    Ruby, Symbol, Value,
};

use crate::helpers::constants;
use crate::helpers::value_object::{self as vo, ivar_reader, value_methods};
use crate::ruby_api::errors;

/// The limit names and their defaults (5.1).
pub const DEFAULTS: [(&str, i64); 4] = [
    ("read_bytes", 1_000_000),
    ("write_bytes", 1_000_000),
    ("list_entries", 10_000),
    // The one default the process runner and sessions also use.
    (
        "output_bytes",
        littleghost_sandbox_core::process::capture::DEFAULT_OUTPUT_BYTES as i64,
    ),
];

const IVARS: &[&str] = &[
    "@read_bytes",
    "@write_bytes",
    "@list_entries",
    "@output_bytes",
];
const FIELDS: &[(&str, &str)] = &[
    ("read_bytes", "@read_bytes"),
    ("write_bytes", "@write_bytes"),
    ("list_entries", "@list_entries"),
    ("output_bytes", "@output_bytes"),
];

value_methods!(IVARS, FIELDS);

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Limits", ruby.class_object())?;
    let defaults = ruby.hash_new();
    for (name, value) in DEFAULTS {
        defaults.aset(ruby.to_symbol(name), value)?;
    }
    defaults.freeze();
    class.const_set("DEFAULTS", defaults)?;
    class.define_singleton_method("coerce", function!(coerce, 1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("read_bytes", method!(read_bytes, 0))?;
    class.define_method("write_bytes", method!(write_bytes, 0))?;
    class.define_method("list_entries", method!(list_entries, 0))?;
    class.define_method("output_bytes", method!(output_bytes, 0))?;
    class.define_method("to_h", method!(to_h, 0))?;
    define_value_methods(class)?;
    Ok(())
}

/// Limits.coerce(value): a Limits unchanged, or `new(**value.to_h)` with Symbol keys.
pub(crate) fn coerce(ruby: &Ruby, value: Value) -> Result<Value, Error> {
    let class = constants::class(ruby, "LittleGhost::Sandbox::Limits")?;
    if value.is_kind_of(class) {
        return Ok(value);
    }
    if !vo::responds(value, "to_h") {
        return Err(errors::policy_error(ruby, "sandbox limits must be a Hash"));
    }
    let hash: Value = value.funcall("to_h", ())?;
    let options = vo::symbolize_keys(ruby, hash)?;
    class.funcall("new", (magnus::KwArgs(options),))
}

/// `Integer(value)`, positive, or PolicyError naming the limit.
fn positive_integer(ruby: &Ruby, name: &str, value: Value) -> Result<Value, Error> {
    let integer = vo::kernel(ruby, "Integer", value).map_err(|error| {
        if vo::is_standard_error(ruby, &error) {
            errors::policy_error(ruby, format!("sandbox {name} must be an integer"))
        } else {
            error
        }
    })?;
    let positive: bool = integer.funcall("positive?", ())?;
    if !positive {
        return Err(errors::policy_error(
            ruby,
            format!("sandbox {name} must be positive"),
        ));
    }
    // Every limit becomes a byte or entry count in the core; a value beyond
    // the platform's signed 64-bit range (off_t, ssize_t) could not be
    // carried, and would fail at first use instead of here.
    if magnus::Integer::try_convert(integer)?.to_i64().is_err() {
        return Err(errors::policy_error(
            ruby,
            format!("sandbox {name} must be at most {}", i64::MAX),
        ));
    }
    Ok(integer)
}

/// Limits.new(**values): the defaults with `values` merged over them; each must be a positive integer.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let given = vo::hash_pairs(args.keywords)?;
    let known = |key: Value| {
        Symbol::from_value(key)
            .and_then(|s| s.name().ok())
            .filter(|name| DEFAULTS.iter().any(|(known, _)| known == name))
            .map(|name| name.into_owned())
    };
    let unknown: Vec<String> = given
        .iter()
        .filter(|(key, _)| known(*key).is_none())
        .map(|(key, _)| match Symbol::from_value(*key) {
            Some(symbol) => vo::sym_name(symbol).unwrap_or_default(),
            None => vo::inspect_value(ruby, *key).unwrap_or_default(),
        })
        .collect();
    if !unknown.is_empty() {
        return Err(errors::policy_error(
            ruby,
            format!(
                "unknown sandbox limits: {} (known: read_bytes, write_bytes, list_entries, output_bytes)",
                unknown.join(", ")
            ),
        ));
    }
    for (name, default) in DEFAULTS {
        let value = given
            .iter()
            .find(|(key, _)| known(*key).as_deref() == Some(name))
            .map(|(_, value)| *value);
        let value = match value {
            Some(value) => positive_integer(ruby, name, value)?,
            None => default.into_value_with(ruby),
        };
        rb_self.ivar_set(format!("@{name}"), value)?;
    }
    rb_self.freeze();
    Ok(())
}

ivar_reader!(
    read_bytes,
    "@read_bytes",
    "The largest file `read` returns, in bytes."
);
ivar_reader!(
    write_bytes,
    "@write_bytes",
    "The largest content `write` or `replace` accepts, in bytes."
);
ivar_reader!(
    list_entries,
    "@list_entries",
    "The most entries `list` returns."
);
ivar_reader!(
    output_bytes,
    "@output_bytes",
    "The most bytes of process output captured per stream."
);

/// to_h: every limit by name, frozen.
fn to_h(ruby: &Ruby, rb_self: RObject) -> Result<RHash, Error> {
    vo::fields_hash(ruby, rb_self, FIELDS)
}
