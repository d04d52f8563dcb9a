//! `LittleGhost::Sandboxes::Seatbelt` (SPEC §16, §21): macOS `sandbox-exec`
//! with a deny-default profile built by the core (`backend::seatbelt`). On
//! any other platform `open` (and so every launch) raises
//! UnsupportedPlatformError; there is no fallback.

use std::cell::RefCell;
use std::path::PathBuf;

use littleghost_sandbox_core::backend::effective::Backend;
use littleghost_sandbox_core::backend::private_tmp;
use littleghost_sandbox_core::backend::seatbelt as sb;
use littleghost_sandbox_core::backend::seatbelt::host;
use littleghost_sandbox_core::launch::prepare::{LaunchCall, LaunchError, Prepared, ScopeCall};
use littleghost_sandbox_core::policy::Policy;
use magnus::{
    function, method, prelude::*, DataTypeFunctions, Error, RHash, RModule, Ruby, TypedData, Value,
};

use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::bubblewrap::{self as shared, enforce, option_path};
use crate::ruby_api::ownership;
use crate::ruby_api::sandbox::backend::{self, define_launches};
use crate::ruby_api::sandbox::launch::{self as la, core_policy, Launch, RubyWorkspace};
use crate::ruby_api::sandbox::probe;
use crate::ruby_api::sandbox::scoped_files;
use crate::ruby_api::sandbox::{self, SandboxObj};

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let class = backend::define_class(ruby, little_ghost, "Seatbelt")?;
    class.const_set(
        "DEFAULT_EXECUTABLE",
        vo::frozen_str(ruby, sb::DEFAULT_EXECUTABLE),
    )?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    class.define_singleton_method("backend_capabilities", function!(backend_capabilities, 0))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    scoped_files::define(class)?;
    define_launches!(class, Seatbelt);
    Ok(())
}

/// The backend's state (SB.3), reached from the sandbox through one hidden
/// slot (the instance's own data belongs to `LittleGhost::Sandbox`).
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Seatbelt::State",
    free_immediately,
    size
)]
struct State {
    /// `String(executable:)`, byte for byte (the messages show it).
    executable: PathBuf,
    platform: String,
    /// The private temporary directory of an open sandbox.
    temp_dir: RefCell<Option<PathBuf>>,
}

impl DataTypeFunctions for State {}

/// The backend state of `rb_self` (set by `initialize`).
fn state(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static State, Error> {
    crate::ruby_api::sandbox::backend_state(ruby, rb_self, "seatbelt")
}

/// The capabilities of the Seatbelt backend before policy adjustments (SB.2).
fn backend_capabilities(ruby: &Ruby) -> Result<Value, Error> {
    shared::claimed(ruby, Backend::Seatbelt, None)
}

/// Reports whether `sandbox-exec` is usable here: only on macOS with the executable present.
fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    probe_options(ruby, keywords_only(args)?)
}

/// [`probe`] of a keyword Hash (for Native).
pub(crate) fn probe_options(ruby: &Ruby, options: RHash) -> Result<RHash, Error> {
    let values = keywords(ruby, options, &[], &["executable", "platform"])?;
    let executable = match values[0].filter(|v| !v.is_nil()) {
        Some(value) => option_path(ruby, value)?,
        None => PathBuf::from(sb::DEFAULT_EXECUTABLE),
    };
    let platform = convert::platform(ruby, shared::platform_or_host(ruby, values[1])?)?;
    let unavailable = host::unavailable(&platform, &executable);
    probe::result(ruby, unavailable, || backend_capabilities(ruby))
}

/// Records the executable and platform (SB.3) without touching the host.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let options = keywords_only(args)?;
    let values = keywords(
        ruby,
        options,
        &["workspace"],
        &[
            "policy",
            "profiles",
            "limits",
            "executable",
            "platform",
            "process_limits",
        ],
    )?;
    let get = |i: usize| values[i].filter(|v| !v.is_nil());
    sandbox::assign(ruby, rb_self, values[0].unwrap(), get(1), get(2), get(3))?;
    let executable = match get(4) {
        Some(value) => option_path(ruby, value)?,
        None => PathBuf::from(sb::DEFAULT_EXECUTABLE),
    };
    // No cgroups on macOS: memory is sampled, CPU per process, tasks refused (L.3).
    crate::ruby_api::launch_limits::store_defaults(ruby, rb_self, get(6))?;
    let platform = convert::platform(ruby, shared::platform_or_host(ruby, get(5))?)?;
    // SB.2: no `process_spawn` under an isolated root.
    enforce(ruby, rb_self, Backend::Seatbelt)?;
    let state = State {
        executable,
        platform,
        temp_dir: RefCell::new(None),
    };
    crate::ruby_api::sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

