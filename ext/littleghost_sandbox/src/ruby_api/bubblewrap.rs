//! `LittleGhost::Sandboxes::Bubblewrap` (SPEC §16, §19): Linux namespaces
//! through `bwrap`. The argv, overlays, masks and cwd rule live in the core
//! (`backend::bubblewrap`); this file reads Ruby state, pins grant
//! identities, probes bwrap once per executable, and launches through the
//! shared process runner and sessions.
//!
//! Network `:allowlist` is not implemented in this round: it is refused at
//! `new` with CapabilityError and not listed among the network modes.

use std::cell::{Cell, RefCell};
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::seccomp;
use littleghost_sandbox_core::grants::Grant;
use littleghost_sandbox_core::launch;
use littleghost_sandbox_core::policy as core_policy;
use magnus::{
    function, gc::Marker, method, prelude::*, value::LazyId, value::Opaque, DataTypeFunctions,
    Error, KwArgs, RArray, RHash, RModule, RObject, RString, Ruby, Symbol, TypedData, Value,
};

use crate::helpers::args::{command_call, keywords, keywords_only, kwargs};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::probe;
use crate::helpers::scoped_files;
use crate::helpers::value_object as vo;
use crate::ruby_api::errors;
use crate::ruby_api::mount;
use crate::ruby_api::{
    capabilities, network_policy, ownership, policy, process_runner, process_session, sandbox,
};
use littleghost_sandbox_core::process::SpawnOptions;

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class = sandboxes.define_class(
        "Bubblewrap",
        constants::class(ruby, "LittleGhost::Sandbox")?,
    )?;
    class.const_set(
        "DEFAULT_EXECUTABLE",
        vo::frozen_str(ruby, bw::DEFAULT_EXECUTABLE),
    )?;
    class.const_set("RUNTIME_ROOTS", frozen_strings(ruby, &bw::RUNTIME_ROOTS))?;
    class.const_set(
        "COMPATIBILITY_ROOTS",
        frozen_strings(ruby, &bw::COMPATIBILITY_ROOTS),
    )?;
    class.const_set("DEFAULT_TMPFS_SIZE", bw::DEFAULT_TMPFS_SIZE)?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    class.define_singleton_method("backend_capabilities", function!(backend_capabilities, 0))?;
    let state = class.define_class("State", ruby.class_object())?;
    state.undef_default_alloc_func();
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("effective_policy", method!(effective_policy, 0))?;
    class.define_method("capabilities", method!(capabilities_of, 0))?;
    class.define_method("writable?", method!(writable, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    scoped_files::define(class)?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
    class.define_method("bubblewrap_args", method!(bubblewrap_args, -1))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Small helpers shared with the Seatbelt and Native bindings.

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

// ---------------------------------------------------------------------------
// Probe (B.2) and capabilities (B.3).

/// The features this backend enforces, whatever the policy (B.3).
fn feature_names() -> Vec<&'static str> {
    let mut features = vec![
        "filesystem_read",
        "filesystem_list",
        "filesystem_write",
        "filesystem_replace",
        "process_execute",
        "process_spawn",
        "process_tree_ownership",
    ];
    // Claimed only where the seccomp filter exists for this architecture.
    if seccomp::Arch::native().is_some() {
        features.push("process_spawn_denial");
    }
    features
}

/// Network modes this round enforces; `:allowlist` is not implemented yet.
const NETWORK_MODES: [&str; 2] = ["inherit", "none"];

/// The capabilities every Bubblewrap sandbox has, independent of its policy.
fn backend_capabilities(ruby: &Ruby) -> Result<Value, Error> {
    capabilities::build(ruby, &feature_names(), &NETWORK_MODES, "namespace")
}

/// The probe Hash: the backend capabilities unless there is a reason it is unavailable.
fn probe_result(ruby: &Ruby, unavailable: Option<String>) -> Result<RHash, Error> {
    probe::result(ruby, unavailable, || backend_capabilities(ruby))
}

/// Reports whether bwrap can create the namespaces a sandbox needs, with an actionable reason when not.
fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    let options = keywords_only(args)?;
    let values = keywords(
        ruby,
        options,
        &[],
        &["executable", "bubblewrap", "platform"],
    )?;
    let executable = match values[0].or(values[1]).filter(|v| !v.is_nil()) {
        Some(value) => option_path(ruby, value)?,
        None => PathBuf::from(bw::DEFAULT_EXECUTABLE),
    };
    let platform = convert::display_string(ruby, platform_or_host(ruby, values[2])?)?;
    if !platform.contains("linux") {
        return probe_result(ruby, Some("Bubblewrap is supported only on Linux".into()));
    }
    if !bw::is_executable_file(&executable) {
        return probe_result(ruby, Some(bw::missing_reason(&executable)));
    }
    probe_result(ruby, bw::functional_probe(&executable).err())
}

