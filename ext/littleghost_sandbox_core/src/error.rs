//! One error type for the whole core. Each variant maps one-to-one onto a
//! documented Ruby exception class (see the binding's `ruby_api/errors.rs`).

use std::fmt;

use crate::denial::{Reason, Refusal};

/// A failure the caller can act on; the message is what Ruby shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `LittleGhost::ToolError`: expected per-operation failure, safe to show the model.
    Tool(String),
    /// `LittleGhost::ToolError` too, for a refusal of policy: the message
    /// plus the rule that refused, so the binding records a denial
    /// without parsing the message.
    Refused(Refusal),
    /// `LittleGhost::PolicyError`: invalid policy, limits or declaration.
    Policy(String),
    /// `LittleGhost::CapabilityError`: a control cannot be enforced, or a scope tries to widen.
    Capability(String),
    /// `LittleGhost::DependencyError`: a provider or dependency is missing or unusable.
    Dependency(String),
    /// `LittleGhost::UnsupportedPlatformError`: the backend cannot run on this OS.
    UnsupportedPlatform(String),
    /// `LittleGhost::CleanupError`: a managed resource failed to close.
    Cleanup(String),
    /// Ruby `ArgumentError`: direct API misuse.
    Argument(String),
    /// Ruby `KeyError`: an unknown workspace path name.
    Key(String),
    /// Ruby `IOError`: a closed or broken process session stream.
    Io(String),
}

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The refusal this error carries, if it is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Error::Refused(refusal) => Some(refusal),
            _ => None,
        }
    }

    /// The message Ruby will show.
    pub fn message(&self) -> &str {
        match self {
            Error::Tool(m)
            | Error::Policy(m)
            | Error::Capability(m)
            | Error::Dependency(m)
            | Error::UnsupportedPlatform(m)
            | Error::Cleanup(m)
            | Error::Argument(m)
            | Error::Key(m)
            | Error::Io(m) => m,
            Error::Refused(refusal) => &refusal.message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// The Landlock, seccomp and helper-argument code lives in its own crate
/// (the helper builds it alone); its two kinds are the variants of the same name.
impl From<littleghost_sandbox_restrict::Error> for Error {
    fn from(error: littleghost_sandbox_restrict::Error) -> Error {
        match error {
            littleghost_sandbox_restrict::Error::Argument(m) => Error::Argument(m),
            littleghost_sandbox_restrict::Error::Capability(m) => Error::Capability(m),
        }
    }
}

/// Shorthand constructors keep call sites short: `tool("Path does not exist")`.
pub fn tool(message: impl Into<String>) -> Error {
    Error::Tool(message.into())
}
/// A `ToolError` that refuses by `reason` (see [`Error::Refused`]).
pub fn refused(reason: Reason, message: impl Into<String>) -> Error {
    Error::Refused(Refusal {
        reason,
        message: message.into(),
    })
}
/// See [`tool`].
pub fn policy(message: impl Into<String>) -> Error {
    Error::Policy(message.into())
}
/// See [`tool`].
pub fn capability(message: impl Into<String>) -> Error {
    Error::Capability(message.into())
}
/// See [`tool`].
pub fn argument(message: impl Into<String>) -> Error {
    Error::Argument(message.into())
}
