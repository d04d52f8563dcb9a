//! What every backend's `execute_program` and `start_program` share: the
//! keywords parsed once into an [`ExecuteCall`] or a [`StartCall`], then
//! converted into the core's [`LaunchCall`] with the workspace as a
//! [`WorkspaceView`] ([`RubyWorkspace`]); the core's launcher prepares the
//! launch, and the shared runner or session runs the [`Prepared`] result.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use littleghost_sandbox_core::backend::launch_steps as steps;
use littleghost_sandbox_core::error::Kind as ErrorKind;
use littleghost_sandbox_core::fs::anchor::Anchors;
use littleghost_sandbox_core::launch::prepare::{
    self, Kind, LaunchCall, LaunchError, Prepared, Refused, ScopeCall, WorkspaceView,
};
use littleghost_sandbox_core::launch::NetworkMode;
use littleghost_sandbox_core::limits::plan::Plan;
use littleghost_sandbox_core::policy::Policy;
use magnus::{prelude::*, Error, RArray, RString, Ruby, Value};

use crate::helpers::args::command_call;
use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::process_runner::{self, positive_integer, validate_timeout, RunRequest};
use crate::ruby_api::process_session::{self, SessionRequest};
use crate::ruby_api::sandbox::{self, SandboxObj};
use crate::ruby_api::{
    execution, launch_limits, mount, network_policy, ownership, scope, workspace,
};

/// The optional keywords of `execute_program`, after the required `timeout`.
/// `output_bytes` and `max_output_bytes` are one keyword in two spellings,
/// as are they in `start_program`: one vocabulary for both.
const EXECUTE_KEYS: [&str; 12] = [
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
    "output_bytes",
    "allow_subprocesses",
];

/// The keywords of `start_program`, all optional.
const START_KEYS: [&str; 13] = [
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
    "max_output_bytes",
    "timeout",
];

/// The output bound under either spelling; both at once is ArgumentError.
fn output_bound(
    ruby: &Ruby,
    rb_self: SandboxObj,
    get: &dyn Fn(&str) -> Option<Value>,
) -> Result<u64, Error> {
    match (get("output_bytes"), get("max_output_bytes")) {
        (Some(_), Some(_)) => Err(errors::argument_error(
            ruby,
            "give output_bytes: or its older spelling max_output_bytes:, not both",
        )),
        (Some(value), None) => positive_integer(ruby, value, "output_bytes"),
        (None, Some(value)) => positive_integer(ruby, value, "max_output_bytes"),
        (None, None) => default_output_bytes(ruby, rb_self),
    }
}

/// What both launch methods take: the command and where and how it runs.
pub(crate) struct Launch {
    pub command: Value,
    pub context: Option<Value>,
    pub environment: Option<Value>,
    pub inherit: bool,
    pub scope: Option<Value>,
    pub cwd: Option<Value>,
    /// `allow_subprocesses:`; nil or absent: the backend's default (H.6).
    pub allow_subprocesses: Option<bool>,
}

/// `execute_program(command, timeout:, ...)` or `start_program(command,
/// ...)`, validated before anything is opened or spawned (17.3).
pub(crate) struct Call {
    pub launch: Launch,
    /// `timeout:` in seconds; None: unbounded (a session's whole life).
    pub timeout: Option<f64>,
    pub output_bytes: u64,
    pub kill_on_output_limit: bool,
    pub file_bytes: Option<u64>,
    pub limits: Plan,
}

/// The value given for `name` (nil counts as absent).
fn lookup(keys: &[&str], values: &[Option<Value>], name: &str) -> Option<Value> {
    let index = keys.iter().position(|key| *key == name)?;
    values[index].filter(|value| !value.is_nil())
}

impl Launch {
    fn parse(command: Value, get: &dyn Fn(&str) -> Option<Value>) -> Launch {
        Launch {
            command,
            context: get("context"),
            environment: get("environment"),
            inherit: get("inherit_environment").is_some_and(|v| v.to_bool()),
            scope: get("scope"),
            cwd: get("cwd"),
            allow_subprocesses: get("allow_subprocesses").map(|v| v.to_bool()),
        }
    }
}

/// `limits.output_bytes` of the sandbox: the default output bound.
fn default_output_bytes(ruby: &Ruby, rb_self: SandboxObj) -> Result<u64, Error> {
    crate::ruby_api::limits::borrow(sandbox::limits_of(ruby, rb_self.as_value()))
        .map(|limits| limits.output_bytes)
        .ok_or_else(|| errors::tool_error(ruby, "sandbox is not initialized"))
}

