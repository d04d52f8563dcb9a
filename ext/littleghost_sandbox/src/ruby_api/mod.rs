//! One file per Ruby class. `init` defines them in dependency order.

use magnus::{Error, Module, Ruby};

pub mod bubblewrap;
pub mod builtin_gateway;
pub mod capabilities;
pub mod denial;
pub mod environment_policy;
pub mod errors;
pub mod execution;
pub mod gateway;
#[cfg(target_os = "linux")]
pub mod landlock;
#[cfg(not(target_os = "linux"))]
#[path = "landlock_unsupported.rs"]
pub mod landlock;
pub mod launch_limits;
pub mod limits;
pub mod mount;
pub mod native;
pub mod network_event;
pub mod network_policy;
pub mod ownership;
pub mod policy;
pub mod process_runner;
pub mod process_session;
pub mod remote;
pub mod remote_session;
pub mod sandbox;
pub mod scope;
pub mod seatbelt;
/// Deliberate panics for the specs (`rake compile` builds them; the gem does not).
#[cfg(feature = "test-hooks")]
pub mod test_hooks;
pub mod unrestricted;
pub mod workspace;

/// Defines `LittleGhost`, `LittleGhost::Sandbox`, `LittleGhost::Sandboxes` and every class beneath them.
pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let little_ghost = ruby.define_module("LittleGhost")?;
    errors::init(ruby, little_ghost)?;
    let sandbox = little_ghost.define_class("Sandbox", ruby.class_object())?;
    little_ghost.define_module("Sandboxes")?;
    capabilities::init(ruby, sandbox)?;
    limits::init(ruby, sandbox)?;
    environment_policy::init(ruby, sandbox)?;
    network_policy::init(ruby, sandbox)?;
    mount::init(ruby, sandbox)?;
    policy::init(ruby, sandbox)?;
    workspace::init(ruby, little_ghost)?;
    execution::init(ruby, sandbox)?;
    process_runner::init(ruby, sandbox)?;
    process_session::init(ruby, sandbox)?;
    sandbox::init(ruby, sandbox)?;
    denial::init(ruby, sandbox)?;
    network_event::init(ruby, sandbox)?;
    scope::init(ruby, sandbox)?;
    unrestricted::init(ruby, little_ghost)?;
    bubblewrap::init(ruby, little_ghost)?;
    landlock::init(ruby, little_ghost)?;
    seatbelt::init(ruby, little_ghost)?;
    native::init(ruby, little_ghost)?;
    remote::init(ruby, little_ghost)?;
    gateway::init(ruby, little_ghost)?;
    builtin_gateway::init(ruby, little_ghost)?;
    #[cfg(feature = "test-hooks")]
    test_hooks::init(ruby, sandbox)?;
    Ok(())
}
