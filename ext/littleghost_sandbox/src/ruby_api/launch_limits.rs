//! Whole-tree launch limits (SPEC §25 L.1-L.3) as every backend takes them:
//! the `memory_bytes:`, `tasks:` and `cpu_seconds:` keywords of
//! `execute_program` and `start_program`, over the defaults of the backend
//! option `process_limits:`. The decision of how each is enforced (cgroup,
//! sampler, per-process rlimit, refusal) is the core's
//! ([`littleghost_sandbox_core::limits::plan`]); this file only parses,
//! stores the defaults and maps the outcome to Ruby.

use littleghost_sandbox_core::limits::{
    self as core_limits,
    plan::{Plan, Requested},
    LimitExceeded,
};
use magnus::{prelude::*, value::LazyId, value::ReprValue, Error, RHash, Ruby, Symbol, Value};

use crate::ruby_api::sandbox::state::SandboxObj;

use crate::ruby_api::errors::{argument_error, capability_error, tool_error};
use crate::ruby_api::process_runner::positive_integer;

/// The limit keywords, in the order [`Requested`] holds them.
pub const KEYS: [&str; 3] = ["memory_bytes", "tasks", "cpu_seconds"];

/// The `process_limits:` defaults, in one hidden slot (no `@`: invisible to Ruby).
static DEFAULTS: LazyId = LazyId::new("__littleghost_process_limits");
/// The backend option `cgroup:` (a delegated cgroup v2 directory), hidden likewise.
static CGROUP: LazyId = LazyId::new("__littleghost_cgroup");

/// The three limits from their values (nil or absent: unlimited); each a
/// positive Integer, else ArgumentError naming it.
pub fn parse(ruby: &Ruby, values: [Option<Value>; 3]) -> Result<Requested, Error> {
    let [memory_bytes, tasks, cpu_seconds] = values;
    // Integers only (a Float or a numeric String is refused, not truncated).
    let one = |value: Option<Value>, name: &str| -> Result<Option<u64>, Error> {
        match value.filter(|value| !value.is_nil()) {
            None => Ok(None),
            Some(value) if magnus::Integer::from_value(value).is_some() => {
                positive_integer(ruby, value, name).map(Some)
            }
            Some(_) => Err(argument_error(
                ruby,
                format!("{name} must be a positive Integer"),
            )),
        }
    };
    Ok(Requested {
        memory_bytes: one(memory_bytes, KEYS[0])?,
        tasks: one(tasks, KEYS[1])?,
        cpu_seconds: one(cpu_seconds, KEYS[2])?,
        own_tree_if_possible: false,
    })
}

/// Validates the backend option `process_limits:` (nil, or a Hash with some
/// of `memory_bytes`, `tasks`, `cpu_seconds`; ArgumentError otherwise) and
/// stores it, frozen, as the defaults of every launch of `sandbox`.
pub fn store_defaults(
    ruby: &Ruby,
    sandbox: SandboxObj,
    option: Option<Value>,
) -> Result<(), Error> {
    let stored = ruby.hash_new();
    store_limit_values(ruby, stored, option)?;
    stored.freeze();
    sandbox.ivar_set(*DEFAULTS, stored)
}

/// Validates and stores the backend option `cgroup:` (nil, or the path of a
/// delegated cgroup v2 directory that launches create their cgroups under,
/// instead of `LITTLEGHOST_CGROUP`; TypeError for anything but a String or a
/// Pathname). Nothing is touched until a launch needs a cgroup.
pub fn store_cgroup(ruby: &Ruby, sandbox: SandboxObj, option: Option<Value>) -> Result<(), Error> {
    let stored = match option.filter(|value| !value.is_nil()) {
        None => ruby.qnil().as_value(),
        Some(value) => {
            let path = crate::helpers::convert::path_string(ruby, value, "cgroup")?;
            path.freeze();
            path.as_value()
        }
    };
    sandbox.ivar_set(*CGROUP, stored)
}

/// The `cgroup:` option of `sandbox`, if it gave one.
fn cgroup_dir(sandbox: SandboxObj) -> Result<Option<std::path::PathBuf>, Error> {
    let stored: Option<magnus::RString> = sandbox.ivar_get(*CGROUP)?;
    Ok(stored.map(crate::helpers::convert::path_of))
}

