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
use littleghost_sandbox_core::network::log::Fields;
use magnus::{method, prelude::*, Error, RArray, RClass, Ruby, Value};

use hub::Denial;
pub use hub::{report, DenialHub, Reporter};

use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::record::define_record_methods;
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
    // `Denial.new` is made private and `to_h` defined in lib/littleghost/sandbox/base.rb.
    class.undef_default_alloc_func();
    define_record_methods!(class, Denial);
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
