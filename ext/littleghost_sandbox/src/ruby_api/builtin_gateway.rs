//! `LittleGhost::Network::BuiltinGateway` (SPEC G.3, G.5, G.7): the gem's
//! own enforcing gateway, the core's `network::BuiltinGateway`, behind the
//! G.2 protocol so a backend treats it like any other gateway. The allowlist
//! is checked at construction; `open` starts the gateway on the gem's
//! runtime, `close` stops it without the GVL (stopping waits for its tasks).

use std::sync::{Arc, Mutex};

use littleghost_sandbox_core::network as core;
use magnus::{
    method, prelude::*, typed_data::Obj, DataTypeFunctions, Error, RArray, RClass, RHash, RModule,
    RString, Ruby, TypedData, Value,
};

use crate::helpers::errors;
use crate::helpers::{args, convert, nogvl, value_object as vo};
use crate::ruby_api::denial::DenialHub;
use crate::ruby_api::mount;
use crate::ruby_api::network_event::{self, NetworkHub};
use crate::ruby_api::network_policy::{self, Declared};
use littleghost_sandbox_core::backend::bubblewrap::{Gateway as LaunchGateway, GatewayConnection};
use littleghost_sandbox_core::denial::Denial as CoreDenial;
use littleghost_sandbox_core::policy::network_requests as requests;
use littleghost_sandbox_core::policy::{AllowEntry, NetworkRules};

pub fn init(_ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let network: RModule = little_ghost.const_get("Network")?;
    let base: RClass = network.const_get("Gateway")?;
    let class = network.define_class("BuiltinGateway", base)?;
    class.undef_default_alloc_func();
    class.define_singleton_method("new", method!(new, -1))?;
    class.define_method("allow", method!(BuiltinGateway::allow, 0))?;
    class.define_method("environment", method!(BuiltinGateway::environment, 0))?;
    class.define_method("upstream_ca", method!(BuiltinGateway::upstream_ca, 0))?;
    class.define_method(
        "allow_private_destinations?",
        method!(BuiltinGateway::allow_private, 0),
    )?;
    class.define_method("open", method!(BuiltinGateway::open, -1))?;
    class.define_method("open?", method!(BuiltinGateway::is_open, 0))?;
    class.define_method("close", method!(BuiltinGateway::close, 0))?;
    class.define_method("validate!", method!(BuiltinGateway::validate, 0))?;
    class.define_method("mounts", method!(BuiltinGateway::mounts, 0))?;
    class.define_method(
        "proxy_mount_path",
        method!(BuiltinGateway::proxy_mount_path, 0),
    )?;
    class.define_method("denials", method!(BuiltinGateway::denials, 0))?;
    class.define_method("network_log", method!(BuiltinGateway::network_log, 0))?;
    Ok(())
}

/// The built-in gateway: the core's allowlist and lifecycle.
#[derive(TypedData)]
#[magnus(class = "LittleGhost::Network::BuiltinGateway", free_immediately, size)]
pub struct BuiltinGateway {
    core: core::BuiltinGateway,
    /// The denial log of the sandbox this gateway serves, if one attached it:
    /// each 403 is recorded there too.
    denials: Mutex<Option<Arc<DenialHub>>>,
    /// The egress record of that sandbox: each event is recorded there too.
    network: Mutex<Option<Arc<NetworkHub>>>,
}

impl DataTypeFunctions for BuiltinGateway {}

/// BuiltinGateway.new(allow:, secrets: nil, upstream_ca: nil, allow_private_destinations: false): PolicyError for a malformed entry or secret (G.7).
fn new(ruby: &Ruby, class: RClass, rb_args: &[Value]) -> Result<Obj<BuiltinGateway>, Error> {
    let keywords = args::keywords_only(rb_args)?;
    let optional = &["secrets", "upstream_ca", "allow_private_destinations"];
    let values = args::keywords(ruby, keywords, &["allow"], optional)?;
    let declared = |value: Option<Value>| Declared::given(ruby, value);
    let allow = requests::allow_requests(declared(values[0]).as_ref())?;
    let secrets = requests::secret_requests(declared(values[1]).as_ref())?;
    let upstream_ca = convert::expanded_path(ruby, values[2], "network upstream_ca")?;
    let rules = NetworkRules::new(&allow, &secrets, upstream_ca);
    let rules = errors::core_result(ruby, rules)?;
    let private = values[3].is_some_and(|v| v.to_bool());
    wrap(ruby, class, core::BuiltinGateway::declared(&rules, private))
}

