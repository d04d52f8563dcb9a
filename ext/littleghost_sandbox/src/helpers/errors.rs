//! The one place where core errors become Ruby exceptions: each documented
//! kind onto its class of the hierarchy (docs/spec.md §1) that
//! `ruby_api/errors.rs` defines, and the Ruby wording of a typed core error.

use littleghost_sandbox_core::error::Kind;
use littleghost_sandbox_core::fs::anchor::{shown_real, Refusal as AnchorRefusal};
use littleghost_sandbox_core::policy::{Error as Misshapen, Unenforceable};
use littleghost_sandbox_core::sandbox::Error as SandboxRefusal;
use littleghost_sandbox_core::scope::NetworkNarrowing;
use littleghost_sandbox_core::workspace::Error as WorkspaceRefusal;
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

/// The message a core error is raised with: the core's, with the names and
/// shapes it carries as values worded as Ruby shows them (`:name`).
pub fn ruby_message(error: &CoreError) -> String {
    match error {
        CoreError::Declaration(misshapen) => ruby_wording(misshapen),
        CoreError::Sandbox(refused) => sandbox_wording(refused),
        CoreError::Workspace(refused) => workspace_wording(refused),
        CoreError::Anchor(refused) => anchor_wording(refused),
        CoreError::Unenforceable(unenforceable) => unenforceable_wording(unenforceable),
        CoreError::NetworkNarrowing(NetworkNarrowing::Unsupported(mode)) => {
            format!(
                "sandbox backend cannot enforce scoped network mode :{}",
                mode.name()
            )
        }
        other => other.message(),
    }
}

/// A workspace refusal with the path names it carries shown as symbols.
fn workspace_wording(error: &WorkspaceRefusal) -> String {
    use WorkspaceRefusal as W;
    match error {
        W::ReservedRoot => "workspace path :root is reserved for the workspace root; give the \
             path another name"
            .to_owned(),
        W::RootVariable { name, variable } => format!(
            "workspace path :{name} maps to {variable}, which is reserved for the workspace \
             root; give it another name"
        ),
        W::SameVariable {
            first,
            second,
            variable,
        } => format!(
            "workspace paths :{first} and :{second} both map to {variable}; rename one of them"
        ),
        W::RelativeOutside(name) => {
            format!("relative workspace path :{name} must remain beneath the workspace root")
        }
        W::EmptyPath(name) => format!("workspace path :{name} must not be empty"),
        W::UnknownName(name) => format!("key not found: :{name} (no workspace path of that name)"),
        W::UnknownGrant {
            category,
            name,
            known,
        } => {
            let known: Vec<String> = known.iter().map(|name| format!(":{name}")).collect();
            format!(
                "sandbox policy {category} grants :{name}, which is not a workspace path \
                 (workspace paths: {})",
                known.join(", ")
            )
        }
        W::Inaccessible(name) => {
            format!("workspace path :{name} is not an accessible directory")
        }
        other => other.to_string(),
    }
}

/// A network mode a backend cannot enforce, shown as a symbol.
fn unenforceable_wording(error: &Unenforceable) -> String {
    match error {
        Unenforceable::Unrestricted(mode) => format!(
            "the unrestricted sandbox cannot enforce network mode :{}",
            mode.name()
        ),
        Unenforceable::LandlockAllowlist { missing } => {
            format!("the landlock sandbox cannot enforce network mode :allowlist here: {missing}")
        }
        Unenforceable::AllowlistWithoutGateway => {
            "sandbox backend cannot enforce network mode :allowlist".to_owned()
        }
    }
}

