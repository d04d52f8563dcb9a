//! `LittleGhost::Sandboxes::Landlock` (SPEC LL.1): Landlock + seccomp for
//! hosts where user namespaces are blocked. The rules, the carving of nested
//! grants, the probe and Native's choice live in the core
//! (`backend::landlock`); the restriction is applied by the helper's
//! `supervise` mode to the child only. This file reads Ruby state, keeps the
//! backend's own state (opened, private TMPDIR) in a Rust object, and
//! launches through the shared process runner and sessions.
//!
//! Network `:allowlist`: `open` resolves and opens the gateway as
//! Bubblewrap does (`bubblewrap/gateway.rs`); each launch's supervisor makes
//! the child's connections to it; `close` closes it.

use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::effective::Backend;
use littleghost_sandbox_core::backend::landlock as ll;
use littleghost_sandbox_core::backend::landlock::host;
use littleghost_sandbox_core::launch::prepare::{LaunchCall, LaunchError, Prepared};
use littleghost_sandbox_core::policy::Policy;
use magnus::{
    function, gc::Marker, method, prelude::*, DataTypeFunctions, Error, RHash, RModule, Ruby,
    TypedData, Value,
};

use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::convert;
use crate::ruby_api::bubblewrap::gateway;
use crate::ruby_api::bubblewrap::{self as bwrb, enforce, frozen_strings, platform_or_host};
use crate::ruby_api::sandbox::backend::{self, define_launches};
use crate::ruby_api::sandbox::launch::{self as la, core_policy, Launch, RubyWorkspace};
use crate::ruby_api::sandbox::probe;
use crate::ruby_api::sandbox::scoped_files;
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{ownership, sandbox};

/// The backend's own state, reached from the sandbox through one hidden slot
/// (no `@`: invisible to Ruby; the instance's own data belongs to
/// `LittleGhost::Sandbox`).
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Landlock::State",
    free_immediately,
    size,
    mark
)]
struct State {
    launcher: ll::Launcher,
    gateway: gateway::Slot,
}

impl DataTypeFunctions for State {
    fn mark(&self, marker: &Marker) {
        self.gateway.mark(marker);
    }
}

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let class = backend::define_class(ruby, little_ghost, "Landlock")?;
    class.const_set("MINIMUM_ABI", ll::MINIMUM_ABI)?;
    class.const_set("RUNTIME_ROOTS", frozen_strings(ruby, &bw::RUNTIME_ROOTS))?;
    class.const_set(
        "COMPATIBILITY_ROOTS",
        frozen_strings(ruby, &ll::COMPATIBILITY_ROOTS),
    )?;
    class.const_set("STARTUP_FILES", frozen_strings(ruby, &ll::STARTUP_FILES))?;
    class.const_set("DEVICES", frozen_strings(ruby, &ll::DEVICES))?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    class.define_singleton_method("backend_capabilities", function!(backend_capabilities, 0))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("tmpdir", method!(tmpdir, 0))?;
    class.define_method("gateway", method!(gateway_of, 0))?;
    scoped_files::define(class)?;
    define_launches!(class, Landlock);
    Ok(())
}

fn state(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static State, Error> {
    sandbox::backend_state(ruby, rb_self, "landlock")
}

// ---------------------------------------------------------------------------
// Probe and capabilities.

fn backend_capabilities(ruby: &Ruby) -> Result<Value, Error> {
    bwrb::claimed(ruby, Backend::Landlock, None)
}

/// `{available:, reason:, capabilities:, abi:, helper:, allowlist_unavailable:}`: the kernel's Landlock ABI (nil
/// without Landlock) and why `:allowlist` cannot be enforced here (nil when it can).
fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    probe_options(ruby, keywords_only(args)?)
}

/// [`probe`] of a keyword Hash (for Native).
pub(crate) fn probe_options(ruby: &Ruby, options: RHash) -> Result<RHash, Error> {
    let values = keywords(ruby, options, &[], &["platform"])?;
    let platform = convert::platform(ruby, platform_or_host(ruby, values[0])?)?;
    let found = host::probe(&platform);
    // Why :allowlist cannot be enforced here (the kernel piece missing), or nil.
    let allowlist = found
        .unavailable
        .is_none()
        .then(ll::allowlist_unavailable)
        .flatten();
    let result = probe::result(ruby, found.unavailable, || backend_capabilities(ruby))?;
    result.aset(ruby.to_symbol("abi"), found.abi)?;
    result.aset(ruby.to_symbol("allowlist_unavailable"), allowlist)?;
    // The helper file sealed at load (the supervisor runs from that copy), when it passed its checks.
    let helper = littleghost_sandbox_core::helper::sealed()
        .ok()
        .map(|sealed| convert::path_to_ruby(ruby, sealed.source()));
    result.aset(ruby.to_symbol("helper"), helper)?;
    Ok(result)
}