// ---------------------------------------------------------------------------
// Construction (B.4): the backend's state lives in one Rust struct.

const OPTIONS: [&str; 15] = [
    "policy",
    "profiles",
    "limits",
    "bubblewrap",
    "platform",
    "relay",
    "gateway_options",
    "command_wrapper",
    "proc",
    "tmpfs",
    "masks",
    "runtime_roots",
    "uid",
    "gid",
    "tmpfs_size",
];

/// The backend options of B.4, the effective policy, and the pins of `open`.
/// Reached from the sandbox through one hidden slot ([`STATE`]): the
/// instance itself belongs to `LittleGhost::Sandbox`, whose own state is
/// native data, so a subclass cannot carry a second TypedData.
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Bubblewrap::State",
    free_immediately,
    size,
    mark
)]
struct State {
    executable: PathBuf,
    platform: String,
    command_wrapper: Option<Opaque<Value>>,
    effective_policy: Opaque<Value>,
    proc_mount: bw::ProcMount,
    tmpfs: Vec<PathBuf>,
    masks: Vec<PathBuf>,
    runtime_roots: Vec<PathBuf>,
    uid: Option<u32>,
    gid: Option<u32>,
    tmpfs_size: u64,
    opened: Cell<bool>,
    pins: RefCell<Option<launch::Pins>>,
}

impl DataTypeFunctions for State {
    fn mark(&self, marker: &Marker) {
        marker.mark(self.effective_policy);
        if let Some(wrapper) = self.command_wrapper {
            marker.mark(wrapper);
        }
    }
}

static STATE: LazyId = LazyId::new("__littleghost_bubblewrap");

/// The backend state of `rb_self` (set by `initialize`).
fn state(ruby: &Ruby, rb_self: RObject) -> Result<&'static State, Error> {
    let slot: Option<Value> = rb_self.ivar_get(*STATE)?;
    slot.and_then(|value| <&State>::try_convert(value).ok())
        .ok_or_else(|| errors::tool_error(ruby, "bubblewrap sandbox is not initialized"))
}

/// `command_wrapper:` is nil, a callable or an argv Array (a prefix);
/// anything else is refused at construction (PolicyError), not at the first
/// launch.
fn command_wrapper(ruby: &Ruby, value: Option<Value>) -> Result<Option<Value>, Error> {
    match value {
        None => Ok(None),
        Some(wrapper) if wrapper.respond_to("call", false)? => Ok(Some(wrapper)),
        Some(wrapper) if RArray::from_value(wrapper).is_some() => Ok(Some(wrapper)),
        Some(wrapper) => Err(errors::policy_error(
            ruby,
            format!(
                "sandbox command_wrapper must be callable or an argv Array (got {})",
                vo::inspect_value(ruby, wrapper).unwrap_or_default()
            ),
        )),
    }
}