impl Call {
    /// Parses and validates an `execute_program` (`Kind::Run`, whose
    /// `timeout:` is required) or `start_program` call; `own_tree` runs it
    /// in a cgroup even without limits wherever the host allows (every Linux
    /// backend, so a supervisor killed from outside leaves nothing behind:
    /// `close` ends the cgroup).
    pub(crate) fn parse(
        ruby: &Ruby,
        rb_self: SandboxObj,
        args: &[Value],
        kind: Kind,
        own_tree: bool,
    ) -> Result<Call, Error> {
        let (required, keys): (&[&str], &[&str]) = match kind {
            Kind::Run => (&["timeout"], &EXECUTE_KEYS),
            Kind::Session => (&[], &START_KEYS),
        };
        let (command, values) = command_call(ruby, args, required, keys)?;
        let get = |name: &str| lookup(keys, &values[required.len()..], name);
        let timeout = match kind {
            Kind::Run => values[0],
            Kind::Session => get("timeout"),
        };
        let timeout = timeout
            .map(|value| validate_timeout(ruby, value))
            .transpose()?;
        let output_bytes = output_bound(ruby, rb_self, &get)?;
        let limits = launch_limits::for_call(ruby, rb_self, &get, own_tree)?;
        let file_bytes = get("file_bytes")
            .map(|value| positive_integer(ruby, value, "file_bytes"))
            .transpose()?;
        require_execute(ruby, rb_self, get("scope"))?;
        Ok(Call {
            timeout,
            output_bytes,
            kill_on_output_limit: get("kill_on_output_limit").is_some_and(|v| v.to_bool()),
            file_bytes,
            limits,
            launch: Launch::parse(command, &get),
        })
    }
}

// ---------------------------------------------------------------------------
// The Ruby-side inputs of the core launch plan.

/// The effective policy the sandbox enforces, as the core policy.
pub(crate) fn core_policy(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static Policy, Error> {
    let value = sandbox::enforced_policy(ruby, rb_self.as_value())?;
    crate::ruby_api::policy::borrow(value)
        .map(|policy| policy.core())
        .ok_or_else(|| {
            errors::policy_error(
                ruby,
                "sandbox effective_policy must be a LittleGhost::Sandbox::Policy",
            )
        })
}

// A plain `LittleGhost::Workspace` is read in Rust; a duck-typed workspace or
// a subclass (which may override these methods) is asked through Ruby.

/// The workspace root of the sandbox (a host path).
pub(crate) fn workspace_root(workspace: Value) -> Result<PathBuf, Error> {
    let ruby = Ruby::get_with(workspace);
    workspace::directory(&ruby, workspace, "root")
}

/// The root, then every named path of the workspace (host paths).
pub(crate) fn workspace_directories(ruby: &Ruby, workspace: Value) -> Result<Vec<PathBuf>, Error> {
    let mut directories = vec![workspace_root(workspace)?];
    if let Some(native) = workspace::native(ruby, workspace) {
        for name in native.path_names().unwrap_or_default() {
            directories.push(workspace::directory(ruby, workspace, &name)?);
        }
        return Ok(directories);
    }
    for (_, path) in vo::pairs(workspace.funcall("paths", ())?)? {
        directories.push(convert::string_path(path)?);
    }
    Ok(directories)
}

/// `workspace.validate!`: a ToolError when a directory was replaced since `open`.
pub(crate) fn validate_workspace(ruby: &Ruby, workspace: Value) -> Result<(), Error> {
    match workspace::native(ruby, workspace) {
        Some(native) => errors::core_result(ruby, native.validate_core()),
        None => workspace
            .funcall::<_, _, Value>("validate!", ())
            .map(|_| ()),
    }
}

/// `workspace.environment` as the first environment layer of a launch.
fn workspace_environment(ruby: &Ruby, workspace: Value) -> Result<Vec<(String, String)>, Error> {
    match workspace::native(ruby, workspace) {
        Some(native) => errors::core_result(
            ruby,
            native.environment_core().and_then(steps::workspace_layer),
        ),
        None => convert::environment(ruby, Some(workspace.funcall("environment", ())?)),
    }
}

/// `workspace.resolve(cwd)`: a rule of 3.3 refusing it is the core's to
/// word; a duck-typed workspace's ArgumentError or KeyError is a ToolError
/// with its own message.
fn resolve_cwd(ruby: &Ruby, workspace: Value, cwd: &Path) -> Result<PathBuf, Refused<Error>> {
    let raised = |error| Refused::Raised(errors::from_core(ruby, error));
    if let Some(native) = workspace::native(ruby, workspace) {
        return match native.resolve_core(cwd) {
            Err(error) if matches!(error.kind(), ErrorKind::Argument | ErrorKind::Key) => {
                Err(Refused::Reason(errors::ruby_message(&error)))
            }
            resolved => resolved.map_err(raised),
        };
    }
    let given = convert::path_to_ruby(ruby, cwd);
    match workspace.funcall::<_, _, Value>("resolve", (given,)) {
        Ok(resolved) => convert::string_path(resolved).map_err(Refused::Raised),
        Err(error)
            if error.is_kind_of(ruby.exception_arg_error())
                || error.is_kind_of(ruby.exception_key_error()) =>
        {
            let message = sandbox::error_message(&error);
            Err(Refused::Raised(errors::tool_error(ruby, message)))
        }
        Err(error) => Err(Refused::Raised(error)),
    }
}

/// The scope of a launch, validated (16.5 step 1) and converted, or None.
pub(crate) fn scope_call(ruby: &Ruby, value: Option<Value>) -> Result<Option<ScopeCall>, Error> {
    let Some(value) = value.filter(|v| !v.is_nil()) else {
        return Ok(None);
    };
    scope::validate(ruby, value)?;
    let grants = RArray::try_convert(scope::reader_process_grants(ruby, value)?)?
        .into_iter()
        .map(|m| mount::grant_from_ruby(ruby, m))
        .collect::<Result<Vec<_>, _>>()?;
    let declared = network_policy::borrow(scope::reader_network(ruby, value)?);
    let network_rules = declared
        .filter(|n| n.core().mode == NetworkMode::Allowlist)
        .map(|n| n.core().rules.clone());
    Ok(Some(ScopeCall {
        grants,
        network: declared.map(|n| n.core().mode),
        network_rules,
        spawns: scope::supports_feature(ruby, value, "process_spawn")?,
    }))
}

// ---------------------------------------------------------------------------
// The call as the core's launch takes it.

/// The workspace of a sandbox as the core's launch asks it: a plain
/// `LittleGhost::Workspace` is read in Rust, any other through Ruby.
pub(crate) struct RubyWorkspace<'r> {
    ruby: &'r Ruby,
    value: Value,
}

