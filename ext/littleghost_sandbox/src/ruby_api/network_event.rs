//! `LittleGhost::Sandbox::NetworkEvent` and the egress record of a sandbox:
//! `sandbox.network_log`, `sandbox.on_network { |event| }`
//! and `off_network(handler)`. The events are the core's
//! [`EgressEvent`]s, made on the built-in gateway's threads (one per tunnel
//! and per HTTP request, allowed or refused); the gateway records them in
//! the sandbox's [`NetworkHub`] without the GVL and the sandbox's event
//! thread calls the subscribers, in order, exactly as for gateway denials
//! (the same [`crate::helpers::event_hub`] machinery).
//! Its readers, `to_h`, equality and `inspect` are [`crate::helpers::record`]'s.

pub mod hub;

use littleghost_sandbox_core::network::log::Fields;
use magnus::{method, prelude::*, Error, RArray, RClass, Ruby, Value};

pub(crate) use hub::list;
pub use hub::{NetworkEvent, NetworkHub};

use crate::helpers::errors;
use crate::helpers::record::{self, define_record_methods};
use crate::ruby_api::sandbox::state::{self, SandboxObj};

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("NetworkEvent", ruby.class_object())?;
    class.undef_default_alloc_func();
    let _: Value = class.funcall("private_class_method", (ruby.to_symbol("new"),))?;
    define_record_methods!(class, NetworkEvent);
    class.define_alias("inspected?", "inspected")?;
    class.define_method("to_h", method!(record::to_h::<NetworkEvent>, 0))?;
    sandbox.define_method("on_network", method!(on_network, 0))?;
    sandbox.define_method("off_network", method!(off_network, 1))?;
    sandbox.define_method("network_log", method!(network_log, 0))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Sandbox methods.

fn hub_of(ruby: &Ruby, rb_self: SandboxObj) -> Result<std::sync::Arc<NetworkHub>, Error> {
    state::borrow(rb_self.as_value())
        .map(|state| state.network().hub())
        .ok_or_else(|| errors::type_error(ruby, "not a LittleGhost::Sandbox"))
}

/// on_network { |event| ... } -> the block (a Proc), the handle for off_network.
fn on_network(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    hub_of(ruby, rb_self)?.subscribe(ruby)
}

/// off_network(handler) -> true if `handler` was subscribed (and no longer is), else false.
fn off_network(ruby: &Ruby, rb_self: SandboxObj, handler: Value) -> Result<bool, Error> {
    hub_of(ruby, rb_self)?.unsubscribe(ruby, handler)
}

/// network_log -> frozen Array of the last (up to 100) NetworkEvents, oldest first.
fn network_log(ruby: &Ruby, rb_self: SandboxObj) -> Result<RArray, Error> {
    hub_of(ruby, rb_self)?.to_ruby(ruby)
}