/// Records the backend options of B.4 without touching the host; a nil policy counts as `{}`.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let options = keywords_only(args)?;
    let values = keywords(ruby, options, &["workspace"], &OPTIONS)?;
    let get = |name: &str| -> Option<Value> {
        let index = OPTIONS.iter().position(|o| *o == name).unwrap() + 1;
        values[index].filter(|v| !v.is_nil())
    };
    let workspace = values[0].unwrap();
    sandbox::assign(
        ruby,
        rb_self,
        workspace,
        get("policy"),
        get("profiles"),
        get("limits"),
    )?;
    let executable = match get("bubblewrap") {
        Some(value) => option_path(ruby, value)?,
        None => PathBuf::from(bw::DEFAULT_EXECUTABLE),
    };
    let platform = convert::display_string(ruby, platform_or_host(ruby, get("platform"))?)?;
    let command_wrapper = command_wrapper(ruby, get("command_wrapper"))?.map(Opaque::from);
    let proc_mount = normalize_proc(ruby, get("proc"))?;
    let tmpfs = match get("tmpfs") {
        Some(value) => normalized_targets(ruby, value)?,
        None => vec![PathBuf::from("/tmp"), PathBuf::from("/run")],
    };
    let masks = match get("masks") {
        Some(value) => normalized_targets(ruby, value)?,
        None => Vec::new(),
    };
    let runtime_roots = match get("runtime_roots") {
        Some(value) => expanded_paths(ruby, value)?,
        None => bw::RUNTIME_ROOTS.iter().map(PathBuf::from).collect(),
    };
    let uid = id_option(ruby, "uid", get("uid"))?;
    let gid = id_option(ruby, "gid", get("gid"))?;
    let tmpfs_size = tmpfs_size_option(ruby, get("tmpfs_size"))?;

    let requested: Value = rb_self.funcall("policy", ())?;
    let effective = policy_with_network_default(ruby, requested)?;
    let network = policy::borrow(effective).and_then(|p| p.core().network.as_ref());
    if network.is_some_and(|n| n.mode == core_policy::NetworkMode::Allowlist) {
        return Err(errors::capability_error(
            ruby,
            "the bubblewrap sandbox cannot enforce network mode :allowlist: allowlist networking is not implemented yet",
        ));
    }
    let state = State {
        executable,
        platform,
        command_wrapper,
        effective_policy: Opaque::from(effective),
        proc_mount,
        tmpfs,
        masks,
        runtime_roots,
        uid,
        gid,
        tmpfs_size,
        opened: Cell::new(false),
        pins: RefCell::new(None),
    };
    rb_self.ivar_set(*STATE, ruby.obj_wrap(state))
}

/// `proc:` is `:new`, `:none`, or a mount declaration whose target is forced to `/proc`.
fn normalize_proc(ruby: &Ruby, value: Option<Value>) -> Result<bw::ProcMount, Error> {
    let Some(value) = value else {
        return Ok(bw::ProcMount::New);
    };
    if let Some(symbol) = vo::try_to_sym(value)? {
        match symbol.name()?.as_ref() {
            "new" => return Ok(bw::ProcMount::New),
            "none" => return Ok(bw::ProcMount::None),
            _ => {}
        }
    }
    if vo::is_hash(ruby, value) {
        let declaration = vo::symbolize_keys(ruby, value)?;
        declaration.aset(ruby.to_symbol("target"), "/proc")?;
        let class = constants::class(ruby, "LittleGhost::Sandbox::Mount")?;
        let mount: Value = class.funcall("coerce", (declaration,))?;
        let grant = mount::grant_from_ruby(ruby, mount)?;
        return Ok(bw::ProcMount::Bind {
            source: grant.source,
            access: grant.access,
        });
    }
    Err(errors::policy_error(
        ruby,
        "bubblewrap proc must be :new, :none, or a mount Hash",
    ))
}

/// Mount targets normalised as in 9.1 (absolute, no NUL, no `..`, cleaned).
fn normalized_targets(ruby: &Ruby, value: Value) -> Result<Vec<PathBuf>, Error> {
    RArray::try_convert(vo::kernel(ruby, "Array", value)?)?
        .into_iter()
        .map(|item| mount::normalize_target(ruby, item))
        .collect()
}

/// `runtime_roots:` as absolute host paths (`File.expand_path(String(root))`).
fn expanded_paths(ruby: &Ruby, value: Value) -> Result<Vec<PathBuf>, Error> {
    RArray::try_convert(vo::kernel(ruby, "Array", value)?)?
        .into_iter()
        .map(|root| {
            let root = vo::expand_path(ruby, vo::kernel(ruby, "String", root)?, None)?;
            convert::string_path(root.as_value())
        })
        .collect()
}

