//! The network modes (docs/spec.md §7) and which a backend cannot enforce:
//! a leaf the errors that carry a mode can name.

use crate::error::kind::Kind;
use crate::error::show::{plain, ShowName};

/// A network mode a backend cannot enforce (docs/spec.md §15.1, §16.1):
/// carried as the mode, which the binding shows as the caller wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unenforceable {
    /// Unrestricted inherits the host's network; any other mode is refused.
    #[error("{}", self.worded(&plain))]
    Unrestricted(NetworkMode),
    /// The kernel lacks what the Landlock supervisor needs to make the
    /// child's connections (`missing` names it).
    #[error("{}", self.worded(&plain))]
    LandlockAllowlist { missing: String },
    /// An allowlist launch on a backend without a gateway.
    #[error("{}", self.worded(&plain))]
    AllowlistWithoutGateway,
}

impl Unenforceable {
    /// The message with the mode shown by `name`.
    pub fn worded(&self, name: ShowName) -> String {
        match self {
            Unenforceable::Unrestricted(mode) => format!(
                "the unrestricted sandbox cannot enforce network mode {}",
                name(mode.name())
            ),
            Unenforceable::LandlockAllowlist { missing } => format!(
                "the landlock sandbox cannot enforce network mode {} here: {missing}",
                name("allowlist")
            ),
            Unenforceable::AllowlistWithoutGateway => format!(
                "sandbox backend cannot enforce network mode {}",
                name("allowlist")
            ),
        }
    }

    /// Always [`Kind::Capability`](Kind::Capability).
    pub fn kind(&self) -> Kind {
        Kind::Capability
    }
}

/// `:inherit`, `:none` or `:allowlist`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NetworkMode {
    Inherit,
    None,
    Allowlist,
}

impl NetworkMode {
    /// Every mode, in the order messages list them.
    pub const ALL: [NetworkMode; 3] = [
        NetworkMode::Inherit,
        NetworkMode::None,
        NetworkMode::Allowlist,
    ];

    /// The mode named `name` (as the binding reads a Ruby symbol).
    pub fn parse(name: &str) -> Option<NetworkMode> {
        NetworkMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
    }

    /// The mode's name (the binding shows it as a Ruby symbol).
    pub fn name(self) -> &'static str {
        match self {
            NetworkMode::Inherit => "inherit",
            NetworkMode::None => "none",
            NetworkMode::Allowlist => "allowlist",
        }
    }
}
