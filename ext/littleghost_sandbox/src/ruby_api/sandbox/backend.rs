//! What every Rust backend class (Bubblewrap, Landlock, Seatbelt,
//! Unrestricted) shares: its class and `State` class, `writable?`, the
//! block form of `open`, and `execute_program`/`start_program`, which
//! convert the call ([`launch`]), let the backend's core `Launcher` prepare
//! it ([`Backend::prepare`]) and run the result.

use littleghost_sandbox_core::backend::effective::{
    has_writable_file_grant, Backend as CoreBackend,
};
use littleghost_sandbox_core::launch::prepare::{Kind, LaunchCall, LaunchError, Prepared};
use littleghost_sandbox_core::policy::Policy;
use magnus::{prelude::*, Error, RClass, RModule, Ruby, Value};

use super::launch::{core_policy, launch_call, raised, run, start, Call, Launch, RubyWorkspace};
use super::SandboxObj;
use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::constants;
use crate::ruby_api::{capabilities, launch_limits, ownership, process_runner};

/// `LittleGhost::Sandboxes::NAME < LittleGhost::Sandbox`, with its `State`
/// class (no allocator: only the backend's `initialize` makes one).
pub(crate) fn define_class(
    ruby: &Ruby,
    little_ghost: RModule,
    name: &str,
) -> Result<RClass, Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class = sandboxes.define_class(name, constants::class(ruby, "LittleGhost::Sandbox")?)?;
    let state = class.define_class("State", ruby.class_object())?;
    state.undef_default_alloc_func();
    Ok(class)
}

/// The class of a Rust backend.
pub(crate) fn class_path(backend: CoreBackend) -> &'static str {
    match backend {
        CoreBackend::Unrestricted => "LittleGhost::Sandboxes::Unrestricted",
        CoreBackend::Bubblewrap => "LittleGhost::Sandboxes::Bubblewrap",
        CoreBackend::Landlock => "LittleGhost::Sandboxes::Landlock",
        CoreBackend::Seatbelt => "LittleGhost::Sandboxes::Seatbelt",
    }
}

/// True iff writes are supported and some tool-visible grant is writable.
pub(crate) fn writable(ruby: &Ruby, rb_self: SandboxObj) -> Result<bool, Error> {
    let capabilities = super::enforced_capabilities(ruby, rb_self.as_value())?;
    let supports = capabilities::borrow(capabilities)
        .is_some_and(|capabilities| capabilities.core().supports("filesystem_write"));
    Ok(supports && has_writable_file_grant(core_policy(ruby, rb_self)?))
}

/// `open(run: nil)`: the backend's `steps` (idempotent), then with a block
/// yields self, always closes and returns the block's value (H.4).
pub(crate) fn open(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
    steps: impl FnOnce() -> Result<(), Error>,
) -> Result<Value, Error> {
    keywords(ruby, keywords_only(args)?, &[], &["run"])?;
    launch_limits::check_defaults(ruby, rb_self)?;
    steps()?;
    ownership::yield_and_close(ruby, rb_self.as_value())
}

/// What a Rust backend gives the launch methods every one of them has
/// ([`execute_program`], [`start_program`]): its core `Launcher`.
pub(crate) trait Backend {
    /// Its launches run in a cgroup of their own wherever the host allows
    /// (every Linux backend), so a supervisor killed from outside leaves
    /// nothing behind: `close` ends the cgroup.
    const OWN_TREE: bool = true;
    /// It confines processes, so a launch's `scope:` is converted too.
    const CONFINES: bool = true;
    /// `start_program` calls `context&.check!` before the launch is
    /// prepared (2.4; Unrestricted's checks it once prepared).
    const CONTEXT_FIRST: bool = true;

    /// The backend's core `Launcher` preparing `call` (`launch` as given).
    fn prepare(
        ruby: &Ruby,
        rb_self: SandboxObj,
        launch: &Launch,
        policy_view: (&Policy, &RubyWorkspace),
        call: LaunchCall<Error>,
    ) -> Result<Prepared, LaunchError<Error>>;
}

/// One launch of `launch`, prepared by the core.
fn prepared<B: Backend>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    launch: &Launch,
    kind: Kind,
) -> Result<Prepared, Error> {
    let call = launch_call(ruby, launch, kind, B::CONFINES);
    let view = RubyWorkspace::of(ruby, rb_self);
    let policy = core_policy(ruby, rb_self)?;
    B::prepare(ruby, rb_self, launch, (policy, &view), call).map_err(|error| raised(ruby, error))
}

/// `execute_program(command, timeout:, ...)`: runs `command` (no shell)
/// as the backend confines it and returns its Execution (§17).
pub(crate) fn execute_program<B: Backend>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<Value, Error> {
    let call = Call::parse(ruby, rb_self, args, Kind::Run, B::OWN_TREE)?;
    let prepared = prepared::<B>(ruby, rb_self, &call.launch, Kind::Run)?;
    run(ruby, rb_self, prepared, call)
}

/// `start_program(command, ...)`: starts `command` as the backend confines
/// it, as a ProcessSession the sandbox owns (§18).
pub(crate) fn start_program<B: Backend>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<Value, Error> {
    let call = Call::parse(ruby, rb_self, args, Kind::Session, B::OWN_TREE)?;
    if B::CONTEXT_FIRST {
        process_runner::check_context(call.launch.context)?;
    }
    let prepared = prepared::<B>(ruby, rb_self, &call.launch, Kind::Session)?;
    if !B::CONTEXT_FIRST {
        process_runner::check_context(call.launch.context)?;
    }
    start(ruby, rb_self, prepared, call)
}

/// Defines `writable?`, `execute_program` and `start_program` of a Rust
/// backend class (a macro: magnus's `method!` takes no generic parameter of
/// an enclosing function).
macro_rules! define_launches {
    ($class:expr, $backend:ty) => {{
        use magnus::{method, Module};
        use $crate::ruby_api::sandbox::backend as la;
        $class.define_method("writable?", method!(la::writable, 0))?;
        $class.define_method(
            "execute_program",
            method!(la::execute_program::<$backend>, -1),
        )?;
        $class.define_method("start_program", method!(la::start_program::<$backend>, -1))?;
    }};
}
pub(crate) use define_launches;
