//! `LittleGhost::Sandbox::Denial` and the denial events of a sandbox (issue
//! 12 item 12): `sandbox.on_denial { |denial| ... }`, `off_denial(handler)`
//! and `sandbox.denials`. What counts as a denial, and the bounded log, live
//! in the core (`littleghost_sandbox_core::denial`); this file wraps a core
//! [`CoreDenial`] as a frozen Ruby value and calls the subscribers.
//!
//! Subscribers run in the thread that was refused (broker refusals, an
//! output-bound kill of `execute_program`) or, for a session's memory limit,
//! in the session's monitor thread that ended it. A subscriber that raises a
//! StandardError is reported with `Kernel#warn` and otherwise ignored: the
//! other subscribers still run and the refused call still raises (or
//! returns) what it would have. Anything else (`Interrupt`, `throw`,
//! `Thread#kill`) propagates.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use littleghost_sandbox_core::denial::{Denial as CoreDenial, DenialLog, Operation, Reason};
use magnus::{
    error::ErrorType, gc::Marker, method, prelude::*, typed_data::Obj, value::Opaque,
    DataTypeFunctions, Error, IntoValue, RArray, RClass, RHash, Ruby, TypedData, Value,
};

use crate::helpers::convert;
use crate::ruby_api::errors;
use crate::ruby_api::sandbox::SandboxObj;

/// A sandbox's denials: the bounded log and the subscribed callables.
#[derive(Default)]
pub struct DenialHub {
    log: DenialLog,
    /// Marked by the owning sandbox; never locked across a call into Ruby.
    subscribers: Mutex<Vec<Opaque<Value>>>,
}

impl DenialHub {
    /// Records `denial` without calling subscribers: for refusals made where
    /// Ruby cannot run (the gateway's threads); `denials` shows them.
    pub fn record_only(&self, denial: CoreDenial) {
        self.log.record(denial);
    }

    fn subscribers(&self) -> std::sync::MutexGuard<'_, Vec<Opaque<Value>>> {
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
    /// The reporter of `sandbox` for a run of `program`, if it is a Sandbox.
    pub fn of(sandbox: SandboxObj, program: &str) -> Option<Reporter> {
        crate::ruby_api::sandbox::borrow(sandbox.as_value()).map(|state| Reporter {
            hub: state.denials().hub(),
            program: program.to_owned(),
        })
    }
}

impl Reporter {
    /// Reports `denial` to the hub (see [`report`]).
    pub fn report(&self, ruby: &Ruby, denial: CoreDenial) -> Result<(), Error> {
        report(ruby, &self.hub, denial)
    }
}

/// A frozen Denial value.
#[derive(TypedData)]
#[magnus(class = "LittleGhost::Sandbox::Denial", free_immediately, size)]
pub struct Denial(CoreDenial);

impl DataTypeFunctions for Denial {}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Denial", ruby.class_object())?;
    class.undef_default_alloc_func();
    let _: Value = class.funcall("private_class_method", (ruby.to_symbol("new"),))?;
    class.define_method("kind", method!(kind, 0))?;
    class.define_method("operation", method!(operation, 0))?;
    class.define_method("target", method!(target, 0))?;
    class.define_method("reason", method!(reason, 0))?;
    class.define_method("message", method!(message, 0))?;
    class.define_method("time", method!(time, 0))?;
    class.define_method("to_h", method!(to_h, 0))?;
    class.define_method("==", method!(equal, 1))?;
    class.define_method("eql?", method!(equal, 1))?;
    class.define_method("hash", method!(hash, 0))?;
    class.define_method("inspect", method!(inspect, 0))?;
    class.define_method("to_s", method!(inspect, 0))?;
    sandbox.define_method("on_denial", method!(on_denial, 0))?;
    sandbox.define_method("off_denial", method!(off_denial, 1))?;
    sandbox.define_method("denials", method!(denials, 0))?;
    Ok(())
}

/// A new frozen Denial for `denial`.
fn wrap(ruby: &Ruby, denial: CoreDenial) -> Result<Value, Error> {
    let object: Obj<Denial> = ruby.obj_wrap(Denial(denial));
    let value = object.as_value();
    value.freeze();
    Ok(value)
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
    let value = wrap(ruby, denial)?;
    for subscriber in subscribers {
        if let Err(error) = subscriber.funcall::<_, _, Value>("call", (value,)) {
            swallow(ruby, error)?;
        }
    }
    Ok(())
}

/// Reports `denial` to the Sandbox `sandbox` (a no-op for other objects).
pub fn report_to(ruby: &Ruby, sandbox: Value, denial: CoreDenial) -> Result<(), Error> {
    match crate::ruby_api::sandbox::borrow(sandbox) {
        Some(state) => report(ruby, &state.denials().hub(), denial),
        None => Ok(()),
    }
}

/// A subscriber's StandardError is warned about and dropped; the rest propagates.
fn swallow(ruby: &Ruby, error: Error) -> Result<(), Error> {
    let ErrorType::Exception(exception) = error.error_type() else {
        return Err(error);
    };
    if !exception.is_kind_of(ruby.exception_standard_error()) {
        return Err(error);
    }
    let class: String = exception.class().funcall("name", ()).unwrap_or_default();
    let message: String = exception.funcall("message", ()).unwrap_or_default();
    let _: Value = ruby.module_kernel().funcall(
        "warn",
        (format!(
            "LittleGhost::Sandbox#on_denial subscriber raised {class}: {message}"
        ),),
    )?;
    Ok(())
}