/// The gateway a policy declares (G.3): its rules, secrets and upstream
/// roots from the core policy, the provider options (`allow_private_destinations:`) from `options`.
pub(crate) fn build_declared(
    ruby: &Ruby,
    class: RClass,
    options: RHash,
    rules: &NetworkRules,
) -> Result<Obj<BuiltinGateway>, Error> {
    // `allow:` among the options was always replaced by the policy's entries (as it still is).
    let optional = &["allow_private_destinations", "allow"];
    let values = args::keywords(ruby, options, &[], optional)?;
    let private = values[0].is_some_and(|v| v.to_bool());
    wrap(ruby, class, core::BuiltinGateway::declared(rules, private))
}

fn wrap(
    ruby: &Ruby,
    class: RClass,
    gateway: littleghost_sandbox_core::Result<core::BuiltinGateway>,
) -> Result<Obj<BuiltinGateway>, Error> {
    Ok(ruby.obj_wrap_as(
        BuiltinGateway {
            core: errors::core_result(ruby, gateway)?,
            denials: Mutex::new(None),
            network: Mutex::new(None),
        },
        class,
    ))
}

/// Where a launch under a scope's narrowed `rules` reaches `gateway`, if it
/// is a BuiltinGateway: the core's answer (a view of it). None when
/// `gateway` is another kind of gateway.
pub(crate) fn view(
    ruby: &Ruby,
    gateway: Value,
    rules: &NetworkRules,
) -> Result<Option<GatewayConnection>, Error> {
    match <&BuiltinGateway>::try_convert(gateway) {
        Ok(builtin) => errors::core_result(ruby, LaunchGateway::view(&builtin.core, rules)),
        Err(_) => Ok(None),
    }
}

/// Where a launch reaches `gateway`, if it is a running BuiltinGateway: the
/// core's answer (its directory and socket by the handles opened at bind,
/// never a path to resolve again). None for another gateway, or one not open.
pub(crate) fn connection(ruby: &Ruby, gateway: Value) -> Result<Option<GatewayConnection>, Error> {
    let Ok(builtin) = <&BuiltinGateway>::try_convert(gateway) else {
        return Ok(None);
    };
    if builtin.running().is_none() {
        return Ok(None);
    }
    errors::core_result(ruby, LaunchGateway::connection(&builtin.core)).map(Some)
}

/// Makes `gateway`, if it is a BuiltinGateway, record its 403s in `denials`
/// and its egress events in `network` from its next `open` on (the sandbox
/// that resolved it attaches its own logs).
pub(crate) fn attach(gateway: Value, denials: Arc<DenialHub>, network: Arc<NetworkHub>) {
    if let Ok(gateway) = <&BuiltinGateway>::try_convert(gateway) {
        *lock(&gateway.denials) = Some(denials);
        *lock(&gateway.network) = Some(network);
    }
}

