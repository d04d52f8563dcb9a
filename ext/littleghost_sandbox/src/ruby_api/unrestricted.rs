//! `LittleGhost::Sandboxes::Unrestricted` (SPEC §15): file operations go
//! through a cached default Scope, so the broker's rules apply in full;
//! processes run on the host with no isolation, and the capabilities say so.

use std::cell::{Cell, RefCell};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use littleghost_sandbox_core::launch;
use littleghost_sandbox_core::process::SpawnOptions;
use magnus::{
    gc::Marker, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, value::LazyId,
    value::Opaque, DataTypeFunctions, Error, KwArgs, RHash, RModule, RString, Ruby, TypedData,
    Value,
};

use crate::helpers::args::{keywords_only, kwargs};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::probe;
use crate::ruby_api::capabilities;
use crate::ruby_api::errors;
use crate::ruby_api::launch_limits;
use crate::ruby_api::ownership;
use crate::ruby_api::process_runner::{
    self, check_context, positive_integer, validate_output_bytes, validate_timeout, RunRequest,
};
use crate::ruby_api::process_session::{self, SessionRequest};
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::sandbox::{self, assign, base_options, error_message, truthy};

/// The backend's state, reached from the sandbox through one hidden slot
/// (no `@`: invisible to Ruby; the instance's own data belongs to
/// `LittleGhost::Sandbox`).
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Unrestricted::State",
    free_immediately,
    size,
    mark
)]
struct State {
    effective_policy: Opaque<Value>,
    /// (dev, ino) of the workspace root when first seen (15.1).
    root_identity: Cell<Option<(u64, u64)>>,
    /// The Scope file operations go through, made on first use.
    default_scope: RefCell<Option<Opaque<Value>>>,
}

impl DataTypeFunctions for State {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.effective_policy);
        if let Some(scope) = *self.default_scope.borrow() {
            marker.mark(scope);
        }
    }
}

