//! `LittleGhost::Sandbox::NetworkPolicy` (SPEC §7): inherit the host network,
//! no network, or an allowlist enforced by a gateway. The rules are the
//! core's `policy::NetworkPolicy`; this file converts and holds the two
//! Ruby objects the core cannot (gateway, authorizer).

use std::path::PathBuf;

use littleghost_sandbox_core::policy::network_declaration::{self, GatewayValue};
use littleghost_sandbox_core::policy::network_requests as requests;
use littleghost_sandbox_core::policy::network_rules::REDACTED;
use littleghost_sandbox_core::policy::{self as core, AllowEntry, Given, NetworkMode as Mode};
use littleghost_sandbox_core::Error as CoreError;
use magnus::{
    gc::Marker, method, prelude::*, scan_args::scan_args, typed_data::Obj, value::Opaque,
    DataTypeFunctions, Error, IntoValue, RArray, RClass, RHash, RString, Ruby, Symbol, TypedData,
    Value,
};

use crate::helpers::errors;
use crate::helpers::{args, convert, value_object as vo};

/// A frozen network rule: the core's validated policy plus the gateway and authorizer objects.
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandbox::NetworkPolicy",
    free_immediately,
    size,
    mark
)]
pub struct NetworkPolicy {
    core: core::NetworkPolicy,
    gateway: Opaque<Value>,
    authorizer: Opaque<Value>,
}

impl DataTypeFunctions for NetworkPolicy {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.gateway);
        marker.mark(self.authorizer);
    }
}

impl NetworkPolicy {
    /// The core rule, for backends that enforce it.
    pub(crate) fn core(&self) -> &core::NetworkPolicy {
        &self.core
    }

    /// The authorizer object, or nil.
    pub(crate) fn authorizer_value(&self, ruby: &Ruby) -> Value {
        ruby.get_inner(self.authorizer)
    }

    /// The gateway object, or nil for the built-in one.
    pub(crate) fn gateway_value(&self, ruby: &Ruby) -> Value {
        ruby.get_inner(self.gateway)
    }
}

/// The NetworkPolicy `value` wraps, if it is one.
pub(crate) fn borrow(value: Value) -> Option<&'static NetworkPolicy> {
    <&NetworkPolicy>::try_convert(value).ok()
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("NetworkPolicy", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_singleton_method("new", method!(new, -1))?;
    class.define_singleton_method("coerce", method!(coerce, 1))?;
    class.define_method("mode", method!(mode, 0))?;
    class.define_method("allow", method!(allow, 0))?;
    class.define_method("secrets", method!(secrets, 0))?;
    class.define_method("upstream_ca", method!(upstream_ca, 0))?;
    class.define_method("resolve", method!(resolve, 0))?;
    class.define_method("inspection", method!(inspection, 0))?;
    class.define_method("gateway", method!(gateway, 0))?;
    class.define_method("authorizer", method!(authorizer, 0))?;
    class.define_method("forward_headers", method!(forward_headers, 0))?;
    class.define_method("mutation_headers", method!(mutation_headers, 0))?;
    // inherit?: true when processes use the host network.
    class.define_method(
        "inherit?",
        method!(|n: &NetworkPolicy| n.core.mode == Mode::Inherit, 0),
    )?;
    // none?: true when processes get no network.
    class.define_method(
        "none?",
        method!(|n: &NetworkPolicy| n.core.mode == Mode::None, 0),
    )?;
    // allowlist?: true when only the allowed destinations are reachable.
    class.define_method(
        "allowlist?",
        method!(|n: &NetworkPolicy| n.core.mode == Mode::Allowlist, 0),
    )?;
    vo::define_value_methods!(class, NetworkPolicy, false)
}

impl vo::ValueObject for NetworkPolicy {
    type Core = core::NetworkPolicy;

