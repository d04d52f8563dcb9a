//! The egress stream of a sandbox (the [`NetworkHub`] its gateway records
//! into) and the `LittleGhost::Sandbox::NetworkEvent` values it hands to
//! Ruby. Kept apart from the Ruby methods in the parent module so that the
//! Sandbox's state can hold the stream without depending on them.

use littleghost_sandbox_core::network::EgressEvent;
use magnus::{DataTypeFunctions, Error, RArray, Ruby, TypedData};

use crate::helpers::event_hub::{EventHub, Events, Stream};
use crate::helpers::record::{self, RecordObject};

/// How many network events a sandbox keeps (like its denials).
pub const NETWORK_LOG_CAPACITY: usize = littleghost_sandbox_core::denial::DEFAULT_CAPACITY;

/// The egress stream: `on_network`, `network_log`.
pub struct NetworkStream;

impl Stream for NetworkStream {
    type Event = EgressEvent;
    type Object = NetworkEvent;
    const SUBSCRIBE: &'static str = "on_network";
    const LOG: &'static str = "network_log";
    const NOUN: &'static str = "network events";
    const CAPACITY: usize = NETWORK_LOG_CAPACITY;
}

/// A sandbox's egress record and its `on_network` subscribers.
pub type NetworkHub = EventHub<NetworkStream>;

/// The field a Sandbox keeps (see [`Events`]).
pub type NetworkEvents = Events<NetworkStream>;

/// A frozen `LittleGhost::Sandbox::NetworkEvent` value.
#[derive(TypedData)]
#[magnus(class = "LittleGhost::Sandbox::NetworkEvent", free_immediately, size)]
pub struct NetworkEvent(EgressEvent);

impl DataTypeFunctions for NetworkEvent {}

impl RecordObject for NetworkEvent {
    type Record = EgressEvent;

    fn new(record: EgressEvent) -> Self {
        NetworkEvent(record)
    }

    fn record(&self) -> &EgressEvent {
        &self.0
    }
}

/// A frozen Array of new NetworkEvents, oldest first.
pub(crate) fn list(ruby: &Ruby, events: Vec<EgressEvent>) -> Result<RArray, Error> {
    record::list::<NetworkEvent>(ruby, events)
}