/// The backend state of `rb_self` (set by `initialize`).
fn state(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static State, Error> {
    crate::ruby_api::sandbox::backend_state(ruby, rb_self, "unrestricted")
}

/// Features every Unrestricted sandbox has; write and replace follow `files` (15.3).
const BASE_FEATURES: [&str; 4] = [
    "filesystem_read",
    "filesystem_list",
    "process_execute",
    "process_spawn",
];
const WRITE_FEATURES: [&str; 2] = ["filesystem_write", "filesystem_replace"];

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class = sandboxes.define_class(
        "Unrestricted",
        constants::class(ruby, "LittleGhost::Sandbox")?,
    )?;
    class.define_singleton_method("probe", method!(probe, -1))?;
    let state = class.define_class("State", ruby.class_object())?;
    state.undef_default_alloc_func();
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("writable?", method!(writable, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("read", method!(read, -1))?;
    class.define_method("list", method!(list, -1))?;
    class.define_method("write", method!(write, -1))?;
    class.define_method("replace", method!(replace, -1))?;
    class.define_method("allows?", method!(allows, -1))?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
    Ok(())
}

fn capabilities_for(ruby: &Ruby, writable: bool) -> Result<Value, Error> {
    let mut features: Vec<&str> = BASE_FEATURES.to_vec();
    if writable {
        features.extend(WRITE_FEATURES);
    }
    // L.2: each launch runs in a cgroup that is emptied when it ends, so a
    // setsid daemon dies with it; only where the host allows that.
    if launch_limits::owns_tree() {
        features.push("process_tree_ownership");
    }
    features.extend(launch_limits::features());
    capabilities::build(ruby, &features, &["inherit"], "none")
}

/// Unrestricted.probe: always available, reporting the capabilities a default Unrestricted sandbox has.
fn probe(ruby: &Ruby, _rb_self: Value, args: &[Value]) -> Result<RHash, Error> {
    let options = keywords_only(args)?;
    if !options.is_empty() {
        return Err(errors::argument_error(
            ruby,
            "sandbox provider :unrestricted does not accept probe options",
        ));
    }
    // The default policy is `files: {root: :read_only}`: nothing writable.
    probe::result(ruby, None, || capabilities_for(ruby, false))
}

/// Unrestricted.new(workspace:, policy: nil, profiles: {}, limits: {}): refuses any network it cannot enforce.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    // `process_limits:` and `cgroup:` are Unrestricted's own; the rest are the base options.
    let options: RHash = keywords_only(args)?.funcall("dup", ())?;
    let process_limits = options.delete::<_, Option<Value>>(ruby.to_symbol("process_limits"))?;
    launch_limits::store_defaults(ruby, rb_self, process_limits)?;
    let cgroup = options.delete::<_, Option<Value>>(ruby.to_symbol("cgroup"))?;
    launch_limits::store_cgroup(ruby, rb_self, cgroup)?;
    let (workspace, policy, profiles, limits) = base_options(&[options.as_value()])?;
    let policy_class = constants::class(ruby, "LittleGhost::Sandbox::Policy")?;
    let policy = match policy.filter(|p| !p.is_nil()) {
        Some(policy) => policy,
        None => {
            let files = ruby.hash_new();
            files.aset(ruby.to_symbol("root"), ruby.to_symbol("read_only"))?;
            let options = kwargs(
                ruby,
                &[
                    ("files", files.as_value()),
                    ("root_filesystem", ruby.to_symbol("read_write").as_value()),
                    ("network", ruby.to_symbol("inherit").as_value()),
                ],
            )?;
            policy_class.funcall("new", (KwArgs(options),))?
        }
    };
    assign(ruby, rb_self, workspace, Some(policy), profiles, limits)?;

    let requested = sandbox::requested_policy(ruby, rb_self.as_value());
    let network: Value = requested.funcall("network", ())?;
    if !network.is_nil() {
        let mode: String = network
            .funcall::<_, _, Value>("mode", ())?
            .funcall("to_s", ())?;
        if mode != "inherit" {
            return Err(errors::capability_error(
                ruby,
                format!("the unrestricted sandbox cannot enforce network mode :{mode}"),
            ));
        }
    }
    let effective = kwargs(
        ruby,
        &[
            ("files", requested.funcall("files", ())?),
            ("runtime_paths", requested.funcall("runtime_paths", ())?),
            ("environment", requested.funcall("environment", ())?),
            ("root_filesystem", ruby.to_symbol("read_write").as_value()),
            ("network", ruby.to_symbol("inherit").as_value()),
        ],
    )?;
    let effective: Value = policy_class.funcall("new", (KwArgs(effective),))?;
    let state = State {
        effective_policy: Opaque::from(effective),
        root_identity: Cell::new(root_identity(workspace)?),
        default_scope: RefCell::new(None),
    };
    crate::ruby_api::sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    let capabilities = capabilities_for(ruby, sandbox::has_writable_file_grant(effective)?)?;
    let class = constants::class(ruby, "LittleGhost::Sandboxes::Unrestricted")?;
    sandbox::set_enforced(rb_self, class, effective, capabilities);
    Ok(())
}

/// The (dev, ino) of the workspace root, or None when it does not exist.
fn root_identity(workspace: Value) -> Result<Option<(u64, u64)>, Error> {
    let root: RString = workspace.funcall("root", ())?;
    let root = convert::path_of(root);
    Ok(std::fs::metadata(root).ok().map(|m| (m.dev(), m.ino())))
}

/// True iff `filesystem_write` is supported and some tool-visible grant is writable (runtime-only grants do not count).
fn writable(ruby: &Ruby, rb_self: SandboxObj) -> Result<bool, Error> {
    if !sandbox::has_writable_file_grant(sandbox::enforced_policy(ruby, rb_self.as_value())?)? {
        return Ok(false);
    }
    let answer: Value = rb_self.funcall("supports?", (ruby.to_symbol("filesystem_write"),))?;
    Ok(truthy(answer))
}

/// Verifies (or first records) the workspace root's identity and returns self; with a block, yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    get_kwargs::<_, (), (Option<Value>,), ()>(options, &[], &["run"])?;
    let workspace: Value = rb_self.funcall("workspace", ())?;
    let current = root_identity(workspace)?;
    let state = state(ruby, rb_self)?;
    let changed = match (state.root_identity.get(), current) {
        (_, None) => true,
        (None, Some(identity)) => {
            state.root_identity.set(Some(identity));
            false
        }
        (Some(recorded), Some(identity)) => recorded != identity,
    };
    if changed {
        return Err(errors::tool_error(
            ruby,
            "Workspace root changed after initialization",
        ));
    }
    // A (re)opened run gets a scope pinned to the directories as they are now.
    state.default_scope.replace(None);
    ownership::yield_and_close(ruby, rb_self.as_value())
}

/// Terminates every program and session the sandbox or its scopes started that still runs (H.4); returns nil.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)
}

/// The lazily built, cached default scope every file operation goes through.
fn default_scope(rb_self: SandboxObj) -> Result<Value, Error> {
    let ruby = Ruby::get_with(rb_self);
    let state = state(&ruby, rb_self)?;
    if let Some(scope) = *state.default_scope.borrow() {
        return Ok(ruby.get_inner(scope));
    }
    let scope: Value = rb_self.funcall("scope", ())?;
    state.default_scope.replace(Some(Opaque::from(scope)));
    Ok(scope)
}

