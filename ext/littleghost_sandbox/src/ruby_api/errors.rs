//! The error hierarchy of docs/spec.md §1; `helpers/errors.rs` raises its
//! classes from core errors.

use magnus::{prelude::*, Error, RModule, Ruby};

/// Defines (or reopens) the error classes under `LittleGhost`, with exactly the
/// superclasses of the spec, so a framework that loaded first never sees a
/// superclass mismatch.
pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let base = little_ghost.define_error("Error", ruby.exception_standard_error())?;
    let configuration = little_ghost.define_error("ConfigurationError", base)?;
    let sandbox_configuration =
        little_ghost.define_error("SandboxConfigurationError", configuration)?;
    for name in [
        "UnsupportedPlatformError",
        "DependencyError",
        "CapabilityError",
        "PolicyError",
    ] {
        little_ghost.define_error(name, sandbox_configuration)?;
    }
    for name in [
        "AbstractMethodError",
        "ToolError",
        "CancelledError",
        "DeadlineExceededError",
        "CleanupError",
    ] {
        little_ghost.define_error(name, base)?;
    }
    Ok(())
}