/// Validates `option` (see [`store_defaults`]) into `stored`.
fn store_limit_values(ruby: &Ruby, stored: RHash, option: Option<Value>) -> Result<(), Error> {
    if let Some(option) = option.filter(|value| !value.is_nil()) {
        let hash = RHash::from_value(option).ok_or_else(|| {
            argument_error(
                ruby,
                "process_limits must be a Hash of memory_bytes:, tasks:, cpu_seconds:",
            )
        })?;
        let mut values: [Option<Value>; 3] = [None; 3];
        hash.foreach(|key: Value, value: Value| {
            let name = Symbol::from_value(key)
                .and_then(|symbol| symbol.name().ok().map(|name| name.into_owned()))
                .or_else(|| magnus::RString::from_value(key).and_then(|s| s.to_string().ok()));
            match name.and_then(|name| KEYS.iter().position(|known| *known == name)) {
                Some(index) => values[index] = Some(value),
                None => {
                    let shown: String = key.funcall("inspect", ())?;
                    return Err(argument_error(
                        ruby,
                        format!(
                            "unknown process limit {shown} (known: memory_bytes, tasks, cpu_seconds)"
                        ),
                    ));
                }
            }
            Ok(magnus::r_hash::ForEach::Continue)
        })?;
        let parsed = parse(ruby, values)?;
        let given = [parsed.memory_bytes, parsed.tasks, parsed.cpu_seconds];
        for (name, value) in KEYS.iter().zip(given) {
            if let Some(value) = value {
                stored.aset(ruby.to_symbol(name), value)?;
            }
        }
    }
    Ok(())
}

/// The `process_limits:` defaults of `sandbox` (none if it stored none).
fn defaults(ruby: &Ruby, sandbox: SandboxObj) -> Result<Requested, Error> {
    let stored: Value = sandbox.ivar_get(*DEFAULTS)?;
    let Some(hash) = RHash::from_value(stored) else {
        return Ok(Requested::default());
    };
    let get = |name: &str| hash.get(ruby.to_symbol(name));
    parse(ruby, [get(KEYS[0]), get(KEYS[1]), get(KEYS[2])])
}

/// How one launch of `sandbox` is limited: the per-call keywords (`get`
/// answers a keyword's value) over the sandbox's defaults, planned by the
/// core. ArgumentError for a bad value; CapabilityError (before anything is
/// spawned) for `tasks` where the kernel cannot bound them. With
/// `own_tree`, the launch runs in a cgroup even without limits wherever the
/// host allows (Unrestricted owns its tree).
pub fn for_call(
    ruby: &Ruby,
    sandbox: SandboxObj,
    get: &dyn Fn(&str) -> Option<Value>,
    own_tree: bool,
) -> Result<Plan, Error> {
    let call = parse(ruby, KEYS.map(get))?;
    let mut requested = defaults(ruby, sandbox)?.overridden_by(call);
    requested.own_tree_if_possible = own_tree;
    plan(ruby, requested, cgroup_dir(sandbox)?)
}

/// [`core_limits::plan::plan`] against what this host enforces for launches
/// whose cgroups go under `dir` (the `cgroup:` option), or the default place.
fn plan(ruby: &Ruby, requested: Requested, dir: Option<std::path::PathBuf>) -> Result<Plan, Error> {
    let enforcement = core_limits::probe_with(dir.as_deref());
    let mut plan = core_limits::plan::plan(requested, &enforcement)
        .map_err(|reason| capability_error(ruby, reason))?;
    plan.cgroup.cgroup_dir = dir;
    Ok(plan)
}

/// The features the kernel enforces for launches here (`memory_limit`,
/// `task_limit`); every Linux backend lists them in its capabilities.
pub fn features() -> Vec<&'static str> {
    core_limits::plan::enforced_features(core_limits::probe())
}

/// Whether launches here own their whole tree (Unrestricted's
/// `process_tree_ownership`).
pub fn owns_tree() -> bool {
    core_limits::probe().tree.is_ok()
}

/// The ToolError of L.2 for a limit the kernel (or the CPU watcher) hit.
pub fn exceeded_error(ruby: &Ruby, exceeded: LimitExceeded) -> Error {
    tool_error(ruby, exceeded.message())
}

/// ToolError "Program memory exceeded N bytes" (the sampled fallback).
pub fn sampled_memory_error(ruby: &Ruby, bytes: u64) -> Error {
    exceeded_error(ruby, LimitExceeded::Memory { bytes })
}

/// For a probe Hash: each limit (`memory_bytes`, `tasks`, `cpu_seconds`,
/// `process_tree_ownership`) maps to true where the kernel enforces it, else
/// to the reason (the path that could not be written).
pub fn probe_report(ruby: &Ruby) -> Result<RHash, Error> {
    let enforcement = core_limits::probe();
    let report = ruby.hash_new();
    for (name, status) in [
        ("memory_bytes", &enforcement.memory),
        ("tasks", &enforcement.tasks),
        ("cpu_seconds", &enforcement.cpu),
        ("process_tree_ownership", &enforcement.tree),
    ] {
        let value = match status {
            Ok(()) => ruby.qtrue().as_value(),
            Err(reason) => ruby.str_new(reason).as_value(),
        };
        report.aset(ruby.to_symbol(name), value)?;
    }
    report.freeze();
    Ok(report)
}
