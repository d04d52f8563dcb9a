//! `LittleGhost::Sandbox::Policy` (SPEC §8): the requested file grants, runtime
//! grants, root filesystem mode, environment and network. The rules (access
//! names, root modes, grant ordering) are the core's `policy::Policy`; this
//! file converts and keeps the environment and network objects Ruby reads.

use littleghost_sandbox_core::policy::{self as core, GrantTable};
use magnus::{
    gc::Marker, method, prelude::*, scan_args::scan_args, typed_data::Obj, value::Opaque,
    DataTypeFunctions, Error, RArray, RClass, RHash, Ruby, TypedData, Value,
};

use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::network_policy::Declared;
use crate::ruby_api::{environment_policy, mount, network_policy};

/// A frozen policy: the core value plus the EnvironmentPolicy and NetworkPolicy (or nil) objects.
#[derive(TypedData)]
#[magnus(class = "LittleGhost::Sandbox::Policy", free_immediately, size, mark)]
pub struct Policy {
    core: core::Policy,
    environment: Opaque<Value>,
    network: Opaque<Value>,
}

impl DataTypeFunctions for Policy {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.environment);
        marker.mark(self.network);
    }
}

impl Policy {
    /// The core policy.
    pub(crate) fn core(&self) -> &core::Policy {
        &self.core
    }

    /// Its NetworkPolicy object (nil when none was given).
    pub(crate) fn network_value(&self, ruby: &Ruby) -> Value {
        ruby.get_inner(self.network)
    }
}

/// The Policy `value` wraps, if it is one.
pub(crate) fn borrow(value: Value) -> Option<&'static Policy> {
    <&Policy>::try_convert(value).ok()
}

/// A frozen Policy wrapping `core` (a backend's effective policy, derived
/// from `like`): it keeps `like`'s environment object, and its network
/// object while the rule is unchanged; a changed rule is a plain mode.
pub(crate) fn wrap(ruby: &Ruby, core: core::Policy, like: &Policy) -> Result<Value, Error> {
    let network = match &core.network {
        None => ruby.qnil().as_value(),
        Some(network) if like.core.network.as_ref() == Some(network) => {
            ruby.get_inner(like.network)
        }
        Some(network) => network_policy::wrap(ruby, network.clone())?,
    };
    let environment = ruby.get_inner(like.environment);
    Ok(wrap_as(ruby, Policy::class(ruby), core, environment, network).as_value())
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Policy", ruby.class_object())?;
    class.undef_default_alloc_func();
    let symbols = |names: &[&str]| vo::frozen_symbols(ruby, names);
    class.const_set("COMMON_KEYS", symbols(&core::COMMON_KEYS))?;
    class.const_set("ACCESS_MODES", symbols(&core::ACCESS_MODES))?;
    class.const_set(
        "ROOT_FILESYSTEM_MODES",
        symbols(&core::ROOT_FILESYSTEM_MODES),
    )?;
    class.define_singleton_method("new", method!(new, -1))?;
    class.define_singleton_method("coerce", method!(coerce, -1))?;
    // workspace_writable?: true iff the workspace root is granted `:read_write` to tools.
    let writable = method!(|p: &Policy| p.core.workspace_writable(), 0);
    class.define_method("workspace_writable?", writable)?;
    class.define_method("process_grants", method!(process_grants, 1))?;
    vo::define_value_methods!(class, Policy, true, [0, 1, 2, 3, 4, 5])
}

impl vo::ValueObject for Policy {
    type Core = core::Policy;

    // files and runtime_paths: the tool-visible and the process-only grants,
    // frozen Hashes of workspace path name to access Symbol; root_filesystem:
    // what a process sees outside its grants; environment: the
    // EnvironmentPolicy; network: the NetworkPolicy, or nil for the backend's
    // secure default; protect: the paths kept read-only inside every writable
    // grant, a frozen Array of Strings.
    const FIELDS: &'static [(&'static str, vo::Reader<Self>)] = &[
        ("files", |ruby, p| table_to_ruby(ruby, &p.core.files)),
        ("runtime_paths", |ruby, p| {
            table_to_ruby(ruby, &p.core.runtime_paths)
        }),
        ("root_filesystem", |ruby, p| {
            Ok(ruby.to_symbol(p.core.root_filesystem.name()).as_value())
        }),
        ("environment", |ruby, p| Ok(ruby.get_inner(p.environment))),
        ("network", |ruby, p| Ok(ruby.get_inner(p.network))),
        ("protect", |ruby, p| {
            let entries = p.core.protect.entries().iter();
            let list = ruby.ary_from_iter(entries.map(|e| ruby.str_new(&e.to_string_lossy())));
            list.freeze();
            Ok(list.as_value())
        }),
    ];

    fn core(&self) -> &core::Policy {
        &self.core
    }

    /// The NetworkPolicy object (its gateway and authorizer are compared).
    fn held(&self, ruby: &Ruby) -> Vec<Value> {
        vec![ruby.get_inner(self.network)]
    }
}

