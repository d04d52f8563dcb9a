//! The egress stream of a sandbox (the [`NetworkHub`] its gateway records
//! into) and the `LittleGhost::Sandbox::NetworkEvent` values it hands to
//! Ruby. Kept apart from the Ruby methods in the parent module so that the
//! Sandbox's state can hold the stream without depending on them.

use littleghost_sandbox_core::network::EgressEvent;
use magnus::{
    prelude::*, typed_data::Obj, DataTypeFunctions, Error, RArray, Ruby, TypedData, Value,
};

use crate::helpers::event_hub::{EventHub, Events, Stream};

/// How many network events a sandbox keeps (like its denials).
pub const NETWORK_LOG_CAPACITY: usize = littleghost_sandbox_core::denial::DEFAULT_CAPACITY;

/// The egress stream: `on_network`, `network_log`.
pub struct NetworkStream;

impl Stream for NetworkStream {
    type Event = EgressEvent;
    const SUBSCRIBE: &'static str = "on_network";
    const LOG: &'static str = "network_log";
    const NOUN: &'static str = "network events";
    const CAPACITY: usize = NETWORK_LOG_CAPACITY;

    fn wrap(ruby: &Ruby, event: EgressEvent) -> Value {
        wrap(ruby, event)
    }
}

/// A sandbox's egress record and its `on_network` subscribers.
pub type NetworkHub = EventHub<NetworkStream>;

/// The field a Sandbox keeps (see [`Events`]).
pub type NetworkEvents = Events<NetworkStream>;

/// A frozen `LittleGhost::Sandbox::NetworkEvent` value.
#[derive(TypedData)]
#[magnus(class = "LittleGhost::Sandbox::NetworkEvent", free_immediately, size)]
pub struct NetworkEvent(pub(super) EgressEvent);

impl DataTypeFunctions for NetworkEvent {}

/// A new frozen NetworkEvent for `event`.
pub(crate) fn wrap(ruby: &Ruby, event: EgressEvent) -> Value {
    let object: Obj<NetworkEvent> = ruby.obj_wrap(NetworkEvent(event));
    let value = object.as_value();
    value.freeze();
    value
}

/// A frozen Array of new NetworkEvents, oldest first.
pub(crate) fn list(ruby: &Ruby, events: Vec<EgressEvent>) -> Result<RArray, Error> {
    let array = ruby.ary_new_capa(events.len());
    for event in events {
        array.push(wrap(ruby, event))?;
    }
    array.freeze();
    Ok(array)
}
