//! Where a sandbox's denials go (issue 12 item 12): the core's bounded
//! [`DenialLog`] and the `on_denial` subscribers, which [`report`] calls in
//! the refused thread. A refusal made where Ruby cannot run (the gateway's
//! threads) is recorded at once and queued ([`DenialHub::record_async`]);
//! the sandbox's event thread ([`crate::helpers::events`]) calls the
//! subscribers with it, in order (issue 19 item 4). A subscriber that raises a StandardError is reported
//! with `Kernel#warn` and otherwise ignored: the other subscribers still run
//! and the refused call still raises (or returns) what it would have.
//! Anything else (`Interrupt`, `throw`, `Thread#kill`) propagates.
//! Nothing here knows the Sandbox class: the Sandbox state holds a [`Denials`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use littleghost_sandbox_core::denial::{Denial as CoreDenial, DenialLog};
use magnus::{
    error::ErrorType, gc::Marker, prelude::*, typed_data::Obj, value::Opaque, DataTypeFunctions,
    Error, Ruby, TypedData, Value,
};

use crate::helpers::events::{Delivery, EventQueue};
use crate::ruby_api::errors;

/// A sandbox's denials: the bounded log and the subscribed callables.
#[derive(Default)]
pub struct DenialHub {
    pub(crate) log: DenialLog,
    /// Marked by the owning sandbox; never locked across a call into Ruby.
    subscribers: Mutex<Vec<Opaque<Value>>>,
    /// Denials made off Ruby's threads, waiting for the event thread.
    events: Arc<EventQueue<CoreDenial>>,
    /// The event thread (started when a gateway reports here and someone listens).
    delivery: Delivery,
    /// A gateway reports here: subscribing starts the event thread.
    asynchronous: AtomicBool,
}

impl DenialHub {
    /// Records `denial` made where Ruby cannot run (a gateway's thread,
    /// without the GVL): `denials` shows it at once, and if anyone listens
    /// it is queued for the sandbox's event thread, which calls the
    /// subscribers in order. Never blocks and never calls Ruby; when the
    /// queue is full the subscribers miss it (and are warned), the log does not.
    pub fn record_async(&self, denial: CoreDenial) {
        self.log.record(denial.clone());
        if !self.subscribers().is_empty() {
            self.events.push(denial);
        }
    }

    /// From now on denials may arrive off Ruby's threads ([`record_async`](Self::record_async)).
    pub fn expect_async(self: &Arc<Self>, ruby: &Ruby) {
        self.asynchronous.store(true, Ordering::SeqCst);
        self.ensure_delivery(ruby);
    }

    /// Starts the event thread if denials may arrive off Ruby's threads and
    /// someone listens, and none of this process runs (after `fork`, a new one).
    pub fn ensure_delivery(self: &Arc<Self>, ruby: &Ruby) {
        if !self.asynchronous.load(Ordering::SeqCst) || self.subscribers().is_empty() {
            return;
        }
        let hub = self.clone();
        self.delivery.ensure(
            ruby,
            &self.events,
            move |ruby, denial| notify(ruby, &hub, denial, true),
            |ruby, dropped| {
                warn(
                    ruby,
                    &format!(
                        "LittleGhost::Sandbox#on_denial: {dropped} gateway denials were not delivered \
                         (more than {} waited); they are in sandbox.denials",
                        crate::helpers::events::CAPACITY
                    ),
                )
            },
        );
    }

    /// Delivers the queued denials, then ends the event thread (sandbox `close`).
    pub fn stop_delivery(&self, ruby: &Ruby) -> Result<(), Error> {
        self.delivery.stop(ruby, &self.events)
    }

    pub(crate) fn subscribers(&self) -> MutexGuard<'_, Vec<Opaque<Value>>> {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The field a Sandbox keeps: marks the subscribers and forgets them when
/// the sandbox is freed (a session may outlive it and still hold the hub).
#[derive(Default)]
pub struct Denials(Arc<DenialHub>);

impl Denials {
    pub fn mark(&self, marker: &Marker) {
        for subscriber in self.0.subscribers().iter() {
            marker.mark(*subscriber);
        }
        self.0.delivery.mark(marker);
    }

    pub fn hub(&self) -> Arc<DenialHub> {
        self.0.clone()
    }
}

impl Drop for Denials {
    fn drop(&mut self) {
        self.0.subscribers().clear();
        // The event thread delivers nothing more and ends.
        self.0.events.close();
    }
}

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
pub struct Denial(pub(crate) CoreDenial);

impl DataTypeFunctions for Denial {}

/// A new frozen Denial for `denial`.
pub(crate) fn wrap(ruby: &Ruby, denial: CoreDenial) -> Value {
    let object: Obj<Denial> = ruby.obj_wrap(Denial(denial));
    let value = object.as_value();
    value.freeze();
    value
}

/// Records `denial` in `hub` and calls each subscriber with it (see the module docs).
pub fn report(ruby: &Ruby, hub: &DenialHub, denial: CoreDenial) -> Result<(), Error> {
    hub.log.record(denial.clone());
    notify(ruby, hub, denial, false)
}

/// Calls each subscriber with `denial`. In the refused thread a
/// StandardError is warned about and the rest propagates; on the event
/// thread (`event_thread`) every exception is warned about, so one
/// subscriber can neither lose the next denials nor stop the thread.
fn notify(
    ruby: &Ruby,
    hub: &DenialHub,
    denial: CoreDenial,
    event_thread: bool,
) -> Result<(), Error> {
    // Copied into a Ruby Array, which the GC sees: a subscriber may
    // `off_denial` another while this loop still holds it.
    let subscribers = ruby.ary_new();
    for subscriber in hub.subscribers().iter() {
        subscribers.push(ruby.get_inner(*subscriber))?;
    }
    if subscribers.is_empty() {
        return Ok(());
    }
    let value = wrap(ruby, denial);
    for subscriber in subscribers.into_iter() {
        // The user's `on_denial` block.
        if let Err(error) = subscriber.funcall::<_, _, Value>("call", (value,)) {
            swallow(ruby, error, event_thread)?;
        }
    }
    Ok(())
}

/// A subscriber's StandardError is warned about and dropped; the rest propagates.
fn swallow(ruby: &Ruby, error: Error, any_exception: bool) -> Result<(), Error> {
    let ErrorType::Exception(exception) = error.error_type() else {
        return Err(error);
    };
    if !any_exception && !exception.is_kind_of(ruby.exception_standard_error()) {
        return Err(error);
    }
    // SAFETY: the class name is copied into an owned String before any other Ruby call.
    let class = unsafe { exception.classname() }.into_owned();
    let message = errors::message(&error);
    warn(
        ruby,
        &format!("LittleGhost::Sandbox#on_denial subscriber raised {class}: {message}"),
    )
}

/// Kernel#warn, not rb_warn: the text stays UTF-8 and unprefixed, as a
/// user's `Warning.warn` filter expects.
fn warn(ruby: &Ruby, text: &str) -> Result<(), Error> {
    let _: Value = ruby.module_kernel().funcall("warn", (text,))?;
    Ok(())
}
