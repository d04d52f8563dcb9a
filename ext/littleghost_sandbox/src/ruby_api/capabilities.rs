//! `LittleGhost::Sandbox::Capabilities` (SPEC §4): what a backend can enforce.
//! Aliases, validation and `intersect` are the core's `policy::Capabilities`.

use littleghost_sandbox_core::policy as core;
use magnus::{
    function, method, prelude::*, scan_args::scan_args, typed_data::Obj, Error, RArray, RClass,
    Ruby, Symbol, TypedData, Value,
};

use crate::helpers::errors;
use crate::helpers::{args, value_object as vo};
use crate::ruby_api::network_policy::Declared;

/// A frozen capability report holding the core's value.
#[magnus::wrap(class = "LittleGhost::Sandbox::Capabilities", free_immediately, size)]
pub struct Capabilities(core::Capabilities);

impl Capabilities {
    /// The core report.
    pub(crate) fn core(&self) -> &core::Capabilities {
        &self.0
    }
}

/// The Capabilities `value` wraps, if it is one.
pub(crate) fn borrow(value: Value) -> Option<&'static Capabilities> {
    <&Capabilities>::try_convert(value).ok()
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Capabilities", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.const_set(
        "DEFAULT_FEATURES",
        vo::frozen_symbols(ruby, &core::DEFAULT_FEATURES),
    )?;
    class.define_singleton_method("new", method!(new, -1))?;
    class.define_singleton_method("normalize", function!(normalize, 1))?;
    class.define_method("supports?", method!(supports, -1))?;
    class.define_method("include?", method!(supports, -1))?;
    class.define_method("intersect", method!(intersect, 1))?;
    vo::define_value_methods!(class, Capabilities, true, [0, 1, 2])
}

impl vo::ValueObject for Capabilities {
    type Core = core::Capabilities;

    // features: the supported features; network_modes: the network modes the
    // backend can enforce (frozen Arrays of Symbols); isolation: a descriptive
    // Symbol naming the isolation mechanism (:none, :namespace, ...).
    const FIELDS: &'static [(&'static str, vo::Reader<Self>)] = &[
        ("features", |ruby, c| {
            Ok(vo::frozen_symbols(ruby, &c.0.features).as_value())
        }),
        ("network_modes", |ruby, c| {
            Ok(vo::frozen_symbols(ruby, &c.0.network_mode_names()).as_value())
        }),
        ("isolation", |ruby, c| {
            Ok(ruby.to_symbol(&c.0.isolation).as_value())
        }),
    ];

    fn core(&self) -> &core::Capabilities {
        &self.0
    }
}

/// A frozen Capabilities built from Rust names (for backends and probes).
pub fn build(
    ruby: &Ruby,
    features: &[&str],
    network_modes: &[&str],
    isolation: &str,
) -> Result<Value, Error> {
    let core = core::Capabilities::named(features, network_modes, isolation);
    Ok(wrap(ruby, errors::core_result(ruby, core)?))
}

/// A frozen Capabilities holding `core` (for backends and scopes that computed it).
pub(crate) fn wrap(ruby: &Ruby, core: core::Capabilities) -> Value {
    vo::frozen_obj(ruby, Capabilities(core), Capabilities::class(ruby)).as_value()
}

/// Capabilities with no features and no network modes (10.4, 12.3).
pub fn empty(ruby: &Ruby) -> Result<Value, Error> {
    Ok(wrap(ruby, core::Capabilities::empty()))
}

/// Capabilities.normalize(feature): the canonical feature Symbol, resolving aliases such as `:read`.
fn normalize(ruby: &Ruby, feature: Value) -> Result<Symbol, Error> {
    let name = errors::core_result(ruby, core::normalize_feature(&vo::given(feature)?))?;
    Ok(ruby.to_symbol(name))
}

/// Capabilities.new(features: DEFAULT_FEATURES, network_modes: [:inherit], isolation: :none): a frozen capability report.
fn new(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Obj<Capabilities>, Error> {
    let keywords = Declared(ruby, args::keywords_only(args)?.as_value());
    let core = core::Capabilities::declared(&keywords)?;
    Ok(vo::frozen_obj(ruby, Capabilities(core), class))
}

/// supports?(feature, value = nil): whether the feature (or network mode) is available; aliases are honoured.
pub(crate) fn supports(ruby: &Ruby, rb_self: &Capabilities, args: &[Value]) -> Result<bool, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (feature,) = args.required;
    let (value,) = args.optional;
    rb_self
        .0
        .supports_declared(&Declared(ruby, feature), value.map(|v| Declared(ruby, v)))
}

/// The names of the Symbols in `list` (other items never match a Symbol).
fn symbol_names(list: Value) -> Result<Vec<String>, Error> {
    RArray::try_convert(list)?
        .into_iter()
        .filter_map(Symbol::from_value)
        .map(vo::sym_name)
        .collect()
}

/// intersect(other): the features and network modes both support, keeping the receiver's order and isolation.
fn intersect(
    ruby: &Ruby,
    rb_self: Obj<Capabilities>,
    other: Value,
) -> Result<Obj<Capabilities>, Error> {
    let core = match borrow(other) {
        Some(theirs) => rb_self.0.intersect_with(&theirs.0),
        None => {
            vo::require_duck(
                other,
                "capabilities to intersect",
                &["features", "network_modes"],
            )?;
            let features = symbol_names(other.funcall("features", ())?)?;
            let modes = symbol_names(other.funcall("network_modes", ())?)?;
            rb_self.0.intersect(&features, &modes)
        }
    };
    Ok(vo::frozen_obj(ruby, Capabilities(core), rb_self.class()))
}