fn temp_dir(rb_self: SandboxObj) -> Result<Option<PathBuf>, Error> {
    let ruby = Ruby::get_with(rb_self);
    let dir = state(&ruby, rb_self)?.temp_dir.borrow().clone();
    Ok(dir)
}

/// SB.4: checks platform, executable and network, validates the workspace and creates a private temporary directory; idempotent.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    backend::open(ruby, rb_self, args, || match temp_dir(rb_self)? {
        Some(_) => Ok(()),
        None => open_steps(ruby, rb_self),
    })
}

fn open_steps(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let state = state(ruby, rb_self)?;
    let policy = core_policy(ruby, rb_self)?;
    let checked = host::open_check(&state.platform, &state.executable, policy);
    errors::core_result(ruby, checked)?;
    la::validate_workspace(ruby, sandbox::workspace_of(ruby, rb_self.as_value()))?;
    match private_tmp::private_directory("little-ghost-seatbelt-") {
        Ok(dir) => {
            state.temp_dir.replace(Some(dir));
            Ok(())
        }
        Err(error) => {
            let _ = close(ruby, rb_self);
            Err(errors::dependency_error(
                ruby,
                format!("Seatbelt cannot create its temporary directory: {error}"),
            ))
        }
    }
}

/// Terminates every program and session the sandbox or its scopes started (H.4), then removes the private temporary directory; idempotent.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)?;
    if let Some(dir) = state(ruby, rb_self)?.temp_dir.take() {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
}

/// SB.6 runtime roots, with Ruby's prefix and libdir (expanded).
fn runtime_roots(ruby: &Ruby) -> Result<Vec<PathBuf>, Error> {
    let mut ruby_dirs = Vec::new();
    let _: bool = ruby.require("rbconfig")?;
    let rbconfig: RModule = ruby.class_object().const_get("RbConfig")?;
    let config: RHash = rbconfig.const_get("CONFIG")?;
    for key in ["prefix", "libdir"] {
        if let Some(value) = config.get(key) {
            ruby_dirs.push(convert::path_of(convert::expand_path(ruby, value, None)?));
        }
    }
    Ok(host::runtime_roots(ruby_dirs))
}

/// What the owner of one Seatbelt sandbox holds, as the core's launch asks it.
struct Owner<'r> {
    ruby: &'r Ruby,
    rb_self: SandboxObj,
}

impl sb::Sandbox<Error> for Owner<'_> {
    fn open(&self) -> Result<PathBuf, Error> {
        if temp_dir(self.rb_self)?.is_none() {
            open_steps(self.ruby, self.rb_self)?;
        }
        temp_dir(self.rb_self)?
            .ok_or_else(|| errors::tool_error(self.ruby, "the seatbelt sandbox is not open"))
    }

    /// `Scope.new(sandbox: self)`, validated.
    fn own_scope(&self) -> Result<ScopeCall, Error> {
        let value = scoped_files::new_scope(self.ruby, self.rb_self)?;
        Ok(la::scope_call(self.ruby, Some(value))?.expect("a scope was given"))
    }

    fn runtime_roots(&self) -> Result<Vec<PathBuf>, Error> {
        runtime_roots(self.ruby)
    }
}

/// The sandbox as its launches are prepared.
struct Seatbelt;

impl backend::Backend for Seatbelt {
    // No cgroups on macOS.
    const OWN_TREE: bool = false;

    /// One launch under sandbox-exec (SB.5, SB.6, SB.7): the profile, by
    /// the core; subprocesses are denied unless asked for.
    fn prepare(
        ruby: &Ruby,
        rb_self: SandboxObj,
        _launch: &Launch,
        (policy, view): (&Policy, &RubyWorkspace),
        call: LaunchCall<Error>,
    ) -> Result<Prepared, LaunchError<Error>> {
        let owner = Owner { ruby, rb_self };
        let state = state(ruby, rb_self).map_err(LaunchError::Caller)?;
        let launcher = sb::Launcher {
            executable: &state.executable,
            sandbox: &owner,
        };
        launcher.prepare(policy, view, call)
    }
}
