//! The one place where core errors become Ruby exceptions: each documented
//! kind onto its class of the hierarchy (docs/spec.md §1) that
//! `ruby_api/errors.rs` defines, and the Ruby wording of a typed core error.

use littleghost_sandbox_core::error::Kind;
use littleghost_sandbox_core::policy::Error as Misshapen;
use littleghost_sandbox_core::Error as CoreError;
use magnus::{prelude::*, value::Lazy, Error, ExceptionClass, RModule, Ruby};

/// For each documented class: a handle looked up once, and `fn(ruby, message)`
/// building an error of that class.
macro_rules! ruby_errors {
    ($($function:ident, $handle:ident, $name:literal;)*) => {$(
        static $handle: Lazy<ExceptionClass> = Lazy::new(|ruby| {
            ruby.class_object()
                .const_get::<_, RModule>("LittleGhost")
                .and_then(|m| m.const_get($name))
                .expect(concat!("LittleGhost::", $name, " is defined at load"))
        });

        #[doc = concat!("`LittleGhost::", $name, "` with `message`.")]
        pub fn $function(ruby: &Ruby, message: impl Into<String>) -> Error {
            Error::new(ruby.get_inner(&$handle), message.into())
        }
    )*};
}

ruby_errors! {
    tool_error, TOOL_ERROR, "ToolError";
    policy_error, POLICY_ERROR, "PolicyError";
    capability_error, CAPABILITY_ERROR, "CapabilityError";
    dependency_error, DEPENDENCY_ERROR, "DependencyError";
    unsupported_platform_error, UNSUPPORTED_PLATFORM_ERROR, "UnsupportedPlatformError";
    cleanup_error, CLEANUP_ERROR, "CleanupError";
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

/// Maps a core error onto its documented Ruby exception class by its kind:
/// the one place that does. The message is [`ruby_message`].
pub fn from_core(ruby: &Ruby, error: CoreError) -> Error {
    let message = ruby_message(&error);
    match error.kind() {
        Kind::Tool => tool_error(ruby, message),
        Kind::Policy => policy_error(ruby, message),
        Kind::Capability => capability_error(ruby, message),
        Kind::Dependency => dependency_error(ruby, message),
        Kind::UnsupportedPlatform => unsupported_platform_error(ruby, message),
        Kind::Cleanup => cleanup_error(ruby, message),
        Kind::Argument => argument_error(ruby, message),
        Kind::Key => Error::new(ruby.exception_key_error(), message),
        Kind::Io => Error::new(ruby.exception_io_error(), message),
    }
}

/// The message a core error is raised with: the core's, with the names it
/// carries shown as Ruby symbols (`:name`), and a misshapen declaration
/// worded in the Ruby types the caller gave.
pub fn ruby_message(error: &CoreError) -> String {
    match error {
        CoreError::Declaration(misshapen) => ruby_wording(misshapen),
        // Ruby raises an exhausted errno as `Errno::EMFILE` and so on.
        CoreError::File(error) => error.worded(&|name| format!("Errno::{name}")),
        other => other.worded(&symbol),
    }
}

/// A name as Ruby shows a Symbol in a message (`:name`).
pub fn symbol(name: &str) -> String {
    format!(":{name}")
}

/// A misshapen declaration in the words of the Ruby types and keywords the
/// caller gave (the core names the shape, not the type); the names it lists
/// are shown as symbols.
fn ruby_wording(error: &Misshapen) -> String {
    match error {
        Misshapen::FeatureNotAName { shown } => {
            format!("capability feature must be a Symbol or String, got {shown}")
        }
        Misshapen::IsolationNotAName => {
            "capability isolation must be a Symbol such as :none or :namespace".to_owned()
        }
        Misshapen::GrantNameNotAName { category, shown } => {
            format!("sandbox {category} names must be Symbols or Strings, got {shown}")
        }
        Misshapen::AllowEntryWithoutDestination => {
            "network allow entry Hash needs destination: (\"host:port\")".to_owned()
        }
        Misshapen::SecretsNotATable => {
            "network secrets must be a Hash of name => {value:, destinations:}".to_owned()
        }
        Misshapen::ResolveNotATable => {
            "network resolve: must be a Hash of host name => IP address".to_owned()
        }
        Misshapen::SecretNotATable { name } => {
            format!("network secret {name:?} must be a Hash {{value:, destinations:}}")
        }
        Misshapen::SecretWithoutValue { name } => {
            format!("network secret {name:?} needs value: a String (the value is not shown)")
        }
        Misshapen::OptionsWithoutAllowlist(mode) => format!(
            "network mode :{} does not take allow, secrets, upstream_ca, resolve, gateway, \
             authorizer or headers; use mode: :allowlist",
            mode.name()
        ),
        Misshapen::HttpWithoutAllowlist => {
            "network inspection :http requires mode: :allowlist".to_owned()
        }
        Misshapen::NotATable { what } => format!("sandbox {what} must be a Hash"),
        Misshapen::NotAPositiveSize { what, shown } => {
            format!("{what} must be a positive Integer (bytes), got {shown}")
        }
        Misshapen::ProtectNotAList => "sandbox protect must be an Array of relative paths \
             (protect: [] protects nothing)"
            .to_owned(),
        Misshapen::UnknownKeywords { unknown, known } => unknown_keywords(unknown, known),
        other => other.worded(&symbol),
    }
}

/// `result.map_err(into_ruby)` in one call: `core_result(ruby, broker.read(..))?`,
/// for the cross-mechanism error or any mechanism's own.
pub fn core_result<T, E: Into<CoreError>>(ruby: &Ruby, result: Result<T, E>) -> Result<T, Error> {
    result.map_err(|error| from_core(ruby, error.into()))
}

/// "unknown keyword: :a; valid keywords: :b, :c": the message for the
/// keys `unknown` (each as it reads) when only `known` are taken.
pub fn unknown_keywords(unknown: &[String], known: &[&str]) -> String {
    let noun = if unknown.len() == 1 {
        "keyword"
    } else {
        "keywords"
    };
    format!(
        "unknown {noun}: {}; valid keywords: {}",
        unknown.join(", "),
        valid_list(known, &[])
    )
}

/// The accepted keywords as `:a, :b, :c`, sorted, for an unknown keyword's message (docs/spec.md: an
/// unknown key lists the valid ones).
pub fn valid_list(required: &[&str], optional: &[&str]) -> String {
    let mut names: Vec<&str> = required.iter().chain(optional).copied().collect();
    names.sort_unstable();
    names.dedup();
    names
        .iter()
        .map(|name| format!(":{name}"))
        .collect::<Vec<_>>()
        .join(", ")
}