impl<'r> RubyWorkspace<'r> {
    /// The workspace of the sandbox `owner`.
    pub(crate) fn of(ruby: &'r Ruby, owner: SandboxObj) -> RubyWorkspace<'r> {
        RubyWorkspace {
            ruby,
            value: sandbox::workspace_of(ruby, owner.as_value()),
        }
    }
}

impl WorkspaceView<Error> for RubyWorkspace<'_> {
    fn directory(&self, name: &str) -> Result<PathBuf, Error> {
        if name != littleghost_sandbox_core::workspace::ROOT_NAME {
            vo::require_duck(self.value, "workspace", &["root", "path"])?;
        }
        workspace::directory(self.ruby, self.value, name)
    }

    fn directories(&self) -> Result<Vec<PathBuf>, Error> {
        workspace_directories(self.ruby, self.value)
    }

    fn environment(&self) -> Result<Vec<(String, String)>, Error> {
        workspace_environment(self.ruby, self.value)
    }

    fn resolve(&self, logical: &Path) -> Result<PathBuf, Refused<Error>> {
        resolve_cwd(self.ruby, self.value, logical)
    }

    fn anchors(&self) -> Option<Arc<Anchors>> {
        workspace::anchors_of(self.value)
    }
}

/// The keywords of a launch as the core's [`LaunchCall`]; each conversion's
/// error is raised where the core's sequence reads the value. `read_scope`:
/// the backend confines processes, so the scope is converted too.
pub(crate) fn launch_call(
    ruby: &Ruby,
    launch: &Launch,
    kind: Kind,
    read_scope: bool,
) -> LaunchCall<Error> {
    let cwd = launch.cwd.filter(|v| !v.is_nil());
    LaunchCall {
        kind,
        argv: convert::argv(ruby, launch.command),
        scope: match read_scope {
            true => scope_call(ruby, launch.scope),
            false => Ok(None),
        },
        allow_subprocesses: launch.allow_subprocesses,
        cwd: cwd
            .map(|cwd| convert::path_string(ruby, cwd, "cwd").map(convert::path_of))
            .transpose(),
        inherit_environment: launch.inherit,
        environment: convert::environment(ruby, launch.environment),
    }
}

