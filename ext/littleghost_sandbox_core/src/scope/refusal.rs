//! Why a scope cannot have the network it asked for: a leaf the core's
//! cross-mechanism error can carry.

use crate::error::kind::Kind;
use crate::error::show::{plain, ShowName};
use crate::policy::network_mode::NetworkMode;

/// Why a scope cannot have the network it asked for (SC.10, SC.10b).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkNarrowing {
    /// More network than the parent has.
    #[error("sandbox scope cannot widen network access")]
    Widens,
    /// A mode the backend cannot enforce for a scope (the binding names it
    /// as the caller wrote it).
    #[error("{}", self.worded(&plain))]
    Unsupported(NetworkMode),
    /// A named secret none of whose destinations the scope may reach.
    #[error("network secret {0:?} has no destination in the scope's allow list (it could never be sent)")]
    SecretUnreachable(String),
}

impl NetworkNarrowing {
    /// The message with the mode shown by `name`.
    pub fn worded(&self, name: ShowName) -> String {
        match self {
            NetworkNarrowing::Unsupported(mode) => format!(
                "sandbox backend cannot enforce scoped network mode {}",
                name(mode.name())
            ),
            other => other.to_string(),
        }
    }

    /// A secret that could never be sent is a declaration error; the rest are
    /// refusals to widen.
    pub fn kind(&self) -> Kind {
        match self {
            NetworkNarrowing::SecretUnreachable(_) => Kind::Policy,
            _ => Kind::Capability,
        }
    }
}
