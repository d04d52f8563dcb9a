//! `LittleGhost::Sandboxes::Landlock` (SPEC LL.1): Landlock + seccomp for
//! hosts where user namespaces are blocked. The rules, the carving of nested
//! grants, the probe and Native's choice live in the core
//! (`backend::landlock`); the restriction is applied by the helper's
//! `supervise` mode to the child only. This file reads Ruby state, keeps the
//! backend's own state (opened, private TMPDIR) in a Rust object, and
//! launches through the shared process runner and sessions.

use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::effective::Backend;
use littleghost_sandbox_core::backend::landlock as ll;
use littleghost_sandbox_core::backend::landlock::host;
use littleghost_sandbox_core::launch::prepare::{Kind, Prepared};
use magnus::{
    function, method, prelude::*, DataTypeFunctions, Error, RHash, RModule, Ruby, TypedData, Value,
};

use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::ruby_api::bubblewrap::{self as bwrb, enforce, frozen_strings, platform_or_host};
use crate::ruby_api::sandbox::launch::{self as la, core_policy, ExecuteCall, Launch, StartCall};
use crate::ruby_api::sandbox::probe;
use crate::ruby_api::sandbox::scoped_files;
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{ownership, process_runner, sandbox};

/// The backend's own state, reached from the sandbox through one hidden slot
/// (no `@`: invisible to Ruby; the instance's own data belongs to
/// `LittleGhost::Sandbox`).
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Landlock::State",
    free_immediately,
    size
)]
struct State {
    launcher: ll::Launcher,
}

impl DataTypeFunctions for State {}

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class =
        sandboxes.define_class("Landlock", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    let state = class.define_class("State", ruby.class_object())?;
    state.undef_default_alloc_func();
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
    class.define_method("writable?", method!(bwrb::writable, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("tmpdir", method!(tmpdir, 0))?;
    scoped_files::define(class)?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
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

/// Why this host cannot run the backend, if it cannot.
pub(crate) fn unavailable_reason(platform: &str) -> Option<String> {
    host::probe(platform).unavailable
}

/// `{available:, reason:, capabilities:, abi:}`: the kernel's Landlock ABI (nil without Landlock).
fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    probe_options(ruby, keywords_only(args)?)
}

/// [`probe`] of a keyword Hash (for Native).
pub(crate) fn probe_options(ruby: &Ruby, options: RHash) -> Result<RHash, Error> {
    let values = keywords(ruby, options, &[], &["platform"])?;
    let platform = convert::platform(ruby, platform_or_host(ruby, values[0])?)?;
    let found = host::probe(&platform);
    let result = probe::result(ruby, found.unavailable, || backend_capabilities(ruby))?;
    result.aset(ruby.to_symbol("abi"), found.abi)?;
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

/// Records the options; refuses `:allowlist` (a port-only TCP rule cannot confine destinations).
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
    enforce(
        ruby,
        rb_self,
        Backend::Landlock,
        "LittleGhost::Sandboxes::Landlock",
    )?;
    let state = State {
        launcher: ll::Launcher::new(convert::platform(ruby, platform)?, runtime_roots),
    };
    crate::ruby_api::sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

/// Checks the platform, the helper, the kernel and that every grant can be
/// enforced exactly; creates the private TMPDIR. Idempotent. With a block,
/// yields self, always closes and returns the block's value (H.4).
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    la::open(ruby, rb_self, args, || open_steps(ruby, rb_self))
}

/// The core's `open` of the backend, with the workspace asked through Ruby.
fn open_steps(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let launcher = &state(ruby, rb_self)?.launcher;
    let view = la::RubyWorkspace::of(ruby, rb_self);
    let policy = core_policy(ruby, rb_self)?;
    launcher
        .open(policy, &view)
        .map_err(|error| la::raised(ruby, error))
}

/// Terminates every program and session the sandbox or its scopes started
/// (H.4), removes the private TMPDIR and marks the sandbox unopened; idempotent.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    state(ruby, rb_self)?.launcher.close();
    Ok(())
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

/// One launch of `launch`, prepared by the core (LL.1).
fn prepared(
    ruby: &Ruby,
    rb_self: SandboxObj,
    launch: &Launch,
    kind: Kind,
) -> Result<Prepared, Error> {
    let call = la::launch_call(ruby, launch, kind, true);
    let launcher = &state(ruby, rb_self)?.launcher;
    let view = la::RubyWorkspace::of(ruby, rb_self);
    let policy = core_policy(ruby, rb_self)?;
    launcher
        .prepare(policy, &view, call)
        .map_err(|error| la::raised(ruby, error))
}

/// Runs `command` (no shell) under Landlock and returns its Execution.
fn execute_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let call = ExecuteCall::parse(ruby, rb_self, args, true)?;
    let prepared = prepared(ruby, rb_self, &call.launch, Kind::Run)?;
    la::run(ruby, rb_self, prepared, call)
}

/// Starts `command` under Landlock as an owned ProcessSession.
fn start_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let call = StartCall::parse(ruby, rb_self, args, true)?;
    process_runner::check_context(call.launch.context)?;
    let prepared = prepared(ruby, rb_self, &call.launch, Kind::Session)?;
    la::start(ruby, rb_self, prepared, call)
}