/// A refused launch as the Ruby error it raises.
pub(crate) fn raised(ruby: &Ruby, error: LaunchError<Error>) -> Error {
    error.into_caller(|core| errors::from_core(ruby, core))
}

// ---------------------------------------------------------------------------
// The shared runner.

/// A Ruby subclass may withdraw `process_execute` from its capabilities; the
/// sandbox's own launches honour that as its scopes do (SC.14): checked once
/// the keywords are valid, before any backend prepares the launch. A
/// capability object that is not ours is left to its provider.
fn require_execute(ruby: &Ruby, owner: SandboxObj, scope: Option<Value>) -> Result<(), Error> {
    let capabilities = sandbox::enforced_capabilities(ruby, owner.as_value())?;
    let sandbox_allows = match crate::ruby_api::capabilities::borrow(capabilities) {
        Some(report) => report.core().supports("process_execute"),
        None => true,
    };
    // SC.14 however the launch is reached: a Scope handed straight to the
    // sandbox as `scope:` is held to its own capabilities too.
    let scope_allows = match scope.filter(|v| <&scope::Scope>::try_convert(*v).is_ok()) {
        Some(scope) => scope::supports_feature(ruby, scope, "process_execute")?,
        None => true,
    };
    errors::core_result(ruby, prepare::require_execute(sandbox_allows, scope_allows))
}

/// 17.4: bwrap's own execvp failure becomes exit 127/126 with a shell-style message.
fn reinterpret_exec_failure(
    ruby: &Ruby,
    prepared: &Prepared,
    execution: Value,
) -> Result<Value, Error> {
    if prepared.exec_argv0.is_none() {
        return Ok(execution);
    }
    let values = execution::data::values(execution)?;
    let (stdout, stderr, exit_code) = (values[0], values[1], values[2]);
    let failure = prepared.exec_failure(
        Option::<i32>::try_convert(exit_code)?,
        &convert::bytes(RString::try_convert(stdout)?),
        &convert::bytes(RString::try_convert(stderr)?),
    );
    Ok(match failure {
        None => execution,
        Some(failure) => {
            execution::Execution::wrap(ruby, "", &failure.stderr, Some(failure.exit_code), None)
        }
    })
}

/// Runs a prepared launch through the shared process runner (§17); what
/// it keeps open is closed once the run is over.
pub(crate) fn run(
    ruby: &Ruby,
    owner: SandboxObj,
    prepared: Prepared,
    call: Call,
) -> Result<Value, Error> {
    let request = RunRequest {
        argv: prepared.argv.clone(),
        // `execute_program`'s `timeout:` is a required keyword.
        timeout: call.timeout.expect("execute_program has a timeout"),
        context: call.launch.context,
        max_output_bytes: call.output_bytes,
        environment: prepared.environment.clone(),
        inherit_environment: prepared.inherit_environment,
        chdir: prepared.chdir.clone(),
        spawn_options: prepared.spawn.clone(),
        owner: Some(ownership::owner(ruby, owner)?),
        kill_on_output_limit: call.kill_on_output_limit,
        limits: call.limits,
        denials: crate::ruby_api::denial::Reporter::of(owner, &prepared.program),
    };
    let execution = process_runner::run(ruby, request)?;
    reinterpret_exec_failure(ruby, &prepared, execution)
}

/// Starts a prepared launch as a shared ProcessSession (§18); what it
/// keeps open is closed once the session started.
pub(crate) fn start(
    ruby: &Ruby,
    owner: SandboxObj,
    mut prepared: Prepared,
    call: Call,
) -> Result<Value, Error> {
    let launch = prepared.take_launch();
    let request = SessionRequest {
        argv: launch.argv,
        shown_command: Some(convert::argv(ruby, call.launch.command)?),
        environment: launch.environment,
        inherit_environment: launch.inherit_environment,
        chdir: launch.chdir,
        output_bytes: call.output_bytes,
        timeout: call.timeout,
        limits: call.limits,
        memory_reader: None,
        file_bytes: call.file_bytes,
        spawn_options: launch.spawn_options,
        owner: Some(ownership::owner(ruby, owner)?),
        denials: crate::ruby_api::denial::Reporter::of(owner, &prepared.program),
    };
    process_session::start(ruby, request)
}
