//! Whole-tree launch limits (SPEC §25 L.1-L.3) as every backend takes them:
//! the `memory_bytes:`, `tasks:` and `cpu_seconds:` keywords of
//! `execute_program` and `start_program`, over the defaults of the backend
//! option `process_limits:`. The decision of how each is enforced (cgroup,
//! sampler, per-process rlimit, refusal) is the core's
//! ([`littleghost_sandbox_core::limits::plan`]); this file only parses,
//! stores the defaults in the Sandbox struct and maps the outcome to Ruby.

use littleghost_sandbox_core::limits::{
    self as core_limits,
    plan::{Plan, Requested},
};
use magnus::{
    rb_sys::AsRawValue, value::ReprValue, Error, Integer, RHash, RString, Ruby, Symbol, Value,
};

use crate::helpers::errors::{self, argument_error};
use crate::helpers::limit_keywords::{self as keywords, Entry, Given};
use crate::helpers::value_object as vo;
use crate::ruby_api::sandbox::state::{launch_defaults, SandboxObj};

/// An Integer as the core's [`Given`] (Bignums saturate by sign).
pub fn integer_given(integer: Integer) -> Given {
    match integer.to_i128() {
        Ok(n) => Given::Integer(n),
        // SAFETY: `integer` is a live Bignum VALUE and the GVL is held.
        Err(_) if unsafe { rb_sys::rb_big_sign(integer.as_raw()) } != 0 => {
            Given::Integer(i128::MAX)
        }
        Err(_) => Given::Integer(i128::MIN),
    }
}

/// A limit value as given: nil is absent, only an Integer is one.
fn strict(value: Option<Value>) -> Option<Given> {
    value
        .filter(|value| !value.is_nil())
        .map(|value| Integer::from_value(value).map_or(Given::NotInteger, integer_given))
}

/// The three limits from their values (nil or absent: unlimited); each a
/// positive Integer, else ArgumentError naming it.
pub fn parse(ruby: &Ruby, values: [Option<Value>; 3]) -> Result<Requested, Error> {
    keywords::requested(values.map(strict))
        .map_err(|error| argument_error(ruby, keywords::message(error)))
}

/// Validates the backend option `process_limits:` (nil, or a Hash with some
/// of `memory_bytes`, `tasks`, `cpu_seconds`; ArgumentError otherwise) and
/// stores it as the defaults of every launch of `sandbox`.
pub fn store_defaults(
    ruby: &Ruby,
    sandbox: SandboxObj,
    option: Option<Value>,
) -> Result<(), Error> {
    let limits = match option.filter(|value| !value.is_nil()) {
        None => Requested::default(),
        Some(option) => {
            let hash = RHash::from_value(option)
                .ok_or_else(|| argument_error(ruby, keywords::NOT_A_HASH))?;
            let mut pairs: Vec<(Option<String>, String, Option<Given>)> = Vec::new();
            hash.foreach(|key: Value, value: Value| {
                let name = Symbol::from_value(key)
                    .and_then(|symbol| symbol.name().ok().map(|name| name.into_owned()))
                    .or_else(|| RString::from_value(key).and_then(|s| s.to_string().ok()));
                // How the message shows the key if unknown (another object by
                // its class); show_plain calls no method of the key.
                let shown = crate::ruby_api::execution::show_plain(key)?
                    .unwrap_or_else(|| format!("#<{}>", vo::class_name_or_empty(key)));
                pairs.push((name, shown, strict(Some(value))));
                Ok(magnus::r_hash::ForEach::Continue)
            })?;
            let entries: Vec<Entry<'_>> = pairs
                .iter()
                .map(|(name, shown, value)| Entry {
                    name: name.as_deref(),
                    shown,
                    value: *value,
                })
                .collect();
            keywords::defaults(&entries)
                .map_err(|error| argument_error(ruby, keywords::message(error)))?
        }
    };
    launch_defaults(sandbox).borrow_mut().limits = limits;
    Ok(())
}

/// Validates and stores the backend option `cgroup:` (nil, or the path of a
/// delegated cgroup v2 directory that launches create their cgroups under,
/// instead of `LITTLEGHOST_CGROUP`; TypeError for anything but a String or a
/// Pathname). Nothing is touched until a launch needs a cgroup.
pub fn store_cgroup(ruby: &Ruby, sandbox: SandboxObj, option: Option<Value>) -> Result<(), Error> {
    let dir = match option.filter(|value| !value.is_nil()) {
        None => None,
        Some(value) => Some(crate::helpers::convert::path_of(
            crate::helpers::convert::path_string(ruby, value, "cgroup")?,
        )),
    };
    launch_defaults(sandbox).borrow_mut().cgroup_dir = dir;
    Ok(())
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
    // The limit keywords, in the order `Requested` holds them.
    let call = parse(ruby, keywords::KEYS.map(get))?;
    let stored = launch_defaults(sandbox).borrow().clone();
    plan(ruby, stored.for_call(call, own_tree), stored.cgroup_dir)
}

/// At `open`: CapabilityError when the sandbox's `process_limits:` ask for
/// what no launch here could get (`tasks` without a writable cgroup), so
/// the refusal comes once, before anything runs, instead of at each launch.
pub fn check_defaults(ruby: &Ruby, sandbox: SandboxObj) -> Result<(), Error> {
    let stored = launch_defaults(sandbox).borrow().clone();
    plan(
        ruby,
        stored.for_call(Requested::default(), false),
        stored.cgroup_dir,
    )
    .map(|_| ())
}

/// [`core_limits::plan::plan`] against what this host enforces for launches
/// whose cgroups go under `dir` (the `cgroup:` option), or the default place.
fn plan(ruby: &Ruby, requested: Requested, dir: Option<std::path::PathBuf>) -> Result<Plan, Error> {
    let enforcement = core_limits::probe_with(dir.as_deref());
    let mut plan = core_limits::plan::plan(requested, &enforcement)
        .map_err(|error| errors::from_core(ruby, error.into()))?;
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

/// For a probe Hash: each limit (`memory_bytes`, `tasks`, `cpu_seconds`,
/// `process_tree_ownership`) maps to true where the kernel enforces it, else
/// to the reason (the path that could not be written).
pub fn probe_report(ruby: &Ruby) -> Result<RHash, Error> {
    let enforcement = core_limits::probe();
    let report = ruby.hash_new();
    for (name, status) in enforcement.report() {
        let value = match status {
            Ok(()) => ruby.qtrue().as_value(),
            Err(reason) => ruby.str_new(&reason.to_string()).as_value(),
        };
        report.aset(ruby.to_symbol(name), value)?;
    }
    report.freeze();
    Ok(report)
}
