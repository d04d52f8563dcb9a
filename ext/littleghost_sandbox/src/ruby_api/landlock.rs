//! `LittleGhost::Sandboxes::Landlock` (SPEC LL.1): Landlock + seccomp for
//! hosts where user namespaces are blocked. The rules, the carving of nested
//! grants, the probe and Native's choice live in the core
//! (`backend::landlock`); the restriction is applied by the helper's
//! `supervise` mode to the child only. This file reads Ruby state, keeps the
//! backend's own state (opened, private TMPDIR) in a Rust object, and
//! launches through the shared process runner and sessions.

use std::path::PathBuf;
use std::sync::Mutex;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::landlock as ll;
use littleghost_sandbox_core::grants::{Access, Grant};
use littleghost_sandbox_core::helper;
use magnus::{
    function, gc::Marker, method, prelude::*, typed_data::Obj, value::Opaque, DataTypeFunctions,
    Error, RArray, RHash, RModule, Ruby, Symbol, TypedData, Value,
};

use crate::helpers::args::{command_call, keywords, keywords_only};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::probe;
use crate::helpers::scoped_files;
use crate::helpers::value_object as vo;
use crate::ruby_api::bubblewrap::{
    self as bwrb, frozen_strings, launch_cwd, platform_or_host, policy_grants, scope_network,
    validated_scope, HostCommand,
};
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{capabilities, errors, mount, ownership, process_runner, sandbox};
use littleghost_sandbox_core::launch;

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
    /// The requested policy with a nil network filled in as `:none`.
    effective_policy: Opaque<Value>,
    inner: Mutex<Inner>,
}

impl DataTypeFunctions for State {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.effective_policy);
    }
}

