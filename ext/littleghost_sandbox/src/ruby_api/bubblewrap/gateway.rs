//! The Bubblewrap side of allowlist networking (SPEC G.3-G.6, B.5, B.10):
//! resolving `network.gateway` into an object speaking the G.2 protocol,
//! opening and closing it with the sandbox, and turning an open gateway
//! into what a launch needs (its variables, its read-only binds, its socket
//! path, the relay helper). The Landlock backend opens, closes and asks
//! its gateway the same way.

use std::cell::RefCell;

use littleghost_sandbox_core::backend::bubblewrap::{self as bw, Gateway, GatewayConnection};
use littleghost_sandbox_core::grants::Grant;
use littleghost_sandbox_core::policy::network_declaration::Provider;
use littleghost_sandbox_core::policy::NetworkRules;
use magnus::{gc::Marker, prelude::*, value::Opaque, Error, KwArgs, RArray, RHash, Ruby, Value};

use crate::helpers::args::kwargs;
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::sandbox::{self, SandboxObj};
use crate::ruby_api::{builtin_gateway, mount, network_policy};

/// The gateway a sandbox resolves at its first `open` under `:allowlist`
/// (G.3), opened and closed with the sandbox; Bubblewrap and Landlock hold one.
#[derive(Default)]
pub(crate) struct Slot(RefCell<Option<Opaque<Value>>>);

impl Slot {
    pub(crate) fn mark(&self, marker: &Marker) {
        if let Some(gateway) = *self.0.borrow() {
            marker.mark(gateway);
        }
    }

    /// The gateway, once resolved (what `sandbox.gateway` answers).
    pub(crate) fn value(&self, ruby: &Ruby) -> Option<Value> {
        self.0.borrow().map(|gateway| ruby.get_inner(gateway))
    }

    /// The gateway as a launch asks it, once resolved.
    pub(crate) fn launch<'r>(&self, ruby: &'r Ruby) -> Option<RubyGateway<'r>> {
        let value = self.value(ruby)?;
        Some(RubyGateway { ruby, value })
    }

    /// Under the `:allowlist` of the `effective` policy, resolves the
    /// gateway once, attaching the sandbox's denial and network logs, and
    /// opens it; on failure the sandbox's `close` runs and the error is
    /// re-raised (B.5 step 7).
    pub(crate) fn open(
        &self,
        (ruby, rb_self): (&Ruby, SandboxObj),
        effective: Value,
        gateway_options: Option<Value>,
        close: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        let Some(network) = allowlist_network(ruby, effective) else {
            return Ok(());
        };
        let opened = self.resolve((ruby, rb_self), effective, gateway_options, network);
        let opened = opened.and_then(|gateway| {
            let kw = kwargs(ruby, &[("run", ruby.qnil().as_value())])?;
            gateway.funcall::<_, _, Value>("open", (KwArgs(kw),))
        });
        if let Err(error) = opened {
            let _ = close();
            return Err(error);
        }
        Ok(())
    }

    fn resolve(
        &self,
        (ruby, rb_self): (&Ruby, SandboxObj),
        effective: Value,
        gateway_options: Option<Value>,
        network: Value,
    ) -> Result<Value, Error> {
        if let Some(gateway) = self.value(ruby) {
            return Ok(gateway);
        }
        let workspace = sandbox::workspace_of(ruby, rb_self.as_value());
        let resolved = resolve(ruby, network, effective, workspace, gateway_options)?;
        // The gateway's 403s show in this sandbox's `denials`, its egress
        // events in `network_log` and reach `on_network`.
        let (denials, network) = (rb_self.denials().hub(), rb_self.network().hub());
        builtin_gateway::attach(resolved, denials, network);
        self.0.replace(Some(resolved.into()));
        Ok(resolved)
    }

    /// Closes the gateway, if any, then delivers the sandbox's last denials
    /// and network events and ends the event threads (both are stopped even
    /// if one fails).
    pub(crate) fn close(&self, ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
        if let Some(gateway) = self.value(ruby) {
            let _: Value = gateway.funcall("close", ())?;
        }
        let denials = rb_self.denials().hub().stop_delivery(ruby);
        let network = rb_self.network().hub().stop_delivery(ruby);
        denials.and(network)
    }
}

/// The effective policy's network when its mode is `:allowlist`.
pub(crate) fn allowlist_network(ruby: &Ruby, effective_policy: Value) -> Option<Value> {
    let network = crate::ruby_api::policy::borrow(effective_policy)?.network_value(ruby);
    network_policy::borrow(network)
        .filter(|policy| policy.core().mode == bw::NetworkMode::Allowlist)
        .map(|_| network)
}

