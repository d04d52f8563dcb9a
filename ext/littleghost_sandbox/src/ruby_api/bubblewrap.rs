//! `LittleGhost::Sandboxes::Bubblewrap` (SPEC §16, §19): Linux namespaces
//! through `bwrap`. The options, the checks of `open` (pins, probe), the
//! argv, overlays, masks and cwd rule live in the core
//! (`backend::bubblewrap`); this file reads Ruby state into them and
//! launches through the shared process runner and sessions.
//!
//! Network `:allowlist` (§20): `open` resolves and opens the gateway
//! (`gateway.rs`), each launch runs its command under the relay helper in
//! bwrap's network namespace, `close` closes the gateway.

use std::os::unix::ffi::OsStrExt;

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::effective::Backend;
use littleghost_sandbox_core::launch;
use littleghost_sandbox_core::launch::prepare::{LaunchCall, LaunchError, Prepared};
use littleghost_sandbox_core::policy::Policy;
use magnus::{
    function, method, prelude::*, Error, KwArgs, RArray, RHash, RModule, RString, Ruby, TypedData,
    Value,
};

use crate::helpers::args::{keywords, keywords_only, kwargs};
use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::sandbox::backend::{self, define_launches};
use crate::ruby_api::sandbox::launch::{self as la, core_policy, Launch, RubyWorkspace};
use crate::ruby_api::sandbox::probe;
use crate::ruby_api::sandbox::scoped_files;
use crate::ruby_api::sandbox::SandboxObj;
use crate::ruby_api::{network_policy, ownership, sandbox};

pub(crate) mod gateway;
mod host;
mod options;

pub(crate) use host::{claimed, enforce, frozen_strings, option_path, platform_or_host};
pub(crate) use options::runtime_roots;
use options::{initialize, state, State};

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let class = backend::define_class(ruby, little_ghost, "Bubblewrap")?;
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
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("gateway", method!(gateway_of, 0))?;
    scoped_files::define(class)?;
    define_launches!(class, Bubblewrap);
    class.define_method("bubblewrap_args", method!(bubblewrap_args, -1))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Probe (B.2) and capabilities (B.3).

/// The capabilities every Bubblewrap sandbox has, independent of its policy (B.3).
fn backend_capabilities(ruby: &Ruby) -> Result<Value, Error> {
    claimed(ruby, Backend::Bubblewrap, None)
}

/// Reports whether bwrap can create the namespaces a sandbox needs, with an actionable reason when not.
fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    probe_options(ruby, keywords_only(args)?)
}

/// [`probe`] of a keyword Hash.
pub(crate) fn probe_options(ruby: &Ruby, options: RHash) -> Result<RHash, Error> {
    let found = probed(ruby, options)?;
    probe_hash(ruby, found)
}

/// The core's probe (B.2) under the keywords of `options` (Native probes
/// with the caller's options and decides from this, not from the Hash).
pub(crate) fn probed(ruby: &Ruby, options: RHash) -> Result<bw::Probe, Error> {
    let values = keywords(
        ruby,
        options,
        &[],
        &["executable", "bubblewrap", "platform"],
    )?;
    let executable = values[0].or(values[1]).filter(|v| !v.is_nil());
    let executable = executable.map(|v| option_path(ruby, v)).transpose()?;
    let platform = convert::platform(ruby, platform_or_host(ruby, values[2])?)?;
    Ok(bw::probe(&platform, executable.as_deref()))
}

/// The probe Hash: the backend capabilities unless there is a reason it is
/// unavailable, plus the bwrap it resolved and checked (absolute path and
/// version) when it got that far.
pub(crate) fn probe_hash(ruby: &Ruby, found: bw::Probe) -> Result<RHash, Error> {
    let result = probe::result(ruby, found.unavailable, || backend_capabilities(ruby))?;
    let (path, version) = match &found.resolved {
        Some(resolved) => (
            Some(convert::path_to_ruby(ruby, &resolved.path)),
            Some(resolved.version.to_string()),
        ),
        None => (None, None),
    };
    result.aset(ruby.to_symbol("executable"), path)?;
    result.aset(ruby.to_symbol("version"), version)?;
    Ok(result)
}

// ---------------------------------------------------------------------------
// Lifecycle (B.5).

/// Checks platform, bwrap, grant sources and the functional probe, pinning grant identities; idempotent. With a block, yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    keywords(ruby, keywords_only(args)?, &[], &["run"])?;
    crate::ruby_api::launch_limits::check_defaults(ruby, rb_self)?;
    let state = state(ruby, rb_self)?;
    if !state.opened.get() {
        open_steps(ruby, rb_self, state)?;
    }
    ownership::yield_and_close(ruby, rb_self.as_value())
}

fn open_steps(ruby: &Ruby, rb_self: SandboxObj, state: &State) -> Result<(), Error> {
    let effective = sandbox::enforced_policy(ruby, rb_self.as_value())?;
    let allowlist = gateway::allowlist_network(ruby, effective).is_some();
    let view = RubyWorkspace::of(ruby, rb_self);
    let policy = core_policy(ruby, rb_self)?;
    let pins = state.options.open(policy, &view, allowlist);
    state
        .pins
        .replace(Some(pins.map_err(|error| la::raised(ruby, error))?));
    let options = state.gateway_options.map(|o| ruby.get_inner(o));
    let close = || close(ruby, rb_self);
    state
        .gateway
        .open((ruby, rb_self), effective, options, close)?;
    state.opened.set(true);
    Ok(())
}

/// The gateway enforcing this sandbox's allowlist (resolved at the first `open`), or nil.
fn gateway_of(ruby: &Ruby, rb_self: SandboxObj) -> Result<Option<Value>, Error> {
    Ok(state(ruby, rb_self)?.gateway.value(ruby))
}

