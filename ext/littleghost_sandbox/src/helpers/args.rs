//! Keyword arguments across the binding: parsing a `-1` arity call the way
//! Ruby would, and building Symbol-keyed Hashes for keyword calls.

use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawId, AsRawValue, FromRawValue},
    scan_args::scan_args,
    Error, RArray, RHash, Ruby, Symbol, Value,
};
use rb_sys::VALUE;

use crate::ruby_api::errors;

/// A Symbol-keyed Hash built from `(name, value)` pairs, for keyword calls.
pub fn kwargs(ruby: &Ruby, pairs: &[(&str, Value)]) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for (name, value) in pairs {
        hash.aset(ruby.to_symbol(name), *value)?;
    }
    Ok(hash)
}

/// Parses `args` as keywords only (no positionals), returning the Hash (empty when none were given).
pub fn keywords_only(args: &[Value]) -> Result<RHash, Error> {
    Ok(scan_args::<(), (), (), (), RHash, ()>(args)?.keywords)
}

/// Keyword arguments checked against the accepted names, as Ruby would:
/// ArgumentError for an unknown or a missing required keyword. Returns the
/// value of each name in `names` order (None when absent).
pub fn keywords(
    ruby: &Ruby,
    hash: RHash,
    required: &[&str],
    optional: &[&str],
) -> Result<Vec<Option<Value>>, Error> {
    let unknown = unknown_keys(hash, |name| {
        required.contains(&name) || optional.contains(&name)
    })?;
    if !unknown.is_empty() {
        let noun = if unknown.len() == 1 {
            "keyword"
        } else {
            "keywords"
        };
        return Err(errors::argument_error(
            ruby,
            format!("unknown {noun}: {}", unknown.join(", ")),
        ));
    }
    let mut values = Vec::new();
    for name in required {
        match hash.get(ruby.to_symbol(name)) {
            Some(value) => values.push(Some(value)),
            None => {
                return Err(errors::argument_error(
                    ruby,
                    format!("missing keyword: :{name}"),
                ))
            }
        }
    }
    for name in optional {
        values.push(hash.get(ruby.to_symbol(name)));
    }
    Ok(values)
}

/// A `-1` arity call of one positional (the command) and checked keywords,
/// as `keywords` returns them.
pub fn command_call(
    ruby: &Ruby,
    args: &[Value],
    required: &[&str],
    optional: &[&str],
) -> Result<(Value, Vec<Option<Value>>), Error> {
    let parsed = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let (command,) = parsed.required;
    Ok((
        command,
        keywords(ruby, parsed.keywords, required, optional)?,
    ))
}

/// The `inspect` of each key of `hash` that is not a Symbol whose name is `known`, in order.
pub fn unknown_keys(hash: RHash, known: impl Fn(&str) -> bool) -> Result<Vec<String>, Error> {
    let mut unknown = Vec::new();
    hash.foreach(|key: Value, _value: Value| {
        let is_known = Symbol::from_value(key)
            .and_then(|s| s.name().ok().map(|n| known(&n)))
            .unwrap_or(false);
        if !is_known {
            unknown.push(key.inspect());
        }
        Ok(magnus::r_hash::ForEach::Continue)
    })?;
    Ok(unknown)
}

/// Calls `receiver.name(*positionals, **keywords)` (one dispatch, any arity).
pub fn call_with(
    receiver: Value,
    name: &str,
    positionals: &[Value],
    keywords: RHash,
) -> Result<Value, Error> {
    let ruby = Ruby::get_with(receiver);
    let argv: Vec<VALUE> = positionals
        .iter()
        .chain(std::iter::once(&keywords.as_value()))
        .map(|value| value.as_raw())
        .collect();
    let (receiver, id) = (receiver.as_raw(), ruby.intern(name).as_raw());
    let argc = std::ffi::c_int::try_from(argv.len()).unwrap_or(std::ffi::c_int::MAX);
    // SAFETY: `argv` holds `argc` live VALUEs (the caller's arguments and
    // `keywords`, all reachable from this call's stack); the last is the
    // keyword Hash, passed as keywords (kw_splat = 1) as `**keywords` would.
    // `protect` catches a raise.
    let out = protect(|| unsafe { rb_sys::rb_funcallv_kw(receiver, id, argc, argv.as_ptr(), 1) })?;
    // SAFETY: `out` is the value the method just returned.
    Ok(unsafe { Value::from_raw(out) })
}

/// Splits a `-1` arity call into its positionals and keywords.
pub fn split_args(args: &[Value]) -> Result<(Vec<Value>, RHash), Error> {
    let parsed = scan_args::<(), (), RArray, (), RHash, ()>(args)?;
    Ok((parsed.splat.into_iter().collect(), parsed.keywords))
}
