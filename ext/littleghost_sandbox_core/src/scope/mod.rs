//! Scope narrowing (SPEC §13): the one place that decides what a scope gets
//! from its parent (a sandbox or an enclosing scope). [`narrow`] takes the
//! parent's grants, capabilities and network and the parsed keywords of
//! `Scope.new`, and returns the scope's grants, deny markers, capabilities,
//! network choice, pinned identities and filesystem broker. Every rule can
//! only keep or remove authority: a scope can never widen its parent.
//!
//! The rules per job: [`grants`] (SC.3–SC.8), [`network`] (SC.10/SC.10b) and
//! what a `network:` keyword asks of it ([`network_request`]);
//! capabilities (SC.9) and identities (SC.16) are small enough to live here;
//! what a built scope answers is [`queries`] (SC.11–SC.13). The request is
//! read out of the caller's values by [`keywords`], which refuses a value
//! of the wrong shape.

mod grants;
pub mod keywords;
mod network;
pub mod network_request;
mod queries;
pub mod refusal;
#[cfg(test)]
mod tests;

/// A network mode (SPEC §7): the policy's own type.
pub use crate::policy::NetworkMode;
pub use grants::{narrow_grants, Narrowed, Request};
pub use network::{
    narrow_allowlist, narrow_network, widen, NetworkChoice, NetworkRequest, SecretsRequest,
};
pub use network_request::{scope_network, secrets_request, MisshapenSecrets, NetworkAsk, Plain};
pub use queries::{file_arguments, file_feature, file_operation};
pub use refusal::NetworkNarrowing;

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::fs::anchor::Anchors;
use crate::fs::{Broker, FsLimits};
use crate::grants::{Grant, Identity, Narrowing};
use crate::policy::{Capabilities, Policy};

/// What the parent has: a sandbox's process grants (no markers), or an
/// enclosing scope's grants and deny markers; its capabilities; and the mode
/// of its network (`None` when it keeps the backend's default, Ruby `nil`).
#[derive(Debug, Clone, Copy)]
pub struct Parent<'a> {
    pub grants: &'a [Grant],
    pub deny_markers: &'a [Grant],
    pub capabilities: &'a Capabilities,
    pub network: Option<NetworkMode>,
}

/// What a parent hands a scope, owned; [`Inherited::parent`] lends it to [`narrow`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inherited {
    pub grants: Vec<Grant>,
    pub deny_markers: Vec<Grant>,
    pub capabilities: Capabilities,
}

impl Inherited {
    /// SC.2: an enclosing scope hands on what it was built with.
    pub fn of_scope(scoped: &Scoped) -> Inherited {
        Inherited {
            grants: scoped.grants.clone(),
            deny_markers: scoped.deny_markers.clone(),
            capabilities: scoped.capabilities.clone(),
        }
    }

    /// SC.2: a sandbox hands on the process grants of the policy it
    /// enforces (no deny markers; `directory` finds a grant's directory by
    /// name) and the capabilities it reports.
    pub fn of_sandbox<E>(
        policy: &Policy,
        capabilities: &Capabilities,
        directory: impl FnMut(&str) -> std::result::Result<PathBuf, E>,
        core_error: impl Fn(Error) -> E,
    ) -> std::result::Result<Inherited, E> {
        Ok(Inherited {
            grants: policy.process_grants(directory, core_error)?,
            deny_markers: Vec::new(),
            capabilities: capabilities.clone(),
        })
    }

    /// The parent [`narrow`] reads, whose network has `network`'s mode.
    pub fn parent(&self, network: Option<NetworkMode>) -> Parent<'_> {
        Parent {
            grants: &self.grants,
            deny_markers: &self.deny_markers,
            capabilities: &self.capabilities,
            network,
        }
    }
}

/// SC.9: what the scope asks of the parent's capabilities.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CapabilityRequest {
    /// `nil`: the parent's, unchanged.
    #[default]
    Parent,
    /// A Capabilities: the features and network modes both have (by name).
    Intersect {
        features: Vec<String>,
        network_modes: Vec<String>,
    },
    /// An Array of canonical feature names: the parent's features it names.
    Features(Vec<String>),
}

impl CapabilityRequest {
    /// A Capabilities given as the request: keep what both have.
    pub fn intersecting(theirs: &Capabilities) -> CapabilityRequest {
        CapabilityRequest::Intersect {
            features: theirs.features.clone(),
            network_modes: theirs
                .network_modes
                .iter()
                .map(|m| m.name().into())
                .collect(),
        }
    }
}