/// Calls `context&.check!` before any I/O (2.2), including building the
/// default scope. The scope is then called without `context:`, so the check
/// runs once per operation.
fn checked(keywords: RHash) -> Result<(), Error> {
    if keywords.is_empty() {
        return Ok(()); // the usual call; get_kwargs would intern its names
    }
    let parsed = get_kwargs::<_, (), (Option<Value>,), ()>(keywords, &[], &["context"])?;
    if let Some(context) = parsed.optional.0.filter(|c| !c.is_nil()) {
        context.funcall::<_, _, Value>("check!", ())?;
    }
    Ok(())
}

static READ: LazyId = LazyId::new("read");
static LIST: LazyId = LazyId::new("list");
static WRITE: LazyId = LazyId::new("write");
static REPLACE: LazyId = LazyId::new("replace");

/// Reads UTF-8 text at a logical `path` through the default scope.
fn read(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    checked(args.keywords)?;
    default_scope(rb_self)?.funcall(*READ, (args.required.0,))
}

/// Lists the directory at a logical `path` (default ".") through the default scope.
fn list(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    checked(args.keywords)?;
    let path = args
        .optional
        .0
        .unwrap_or_else(|| ruby.str_new(".").as_value());
    default_scope(rb_self)?.funcall(*LIST, (path,))
}

/// Writes `content` to a logical `path` through the default scope.
fn write(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value, Value), (), (), (), RHash, ()>(args)?;
    checked(args.keywords)?;
    let (path, content) = args.required;
    default_scope(rb_self)?.funcall(*WRITE, (path, content))
}

/// Replaces one exact occurrence of `old_text` at a logical `path` through the default scope.
fn replace(rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value, Value, Value), (), (), (), RHash, ()>(args)?;
    checked(args.keywords)?;
    let (path, old_text, new_text) = args.required;
    default_scope(rb_self)?.funcall(*REPLACE, (path, old_text, new_text))
}

