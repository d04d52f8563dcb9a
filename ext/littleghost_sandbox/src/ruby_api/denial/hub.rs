//! Where a sandbox's denials go (issue 12 item 12): the core's bounded
//! [`DenialLog`] and the `on_denial` subscribers, which [`report`] calls in
//! the refused thread. A subscriber that raises a StandardError is reported
//! with `Kernel#warn` and otherwise ignored: the other subscribers still run
//! and the refused call still raises (or returns) what it would have.
//! Anything else (`Interrupt`, `throw`, `Thread#kill`) propagates.
//! Nothing here knows the Sandbox class: the Sandbox state holds a [`Denials`].

use std::sync::{Arc, Mutex, MutexGuard};

use littleghost_sandbox_core::denial::{Denial as CoreDenial, DenialLog};
use magnus::{
    error::ErrorType, gc::Marker, prelude::*, typed_data::Obj, value::Opaque, DataTypeFunctions,
    Error, Ruby, TypedData, Value,
};

use crate::ruby_api::errors;

/// A sandbox's denials: the bounded log and the subscribed callables.
#[derive(Default)]
pub struct DenialHub {
    pub(crate) log: DenialLog,
    /// Marked by the owning sandbox; never locked across a call into Ruby.
    subscribers: Mutex<Vec<Opaque<Value>>>,
}

impl DenialHub {
    /// Records `denial` without calling subscribers: for refusals made where
    /// Ruby cannot run (the gateway's threads); `denials` shows them.
    pub fn record_only(&self, denial: CoreDenial) {
        self.log.record(denial);
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
    }

    pub fn hub(&self) -> Arc<DenialHub> {
        self.0.clone()
    }
}

impl Drop for Denials {
    fn drop(&mut self) {
        self.0.subscribers().clear();
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
    let subscribers: Vec<Value> = hub
        .subscribers()
        .iter()
        .map(|subscriber| ruby.get_inner(*subscriber))
        .collect();
    if subscribers.is_empty() {
        return Ok(());
    }
    let value = wrap(ruby, denial);
    for subscriber in subscribers {
        // The user's `on_denial` block.
        if let Err(error) = subscriber.funcall::<_, _, Value>("call", (value,)) {
            swallow(ruby, error)?;
        }
    }
    Ok(())
}

/// A subscriber's StandardError is warned about and dropped; the rest propagates.
fn swallow(ruby: &Ruby, error: Error) -> Result<(), Error> {
    let ErrorType::Exception(exception) = error.error_type() else {
        return Err(error);
    };
    if !exception.is_kind_of(ruby.exception_standard_error()) {
        return Err(error);
    }
    // SAFETY: the class name is copied into an owned String before any other Ruby call.
    let class = unsafe { exception.classname() }.into_owned();
    let message = errors::message(&error);
    // Kernel#warn, not rb_warn: the text stays UTF-8 and unprefixed, as a
    // user's `Warning.warn` filter expects.
    let _: Value = ruby.module_kernel().funcall(
        "warn",
        (format!(
            "LittleGhost::Sandbox#on_denial subscriber raised {class}: {message}"
        ),),
    )?;
    Ok(())
}
