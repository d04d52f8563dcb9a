//! `LittleGhost::Sandbox::EnvironmentPolicy` (SPEC §6): the variables a
//! process gets, and whether it inherits the parent's environment. The value
//! is the core's `policy::EnvironmentPolicy`; the frozen Hash Ruby reads is
//! built once from the caller's Strings (their encodings kept).

use littleghost_sandbox_core::policy as core;
use magnus::{
    gc::Marker, method, prelude::*, scan_args::scan_args, typed_data::Obj, value::Opaque,
    DataTypeFunctions, Error, RClass, RHash, RString, Ruby, TypedData, Value,
};

use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::helpers::{args, convert};
use crate::ruby_api::network_policy::Declared;

/// A frozen environment policy: the core value and its frozen Ruby Hash.
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandbox::EnvironmentPolicy",
    free_immediately,
    size,
    mark
)]
pub struct EnvironmentPolicy {
    core: core::EnvironmentPolicy,
    values: Opaque<RHash>,
}

impl DataTypeFunctions for EnvironmentPolicy {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.values);
    }
}

impl EnvironmentPolicy {
    /// The core value.
    pub(crate) fn core(&self) -> &core::EnvironmentPolicy {
        &self.core
    }

    /// The frozen String => String Hash `values` answers.
    pub(crate) fn values_hash(&self, ruby: &Ruby) -> RHash {
        ruby.get_inner(self.values)
    }
}

/// The EnvironmentPolicy `value` wraps, if it is one.
pub(crate) fn borrow(value: Value) -> Option<&'static EnvironmentPolicy> {
    <&EnvironmentPolicy>::try_convert(value).ok()
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("EnvironmentPolicy", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_singleton_method("new", method!(new, -1))?;
    class.define_singleton_method("coerce", method!(coerce, 1))?;
    class.define_method("inherit?", method!(vo::field::<EnvironmentPolicy, 0>, 0))?;
    class.define_method("values", method!(vo::field::<EnvironmentPolicy, 1>, 0))?;
    class.define_alias("to_h", "values")?;
    vo::define_value_methods!(class, EnvironmentPolicy, false)
}

impl vo::ValueObject for EnvironmentPolicy {
    type Core = core::EnvironmentPolicy;

    // inherit?: whether processes start from the parent's environment;
    // values: the variables to set, a frozen Hash of frozen Strings.
    const FIELDS: &'static [(&'static str, vo::Reader<Self>)] = &[
        ("inherit", |ruby, e| Ok(ruby.into_value(e.core.inherit()))),
        ("values", |ruby, e| Ok(ruby.get_inner(e.values).as_value())),
    ];

    fn core(&self) -> &core::EnvironmentPolicy {
        &self.core
    }
}

/// EnvironmentPolicy.coerce(value): an instance as is; `{set:, inherit:}` or a plain Hash of variables otherwise.
pub fn coerce(ruby: &Ruby, class: RClass, value: Value) -> Result<Value, Error> {
    if value.is_kind_of(class) {
        return Ok(value);
    }
    let Some(declared) = core::EnvironmentDeclaration::read(&Declared(ruby, value))? else {
        return Err(errors::policy_error(
            ruby,
            "sandbox environment must be a Hash",
        ));
    };
    let values = declared.values.map(|values| values.1);
    Ok(build(ruby, class, declared.inherit, values)?.as_value())
}

/// EnvironmentPolicy.new(inherit: false, values: {}): a frozen set of String variables.
fn new(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Obj<EnvironmentPolicy>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let [inherit, values] = args::optional(ruby, args.keywords, ["inherit", "values"])?;
    build(ruby, class, inherit.is_some_and(|v| v.to_bool()), values)
}

fn build(
    ruby: &Ruby,
    class: RClass,
    inherit: bool,
    values: Option<Value>,
) -> Result<Obj<EnvironmentPolicy>, Error> {
    let table = ruby.hash_new();
    if let Some(values) = values {
        if !vo::is_hash(ruby, values) {
            return Err(errors::policy_error(
                ruby,
                "sandbox environment values must be a Hash",
            ));
        }
        for (name, value) in vo::pairs(values)? {
            let name = RString::try_convert(vo::kernel(ruby, "String", name)?)?;
            let value = RString::try_convert(vo::kernel(ruby, "String", value)?)?;
            // Frozen copies, so freezing never touches the caller's Strings.
            table.aset(RString::new_frozen(name), RString::new_frozen(value))?;
        }
    }
    let mut pairs = Vec::with_capacity(table.len());
    for (name, value) in vo::hash_pairs(table)? {
        let bytes = |v: Value| RString::try_convert(v).map(convert::bytes);
        pairs.push((bytes(name)?, bytes(value)?));
    }
    Ok(wrap_as(
        ruby,
        class,
        core::EnvironmentPolicy::new(inherit, pairs),
        table,
    ))
}

fn wrap_as(
    ruby: &Ruby,
    class: RClass,
    core: core::EnvironmentPolicy,
    values: RHash,
) -> Obj<EnvironmentPolicy> {
    values.freeze();
    let policy = EnvironmentPolicy {
        core,
        values: values.into(),
    };
    vo::frozen_obj(ruby, policy, class)
}
