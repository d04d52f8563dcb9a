//! Network narrowing (SPEC §13, SC.10/SC.10b): the network a scope may have
//! given its parent's.

use super::NetworkMode;
use crate::error::{capability, Result};

/// What a scope asks for: `nil`/`true` mean "the parent's network"; `false`
/// arrives here as `Mode(None)`. `same_as_parent` is the NetworkPolicy `==`
/// comparison with the parent, which only matters for allowlists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkRequest {
    Parent,
    Mode {
        mode: NetworkMode,
        same_as_parent: bool,
    },
}

/// Which network object the scope keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkChoice {
    /// The parent's network policy (possibly nil).
    Parent,
    /// The requested, coerced network policy.
    Requested,
}

/// SC.10/SC.10b: the network a scope may have. Returns the choice and the
/// resulting mode (`None` when the result is the parent's nil network).
/// `supported` are the parent capabilities' network modes.
pub fn narrow_network(
    parent: Option<NetworkMode>,
    request: NetworkRequest,
    supported: &[NetworkMode],
) -> Result<(NetworkChoice, Option<NetworkMode>)> {
    use NetworkMode as M;
    let widen = || capability("sandbox scope cannot widen network access");
    let (choice, mode) = match request {
        NetworkRequest::Parent => (NetworkChoice::Parent, parent),
        NetworkRequest::Mode {
            mode,
            same_as_parent,
        } => match (parent, mode) {
            (Option::None, _) => return Err(widen()),
            (Some(_), M::None) => (NetworkChoice::Requested, Some(M::None)),
            (Some(M::Inherit), M::Inherit) => (NetworkChoice::Requested, Some(M::Inherit)),
            (Some(M::Allowlist), M::Allowlist) if same_as_parent => {
                (NetworkChoice::Parent, Some(M::Allowlist))
            }
            _ => return Err(widen()),
        },
    };
    if let Some(mode) = mode {
        if !supported.contains(&mode) {
            return Err(capability(format!(
                "sandbox backend cannot enforce scoped network mode :{}",
                mode.name()
            )));
        }
    }
    Ok((choice, mode))
}
