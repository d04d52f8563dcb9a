//! Where a sandbox's denials go: the bounded log and the
//! `on_denial` subscribers, an [`EventHub`] of the [`DenialStream`].
//! [`report`] records a denial and calls the subscribers in the refused
//! thread. A refusal made where Ruby cannot run (the gateway's threads) is
//! recorded at once and queued ([`EventHub::record_async`]); the sandbox's
//! event thread ([`crate::helpers::events`]) calls the subscribers with it,
//! in order. A subscriber that raises a StandardError is
//! reported with `Kernel#warn` and otherwise ignored: the other subscribers
//! still run and the refused call still raises (or returns) what it would
//! have. Anything else (`Interrupt`, `throw`, `Thread#kill`) propagates.
//! Nothing here knows the Sandbox class: the Sandbox state holds a [`Denials`].

use std::sync::Arc;

use littleghost_sandbox_core::denial::{Denial as CoreDenial, DEFAULT_CAPACITY};
use magnus::{DataTypeFunctions, Error, Ruby, TypedData, Value};

use crate::helpers::event_hub::{EventHub, Events, Stream};
use crate::helpers::record::{self, RecordObject};

/// The denial stream: `on_denial`, `denials`.
pub struct DenialStream;

impl Stream for DenialStream {
    type Event = CoreDenial;
    type Object = Denial;
    const SUBSCRIBE: &'static str = "on_denial";
    const LOG: &'static str = "denials";
    const NOUN: &'static str = "gateway denials";
    const CAPACITY: usize = DEFAULT_CAPACITY;
}

/// A sandbox's denials: the bounded log and the subscribed callables.
pub type DenialHub = EventHub<DenialStream>;

/// The field a Sandbox keeps (see [`Events`]).
pub type Denials = Events<DenialStream>;

/// Where a launch reports a limit kill: the hub and the program's name.
#[derive(Clone)]
pub struct Reporter {
    pub hub: Arc<DenialHub>,
    pub program: String,
}

impl Reporter {
    /// Reports `denial` to the hub (see [`report`]).
    pub fn report(&self, ruby: &Ruby, denial: CoreDenial) -> Result<(), Error> {
        report(ruby, &self.hub, denial)
    }
}

/// A frozen `LittleGhost::Sandbox::Denial` value.
#[derive(TypedData)]
#[magnus(class = "LittleGhost::Sandbox::Denial", free_immediately, size)]
pub struct Denial(CoreDenial);

impl DataTypeFunctions for Denial {}

impl RecordObject for Denial {
    type Record = CoreDenial;

    fn new(record: CoreDenial) -> Self {
        Denial(record)
    }

    fn record(&self) -> &CoreDenial {
        &self.0
    }
}

/// A new frozen Denial for `denial`.
pub(crate) fn wrap(ruby: &Ruby, denial: CoreDenial) -> Value {
    record::wrap::<Denial>(ruby, denial)
}

/// Records `denial` in `hub` and calls each subscriber with it, in this thread.
pub fn report(ruby: &Ruby, hub: &DenialHub, denial: CoreDenial) -> Result<(), Error> {
    hub.report(ruby, denial)
}
