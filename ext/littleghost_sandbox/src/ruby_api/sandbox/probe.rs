//! The Hash every provider's `probe` answers with (SPEC §12):
//! `{available:, reason:, capabilities:}`, plus `limits:` when available
//! (each launch limit: true where the kernel enforces it, else why not).

use magnus::{prelude::*, Error, RHash, Ruby, Value};

use crate::helpers::args::kwargs;
use crate::ruby_api::capabilities;
use crate::ruby_api::launch_limits;

/// Available with the given capabilities when `unavailable` is None;
/// otherwise unavailable, with that reason and no capabilities.
pub fn result(
    ruby: &Ruby,
    unavailable: Option<String>,
    capabilities: impl FnOnce() -> Result<Value, Error>,
) -> Result<RHash, Error> {
    let capabilities = match unavailable {
        None => capabilities()?,
        Some(_) => capabilities::empty(ruby)?,
    };
    let reason = match &unavailable {
        None => ruby.qnil().as_value(),
        Some(reason) => ruby.str_new(reason).as_value(),
    };
    let result = kwargs(
        ruby,
        &[
            ("available", ruby.into_value(unavailable.is_none())),
            ("reason", reason),
            ("capabilities", capabilities),
        ],
    )?;
    if unavailable.is_none() {
        // L.3: which launch limits the kernel enforces here, and why not.
        result.aset(ruby.to_symbol("limits"), launch_limits::probe_report(ruby)?)?;
    }
    Ok(result)
}
