//! The error hierarchy of SPEC §1, and the one place where core errors become
//! Ruby exceptions.

use littleghost_sandbox_core::Error as CoreError;
use magnus::{prelude::*, value::Lazy, Error, ExceptionClass, RModule, Ruby};

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

macro_rules! error_class {
    ($static_name:ident, $name:literal) => {
        static $static_name: Lazy<ExceptionClass> = Lazy::new(|ruby| {
            ruby.class_object()
                .const_get::<_, RModule>("LittleGhost")
                .and_then(|m| m.const_get($name))
                .expect(concat!("LittleGhost::", $name, " is defined at load"))
        });
    };
}

error_class!(TOOL_ERROR, "ToolError");
error_class!(POLICY_ERROR, "PolicyError");
error_class!(CAPABILITY_ERROR, "CapabilityError");
error_class!(DEPENDENCY_ERROR, "DependencyError");
error_class!(UNSUPPORTED_PLATFORM_ERROR, "UnsupportedPlatformError");
error_class!(CLEANUP_ERROR, "CleanupError");

/// `LittleGhost::ToolError` with `message`.
pub fn tool_error(ruby: &Ruby, message: impl Into<String>) -> Error {
    Error::new(ruby.get_inner(&TOOL_ERROR), message.into())
}

/// `LittleGhost::PolicyError` with `message`.
pub fn policy_error(ruby: &Ruby, message: impl Into<String>) -> Error {
    Error::new(ruby.get_inner(&POLICY_ERROR), message.into())
}

/// `LittleGhost::CapabilityError` with `message`.
pub fn capability_error(ruby: &Ruby, message: impl Into<String>) -> Error {
    Error::new(ruby.get_inner(&CAPABILITY_ERROR), message.into())
}

/// `LittleGhost::DependencyError` with `message`.
pub fn dependency_error(ruby: &Ruby, message: impl Into<String>) -> Error {
    Error::new(ruby.get_inner(&DEPENDENCY_ERROR), message.into())
}

/// `LittleGhost::UnsupportedPlatformError` with `message`.
pub fn unsupported_platform_error(ruby: &Ruby, message: impl Into<String>) -> Error {
    Error::new(ruby.get_inner(&UNSUPPORTED_PLATFORM_ERROR), message.into())
}

/// Ruby `ArgumentError` with `message`.
pub fn argument_error(ruby: &Ruby, message: impl Into<String>) -> Error {
    Error::new(ruby.exception_arg_error(), message.into())
}

/// Ruby `TypeError` with `message`.
pub fn type_error(ruby: &Ruby, message: impl Into<String>) -> Error {
    Error::new(ruby.exception_type_error(), message.into())
}

/// The message of a Ruby error, whether it was raised in Ruby or built in Rust.
pub fn message(error: &Error) -> String {
    match error.error_type() {
        magnus::error::ErrorType::Exception(exception) => exception
            .funcall::<_, _, String>("message", ())
            .unwrap_or_default(),
        magnus::error::ErrorType::Error(_, message) => message.to_string(),
        magnus::error::ErrorType::Jump(_) => String::new(),
    }
}

/// Maps a core error onto its documented Ruby exception class.
pub fn from_core(ruby: &Ruby, error: CoreError) -> Error {
    let class = match &error {
        CoreError::Tool(_) | CoreError::Refused(_) => ruby.get_inner(&TOOL_ERROR),
        CoreError::Policy(_) => ruby.get_inner(&POLICY_ERROR),
        CoreError::Capability(_) => ruby.get_inner(&CAPABILITY_ERROR),
        CoreError::Dependency(_) => ruby.get_inner(&DEPENDENCY_ERROR),
        CoreError::UnsupportedPlatform(_) => ruby.get_inner(&UNSUPPORTED_PLATFORM_ERROR),
        CoreError::Cleanup(_) => ruby.get_inner(&CLEANUP_ERROR),
        CoreError::Argument(_) => ruby.exception_arg_error(),
        CoreError::Key(_) => ruby.exception_key_error(),
        CoreError::Io(_) => ruby.exception_io_error(),
    };
    Error::new(class, error.message().to_owned())
}

/// `result.map_err(into_ruby)` in one call: `core_result(ruby, broker.read(..))?`.
pub fn core_result<T>(
    ruby: &Ruby,
    result: littleghost_sandbox_core::Result<T>,
) -> Result<T, Error> {
    result.map_err(|error| from_core(ruby, error))
}
