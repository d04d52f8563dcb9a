//! `LittleGhost::Sandbox::TestHooks`: deliberate panics, so the specs can
//! prove that a Rust panic reaches Ruby as an exception and never aborts the
//! process. Compiled only with the `test-hooks` cargo feature, which
//! `rake compile` turns on and the gem build (extconf.rb) does not.
//!
//! What a caller sees:
//! - A panic while holding the GVL (inside any `function!`/`method!` wrapper)
//!   is caught by magnus 0.8 and raised with `rb_exc_fatal` as Ruby's `fatal`
//!   with the panic message: no `rescue` catches it, `ensure` blocks and
//!   `at_exit` run, and the process exits with status 1 (no abort, no core
//!   dump). spec/panic_spec.rb pins this down; making it rescuable needs our
//!   own catch_unwind around every method before magnus sees the panic.
//! - A panic in work run without the GVL (`helpers::nogvl`) is caught on that
//!   side and raised as RuntimeError "littleghost-sandbox internal error: ...".
//!
//! Either way the default panic hook still prints the panic to stderr.

use magnus::{function, Error, Module, Object, RClass, RHash, Ruby};

use crate::helpers::nogvl;

pub fn init(_ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let hooks = sandbox.define_module("TestHooks")?;
    hooks.define_singleton_method("panic_with_gvl", function!(panic_with_gvl, 0))?;
    hooks.define_singleton_method("panic_without_gvl", function!(panic_without_gvl, 0))?;
    hooks.define_singleton_method("provider_snapshot", function!(provider_snapshot, 0))?;
    hooks.define_singleton_method("restore_providers", function!(restore_providers, 1))?;
    hooks.define_singleton_method("gateway_denial", function!(gateway_denial, 3))?;
    Ok(())
}

/// Panics while holding the GVL (test hook; magnus raises `fatal`).
fn panic_with_gvl() -> Result<(), Error> {
    panic!("test hook panic with the GVL");
}

/// Panics in work run without the GVL (test hook; raises RuntimeError).
fn panic_without_gvl(ruby: &Ruby) -> Result<(), Error> {
    nogvl::blocking(ruby, || -> () { panic!("test hook panic without the GVL") })
}

/// A frozen copy of the Sandbox provider registry (specs save it around an example).
fn provider_snapshot(ruby: &Ruby) -> Result<RHash, Error> {
    crate::ruby_api::sandbox::PROVIDERS.snapshot(ruby)
}

/// Puts back a registry saved by `provider_snapshot`.
fn restore_providers(snapshot: RHash) -> Result<(), Error> {
    crate::ruby_api::sandbox::PROVIDERS.restore(snapshot)
}

/// A Denial as the gateway makes it: `gateway_denial("a.test:80", "secret_exfiltration",
/// ["GET", "/x"])` (the request may be nil), for the specs of the reasons and
/// request fields the request engine records. Its time is the epoch, so two
/// calls with the same arguments give equal Denials.
fn gateway_denial(
    ruby: &Ruby,
    destination: String,
    reason: String,
    request: Option<(String, String)>,
) -> Result<magnus::Value, Error> {
    let Some(reason) = littleghost_sandbox_core::denial::Reason::gateway_named(&reason) else {
        return Err(crate::helpers::errors::argument_error(
            ruby,
            format!("unknown gateway reason {reason}"),
        ));
    };
    let record = littleghost_sandbox_core::network::Denial {
        at: std::time::SystemTime::UNIX_EPOCH,
        destination,
        reason,
        request,
        detail: None,
    };
    let denial = littleghost_sandbox_core::denial::Denial::from(&record);
    Ok(crate::ruby_api::denial::hub::wrap(ruby, denial))
}