/// The keywords of `Scope.new`, parsed: `None` keeps a grant category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRequest {
    pub files: Option<Vec<Request>>,
    pub runtime_paths: Option<Vec<Request>>,
    pub capabilities: CapabilityRequest,
    pub network: NetworkRequest,
}

impl Default for ScopeRequest {
    /// `Scope.new(sandbox:)`: everything the parent has.
    fn default() -> ScopeRequest {
        ScopeRequest {
            files: None,
            runtime_paths: None,
            capabilities: CapabilityRequest::Parent,
            network: NetworkRequest::Parent,
        }
    }
}

/// A built scope: what it may touch and the broker that enforces it.
#[derive(Debug)]
pub struct Scoped {
    /// Longest target first (the order `process_grants` reports).
    pub grants: Vec<Grant>,
    pub deny_markers: Vec<Grant>,
    pub capabilities: Capabilities,
    /// Whether the scope keeps the parent's network object or the requested one.
    pub network: NetworkChoice,
    /// The (realpath, dev, ino) of each grant root at build time (SC.16).
    pub identities: Vec<Identity>,
    pub broker: Broker,
}

/// Builds a scope of `parent` (SC.2–SC.10, SC.16, §14). `pins` are the
/// identities the workspace recorded at `open`: the roots the
/// broker pins must still be those directories.
pub fn narrow(
    parent: Parent<'_>,
    request: &ScopeRequest,
    limits: FsLimits,
    pins: Option<&[(String, Identity)]>,
) -> Result<Scoped> {
    narrow_anchored(parent, request, limits, pins, None)
}

/// [`narrow`] whose broker starts from the open workspace's handles.
pub fn narrow_anchored(
    parent: Parent<'_>,
    request: &ScopeRequest,
    limits: FsLimits,
    pins: Option<&[(String, Identity)]>,
    anchors: Option<&Anchors>,
) -> Result<Scoped> {
    let narrowed = narrow_grants(
        parent.grants,
        parent.deny_markers,
        request.files.as_deref(),
        request.runtime_paths.as_deref(),
    )?;
    let mut capabilities = narrow_capabilities(parent.capabilities, &request.capabilities);
    let supported = &parent.capabilities.network_modes;
    let (network, mode) = narrow_network(parent.network, request.network, supported)?;
    if let Some(mode) = mode {
        capabilities.network_modes = vec![mode]; // SC.10b
    }
    let identities = capture_identities(&narrowed.grants)?;
    let broker = Broker::anchored(
        narrowed.grants.clone(),
        narrowed.deny_markers.clone(),
        limits,
        anchors,
    )?;
    if let Some(recorded) = pins {
        broker.check_pins(recorded)?;
    }
    Ok(Scoped {
        grants: narrowed.grants,
        deny_markers: narrowed.deny_markers,
        capabilities,
        network,
        identities,
        broker,
    })
}

/// SC.9: capabilities only ever lose features and network modes.
pub fn narrow_capabilities(parent: &Capabilities, request: &CapabilityRequest) -> Capabilities {
    match request {
        CapabilityRequest::Parent => parent.clone(),
        CapabilityRequest::Intersect {
            features,
            network_modes,
        } => parent.intersect(features, network_modes),
        CapabilityRequest::Features(wanted) => Capabilities {
            features: parent
                .features
                .iter()
                .filter(|f| wanted.contains(f))
                .cloned()
                .collect(),
            ..parent.clone()
        },
    }
}

/// SC.16: the (realpath, dev, ino) of each grant root when the scope was built.
pub fn capture_identities(grants: &[Grant]) -> Result<Vec<Identity>> {
    grants
        .iter()
        .map(|g| Identity::capture(&g.source).ok_or(Narrowing::SourceUnavailable.into()))
        .collect()
}

/// SC.16: every grant root still is the directory captured at build time.
pub fn validate_identities(grants: &[Grant], identities: &[Identity]) -> Result<()> {
    let unchanged = grants.len() == identities.len()
        && grants
            .iter()
            .zip(identities)
            .all(|(g, id)| Identity::capture(&g.source).as_ref() == Some(id));
    if unchanged {
        Ok(())
    } else {
        Err(Narrowing::SourceChanged.into())
    }
}
