//! `LittleGhost::Network::Gateway` (SPEC G.2), the base of the gateway
//! protocol (its no-op methods are Ruby, lib/littleghost/sandbox/gateway.rb),
//! and `LittleGhost::Network::ExternalGateway` (G.4), a gateway
//! whose proxy the application runs itself. The rules of G.4 are the core's
//! `network::ExternalGateway`; this file converts the keywords, holds the
//! Ruby objects (policy, workspace, validator) and maps the errors.

use std::sync::Mutex;

use littleghost_sandbox_core::network as core;
use magnus::{
    block::Proc, gc::Marker, method, prelude::*, typed_data::Obj, value::Opaque, DataTypeFunctions,
    Error, RArray, RClass, RHash, RModule, RString, Ruby, TypedData, Value,
};

use crate::helpers::errors;
use crate::helpers::{args, constants, convert, value_object as vo};
use crate::ruby_api::environment_policy;

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let network = little_ghost.define_module("Network")?;
    // The base's no-op methods are lib/littleghost/sandbox/gateway.rb.
    let base = network.define_class("Gateway", ruby.class_object())?;
    let external = network.define_class("ExternalGateway", base)?;
    external.undef_default_alloc_func();
    external.define_singleton_method("new", method!(external_new, -1))?;
    external.define_method("policy", method!(ExternalGateway::policy, 0))?;
    external.define_method("workspace", method!(ExternalGateway::workspace, 0))?;
    external.define_method("runtime_paths", method!(ExternalGateway::runtime_paths, 0))?;
    let proxy_mount_path = method!(ExternalGateway::proxy_mount_path, 0);
    external.define_method("proxy_mount_path", proxy_mount_path)?;
    external.define_method("environment", method!(ExternalGateway::environment, 0))?;
    external.define_method("open", method!(ExternalGateway::open, -1))?;
    external.define_method("open?", method!(ExternalGateway::is_open, 0))?;
    external.define_method("validate!", method!(ExternalGateway::validate, 0))?;
    external.define_method("close", method!(ExternalGateway::close, 0))?;
    Ok(())
}

/// An application-run proxy reached through a socket under a runtime path.
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Network::ExternalGateway",
    free_immediately,
    size,
    mark
)]
pub struct ExternalGateway {
    core: Mutex<core::ExternalGateway>,
    policy: Opaque<Value>,
    workspace: Opaque<Value>,
    runtime_paths: Opaque<RArray>,
    proxy_mount_path: Opaque<RString>,
    environment: Opaque<Value>,
    validator: Opaque<Value>,
}

impl DataTypeFunctions for ExternalGateway {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.policy);
        marker.mark(self.workspace);
        marker.mark(self.runtime_paths);
        marker.mark(self.proxy_mount_path);
        marker.mark(self.environment);
        marker.mark(self.validator);
    }
}

/// ExternalGateway.new(policy:, workspace:, runtime_paths:, proxy_mount_path:, environment: {}, validate: nil)
fn external_new(
    ruby: &Ruby,
    class: RClass,
    rb_args: &[Value],
) -> Result<Obj<ExternalGateway>, Error> {
    external_build(ruby, class, args::keywords_only(rb_args)?)
}

/// [`external_new`] of a keyword Hash, for a backend building the gateway a policy declares.
pub(crate) fn external_build(
    ruby: &Ruby,
    class: RClass,
    keywords: RHash,
) -> Result<Obj<ExternalGateway>, Error> {
    let values = args::keywords(
        ruby,
        keywords,
        &["policy", "workspace", "runtime_paths", "proxy_mount_path"],
        &["environment", "validate"],
    )?;
    let value = |i: usize| values[i].unwrap_or_else(|| ruby.qnil().as_value());
    let (policy, workspace, validator) = (value(0), value(1), value(5));
    let symbols = ruby.ary_new();
    let mut declaration = core::ExternalDeclaration::default();
    // `runtime_paths:`, one name or an Array of them (nil: none).
    let names: Vec<Value> = match RArray::from_value(value(2)) {
        Some(array) => array.into_iter().collect(),
        None if value(2).is_nil() => Vec::new(),
        None => vec![value(2)],
    };
    for name in names {
        let symbol = vo::name_to_sym(name, "external gateway runtime path name")?;
        // The workspace a user passed (any duck type with `path`).
        let name = symbol.name()?.into_owned();
        let directory = crate::ruby_api::workspace::directory(ruby, workspace, &name)?;
        declaration.roots.push((name, directory));
        symbols.push(symbol)?;
    }
    symbols.freeze();
    let proxy = Some(value(3));
    declaration.proxy_mount_path = convert::expanded_path(ruby, proxy, "proxy_mount_path")?;
    // A validator that cannot be called is refused before the gateway's own rules.
    if !validator.is_nil() && !validator.respond_to("call", false)? {
        return Err(errors::policy_error(
            ruby,
            "external gateway validate must be nil or respond to call",
        ));
    }
    let gateway = errors::core_result(ruby, declaration.build())?;
    let environment = environment_hash(ruby, values[4])?;
    let path = convert::path_to_ruby(ruby, gateway.proxy_mount_path());
    Ok(ruby.obj_wrap_as(
        ExternalGateway {
            core: Mutex::new(gateway),
            policy: policy.into(),
            workspace: workspace.into(),
            runtime_paths: symbols.into(),
            proxy_mount_path: path.into(),
            environment: environment.into(),
            validator: validator.into(),
        },
        class,
    ))
}

