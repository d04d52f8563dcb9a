//! The Bubblewrap side of allowlist networking (SPEC G.3-G.6, B.5, B.10):
//! resolving `network.gateway` into an object speaking the G.2 protocol,
//! and turning an open gateway into what a launch needs (its variables, its
//! read-only binds, its socket path, the relay helper).

use std::os::fd::{AsRawFd, OwnedFd};

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::grants::Grant;
use littleghost_sandbox_core::launch::trust_store::TrustStore;
use littleghost_sandbox_core::policy::{network_declaration, NetworkRules};
use magnus::{prelude::*, Error, KwArgs, RArray, RHash, Ruby, Value};

use crate::helpers::args::kwargs;
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::value_object as vo;
use crate::ruby_api::{builtin_gateway, errors, mount, network_policy};

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
    let name = match vo::try_to_sym(given)? {
        Some(symbol) => symbol.name()?.into_owned(),
        None if given.is_nil() => "builtin".to_owned(),
        None => String::new(),
    };
    match name.as_str() {
        "builtin" | "envoy" => {
            // The policy's rules, secrets and upstream roots go to the core
            // gateway directly: a secret's value never becomes a Ruby value.
            let default = Default::default();
            let rules = network_policy::borrow(network).map_or(&default, |n| &n.core().rules);
            let class = constants::class(ruby, "LittleGhost::Network::BuiltinGateway")?;
            Ok(builtin_gateway::build_declared(ruby, class, options, rules)?.as_value())
        }
        "external" => {
            if let Some(policy) = network_policy::borrow(network) {
                let enforced = network_declaration::check_enforced(&policy.core().rules, false);
                errors::core_result(ruby, enforced)?;
            }
            options.aset(ruby.to_symbol("policy"), effective_policy)?;
            options.aset(ruby.to_symbol("workspace"), workspace)?;
            let class = constants::class(ruby, "LittleGhost::Network::ExternalGateway")?;
            Ok(crate::ruby_api::gateway::external_build(ruby, class, options)?.as_value())
        }
        _ => Err(errors::policy_error(
            ruby,
            format!(
                "unknown network gateway provider {}",
                vo::inspect_value(ruby, given).unwrap_or_default()
            ),
        )),
    }
}

/// `gateway.environment` as String pairs (beneath the 16.4 merge).
pub(crate) fn environment(ruby: &Ruby, gateway: Value) -> Result<Vec<(String, String)>, Error> {
    let environment: Value = gateway.funcall("environment", ())?;
    convert::environment(ruby, Some(environment))
}

/// The exact `host:port` entries of `rules` (the allowlist a launch goes
/// through) that a tunnel can serve, as (host, port) pairs: what the relay
/// also serves to clients that ignore proxies.
pub(crate) fn exact_destinations(rules: Option<&NetworkRules>) -> Vec<(String, u16)> {
    rules.map_or_else(
        Vec::new,
        littleghost_sandbox_core::launch::transparent::tunnelled_destinations,
    )
}

/// Before a launch: `validate!` (G.2), then the socket path and the mounts,
/// with the relay helper of `options` and the transparent listeners for
/// `destinations`; the descriptors returned (the helper's bytes, the
/// sandbox's `/etc/hosts`, the pipes holding a launch whose relay listens
/// below port 1024, the host's trust directories) must stay open until the
/// launch has started. A
/// scope's `narrowed` rules go through a view of the built-in gateway (its
/// own socket and directory); another gateway cannot enforce them:
/// CapabilityError (fail closed).
pub(crate) fn relay(
    ruby: &Ruby,
    gateway: Value,
    options: &bw::Options,
    narrowed: Option<&NetworkRules>,
    destinations: &[(String, u16)],
) -> Result<(bw::Relay, Vec<OwnedFd>), Error> {
    let _: Value = gateway.funcall("validate!", ())?;
    // The built-in gateway's directories are bound from their handles;
    // another gateway's mounts (G.4) by path.
    let (socket, binds, handles) = match narrowed {
        Some(rules) => {
            let Some(view) = builtin_gateway::view(ruby, gateway, rules)? else {
                return Err(errors::capability_error(
                    ruby,
                    "a scope's narrowed allowlist needs the built-in gateway (only it serves narrowed views)",
                ));
            };
            let handles = errors::core_result(ruby, view.bind_handles())?;
            (view.socket_path().to_path_buf(), Vec::new(), handles)
        }
        None => {
            let socket: Value = gateway.funcall("proxy_mount_path", ())?;
            if socket.is_nil() {
                return Err(errors::dependency_error(
                    ruby,
                    "the network gateway has no proxy_mount_path (is it open?)",
                ));
            }
            let socket = convert::string_path(vo::kernel(ruby, "String", socket)?)?;
            match builtin_gateway::bind_handles(ruby, gateway)? {
                Some(handles) => (socket, Vec::new(), handles),
                None => {
                    let mounts = grants(ruby, gateway.funcall("mounts", ())?)?;
                    let binds = mounts.into_iter().map(|g| (g.source, g.target)).collect();
                    (socket, binds, Vec::new())
                }
            }
        }
    };
    let data = errors::core_result(ruby, options.relay_data())?;
    let served = errors::core_result(ruby, options.transparent(destinations))?;
    let trust = TrustStore::open();
    let relay = bw::Relay {
        data: data.as_raw_fd(),
        trust: trust.binds(),
        socket,
        binds,
        handles: handles
            .iter()
            .map(|(fd, target)| (fd.as_raw_fd(), target.clone()))
            .collect(),
        forwards: served.forwards,
        hosts: served.hosts.as_ref().map(|fd| fd.as_raw_fd()),
        hold: served.pipes.as_ref().map(|pipes| pipes.hold()),
    };
    let pipes = served.pipes.into_iter().flat_map(|pipes| pipes.into_fds());
    Ok((
        relay,
        [data]
            .into_iter()
            .chain(handles.into_iter().map(|(fd, _)| fd))
            .chain(served.hosts)
            .chain(pipes)
            .chain(trust.into_fds())
            .collect(),
    ))
}

/// `Array(value)` of mount declarations as core grants.
pub(crate) fn grants(ruby: &Ruby, value: Value) -> Result<Vec<Grant>, Error> {
    RArray::try_convert(vo::kernel(ruby, "Array", value)?)?
        .into_iter()
        .map(|m| mount::grant_from_ruby(ruby, m))
        .collect()
}
