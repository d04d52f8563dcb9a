//! A sandbox's event stream, generic over what it carries: the bounded log
//! (`sandbox.denials`, `sandbox.network_log`), the subscribed callables
//! (`on_denial`, `on_network`), the queue of events made where Ruby cannot
//! run and the Ruby thread that delivers them ([`crate::helpers::events`]).
//! A [`Stream`] names the event type, how it becomes a Ruby value and the
//! names its warnings use; [`EventHub`] does the rest once for every stream.
//!
//! No Ruby code runs while a lock a mark function takes is
//! held. The subscriber list is locked only to copy, push or retain (never
//! across `call` or `==`); the log's lock is never taken by a mark function
//! and never held across a call into Ruby either.
//!
//! A subscriber that raises a StandardError is reported with `Kernel#warn`
//! and otherwise ignored: the other subscribers still run. In a caller's
//! thread ([`EventHub::report`]) anything else (`Interrupt`, `throw`,
//! `Thread#kill`) propagates; on the event thread every exception is warned
//! about, so one subscriber can neither lose the next events nor stop it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use littleghost_sandbox_core::network::log::{Log, Record};
use magnus::{
    error::ErrorType, gc::Marker, prelude::*, rb_sys::AsRawValue, value::Opaque, Error, RArray,
    Ruby, Value,
};

use crate::helpers::errors;
use crate::helpers::events::{Delivery, EventQueue, CAPACITY};
use crate::helpers::record::{self, RecordObject};

/// What one event stream carries and how Ruby names it.
pub trait Stream: 'static {
    type Event: Record + Send + 'static;
    /// The frozen Ruby value made for each event.
    type Object: RecordObject<Record = Self::Event>;
    /// The subscribing method, as warnings name it (`"on_denial"`).
    const SUBSCRIBE: &'static str;
    /// The method listing the log, as warnings name it (`"denials"`).
    const LOG: &'static str;
    /// What a lost event is called in the warning (`"gateway denials"`).
    const NOUN: &'static str;
    /// How many events the log keeps.
    const CAPACITY: usize;
}

/// One stream of a sandbox: the bounded log and the subscribed callables.
pub struct EventHub<S: Stream> {
    log: Log<S::Event>,
    /// Marked by the owning sandbox; never locked across a call into Ruby.
    subscribers: Mutex<Vec<Opaque<Value>>>,
    /// Events made off Ruby's threads, waiting for the event thread.
    events: Arc<EventQueue<S::Event>>,
    /// The event thread (started when a gateway reports here and someone listens).
    delivery: Delivery,
    /// A gateway reports here: subscribing starts the event thread.
    asynchronous: AtomicBool,
}

impl<S: Stream> Default for EventHub<S> {
    fn default() -> Self {
        EventHub {
            log: Log::new(S::CAPACITY, None),
            subscribers: Mutex::new(Vec::new()),
            events: Arc::new(EventQueue::default()),
            delivery: Delivery::default(),
            asynchronous: AtomicBool::new(false),
        }
    }
}

impl<S: Stream> EventHub<S> {
    /// The kept events, oldest first.
    pub fn list(&self) -> Vec<S::Event> {
        self.log.list()
    }

    /// The log as a frozen Array of new frozen values, oldest first.
    pub fn to_ruby(&self, ruby: &Ruby) -> Result<RArray, Error> {
        // The log is copied (and its lock released) before any allocation.
        record::list::<S::Object>(ruby, self.list())
    }

    /// Records `event` made where Ruby cannot run (a gateway's thread,
    /// without the GVL): the log shows it at once, and if anyone listens it
    /// is queued for the sandbox's event thread, which calls the subscribers
    /// in order. Never blocks and never calls Ruby; when the queue is full
    /// the subscribers miss it (and are warned), the log does not.
    pub fn record_async(&self, event: S::Event) {
        let event = event.capped();
        self.log.push(event.clone());
        if !self.subscribers().is_empty() {
            self.events.push(event);
        }
    }

    /// Records `event` in the log and calls each subscriber with it in this
    /// (a Ruby) thread; a subscriber's StandardError is warned about, the
    /// rest propagates.
    pub fn report(&self, ruby: &Ruby, event: S::Event) -> Result<(), Error> {
        let event = event.capped();
        self.log.push(event.clone());
        self.notify(ruby, event, false)
    }

    /// From now on events may arrive off Ruby's threads ([`record_async`](Self::record_async)).
    pub fn expect_async(self: &Arc<Self>, ruby: &Ruby) {
        self.asynchronous.store(true, Ordering::SeqCst);
        self.ensure_delivery(ruby);
    }

    /// Starts the event thread if events may arrive off Ruby's threads and
    /// someone listens, and none of this process runs (after `fork`, a new one).
    pub fn ensure_delivery(self: &Arc<Self>, ruby: &Ruby) {
        if !self.asynchronous.load(Ordering::SeqCst) || self.subscribers().is_empty() {
            return;
        }
        let hub = self.clone();
        self.delivery.ensure(
            ruby,
            &self.events,
            move |ruby, event| hub.notify(ruby, event, true),
            |ruby, dropped| {
                warn(
                    ruby,
                    &format!(
                        "LittleGhost::Sandbox#{}: {dropped} {} were not delivered \
                         (more than {CAPACITY} waited); they are in sandbox.{}",
                        S::SUBSCRIBE,
                        S::NOUN,
                        S::LOG
                    ),
                )
            },
        );
    }

