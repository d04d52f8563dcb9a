//! The Hash every provider's `probe` answers with (SPEC §12):
//! `{available:, reason:, capabilities:}`.

use magnus::{prelude::*, Error, RHash, Ruby, Value};

use crate::helpers::args::kwargs;
use crate::ruby_api::capabilities;

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
    kwargs(
        ruby,
        &[
            ("available", ruby.into_value(unavailable.is_none())),
            ("reason", reason),
            ("capabilities", capabilities),
        ],
    )
}
