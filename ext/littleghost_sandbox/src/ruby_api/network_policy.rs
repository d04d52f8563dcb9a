//! `LittleGhost::Sandbox::NetworkPolicy` (SPEC §7): inherit the host network,
//! no network, or an allowlist enforced by a gateway.

use magnus::{
    function, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, RArray,
    RClass, RHash, RObject, RString, Ruby, Symbol, Value,
};

use crate::helpers::constants;
use crate::helpers::value_object::{self as vo, ivar_reader, value_methods};
use crate::ruby_api::errors;

const MODES: [&str; 3] = ["inherit", "none", "allowlist"];
const INSPECTIONS: [&str; 2] = ["connect", "http"];

const IVARS: &[&str] = &[
    "@mode",
    "@allow",
    "@inspection",
    "@gateway",
    "@authorizer",
    "@forward_headers",
    "@mutation_headers",
];
const FIELDS: &[(&str, &str)] = &[
    ("mode", "@mode"),
    ("allow", "@allow"),
    ("inspection", "@inspection"),
    ("gateway", "@gateway"),
    ("authorizer", "@authorizer"),
    ("forward_headers", "@forward_headers"),
    ("mutation_headers", "@mutation_headers"),
];

value_methods!(IVARS, FIELDS);

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("NetworkPolicy", ruby.class_object())?;
    class.define_singleton_method("coerce", function!(coerce, 1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("mode", method!(mode, 0))?;
    class.define_method("allow", method!(allow, 0))?;
    class.define_method("inspection", method!(inspection, 0))?;
    class.define_method("gateway", method!(gateway, 0))?;
    class.define_method("authorizer", method!(authorizer, 0))?;
    class.define_method("forward_headers", method!(forward_headers, 0))?;
    class.define_method("mutation_headers", method!(mutation_headers, 0))?;
    class.define_method("inherit?", method!(is_inherit, 0))?;
    class.define_method("none?", method!(is_none, 0))?;
    class.define_method("allowlist?", method!(is_allowlist, 0))?;
    define_value_methods(class)?;
    Ok(())
}

/// NetworkPolicy.coerce(value): nil, an instance, a mode Symbol/String, or a Hash of `new`'s keywords.
fn coerce(ruby: &Ruby, value: Value) -> Result<Value, Error> {
    if value.is_nil() {
        return Ok(value);
    }
    let class = constants::class(ruby, "LittleGhost::Sandbox::NetworkPolicy")?;
    if value.is_kind_of(class) {
        return Ok(value);
    }
    let kwargs = if value.is_kind_of(ruby.class_symbol()) || value.is_kind_of(ruby.class_string()) {
        let kwargs = ruby.hash_new();
        kwargs.aset(ruby.to_symbol("mode"), value)?;
        kwargs
    } else if vo::is_hash(ruby, value) {
        vo::symbolize_keys(ruby, value)?
    } else {
        return Err(errors::policy_error(
            ruby,
            "network policy must be a mode, Hash, or Sandbox::NetworkPolicy",
        ));
    };
    class.funcall("new", (magnus::KwArgs(kwargs),))
}

/// The Symbol name of a name-ish value if it is one of `allowed`.
fn one_of(value: Value, allowed: &[&str]) -> Result<Option<Symbol>, Error> {
    let Some(symbol) = vo::try_to_sym(value)? else {
        return Ok(None);
    };
    Ok(allowed
        .contains(&vo::sym_name(symbol)?.as_str())
        .then_some(symbol))
}

fn array_of(ruby: &Ruby, value: Option<Value>) -> Result<RArray, Error> {
    match value {
        Some(value) => RArray::try_convert(vo::kernel(ruby, "Array", value)?),
        None => Ok(ruby.ary_new()),
    }
}

/// `String(entry).strip.downcase`, de-duplicated; rejects empty entries and whitespace.
fn allow_entries(ruby: &Ruby, list: RArray) -> Result<RArray, Error> {
    let out: Vec<String> = {
        let mut out = Vec::new();
        for entry in list.into_iter() {
            let text: RString = vo::kernel(ruby, "String", entry)?.funcall("strip", ())?;
            let text: RString = text.funcall("downcase", ())?;
            let text = text.to_string()?;
            if text.is_empty() {
                return Err(errors::policy_error(
                    ruby,
                    "network allowlist entries cannot be empty",
                ));
            }
            if text.chars().any(char::is_whitespace) {
                return Err(errors::policy_error(
                    ruby,
                    format!("network allowlist entry {text:?} cannot contain whitespace"),
                ));
            }
            if !out.contains(&text) {
                out.push(text);
            }
        }
        out
    };
    let array = ruby.ary_from_iter(out.iter().map(|s| vo::frozen_str(ruby, s)));
    array.freeze();
    Ok(array)
}

/// Down-cased header names matching `/\A[a-z0-9][a-z0-9-]*\z/`, de-duplicated.
fn header_names(ruby: &Ruby, label: &str, list: RArray) -> Result<RArray, Error> {
    let mut out: Vec<String> = Vec::new();
    for entry in list.into_iter() {
        let text: RString = vo::kernel(ruby, "String", entry)?.funcall("downcase", ())?;
        let text = text.to_string()?;
        let valid = text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid {
            return Err(errors::policy_error(
                ruby,
                format!("network {label} entry {text:?} is not a valid header name (letters, digits and '-')"),
            ));
        }
        if !out.contains(&text) {
            out.push(text);
        }
    }
    let array = ruby.ary_from_iter(out.iter().map(|s| vo::frozen_str(ruby, s)));
    array.freeze();
    Ok(array)
}

/// NetworkPolicy.new(mode:, allow: [], inspection: :connect, gateway: nil, authorizer: nil, forward_headers: [], mutation_headers: []): a frozen network rule.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    type Optional = (
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
    );
    let kwargs = get_kwargs::<_, (Value,), Optional, ()>(
        args.keywords,
        &["mode"],
        &[
            "allow",
            "inspection",
            "gateway",
            "authorizer",
            "forward_headers",
            "mutation_headers",
        ],
    )?;
    let (mode_value,) = kwargs.required;
    let (allow, inspection, gateway, authorizer, forward_headers, mutation_headers) =
        kwargs.optional;
    let nil = ruby.qnil().as_value();
    let gateway = gateway.unwrap_or(nil);
    let authorizer = authorizer.unwrap_or(nil);
    let allow = array_of(ruby, allow)?;
    let forward_headers = array_of(ruby, forward_headers)?;
    let mutation_headers = array_of(ruby, mutation_headers)?;

    let mode = one_of(mode_value, &MODES)?.ok_or_else(|| {
        errors::policy_error(
            ruby,
            format!(
                "network mode must be :inherit, :none or :allowlist, got {}",
                vo::inspect_value(ruby, mode_value).unwrap_or_default()
            ),
        )
    })?;
    let inspection = match inspection {
        None => ruby.to_symbol("connect"),
        Some(value) => one_of(value, &INSPECTIONS)?.ok_or_else(|| {
            errors::policy_error(
                ruby,
                format!(
                    "network inspection must be :connect or :http, got {}",
                    vo::inspect_value(ruby, value).unwrap_or_default()
                ),
            )
        })?,
    };
    let mode_name = vo::sym_name(mode)?;
    let allowlist = mode_name == "allowlist";
    let http = vo::sym_name(inspection)? == "http";
    if !allowlist
        && (!allow.is_empty()
            || !gateway.is_nil()
            || !authorizer.is_nil()
            || !forward_headers.is_empty()
            || !mutation_headers.is_empty())
    {
        return Err(errors::policy_error(
            ruby,
            format!(
                "network mode :{mode_name} does not take allow, gateway, authorizer or headers; use mode: :allowlist"
            ),
        ));
    }
    if http && !allowlist {
        return Err(errors::policy_error(
            ruby,
            "network inspection :http requires mode: :allowlist",
        ));
    }
    if http && authorizer.is_nil() {
        return Err(errors::policy_error(
            ruby,
            "network inspection :http requires an authorizer",
        ));
    }
    if allowlist && allow.is_empty() {
        return Err(errors::policy_error(
            ruby,
            "network mode :allowlist requires a non-empty allow list (\"host:port\" entries)",
        ));
    }
    rb_self.ivar_set("@mode", mode)?;
    rb_self.ivar_set("@allow", allow_entries(ruby, allow)?)?;
    rb_self.ivar_set("@inspection", inspection)?;
    rb_self.ivar_set("@gateway", gateway)?;
    rb_self.ivar_set("@authorizer", authorizer)?;
    rb_self.ivar_set(
        "@forward_headers",
        header_names(ruby, "forward_headers", forward_headers)?,
    )?;
    rb_self.ivar_set(
        "@mutation_headers",
        header_names(ruby, "mutation_headers", mutation_headers)?,
    )?;
    rb_self.freeze();
    Ok(())
}

