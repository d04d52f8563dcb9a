//! `LittleGhost::Network::Gateway` (SPEC G.2), the no-op base of the gateway
//! protocol, and `LittleGhost::Network::ExternalGateway` (G.4), a gateway
//! whose proxy the application runs itself. The rules of G.4 are the core's
//! `network::ExternalGateway`; this file converts the keywords, holds the
//! Ruby objects (policy, workspace, validator) and maps the errors.

use std::sync::Mutex;

use littleghost_sandbox_core::network as core;
use magnus::{
    gc::Marker, method, prelude::*, typed_data::Obj, value::Opaque, DataTypeFunctions, Error,
    RArray, RClass, RHash, RModule, RString, Ruby, Symbol, TypedData, Value,
};

use crate::helpers::{args, convert};
use crate::ruby_api::errors;

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let network = little_ghost.define_module("Network")?;
    let base = network.define_class("Gateway", ruby.class_object())?;
    base.define_method("open", method!(open_self, -1))?;
    base.define_method("close", method!(close_nothing, 0))?;
    base.define_method("validate!", method!(validate_self, 0))?;
    base.define_method("environment", method!(no_environment, 0))?;
    base.define_method("mounts", method!(no_mounts, 0))?;
    base.define_method("proxy_mount_path", method!(no_proxy_mount_path, 0))?;
    base.define_method("client_network", method!(client_network, 0))?;

    let external = network.define_class("ExternalGateway", base)?;
    external.undef_default_alloc_func();
    external.define_singleton_method("new", method!(external_new, -1))?;
    external.define_method("policy", method!(ExternalGateway::policy, 0))?;
    external.define_method("workspace", method!(ExternalGateway::workspace, 0))?;
    external.define_method("runtime_paths", method!(ExternalGateway::runtime_paths, 0))?;
    external.define_method(
        "proxy_mount_path",
        method!(ExternalGateway::proxy_mount_path, 0),
    )?;
    external.define_method("environment", method!(ExternalGateway::environment, 0))?;
    external.define_method("open", method!(ExternalGateway::open, -1))?;
    external.define_method("open?", method!(ExternalGateway::is_open, 0))?;
    external.define_method("validate!", method!(ExternalGateway::validate, 0))?;
    external.define_method("close", method!(ExternalGateway::close, 0))?;
    Ok(())
}

/// Gateway#open(run: nil): the base owns nothing, so it returns self.
fn open_self(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    args::keywords(ruby, args::keywords_only(args)?, &[], &["run"])?;
    Ok(rb_self)
}

fn close_nothing(ruby: &Ruby, _rb_self: Value) -> Value {
    ruby.qnil().as_value()
}

fn validate_self(rb_self: Value) -> Value {
    rb_self
}

fn no_environment(ruby: &Ruby, _rb_self: Value) -> RHash {
    let hash = ruby.hash_new();
    hash.freeze();
    hash
}

fn no_mounts(ruby: &Ruby, _rb_self: Value) -> RArray {
    let array = ruby.ary_new();
    array.freeze();
    array
}

fn no_proxy_mount_path(ruby: &Ruby, _rb_self: Value) -> Value {
    ruby.qnil().as_value()
}

/// What the child's own sockets reach: nothing (G.1); a gateway is the only way out.
fn client_network(ruby: &Ruby, _rb_self: Value) -> Symbol {
    ruby.to_symbol("none")
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
    let values = args::keywords(
        ruby,
        args::keywords_only(rb_args)?,
        &["policy", "workspace", "runtime_paths", "proxy_mount_path"],
        &["environment", "validate"],
    )?;
    let value = |i: usize| values[i].unwrap_or_else(|| ruby.qnil().as_value());
    let (policy, workspace) = (value(0), value(1));
    let names: RArray = ruby.module_kernel().funcall("Array", (value(2),))?;
    let symbols = ruby.ary_new();
    let mut roots = Vec::new();
    for name in names.into_iter() {
        let symbol: Symbol = name.funcall("to_sym", ())?;
        let directory: RString = workspace.funcall("path", (symbol,))?;
        roots.push((symbol.name()?.into_owned(), convert::path_of(directory)));
        symbols.push(symbol)?;
    }
    symbols.freeze();
    let proxy =
        convert::expanded_path(ruby, Some(value(3)), "proxy_mount_path")?.unwrap_or_default();
    let validator = value(5);
    if !validator.is_nil() && !validator.respond_to("call", false)? {
        return Err(errors::policy_error(
            ruby,
            "external gateway validate must be nil or respond to call",
        ));
    }
    let gateway = errors::core_result(ruby, core::ExternalGateway::new(roots, proxy))?;
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
    let class: Value = ruby
        .class_object()
        .const_get::<_, RModule>("LittleGhost")?
        .const_get::<_, RClass>("Sandbox")?
        .const_get("EnvironmentPolicy")?;
    let policy: Value = class.funcall("coerce", (given,))?;
    policy.funcall("values", ())
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
        let policy = ruby.get_inner(rb_self.policy);
        if policy.respond_to("runtime_paths", false)? {
            let granted: RHash = policy.funcall("runtime_paths", ())?;
            let mut names = Vec::new();
            granted.foreach(|key: Value, _: Value| {
                names.push(key.funcall::<_, _, RString>("to_s", ())?.to_string()?);
                Ok(magnus::r_hash::ForEach::Continue)
            })?;
            let core = rb_self.core();
            errors::core_result(ruby, core.check_grants(names.iter().map(String::as_str)))?;
        }
        errors::core_result(ruby, rb_self.core().open())?;
        Ok(rb_self)
    }

    fn is_open(rb_self: &Self) -> bool {
        rb_self.core().is_open()
    }

    /// validate!: the roots are still the pinned directories, then the
    /// application's validator (`call()` or `call(gateway)` by its arity).
    fn validate(ruby: &Ruby, rb_self: Obj<Self>) -> Result<Obj<Self>, Error> {
        errors::core_result(ruby, rb_self.core().validate())?;
        let validator = ruby.get_inner(rb_self.validator);
        if !validator.is_nil() {
            let arity: i64 = validator.funcall("arity", ()).unwrap_or(1);
            if arity == 0 {
                validator.funcall::<_, _, Value>("call", ())?;
            } else {
                validator.funcall::<_, _, Value>("call", (rb_self,))?;
            }
        }
        Ok(rb_self)
    }

    fn close(ruby: &Ruby, rb_self: &Self) -> Value {
        rb_self.core().close();
        ruby.qnil().as_value()
    }
}
