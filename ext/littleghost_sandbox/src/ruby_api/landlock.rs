//! `LittleGhost::Sandboxes::Landlock` (SPEC LL.1): Landlock + seccomp for
//! hosts where user namespaces are blocked. The rules, the carving of nested
//! grants, the probe and Native's choice live in the core
//! (`backend::landlock`); the restriction is applied by the helper's
//! `supervise` mode to the child only. This file reads Ruby state, keeps the
//! backend's own state (opened, private TMPDIR) in a Rust object, and
//! launches through the shared process runner and sessions.

use std::cell::RefCell;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::effective::Backend;
use littleghost_sandbox_core::backend::landlock as ll;
use littleghost_sandbox_core::backend::landlock_host as host;
use littleghost_sandbox_core::fs::anchor::Anchor;
use littleghost_sandbox_core::fs::own::OwnDirectory;
use littleghost_sandbox_core::launch::{LaunchRequest, Pins};
use magnus::{
    function, method, prelude::*, DataTypeFunctions, Error, RHash, RModule, Ruby, TypedData, Value,
};

use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::launch_args::{
    self as la, core_policy, launch_cwd, policy_grants, ExecuteCall, HostCommand, Launch, StartCall,
};
use crate::helpers::probe;
use crate::helpers::scoped_files;
use crate::ruby_api::bubblewrap::{self as bwrb, enforce, frozen_strings, platform_or_host};
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{errors, ownership, process_runner, sandbox, workspace};

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
    platform: String,
    runtime_roots: Vec<PathBuf>,
    /// The private TMPDIR while open, held by its handle.
    tmpdir: RefCell<Option<Arc<OwnDirectory>>>,
}

impl DataTypeFunctions for State {}

impl Drop for State {
    fn drop(&mut self) {
        if let Some(tmpdir) = self.tmpdir.take() {
            let _ = tmpdir.remove();
        }
    }
}

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
        platform: convert::platform(ruby, platform)?,
        runtime_roots,
        tmpdir: RefCell::new(None),
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

/// No borrow of the state is held across the calls into Ruby.
fn open_steps(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let state = state(ruby, rb_self)?;
    if state.tmpdir.borrow().is_some() {
        return Ok(());
    }
    errors::core_result(ruby, host::require(&state.platform))?;
    let grants = policy_grants(ruby, rb_self)?;
    let policy = core_policy(ruby, rb_self)?;
    let tmpdir = host::prepare(
        policy.root_filesystem,
        &state.runtime_roots,
        &grants,
        &policy.protect,
    );
    let tmpdir = errors::core_result(ruby, tmpdir)?;
    // Another thread may have opened the sandbox meanwhile: keep its directory.
    if state.tmpdir.borrow().is_some() {
        let _ = tmpdir.remove();
    } else {
        state.tmpdir.replace(Some(Arc::new(tmpdir)));
    }
    Ok(())
}

/// Terminates every program and session the sandbox or its scopes started
/// (H.4), removes the private TMPDIR and marks the sandbox unopened; idempotent.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    if let Some(tmpdir) = state(ruby, rb_self)?.tmpdir.take() {
        let _ = tmpdir.remove();
    }
    Ok(())
}

/// The private TMPDIR while open, else nil.
fn tmpdir(ruby: &Ruby, rb_self: SandboxObj) -> Result<Option<Value>, Error> {
    let tmpdir = state(ruby, rb_self)?.tmpdir.borrow().clone();
    Ok(tmpdir
        .as_ref()
        .map(|t| convert::path_to_ruby(ruby, t.path()).as_value()))
}

// ---------------------------------------------------------------------------
// Launching.

/// Plans the launch through the one launch plan (environment merge and
/// opt-in, network, working directory) and the core's Landlock rules, and
/// builds `[helper, "supervise", *rules, "--", *command]`.
fn wrap_command(
    ruby: &Ruby,
    rb_self: SandboxObj,
    call: &Launch,
    requested_subprocesses: Option<bool>,
) -> Result<(HostCommand, (Vec<Anchor>, OwnedFd)), Error> {
    let argv = convert::argv(ruby, call.command)?;
    open_steps(ruby, rb_self)?;
    let scope = la::scope_view(ruby, call.scope)?;
    let allow = la::subprocesses(ruby, scope.as_ref(), requested_subprocesses)?;
    let core = core_policy(ruby, rb_self)?;
    let mut request = LaunchRequest::new(
        core,
        call.inherit,
        launch_cwd(ruby, rb_self, call.cwd, true)?,
    );
    request.scope_network = scope.as_ref().and_then(|scope| scope.network);
    request.selected = scope.as_ref().map(|scope| scope.grants.clone());
    request.policy_grants = policy_grants(ruby, rb_self)?;
    // The grants are reached through the workspace's handles.
    let anchors = workspace::anchors_of(sandbox::workspace_of(ruby, rb_self.as_value()));
    let pins = Pins::capture_from(&request.policy_grants, anchors.as_deref());
    let pins = errors::core_result(ruby, pins)?;
    request.pins = Some(&pins);
    let mut launch = la::plan(ruby, rb_self, call.environment, request)?;
    let state = state(ruby, rb_self)?;
    let tmpdir = state.tmpdir.borrow().clone().ok_or_else(|| {
        errors::tool_error(ruby, "the landlock sandbox was closed during the launch")
    })?;
    let workspace = sandbox::workspace_of(ruby, rb_self.as_value());
    let workspace_directories = la::workspace_directories(ruby, workspace)?;
    let sandbox = ll::launch::Sandbox {
        root: core.root_filesystem,
        runtime_roots: &state.runtime_roots,
        tmpdir: tmpdir.path(),
        workspace_directories: &workspace_directories,
    };
    let scoped = scope.is_some();
    let program = argv.first().cloned();
    let supervised = host::command(sandbox, &tmpdir, &mut launch, scoped, allow, argv, &pins);
    let supervised = errors::core_result(ruby, supervised)?;
    let mut host = HostCommand::planned(supervised.argv, launch);
    host.wrapped_program = program;
    host.exec_fd = Some(supervised.executable_fd);
    host.keep_fds = supervised
        .anchors
        .iter()
        .map(|a| a.fd().as_raw_fd())
        .chain([supervised.tmpdir.as_raw_fd()])
        .collect();
    Ok((host, (supervised.anchors, supervised.tmpdir)))
}

/// Runs `command` (no shell) under Landlock and returns its Execution.
fn execute_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let call = ExecuteCall::parse(ruby, rb_self, args, true)?;
    let (host, _anchors) =
        wrap_command(ruby, rb_self, &call.launch, call.launch.allow_subprocesses)?;
    la::run(ruby, rb_self, host, call)
}

/// Starts `command` under Landlock as an owned ProcessSession.
fn start_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let call = StartCall::parse(ruby, rb_self, args, true)?;
    // nil means the default (H.6), which here is true.
    let requested = Some(call.launch.allow_subprocesses.unwrap_or(true));
    process_runner::check_context(call.launch.context)?;
    let (host, _anchors) = wrap_command(ruby, rb_self, &call.launch, requested)?;
    la::start(ruby, rb_self, host, call)
}
