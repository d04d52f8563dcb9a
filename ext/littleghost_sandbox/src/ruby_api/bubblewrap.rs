//! `LittleGhost::Sandboxes::Bubblewrap` (SPEC §16, §19): Linux namespaces
//! through `bwrap`. The argv, overlays, masks and cwd rule live in the core
//! (`backend::bubblewrap`); this file reads Ruby state, pins grant
//! identities, probes bwrap once per executable, and launches through the
//! shared process runner and sessions.
//!
//! Network `:allowlist` is not implemented in this round: it is refused at
//! `new` with CapabilityError and not listed among the network modes.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::seccomp;
use littleghost_sandbox_core::grants::{Grant, Identity};
use magnus::{
    function, method, prelude::*, Error, KwArgs, RArray, RHash, RModule, RObject, RString, Ruby,
    Symbol, Value,
};

use crate::helpers::args::{command_call, keywords, keywords_only, kwargs};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::probe;
use crate::helpers::scoped_files;
use crate::helpers::value_object as vo;
use crate::ruby_api::errors;
use crate::ruby_api::launch_limits;
use crate::ruby_api::mount;
use crate::ruby_api::{capabilities, ownership, process_runner, process_session, sandbox};
use littleghost_sandbox_core::limits::plan::Plan;
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

/// The network mode of a launch: the scope's when it has one, else the policy's.
pub(crate) fn launch_network(
    ruby: &Ruby,
    rb_self: Value,
    scope: Option<Value>,
) -> Result<bw::NetworkMode, Error> {
    let mut network: Value = ruby.qnil().as_value();
    if let Some(scope) = scope {
        network = scope.funcall("network", ())?;
    }
    if network.is_nil() {
        let policy: Value = rb_self.funcall("effective_policy", ())?;
        network = policy.funcall("network", ())?;
    }
    if network.is_nil() {
        return Ok(bw::NetworkMode::None);
    }
    let mode: Symbol = network.funcall("mode", ())?;
    let name = mode.name()?;
    bw::NetworkMode::parse(&name)
        .ok_or_else(|| errors::policy_error(ruby, format!("unsupported network mode :{name}")))
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
    // L.3: only what the kernel enforces for launches here.
    features.extend(launch_limits::features());
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
// Construction (B.4).

const OPTIONS: [&str; 16] = [
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
    "process_limits",
];

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
        Some(value) => vo::kernel(ruby, "String", value)?,
        None => vo::frozen_str(ruby, bw::DEFAULT_EXECUTABLE).as_value(),
    };
    rb_self.ivar_set("@bubblewrap", executable)?;
    rb_self.ivar_set("@platform", platform_or_host(ruby, get("platform"))?)?;
    rb_self.ivar_set("@relay", get("relay"))?;
    rb_self.ivar_set(
        "@gateway_options",
        get("gateway_options").unwrap_or_else(|| ruby.hash_new().as_value()),
    )?;
    rb_self.ivar_set(
        "@command_wrapper",
        command_wrapper(ruby, get("command_wrapper"))?,
    )?;
    rb_self.ivar_set("@proc", normalize_proc(ruby, get("proc"))?)?;
    let default_tmpfs = frozen_strings(ruby, &["/tmp", "/run"]).as_value();
    rb_self.ivar_set(
        "@tmpfs",
        normalized_targets(ruby, get("tmpfs").unwrap_or(default_tmpfs))?,
    )?;
    rb_self.ivar_set(
        "@masks",
        normalized_targets(
            ruby,
            get("masks").unwrap_or_else(|| ruby.ary_new().as_value()),
        )?,
    )?;
    let runtime_roots =
        get("runtime_roots").unwrap_or_else(|| frozen_strings(ruby, &bw::RUNTIME_ROOTS).as_value());
    let expanded = ruby.ary_new();
    for root in RArray::try_convert(vo::kernel(ruby, "Array", runtime_roots)?)?.into_iter() {
        let root = vo::expand_path(ruby, vo::kernel(ruby, "String", root)?, None)?;
        root.freeze();
        expanded.push(root)?;
    }
    expanded.freeze();
    rb_self.ivar_set("@runtime_roots", expanded)?;
    rb_self.ivar_set("@uid", id_option(ruby, "uid", get("uid"))?)?;
    rb_self.ivar_set("@gid", id_option(ruby, "gid", get("gid"))?)?;
    rb_self.ivar_set("@tmpfs_size", tmpfs_size_option(ruby, get("tmpfs_size"))?)?;
    launch_limits::store_defaults(ruby, rb_self, get("process_limits"))?;

    let requested: Value = rb_self.ivar_get("@policy")?;
    let effective = policy_with_network_default(ruby, requested)?;
    let network: Value = effective.funcall("network", ())?;
    if network.funcall::<_, _, Value>("allowlist?", ())?.to_bool() {
        return Err(errors::capability_error(
            ruby,
            "the bubblewrap sandbox cannot enforce network mode :allowlist: allowlist networking is not implemented yet",
        ));
    }
    rb_self.ivar_set("@effective_policy", effective)?;
    rb_self.ivar_set("@__opened", false)?;
    Ok(())
}