    /// Delivers the queued events, then ends the event thread (sandbox `close`).
    pub fn stop_delivery(&self, ruby: &Ruby) -> Result<(), Error> {
        self.delivery.stop(ruby, &self.events)
    }

    /// The subscribers; never held across a call into Ruby.
    pub(crate) fn subscribers(&self) -> MutexGuard<'_, Vec<Opaque<Value>>> {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The subscribers copied into a new Ruby Array, which the GC sees. The
    /// Array is allocated before the lock is taken (an allocation may run the GC).
    fn subscriber_array(&self, ruby: &Ruby) -> Result<RArray, Error> {
        let array = ruby.ary_new();
        let current: Vec<Value> = self
            .subscribers()
            .iter()
            .map(|subscriber| ruby.get_inner(*subscriber))
            .collect();
        for subscriber in current {
            array.push(subscriber)?;
        }
        Ok(array)
    }

    /// `on_X { |event| ... }`: subscribes the block; returns it (the handle).
    pub fn subscribe(self: &Arc<Self>, ruby: &Ruby) -> Result<Value, Error> {
        let block = ruby.block_proc().map_err(|_| {
            errors::argument_error(ruby, format!("{} requires a block", S::SUBSCRIBE))
        })?;
        let value = block.as_value();
        self.subscribers().push(value.into());
        self.ensure_delivery(ruby);
        Ok(value)
    }

    /// `off_X(handler)`: true if `handler` was subscribed (and no longer is).
    ///
    /// `==` is Ruby code (a user's Proc subclass may define it, and may start
    /// a GC whose mark function takes the subscriber lock), so it runs on a
    /// copy of the list with the lock released; the
    /// subscribers found equal are then removed by identity.
    pub fn unsubscribe(&self, ruby: &Ruby, handler: Value) -> Result<bool, Error> {
        // Held in a Ruby Array on this stack, so the GC keeps them while `==` runs.
        let snapshot = self.subscriber_array(ruby)?;
        let mut matched = Vec::new();
        for subscriber in snapshot.into_iter() {
            if subscriber.as_raw() == handler.as_raw() || subscriber.equal(handler)? {
                matched.push(subscriber.as_raw());
            }
        }
        // RB_GC_GUARD: the Array stays on the stack until here.
        std::hint::black_box(&snapshot);
        if matched.is_empty() {
            return Ok(false);
        }
        let mut list = self.subscribers();
        let before = list.len();
        list.retain(|subscriber| !matched.contains(&ruby.get_inner(*subscriber).as_raw()));
        Ok(list.len() != before)
    }

    /// Calls each subscriber with `event` (see the module docs for errors).
    fn notify(&self, ruby: &Ruby, event: S::Event, event_thread: bool) -> Result<(), Error> {
        // A subscriber may unsubscribe another while this loop still holds it.
        let subscribers = self.subscriber_array(ruby)?;
        if subscribers.is_empty() {
            return Ok(());
        }
        let value = record::wrap::<S::Object>(ruby, event);
        for subscriber in subscribers.into_iter() {
            // The user's block.
            if let Err(error) = subscriber.funcall::<_, _, Value>("call", (value,)) {
                swallow::<S>(ruby, error, event_thread)?;
            }
        }
        Ok(())
    }
}

/// The field a Sandbox keeps for one stream: marks the subscribers and the
/// event thread, and forgets them when the sandbox is freed (a session may
/// outlive it and still hold the hub).
pub struct Events<S: Stream>(Arc<EventHub<S>>);

impl<S: Stream> Default for Events<S> {
    fn default() -> Self {
        Events(Arc::new(EventHub::default()))
    }
}

impl<S: Stream> Events<S> {
    pub fn mark(&self, marker: &Marker) {
        for subscriber in self.0.subscribers().iter() {
            marker.mark(*subscriber);
        }
        self.0.delivery.mark(marker);
    }

    pub fn hub(&self) -> Arc<EventHub<S>> {
        self.0.clone()
    }
}

impl<S: Stream> Drop for Events<S> {
    fn drop(&mut self) {
        self.0.subscribers().clear();
        // The event thread delivers nothing more and ends.
        self.0.events.close();
    }
}

/// A subscriber's StandardError (any exception on the event thread) is
/// warned about and dropped; the rest propagates.
fn swallow<S: Stream>(ruby: &Ruby, error: Error, any_exception: bool) -> Result<(), Error> {
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
        &format!(
            "LittleGhost::Sandbox#{} subscriber raised {class}: {message}",
            S::SUBSCRIBE
        ),
    )
}

/// Kernel#warn, not rb_warn: the text stays UTF-8 and unprefixed, as a
/// user's `Warning.warn` filter expects.
fn warn(ruby: &Ruby, text: &str) -> Result<(), Error> {
    let _: Value = ruby.module_kernel().funcall("warn", (text,))?;
    Ok(())
}