ivar_reader!(mode, "@mode", "`:inherit`, `:none` or `:allowlist`.");
ivar_reader!(
    allow,
    "@allow",
    "The allowed destinations: a frozen Array of down-cased Strings."
);
ivar_reader!(
    inspection,
    "@inspection",
    "`:connect` (tunnel by host:port) or `:http` (inspect each request)."
);
ivar_reader!(
    gateway,
    "@gateway",
    "The gateway that enforces an allowlist, or nil for the built-in one."
);
ivar_reader!(
    authorizer,
    "@authorizer",
    "The callable that authorises inspected HTTP requests, or nil."
);
ivar_reader!(
    forward_headers,
    "@forward_headers",
    "Request headers forwarded to the authorizer: a frozen Array of Strings."
);
ivar_reader!(
    mutation_headers,
    "@mutation_headers",
    "Headers the authorizer may set: a frozen Array of Strings."
);

fn mode_is(ruby: &Ruby, rb_self: RObject, name: &str) -> Result<bool, Error> {
    let mode: Value = rb_self.ivar_get("@mode")?;
    Ok(Symbol::from_value(mode) == Some(ruby.to_symbol(name)))
}

/// inherit?: true when processes use the host network.
fn is_inherit(ruby: &Ruby, rb_self: RObject) -> Result<bool, Error> {
    mode_is(ruby, rb_self, "inherit")
}

/// none?: true when processes get no network.
fn is_none(ruby: &Ruby, rb_self: RObject) -> Result<bool, Error> {
    mode_is(ruby, rb_self, "none")
}

/// allowlist?: true when only the allowed destinations are reachable.
fn is_allowlist(ruby: &Ruby, rb_self: RObject) -> Result<bool, Error> {
    mode_is(ruby, rb_self, "allowlist")
}
