//! `LittleGhost::Sandboxes::Unrestricted` (SPEC §15): file operations go
//! through a cached default Scope, so the broker's rules apply in full;
//! processes run on the host with no isolation, and the capabilities say so.

use std::cell::Cell;

use littleghost_sandbox_core::backend::effective::Backend;
use littleghost_sandbox_core::backend::unrestricted as host;
use littleghost_sandbox_core::launch::prepare::{LaunchCall, LaunchError, Prepared};
use littleghost_sandbox_core::policy::Policy;
use magnus::{
    method, prelude::*, DataTypeFunctions, Error, RHash, RModule, Ruby, TypedData, Value,
};

use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::errors;
use crate::ruby_api::bubblewrap::{claimed, enforce};
use crate::ruby_api::launch_limits;
use crate::ruby_api::ownership;
use crate::ruby_api::sandbox::backend::{self, define_launches};
use crate::ruby_api::sandbox::launch::{self as la, Launch, RubyWorkspace};
use crate::ruby_api::sandbox::probe;
use crate::ruby_api::sandbox::scoped_files;
use crate::ruby_api::sandbox::{self, assign, SandboxObj};

/// The backend's state, reached from the sandbox through one hidden slot
/// (no `@`: invisible to Ruby; the instance's own data belongs to
/// `LittleGhost::Sandbox`).
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Unrestricted::State",
    free_immediately,
    size
)]
struct State {
    /// (dev, ino) of the workspace root when first seen (15.1).
    root_identity: Cell<Option<host::Identity>>,
}

impl DataTypeFunctions for State {}

/// The backend state of `rb_self` (set by `initialize`).
fn state(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static State, Error> {
    crate::ruby_api::sandbox::backend_state(ruby, rb_self, "unrestricted")
}

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let class = backend::define_class(ruby, little_ghost, "Unrestricted")?;
    class.define_singleton_method("probe", method!(probe, -1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    scoped_files::define_through_scope_hook(class)?;
    define_launches!(class, Unrestricted);
    Ok(())
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
    probe::result(ruby, None, || claimed(ruby, Backend::Unrestricted, None))
}

const OPTIONS: [&str; 5] = ["policy", "profiles", "limits", "process_limits", "cgroup"];

/// Unrestricted.new(workspace:, policy: nil, profiles: {}, limits: {}): refuses any network it cannot enforce.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let values = keywords(ruby, keywords_only(args)?, &["workspace"], &OPTIONS)?;
    let get = |index: usize| values[index + 1].filter(|v| !v.is_nil());
    // `process_limits:` and `cgroup:` are Unrestricted's own; the rest are the base options.
    launch_limits::store_defaults(ruby, rb_self, values[4])?;
    launch_limits::store_cgroup(ruby, rb_self, values[5])?;
    let workspace = values[0].unwrap();
    let policy = match get(0) {
        Some(policy) => policy,
        None => default_policy(ruby)?.as_value(),
    };
    assign(ruby, rb_self, workspace, Some(policy), values[2], values[3])?;
    enforce(ruby, rb_self, Backend::Unrestricted)?;
    let state = State {
        root_identity: Cell::new(root_identity(workspace)?),
    };
    sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

/// `{files: {root: :read_only}, root_filesystem: :read_write, network: :inherit}`, coerced by `assign`.
fn default_policy(ruby: &Ruby) -> Result<RHash, Error> {
    let files = ruby.hash_new();
    files.aset(ruby.to_symbol("root"), ruby.to_symbol("read_only"))?;
    let policy = ruby.hash_new();
    policy.aset(ruby.to_symbol("files"), files)?;
    policy.aset(
        ruby.to_symbol("root_filesystem"),
        ruby.to_symbol("read_write"),
    )?;
    policy.aset(ruby.to_symbol("network"), ruby.to_symbol("inherit"))?;
    Ok(policy)
}

/// The (dev, ino) of the workspace root, or None when it does not exist.
fn root_identity(workspace: Value) -> Result<Option<host::Identity>, Error> {
    Ok(host::root_identity(&la::workspace_root(workspace)?))
}

/// Verifies (or first records) the workspace root's identity and returns self; with a block, yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    backend::open(ruby, rb_self, args, || {
        let current = root_identity(sandbox::workspace_of(ruby, rb_self.as_value()))?;
        let state = state(ruby, rb_self)?;
        let checked = host::check_root(state.root_identity.get(), current);
        state
            .root_identity
            .set(Some(errors::core_result(ruby, checked)?));
        // A (re)opened run gets a scope pinned to the directories as they are now.
        sandbox::forget_default_scope(rb_self.as_value());
        Ok(())
    })
}

/// Terminates every program and session the sandbox or its scopes started that still runs (H.4); returns nil.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    ownership::terminate_children(ruby, rb_self)
}

// ---------------------------------------------------------------------------
// Processes (15.6, 15.7): on the host, in a new process group, with only the
// explicit environment. Grants are not enforced for processes here.

/// The sandbox as its launches are prepared.
struct Unrestricted;

impl backend::Backend for Unrestricted {
    const CONFINES: bool = false;
    // 2.4: once, before spawning.
    const CONTEXT_FIRST: bool = false;

    /// The host launch of a call (15.6, 15.7): on the host, in a new process
    /// group, with only the explicit environment; grants are not enforced
    /// for processes here, and `allow_subprocesses: false` cannot be
    /// enforced (CapabilityError).
    fn prepare(
        _ruby: &Ruby,
        _rb_self: SandboxObj,
        _launch: &Launch,
        (policy, view): (&Policy, &RubyWorkspace),
        call: LaunchCall<Error>,
    ) -> Result<Prepared, LaunchError<Error>> {
        host::Launcher.prepare(policy, view, call)
    }
}
