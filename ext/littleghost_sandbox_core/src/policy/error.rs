//! A declaration whose values have the wrong shape: a name that is not a
//! name, an entry that is not a table. The core words them in its own terms;
//! the binding, which knows what shape a Ruby caller gave, may word them in
//! Ruby's (its `helpers/errors.rs`).

use crate::error::kind::Kind;

/// A misshapen value in a policy declaration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A capability feature (or network mode) given as something that is no name;
    /// `shown` is the value as the caller wrote it.
    #[error("capability feature must be a name, got {shown}")]
    FeatureNotAName { shown: String },
    /// Capability isolation given as something that is no name.
    #[error("capability isolation must be a name such as none or namespace")]
    IsolationNotAName,
    /// A grant of `files:` or `runtime_paths:` (`category`) whose name is no name.
    #[error("sandbox {category} names must be names, got {shown}")]
    GrantNameNotAName { category: String, shown: String },
    /// A network allow entry given as a table without a destination.
    #[error("network allow entry needs destination: (\"host:port\")")]
    AllowEntryWithoutDestination,
    /// A network secret declared by `name` with no table of value and destinations.
    #[error("network secret {name:?} must be a table of value and destinations")]
    SecretNotATable { name: String },
    /// A network secret declared by `name` without its value.
    #[error("network secret {name:?} needs value: (the value is not shown)")]
    SecretWithoutValue { name: String },
}

impl Error {
    /// Misuse of a constructor is an argument error; a bad declaration a policy error.
    pub fn kind(&self) -> Kind {
        match self {
            Error::FeatureNotAName { .. }
            | Error::IsolationNotAName
            | Error::AllowEntryWithoutDestination => Kind::Argument,
            Error::GrantNameNotAName { .. }
            | Error::SecretNotATable { .. }
            | Error::SecretWithoutValue { .. } => Kind::Policy,
        }
    }
}
