//! What Bubblewrap shares with Seatbelt (and Native): option helpers, the
//! Ruby-side inputs of a launch (grants, scope, cwd), and the glue that runs
//! a wrapped host command through the shared process runner or a session.

use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::grants::Grant;
use littleghost_sandbox_core::process::SpawnOptions;
use magnus::{prelude::*, Error, KwArgs, RArray, RString, Ruby, Value};

use crate::helpers::args::kwargs;
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::value_object as vo;
use crate::ruby_api::launch_limits;
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{
    errors, mount, network_policy, ownership, process_runner, process_session, sandbox,
};
use littleghost_sandbox_core::limits::plan::Plan;

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

/// `effective_policy.process_grants(workspace)` as core grants.
pub(crate) fn policy_grants(ruby: &Ruby, rb_self: Value) -> Result<Vec<Grant>, Error> {
    let policy: Value = rb_self.funcall("effective_policy", ())?;
    let workspace: Value = rb_self.funcall("workspace", ())?;
    let grants: RArray = policy.funcall("process_grants", (workspace,))?;
    grants
        .into_iter()
        .map(|m| mount::grant_from_ruby(ruby, m))
        .collect()
}

/// The effective policy with a nil network replaced by `:none` (16.1).
pub(crate) fn policy_with_network_default(ruby: &Ruby, policy: Value) -> Result<Value, Error> {
    let network: Value = policy.funcall("network", ())?;
    if !network.is_nil() {
        return Ok(policy);
    }
    let class = constants::class(ruby, "LittleGhost::Sandbox::Policy")?;
    let options = kwargs(
        ruby,
        &[
            ("files", policy.funcall("files", ())?),
            ("runtime_paths", policy.funcall("runtime_paths", ())?),
            ("root_filesystem", policy.funcall("root_filesystem", ())?),
            ("environment", policy.funcall("environment", ())?),
            ("network", ruby.to_symbol("none").as_value()),
        ],
    )?;
    class.funcall("new", (KwArgs(options),))
}

/// The working directory of a launch (B.7): nil is the workspace root; a
/// relative value resolves logically; an absolute one is an in-sandbox path.
pub(crate) fn launch_cwd(
    ruby: &Ruby,
    rb_self: Value,
    cwd: Option<Value>,
) -> Result<PathBuf, Error> {
    let workspace: Value = rb_self.funcall("workspace", ())?;
    let cwd = match cwd.filter(|v| !v.is_nil()) {
        None => return convert::string_path(workspace.funcall("root", ())?),
        Some(cwd) => convert::path_string(ruby, cwd, "cwd")?,
    };
    if convert::path_of(cwd).is_absolute() {
        return convert::string_path(vo::expand_path(ruby, cwd.as_value(), None)?.as_value());
    }
    // As on Unrestricted: a logical path the workspace refuses is a ToolError.
    match workspace.funcall::<_, _, Value>("resolve", (cwd,)) {
        Ok(resolved) => convert::string_path(resolved),
        Err(error)
            if error.is_kind_of(ruby.exception_arg_error())
                || error.is_kind_of(ruby.exception_key_error()) =>
        {
            Err(errors::tool_error(ruby, sandbox::error_message(&error)))
        }
        Err(error) => Err(error),
    }
}

/// The scope argument of a launch: nil or a Scope, which is validated (16.5 step 1).
pub(crate) fn validated_scope(scope: Option<Value>) -> Result<Option<Value>, Error> {
    match scope.filter(|v| !v.is_nil()) {
        None => Ok(None),
        Some(scope) => {
            let _: Value = scope.funcall("validate!", ())?;
            Ok(Some(scope))
        }
    }
}

/// The network a scope sets, if any.
pub(crate) fn scope_network(scope: Option<Value>) -> Result<Option<bw::NetworkMode>, Error> {
    let Some(scope) = scope else { return Ok(None) };
    let network: Value = scope.funcall("network", ())?;
    Ok(network_policy::borrow(network).and_then(|n| bw::NetworkMode::parse(n.core().mode.name())))
}

/// A host command ready for the shared runner or session: the wrapper argv
/// plus what its own process gets.
pub(crate) struct HostCommand {
    pub argv: Vec<String>,
    /// The wrapper process's explicit environment (bwrap: none, its child gets `--setenv`).
    pub environment: Vec<(String, String)>,
    pub inherit_environment: bool,
    pub chdir: Option<PathBuf>,
    /// Descriptors kept open across exec (the seccomp program).
    pub keep_fds: Vec<i32>,
    /// For bwrap: argv[0] as bwrap execs it, and as the caller wrote it (17.4).
    pub exec_argv0: Option<(Vec<u8>, String)>,
}

impl HostCommand {
    /// The program as the caller named it (for denial events).
    fn program(&self) -> &str {
        match &self.exec_argv0 {
            Some((_, written)) => written,
            None => self.argv.first().map_or("", String::as_str),
        }
    }
}

/// 17.4: bwrap's own execvp failure becomes exit 127/126 with a shell-style message.
fn reinterpret_exec_failure(
    ruby: &Ruby,
    host: &HostCommand,
    execution: Value,
) -> Result<Value, Error> {
    let Some((exec_argv0, display_argv0)) = &host.exec_argv0 else {
        return Ok(execution);
    };
    let exit_code: Option<i32> = execution.funcall("exit_code", ())?;
    let stdout: RString = execution.funcall("stdout", ())?;
    let stderr: RString = execution.funcall("stderr", ())?;
    let failure = bw::classify_exec_failure(
        exit_code,
        &convert::bytes(stdout),
        &convert::bytes(stderr),
        exec_argv0,
    );
    let Some(failure) = failure else {
        return Ok(execution);
    };
    let class = constants::class(ruby, "LittleGhost::Sandbox::Execution")?;
    let kw = kwargs(
        ruby,
        &[
            ("stdout", ruby.str_new("").as_value()),
            (
                "stderr",
                ruby.str_new(&failure.message(display_argv0)).as_value(),
            ),
            ("exit_code", ruby.into_value(failure.exit_code())),
        ],
    )?;
    class.funcall("new", (KwArgs(kw),))
}