/// Terminates every program and session the sandbox or its scopes started (H.4), then marks it unopened; idempotent.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    let state = state(ruby, rb_self)?;
    state.opened.set(false);
    state.pins.replace(None);
    state.gateway.close(ruby, rb_self)
}

// ---------------------------------------------------------------------------
// The launch: the core plan (16.5, B.7, B.10), then the argv (B.8).

/// The bwrap options (before `--`) for the given mounts, cwd, environment and network; works before `open`.
fn bubblewrap_args(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<RArray, Error> {
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
    let request = bw::ArgsRequest {
        selected: mounts.map(|m| gateway::grants(ruby, m)).transpose()?,
        environment: environment
            .map(|values| convert::environment(ruby, Some(values)))
            .transpose()?,
        inherit_environment: inherit.map(|value| value.to_bool()),
        network: network.map(|value| network_mode(ruby, value)).transpose()?,
    };
    let cwd = cwd.map(|cwd| convert::path_string(ruby, cwd, "cwd").map(convert::path_of));
    let view = RubyWorkspace::of(ruby, rb_self);
    let policy = core_policy(ruby, rb_self)?;
    let cached = state.pins.borrow().clone();
    let shown = state
        .options
        .shown_args(policy, &view, cached, cwd.transpose(), request);
    let (options, pins) = shown.map_err(|error| la::raised(ruby, error))?;
    state.pins.replace(Some(pins));
    Ok(ruby.ary_from_iter(options.iter().map(|o| os_to_ruby(ruby, o))))
}

/// A `network:` value (coerced as a NetworkPolicy) as the mode it enforces.
fn network_mode(ruby: &Ruby, value: Value) -> Result<bw::NetworkMode, Error> {
    let class = network_policy::NetworkPolicy::class(ruby);
    let coerced = network_policy::coerce(ruby, class, value)?;
    Ok(network_policy::borrow(coerced).map_or(bw::NetworkMode::None, |n| n.core().mode))
}

fn os_to_ruby(ruby: &Ruby, value: &std::ffi::OsStr) -> RString {
    match std::str::from_utf8(value.as_bytes()) {
        Ok(text) => ruby.str_new(text),
        Err(_) => ruby.str_from_slice(value.as_bytes()),
    }
}

/// The command after the `command_wrapper:` of B.4, if any: a callable
/// (the user's) is called, an Array is a prefix.
fn wrapped_command(
    ruby: &Ruby,
    rb_self: SandboxObj,
    state: &State,
    command: Vec<String>,
    scope: Option<Value>,
) -> Result<Vec<String>, Error> {
    let Some(wrapper) = state.command_wrapper.map(|w| ruby.get_inner(w)) else {
        return Ok(command);
    };
    let rb_argv = ruby.ary_from_iter(command.iter().map(|arg| ruby.str_new(arg)));
    let wrapped = match RArray::from_value(wrapper) {
        Some(prefix) => prefix.plus(rb_argv).as_value(),
        None => {
            let kw = kwargs(
                ruby,
                &[
                    ("argv", rb_argv.as_value()),
                    ("workspace", sandbox::workspace_of(ruby, rb_self.as_value())),
                    ("scope", scope.unwrap_or_else(|| ruby.qnil().as_value())),
                ],
            )?;
            wrapper.funcall("call", (KwArgs(kw),))?
        }
    };
    convert::argv(ruby, wrapped)
}

/// What the owner of one Bubblewrap sandbox holds, as the core's launch
/// asks it: its opening, its gateway, its command wrapper.
struct Owner<'r> {
    ruby: &'r Ruby,
    rb_self: SandboxObj,
    state: &'r State,
    /// The launch's `scope:`, which a callable command wrapper is given.
    scope: Option<Value>,
}

impl bw::Sandbox<Error> for Owner<'_> {
    fn open(&self) -> Result<launch::Pins, Error> {
        let (ruby, rb_self, state) = (self.ruby, self.rb_self, self.state);
        if !state.opened.get() {
            open_steps(ruby, rb_self, state)?;
        }
        let pins = state.pins.borrow().clone();
        pins.ok_or_else(|| errors::tool_error(ruby, "the bubblewrap sandbox is not open"))
    }

    fn gateway(&self) -> Option<Box<dyn bw::Gateway<Error> + '_>> {
        let gateway = self.state.gateway.launch(self.ruby);
        Some(Box::new(gateway.filter(|_| self.state.opened.get())?))
    }

    fn wrap_command(&self, argv: Vec<String>) -> Result<Vec<String>, Error> {
        wrapped_command(self.ruby, self.rb_self, self.state, argv, self.scope)
    }
}

/// The sandbox as its launches are prepared.
struct Bubblewrap;

impl backend::Backend for Bubblewrap {
    /// One launch inside bwrap (16.5, B.7, B.8, B.10), by the core; a
    /// scope without `process_spawn` runs it under the subprocess filter.
    fn prepare(
        ruby: &Ruby,
        rb_self: SandboxObj,
        launch: &Launch,
        (policy, view): (&Policy, &RubyWorkspace),
        call: LaunchCall<Error>,
    ) -> Result<Prepared, LaunchError<Error>> {
        let state = state(ruby, rb_self).map_err(LaunchError::Caller)?;
        let owner = Owner {
            ruby,
            rb_self,
            state,
            scope: launch.scope.filter(|v| !v.is_nil()),
        };
        let launcher = bw::Launcher {
            options: &state.options,
            sandbox: &owner,
        };
        launcher.prepare(policy, view, call)
    }
}