    const FIELDS: &'static [(&'static str, vo::Reader<Self>)] = &[
        ("mode", |ruby, n| Ok(mode(ruby, n))),
        ("allow", |ruby, n| Ok(allow(ruby, n)?.as_value())),
        ("secrets", |ruby, n| Ok(secrets(ruby, n)?.as_value())),
        ("upstream_ca", |ruby, n| {
            Ok(upstream_ca(ruby, n).into_value_with(ruby))
        }),
        ("resolve", |ruby, n| Ok(resolve(ruby, n))),
        ("inspection", |ruby, n| Ok(inspection(ruby, n))),
        ("gateway", |ruby, n| Ok(gateway(ruby, n))),
        ("authorizer", |ruby, n| Ok(authorizer(ruby, n))),
        ("forward_headers", |ruby, n| Ok(forward_headers(ruby, n))),
        ("mutation_headers", |ruby, n| Ok(mutation_headers(ruby, n))),
    ];

    fn core(&self) -> &core::NetworkPolicy {
        &self.core
    }

    /// The gateway and authorizer objects.
    fn held(&self, ruby: &Ruby) -> Vec<Value> {
        vec![self.gateway_value(ruby), authorizer(ruby, self)]
    }
}

/// NetworkPolicy.coerce(value): nil, an instance, a mode Symbol/String, or a Hash of `new`'s keywords.
pub fn coerce(ruby: &Ruby, class: RClass, value: Value) -> Result<Value, Error> {
    if value.is_nil() || value.is_kind_of(class) {
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
    Ok(build(ruby, class, kwargs)?.as_value())
}

/// NetworkPolicy.new(mode:, allow: [], secrets: {}, upstream_ca: nil, resolve: {}, inspection: :connect, gateway: nil, authorizer: nil, forward_headers: [], mutation_headers: []): a frozen network rule.
fn new(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Obj<NetworkPolicy>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    build(ruby, class, args.keywords)
}

fn build(ruby: &Ruby, class: RClass, keywords: RHash) -> Result<Obj<NetworkPolicy>, Error> {
    let declared = network_declaration::declared(&Declared(ruby, keywords.as_value()))?;
    let nil = ruby.qnil().as_value();
    let gateway = match declared.gateway {
        GatewayValue::Declared(gateway) => gateway.map_or(nil, |gateway| gateway.1),
        // The built-in gateway's options: its Hash, or `{provider: name}`.
        GatewayValue::WithPrivateDestinations { options, allow } => {
            let hash = match options {
                Some(Declared(_, hash)) if vo::is_hash(ruby, hash) => {
                    vo::symbolize_keys(ruby, hash)?
                }
                Some(Declared(_, name)) => args::kwargs(ruby, &[("provider", name)])?,
                None => ruby.hash_new(),
            };
            hash.aset(
                ruby.to_symbol(network_declaration::PRIVATE_DESTINATIONS),
                allow.1,
            )?;
            hash.as_value()
        }
    };
    let authorizer = declared.authorizer.map_or(nil, |authorizer| authorizer.1);
    Ok(wrap_as(ruby, class, declared.policy, gateway, authorizer))
}

/// A Ruby value of a `network:` declaration, read with Ruby's conversions
/// (`Array()`, `String()`, `to_sym` keys): the core decides the shapes.
#[derive(Clone)]
pub(crate) struct Declared<'r>(pub &'r Ruby, pub Value);

impl Declared<'_> {
    /// `value` unless it is nil.
    pub(crate) fn given<'r>(ruby: &'r Ruby, value: Option<Value>) -> Option<Declared<'r>> {
        value.filter(|v| !v.is_nil()).map(|v| Declared(ruby, v))
    }

    fn hash(&self) -> Option<RHash> {
        RHash::from_value(self.1).filter(|_| vo::is_hash(self.0, self.1))
    }
}