struct Inner {
    platform: String,
    runtime_roots: Vec<PathBuf>,
    /// The private TMPDIR while open.
    tmpdir: Option<PathBuf>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(tmpdir) = self.tmpdir.take() {
            let _ = std::fs::remove_dir_all(tmpdir);
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
    class.define_method("effective_policy", method!(effective_policy, 0))?;
    class.define_method("capabilities", method!(capabilities_of, 0))?;
    class.define_method("writable?", method!(bwrb::writable, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("tmpdir", method!(tmpdir, 0))?;
    scoped_files::define(class)?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
    Ok(())
}

fn state(rb_self: SandboxObj) -> Result<Obj<State>, Error> {
    let ruby = Ruby::get_with(rb_self);
    crate::ruby_api::sandbox::backend_value(&ruby, rb_self)
        .ok_or_else(|| errors::tool_error(&ruby, "landlock sandbox is not initialized"))
        .and_then(Obj::<State>::try_convert)
}

// ---------------------------------------------------------------------------
// Probe and capabilities.

const FEATURES: [&str; 8] = [
    "filesystem_read",
    "filesystem_list",
    "filesystem_write",
    "filesystem_replace",
    "process_execute",
    "process_spawn",
    // The helper's subreaper supervisor kills every descendant when the
    // command ends, and on TERM.
    "process_tree_ownership",
    "process_spawn_denial",
];

const NETWORK_MODES: [&str; 2] = ["inherit", "none"];

fn backend_capabilities(ruby: &Ruby) -> Result<Value, Error> {
    let mut features = FEATURES.to_vec();
    features.extend(crate::ruby_api::launch_limits::features());
    capabilities::build(ruby, &features, &NETWORK_MODES, "landlock")
}

/// Why this host cannot run the backend, if it cannot.
pub(crate) fn unavailable_reason(platform: &str) -> (Option<i32>, Option<String>) {
    if !platform.contains("linux") {
        return (None, Some("Landlock is supported only on Linux".into()));
    }
    if helper::path().is_none() {
        return (None, Some(helper::missing_reason()));
    }
    let found = ll::probe();
    (found.abi, found.unavailable)
}

/// `{available:, reason:, capabilities:, abi:}`: the kernel's Landlock ABI (nil without Landlock).
fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    let options = keywords_only(args)?;
    let values = keywords(ruby, options, &[], &["platform"])?;
    let platform = convert::display_string(ruby, platform_or_host(ruby, values[0])?)?;
    let (abi, unavailable) = unavailable_reason(&platform);
    let result = probe::result(ruby, unavailable, || backend_capabilities(ruby))?;
    result.aset(ruby.to_symbol("abi"), abi)?;
    Ok(result)
}

fn capabilities_of(ruby: &Ruby, _rb_self: SandboxObj) -> Result<Value, Error> {
    backend_capabilities(ruby)
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
    let roots = get(4).unwrap_or_else(|| frozen_strings(ruby, &bw::RUNTIME_ROOTS).as_value());
    let mut runtime_roots = Vec::new();
    for root in RArray::try_convert(vo::kernel(ruby, "Array", roots)?)?.into_iter() {
        let root = vo::expand_path(ruby, vo::kernel(ruby, "String", root)?, None)?;
        runtime_roots.push(convert::string_path(root.as_value())?);
    }
    let requested = sandbox::requested_policy(ruby, rb_self.as_value());
    let effective = bwrb::policy_with_network_default(ruby, requested)?;
    let network: Value = effective.funcall("network", ())?;
    if network.funcall::<_, _, Value>("allowlist?", ())?.to_bool() {
        return Err(errors::capability_error(
            ruby,
            "the landlock sandbox cannot enforce network mode :allowlist: Landlock confines TCP by port only, not by destination",
        ));
    }
    let inner = Inner {
        platform: convert::display_string(ruby, platform)?,
        runtime_roots,
        tmpdir: None,
    };
    let state = State {
        effective_policy: Opaque::from(effective),
        inner: Mutex::new(inner),
    };
    crate::ruby_api::sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

/// Checks the platform, the helper, the kernel and that every grant can be
/// enforced exactly; creates the private TMPDIR. Idempotent. With a block,
/// yields self, always closes and returns the block's value (H.4).
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    keywords(ruby, options, &[], &["run"])?;
    open_steps(ruby, rb_self)?;
    ownership::yield_and_close(ruby, rb_self.as_value())
}

fn open_steps(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let state = state(rb_self)?;
    let mut inner = state.inner.lock().unwrap();
    if inner.tmpdir.is_some() {
        return Ok(());
    }
    if !inner.platform.contains("linux") {
        return Err(errors::unsupported_platform_error(
            ruby,
            "Landlock sandboxing is supported only on Linux",
        ));
    }
    if let (_, Some(reason)) = unavailable_reason(&inner.platform) {
        return Err(errors::dependency_error(ruby, reason));
    }
    let grants = policy_grants(ruby, rb_self.as_value())?;
    for grant in &grants {
        if !grant.source.is_dir() {
            return Err(errors::policy_error(
                ruby,
                "sandbox mount source is not a directory",
            ));
        }
    }
    let tmpdir = errors::core_result(ruby, ll::private_tmpdir())?;
    // A dry run of the carving: a grant it cannot express is refused now.
    let checked = launch_plan(
        ruby,
        rb_self,
        &inner.runtime_roots,
        &tmpdir,
        &grants,
        true,
        false,
    )
    .and_then(|plan| errors::core_result(ruby, ll::expand(&plan.rules)).map(|_| ()));
    if let Err(error) = checked {
        let _ = std::fs::remove_dir_all(&tmpdir);
        return Err(error);
    }
    inner.tmpdir = Some(tmpdir);
    Ok(())
}

/// Terminates every program and session the sandbox or its scopes started
/// (H.4), removes the private TMPDIR and marks the sandbox unopened; idempotent.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    let state = state(rb_self)?;
    let mut inner = state.inner.lock().unwrap();
    if let Some(tmpdir) = inner.tmpdir.take() {
        let _ = std::fs::remove_dir_all(tmpdir);
    }
    Ok(())
}

/// The private TMPDIR while open, else nil.
fn tmpdir(ruby: &Ruby, rb_self: SandboxObj) -> Result<Option<Value>, Error> {
    let state = state(rb_self)?;
    let inner = state.inner.lock().unwrap();
    Ok(inner
        .tmpdir
        .as_ref()
        .map(|t| convert::path_to_ruby(ruby, t).as_value()))
}

// ---------------------------------------------------------------------------
// Launching.

/// The plan of one launch. A grant shown at another path than its source
/// cannot be expressed without a mount namespace: CapabilityError.
fn launch_plan(
    ruby: &Ruby,
    rb_self: SandboxObj,
    runtime_roots: &[PathBuf],
    tmpdir: &std::path::Path,
    grants: &[Grant],
    network_none: bool,
    deny_subprocesses: bool,
) -> Result<ll::Plan, Error> {
    let mut planned = Vec::with_capacity(grants.len());
    for grant in grants {
        if grant.source != grant.target {
            return Err(errors::capability_error(
                ruby,
                format!(
                    "the landlock sandbox cannot show {} at {}: it has no mount namespace",
                    grant.source.display(),
                    grant.target.display()
                ),
            ));
        }
        planned.push(ll::Grant {
            path: grant.source.clone(),
            writable: grant.access == Access::ReadWrite,
        });
    }
    let root = root_mode(ruby, rb_self)?;
    errors::core_result(
        ruby,
        ll::plan(
            root,
            &planned,
            runtime_roots,
            tmpdir,
            network_none,
            deny_subprocesses,
        ),
    )
}

/// The effective policy's root mode.
fn root_mode(ruby: &Ruby, rb_self: SandboxObj) -> Result<ll::RootMode, Error> {
    let policy: Value = rb_self.funcall("effective_policy", ())?;
    let root: Symbol = policy.funcall("root_filesystem", ())?;
    match root.name()?.as_ref() {
        "isolated" => Ok(ll::RootMode::Isolated),
        "read_only" => Ok(ll::RootMode::ReadOnly),
        "read_write" => Ok(ll::RootMode::ReadWrite),
        _ => Err(errors::policy_error(ruby, "unsupported root_filesystem")),
    }
}

/// Grants as the Landlock plan names them (by physical path).
fn landlock_grants(grants: &[Grant]) -> Vec<ll::Grant> {
    grants
        .iter()
        .map(|grant| ll::Grant {
            path: grant.source.clone(),
            writable: grant.access == Access::ReadWrite,
        })
        .collect()
}

/// The policy `new` settled (the requested one, network defaulting to `:none`).
fn effective_policy(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(rb_self)?.effective_policy))
}

