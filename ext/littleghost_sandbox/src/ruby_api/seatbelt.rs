//! `LittleGhost::Sandboxes::Seatbelt` (SPEC §16, §21): macOS `sandbox-exec`
//! with a deny-default profile built by the core (`backend::seatbelt`). On
//! any other platform `open` (and so every launch) raises
//! UnsupportedPlatformError; there is no fallback.

use std::cell::RefCell;
use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap::RootFilesystem;
use littleghost_sandbox_core::backend::seatbelt as sb;
use littleghost_sandbox_core::launch;
use magnus::{
    function, gc::Marker, method, prelude::*, value::Opaque, DataTypeFunctions, Error, KwArgs,
    RArray, RHash, RModule, Ruby, Symbol, TypedData, Value,
};

use crate::helpers::args::{command_call, keywords, keywords_only, kwargs};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::probe;
use crate::helpers::scoped_files;
use crate::helpers::value_object as vo;
use crate::ruby_api::bubblewrap::{self as shared, launch_cwd, option_path, HostCommand};
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{capabilities, errors, mount, ownership, policy, sandbox};

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class =
        sandboxes.define_class("Seatbelt", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    class.const_set(
        "DEFAULT_EXECUTABLE",
        vo::frozen_str(ruby, sb::DEFAULT_EXECUTABLE),
    )?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    class.define_singleton_method("backend_capabilities", function!(backend_capabilities, 0))?;
    let state = class.define_class("State", ruby.class_object())?;
    state.undef_default_alloc_func();
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("effective_policy", method!(effective_policy, 0))?;
    class.define_method("capabilities", method!(capabilities_of, 0))?;
    class.define_method("writable?", method!(shared::writable, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    scoped_files::define(class)?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
    Ok(())
}

/// The backend's state (SB.3), reached from the sandbox through one hidden
/// slot (the instance's own data belongs to `LittleGhost::Sandbox`).
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Seatbelt::State",
    free_immediately,
    size,
    mark
)]
struct State {
    /// `String(executable:)`, kept as given (the messages show it).
    executable: Opaque<Value>,
    platform: Opaque<Value>,
    effective_policy: Opaque<Value>,
    /// The private temporary directory of an open sandbox.
    temp_dir: RefCell<Option<Opaque<Value>>>,
}

impl DataTypeFunctions for State {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.executable);
        marker.mark(self.platform);
        marker.mark(self.effective_policy);
        if let Some(dir) = *self.temp_dir.borrow() {
            marker.mark(dir);
        }
    }
}

/// The backend state of `rb_self` (set by `initialize`).
fn state(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static State, Error> {
    crate::ruby_api::sandbox::backend_state(ruby, rb_self, "seatbelt")
}

const FEATURES: [&str; 7] = [
    "filesystem_read",
    "filesystem_list",
    "filesystem_write",
    "filesystem_replace",
    "process_execute",
    "process_spawn",
    "process_spawn_denial",
];
const NETWORK_MODES: [&str; 2] = ["inherit", "none"];

/// The capabilities of the Seatbelt backend before policy adjustments (SB.2).
fn backend_capabilities(ruby: &Ruby) -> Result<Value, Error> {
    capabilities::build(ruby, &FEATURES, &NETWORK_MODES, "seatbelt")
}

fn requires_macos(executable: &str) -> String {
    format!("Seatbelt sandboxing requires macOS and {executable}")
}

/// Reports whether `sandbox-exec` is usable here: only on macOS with the executable present.
fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    let options = keywords_only(args)?;
    let values = keywords(ruby, options, &[], &["executable", "platform"])?;
    let executable = match values[0].filter(|v| !v.is_nil()) {
        Some(value) => option_path(ruby, value)?,
        None => PathBuf::from(sb::DEFAULT_EXECUTABLE),
    };
    let platform = convert::display_string(ruby, shared::platform_or_host(ruby, values[1])?)?;
    let available = platform.contains("darwin") && executable.exists();
    let unavailable = (!available).then(|| requires_macos(&executable.to_string_lossy()));
    probe::result(ruby, unavailable, || backend_capabilities(ruby))
}

