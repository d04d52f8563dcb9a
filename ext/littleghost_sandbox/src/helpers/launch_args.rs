//! What every backend's `execute_program` and `start_program` share: the
//! keywords parsed once into an [`ExecuteCall`] or a [`StartCall`], the
//! Ruby-side inputs of the core launch plan (effective policy, grants,
//! scope, working directory, environment layers), and the shared runner a
//! wrapped [`HostCommand`] goes through.

use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::launch_steps as steps;
use littleghost_sandbox_core::error::Error as CoreError;
use littleghost_sandbox_core::grants::Grant;
use littleghost_sandbox_core::launch::{self, LaunchPlan, LaunchRequest, NetworkMode};
use littleghost_sandbox_core::limits::plan::Plan;
use littleghost_sandbox_core::policy::Policy;
use littleghost_sandbox_core::process::hold::Held;
use littleghost_sandbox_core::process::SpawnOptions;
use magnus::{prelude::*, Error, RArray, RString, Ruby, Value};

use crate::helpers::args::{command_call, keywords, keywords_only};
use crate::helpers::convert;
use crate::helpers::value_object as vo;
use crate::ruby_api::process_runner::{self, positive_integer, validate_timeout, RunRequest};
use crate::ruby_api::process_session::{self, SessionRequest};
use crate::ruby_api::sandbox::{self, SandboxObj};
use crate::ruby_api::{
    errors, execution, launch_limits, mount, network_policy, ownership, scope, workspace,
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

/// `execute_program(command, timeout:, ...)`, validated before anything is
/// opened or spawned (17.3).
pub(crate) struct ExecuteCall {
    pub launch: Launch,
    pub timeout: f64,
    pub max_output_bytes: u64,
    pub kill_on_output_limit: bool,
    pub limits: Plan,
}

/// `start_program(command, ...)`, validated likewise.
pub(crate) struct StartCall {
    pub launch: Launch,
    /// `timeout:`, the session's whole life in seconds; None: unbounded.
    pub timeout: Option<f64>,
    pub output_bytes: u64,
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

impl ExecuteCall {
    /// Parses and validates the call; `own_tree` runs it in a cgroup even
    /// without limits wherever the host allows (every Linux backend, so a
    /// supervisor killed from outside leaves nothing behind: `close` ends
    /// the cgroup).
    pub(crate) fn parse(
        ruby: &Ruby,
        rb_self: SandboxObj,
        args: &[Value],
        own_tree: bool,
    ) -> Result<ExecuteCall, Error> {
        let (command, values) = command_call(ruby, args, &["timeout"], &EXECUTE_KEYS)?;
        let get = |name: &str| lookup(&EXECUTE_KEYS, &values[1..], name);
        let timeout = validate_timeout(ruby, values[0].unwrap())?;
        let max_output_bytes = output_bound(ruby, rb_self, &get)?;
        let limits = launch_limits::for_call(ruby, rb_self, &get, own_tree)?;
        require_execute(ruby, rb_self, get("scope"))?;
        Ok(ExecuteCall {
            timeout,
            max_output_bytes,
            kill_on_output_limit: get("kill_on_output_limit").is_some_and(|v| v.to_bool()),
            limits,
            launch: Launch::parse(command, &get),
        })
    }
}

impl StartCall {
    /// Parses and validates the call (see [`ExecuteCall::parse`]).
    pub(crate) fn parse(
        ruby: &Ruby,
        rb_self: SandboxObj,
        args: &[Value],
        own_tree: bool,
    ) -> Result<StartCall, Error> {
        let (command, values) = command_call(ruby, args, &[], &START_KEYS)?;
        let get = |name: &str| lookup(&START_KEYS, &values, name);
        let optional = |name: &str| -> Result<Option<u64>, Error> {
            get(name)
                .map(|v| positive_integer(ruby, v, name))
                .transpose()
        };
        let timeout = get("timeout")
            .map(|value| validate_timeout(ruby, value))
            .transpose()?;
        let output_bytes = output_bound(ruby, rb_self, &get)?;
        let limits = launch_limits::for_call(ruby, rb_self, &get, own_tree)?;
        let file_bytes = optional("file_bytes")?;
        require_execute(ruby, rb_self, get("scope"))?;
        Ok(StartCall {
            timeout,
            output_bytes,
            limits,
            file_bytes,
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

/// `workspace.resolve(cwd)`: a logical path the workspace refuses is a
/// ToolError naming it.
fn resolve_cwd(ruby: &Ruby, workspace: Value, cwd: RString) -> Result<PathBuf, Error> {
    if let Some(native) = workspace::native(ruby, workspace) {
        let path = convert::path_of(cwd);
        return match native.resolve_core(&path) {
            Err(CoreError::Argument(message) | CoreError::Key(message)) => {
                let shown = path.display().to_string();
                let named = if message.contains(&shown) {
                    message
                } else {
                    format!("{message}: {shown}")
                };
                Err(errors::tool_error(ruby, named))
            }
            resolved => errors::core_result(ruby, resolved),
        };
    }
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

/// `effective_policy.process_grants(workspace)` as core grants.
pub(crate) fn policy_grants(ruby: &Ruby, rb_self: SandboxObj) -> Result<Vec<Grant>, Error> {
    let policy = core_policy(ruby, rb_self)?;
    let workspace = sandbox::workspace_of(ruby, rb_self.as_value());
    vo::require_duck(workspace, "workspace", &["root", "path"])?;
    let directory = |name: &str| workspace::directory(ruby, workspace, name);
    policy.process_grants(directory, |error| errors::from_core(ruby, error))
}

/// A launch's scope as the plan needs it.
pub(crate) struct ScopeView {
    pub value: Value,
    pub grants: Vec<Grant>,
    pub network: Option<NetworkMode>,
    /// The rules of the scope's allowlist (a narrowed scope's differ from the policy's).
    pub network_rules: Option<littleghost_sandbox_core::policy::NetworkRules>,
    /// The scope allows `process_spawn`.
    pub spawns: bool,
}

/// The scope of a launch, validated (16.5 step 1), or None.
pub(crate) fn scope_view(ruby: &Ruby, value: Option<Value>) -> Result<Option<ScopeView>, Error> {
    let Some(value) = value.filter(|v| !v.is_nil()) else {
        return Ok(None);
    };
    scope::validate(ruby, value)?;
    let grants = RArray::try_convert(scope::reader_process_grants(ruby, value)?)?
        .into_iter()
        .map(|m| mount::grant_from_ruby(ruby, m))
        .collect::<Result<Vec<_>, _>>()?;
    let declared = network_policy::borrow(scope::reader_network(ruby, value)?);
    let network = declared.map(|n| n.core().mode);
    let network_rules = declared
        .filter(|n| n.core().mode == littleghost_sandbox_core::policy::NetworkMode::Allowlist)
        .map(|n| n.core().rules.clone());
    Ok(Some(ScopeView {
        value,
        grants,
        network,
        network_rules,
        spawns: scope::supports_feature(ruby, value, "process_spawn")?,
    }))
}

/// Whether the launch may create subprocesses: as `requested`, or as the
/// scope allows when nothing was requested; asking for them where the scope
/// forbids them is a CapabilityError.
pub(crate) fn subprocesses(
    ruby: &Ruby,
    scope: Option<&ScopeView>,
    requested: Option<bool>,
) -> Result<bool, Error> {
    let spawns = scope.map(|scope| scope.spawns);
    errors::core_result(ruby, steps::subprocesses(spawns, requested))
}

/// The working directory of a launch (B.7): nil is the workspace root; a
/// relative value resolves logically, as does an absolute one unless
/// `in_sandbox` (then it names a path inside the sandbox).
pub(crate) fn launch_cwd(
    ruby: &Ruby,
    rb_self: SandboxObj,
    cwd: Option<Value>,
    in_sandbox: bool,
) -> Result<PathBuf, Error> {
    let workspace = sandbox::workspace_of(ruby, rb_self.as_value());
    let cwd = match cwd.filter(|v| !v.is_nil()) {
        None => return workspace_root(workspace),
        Some(cwd) => convert::path_string(ruby, cwd, "cwd")?,
    };
    if in_sandbox && convert::path_of(cwd).is_absolute() {
        return convert::string_path(convert::expand_path(ruby, cwd.as_value(), None)?.as_value());
    }
    let resolved = resolve_cwd(ruby, workspace, cwd)?;
    // A logical directory that does not exist is named as the caller wrote
    // it: a model's `cwd:` gets an answer it can act on.
    if !resolved.is_dir() {
        let shown = convert::path_of(cwd).display().to_string();
        let missing = littleghost_sandbox_core::launch::CWD_NOT_AVAILABLE;
        return Err(errors::tool_error(ruby, format!("{missing}: {shown}")));
    }
    Ok(resolved)
}

/// The core launch plan of `request`, with the workspace's and the call's
/// variables as its environment layers.
pub(crate) fn plan(
    ruby: &Ruby,
    rb_self: SandboxObj,
    environment: Option<Value>,
    request: LaunchRequest<'_>,
) -> Result<LaunchPlan, Error> {
    let layers = || -> Result<launch::Layers, Error> {
        let workspace = sandbox::workspace_of(ruby, rb_self.as_value());
        Ok((
            workspace_environment(ruby, workspace)?,
            convert::environment(ruby, environment)?,
        ))
    };
    launch::plan(request, layers, |e| errors::from_core(ruby, e))
}

// ---------------------------------------------------------------------------
// The shared runner.

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
    /// The descriptor to execute instead of `argv[0]` (the sealed helper).
    pub exec_fd: Option<i32>,
    /// bwrap held once set up, until the host prepared and checked its sandbox.
    pub hold: Option<Held>,
    /// For bwrap: argv[0] as bwrap execs it, and as the caller wrote it (17.4).
    pub exec_argv0: Option<(Vec<u8>, String)>,
    /// The caller's argv[0] where `argv` runs it through a wrapper that is
    /// not bwrap (the Landlock supervisor), for denial events.
    pub wrapped_program: Option<String>,
}

impl HostCommand {
    /// A plain host launch of a planned command (no wrapper descriptors).
    pub(crate) fn planned(argv: Vec<String>, plan: LaunchPlan) -> HostCommand {
        HostCommand {
            argv,
            environment: plan.environment,
            inherit_environment: plan.inherit_environment,
            chdir: Some(plan.cwd),
            keep_fds: Vec::new(),
            exec_fd: None,
            hold: None,
            exec_argv0: None,
            wrapped_program: None,
        }
    }

    /// The program as the caller named it (for denial events), never the
    /// wrapper's (bwrap, the Landlock supervisor).
    fn program(&self) -> &str {
        if let Some(program) = &self.wrapped_program {
            return program;
        }
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
    let values = execution::data::values(execution)?;
    let (stdout, stderr, exit_code) = (values[0], values[1], values[2]);
    let failure = bw::classify_exec_failure(
        Option::<i32>::try_convert(exit_code)?,
        &convert::bytes(RString::try_convert(stdout)?),
        &convert::bytes(RString::try_convert(stderr)?),
        exec_argv0,
    );
    Ok(match failure {
        None => execution,
        Some(failure) => execution::Execution::wrap(
            ruby,
            "",
            &failure.message(display_argv0),
            Some(failure.exit_code()),
            None,
        ),
    })
}

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
    if sandbox_allows && scope_allows {
        Ok(())
    } else {
        Err(errors::tool_error(
            ruby,
            "Sandbox scope does not allow process execute",
        ))
    }
}

/// Runs a host command through the shared process runner (§17).
pub(crate) fn run(
    ruby: &Ruby,
    owner: SandboxObj,
    host: HostCommand,
    call: ExecuteCall,
) -> Result<Value, Error> {
    let request = RunRequest {
        argv: host.argv.clone(),
        timeout: call.timeout,
        context: call.launch.context,
        max_output_bytes: call.max_output_bytes,
        environment: host.environment.clone(),
        inherit_environment: host.inherit_environment,
        chdir: host.chdir.clone(),
        spawn_options: SpawnOptions {
            inherited_fds: host.keep_fds.clone(),
            executable_fd: host.exec_fd,
            hold: host.hold.clone(),
        },
        owner: Some(ownership::owner(ruby, owner)?),
        kill_on_output_limit: call.kill_on_output_limit,
        limits: call.limits,
        denials: crate::ruby_api::denial::Reporter::of(owner, host.program()),
    };
    let execution = process_runner::run(ruby, request)?;
    reinterpret_exec_failure(ruby, &host, execution)
}

/// Starts a host command as a shared ProcessSession (§18).
pub(crate) fn start(
    ruby: &Ruby,
    owner: SandboxObj,
    host: HostCommand,
    call: StartCall,
) -> Result<Value, Error> {
    let denials = crate::ruby_api::denial::Reporter::of(owner, host.program());
    let shown_command = Some(convert::argv(ruby, call.launch.command)?);
    process_session::start(
        ruby,
        SessionRequest {
            argv: host.argv,
            shown_command,
            environment: host.environment,
            inherit_environment: host.inherit_environment,
            chdir: host.chdir,
            output_bytes: call.output_bytes,
            timeout: call.timeout,
            limits: call.limits,
            memory_reader: None,
            file_bytes: call.file_bytes,
            spawn_options: SpawnOptions {
                inherited_fds: host.keep_fds,
                executable_fd: host.exec_fd,
                hold: host.hold.clone(),
            },
            owner: Some(ownership::owner(ruby, owner)?),
            denials,
        },
    )
}

// ---------------------------------------------------------------------------
// The lifecycle and launch methods every Rust backend shares.

/// `open(run: nil)`: the backend's `steps` (idempotent), then with a block
/// yields self, always closes and returns the block's value (H.4).
pub(crate) fn open(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
    steps: impl FnOnce() -> Result<(), Error>,
) -> Result<Value, Error> {
    keywords(ruby, keywords_only(args)?, &[], &["run"])?;
    crate::ruby_api::launch_limits::check_defaults(ruby, rb_self)?;
    steps()?;
    ownership::yield_and_close(ruby, rb_self.as_value())
}