/// `uid:`/`gid:` must be integers ≥ 0.
fn id_option(ruby: &Ruby, name: &str, value: Option<Value>) -> Result<Option<u32>, Error> {
    let Some(value) = value else { return Ok(None) };
    match magnus::Integer::from_value(value).and_then(|i| i.to_u32().ok()) {
        Some(id) => Ok(Some(id)),
        None => Err(errors::policy_error(
            ruby,
            format!("bubblewrap {name} must be an integer >= 0"),
        )),
    }
}

/// `tmpfs_size:` (H.3) must be a positive Integer (bytes); nil means the default.
fn tmpfs_size_option(ruby: &Ruby, value: Option<Value>) -> Result<u64, Error> {
    let Some(value) = value else {
        return Ok(bw::DEFAULT_TMPFS_SIZE);
    };
    match magnus::Integer::from_value(value).and_then(|i| i.to_u64().ok()) {
        Some(size) if size > 0 => Ok(size),
        _ => Err(errors::policy_error(
            ruby,
            format!(
                "bubblewrap tmpfs_size must be a positive Integer (bytes), got {}",
                value.inspect()
            ),
        )),
    }
}

// ---------------------------------------------------------------------------
// Readers (16.1, 16.2, B.3).

/// The requested policy, with a nil network filled in as `:none`.
fn effective_policy(ruby: &Ruby, rb_self: RObject) -> Result<Value, Error> {
    Ok(ruby.get_inner(state(ruby, rb_self)?.effective_policy))
}

/// The backend capabilities of B.3 (independent of the policy).
fn capabilities_of(ruby: &Ruby, _rb_self: RObject) -> Result<Value, Error> {
    backend_capabilities(ruby)
}

/// True iff writes are supported and some tool-visible grant is writable (also Seatbelt's).
pub(crate) fn writable(ruby: &Ruby, rb_self: RObject) -> Result<bool, Error> {
    let supports: Value = rb_self.funcall("supports?", (ruby.to_symbol("filesystem_write"),))?;
    Ok(supports.to_bool() && sandbox::has_writable_file_grant(rb_self.as_value())?)
}

// ---------------------------------------------------------------------------
// Lifecycle (B.5).

/// Checks platform, bwrap, grant sources and the functional probe, pinning grant identities; idempotent. With a block, yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    keywords(ruby, options, &[], &["run"])?;
    let state = state(ruby, rb_self)?;
    if !state.opened.get() {
        open_steps(ruby, rb_self, state)?;
    }
    ownership::yield_and_close(ruby, rb_self.as_value())
}

fn open_steps(ruby: &Ruby, rb_self: RObject, state: &State) -> Result<(), Error> {
    if !state.platform.contains("linux") {
        return Err(errors::unsupported_platform_error(
            ruby,
            "Bubblewrap sandboxing is supported only on Linux",
        ));
    }
    if !bw::is_executable_file(&state.executable) {
        return Err(errors::dependency_error(
            ruby,
            bw::missing_reason(&state.executable),
        ));
    }
    let grants = policy_grants(ruby, rb_self.as_value())?;
    for grant in &grants {
        if grant.source.exists() && !grant.source.is_dir() {
            return Err(errors::policy_error(
                ruby,
                "sandbox mount source is not a directory",
            ));
        }
    }
    let pins = errors::core_result(ruby, launch::Pins::capture(&grants))?;
    bw::functional_probe(&state.executable)
        .map_err(|reason| errors::dependency_error(ruby, reason))?;
    state.pins.replace(Some(pins));
    state.opened.set(true);
    Ok(())
}

/// Terminates every program and session the sandbox or its scopes started (H.4), then marks it unopened; idempotent.
fn close(ruby: &Ruby, rb_self: RObject) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    let state = state(ruby, rb_self)?;
    state.opened.set(false);
    state.pins.replace(None);
    Ok(())
}

