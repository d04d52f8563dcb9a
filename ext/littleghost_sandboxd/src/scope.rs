//! A narrower scope per call: the `x-littleghost-scope` header (REST) or
//! metadata (gRPC) holds a JSON object, `{"files": {"root": "read_only"},
//! "network": "none"}`, which the core narrows from the daemon's policy
//! (docs/spec.md §13: a scope never widens its parent). Files go through
//! the scope's own broker; programs get the scope's grants and network.

use littleghost_sandbox_core::error::kind::Kind;
use littleghost_sandbox_core::error::Error;
use littleghost_sandbox_core::fs::Broker;
use littleghost_sandbox_core::grants::Access;
use littleghost_sandbox_core::launch::prepare::{ScopeCall, WorkspaceView};
use littleghost_sandbox_core::policy::{Capabilities, NetworkMode};
use littleghost_sandbox_core::scope::{self, NetworkRequest, Parent, Request, ScopeRequest};
use serde_json::Value;

use crate::confinement::Confinement;

/// The header (REST) and metadata key (gRPC) of a call's scope.
pub const HEADER: &str = "x-littleghost-scope";

/// The features a daemon scope starts from: everything the daemon serves.
const FEATURES: [&str; 6] = [
    "filesystem_read",
    "filesystem_list",
    "filesystem_write",
    "filesystem_replace",
    "process_execute",
    "process_spawn",
];

/// A call's scope, narrowed from the policy.
pub struct Scope {
    pub broker: Broker,
    pub launch: ScopeCall,
}

/// A scope that asks for more than the policy gives (a capability, access
/// or network mode it does not have): the caller is refused (403), where a
/// malformed or unknown scope is a bad argument (400). Decided by the
/// error's kind, never by its words.
pub fn widens(error: &Error) -> bool {
    matches!(error.kind(), Kind::Capability) || error.refusal().is_some()
}

/// Why a scope header was refused.
#[derive(Debug)]
pub enum Refused {
    /// Not a JSON object of the known keys and values.
    Malformed(String),
    /// The core refused it: asking for more than the policy gives, or a rule.
    Rule(Error),
}

/// The scope `text` (the header's value) narrowed from the daemon's policy.
pub fn narrow(confinement: &Confinement, text: &[u8]) -> Result<Scope, Refused> {
    let value: Value = serde_json::from_slice(text)
        .map_err(|error| Refused::Malformed(format!("{HEADER} is not valid JSON: {error}")))?;
    let Value::Object(object) = value else {
        return Err(Refused::Malformed(format!(
            "{HEADER} must be a JSON object"
        )));
    };
    if let Some(key) = object
        .keys()
        .find(|key| !["files", "network"].contains(&key.as_str()))
    {
        return Err(Refused::Malformed(format!(
            "unknown {HEADER} key: {key} (known: files, network)"
        )));
    }
    let workspace = &confinement.workspace;
    let files = match object.get("files") {
        None => None,
        Some(Value::Object(files)) => Some(
            files
                .iter()
                .map(|(name, access)| {
                    let access = access.as_str().and_then(Access::parse).ok_or_else(|| {
                        Refused::Malformed(format!(
                            "{HEADER} files access for {name} must be \"read_only\" or \"read_write\""
                        ))
                    })?;
                    let target = workspace.directory(name).map_err(Refused::Rule)?;
                    Ok(Request::new(target, Some(access)))
                })
                .collect::<Result<Vec<_>, Refused>>()?,
        ),
        Some(_) => {
            return Err(Refused::Malformed(format!(
                "{HEADER} files must be an object of name to access"
            )))
        }
    };
    let network = match object.get("network") {
        None => NetworkRequest::Parent,
        Some(Value::String(mode)) => match NetworkMode::parse(mode) {
            Some(mode @ (NetworkMode::None | NetworkMode::Inherit)) => NetworkRequest::Mode {
                mode,
                same_as_parent: false,
            },
            _ => {
                return Err(Refused::Malformed(format!(
                    "{HEADER} network must be \"none\" or \"inherit\""
                )))
            }
        },
        Some(_) => {
            return Err(Refused::Malformed(format!(
                "{HEADER} network must be \"none\" or \"inherit\""
            )))
        }
    };
    let policy = &confinement.policy;
    let grants = policy
        .process_grants(|name| workspace.directory(name), |e| e)
        .map_err(Refused::Rule)?;
    let parent_network = Some(
        policy
            .network
            .as_ref()
            .map_or(NetworkMode::None, |n| n.mode),
    );
    let modes = [NetworkMode::None, NetworkMode::Inherit];
    let capabilities = Capabilities::of(&FEATURES, &modes, confinement.backend_name());
    let parent = Parent {
        grants: &grants,
        deny_markers: &[],
        capabilities: &capabilities,
        network: parent_network,
    };
    let request = ScopeRequest {
        files,
        runtime_paths: None,
        network,
        ..ScopeRequest::default()
    };
    let limits = confinement.declaration.limits.fs();
    let anchors = workspace.anchors();
    let scoped = scope::narrow_anchored(parent, &request, limits, None, anchors.as_deref())
        .map_err(Refused::Rule)?;
    let network = match request.network {
        NetworkRequest::Parent => None,
        _ => Some(scoped_mode(&request)),
    };
    Ok(Scope {
        broker: scoped.broker,
        launch: ScopeCall {
            grants: scoped.grants,
            network,
            network_rules: None,
            spawns: true,
        },
    })
}

fn scoped_mode(request: &ScopeRequest) -> NetworkMode {
    match request.network {
        NetworkRequest::Mode { mode, .. } => mode,
        _ => NetworkMode::None,
    }
}