/// Validates the launch through the one launch plan (environment merge and
/// opt-in, network, working directory) and builds
/// `[helper, "supervise", *rules, "--", *command]`.
#[allow(clippy::too_many_arguments)] // the Ruby method's arguments, passed through
fn wrap_command(
    ruby: &Ruby,
    rb_self: SandboxObj,
    command: Value,
    scope: Option<Value>,
    cwd: Option<Value>,
    environment: Option<Value>,
    inherit: Option<Value>,
    allow_subprocesses: bool,
) -> Result<HostCommand, Error> {
    let argv = convert::argv(ruby, command)?;
    let _: Value = rb_self.funcall("open", ())?;
    let scope = validated_scope(scope)?;
    let selected = match scope {
        None => None,
        Some(scope) => Some(
            RArray::try_convert(scope.funcall("process_grants", ())?)?
                .into_iter()
                .map(|m| mount::grant_from_ruby(ruby, m))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let policy_value: Value = rb_self.funcall("effective_policy", ())?;
    let Some(policy) = crate::ruby_api::policy::borrow(policy_value) else {
        return Err(errors::policy_error(
            ruby,
            "sandbox effective_policy must be a LittleGhost::Sandbox::Policy",
        ));
    };
    let core = policy.core().clone();
    let request = launch::LaunchRequest {
        policy_environment: &core.environment,
        call_inherit: inherit.is_some_and(|v| v.to_bool()),
        scope_network: scope_network(scope)?,
        policy_network: core.network.as_ref(),
        policy_grants: policy_grants(ruby, rb_self.as_value())?,
        selected,
        require_utf8_paths: false,
        pins: None,
        cwd: launch_cwd(ruby, rb_self.as_value(), cwd)?,
        fresh_directories: &[],
        filter: launch::Filter::Off,
        gateway_environment: None,
    };
    let layers = || -> Result<launch::Layers, Error> {
        let workspace: Value = rb_self.funcall("workspace", ())?;
        Ok((
            convert::environment(ruby, Some(workspace.funcall("environment", ())?))?,
            convert::environment(ruby, environment)?,
        ))
    };
    let launch = launch::plan(request, layers, |e| errors::from_core(ruby, e))?;
    if scope.is_some() {
        // W12: what the scope left out must stay out of reach, or the launch is refused.
        errors::core_result(
            ruby,
            ll::refuse_unhidable(
                root_mode(ruby, rb_self)?,
                &landlock_grants(&launch.policy_grants),
                &landlock_grants(&launch.selected),
            ),
        )?;
    }
    let network_none = launch.network == bw::NetworkMode::None;
    let state = state(rb_self)?;
    let (runtime_roots, tmpdir) = {
        let inner = state.inner.lock().unwrap();
        let tmpdir = inner.tmpdir.clone().ok_or_else(|| {
            errors::tool_error(ruby, "the landlock sandbox was closed during the launch")
        })?;
        (inner.runtime_roots.clone(), tmpdir)
    };
    let plan = launch_plan(
        ruby,
        rb_self,
        &runtime_roots,
        &tmpdir,
        &launch.selected,
        network_none,
        !allow_subprocesses,
    )?;
    if !ll::cwd_allowed(&plan, &launch.cwd) {
        return Err(errors::policy_error(
            ruby,
            "sandbox working directory is outside the selected scope",
        ));
    }
    let mut merged = launch.environment;
    let tmp_text = convert::path_text(ruby, &tmpdir, "TMPDIR")?;
    merged.retain(|(name, _)| name != "TMPDIR");
    merged.push(("TMPDIR".into(), tmp_text));
    let helper_path =
        helper::path().ok_or_else(|| errors::dependency_error(ruby, helper::missing_reason()))?;
    let mut full = vec![
        convert::path_text(ruby, &helper_path, "helper path")?,
        "supervise".into(),
    ];
    full.extend(plan.to_args());
    full.push("--".into());
    full.extend(argv);
    Ok(HostCommand {
        argv: full,
        environment: merged,
        inherit_environment: launch.inherit_environment,
        chdir: Some(launch.cwd),
        keep_fds: Vec::new(),
        exec_argv0: None,
    })
}

fn scope_allows_spawn(ruby: &Ruby, scope: Option<Value>) -> Result<bool, Error> {
    match scope.filter(|v| !v.is_nil()) {
        None => Ok(true),
        Some(scope) => Ok(scope
            .funcall::<_, _, Value>("supports?", (ruby.to_symbol("process_spawn"),))?
            .to_bool()),
    }
}

/// Runs `command` (no shell) under Landlock and returns its Execution.
fn execute_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let (command, values) = command_call(ruby, args, &["timeout"], &bwrb::EXECUTE_KEYS)?;
    let [timeout, context, max_output_bytes, environment, inherit, scope, cwd] = [
        values[0], values[1], values[2], values[3], values[4], values[5], values[6],
    ];
    let (timeout, max_output_bytes) = bwrb::run_limits(
        ruby,
        rb_self,
        timeout.unwrap(),
        max_output_bytes.filter(|v| !v.is_nil()),
    )?;
    let limits = bwrb::run_plan(ruby, rb_self, &values)?;
    let allow = scope_allows_spawn(ruby, scope)?;
    let host = wrap_command(
        ruby,
        rb_self,
        command,
        scope,
        cwd,
        environment,
        inherit,
        allow,
    )?;
    bwrb::run_host(
        ruby,
        rb_self,
        host,
        timeout,
        context.filter(|v| !v.is_nil()),
        (max_output_bytes, values[7].is_some_and(|v| v.to_bool())),
        limits,
    )
}

/// Starts `command` under Landlock as an owned ProcessSession.
fn start_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let keys = bwrb::START_KEYS;
    let (command, values) = command_call(ruby, args, &[], &keys)?;
    let get =
        |name: &str| values[keys.iter().position(|k| *k == name).unwrap()].filter(|v| !v.is_nil());
    let allow = get("allow_subprocesses")
        .map(|v| v.to_bool())
        .unwrap_or(true);
    let scope = get("scope");
    if allow && !scope_allows_spawn(ruby, scope)? {
        return Err(errors::capability_error(
            ruby,
            "sandbox scope does not allow subprocess creation",
        ));
    }
    let limits = bwrb::session_limits(ruby, rb_self, &get)?;
    process_runner::check_context(get("context"))?;
    let host = wrap_command(
        ruby,
        rb_self,
        command,
        scope,
        get("cwd"),
        get("environment"),
        get("inherit_environment"),
        allow,
    )?;
    bwrb::start_host(ruby, rb_self, host, limits)
}
