//! Comparing, hashing and showing the values of a Data-like object, and the
//! generic method bodies of [`define_data_class`](super::define_data_class).
//!
//! Strings, Integers, Floats, Symbols, nil and booleans (everything the
//! runner and the session store) are handled here through Ruby's own C
//! bodies (`rb_str_equal`, `rb_str_hash`, `rb_str_inspect`); a value of any
//! other kind is an object a caller passed to `new`, and is asked itself.

use std::hash::{DefaultHasher, Hash, Hasher};

use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    value::ReprValue,
    Error, Fixnum, Float, Integer, RString, Symbol, Value,
};

/// A value the methods below handle without asking it.
enum Plain {
    Text(RString),
    Whole(i64),
    Real(f64),
    Other,
}

fn plain(value: Value) -> Plain {
    if let Some(text) = RString::from_value(value) {
        return Plain::Text(text);
    }
    if let Some(number) = Fixnum::from_value(value) {
        return Plain::Whole(number.to_i64());
    }
    if let Some(number) = Float::from_value(value) {
        return Plain::Real(number.to_f64());
    }
    Plain::Other
}

/// nil, true, false and Symbols: equal only to themselves.
fn is_atom(value: Value) -> bool {
    value.is_nil()
        || magnus::value::Qtrue::from_value(value).is_some()
        || magnus::value::Qfalse::from_value(value).is_some()
        || Symbol::from_value(value).is_some()
}

/// `a == b` (or `a.eql?(b)` with `strict`).
pub(super) fn equal_values(a: Value, b: Value, strict: bool) -> Result<bool, Error> {
    if a.as_raw() == b.as_raw() {
        return Ok(true);
    }
    match (plain(a), plain(b)) {
        (Plain::Text(x), Plain::Text(y)) => {
            // SAFETY: two live Strings, GVL held; String#== and #eql? agree
            // for two Strings (same bytes, comparable encodings).
            let same = unsafe { rb_sys::rb_str_equal(x.as_raw(), y.as_raw()) };
            Ok(same == rb_sys::Qtrue as _)
        }
        (Plain::Whole(x), Plain::Whole(y)) => Ok(x == y),
        (Plain::Real(x), Plain::Real(y)) => Ok(x == y),
        (Plain::Whole(x), Plain::Real(y)) | (Plain::Real(y), Plain::Whole(x)) => {
            Ok(!strict && (x as f64) == y && y as i64 == x)
        }
        (Plain::Other, _) if !is_atom(a) => ask(a, if strict { "eql?" } else { "==" }, b),
        (_, Plain::Other) if !is_atom(b) && !strict => ask(b, "==", a),
        _ => Ok(false),
    }
}

/// A caller's object answers for itself.
fn ask(object: Value, method: &str, other: Value) -> Result<bool, Error> {
    object
        .funcall::<_, _, Value>(method, (other,))
        .map(|answer| answer.to_bool())
}

/// Feeds `value`'s hash into `hasher` (equal values feed equal hashes).
fn hash_value(value: Value, hasher: &mut DefaultHasher) -> Result<(), Error> {
    match plain(value) {
        // SAFETY: a live String, GVL held.
        Plain::Text(text) => unsafe { rb_sys::rb_str_hash(text.as_raw()) }.hash(hasher),
        Plain::Whole(n) => n.hash(hasher),
        // 1.0 eql? only 1.0; -0.0 == 0.0 must hash alike.
        Plain::Real(x) => (if x == 0.0 { 0.0f64 } else { x }).to_bits().hash(hasher),
        Plain::Other if is_atom(value) => value.as_raw().hash(hasher),
        Plain::Other => {
            let answer: Value = value.funcall("hash", ())?;
            Integer::try_convert(answer)?
                .to_i64()
                .unwrap_or(0)
                .hash(hasher)
        }
    }
    Ok(())
}

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
    let shown = match plain(value) {
        Plain::Text(text) => inspect_text(text)?,
        Plain::Whole(n) => n.to_string(),
        Plain::Real(x) => littleghost_sandbox_core::process::arguments::float_text(x),
        Plain::Other if value.is_nil() => "nil".into(),
        Plain::Other => match Symbol::from_value(value) {
            Some(symbol) => {
                let name = symbol.name()?;
                let simple = name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                    && name
                        .trim_end_matches(['?', '!', '='])
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_');
                if simple {
                    format!(":{name}")
                } else {
                    format!(
                        ":{}",
                        inspect_text(magnus::Ruby::get_with(value).str_new(&name))?
                    )
                }
            }
            None if is_atom(value) => value.to_bool().to_string(),
            None => return Ok(None),
        },
    };
    Ok(Some(shown))
}

/// How `inspect` shows `value` (a caller's own object answers itself).
fn show(value: Value) -> Result<String, Error> {
    match show_plain(value)? {
        Some(shown) => Ok(shown),
        None => value.funcall::<_, _, RString>("inspect", ())?.to_string(),
    }
}