/// Records the executable and platform (SB.3) without touching the host.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let options = keywords_only(args)?;
    let values = keywords(
        ruby,
        options,
        &["workspace"],
        &[
            "policy",
            "profiles",
            "limits",
            "executable",
            "platform",
            "process_limits",
        ],
    )?;
    let get = |i: usize| values[i].filter(|v| !v.is_nil());
    sandbox::assign(ruby, rb_self, values[0].unwrap(), get(1), get(2), get(3))?;
    let executable = match get(4) {
        Some(value) => vo::kernel(ruby, "String", value)?,
        None => vo::frozen_str(ruby, sb::DEFAULT_EXECUTABLE).as_value(),
    };
    // No cgroups on macOS: memory is sampled, CPU per process, tasks refused (L.3).
    crate::ruby_api::launch_limits::store_defaults(ruby, rb_self, get(6))?;
    let platform = shared::platform_or_host(ruby, get(5))?;
    let requested = sandbox::requested_policy(ruby, rb_self.as_value());
    let state = State {
        executable: Opaque::from(executable),
        platform: Opaque::from(platform),
        effective_policy: Opaque::from(shared::policy_with_network_default(ruby, requested)?),
        temp_dir: RefCell::new(None),
    };
    crate::ruby_api::sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

/// The requested policy, with a nil network filled in as `:none`.
fn effective_policy(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.effective_policy))
}

/// SB.2: the backend capabilities, without `process_spawn` under an isolated root.
fn capabilities_of(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    let policy: Value = rb_self.funcall("effective_policy", ())?;
    let root: Symbol = policy.funcall("root_filesystem", ())?;
    if root.name()? == "isolated" {
        let features: Vec<&str> = FEATURES
            .iter()
            .copied()
            .filter(|f| *f != "process_spawn")
            .collect();
        return capabilities::build(ruby, &features, &NETWORK_MODES, "seatbelt");
    }
    backend_capabilities(ruby)
}

fn temp_dir(rb_self: SandboxObj) -> Result<Option<Value>, Error> {
    let ruby = Ruby::get_with(rb_self);
    let dir = *state(&ruby, rb_self)?.temp_dir.borrow();
    Ok(dir.map(|dir| ruby.get_inner(dir)))
}

/// SB.4: checks platform, executable and network, validates the workspace and creates a private temporary directory; idempotent.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    keywords(ruby, options, &[], &["run"])?;
    if temp_dir(rb_self)?.is_none() {
        open_steps(ruby, rb_self)?;
    }
    ownership::yield_and_close(ruby, rb_self.as_value())
}

fn open_steps(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let state = state(ruby, rb_self)?;
    let executable = convert::display_string(ruby, ruby.get_inner(state.executable))?;
    let platform = convert::display_string(ruby, ruby.get_inner(state.platform))?;
    if !platform.contains("darwin") {
        return Err(errors::unsupported_platform_error(
            ruby,
            requires_macos(&executable),
        ));
    }
    if !std::path::Path::new(&executable).exists() {
        return Err(errors::dependency_error(
            ruby,
            format!("Seatbelt executable is missing: {executable}"),
        ));
    }
    let policy: Value = rb_self.funcall("effective_policy", ())?;
    let network: Value = policy.funcall("network", ())?;
    if network.funcall::<_, _, Value>("allowlist?", ())?.to_bool() {
        return Err(errors::capability_error(
            ruby,
            "Seatbelt does not implement allowlisted network egress",
        ));
    }
    let workspace: Value = rb_self.funcall("workspace", ())?;
    let _: Value = workspace.funcall("validate!", ())?;
    let _: bool = ruby.require("tmpdir")?;
    let dir_class: Value = ruby.class_object().const_get("Dir")?;
    let created: Result<Value, Error> = dir_class.funcall("mktmpdir", ("little-ghost-seatbelt-",));
    match created {
        Ok(dir) => {
            state.temp_dir.replace(Some(Opaque::from(dir)));
        }
        Err(error) => {
            let _ = close(ruby, rb_self);
            return Err(error);
        }
    }
    Ok(())
}

