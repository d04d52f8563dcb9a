//! `LittleGhost::Sandbox::EnvironmentPolicy` (SPEC §6): the variables a
//! process gets, and whether it inherits the parent's environment.

use magnus::{
    function, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, RClass,
    RHash, RObject, RString, Ruby, Value,
};

use crate::helpers::constants;
use crate::helpers::value_object::{self as vo, ivar_reader, value_methods};
use crate::ruby_api::errors;

const IVARS: &[&str] = &["@inherit", "@values"];
const FIELDS: &[(&str, &str)] = &[("inherit", "@inherit"), ("values", "@values")];

value_methods!(IVARS, FIELDS);

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("EnvironmentPolicy", ruby.class_object())?;
    class.define_singleton_method("coerce", function!(coerce, 1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("values", method!(values, 0))?;
    class.define_method("to_h", method!(values, 0))?;
    class.define_method("inherit?", method!(inherit, 0))?;
    define_value_methods(class)?;
    Ok(())
}

/// EnvironmentPolicy.coerce(value): an instance as is; `{set:, inherit:}` or a plain Hash of variables otherwise.
fn coerce(ruby: &Ruby, value: Value) -> Result<Value, Error> {
    let class = constants::class(ruby, "LittleGhost::Sandbox::EnvironmentPolicy")?;
    if value.is_kind_of(class) {
        return Ok(value);
    }
    let Some(hash) = RHash::from_value(value).filter(|_| vo::is_hash(ruby, value)) else {
        return Err(errors::policy_error(
            ruby,
            "sandbox environment must be a Hash",
        ));
    };
    let key = |name: &str| -> [Value; 2] {
        [
            ruby.to_symbol(name).as_value(),
            ruby.str_new(name).as_value(),
        ]
    };
    let has_key = |name: &str| -> Result<bool, Error> {
        for candidate in key(name) {
            let found: bool = hash.funcall("key?", (candidate,))?;
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    };
    // `h[:set] || h["set"]`: the first truthy of the two spellings.
    let first_truthy = |name: &str| -> Result<Option<Value>, Error> {
        for candidate in key(name) {
            let item: Value = hash.aref(candidate)?;
            if item.to_bool() {
                return Ok(Some(item));
            }
        }
        Ok(None)
    };
    let kwargs = ruby.hash_new();
    if has_key("set")? || has_key("inherit")? {
        let values = first_truthy("set")?.unwrap_or_else(|| ruby.hash_new().as_value());
        // `h[:inherit]` when the key is present (even if false), else `h["inherit"]`.
        let inherit: Value = if hash.funcall::<_, _, bool>("key?", (ruby.to_symbol("inherit"),))? {
            hash.aref(ruby.to_symbol("inherit"))?
        } else {
            hash.aref(ruby.str_new("inherit"))?
        };
        kwargs.aset(ruby.to_symbol("values"), values)?;
        kwargs.aset(ruby.to_symbol("inherit"), inherit.to_bool())?;
    } else {
        kwargs.aset(ruby.to_symbol("values"), hash)?;
        kwargs.aset(ruby.to_symbol("inherit"), false)?;
    }
    class.funcall("new", (magnus::KwArgs(kwargs),))
}

/// EnvironmentPolicy.new(inherit: false, values: {}): a frozen set of String variables.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<_, (), (Option<Value>, Option<Value>), ()>(
        args.keywords,
        &[],
        &["inherit", "values"],
    )?;
    let (inherit, values) = kwargs.optional;
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
    table.freeze();
    rb_self.ivar_set("@inherit", inherit.map(|v| v.to_bool()).unwrap_or(false))?;
    rb_self.ivar_set("@values", table)?;
    rb_self.freeze();
    Ok(())
}

ivar_reader!(
    values,
    "@values",
    "The variables to set: a frozen Hash of frozen Strings."
);
ivar_reader!(
    inherit,
    "@inherit",
    "Whether processes start from the parent's environment."
);
