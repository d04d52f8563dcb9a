//! `LittleGhost::Sandbox::Denial` and the denial events of a sandbox:
//! `sandbox.on_denial { |denial| ... }`, `off_denial(handler)`
//! and `sandbox.denials`. What counts as a denial, and the bounded log, live
//! in the core (`littleghost_sandbox_core::denial`); [`hub`] records a core
//! [`CoreDenial`] and calls the subscribers, in the thread that was refused
//! (broker refusals, an output-bound kill of `execute_program`) or, for a
//! session's memory limit, in the session's monitor thread that ended it.

pub mod hub;

use std::sync::Arc;

use littleghost_sandbox_core::denial::{Denial as CoreDenial, Operation};
use magnus::{method, prelude::*, Error, IntoValue, RArray, RClass, RString, Ruby, Symbol, Value};

use hub::Denial;
pub use hub::{report, DenialHub, Reporter};

use crate::helpers::errors;
use crate::helpers::{convert, value_object as vo};
use crate::ruby_api::sandbox::state::{self, SandboxObj};

impl Reporter {
    /// The reporter of `sandbox` for a run of `program`, if it is a Sandbox.
    pub fn of(sandbox: SandboxObj, program: &str) -> Option<Reporter> {
        state::borrow(sandbox.as_value()).map(|state| {
            let hub = state.denials().hub();
            // A launch may be a fork child's first: its event thread starts here.
            hub.ensure_delivery(&Ruby::get_with(sandbox));
            Reporter {
                hub,
                program: program.to_owned(),
            }
        })
    }
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Denial", ruby.class_object())?;
    // `Denial.new` is made private in lib/littleghost/sandbox/base.rb.
    class.undef_default_alloc_func();
    class.define_method("kind", method!(kind, 0))?;
    class.define_method("operation", method!(operation, 0))?;
    class.define_method("target", method!(target, 0))?;
    class.define_method("reason", method!(reason, 0))?;
    class.define_method("message", method!(message, 0))?;
    class.define_method("time", method!(time, 0))?;
    class.define_method("http_method", method!(http_method, 0))?;
    class.define_method("path", method!(path, 0))?;
    class.define_method("detail", method!(detail, 0))?;
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

/// Reports `denial` to the Sandbox `sandbox` (a no-op for other objects).
pub fn report_to(ruby: &Ruby, sandbox: Value, denial: CoreDenial) -> Result<(), Error> {
    match state::borrow(sandbox) {
        Some(state) => report(ruby, &state.denials().hub(), denial),
        None => Ok(()),
    }
}

/// The ToolError of a file operation the scope's capabilities refuse
/// (`feature` is `filesystem_read`...), reported to `sandbox` first.
pub fn capability_refused(ruby: &Ruby, sandbox: Value, feature: &str, path: Value) -> Error {
    let target = convert::path_string(ruby, path, "path").map(convert::lossy);
    let denial = CoreDenial::capability(feature, target.unwrap_or_default());
    let message = denial.message.clone();
    match report_to(ruby, sandbox, denial) {
        Ok(()) => errors::tool_error(ruby, message),
        Err(error) => error,
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
        let denial = CoreDenial::refused(operation, logical, &refusal);
        report_to(ruby, sandbox, denial)?;
    }
    Err(errors::from_core(ruby, error))
}

// ---------------------------------------------------------------------------
// Sandbox methods.

fn hub_of(ruby: &Ruby, rb_self: SandboxObj) -> Result<Arc<DenialHub>, Error> {
    state::borrow(rb_self.as_value())
        .map(|state| state.denials().hub())
        .ok_or_else(|| errors::type_error(ruby, "not a LittleGhost::Sandbox"))
}

/// on_denial { |denial| ... } -> the block (a Proc), the handle for off_denial.
fn on_denial(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    hub_of(ruby, rb_self)?.subscribe(ruby)
}

/// off_denial(handler) -> true if `handler` was subscribed (and no longer is), else false.
fn off_denial(ruby: &Ruby, rb_self: SandboxObj, handler: Value) -> Result<bool, Error> {
    hub_of(ruby, rb_self)?.unsubscribe(ruby, handler)
}

/// denials -> frozen Array of the last (up to 100) Denials, oldest first.
fn denials(ruby: &Ruby, rb_self: SandboxObj) -> Result<RArray, Error> {
    hub_of(ruby, rb_self)?.to_ruby(ruby)
}

// ---------------------------------------------------------------------------
// Denial methods.

fn kind(ruby: &Ruby, rb_self: &Denial) -> Symbol {
    ruby.to_symbol(rb_self.0.kind.name())
}

fn operation(ruby: &Ruby, rb_self: &Denial) -> Symbol {
    ruby.to_symbol(rb_self.0.operation.name())
}

fn target(ruby: &Ruby, rb_self: &Denial) -> RString {
    vo::frozen_str(ruby, &rb_self.0.target)
}

fn reason(ruby: &Ruby, rb_self: &Denial) -> Symbol {
    ruby.to_symbol(rb_self.0.reason.name())
}

fn message(ruby: &Ruby, rb_self: &Denial) -> RString {
    vo::frozen_str(ruby, &rb_self.0.message)
}

fn time(ruby: &Ruby, rb_self: &Denial) -> Value {
    let time: Value = rb_self.0.at.into_value_with(ruby);
    time.freeze();
    time
}

/// The refused request's method (`"POST"`), for operation `:request`; else nil.
fn http_method(ruby: &Ruby, rb_self: &Denial) -> Option<RString> {
    let (method, _) = rb_self.0.request.as_ref()?;
    Some(vo::frozen_str(ruby, method))
}

/// The refused request's origin-form path (`"/repos/x?y=1"`), for operation `:request`; else nil.
fn path(ruby: &Ruby, rb_self: &Denial) -> Option<RString> {
    let (_, path) = rb_self.0.request.as_ref()?;
    Some(vo::frozen_str(ruby, path))
}

/// What the resolver, the system or the TLS library said when a destination
/// failed the gateway (`:dns`, `:upstream_certificate`...); else nil.
fn detail(ruby: &Ruby, rb_self: &Denial) -> Option<RString> {
    rb_self.0.detail.as_deref().map(|d| vo::frozen_str(ruby, d))
}

fn equal(rb_self: &Denial, other: Value) -> bool {
    <&Denial>::try_convert(other).is_ok_and(|other| other.0 == rb_self.0)
}

fn hash(rb_self: &Denial) -> i64 {
    vo::hash_code(&rb_self.0)
}

/// `#<LittleGhost::Sandbox::Denial filesystem write "docs/a.md" read_only>`, with
/// ` POST "/x"` for a refused request (the core's one-line Display, wrapped).
fn inspect(rb_self: &Denial) -> String {
    format!("#<LittleGhost::Sandbox::Denial {}>", rb_self.0)
}
