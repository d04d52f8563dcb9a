//! Keyword arguments across the binding: parsing a `-1` arity call the way
//! Ruby would, and building Symbol-keyed Hashes for keyword calls.

use magnus::{prelude::*, scan_args::scan_args, Error, RHash, Ruby, Symbol, Value};

use crate::helpers::errors;

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
    refuse_unknown(ruby, hash, required, optional)?;
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

/// ArgumentError for a key of `hash` that is neither `required` nor
/// `optional`, naming it and listing the valid ones (before magnus's
/// `get_kwargs`, whose message lists none).
pub fn refuse_unknown(
    ruby: &Ruby,
    hash: RHash,
    required: &[&str],
    optional: &[&str],
) -> Result<(), Error> {
    let unknown = unknown_keys(hash, |name| {
        required.contains(&name) || optional.contains(&name)
    })?;
    if unknown.is_empty() {
        return Ok(());
    }
    let known: Vec<&str> = required.iter().chain(optional).copied().collect();
    Err(errors::argument_error(
        ruby,
        errors::unknown_keywords(&unknown, &known),
    ))
}

/// Optional keywords only, as magnus's `get_kwargs` takes them: ArgumentError
/// for an unknown keyword; the value of each of `names`, in order (None when
/// absent, `Some(nil)` when given as nil).
pub fn optional<const N: usize>(
    ruby: &Ruby,
    hash: RHash,
    names: [&str; N],
) -> Result<[Option<Value>; N], Error> {
    let values = keywords(ruby, hash, &[], &names)?;
    Ok(std::array::from_fn(|i| values[i]))
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