/// Runs a wrapped host command through the shared process runner (§17).
pub(crate) fn run_host(
    ruby: &Ruby,
    owner: SandboxObj,
    host: HostCommand,
    timeout: f64,
    context: Option<Value>,
    (max_output_bytes, kill_on_output_limit): (u64, bool),
    limits: Plan,
) -> Result<Value, Error> {
    let request = process_runner::RunRequest {
        argv: host.argv.clone(),
        timeout,
        context,
        max_output_bytes,
        environment: host.environment.clone(),
        inherit_environment: host.inherit_environment,
        chdir: host.chdir.clone(),
        spawn_options: SpawnOptions {
            inherited_fds: host.keep_fds.clone(),
        },
        owner: Some(ownership::owner(ruby, owner)?),
        kill_on_output_limit,
        limits,
        denials: crate::ruby_api::denial::Reporter::of(owner, host.program()),
    };
    let execution = process_runner::run(ruby, request)?;
    reinterpret_exec_failure(ruby, &host, execution)
}

/// The session limits of a `start_program` call, already validated.
pub(crate) struct SessionLimits {
    pub output_bytes: u64,
    /// `memory_bytes`, `tasks`, `cpu_seconds` over `process_limits:` (L.1).
    pub plan: Plan,
    pub file_bytes: Option<u64>,
}

/// The whole-tree limits of an `execute_program` call whose keyword values
/// are `values` (`timeout` first, then [`EXECUTE_KEYS`]).
pub(crate) fn run_plan(
    ruby: &Ruby,
    rb_self: SandboxObj,
    values: &[Option<Value>],
) -> Result<Plan, Error> {
    let get = |name: &str| {
        EXECUTE_KEYS
            .iter()
            .position(|key| *key == name)
            .and_then(|index| values[index + 1])
    };
    launch_limits::for_call(ruby, rb_self, &get, false)
}

/// `output_bytes` (default `limits.output_bytes`) and the optional limits, each a positive Integer.
pub(crate) fn session_limits(
    ruby: &Ruby,
    rb_self: SandboxObj,
    get: &dyn Fn(&str) -> Option<Value>,
) -> Result<SessionLimits, Error> {
    let optional = |name: &str| -> Result<Option<u64>, Error> {
        get(name)
            .map(|v| process_runner::positive_integer(ruby, v, name))
            .transpose()
    };
    let output_bytes = match get("output_bytes") {
        Some(value) => process_runner::positive_integer(ruby, value, "output_bytes")?,
        None => rb_self
            .funcall::<_, _, Value>("limits", ())?
            .funcall("output_bytes", ())?,
    };
    Ok(SessionLimits {
        output_bytes,
        plan: launch_limits::for_call(ruby, rb_self, get, false)?,
        file_bytes: optional("file_bytes")?,
    })
}

/// Starts a wrapped host command as a shared ProcessSession (§18).
pub(crate) fn start_host(
    ruby: &Ruby,
    owner: SandboxObj,
    host: HostCommand,
    limits: SessionLimits,
) -> Result<Value, Error> {
    let denials = crate::ruby_api::denial::Reporter::of(owner, host.program());
    process_session::start(
        ruby,
        process_session::SessionRequest {
            argv: host.argv,
            environment: host.environment,
            inherit_environment: host.inherit_environment,
            chdir: host.chdir,
            output_bytes: limits.output_bytes,
            limits: limits.plan,
            memory_reader: None,
            file_bytes: limits.file_bytes,
            spawn_options: SpawnOptions {
                inherited_fds: host.keep_fds,
            },
            owner: Some(ownership::owner(ruby, owner)?),
            denials,
        },
    )
}

/// `max_output_bytes` (default `limits.output_bytes`) and `timeout`, validated before anything is opened or spawned (17.3).
pub(crate) fn run_limits(
    ruby: &Ruby,
    rb_self: SandboxObj,
    timeout: Value,
    max_output_bytes: Option<Value>,
) -> Result<(f64, u64), Error> {
    let timeout = process_runner::validate_timeout(ruby, timeout)?;
    let default: u64 = rb_self
        .funcall::<_, _, Value>("limits", ())?
        .funcall("output_bytes", ())?;
    let max = process_runner::validate_output_bytes(
        ruby,
        max_output_bytes.unwrap_or_else(|| ruby.qnil().as_value()),
        default,
    )?;
    Ok((timeout, max))
}

/// The optional keywords of `execute_program`, after the required `timeout`.
pub(crate) const EXECUTE_KEYS: [&str; 10] = [
    "context",
    "max_output_bytes",
    "environment",
    "inherit_environment",
    "scope",
    "cwd",
    "kill_on_output_limit",
    "memory_bytes",
    "tasks",
    "cpu_seconds",
];

/// The keywords of `start_program`, all optional.
pub(crate) const START_KEYS: [&str; 11] = [
    "context",
    "environment",
    "inherit_environment",
    "scope",
    "cwd",
    "output_bytes",
    "memory_bytes",
    "cpu_seconds",
    "file_bytes",
    "allow_subprocesses",
    "tasks",
];