/// Whether an operation is allowed, optionally on a logical `path`, answered by the cached default scope; never raises for a path or scope problem.
fn allows(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<bool, Error> {
    let args = scan_args::<(Value,), (Option<Value>,), (), (), (), ()>(args)?;
    let (operation,) = args.required;
    let path = args.optional.0.filter(|p| !p.is_nil());
    // A wrong type is misuse, not a path problem: it raises (H.6).
    if let Some(path) = path {
        convert::path_string(ruby, path, "path")?;
    }
    let answer = match path {
        None => rb_self.funcall::<_, _, Value>("supports?", (operation,)),
        Some(path) => {
            default_scope(rb_self).and_then(|scope| scope.funcall("allows?", (operation, path)))
        }
    };
    match answer {
        Ok(answer) => Ok(truthy(answer)),
        Err(error) if error.is_kind_of(ruby.exception_standard_error()) => Ok(false),
        Err(error) => Err(error),
    }
}

// ---------------------------------------------------------------------------
// Processes (15.6, 15.7): on the host, in a new process group, with only the
// explicit environment. Grants are not enforced for processes here.

/// The child's working directory: root, or `cwd` resolved as a logical workspace path.
fn working_directory(
    ruby: &Ruby,
    rb_self: SandboxObj,
    cwd: Option<Value>,
) -> Result<PathBuf, Error> {
    let workspace: Value = rb_self.funcall("workspace", ())?;
    let directory: RString = match convert::optional_path_string(ruby, cwd, "cwd")? {
        None => workspace.funcall("root", ())?,
        Some(cwd) => match workspace.funcall::<_, _, RString>("resolve", (cwd,)) {
            Ok(directory) => directory,
            Err(error)
                if error.is_kind_of(ruby.exception_arg_error())
                    || error.is_kind_of(ruby.exception_key_error()) =>
            {
                return Err(errors::tool_error(ruby, error_message(&error)))
            }
            Err(error) => return Err(error),
        },
    };
    Ok(convert::path_of(directory))
}

/// The core launch plan of a host process: the merged environment, the
/// inherit double opt-in and the working directory (no pins, no filter).
fn planned(
    ruby: &Ruby,
    rb_self: SandboxObj,
    environment: Option<Value>,
    inherit: Option<Value>,
    cwd: Option<Value>,
) -> Result<launch::LaunchPlan, Error> {
    let policy_value = sandbox::enforced_policy(ruby, rb_self.as_value())?;
    let Some(policy) = crate::ruby_api::policy::borrow(policy_value) else {
        return Err(errors::policy_error(ruby, "unsupported effective policy"));
    };
    let request = launch::LaunchRequest {
        policy_environment: &policy.core().environment,
        call_inherit: inherit.is_some_and(truthy),
        scope_network: None,
        policy_network: policy.core().network.as_ref(),
        policy_grants: Vec::new(),
        selected: None,
        require_utf8_paths: false,
        pins: None,
        cwd: working_directory(ruby, rb_self, cwd)?,
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
    launch::plan(request, layers, |e| errors::from_core(ruby, e))
}

fn output_limit(rb_self: SandboxObj) -> Result<u64, Error> {
    let limits: Value = rb_self.funcall("limits", ())?;
    limits.funcall("output_bytes", ())
}

/// Runs an argument vector on the host without a shell and returns its Execution; the scope, if any, has already checked process_execute.
fn execute_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    type Optional = (
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
    );
    let (keywords, limit_keywords) = launch_limits::take(ruby, args.keywords)?;
    let parsed = get_kwargs::<_, (Value,), Optional, ()>(
        keywords,
        &["timeout"],
        &[
            "context",
            "max_output_bytes",
            "environment",
            "inherit_environment",
            "scope",
            "cwd",
            "kill_on_output_limit",
        ],
    )?;
    let (timeout,) = parsed.required;
    let limits = launch_limits::for_call(ruby, rb_self, &|name| limit_keywords.get(name), true)?;
    let (context, max_output_bytes, environment, inherit_environment, _scope, cwd, kill) =
        parsed.optional;
    let timeout = validate_timeout(ruby, timeout)?;
    let max_output_bytes = validate_output_bytes(
        ruby,
        max_output_bytes.unwrap_or_else(|| ruby.qnil().as_value()),
        output_limit(rb_self)?,
    )?;
    let argv = convert::argv(ruby, args.required.0)?;
    let plan = planned(ruby, rb_self, environment, inherit_environment, cwd)?;
    let denials =
        crate::ruby_api::denial::Reporter::of(rb_self, argv.first().map_or("", String::as_str));
    let request = RunRequest {
        argv,
        timeout,
        context: context.filter(|c| !c.is_nil()),
        max_output_bytes,
        environment: plan.environment,
        inherit_environment: plan.inherit_environment,
        chdir: Some(plan.cwd),
        spawn_options: SpawnOptions::default(),
        owner: Some(ownership::owner(ruby, rb_self)?),
        kill_on_output_limit: kill.is_some_and(|value| value.to_bool()),
        limits,
        denials,
    };
    process_runner::run(ruby, request)
}

/// Starts an owned, duplex ProcessSession on the host; `allow_subprocesses: false` cannot be enforced and raises CapabilityError.
fn start_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    // More keywords than one get_kwargs call takes: the first collects the rest.
    type Five = (
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
    );
    let (keywords, limit_keywords) = launch_limits::take(ruby, args.keywords)?;
    let first = get_kwargs::<_, (), Five, RHash>(
        keywords,
        &[],
        &[
            "context",
            "environment",
            "inherit_environment",
            "scope",
            "cwd",
        ],
    )?;
    type Three = (Option<Value>, Option<Value>, Option<Value>);
    let second = get_kwargs::<_, (), Three, ()>(
        first.splat,
        &[],
        &["output_bytes", "file_bytes", "allow_subprocesses"],
    )?;
    let (context, environment, inherit_environment, _scope, cwd) = first.optional;
    let (output_bytes, file_bytes, allow_subprocesses) = second.optional;
    let limit = |name: &str| limit_keywords.get(name);
    // nil means the default (H.6), which here is true.
    if allow_subprocesses.is_some_and(|allow| !allow.is_nil() && !truthy(allow)) {
        return Err(errors::capability_error(
            ruby,
            "the unrestricted sandbox cannot prohibit subprocess creation",
        ));
    }
    let optional_positive = |value: Option<Value>, name: &str| -> Result<Option<u64>, Error> {
        value
            .filter(|v| !v.is_nil())
            .map(|v| positive_integer(ruby, v, name))
            .transpose()
    };
    let argv = convert::argv(ruby, args.required.0)?;
    let plan = planned(ruby, rb_self, environment, inherit_environment, cwd)?;
    let denials =
        crate::ruby_api::denial::Reporter::of(rb_self, argv.first().map_or("", String::as_str));
    let request = SessionRequest {
        argv,
        environment: plan.environment,
        inherit_environment: plan.inherit_environment,
        chdir: Some(plan.cwd),
        output_bytes: match optional_positive(output_bytes, "output_bytes")? {
            Some(bytes) => bytes,
            None => output_limit(rb_self)?,
        },
        limits: launch_limits::for_call(ruby, rb_self, &limit, true)?,
        memory_reader: None,
        file_bytes: optional_positive(file_bytes, "file_bytes")?,
        spawn_options: SpawnOptions::default(),
        owner: Some(ownership::owner(ruby, rb_self)?),
        denials,
    };
    // 2.4: once, before spawning.
    check_context(context)?;
    process_session::start(ruby, request)
}