/// The ToolError of a file operation the scope's capabilities refuse
/// (`feature` is `filesystem_read`...), reported to `sandbox` first.
pub fn capability_refused(ruby: &Ruby, sandbox: Value, feature: &str, path: Value) -> Error {
    let message = format!("Sandbox scope does not allow {}", feature.replace('_', " "));
    let target = convert::path_string(ruby, path, "path").map(convert::lossy);
    let denial = CoreDenial::new(
        operation_of(feature),
        target.unwrap_or_default(),
        Reason::Capability,
        message.clone(),
    );
    match report_to(ruby, sandbox, denial) {
        Ok(()) => errors::tool_error(ruby, message),
        Err(error) => error,
    }
}

/// The denial operation of a `filesystem_*` feature.
fn operation_of(feature: &str) -> Operation {
    match feature {
        "filesystem_list" => Operation::List,
        "filesystem_write" => Operation::Write,
        "filesystem_replace" => Operation::Replace,
        _ => Operation::Read,
    }
}

/// The broker's answer as Ruby sees it; a refusal is first reported to the
/// sandbox's denial subscribers, in this (the refused) thread.
pub fn brokered<T>(
    ruby: &Ruby,
    sandbox: Value,
    operation: Operation,
    logical: &str,
    result: littleghost_sandbox_core::Result<T>,
) -> Result<T, Error> {
    let error = match result {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    if let Some(refusal) = error.refusal() {
        let denial = CoreDenial::refused(operation, logical, refusal);
        report_to(ruby, sandbox, denial)?;
    }
    Err(errors::from_core(ruby, error))
}

// ---------------------------------------------------------------------------
// Sandbox methods.

fn hub_of(ruby: &Ruby, rb_self: SandboxObj) -> Result<Arc<DenialHub>, Error> {
    crate::ruby_api::sandbox::borrow(rb_self.as_value())
        .map(|state| state.denials().hub())
        .ok_or_else(|| errors::type_error(ruby, "not a LittleGhost::Sandbox"))
}

/// on_denial { |denial| ... } -> the block (a Proc), the handle for off_denial.
fn on_denial(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    let block = ruby
        .block_proc()
        .map_err(|_| errors::argument_error(ruby, "on_denial requires a block"))?;
    let value = block.as_value();
    hub_of(ruby, rb_self)?.subscribers().push(value.into());
    Ok(value)
}

/// off_denial(handler) -> true if `handler` was subscribed (and no longer is), else false.
fn off_denial(ruby: &Ruby, rb_self: SandboxObj, handler: Value) -> Result<bool, Error> {
    let hub = hub_of(ruby, rb_self)?;
    let mut subscribers = hub.subscribers();
    let before = subscribers.len();
    subscribers.retain(|subscriber| !ruby.get_inner(*subscriber).equal(handler).unwrap_or(false));
    Ok(subscribers.len() != before)
}

/// denials -> frozen Array of the last (up to 100) Denials, oldest first.
fn denials(ruby: &Ruby, rb_self: SandboxObj) -> Result<RArray, Error> {
    let hub = hub_of(ruby, rb_self)?;
    let array = ruby.ary_new();
    for denial in hub.log.list() {
        array.push(wrap(ruby, denial)?)?;
    }
    array.freeze();
    Ok(array)
}

// ---------------------------------------------------------------------------
// Denial methods.

fn kind(ruby: &Ruby, rb_self: &Denial) -> Value {
    ruby.to_symbol(rb_self.0.kind.name()).as_value()
}

fn operation(ruby: &Ruby, rb_self: &Denial) -> Value {
    ruby.to_symbol(rb_self.0.operation.name()).as_value()
}

fn target(ruby: &Ruby, rb_self: &Denial) -> Value {
    let string = ruby.str_new(&rb_self.0.target);
    string.freeze();
    string.as_value()
}

fn reason(ruby: &Ruby, rb_self: &Denial) -> Value {
    ruby.to_symbol(rb_self.0.reason.name()).as_value()
}

fn message(ruby: &Ruby, rb_self: &Denial) -> Value {
    let string = ruby.str_new(&rb_self.0.message);
    string.freeze();
    string.as_value()
}

fn time(ruby: &Ruby, rb_self: &Denial) -> Result<Value, Error> {
    let time: Value = rb_self.0.at.into_value_with(ruby);
    time.freeze();
    Ok(time)
}

fn to_h(ruby: &Ruby, rb_self: &Denial) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    hash.aset(ruby.to_symbol("kind"), kind(ruby, rb_self))?;
    hash.aset(ruby.to_symbol("operation"), operation(ruby, rb_self))?;
    hash.aset(ruby.to_symbol("target"), target(ruby, rb_self))?;
    hash.aset(ruby.to_symbol("reason"), reason(ruby, rb_self))?;
    hash.aset(ruby.to_symbol("message"), message(ruby, rb_self))?;
    hash.aset(ruby.to_symbol("time"), time(ruby, rb_self)?)?;
    Ok(hash)
}

fn equal(rb_self: &Denial, other: Value) -> bool {
    <&Denial>::try_convert(other).is_ok_and(|other| other.0 == rb_self.0)
}

fn hash(rb_self: &Denial) -> i64 {
    let mut hasher = DefaultHasher::new();
    rb_self.0.hash(&mut hasher);
    hasher.finish() as i64
}

/// `#<LittleGhost::Sandbox::Denial filesystem write "docs/a.md" read_only>`
fn inspect(rb_self: &Denial) -> String {
    let d = &rb_self.0;
    format!(
        "#<LittleGhost::Sandbox::Denial {} {} {:?} {}>",
        d.kind.name(),
        d.operation.name(),
        d.target,
        d.reason.name()
    )
}