/// The pins of `open`, taken now when `bubblewrap_args` runs before `open`.
fn pins(ruby: &Ruby, state: &State, grants: &[Grant]) -> Result<launch::Pins, Error> {
    if let Some(pins) = state.pins.borrow().as_ref() {
        return Ok(pins.clone());
    }
    let pins = errors::core_result(ruby, launch::Pins::capture(grants))?;
    state.pins.replace(Some(pins.clone()));
    Ok(pins)
}

// ---------------------------------------------------------------------------
// The launch: the core plan (16.5, B.7, B.10), then the argv (B.8).

/// The bwrap options of a planned launch.
fn bwrap_options(
    ruby: &Ruby,
    rb_self: RObject,
    state: &State,
    plan: &launch::LaunchPlan,
    seccomp_fd: Option<i32>,
) -> Result<Vec<OsString>, Error> {
    let host = bw::RealHost;
    let grants = bw::launch_grants(&plan.selected, &plan.policy_grants, &host);
    let policy_value: Value = rb_self.funcall("effective_policy", ())?;
    let root_filesystem = match policy::borrow(policy_value) {
        Some(policy) => bw::RootFilesystem::parse(policy.core().root_filesystem.name()),
        None => {
            let root: Symbol = policy_value.funcall("root_filesystem", ())?;
            bw::RootFilesystem::parse(&root.name()?)
        }
    }
    .ok_or_else(|| errors::policy_error(ruby, "unsupported root_filesystem"))?;
    let mut launch = bw::Launch::new(root_filesystem, grants, plan.cwd.clone());
    launch.masks = state.masks.clone();
    for mask in bw::scope_masks(&plan.policy_grants, &launch.grants, &host) {
        if !launch.masks.contains(&mask) {
            launch.masks.push(mask);
        }
    }
    launch.tmpfs = state.tmpfs.clone();
    launch.runtime_roots = state.runtime_roots.clone();
    launch.proc_mount = state.proc_mount.clone();
    let workspace: Value = rb_self.funcall("workspace", ())?;
    launch.workspace_paths = vec![convert::string_path(workspace.funcall("root", ())?)?];
    for (_, path) in vo::pairs(workspace.funcall("paths", ())?)? {
        launch.workspace_paths.push(convert::string_path(path)?);
    }
    launch.environment = plan.environment.clone();
    launch.inherit_environment = plan.inherit_environment;
    launch.network = plan.network;
    launch.uid = state.uid;
    launch.gid = state.gid;
    launch.seccomp_fd = seccomp_fd;
    launch.tmpfs_size = state.tmpfs_size;
    errors::core_result(ruby, bw::bubblewrap_args(&launch, &host))
}