/// Policy.coerce(value = nil, **options): a Policy as is, or one built from a Hash with `options` merged over it.
fn coerce(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    let (value,) = args.optional;
    let value = value.unwrap_or_else(|| ruby.qnil().as_value());
    coerce_with(ruby, class, value, args.keywords)
}

/// `Policy.coerce(value, **options)` for Rust callers (Sandbox#initialize), without dispatch.
pub(crate) fn coerce_with(
    ruby: &Ruby,
    class: RClass,
    value: Value,
    options: RHash,
) -> Result<Value, Error> {
    if value.is_kind_of(class) && options.is_empty() {
        return Ok(value);
    }
    let merged = if value.is_nil() {
        ruby.hash_new()
    } else if vo::is_hash(ruby, value) {
        vo::symbolize_keys(ruby, value)?
    } else {
        return Err(errors::policy_error(
            ruby,
            "sandbox policy must be a Hash or Sandbox::Policy (pass options only with a Hash)",
        ));
    };
    for (key, item) in vo::hash_pairs(options)? {
        merged.aset(key, item)?;
    }
    Ok(build(ruby, class, merged)?.as_value())
}

/// Policy.new(files: {root: :read_only}, runtime_paths: {}, root_filesystem: :isolated, environment: {}, network: nil, protect: [".git"]): a frozen policy.
fn new(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Obj<Policy>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    build(ruby, class, args.keywords)
}

fn build(ruby: &Ruby, class: RClass, keywords: RHash) -> Result<Obj<Policy>, Error> {
    // A grant table may be anything with `each_pair` (a Struct, ENV): read
    // as a Hash, which keeps the pairs it yields.
    for name in ["files", "runtime_paths"] {
        let key = ruby.to_symbol(name);
        let table = keywords.get(key).filter(|table| !vo::is_hash(ruby, *table));
        if let Some(table) = table.filter(|table| vo::responds(*table, "each_pair")) {
            keywords.aset(key, ruby.hash_from_iter(vo::pairs(table)?))?;
        }
    }
    let declared = core::Policy::declared(&Declared(ruby, keywords.as_value()))?;
    let environment = declared
        .environment
        .map_or_else(|| ruby.hash_new().as_value(), |e| e.1);
    let environment_class = environment_policy::EnvironmentPolicy::class(ruby);
    let environment = environment_policy::coerce(ruby, environment_class, environment)?;
    // NetworkPolicy.coerce passes nil through.
    let network = declared.network.map_or(ruby.qnil().as_value(), |n| n.1);
    let network =
        network_policy::coerce(ruby, network_policy::NetworkPolicy::class(ruby), network)?;
    let core = core::Policy {
        environment: environment_policy::borrow(environment)
            .map(|e| e.core().clone())
            .unwrap_or_default(),
        network: network_policy::borrow(network).map(|n| n.core().clone()),
        ..declared.policy
    };
    Ok(wrap_as(ruby, class, core, environment, network))
}

fn wrap_as(
    ruby: &Ruby,
    class: RClass,
    core: core::Policy,
    environment: Value,
    network: Value,
) -> Obj<Policy> {
    let policy = Policy {
        core,
        environment: environment.into(),
        network: network.into(),
    };
    vo::frozen_obj(ruby, policy, class)
}

fn table_to_ruby(ruby: &Ruby, table: &GrantTable) -> Result<Value, Error> {
    let hash = ruby.hash_new();
    for (name, access) in table.entries() {
        hash.aset(ruby.to_symbol(name), ruby.to_symbol(access.name()))?;
    }
    hash.freeze();
    Ok(hash.as_value())
}

/// process_grants(workspace): a frozen Array of Mounts for every file and runtime grant, longest target first.
fn process_grants(ruby: &Ruby, rb_self: &Policy, workspace: Value) -> Result<RArray, Error> {
    vo::require_duck(workspace, "workspace", &["root", "path"])?;
    let directory = |name: &str| crate::ruby_api::workspace::directory(ruby, workspace, name);
    let grants = rb_self
        .core
        .process_grants(directory, |error| errors::from_core(ruby, error))?;
    let array = ruby.ary_new_capa(grants.len());
    for grant in &grants {
        array.push(mount::grant_to_ruby(ruby, grant)?)?;
    }
    array.freeze();
    Ok(array)
}