/// `EnvironmentPolicy.coerce(environment || {}).values`: a frozen String => String Hash.
fn environment_hash(ruby: &Ruby, environment: Option<Value>) -> Result<Value, Error> {
    let given = environment
        .filter(|value| !value.is_nil())
        .unwrap_or_else(|| ruby.hash_new().as_value());
    let class = constants::class(ruby, "LittleGhost::Sandbox::EnvironmentPolicy")?;
    let policy = environment_policy::coerce(ruby, class, given)?;
    let policy = environment_policy::borrow(policy)
        .ok_or_else(|| errors::type_error(ruby, "not a LittleGhost::Sandbox::EnvironmentPolicy"))?;
    Ok(policy.values_hash(ruby).as_value())
}

impl ExternalGateway {
    fn core(&self) -> std::sync::MutexGuard<'_, core::ExternalGateway> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn policy(ruby: &Ruby, rb_self: &Self) -> Value {
        ruby.get_inner(rb_self.policy)
    }

    fn workspace(ruby: &Ruby, rb_self: &Self) -> Value {
        ruby.get_inner(rb_self.workspace)
    }

    fn runtime_paths(ruby: &Ruby, rb_self: &Self) -> RArray {
        ruby.get_inner(rb_self.runtime_paths)
    }

    fn proxy_mount_path(ruby: &Ruby, rb_self: &Self) -> RString {
        ruby.get_inner(rb_self.proxy_mount_path)
    }

    fn environment(ruby: &Ruby, rb_self: &Self) -> Value {
        ruby.get_inner(rb_self.environment)
    }

    /// open(run: nil): checks the names are runtime path grants of `policy`
    /// (when it answers `runtime_paths`), then pins the roots.
    fn open(ruby: &Ruby, rb_self: Obj<Self>, rb_args: &[Value]) -> Result<Obj<Self>, Error> {
        args::keywords(ruby, args::keywords_only(rb_args)?, &[], &["run"])?;
        Self::open_checked(ruby, &rb_self)?;
        Ok(rb_self)
    }

    /// `open`'s checks and pins; `validate!` runs them too on a gateway that
    /// was never opened (the framework's gateway opens itself on first use).
    fn open_checked(ruby: &Ruby, rb_self: &Obj<Self>) -> Result<(), Error> {
        let policy = ruby.get_inner(rb_self.policy);
        if let Some(policy) = crate::ruby_api::policy::borrow(policy) {
            errors::core_result(ruby, rb_self.core().check_policy(policy.core()))?;
        } else if let Some(names) = duck_runtime_paths(policy)? {
            let checked = rb_self
                .core()
                .check_grants(names.iter().map(String::as_str));
            errors::core_result(ruby, checked)?;
        }
        errors::core_result(ruby, rb_self.core().open())
    }

    fn is_open(rb_self: &Self) -> bool {
        rb_self.core().is_open()
    }

    /// validate!: opens the gateway first when it was never opened (as the
    /// framework's gateway does), then checks the roots are still the pinned
    /// directories, then runs the application's validator (`call()` or
    /// `call(gateway)` by its arity).
    fn validate(ruby: &Ruby, rb_self: Obj<Self>) -> Result<Obj<Self>, Error> {
        if !rb_self.core().is_open() {
            Self::open_checked(ruby, &rb_self)?;
        }
        errors::core_result(ruby, rb_self.core().validate())?;
        let validator = ruby.get_inner(rb_self.validator);
        if !validator.is_nil() {
            // The application's validator: `call()` or `call(gateway)` by its arity.
            let arity = match Proc::from_value(validator) {
                Some(block) => block.arity(),
                None => validator.funcall("arity", ()).unwrap_or(1),
            };
            let args: &[Value] = if arity == 0 {
                &[]
            } else {
                &[rb_self.as_value()]
            };
            validator.funcall::<_, _, Value>("call", args)?;
        }
        Ok(rb_self)
    }

    fn close(ruby: &Ruby, rb_self: &Self) -> Value {
        rb_self.core().close();
        ruby.qnil().as_value()
    }
}

/// The names a policy object other than a Policy grants as runtime paths,
/// when it answers `runtime_paths` (a user's duck-typed policy).
fn duck_runtime_paths(policy: Value) -> Result<Option<Vec<String>>, Error> {
    if !policy.respond_to("runtime_paths", false)? {
        return Ok(None);
    }
    let granted: RHash = policy.funcall("runtime_paths", ())?;
    let mut names = Vec::new();
    for (key, _) in vo::hash_pairs(granted)? {
        names.push(vo::sym_name(vo::name_to_sym(key, "runtime path name")?)?);
    }
    Ok(Some(names))
}