impl requests::Declared for Declared<'_> {
    type Error = Error;

    fn misshapen(&self, error: impl Into<CoreError>) -> Error {
        errors::from_core(self.0, error.into())
    }

    fn items(&self) -> Result<Vec<Self>, Error> {
        let items = vo::array_items(self.0, Some(self.1))?;
        Ok(items.into_iter().map(|v| Declared(self.0, v)).collect())
    }

    fn text(&self) -> Result<String, Error> {
        vo::string_of(self.0, self.1)
    }

    fn string(&self) -> Option<String> {
        RString::from_value(self.1).and_then(|s| s.to_string().ok())
    }

    fn flag(&self) -> Option<bool> {
        let ruby = self.0;
        (self.1.is_kind_of(ruby.class_true_class()) || self.1.is_kind_of(ruby.class_false_class()))
            .then(|| self.1.to_bool())
    }

    fn shown(&self) -> Result<String, Error> {
        vo::inspect_value(self.0, self.1)
    }

    fn is_nothing(&self) -> bool {
        self.1.is_nil()
    }

    fn truthy(&self) -> bool {
        self.1.to_bool()
    }

    fn keyword(&self) -> Option<String> {
        Symbol::from_value(self.1).and_then(|symbol| vo::sym_name(symbol).ok())
    }

    fn given(&self) -> Result<Given<'static>, Error> {
        vo::given(self.1)
    }

    fn expanded_path(&self, what: &str) -> Result<PathBuf, Error> {
        let path = convert::expanded_path(self.0, Some(self.1), what)?;
        Ok(path.expect("a value that is not nil"))
    }

    fn list(&self) -> Option<Vec<Self>> {
        let items = RArray::from_value(self.1)?.into_iter();
        Some(items.map(|item| Declared(self.0, item)).collect())
    }

    fn pairs(&self) -> Result<Option<Vec<(Self, Self)>>, Error> {
        let Some(hash) = self.hash() else {
            return Ok(None);
        };
        let pairs = vo::hash_pairs(hash)?.into_iter();
        Ok(Some(
            pairs
                .map(|(k, v)| (Declared(self.0, k), Declared(self.0, v)))
                .collect(),
        ))
    }

    /// The pairs with their keys through `to_sym`, each named by its Symbol's name (else its `inspect`).
    fn named_pairs(&self) -> Result<Option<Vec<(String, Self)>>, Error> {
        if self.hash().is_none() {
            return Ok(None);
        }
        let mut pairs = Vec::new();
        for (key, value) in vo::hash_pairs(vo::symbolize_keys(self.0, self.1)?)? {
            let name = match Symbol::from_value(key) {
                Some(symbol) => vo::sym_name(symbol)?,
                None => vo::inspect_value(self.0, key)?,
            };
            pairs.push((name, Declared(self.0, value)));
        }
        Ok(Some(pairs))
    }
}

/// An allow entry as Ruby reads it: a plain entry is its String, a rule a
/// frozen `{destination:, inspect:, methods:, paths:}` Hash.
pub(crate) fn entry_to_ruby(ruby: &Ruby, entry: &AllowEntry) -> Result<Value, Error> {
    if entry.is_plain() {
        return Ok(vo::frozen_str(ruby, &entry.destination).as_value());
    }
    let hash = ruby.hash_new();
    hash.aset(
        ruby.to_symbol("destination"),
        vo::frozen_str(ruby, &entry.destination),
    )?;
    hash.aset(ruby.to_symbol("inspect"), entry.inspect)?;
    hash.aset(
        ruby.to_symbol("methods"),
        vo::frozen_strings(ruby, &entry.methods),
    )?;
    hash.aset(
        ruby.to_symbol("paths"),
        vo::frozen_strings(ruby, &entry.paths),
    )?;
    hash.freeze();
    Ok(hash.as_value())
}

/// Allow entries as Ruby reads them, a frozen Array.
pub(crate) fn entries_to_ruby(ruby: &Ruby, entries: &[AllowEntry]) -> Result<RArray, Error> {
    let array = ruby.ary_new_capa(entries.len());
    for entry in entries {
        array.push(entry_to_ruby(ruby, entry)?)?;
    }
    array.freeze();
    Ok(array)
}

/// The secrets of `rules` as Ruby reads them: a frozen Hash of Symbol name
/// => frozen `{value: "[REDACTED]", destinations: [...]}`.
pub(crate) fn secrets_to_ruby(ruby: &Ruby, rules: &core::NetworkRules) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for secret in &rules.secrets {
        let shown = ruby.hash_new();
        shown.aset(ruby.to_symbol("value"), vo::frozen_str(ruby, REDACTED))?;
        shown.aset(
            ruby.to_symbol("destinations"),
            vo::frozen_strings(ruby, &secret.destinations),
        )?;
        shown.freeze();
        hash.aset(ruby.to_symbol(&secret.name), shown)?;
    }
    hash.freeze();
    Ok(hash)
}

fn wrap_as(
    ruby: &Ruby,
    class: RClass,
    core: core::NetworkPolicy,
    gateway: Value,
    authorizer: Value,
) -> Obj<NetworkPolicy> {
    let policy = NetworkPolicy {
        core,
        gateway: gateway.into(),
        authorizer: authorizer.into(),
    };
    vo::frozen_obj(ruby, policy, class)
}