/// G.3: `network.gateway` resolved: nil, `:builtin` or `:envoy` give the
/// built-in gateway; a Symbol or a Hash names a provider (`provider:`,
/// default `:builtin`; `:external` is G.4) whose options are the Hash's
/// other keys over `gateway_options`; a callable that is not a Gateway is
/// called with `policy:` and `transport:`; anything else is used as is.
/// The result must answer `open` and `close`.
pub(crate) fn resolve(
    ruby: &Ruby,
    network: Value,
    effective_policy: Value,
    workspace: Value,
    gateway_options: Option<Value>,
) -> Result<Value, Error> {
    let declared = network_policy::borrow(network)
        .map_or_else(|| ruby.qnil().as_value(), |n| n.gateway_value(ruby));
    let base = constants::class(ruby, "LittleGhost::Network::Gateway")?;
    let named = declared.is_nil() || vo::try_to_sym(declared)?.is_some();
    let resolved = if named || vo::is_hash(ruby, declared) {
        let hash = if named {
            ruby.hash_new()
        } else {
            vo::symbolize_keys(ruby, declared)?
        };
        if !declared.is_nil() && named {
            hash.aset(ruby.to_symbol("provider"), declared)?;
        }
        provider(
            ruby,
            hash,
            network,
            effective_policy,
            workspace,
            gateway_options,
        )?
    } else if declared.respond_to("call", false)? && !declared.is_kind_of(base) {
        let kw = kwargs(
            ruby,
            &[
                ("policy", network),
                ("transport", ruby.to_symbol("unix").as_value()),
            ],
        )?;
        declared.funcall("call", (KwArgs(kw),))?
    } else {
        declared
    };
    if !resolved.respond_to("open", false)? || !resolved.respond_to("close", false)? {
        return Err(errors::policy_error(
            ruby,
            "network gateway must respond to open and close",
        ));
    }
    Ok(resolved)
}

/// A provider Hash: `gateway_options` merged under it, then the provider built.
fn provider(
    ruby: &Ruby,
    declared: RHash,
    network: Value,
    effective_policy: Value,
    workspace: Value,
    gateway_options: Option<Value>,
) -> Result<Value, Error> {
    let options = match gateway_options {
        Some(options) => vo::symbolize_keys(ruby, options)?,
        None => ruby.hash_new(),
    };
    for (key, value) in vo::hash_pairs(declared)? {
        options.aset(key, value)?;
    }
    let given: Value = options.delete(ruby.to_symbol("provider"))?;
    let name = (!given.is_nil()).then(|| vo::given(given)).transpose()?;
    let default = Default::default();
    let rules = network_policy::borrow(network).map_or(&default, |n| &n.core().rules);
    match errors::core_result(ruby, Provider::named(name.as_ref(), rules))? {
        Provider::Builtin => {
            // The policy's rules, secrets and upstream roots go to the core
            // gateway directly: a secret's value never becomes a Ruby value.
            let class = constants::class(ruby, "LittleGhost::Network::BuiltinGateway")?;
            Ok(builtin_gateway::build_declared(ruby, class, options, rules)?.as_value())
        }
        Provider::External => {
            options.aset(ruby.to_symbol("policy"), effective_policy)?;
            options.aset(ruby.to_symbol("workspace"), workspace)?;
            let class = constants::class(ruby, "LittleGhost::Network::ExternalGateway")?;
            Ok(crate::ruby_api::gateway::external_build(ruby, class, options)?.as_value())
        }
    }
}

/// `gateway.environment` as String pairs (beneath the 16.4 merge).
pub(crate) fn environment(ruby: &Ruby, gateway: Value) -> Result<Vec<(String, String)>, Error> {
    let environment: Value = gateway.funcall("environment", ())?;
    convert::environment(ruby, Some(environment))
}

/// An open gateway as the core's launch asks it (G.2).
pub(crate) struct RubyGateway<'r> {
    pub ruby: &'r Ruby,
    pub value: Value,
}

impl Gateway<Error> for RubyGateway<'_> {
    fn environment(&self) -> Result<Vec<(String, String)>, Error> {
        environment(self.ruby, self.value)
    }

    fn validate(&self) -> Result<(), Error> {
        let _: Value = self.value.funcall("validate!", ())?;
        Ok(())
    }

    /// The socket path and the mounts: the built-in gateway's directories
    /// from their handles, another gateway's (G.4) by path.
    fn connection(&self) -> Result<GatewayConnection, Error> {
        let ruby = self.ruby;
        let socket: Value = self.value.funcall("proxy_mount_path", ())?;
        if socket.is_nil() {
            return Err(errors::dependency_error(
                ruby,
                "the network gateway has no proxy_mount_path (is it open?)",
            ));
        }
        if let Some(connection) = builtin_gateway::connection(ruby, self.value)? {
            return Ok(connection);
        }
        let socket = convert::string_path(vo::kernel(ruby, "String", socket)?)?;
        let mounts = grants(ruby, self.value.funcall("mounts", ())?)?;
        Ok(GatewayConnection {
            socket,
            binds: mounts.into_iter().map(|g| (g.source, g.target)).collect(),
            handles: Vec::new(),
            socket_handle: None,
        })
    }

    fn view(&self, rules: &NetworkRules) -> Result<Option<GatewayConnection>, Error> {
        builtin_gateway::view(self.ruby, self.value, rules)
    }
}

/// `Array(value)` of mount declarations as core grants.
pub(crate) fn grants(ruby: &Ruby, value: Value) -> Result<Vec<Grant>, Error> {
    RArray::try_convert(vo::kernel(ruby, "Array", value)?)?
        .into_iter()
        .map(|m| mount::grant_from_ruby(ruby, m))
        .collect()
}
