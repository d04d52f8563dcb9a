//! What Bubblewrap shares with Landlock, Seatbelt and Native: option helpers
//! and the effective policy every Rust backend settles at construction.

use std::path::PathBuf;

use littleghost_sandbox_core::backend::effective::{self, Backend, Host};
use littleghost_sandbox_core::backend::seccomp;
use littleghost_sandbox_core::policy::Policy;
use magnus::{prelude::*, Error, RArray, Ruby, Value};

use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::sandbox::backend::class_path;
use crate::ruby_api::sandbox::{self, SandboxObj};
use crate::ruby_api::{capabilities, launch_limits, policy};

/// A frozen Array of frozen Strings.
pub(crate) fn frozen_strings(ruby: &Ruby, items: &[&str]) -> RArray {
    let array = ruby.ary_from_iter(items.iter().map(|s| vo::frozen_str(ruby, s)));
    array.freeze();
    array
}

/// The `platform:` option as given, or Ruby's `RUBY_PLATFORM` when it is absent or nil.
pub(crate) fn platform_or_host(ruby: &Ruby, platform: Option<Value>) -> Result<Value, Error> {
    match platform.filter(|v| !v.is_nil()) {
        Some(platform) => Ok(platform),
        None => ruby.class_object().const_get("RUBY_PLATFORM"),
    }
}

/// An option naming a host path (`bubblewrap:`), through `String()` as the option always was, byte for byte.
pub(crate) fn option_path(ruby: &Ruby, value: Value) -> Result<PathBuf, Error> {
    convert::string_path(vo::kernel(ruby, "String", value)?)
}

/// The Capabilities `backend` claims (the core's rule) for its effective
/// `policy`, or for the backend as such (its probe).
pub(crate) fn claimed(
    ruby: &Ruby,
    backend: Backend,
    policy: Option<&Policy>,
) -> Result<Value, Error> {
    let host = Host {
        limit_features: launch_limits::features(),
        // Bubblewrap owns its tree without a cgroup (a pid namespace whose
        // init dies with bwrap); Unrestricted and Landlock only through one.
        owns_tree: backend == Backend::Bubblewrap || launch_limits::owns_tree(),
        seccomp: seccomp::Arch::native().is_some(),
        connect_interception: backend == Backend::Landlock && landlock_allowlist(),
    };
    let claims = effective::claims(backend, policy, &host);
    capabilities::build(
        ruby,
        &claims.features,
        claims.network_modes,
        claims.isolation,
    )
}

/// Whether the Landlock backend can enforce `:allowlist` on this host.
fn landlock_allowlist() -> bool {
    #[cfg(target_os = "linux")]
    return littleghost_sandbox_core::backend::landlock::allowlist_unavailable().is_none();
    #[cfg(not(target_os = "linux"))]
    return false;
}

/// Settles what `backend` enforces for the requested policy (the core's
/// rule) and stores it with the capabilities it claims for it,
/// so the binding reads both without Ruby dispatch.
pub(crate) fn enforce(ruby: &Ruby, rb_self: SandboxObj, backend: Backend) -> Result<(), Error> {
    let requested = sandbox::requested_policy(ruby, rb_self.as_value());
    let requested = policy::borrow(requested)
        .ok_or_else(|| errors::policy_error(ruby, "unsupported sandbox policy"))?;
    let core = errors::core_result(ruby, effective::effective_policy(backend, requested.core()))?;
    let capabilities = claimed(ruby, backend, Some(&core))?;
    let effective = policy::wrap(ruby, core, requested)?;
    let class = constants::class(ruby, class_path(backend))?;
    sandbox::set_enforced(rb_self, class, effective, capabilities);
    Ok(())
}