// ---------------------------------------------------------------------------
// Construction and lifecycle.

const OPTIONS: [&str; 7] = [
    "policy",
    "profiles",
    "limits",
    "platform",
    "runtime_roots",
    "process_limits",
    "cgroup",
];

/// Records the options; refuses `:allowlist` where the kernel cannot
/// intercept `connect` (the core's effective policy says what is missing).
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let options = keywords_only(args)?;
    let values = keywords(ruby, options, &["workspace"], &OPTIONS)?;
    let get = |index: usize| values[index + 1].filter(|v| !v.is_nil());
    sandbox::assign(ruby, rb_self, values[0].unwrap(), get(0), get(1), get(2))?;
    let platform = platform_or_host(ruby, get(3))?;
    crate::ruby_api::launch_limits::store_defaults(ruby, rb_self, get(5))?;
    crate::ruby_api::launch_limits::store_cgroup(ruby, rb_self, get(6))?;
    let runtime_roots = match get(4) {
        Some(roots) => bwrb::runtime_roots(ruby, roots)?,
        None => bw::RUNTIME_ROOTS.iter().map(PathBuf::from).collect(),
    };
    enforce(ruby, rb_self, Backend::Landlock)?;
    let state = State {
        launcher: ll::Launcher::new(convert::platform(ruby, platform)?, runtime_roots),
        gateway: Default::default(),
    };
    crate::ruby_api::sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

/// Checks the platform, the helper, the kernel and that every grant can be
/// enforced exactly; creates the private TMPDIR. Idempotent. With a block,
/// yields self, always closes and returns the block's value (H.4).
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    backend::open(ruby, rb_self, args, || open_steps(ruby, rb_self))
}

/// The core's `open` of the backend, with the workspace asked through
/// Ruby; under `:allowlist` then the gateway's (on failure `close` runs and
/// the error is re-raised, as B.5 step 7 does for Bubblewrap).
fn open_steps(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let state = state(ruby, rb_self)?;
    if state.launcher.tmpdir().is_some() {
        return Ok(());
    }
    let view = la::RubyWorkspace::of(ruby, rb_self);
    let policy = core_policy(ruby, rb_self)?;
    state
        .launcher
        .open(policy, &view)
        .map_err(|error| la::raised(ruby, error))?;
    let effective = sandbox::enforced_policy(ruby, rb_self.as_value())?;
    let close = || close(ruby, rb_self);
    state.gateway.open((ruby, rb_self), effective, None, close)
}

/// The gateway enforcing this sandbox's allowlist (resolved at the first `open`), or nil.
fn gateway_of(ruby: &Ruby, rb_self: SandboxObj) -> Result<Option<Value>, Error> {
    Ok(state(ruby, rb_self)?.gateway.value(ruby))
}

/// Terminates every program and session the sandbox or its scopes started
/// (H.4), removes the private TMPDIR, closes the gateway and marks the
/// sandbox unopened; idempotent.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    let state = state(ruby, rb_self)?;
    state.launcher.close();
    state.gateway.close(ruby, rb_self)
}

/// The private TMPDIR while open, else nil.
fn tmpdir(ruby: &Ruby, rb_self: SandboxObj) -> Result<Option<Value>, Error> {
    let tmpdir = state(ruby, rb_self)?.launcher.tmpdir();
    Ok(tmpdir
        .as_ref()
        .map(|t| convert::path_to_ruby(ruby, t.path()).as_value()))
}

// ---------------------------------------------------------------------------
// Launching.

/// The sandbox as its launches are prepared.
struct Landlock;

impl backend::Backend for Landlock {
    /// One launch under Landlock (LL.1): the rules and the helper's
    /// `supervise` command, by the core.
    fn prepare(
        ruby: &Ruby,
        rb_self: SandboxObj,
        _launch: &Launch,
        (policy, view): (&Policy, &RubyWorkspace),
        call: LaunchCall<Error>,
    ) -> Result<Prepared, LaunchError<Error>> {
        let state = state(ruby, rb_self).map_err(LaunchError::Caller)?;
        // Under `:allowlist` a launch opens the sandbox first, its gateway
        // included (otherwise the core opens it in the promised order).
        let effective = sandbox::enforced_policy(ruby, rb_self.as_value());
        let effective = effective.map_err(LaunchError::Caller)?;
        if gateway::allowlist_network(ruby, effective).is_some() {
            open_steps(ruby, rb_self).map_err(LaunchError::Caller)?;
        }
        let gateway = state.gateway.launch(ruby);
        let gateway = gateway.as_ref().map(|g| g as &dyn bw::Gateway<Error>);
        state.launcher.prepare(policy, view, call, gateway)
    }
}