/// A keyword's name: a Symbol's or a String's (an Integer by its digits;
/// any other key is named by its class, and is never a member).
fn key_name(key: Value) -> Result<String, Error> {
    if let Some(symbol) = Symbol::from_value(key) {
        return Ok(symbol.name()?.into_owned());
    }
    if let Some(text) = RString::from_value(key) {
        return text.to_string();
    }
    if let Some(number) = Fixnum::from_value(key) {
        return Ok(number.to_i64().to_string());
    }
    Ok(format!(
        "#<{}>",
        crate::helpers::value_object::class_name_or_empty(key)
    ))
}

/// Generic method bodies; see [`define_data_class`](super::define_data_class).
pub mod data {
    use magnus::{
        scan_args::scan_args, typed_data::Obj, Error, RArray, RHash, RString, Ruby, Value,
    };

    use super::super::{DataObject, DataShape};
    use super::*;
    use crate::ruby_api::errors::argument_error;

    fn symbol_list(names: &[&str]) -> String {
        names
            .iter()
            .map(|name| format!(":{name}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn noun(count: usize) -> &'static str {
        if count == 1 {
            "keyword"
        } else {
            "keywords"
        }
    }

    /// Strings become frozen copies (0.5); other values are kept as given.
    fn frozen_value(value: Value) -> Value {
        match RString::from_value(value) {
            Some(string) if !string.is_frozen() => {
                // SAFETY: a live String, GVL held; String#dup's C body.
                let copy = unsafe { Value::from_raw(rb_sys::rb_str_dup(string.as_raw())) };
                copy.freeze();
                copy
            }
            _ => value,
        }
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

    fn member_values<S: DataShape>(rb_self: Value) -> Result<Vec<Value>, Error> {
        let mut values = values(rb_self)?;
        values.truncate(S::MEMBERS.len());
        Ok(values)
    }

    /// The value at `I` (a member or an extra).
    pub fn reader<const I: usize>(rb_self: Value) -> Result<Value, Error> {
        Ok(values(rb_self)?[I])
    }

    /// The member names as Symbols.
    pub fn class_members<S: DataShape>(ruby: &Ruby) -> RArray {
        let array = ruby.ary_from_iter(S::MEMBERS.iter().map(|name| ruby.to_symbol(name)));
        array.freeze();
        array
    }

    /// The member names as Symbols.
    pub fn members<S: DataShape>(ruby: &Ruby, _rb_self: Value) -> RArray {
        class_members::<S>(ruby)
    }

    /// Puts each keyword into its slot; ArgumentError for unknown ones (and
    /// for a repeated one when `once`).
    fn assign<S: DataShape>(
        ruby: &Ruby,
        keywords: RHash,
        values: &mut [Option<Value>],
        once: bool,
    ) -> Result<(), Error> {
        let mut unknown = Vec::new();
        keywords.foreach(|key: Value, value: Value| {
            let name = key_name(key)?;
            match S::MEMBERS.iter().chain(S::EXTRAS).position(|m| *m == name) {
                Some(index) if once && values[index].is_some() => {
                    return Err(argument_error(ruby, format!("duplicate value for :{name}")));
                }
                Some(index) => values[index] = Some(value),
                None => unknown.push(name),
            }
            Ok(magnus::r_hash::ForEach::Continue)
        })?;
        if unknown.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = unknown.iter().map(String::as_str).collect();
        Err(argument_error(
            ruby,
            format!("unknown {}: {}", noun(names.len()), symbol_list(&names)),
        ))
    }

    /// Builds the value from keywords (or positional values in member order) and freezes it.
    pub fn initialize<S: DataShape>(
        ruby: &Ruby,
        rb_self: Obj<DataObject>,
        args: &[Value],
    ) -> Result<(), Error> {
        let args = scan_args::<(), (), RArray, (), RHash, ()>(args)?;
        let positional = args.splat;
        if positional.len() > S::MEMBERS.len() {
            return Err(argument_error(
                ruby,
                format!(
                    "wrong number of arguments (given {}, expected 0..{})",
                    positional.len(),
                    S::MEMBERS.len()
                ),
            ));
        }
        let mut values: Vec<Option<Value>> = vec![None; S::MEMBERS.len() + S::EXTRAS.len()];
        for (index, value) in positional.into_iter().enumerate() {
            values[index] = Some(value);
        }
        assign::<S>(ruby, args.keywords, &mut values, true)?;
        let missing: Vec<&str> = S::MEMBERS
            .iter()
            .zip(&values)
            .filter(|(name, value)| value.is_none() && !S::OPTIONAL.contains(name))
            .map(|(name, _)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(argument_error(
                ruby,
                format!("missing {}: {}", noun(missing.len()), symbol_list(&missing)),
            ));
        }
        let nil = ruby.qnil().as_value();
        let values: Box<[_]> = values
            .into_iter()
            .map(|value| frozen_value(value.unwrap_or(nil)).into())
            .collect();
        rb_self
            .values
            .set(values)
            .map_err(|_| Error::new(ruby.exception_frozen_error(), "can't modify frozen value"))?;
        rb_self.freeze();
        Ok(())
    }

    /// A Hash of member names to values; a block maps each pair like `Hash#to_h`.
    pub fn to_h<S: DataShape>(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<RHash, Error> {
        scan_args::<(), (), (), (), (), ()>(args)?;
        let block = ruby.block_proc().ok();
        let hash = ruby.hash_new();
        for (name, value) in S::MEMBERS.iter().zip(member_values::<S>(rb_self)?) {
            let key = ruby.to_symbol(name).as_value();
            let Some(block) = block else {
                hash.aset(key, value)?;
                continue;
            };
            // The caller's block maps the pair.
            let pair: Value = block.call((key, value))?;
            let Some(pair) = RArray::from_value(pair) else {
                let message = format!(
                    "wrong element type {} (expected array)",
                    crate::helpers::value_object::class_name_or_empty(pair)
                );
                return Err(Error::new(ruby.exception_type_error(), message));
            };
            if pair.len() != 2 {
                let message = format!(
                    "element has wrong array length (expected 2, was {})",
                    pair.len()
                );
                return Err(argument_error(ruby, message));
            }
            hash.aset(pair.entry::<Value>(0)?, pair.entry::<Value>(1)?)?;
        }
        Ok(hash)
    }

    /// A copy with the given members replaced (self when none are given).
    pub fn with<S: DataShape>(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
        let args = scan_args::<(), (), RArray, (), RHash, ()>(args)?;
        if !args.splat.is_empty() {
            return Err(argument_error(
                ruby,
                format!(
                    "wrong number of arguments (given {}, expected 0)",
                    args.splat.len()
                ),
            ));
        }
        if args.keywords.is_empty() {
            return Ok(rb_self);
        }
        let mut values: Vec<Option<Value>> = values(rb_self)?.into_iter().map(Some).collect();
        assign::<S>(ruby, args.keywords, &mut values, false)?;
        let nil = ruby.qnil().as_value();
        let values = values
            .into_iter()
            .map(|value| frozen_value(value.unwrap_or(nil)))
            .collect();
        Ok(DataObject::wrap(ruby, rb_self.class(), values))
    }

    fn compare<S: DataShape>(rb_self: Value, other: Value, strict: bool) -> Result<bool, Error> {
        if rb_self.as_raw() == other.as_raw() {
            return Ok(true);
        }
        if rb_self.class().as_raw() != other.class().as_raw() {
            return Ok(false);
        }
        for (mine, theirs) in member_values::<S>(rb_self)?
            .into_iter()
            .zip(member_values::<S>(other)?)
        {
            if !equal_values(mine, theirs, strict)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Same class and every member `==`.
    pub fn equal<S: DataShape>(rb_self: Value, other: Value) -> Result<bool, Error> {
        compare::<S>(rb_self, other, false)
    }

    /// Same class and every member `eql?`.
    pub fn eql<S: DataShape>(rb_self: Value, other: Value) -> Result<bool, Error> {
        compare::<S>(rb_self, other, true)
    }

    /// A hash of the class and the member values.
    pub fn hash<S: DataShape>(rb_self: Value) -> Result<i64, Error> {
        let mut hasher = DefaultHasher::new();
        rb_self.class().as_raw().hash(&mut hasher);
        for value in member_values::<S>(rb_self)? {
            hash_value(value, &mut hasher)?;
        }
        // A Fixnum, like every Ruby `hash`.
        Ok((hasher.finish() >> 2) as i64)
    }

    /// `#<data ClassName member=value, ...>`, like Data#inspect.
    pub fn inspect<S: DataShape>(rb_self: Value) -> Result<String, Error> {
        let class_name = crate::helpers::value_object::class_name_or_empty(rb_self);
        let mut text = String::from("#<data ");
        if !class_name.is_empty() {
            text.push_str(&class_name);
            text.push(' ');
        }
        let mut parts = Vec::with_capacity(S::MEMBERS.len());
        for (name, value) in S::MEMBERS.iter().zip(member_values::<S>(rb_self)?) {
            parts.push(format!("{name}={}", show(value)?));
        }
        text.push_str(&parts.join(", "));
        text.push('>');
        Ok(text)
    }

    /// The member values in order (array pattern matching).
    pub fn deconstruct<S: DataShape>(ruby: &Ruby, rb_self: Value) -> Result<RArray, Error> {
        Ok(ruby.ary_from_iter(member_values::<S>(rb_self)?))
    }

    /// The requested members as a Hash (hash pattern matching); nil means all.
    pub fn deconstruct_keys<S: DataShape>(
        ruby: &Ruby,
        rb_self: Value,
        keys: Value,
    ) -> Result<RHash, Error> {
        let hash = ruby.hash_new();
        let wanted: Option<RArray> = if keys.is_nil() {
            None
        } else {
            Some(RArray::try_convert(keys)?)
        };
        for (name, value) in S::MEMBERS.iter().zip(member_values::<S>(rb_self)?) {
            let symbol = ruby.to_symbol(name);
            if wanted.is_none_or(|list| list.includes(symbol)) {
                hash.aset(symbol, value)?;
            }
        }
        Ok(hash)
    }
}