/// A workspace directory that cannot be pinned, its name shown as a symbol.
fn anchor_wording(error: &AnchorRefusal) -> String {
    use AnchorRefusal as A;
    match error {
        A::AbsoluteThroughSymlink {
            name,
            path,
            link,
            target,
            real,
        } => format!(
            "workspace path :{name} ({}) passes through the symlink {}{target}{}",
            path.display(),
            link.display(),
            shown_real(real)
        ),
        A::AbsoluteMissing(name) => format!(
            "absolute workspace path :{name} must already exist (as a directory; it is never \
             created)"
        ),
        A::AbsoluteUnopenable { name, errno } => {
            format!("workspace path :{name} cannot be opened: {errno}")
        }
        A::ThroughSymlink {
            name,
            relative,
            at,
            target,
        } => format!(
            "workspace path :{name} ({}) passes through the symlink {}{target}: a workspace path \
             is never followed through a symlink; replace the link with a directory",
            relative.display(),
            at.display()
        ),
        A::Missing { name, relative, at } => format!(
            "workspace path :{name} ({}) does not exist: {} is missing",
            relative.display(),
            at.display()
        ),
        A::NotADirectory { name, relative, at } => format!(
            "workspace path :{name} ({}) is not a directory: {} is not one",
            relative.display(),
            at.display()
        ),
        A::Unopenable {
            name,
            relative,
            errno,
        } => format!(
            "workspace path :{name} ({}) cannot be opened: {errno}",
            relative.display()
        ),
        other => other.to_string(),
    }
}

/// A misshapen declaration in the words of the Ruby types the caller gave
/// (the core names the shape, not the type).
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
        Misshapen::NetworkMode { shown } => {
            format!("network mode must be :inherit, :none or :allowlist, got {shown}")
        }
        Misshapen::Inspection { shown } => {
            format!("network inspection must be :connect or :http, got {shown}")
        }
        Misshapen::OptionsWithoutAllowlist(mode) => format!(
            "network mode :{} does not take allow, secrets, upstream_ca, resolve, gateway, \
             authorizer or headers; use mode: :allowlist",
            mode.name()
        ),
        Misshapen::HttpWithoutAllowlist => {
            "network inspection :http requires mode: :allowlist".to_owned()
        }
        Misshapen::HttpWithoutAuthorizer => {
            "network inspection :http requires an authorizer".to_owned()
        }
        Misshapen::EmptyAllowlist => {
            "network mode :allowlist requires a non-empty allow list (\"host:port\" entries)"
                .to_owned()
        }
        Misshapen::GatewayProvider { .. } => error.to_string(),
        Misshapen::MountAccess { shown } => {
            format!("mount access must be :read_only or :read_write, got {shown}")
        }
        Misshapen::RootFilesystem { shown } => format!(
            "sandbox root_filesystem must be :isolated, :read_only or :read_write, got {shown}"
        ),
        Misshapen::GrantAccess {
            category,
            name,
            shown,
        } => format!(
            "sandbox {category} access for :{name} must be :read_only or :read_write, got {shown}"
        ),
        Misshapen::RelativeDirectory(name) => format!("workspace path :{name} must be absolute"),
        Misshapen::NotATable { what } => format!("sandbox {what} must be a Hash"),
        Misshapen::ProtectNotAList => "sandbox protect must be an Array of relative paths \
             (protect: [] protects nothing)"
            .to_owned(),
        Misshapen::UnknownKeywords { unknown, known } => {
            crate::helpers::args::unknown_keywords(unknown, known)
        }
        Misshapen::UnsupportedNetworkModes(names) => {
            let shown: Vec<String> = names.iter().map(|name| format!(":{name}")).collect();
            format!(
                "unsupported network modes: {} (use :inherit, :none or :allowlist)",
                shown.join(", ")
            )
        }
    }
}

/// A refusal of the sandbox rules with the names it gives shown as Ruby
/// symbols (`:bogus`, `:bwrap`).
fn sandbox_wording(error: &SandboxRefusal) -> String {
    match error {
        SandboxRefusal::UnknownProfileOptions { names } => {
            let shown: Vec<String> = names.iter().map(|name| format!(":{name}")).collect();
            format!(
                "unknown sandbox scope profile options: {}",
                shown.join(", ")
            )
        }
        SandboxRefusal::UnknownProvider {
            label,
            name,
            registered,
        } => format!(
            "{label} provider :{name} is not available; it is not a registered {label} provider \
             (registered: {})",
            littleghost_sandbox_core::sandbox::registered_list(registered, ":")
        ),
        other => other.to_string(),
    }
}

/// `result.map_err(into_ruby)` in one call: `core_result(ruby, broker.read(..))?`,
/// for the cross-mechanism error or any mechanism's own.
pub fn core_result<T, E: Into<CoreError>>(ruby: &Ruby, result: Result<T, E>) -> Result<T, Error> {
    result.map_err(|error| from_core(ruby, error.into()))
}
