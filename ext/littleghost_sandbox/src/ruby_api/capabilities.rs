//! `LittleGhost::Sandbox::Capabilities` (SPEC §4): what a backend can enforce.

use magnus::{
    function, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, RArray,
    RClass, RHash, RObject, Ruby, Symbol, Value,
};

use crate::helpers::constants;
use crate::helpers::value_object::{self as vo, ivar_reader, value_methods};
use crate::ruby_api::errors;

/// The features a backend reports when it is not told otherwise (4.1).
pub const DEFAULT_FEATURES: [&str; 3] = ["filesystem_read", "filesystem_list", "process_execute"];
/// Every network mode a backend may claim (4.1).
pub const NETWORK_MODES: [&str; 3] = ["inherit", "none", "allowlist"];
/// Short names accepted wherever a feature is named (4.3).
const ALIASES: [(&str, &str); 6] = [
    ("read", "filesystem_read"),
    ("list", "filesystem_list"),
    ("write", "filesystem_write"),
    ("replace", "filesystem_replace"),
    ("execute", "process_execute"),
    ("spawn", "process_spawn"),
];

const IVARS: &[&str] = &["@features", "@network_modes", "@isolation"];
const FIELDS: &[(&str, &str)] = &[
    ("features", "@features"),
    ("network_modes", "@network_modes"),
    ("isolation", "@isolation"),
];

value_methods!(IVARS, FIELDS);

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Capabilities", ruby.class_object())?;
    let defaults = vo::frozen_symbols(ruby, &symbols(ruby, &DEFAULT_FEATURES));
    class.const_set("DEFAULT_FEATURES", defaults)?;
    class.define_singleton_method("normalize", function!(normalize, 1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("features", method!(features, 0))?;
    class.define_method("network_modes", method!(network_modes, 0))?;
    class.define_method("isolation", method!(isolation, 0))?;
    class.define_method("supports?", method!(supports, -1))?;
    class.define_method("include?", method!(supports, -1))?;
    class.define_method("intersect", method!(intersect, 1))?;
    class.define_method("to_h", method!(to_h, 0))?;
    define_value_methods(class)?;
    Ok(())
}

/// A frozen Capabilities built from Rust names (for backends and probes).
#[allow(dead_code)] // used by the sandbox and backend files
pub fn build(
    ruby: &Ruby,
    features: &[&str],
    network_modes: &[&str],
    isolation: &str,
) -> Result<Value, Error> {
    let class = constants::class(ruby, "LittleGhost::Sandbox::Capabilities")?;
    let kwargs = ruby.hash_new();
    kwargs.aset(
        ruby.to_symbol("features"),
        ruby.ary_from_iter(symbols(ruby, features)),
    )?;
    kwargs.aset(
        ruby.to_symbol("network_modes"),
        ruby.ary_from_iter(symbols(ruby, network_modes)),
    )?;
    kwargs.aset(ruby.to_symbol("isolation"), ruby.to_symbol(isolation))?;
    class.funcall("new", (magnus::KwArgs(kwargs),))
}

/// Capabilities with no features and no network modes (10.4, 12.3).
#[allow(dead_code)] // used by the sandbox and backend files
pub fn empty(ruby: &Ruby) -> Result<Value, Error> {
    build(ruby, &[], &[], "none")
}

fn symbols(ruby: &Ruby, names: &[&str]) -> Vec<Symbol> {
    names.iter().map(|name| ruby.to_symbol(name)).collect()
}

/// The canonical name of a feature name (alias resolution), without Ruby.
pub fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map(|(_, full)| *full)
        .unwrap_or(name)
}

/// `feature.to_sym` with aliases resolved; ArgumentError when it is not name-ish.
fn normalize_value(ruby: &Ruby, feature: Value) -> Result<Symbol, Error> {
    let symbol = vo::try_to_sym(feature)?.ok_or_else(|| {
        errors::argument_error(
            ruby,
            format!(
                "capability feature must be a Symbol or String, got {}",
                vo::inspect_value(ruby, feature).unwrap_or_default()
            ),
        )
    })?;
    let name = vo::sym_name(symbol)?;
    Ok(ruby.to_symbol(canonical(&name)))
}

/// Capabilities.normalize(feature): the canonical feature Symbol, resolving aliases such as `:read`.
fn normalize(ruby: &Ruby, feature: Value) -> Result<Symbol, Error> {
    normalize_value(ruby, feature)
}

/// Ordered unique normalised Symbols from anything `Array()` accepts.
fn unique_symbols(ruby: &Ruby, list: Value) -> Result<Vec<Symbol>, Error> {
    let array = RArray::try_convert(vo::kernel(ruby, "Array", list)?)?;
    let mut out: Vec<Symbol> = Vec::new();
    for item in array.into_iter() {
        let symbol = normalize_value(ruby, item)?;
        if !out.contains(&symbol) {
            out.push(symbol);
        }
    }
    Ok(out)
}

