//! The one error of this crate. The core converts it into its own `Error`
//! variant of the same name; the helper prints its message.

use std::fmt;

/// Why a plan could not be read or enforced; the message is what a user sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Malformed input (the helper's arguments): Ruby `ArgumentError` in the core.
    Argument(String),
    /// A control cannot be enforced in full: `LittleGhost::CapabilityError` in the core.
    Capability(String),
}

/// Result alias used throughout this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The message a user sees.
    pub fn message(&self) -> &str {
        match self {
            Error::Argument(m) | Error::Capability(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// Shorthand for [`Error::Argument`].
pub fn argument(message: impl Into<String>) -> Error {
    Error::Argument(message.into())
}

/// Shorthand for [`Error::Capability`].
pub fn capability(message: impl Into<String>) -> Error {
    Error::Capability(message.into())
}
