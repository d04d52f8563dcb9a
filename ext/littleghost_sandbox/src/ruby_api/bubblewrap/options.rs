//! Construction of `LittleGhost::Sandboxes::Bubblewrap` (B.4): the keywords
//! parsed into the backend's [`State`], a Rust struct the sandbox reaches
//! through one hidden slot.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::launch;
use magnus::{
    gc::Marker, prelude::*, value::Opaque, DataTypeFunctions, Error, RArray, Ruby, TypedData, Value,
};

use super::host::{enforce, option_path, platform_or_host};
use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{mount, sandbox};
use littleghost_sandbox_core::backend::effective::Backend;

const OPTIONS: [&str; 17] = [
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
    "cgroup",
];

/// The backend options of B.4, the effective policy, and the pins of `open`.
/// Kept in the sandbox's `backend` field: the instance itself belongs to
/// `LittleGhost::Sandbox`, whose own state is native data, so a subclass
/// cannot carry a second TypedData.
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Bubblewrap::State",
    free_immediately,
    size,
    mark
)]
pub(super) struct State {
    /// The options of B.4 the core checked and completed.
    pub(super) options: bw::Options,
    pub(super) command_wrapper: Option<Opaque<Value>>,
    pub(super) opened: Cell<bool>,
    pub(super) pins: RefCell<Option<launch::Pins>>,
    /// `gateway_options:` (G.7), merged under the gateway declaration.
    pub(super) gateway_options: Option<Opaque<Value>>,
    pub(super) gateway: super::gateway::Slot,
}

impl DataTypeFunctions for State {
    fn mark(&self, marker: &Marker) {
        if let Some(wrapper) = self.command_wrapper {
            marker.mark(wrapper);
        }
        if let Some(options) = self.gateway_options {
            marker.mark(options);
        }
        self.gateway.mark(marker);
    }
}

/// The backend state of `rb_self` (set by `initialize`).
pub(super) fn state(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static State, Error> {
    crate::ruby_api::sandbox::backend_state(ruby, rb_self, "bubblewrap")
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
pub(super) fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
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
    // Each option is checked in the order its keyword was always checked, so
    // a call with two bad options reports the same one as before.
    let executable = get("bubblewrap")
        .map(|v| option_path(ruby, v))
        .transpose()?;
    let platform = convert::platform(ruby, platform_or_host(ruby, get("platform"))?)?;
    let command_wrapper = command_wrapper(ruby, get("command_wrapper"))?.map(Opaque::from);
    let keywords = bw::Keywords {
        executable,
        platform,
        proc_mount: get("proc").map(|v| proc_mount(ruby, v)).transpose()?,
        tmpfs: get("tmpfs").map(|v| mount_targets(ruby, v)).transpose()?,
        masks: get("masks").map(|v| mount_targets(ruby, v)).transpose()?,
        runtime_roots: get("runtime_roots")
            .map(|v| runtime_roots(ruby, v))
            .transpose()?,
        uid: get("uid").map(number),
        gid: get("gid").map(number),
        tmpfs_size: get("tmpfs_size").map(number),
        relay: None,
    };
    let mut options = errors::core_result(ruby, bw::Options::try_from(keywords))?;
    crate::ruby_api::launch_limits::store_defaults(ruby, rb_self, get("process_limits"))?;
    crate::ruby_api::launch_limits::store_cgroup(ruby, rb_self, get("cgroup"))?;
    enforce(ruby, rb_self, Backend::Bubblewrap)?;
    options.relay = get("relay").map(|v| option_path(ruby, v)).transpose()?;
    let gateway_options = gateway_options(ruby, get("gateway_options"))?;
    let state = State {
        options,
        command_wrapper,
        opened: Cell::new(false),
        pins: RefCell::new(None),
        gateway_options,
        gateway: Default::default(),
    };
    crate::ruby_api::sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

/// `gateway_options:` (G.7) must be a Hash.
fn gateway_options(ruby: &Ruby, value: Option<Value>) -> Result<Option<Opaque<Value>>, Error> {
    match value {
        Some(value) if vo::is_hash(ruby, value) => Ok(Some(Opaque::from(value))),
        Some(value) => Err(errors::policy_error(
            ruby,
            format!(
                "bubblewrap gateway_options must be a Hash (got {})",
                vo::inspect_value(ruby, value).unwrap_or_default()
            ),
        )),
        None => Ok(None),
    }
}

/// `proc:` is `:new`, `:none`, or a mount declaration whose target is forced to `/proc`.
fn proc_mount(ruby: &Ruby, value: Value) -> Result<bw::ProcMount, Error> {
    if let Some(symbol) = vo::try_to_sym(value)? {
        if let Some(mount) = bw::ProcMount::named(&symbol.name()?) {
            return Ok(mount);
        }
    }
    if vo::is_hash(ruby, value) {
        let declaration = vo::symbolize_keys(ruby, value)?;
        declaration.aset(ruby.to_symbol("target"), "/proc")?;
        let grant = mount::grant_from_ruby(ruby, declaration.as_value())?;
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
fn mount_targets(ruby: &Ruby, value: Value) -> Result<Vec<PathBuf>, Error> {
    RArray::try_convert(vo::kernel(ruby, "Array", value)?)?
        .into_iter()
        .map(|item| mount::normalize_target(ruby, item))
        .collect()
}

/// `runtime_roots:` as absolute host paths (`File.expand_path(String(root))`);
/// Landlock reads its own `runtime_roots:` the same way.
pub(crate) fn runtime_roots(ruby: &Ruby, value: Value) -> Result<Vec<PathBuf>, Error> {
    RArray::try_convert(vo::kernel(ruby, "Array", value)?)?
        .into_iter()
        .map(|root| {
            let root = convert::expand_path(ruby, vo::kernel(ruby, "String", root)?, None)?;
            convert::string_path(root.as_value())
        })
        .collect()
}

/// A numeric keyword for the core to check: the Integer, if it is one, and how it shows.
fn number(value: Value) -> bw::Number {
    bw::Number {
        integer: magnus::Integer::from_value(value).and_then(|i| i.to_i128().ok()),
        shown: value.inspect(),
    }
}