/// A frozen NetworkPolicy holding `core` (a scope's narrowing of `parent`)
/// with `parent`'s gateway and authorizer objects.
pub(crate) fn wrap_like(ruby: &Ruby, core: core::NetworkPolicy, parent: &NetworkPolicy) -> Value {
    let gateway = parent.gateway_value(ruby);
    let authorizer = ruby.get_inner(parent.authorizer);
    wrap_as(ruby, NetworkPolicy::class(ruby), core, gateway, authorizer).as_value()
}

/// A frozen NetworkPolicy holding `core`, which must name no gateway or
/// authorizer (only the binding holds those objects): ArgumentError otherwise.
pub(crate) fn wrap(ruby: &Ruby, core: core::NetworkPolicy) -> Result<Value, Error> {
    if core.gateway || core.authorizer {
        return Err(errors::argument_error(
            ruby,
            "a network policy with a gateway or authorizer needs its Ruby objects",
        ));
    }
    let nil = ruby.qnil().as_value();
    Ok(wrap_as(ruby, NetworkPolicy::class(ruby), core, nil, nil).as_value())
}

/// mode: `:inherit`, `:none` or `:allowlist`.
fn mode(ruby: &Ruby, rb_self: &NetworkPolicy) -> Value {
    ruby.to_symbol(rb_self.core.mode.name()).as_value()
}

/// allow: the allowed destinations, a frozen Array: a down-cased String per
/// plain entry, a frozen `{destination:, inspect:, methods:, paths:}` Hash
/// per entry with HTTP rules or inspection.
fn allow(ruby: &Ruby, rb_self: &NetworkPolicy) -> Result<RArray, Error> {
    entries_to_ruby(ruby, &rb_self.core.rules.allow)
}

/// secrets: a frozen Hash of Symbol name => `{value: "[REDACTED]", destinations: [...]}` (never the value).
fn secrets(ruby: &Ruby, rb_self: &NetworkPolicy) -> Result<RHash, Error> {
    secrets_to_ruby(ruby, &rb_self.core.rules)
}

/// upstream_ca: the expanded path of the PEM file of extra upstream roots, or nil.
fn upstream_ca(ruby: &Ruby, rb_self: &NetworkPolicy) -> Option<RString> {
    let path = rb_self.core.rules.upstream_ca.as_ref()?;
    Some(convert::path_to_ruby(ruby, path))
}

/// resolve: the names the gateway resolves itself, a frozen Hash of name => address (Strings).
fn resolve(ruby: &Ruby, rb_self: &NetworkPolicy) -> Value {
    let hash = ruby.hash_new();
    for (name, address) in &rb_self.core.rules.resolve {
        let _ = hash.aset(
            vo::frozen_str(ruby, name),
            vo::frozen_str(ruby, &address.to_string()),
        );
    }
    hash.freeze();
    hash.as_value()
}

/// inspection: `:connect` (tunnel by host:port) or `:http` (inspect each request).
fn inspection(ruby: &Ruby, rb_self: &NetworkPolicy) -> Value {
    ruby.to_symbol(rb_self.core.inspection.name()).as_value()
}

/// gateway: the gateway that enforces an allowlist, or nil for the built-in one.
fn gateway(ruby: &Ruby, rb_self: &NetworkPolicy) -> Value {
    rb_self.gateway_value(ruby)
}

/// authorizer: the callable that authorises inspected HTTP requests, or nil.
fn authorizer(ruby: &Ruby, rb_self: &NetworkPolicy) -> Value {
    ruby.get_inner(rb_self.authorizer)
}

/// forward_headers: request headers forwarded to the authorizer, a frozen Array of Strings.
fn forward_headers(ruby: &Ruby, rb_self: &NetworkPolicy) -> Value {
    vo::frozen_strings(ruby, &rb_self.core.forward_headers).as_value()
}

/// mutation_headers: headers the authorizer may set, a frozen Array of Strings.
fn mutation_headers(ruby: &Ruby, rb_self: &NetworkPolicy) -> Value {
    vo::frozen_strings(ruby, &rb_self.core.mutation_headers).as_value()
}