fn lock<T>(slot: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

impl BuiltinGateway {
    /// The running gateway, if `open` ran and `close` has not.
    fn running(&self) -> Option<Arc<core::Gateway>> {
        self.core.running()
    }

    /// allow: the rules, as NetworkPolicy#allow shows them (a String per
    /// plain entry, a frozen Hash per entry with HTTP rules or inspection).
    fn allow(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        let rules = rb_self.core.allowlist().rules();
        let entries: Vec<AllowEntry> = rules.iter().map(AllowEntry::of_rule).collect();
        network_policy::entries_to_ruby(ruby, &entries)
    }

    /// environment: the variables a child gets from this gateway (G.2): for
    /// each secret `LITTLEGHOST_SECRET_<NAME>` holding its stand-in (never the
    /// value); while a gateway that inspects TLS is open, SSL_CERT_FILE,
    /// REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS and
    /// GIT_SSL_CAINFO naming its CA bundle. Frozen.
    fn environment(ruby: &Ruby, rb_self: &Self) -> Result<RHash, Error> {
        let hash = ruby.hash_new();
        for (name, value) in rb_self.core.environment() {
            hash.aset(vo::frozen_str(ruby, &name), vo::frozen_str(ruby, &value))?;
        }
        hash.freeze();
        Ok(hash)
    }

    /// upstream_ca: the PEM file of extra upstream roots (read at each open), or nil.
    fn upstream_ca(ruby: &Ruby, rb_self: &Self) -> Option<RString> {
        let path = rb_self.core.upstream_ca()?;
        Some(convert::path_to_ruby(ruby, path))
    }

    fn allow_private(rb_self: &Self) -> bool {
        rb_self.core.allowlist().allow_private_destinations()
    }

    /// open(run: nil): starts serving on a socket in a fresh private directory; idempotent.
    fn open(ruby: &Ruby, rb_self: Obj<Self>, rb_args: &[Value]) -> Result<Obj<Self>, Error> {
        args::keywords(ruby, args::keywords_only(rb_args)?, &[], &["run"])?;
        let hub = lock(&rb_self.denials).clone();
        // Called on a gateway thread without the GVL: the Rust log and queue
        // only; the sandbox's event thread calls the subscribers.
        if let Some(hub) = &hub {
            hub.expect_async(ruby);
        }
        let on_denial = hub.map(|hub| -> core::DenialCallback {
            Arc::new(move |denial: &core::Denial| hub.record_async(CoreDenial::from(denial)))
        });
        let network = lock(&rb_self.network).clone();
        if let Some(network) = &network {
            network.expect_async(ruby);
        }
        let on_egress = network.map(|hub| -> core::EgressCallback {
            Arc::new(move |event: &core::EgressEvent| hub.record_async(event.clone()))
        });
        errors::core_result(ruby, rb_self.core.open_with(on_denial, on_egress))?;
        Ok(rb_self)
    }

    fn is_open(rb_self: &Self) -> bool {
        rb_self.running().is_some()
    }

    /// close: stops accepting, ends every connection, removes the socket and its directory; idempotent.
    fn close(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        if let Some(gateway) = rb_self.running() {
            let stopped = nogvl::blocking(ruby, move || gateway.stop())?;
            errors::core_result(ruby, stopped)?;
        }
        Ok(())
    }

    /// validate!: DependencyError unless the gateway is serving.
    fn validate(ruby: &Ruby, rb_self: Obj<Self>) -> Result<Obj<Self>, Error> {
        errors::core_result(ruby, rb_self.core.validate())?;
        Ok(rb_self)
    }

    /// mounts: the socket's private directory, read-only at the same path (G.6); empty when closed.
    fn mounts(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        let mounts = ruby.ary_new();
        if let Some(gateway) = rb_self.running() {
            mounts.push(mount::grant_to_ruby(ruby, &gateway.mount())?)?;
        }
        mounts.freeze();
        Ok(mounts)
    }

    fn proxy_mount_path(ruby: &Ruby, rb_self: &Self) -> Option<RString> {
        let gateway = rb_self.running()?;
        Some(convert::path_to_ruby(ruby, gateway.socket_path()))
    }

    /// denials: one frozen Sandbox::Denial per refused request, oldest first
    /// (kind `:network`, operation `:connect`, target "host:port", the
    /// reason, the message, the time): the same values `sandbox.denials` holds.
    fn denials(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        let list = ruby.ary_new();
        for record in rb_self.core.denials() {
            list.push(crate::ruby_api::denial::hub::wrap(
                ruby,
                CoreDenial::from(&record),
            ))?;
        }
        list.freeze();
        Ok(list)
    }

    /// network_log: one frozen Sandbox::NetworkEvent per tunnel and request,
    /// oldest first (the last 1000): the same values `sandbox.network_log` holds.
    fn network_log(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        network_event::list(ruby, rb_self.core.egress())
    }
}