/// Terminates every program and session the sandbox or its scopes started (H.4), then removes the private temporary directory; idempotent.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    if let Some(dir) = temp_dir(rb_self)? {
        state(ruby, rb_self)?.temp_dir.replace(None);
        let _: bool = ruby.require("fileutils")?;
        let fileutils: Value = ruby.class_object().const_get("FileUtils")?;
        let _: Value = fileutils.funcall("rm_rf", (dir,))?;
    }
    Ok(())
}

/// SB.6 runtime roots: system trees, Ruby's prefix and libdir and Homebrew's
/// gmp, each in expanded and realpath form.
fn runtime_roots(ruby: &Ruby) -> Result<Vec<PathBuf>, Error> {
    let mut roots: Vec<PathBuf> = sb::RUNTIME_ROOTS.iter().map(PathBuf::from).collect();
    let _: bool = ruby.require("rbconfig")?;
    let rbconfig: Value = ruby.class_object().const_get("RbConfig")?;
    let config: RHash = rbconfig.funcall("const_get", ("CONFIG",))?;
    for key in ["prefix", "libdir"] {
        if let Some(value) = config.get(key) {
            roots.push(convert::path_of(vo::expand_path(ruby, value, None)?));
        }
    }
    roots.push("/opt/homebrew/opt/gmp".into());
    roots.push("/usr/local/opt/gmp".into());
    let mut out: Vec<PathBuf> = Vec::new();
    for root in roots {
        if let Ok(real) = std::fs::canonicalize(&root) {
            if !out.contains(&real) {
                out.push(real);
            }
        }
        if !out.contains(&root) {
            out.push(root);
        }
    }
    Ok(out)
}

/// The Ruby-side inputs of one sandbox-exec launch.
struct Launch {
    scope: Value,
    grants: Vec<littleghost_sandbox_core::grants::Grant>,
    cwd: Option<Value>,
    environment: Option<Value>,
    inherit: Option<Value>,
}

/// The core launch plan (16.4, 17.6, B.7): environment, opt-in, network, cwd.
fn planned(
    ruby: &Ruby,
    rb_self: SandboxObj,
    core: &littleghost_sandbox_core::policy::Policy,
    call: Launch,
) -> Result<launch::LaunchPlan, Error> {
    let request = launch::LaunchRequest {
        policy_environment: &core.environment,
        call_inherit: call.inherit.is_some_and(|v| v.to_bool()),
        scope_network: shared::scope_network(Some(call.scope))?,
        policy_network: core.network.as_ref(),
        policy_grants: Vec::new(),
        selected: Some(call.grants),
        require_utf8_paths: false,
        pins: None,
        cwd: launch_cwd(ruby, rb_self.as_value(), call.cwd)?,
        fresh_directories: &[],
        filter: launch::Filter::Off,
        gateway_environment: None,
    };
    let layers = || -> Result<launch::Layers, Error> {
        let workspace: Value = rb_self.funcall("workspace", ())?;
        Ok((
            convert::environment(ruby, Some(workspace.funcall("environment", ())?))?,
            convert::environment(ruby, call.environment)?,
        ))
    };
    launch::plan(request, layers, |e| errors::from_core(ruby, e))
}