/// The grants of a scope (validated), as core grants.
fn scope_grants(ruby: &Ruby, scope: Option<Value>) -> Result<Option<Vec<Grant>>, Error> {
    let Some(scope) = scope else { return Ok(None) };
    RArray::try_convert(scope.funcall("process_grants", ())?)?
        .into_iter()
        .map(|m| mount::grant_from_ruby(ruby, m))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The network a scope sets, if any.
pub(crate) fn scope_network(scope: Option<Value>) -> Result<Option<bw::NetworkMode>, Error> {
    let Some(scope) = scope else { return Ok(None) };
    let network: Value = scope.funcall("network", ())?;
    Ok(network_policy::borrow(network).and_then(|n| bw::NetworkMode::parse(n.core().mode.name())))
}

/// The bwrap options (before `--`) for the given mounts, cwd, environment and network; works before `open`.
fn bubblewrap_args(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<RArray, Error> {
    let options = keywords_only(args)?;
    let names = [
        "mounts",
        "cwd",
        "environment",
        "inherit_environment",
        "network",
    ];
    let values = keywords(ruby, options, &[], &names)?;
    let [mounts, cwd, environment, inherit, network] =
        [values[0], values[1], values[2], values[3], values[4]].map(|v| v.filter(|v| !v.is_nil()));
    let state = state(ruby, rb_self)?;
    let selected = match mounts {
        None => None,
        Some(mounts) => Some(
            RArray::try_convert(vo::kernel(ruby, "Array", mounts)?)?
                .into_iter()
                .map(|m| mount::grant_from_ruby(ruby, m))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let policy_value: Value = rb_self.funcall("effective_policy", ())?;
    let core = core_policy(ruby, policy_value)?;
    // This inspection method shows the argv for exactly the given values: no
    // workspace layer, no double opt-in (the launch methods add those).
    let environment = match environment {
        Some(values) => convert::environment(ruby, Some(values))?,
        None => policy_values(ruby, &core)?,
    };
    let inherit_environment = match inherit {
        Some(value) => value.to_bool(),
        None => core.environment.inherit(),
    };
    let network = match network {
        None => launch::select_network(None, core.network.as_ref()),
        Some(value) => {
            let class = constants::class(ruby, "LittleGhost::Sandbox::NetworkPolicy")?;
            let policy: Value = class.funcall("coerce", (value,))?;
            network_policy::borrow(policy)
                .and_then(|n| bw::NetworkMode::parse(n.core().mode.name()))
                .unwrap_or(bw::NetworkMode::None)
        }
    };
    let policy_grants = policy_grants(ruby, rb_self.as_value())?;
    errors::core_result(
        ruby,
        pins(ruby, state, &policy_grants)?.verify(&policy_grants),
    )?;
    let plan = launch::LaunchPlan {
        environment,
        inherit_environment,
        network,
        selected: selected.unwrap_or_else(|| policy_grants.clone()),
        policy_grants,
        cwd: launch_cwd(ruby, rb_self.as_value(), cwd)?,
        filter: None,
    };
    let options = bwrap_options(ruby, rb_self, state, &plan, None)?;
    Ok(ruby.ary_from_iter(options.iter().map(|o| os_to_ruby(ruby, o))))
}

/// The core policy of an effective policy value.
fn core_policy(ruby: &Ruby, value: Value) -> Result<core_policy::Policy, Error> {
    match policy::borrow(value) {
        Some(policy) => Ok(policy.core().clone()),
        None => Err(errors::policy_error(
            ruby,
            "sandbox effective_policy must be a LittleGhost::Sandbox::Policy",
        )),
    }
}

/// The policy's variables as checked text.
fn policy_values(
    ruby: &Ruby,
    policy: &core_policy::Policy,
) -> Result<Vec<(String, String)>, Error> {
    errors::core_result(ruby, launch::policy_values(&policy.environment))
}

fn os_to_ruby(ruby: &Ruby, value: &std::ffi::OsStr) -> RString {
    match std::str::from_utf8(value.as_bytes()) {
        Ok(text) => ruby.str_new(text),
        Err(_) => ruby.str_from_slice(value.as_bytes()),
    }
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

/// The call's launch keywords, as given.
struct Call {
    command: Value,
    scope: Option<Value>,
    cwd: Option<Value>,
    environment: Option<Value>,
    inherit: Option<Value>,
    allow_subprocesses: bool,
}

/// The command after the `command_wrapper:` of B.4, if any.
fn wrapped_command(
    ruby: &Ruby,
    rb_self: RObject,
    state: &State,
    command: Vec<String>,
    scope: Option<Value>,
) -> Result<Vec<String>, Error> {
    let Some(wrapper) = state.command_wrapper.map(|w| ruby.get_inner(w)) else {
        return Ok(command);
    };
    let rb_argv = ruby.ary_from_iter(command.iter().map(|arg| ruby.str_new(arg)));
    let wrapped: Value = if wrapper.respond_to("call", false)? {
        let workspace: Value = rb_self.funcall("workspace", ())?;
        let scope_value = scope.unwrap_or_else(|| ruby.qnil().as_value());
        let kw = kwargs(
            ruby,
            &[
                ("argv", rb_argv.as_value()),
                ("workspace", workspace),
                ("scope", scope_value),
            ],
        )?;
        wrapper.funcall("call", (KwArgs(kw),))?
    } else {
        let prefix = RArray::try_convert(vo::kernel(ruby, "Array", wrapper)?)?;
        prefix.funcall("+", (rb_argv,))?
    };
    convert::argv(ruby, wrapped)
}

/// 16.5 and B.10: convert the call, ask the core for the launch plan, apply
/// the command wrapper, build the argv. The returned fd holds the filter and
/// must outlive the spawn.
fn wrap_command(
    ruby: &Ruby,
    rb_self: RObject,
    call: Call,
) -> Result<(HostCommand, Option<OwnedFd>), Error> {
    let argv = convert::argv(ruby, call.command)?;
    let state = state(ruby, rb_self)?;
    if !state.opened.get() {
        let _: Value = rb_self.funcall("open", ())?;
    }
    let scope = validated_scope(call.scope)?;
    let selected = scope_grants(ruby, scope)?;
    let scope_network = scope_network(scope)?;
    let policy_value: Value = rb_self.funcall("effective_policy", ())?;
    let core = core_policy(ruby, policy_value)?;
    let policy_grants = policy_grants(ruby, rb_self.as_value())?;
    let pins = pins(ruby, state, &policy_grants)?;
    let cwd = launch_cwd(ruby, rb_self.as_value(), call.cwd)?;
    let request = launch::LaunchRequest {
        policy_environment: &core.environment,
        call_inherit: call.inherit.is_some_and(|v| v.to_bool()),
        scope_network,
        policy_network: core.network.as_ref(),
        policy_grants,
        selected,
        require_utf8_paths: true,
        pins: Some(&pins),
        cwd,
        fresh_directories: &state.tmpfs,
        filter: launch::Filter::Seccomp {
            deny_subprocesses: !call.allow_subprocesses,
            uid: state.uid,
            gid: state.gid,
        },
    };
    let layers = || -> Result<launch::Layers, Error> {
        let workspace: Value = rb_self.funcall("workspace", ())?;
        Ok((
            convert::environment(ruby, Some(workspace.funcall("environment", ())?))?,
            convert::environment(ruby, call.environment)?,
        ))
    };
    let mut plan = launch::plan(request, layers, |e| errors::from_core(ruby, e))?;
    let filter = plan.filter.take();
    let display_argv0 = argv[0].clone();
    let command = wrapped_command(ruby, rb_self, state, argv, scope)?;
    // The filter is the child's only inherited descriptor, so bwrap sees it as the first one.
    let seccomp_fd = filter.as_ref().map(|_| SpawnOptions::child_fd(0));
    let options = bwrap_options(ruby, rb_self, state, &plan, seccomp_fd)?;
    let executable = convert::path_text(ruby, &state.executable, "bubblewrap executable path")?;
    let exec_argv0 = command[0].as_bytes().to_vec();
    let mut full = vec![executable];
    // The runner takes UTF-8 argv; a lossy conversion would bind or mask a
    // different path (a mask on a renamed twin leaves the real one visible).
    for option in options {
        let option = option
            .into_string()
            .map_err(|_| errors::policy_error(ruby, launch::MOUNT_PATH_NOT_UTF8))?;
        full.push(option);
    }
    full.push("--".into());
    full.extend(command);
    let host = HostCommand {
        argv: full,
        // bwrap gets the host environment only when inheriting (B.6); the child's comes by --setenv.
        environment: Vec::new(),
        inherit_environment: plan.inherit_environment,
        chdir: None,
        keep_fds: filter
            .as_ref()
            .map(|fd| fd.as_raw_fd())
            .into_iter()
            .collect(),
        exec_argv0: Some((exec_argv0, display_argv0)),
    };
    Ok((host, filter))
}

fn scope_allows_spawn(ruby: &Ruby, scope: Option<Value>) -> Result<bool, Error> {
    match scope.filter(|v| !v.is_nil()) {
        None => Ok(true),
        Some(scope) => Ok(scope
            .funcall::<_, _, Value>("supports?", (ruby.to_symbol("process_spawn"),))?
            .to_bool()),
    }
}

/// Runs `command` (no shell) inside bwrap and returns its Execution; a scope without `process_spawn` runs it under the subprocess filter.
fn execute_program(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
    let (command, values) = command_call(ruby, args, &["timeout"], &EXECUTE_KEYS)?;
    let [timeout, context, max_output_bytes, environment, inherit, scope, cwd] = [
        values[0], values[1], values[2], values[3], values[4], values[5], values[6],
    ];
    let (timeout, max_output_bytes) = run_limits(
        ruby,
        rb_self,
        timeout.unwrap(),
        max_output_bytes.filter(|v| !v.is_nil()),
    )?;
    let call = Call {
        command,
        scope,
        cwd,
        environment,
        inherit,
        allow_subprocesses: scope_allows_spawn(ruby, scope)?,
    };
    let (host, _filter) = wrap_command(ruby, rb_self, call)?;
    run_host(
        ruby,
        rb_self,
        host,
        timeout,
        context.filter(|v| !v.is_nil()),
        max_output_bytes,
    )
}

/// Starts `command` inside bwrap as an owned ProcessSession; `allow_subprocesses: false` installs the subprocess filter.
fn start_program(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
    let (command, values) = command_call(ruby, args, &[], &START_KEYS)?;
    let get = |name: &str| {
        values[START_KEYS.iter().position(|k| *k == name).unwrap()].filter(|v| !v.is_nil())
    };
    // nil means the default (H.6), which here is true.
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
    let limits = session_limits(ruby, rb_self, &get)?;
    process_runner::check_context(get("context"))?;
    let call = Call {
        command,
        scope,
        cwd: get("cwd"),
        environment: get("environment"),
        inherit: get("inherit_environment"),
        allow_subprocesses: allow,
    };
    let (host, _filter) = wrap_command(ruby, rb_self, call)?;
    start_host(ruby, rb_self, host, limits)
}

// ---------------------------------------------------------------------------
// The shared runner glue (also Seatbelt's).

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
    owner: RObject,
    host: HostCommand,
    timeout: f64,
    context: Option<Value>,
    max_output_bytes: u64,
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
    };
    let execution = process_runner::run(ruby, request)?;
    reinterpret_exec_failure(ruby, &host, execution)
}

/// The session limits of a `start_program` call, already validated.
pub(crate) struct SessionLimits {
    pub output_bytes: u64,
    pub memory_bytes: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub file_bytes: Option<u64>,
}

/// `output_bytes` (default `limits.output_bytes`) and the optional limits, each a positive Integer.
pub(crate) fn session_limits(
    ruby: &Ruby,
    rb_self: RObject,
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
        memory_bytes: optional("memory_bytes")?,
        cpu_seconds: optional("cpu_seconds")?,
        file_bytes: optional("file_bytes")?,
    })
}

/// Starts a wrapped host command as a shared ProcessSession (§18).
pub(crate) fn start_host(
    ruby: &Ruby,
    owner: RObject,
    host: HostCommand,
    limits: SessionLimits,
) -> Result<Value, Error> {
    process_session::start(
        ruby,
        process_session::SessionRequest {
            argv: host.argv,
            environment: host.environment,
            inherit_environment: host.inherit_environment,
            chdir: host.chdir,
            output_bytes: limits.output_bytes,
            memory_bytes: limits.memory_bytes,
            memory_reader: None,
            cpu_seconds: limits.cpu_seconds,
            file_bytes: limits.file_bytes,
            spawn_options: SpawnOptions {
                inherited_fds: host.keep_fds,
            },
            owner: Some(ownership::owner(ruby, owner)?),
        },
    )
}

/// `max_output_bytes` (default `limits.output_bytes`) and `timeout`, validated before anything is opened or spawned (17.3).
pub(crate) fn run_limits(
    ruby: &Ruby,
    rb_self: RObject,
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
pub(crate) const EXECUTE_KEYS: [&str; 6] = [
    "context",
    "max_output_bytes",
    "environment",
    "inherit_environment",
    "scope",
    "cwd",
];

/// The keywords of `start_program`, all optional.
pub(crate) const START_KEYS: [&str; 10] = [
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
];