/// Capabilities.new(features: DEFAULT_FEATURES, network_modes: [:inherit], isolation: :none): a frozen capability report.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<_, (), (Option<Value>, Option<Value>, Option<Value>), ()>(
        args.keywords,
        &[],
        &["features", "network_modes", "isolation"],
    )?;
    let (features, network_modes, isolation) = kwargs.optional;
    let features = match features {
        Some(list) => unique_symbols(ruby, list)?,
        None => symbols(ruby, &DEFAULT_FEATURES),
    };
    let network_modes = match network_modes {
        Some(list) => unique_symbols(ruby, list)?,
        None => symbols(ruby, &["inherit"]),
    };
    let unsupported: Vec<Symbol> = network_modes
        .iter()
        .copied()
        .filter(|mode| {
            let name = mode.name().map(|n| n.into_owned()).unwrap_or_default();
            !NETWORK_MODES.contains(&name.as_str())
        })
        .collect();
    if !unsupported.is_empty() {
        return Err(errors::argument_error(
            ruby,
            format!(
                "unsupported network modes: {} (use :inherit, :none or :allowlist)",
                vo::symbol_list(&unsupported)?
            ),
        ));
    }
    let isolation = match isolation {
        Some(value) => vo::try_to_sym(value)?.ok_or_else(|| {
            errors::argument_error(
                ruby,
                "capability isolation must be a Symbol such as :none or :namespace",
            )
        })?,
        None => ruby.to_symbol("none"),
    };
    rb_self.ivar_set("@features", vo::frozen_symbols(ruby, &features))?;
    rb_self.ivar_set("@network_modes", vo::frozen_symbols(ruby, &network_modes))?;
    rb_self.ivar_set("@isolation", isolation)?;
    rb_self.freeze();
    Ok(())
}

ivar_reader!(
    features,
    "@features",
    "The supported features, a frozen Array of Symbols."
);
ivar_reader!(
    network_modes,
    "@network_modes",
    "The network modes the backend can enforce, a frozen Array of Symbols."
);
ivar_reader!(
    isolation,
    "@isolation",
    "A descriptive Symbol naming the isolation mechanism (:none, :namespace, ...)."
);

fn includes(list: Value, symbol: Symbol) -> Result<bool, Error> {
    list.funcall("include?", (symbol,))
}

/// supports?(feature, value = nil): whether the feature (or network mode) is available; aliases are honoured.
fn supports(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<bool, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (feature,) = args.required;
    let (value,) = args.optional;
    let feature = normalize_value(ruby, feature)?;
    let modes = rb_self.ivar_get::<_, Value>("@network_modes")?;
    if vo::sym_name(feature)? == "network" {
        return match value.filter(|v| !v.is_nil()) {
            None => {
                let empty: bool = modes.funcall("empty?", ())?;
                Ok(!empty)
            }
            Some(mode) => match vo::try_to_sym(mode)? {
                Some(mode) => includes(modes, mode),
                None => Ok(false),
            },
        };
    }
    includes(rb_self.ivar_get("@features")?, feature)
}

/// intersect(other): the features and network modes both support, keeping the receiver's order and isolation.
fn intersect(ruby: &Ruby, rb_self: RObject, other: Value) -> Result<Value, Error> {
    let mine_features: Value = rb_self.ivar_get("@features")?;
    let mine_modes: Value = rb_self.ivar_get("@network_modes")?;
    vo::require_duck(
        other,
        "capabilities to intersect",
        &["features", "network_modes"],
    )?;
    let other_features: Value = other.funcall("features", ())?;
    let other_modes: Value = other.funcall("network_modes", ())?;
    let features: Value = mine_features.funcall("&", (other_features,))?;
    let modes: Value = mine_modes.funcall("&", (other_modes,))?;
    let kwargs = ruby.hash_new();
    kwargs.aset(ruby.to_symbol("features"), features)?;
    kwargs.aset(ruby.to_symbol("network_modes"), modes)?;
    kwargs.aset(
        ruby.to_symbol("isolation"),
        rb_self.ivar_get::<_, Value>("@isolation")?,
    )?;
    rb_self.class().funcall("new", (magnus::KwArgs(kwargs),))
}

/// to_h: `{features:, network_modes:, isolation:}`, frozen.
fn to_h(ruby: &Ruby, rb_self: RObject) -> Result<RHash, Error> {
    vo::fields_hash(ruby, rb_self, FIELDS)
}