/// The sandbox-exec command for `command` under `scope` (SB.5, SB.6).
#[allow(clippy::too_many_arguments)] // the Ruby method's arguments, passed through as they are
fn seatbelt_command(
    ruby: &Ruby,
    rb_self: SandboxObj,
    command: Value,
    scope: Option<Value>,
    cwd: Option<Value>,
    environment: Option<Value>,
    inherit: Option<Value>,
    allow_subprocesses: Option<bool>,
) -> Result<HostCommand, Error> {
    let argv = convert::argv(ruby, command)?;
    if temp_dir(rb_self)?.is_none() {
        let _: Value = rb_self.funcall("open", ())?;
    }
    let scope = match scope.filter(|v| !v.is_nil()) {
        Some(scope) => scope,
        None => {
            let class = constants::class(ruby, "LittleGhost::Sandbox::Scope")?;
            class.funcall(
                "new",
                (KwArgs(kwargs(ruby, &[("sandbox", rb_self.as_value())])?),),
            )?
        }
    };
    let _: Value = scope.funcall("validate!", ())?;
    let scope_spawns: bool = scope
        .funcall::<_, _, Value>("supports?", (ruby.to_symbol("process_spawn"),))?
        .to_bool();
    let allow = allow_subprocesses.unwrap_or(scope_spawns);
    if allow && !scope_spawns {
        return Err(errors::capability_error(
            ruby,
            "sandbox scope does not allow subprocess creation",
        ));
    }
    let grants = RArray::try_convert(scope.funcall("process_grants", ())?)?
        .into_iter()
        .map(|m| mount::grant_from_ruby(ruby, m))
        .collect::<Result<Vec<_>, _>>()?;
    let policy_value: Value = rb_self.funcall("effective_policy", ())?;
    let Some(policy) = policy::borrow(policy_value) else {
        return Err(errors::policy_error(ruby, "unsupported effective policy"));
    };
    let core = policy.core();
    let root_filesystem = RootFilesystem::parse(core.root_filesystem.name())
        .ok_or_else(|| errors::policy_error(ruby, "unsupported root_filesystem"))?;
    let launch = Launch {
        scope,
        grants,
        cwd,
        environment,
        inherit,
    };
    let plan = planned(ruby, rb_self, core, launch)?;
    let temp = convert::string_path(temp_dir(rb_self)?.unwrap())?;
    let profile = sb::profile(&sb::Profile {
        root_filesystem,
        grants: plan.selected,
        runtime_roots: runtime_roots(ruby)?,
        temp_dir: temp.clone(),
        allow_subprocesses: allow,
        network_inherit: plan.network == launch::NetworkMode::Inherit,
    });
    let mut environment = plan.environment;
    environment.retain(|(name, _)| name != "TMPDIR");
    environment.push((
        "TMPDIR".into(),
        convert::path_text(ruby, &temp, "Seatbelt temporary directory")?,
    ));
    let executable = convert::path_text(
        ruby,
        &option_path(ruby, ruby.get_inner(state(ruby, rb_self)?.executable))?,
        "Seatbelt executable path",
    )?;
    let mut full: Vec<String> = vec![executable, "-p".into(), profile, "--".into()];
    full.extend(argv);
    Ok(HostCommand {
        argv: full,
        environment,
        inherit_environment: plan.inherit_environment,
        chdir: Some(plan.cwd),
        keep_fds: Vec::new(),
        exec_argv0: None,
    })
}

/// Runs `command` (no shell) under sandbox-exec and returns its Execution (SB.7).
fn execute_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let (command, values) = command_call(ruby, args, &["timeout"], &shared::EXECUTE_KEYS)?;
    let (timeout, max_output_bytes) = shared::run_limits(
        ruby,
        rb_self,
        values[0].unwrap(),
        values[2].filter(|v| !v.is_nil()),
    )?;
    let limits = shared::run_plan(ruby, rb_self, &values)?;
    let host = seatbelt_command(
        ruby, rb_self, command, values[5], values[6], values[3], values[4], None,
    )?;
    shared::run_host(
        ruby,
        rb_self,
        host,
        timeout,
        values[1].filter(|v| !v.is_nil()),
        (max_output_bytes, values[7].is_some_and(|v| v.to_bool())),
        limits,
    )
}

/// Starts `command` under sandbox-exec as an owned ProcessSession; subprocesses are denied unless asked for (SB.5).
fn start_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let (command, values) = command_call(ruby, args, &[], &shared::START_KEYS)?;
    let get = |name: &str| {
        values[shared::START_KEYS.iter().position(|k| *k == name).unwrap()].filter(|v| !v.is_nil())
    };
    // nil means the default (H.6): denied unless asked for (SB.5).
    let allow = values[9]
        .filter(|v| !v.is_nil())
        .map(|v| v.to_bool())
        .unwrap_or(false);
    let limits = shared::session_limits(ruby, rb_self, &get)?;
    crate::ruby_api::process_runner::check_context(get("context"))?;
    let host = seatbelt_command(
        ruby,
        rb_self,
        command,
        get("scope"),
        get("cwd"),
        get("environment"),
        get("inherit_environment"),
        Some(allow),
    )?;
    shared::start_host(ruby, rb_self, host, limits)
}