/// `proc:` is `:new`, `:none`, or a mount declaration whose target is forced to `/proc`.
fn normalize_proc(ruby: &Ruby, value: Option<Value>) -> Result<Value, Error> {
    let Some(value) = value else {
        return Ok(ruby.to_symbol("new").as_value());
    };
    if let Some(symbol) = vo::try_to_sym(value)? {
        let name = symbol.name()?;
        if name == "new" || name == "none" {
            return Ok(symbol.as_value());
        }
    }
    if vo::is_hash(ruby, value) {
        let declaration = vo::symbolize_keys(ruby, value)?;
        declaration.aset(ruby.to_symbol("target"), "/proc")?;
        let class = constants::class(ruby, "LittleGhost::Sandbox::Mount")?;
        return class.funcall("coerce", (declaration,));
    }
    Err(errors::policy_error(
        ruby,
        "bubblewrap proc must be :new, :none, or a mount Hash",
    ))
}

/// Mount targets normalised as in 9.1 (absolute, no NUL, no `..`, cleaned), frozen.
fn normalized_targets(ruby: &Ruby, value: Value) -> Result<RArray, Error> {
    let out = ruby.ary_new();
    for item in RArray::try_convert(vo::kernel(ruby, "Array", value)?)?.into_iter() {
        let path = mount::normalize_target(ruby, item)?;
        out.push(convert::path_to_ruby(ruby, &path))?;
    }
    out.freeze();
    Ok(out)
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

/// The requested policy, with a nil network filled in as `:none` (also Seatbelt's).
pub(crate) fn effective_policy(rb_self: RObject) -> Result<Value, Error> {
    rb_self.ivar_get("@effective_policy")
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

fn opened(rb_self: RObject) -> Result<bool, Error> {
    Ok(rb_self
        .ivar_get::<_, Option<bool>>("@__opened")?
        .unwrap_or(false))
}

/// Checks platform, bwrap, grant sources and the functional probe, pinning grant identities; idempotent. With a block, yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
    let options = keywords_only(args)?;
    keywords(ruby, options, &[], &["run"])?;
    if !opened(rb_self)? {
        open_steps(ruby, rb_self)?;
    }
    ownership::yield_and_close(ruby, rb_self.as_value())
}

fn open_steps(ruby: &Ruby, rb_self: RObject) -> Result<(), Error> {
    let platform = convert::display_string(ruby, rb_self.ivar_get("@platform")?)?;
    if !platform.contains("linux") {
        return Err(errors::unsupported_platform_error(
            ruby,
            "Bubblewrap sandboxing is supported only on Linux",
        ));
    }
    let executable = convert::string_path(rb_self.ivar_get("@bubblewrap")?)?;
    if !bw::is_executable_file(&executable) {
        return Err(errors::dependency_error(
            ruby,
            bw::missing_reason(&executable),
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
    let pins = capture_pins(ruby, &grants)?;
    bw::functional_probe(&executable).map_err(|reason| errors::dependency_error(ruby, reason))?;
    store_pins(ruby, rb_self, &pins)?;
    rb_self.ivar_set("@__opened", true)?;
    Ok(())
}

/// Terminates every program and session the sandbox or its scopes started (H.4), then marks it unopened; idempotent.
fn close(ruby: &Ruby, rb_self: RObject) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    rb_self.ivar_set("@__opened", false)?;
    rb_self.ivar_set("@__pins", ())?;
    Ok(())
}

type Pins = Vec<(PathBuf, Identity)>;

fn capture_pins(ruby: &Ruby, grants: &[Grant]) -> Result<Pins, Error> {
    grants
        .iter()
        .map(|g| match Identity::capture(&g.source) {
            Some(identity) => Ok((g.source.clone(), identity)),
            None => Err(errors::policy_error(
                ruby,
                "sandbox mount source is unavailable",
            )),
        })
        .collect()
}

fn store_pins(ruby: &Ruby, rb_self: RObject, pins: &Pins) -> Result<(), Error> {
    let array = ruby.ary_new();
    for (source, identity) in pins {
        let entry = ruby.ary_new();
        entry.push(convert::path_to_ruby(ruby, source))?;
        entry.push(convert::path_to_ruby(ruby, &identity.realpath))?;
        entry.push(identity.dev)?;
        entry.push(identity.ino)?;
        entry.freeze();
        array.push(entry)?;
    }
    array.freeze();
    rb_self.ivar_set("@__pins", array)
}

fn load_pins(rb_self: RObject) -> Result<Option<Pins>, Error> {
    let Some(array) = rb_self.ivar_get::<_, Option<RArray>>("@__pins")? else {
        return Ok(None);
    };
    let mut pins = Vec::with_capacity(array.len());
    for entry in array.into_iter() {
        let entry = RArray::try_convert(entry)?;
        pins.push((
            convert::path_of(entry.entry(0)?),
            Identity {
                realpath: convert::path_of(entry.entry(1)?),
                dev: entry.entry(2)?,
                ino: entry.entry(3)?,
            },
        ));
    }
    Ok(Some(pins))
}

/// 16.5 step 2: the policy grants are still the directories pinned at open
/// (pinned now when `bubblewrap_args` runs before `open`).
fn verify_pins(ruby: &Ruby, rb_self: RObject, grants: &[Grant]) -> Result<(), Error> {
    let pins = match load_pins(rb_self)? {
        Some(pins) => pins,
        None => {
            let pins = capture_pins(ruby, grants)?;
            store_pins(ruby, rb_self, &pins)?;
            pins
        }
    };
    for grant in grants {
        let pinned = pins
            .iter()
            .find(|(source, _)| *source == grant.source)
            .map(|(_, id)| id);
        if pinned.is_none() || Identity::capture(&grant.source).as_ref() != pinned {
            return Err(errors::policy_error(
                ruby,
                "sandbox mount source changed after opening",
            ));
        }
    }
    Ok(())
}

fn ensure_open(rb_self: RObject) -> Result<(), Error> {
    if !opened(rb_self)? {
        let _: Value = rb_self.funcall("open", ())?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The launch: argv (B.8) and its inputs (16.5, B.7, B.10).

/// What one launch needs besides the command.
struct LaunchInputs {
    /// `effective_policy.process_grants(workspace)`, computed once per launch.
    policy_grants: Vec<Grant>,
    selected: Option<Vec<Grant>>,
    cwd: Option<Value>,
    environment: Vec<(String, String)>,
    inherit_environment: bool,
    network: bw::NetworkMode,
    seccomp_fd: Option<i32>,
}

/// Builds the bwrap options for a launch from Ruby state plus `inputs`.
fn launch_options(
    ruby: &Ruby,
    rb_self: RObject,
    inputs: LaunchInputs,
) -> Result<Vec<OsString>, Error> {
    let host = bw::RealHost;
    let policy_grants = inputs.policy_grants;
    verify_pins(ruby, rb_self, &policy_grants)?;
    let selected = inputs.selected.unwrap_or_else(|| policy_grants.clone());
    let grants = bw::launch_grants(&selected, &policy_grants, &host);

    let policy: Value = rb_self.funcall("effective_policy", ())?;
    let root: Symbol = policy.funcall("root_filesystem", ())?;
    let root_filesystem = bw::RootFilesystem::parse(&root.name()?)
        .ok_or_else(|| errors::policy_error(ruby, "unsupported root_filesystem"))?;

    let mut launch = bw::Launch::new(
        root_filesystem,
        grants,
        launch_cwd(ruby, rb_self.as_value(), inputs.cwd)?,
    );
    launch.masks = paths_of(rb_self.ivar_get("@masks")?)?;
    for mask in bw::scope_masks(&policy_grants, &launch.grants, &host) {
        if !launch.masks.contains(&mask) {
            launch.masks.push(mask);
        }
    }
    launch.tmpfs = paths_of(rb_self.ivar_get("@tmpfs")?)?;
    launch.runtime_roots = paths_of(rb_self.ivar_get("@runtime_roots")?)?;
    launch.proc_mount = proc_mount(ruby, rb_self.ivar_get("@proc")?)?;
    let workspace: Value = rb_self.funcall("workspace", ())?;
    launch.workspace_paths = vec![convert::string_path(workspace.funcall("root", ())?)?];
    for (_, path) in vo::pairs(workspace.funcall("paths", ())?)? {
        launch.workspace_paths.push(convert::string_path(path)?);
    }
    launch.environment = inputs.environment;
    launch.inherit_environment = inputs.inherit_environment;
    launch.network = inputs.network;
    launch.uid = rb_self.ivar_get("@uid")?;
    launch.gid = rb_self.ivar_get("@gid")?;
    launch.seccomp_fd = inputs.seccomp_fd;
    launch.tmpfs_size = rb_self.ivar_get("@tmpfs_size")?;
    errors::core_result(ruby, bw::bubblewrap_args(&launch, &host))
}

/// An Array of Strings the backend normalised itself, as host paths.
fn paths_of(array: Value) -> Result<Vec<PathBuf>, Error> {
    RArray::try_convert(array)?
        .into_iter()
        .map(convert::string_path)
        .collect()
}

fn proc_mount(ruby: &Ruby, value: Value) -> Result<bw::ProcMount, Error> {
    if let Some(symbol) = Symbol::from_value(value) {
        return Ok(if symbol.name()? == "none" {
            bw::ProcMount::None
        } else {
            bw::ProcMount::New
        });
    }
    let grant = mount::grant_from_ruby(ruby, value)?;
    Ok(bw::ProcMount::Bind {
        source: grant.source,
        access: grant.access,
    })
}

fn os_to_ruby(ruby: &Ruby, value: &std::ffi::OsStr) -> RString {
    match std::str::from_utf8(value.as_bytes()) {
        Ok(text) => ruby.str_new(text),
        Err(_) => ruby.str_from_slice(value.as_bytes()),
    }
}

/// The bwrap options (before `--`) for the given mounts, cwd, environment and network; works before `open`.
fn bubblewrap_args(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<RArray, Error> {
    let options = keywords_only(args)?;
    let values = keywords(
        ruby,
        options,
        &[],
        &[
            "mounts",
            "cwd",
            "environment",
            "inherit_environment",
            "network",
        ],
    )?;
    let [mounts, cwd, environment, inherit, network] =
        [values[0], values[1], values[2], values[3], values[4]];
    let selected = match mounts.filter(|v| !v.is_nil()) {
        None => None,
        Some(mounts) => Some(
            RArray::try_convert(vo::kernel(ruby, "Array", mounts)?)?
                .into_iter()
                .map(|m| mount::grant_from_ruby(ruby, m))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let policy: Value = rb_self.funcall("effective_policy", ())?;
    let policy_environment: Value = policy.funcall("environment", ())?;
    let environment = match environment.filter(|v| !v.is_nil()) {
        Some(values) => convert::environment(ruby, Some(values))?,
        None => convert::environment(ruby, Some(policy_environment.funcall("values", ())?))?,
    };
    let inherit_environment = match inherit.filter(|v| !v.is_nil()) {
        Some(value) => value.to_bool(),
        None => policy_environment
            .funcall::<_, _, Value>("inherit?", ())?
            .to_bool(),
    };
    let network = match network.filter(|v| !v.is_nil()) {
        None => launch_network(ruby, rb_self.as_value(), None)?,
        Some(value) => {
            let class = constants::class(ruby, "LittleGhost::Sandbox::NetworkPolicy")?;
            let policy: Value = class.funcall("coerce", (value,))?;
            let mode: Symbol = policy.funcall("mode", ())?;
            bw::NetworkMode::parse(&mode.name()?).unwrap_or(bw::NetworkMode::None)
        }
    };
    let inputs = LaunchInputs {
        policy_grants: policy_grants(ruby, rb_self.as_value())?,
        selected,
        cwd,
        environment,
        inherit_environment,
        network,
        seccomp_fd: None,
    };
    let options = launch_options(ruby, rb_self, inputs)?;
    let out = ruby.ary_new();
    for option in &options {
        out.push(os_to_ruby(ruby, option))?;
    }
    Ok(out)
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

const MOUNT_PATH_NOT_UTF8: &str = "sandbox mount path must be valid UTF-8";

/// 16.5 and B.10: validate, merge the environment, apply the command
/// wrapper, add the filter when subprocesses are denied, build the argv.
/// The returned fd holds the filter and must outlive the spawn.
#[allow(clippy::too_many_arguments)] // the Ruby method's arguments, passed through as they are
fn wrap_command(
    ruby: &Ruby,
    rb_self: RObject,
    command: Value,
    scope: Option<Value>,
    cwd: Option<Value>,
    environment: Option<Value>,
    inherit: Option<Value>,
    allow_subprocesses: bool,
) -> Result<(HostCommand, Option<OwnedFd>), Error> {
    let argv = convert::argv(ruby, command)?;
    ensure_open(rb_self)?;
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
    let network = launch_network(ruby, rb_self.as_value(), scope)?;
    if network == bw::NetworkMode::Allowlist {
        return Err(errors::capability_error(
            ruby,
            "allowlist networking is not implemented yet",
        ));
    }
    // Workspace paths become bind paths and LITTLE_GHOST_WORKSPACE_* values,
    // and the runner takes UTF-8: refuse a path it cannot carry as the mount
    // problem it is, before the environment reports it as a bad value.
    let policy_grants = policy_grants(ruby, rb_self.as_value())?;
    let carried = policy_grants.iter().chain(selected.iter().flatten());
    if carried
        .flat_map(|g| [&g.source, &g.target])
        .any(|p| p.to_str().is_none())
    {
        return Err(errors::policy_error(ruby, MOUNT_PATH_NOT_UTF8));
    }
    let merged = sandbox::child_environment(ruby, rb_self.as_value(), environment)?;
    let inherit_environment = sandbox::inherits_environment(rb_self.as_value(), inherit)?;

    let display_argv0 = argv[0].clone();
    let mut command = argv;
    let wrapper: Option<Value> = rb_self
        .ivar_get::<_, Option<Value>>("@command_wrapper")?
        .filter(|v| !v.is_nil());
    if let Some(wrapper) = wrapper {
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
        command = convert::argv(ruby, wrapped)?;
    }

    // Every child runs under one filter: keyrings and set-id, device,
    // foreign-owner and xattr planting (H.2) are denied always, processes
    // too when they are not allowed. Where no filter exists for this
    // architecture, only the subprocess denial is refused (it was promised).
    let rules = seccomp::Filter::for_launch(
        !allow_subprocesses,
        rb_self.ivar_get("@uid")?,
        rb_self.ivar_get("@gid")?,
    );
    let filter = match seccomp::filter_fd(&rules) {
        Ok(fd) => Some(fd),
        Err(_) if allow_subprocesses => None,
        Err(error) => return Err(errors::from_core(ruby, error)),
    };
    // The filter is the child's only inherited descriptor, so bwrap sees it as the first one.
    let seccomp_fd = filter.as_ref().map(|_| SpawnOptions::child_fd(0));
    let inputs = LaunchInputs {
        policy_grants,
        selected,
        cwd,
        environment: merged,
        inherit_environment,
        network,
        seccomp_fd,
    };
    let options = launch_options(ruby, rb_self, inputs)?;
    // The launch accepted the working directory as inside a grant (bound at
    // the same path) or a fresh tmpfs; a missing one is the same ToolError
    // as on Unrestricted, not bwrap's own chdir failure (exit 1).
    let directory = launch_cwd(ruby, rb_self.as_value(), cwd)?;
    let tmpfs = paths_of(rb_self.ivar_get("@tmpfs")?)?;
    if !directory.is_dir() && !tmpfs.contains(&directory) {
        return Err(errors::tool_error(
            ruby,
            "Working directory is not available",
        ));
    }
    let executable = convert::path_text(
        ruby,
        &convert::string_path(rb_self.ivar_get("@bubblewrap")?)?,
        "bubblewrap executable path",
    )?;
    let exec_argv0 = command[0].as_bytes().to_vec();
    let mut full = vec![executable];
    // The runner takes UTF-8 argv; a lossy conversion would bind or mask a
    // different path (a mask on a renamed twin leaves the real one visible).
    for option in options {
        let option = option
            .into_string()
            .map_err(|_| errors::policy_error(ruby, MOUNT_PATH_NOT_UTF8))?;
        full.push(option);
    }
    full.push("--".into());
    full.extend(command);
    let host = HostCommand {
        argv: full,
        // bwrap gets the host environment only when inheriting (B.6); the child's comes by --setenv.
        environment: Vec::new(),
        inherit_environment,
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
    let limits = run_plan(ruby, rb_self, &values)?;
    let allow = scope_allows_spawn(ruby, scope)?;
    let (host, _filter) = wrap_command(
        ruby,
        rb_self,
        command,
        scope,
        cwd,
        environment,
        inherit,
        allow,
    )?;
    run_host(
        ruby,
        rb_self,
        host,
        timeout,
        context.filter(|v| !v.is_nil()),
        (max_output_bytes, values[7].is_some_and(|v| v.to_bool())),
        limits,
    )
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
    owner: RObject,
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
    rb_self: RObject,
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
        plan: launch_limits::for_call(ruby, rb_self, get, false)?,
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
            limits: limits.plan,
            memory_reader: None,
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

/// Starts `command` inside bwrap as an owned ProcessSession; `allow_subprocesses: false` installs the subprocess filter.
fn start_program(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
    let (command, values) = command_call(ruby, args, &[], &START_KEYS)?;
    let get = |name: &str| {
        values[START_KEYS.iter().position(|k| *k == name).unwrap()].filter(|v| !v.is_nil())
    };
    // nil means the default (H.6), which here is true.
    let allow = values[9]
        .filter(|v| !v.is_nil())
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
    let (host, _filter) = wrap_command(
        ruby,
        rb_self,
        command,
        scope,
        get("cwd"),
        get("environment"),
        get("inherit_environment"),
        allow,
    )?;
    start_host(ruby, rb_self, host, limits)
}
