//! `LittleGhost::Sandboxes::Landlock` where the platform has no Landlock:
//! the class exists (the provider is registered everywhere), its probe says
//! why it is unavailable, and building one raises UnsupportedPlatformError.

use magnus::{function, method, prelude::*, Error, RHash, RModule, RObject, Ruby, Value};

use crate::helpers::args::keywords_only;
use crate::helpers::constants;
use crate::helpers::errors;
use crate::ruby_api::capabilities;
use crate::ruby_api::sandbox::probe;

const REASON: &str = "Landlock is supported only on Linux";

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class =
        sandboxes.define_class("Landlock", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    Ok(())
}

fn probe(ruby: &Ruby, args: &[Value]) -> Result<RHash, Error> {
    probe_options(ruby, keywords_only(args)?)
}

/// [`probe`] of a keyword Hash (for Native).
pub(crate) fn probe_options(ruby: &Ruby, _options: RHash) -> Result<RHash, Error> {
    let result = probe::result(ruby, Some(REASON.into()), || capabilities::empty(ruby))?;
    result.aset(ruby.to_symbol("abi"), ruby.qnil())?;
    Ok(result)
}

fn initialize(ruby: &Ruby, _rb_self: RObject, _args: &[Value]) -> Result<(), Error> {
    Err(errors::unsupported_platform_error(
        ruby,
        "Landlock sandboxing is supported only on Linux",
    ))
}
