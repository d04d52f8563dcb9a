//! The policy model (SPEC §4, §5, §6, §7, §8, §9): what a sandbox is asked to
//! enforce, validated here once with the messages Ruby shows. The binding
//! parses Ruby values into these inputs and maps [`crate::Error`] onto the
//! documented exceptions; it decides nothing.

mod capabilities;
mod compare;
pub mod declaration;
pub mod declared;
mod environment;
pub mod error;
mod given;
mod limits;
mod mount;
mod network;
pub mod network_declaration;
pub mod network_mode;
pub mod network_requests;
pub mod network_rules;
pub mod process_limits;
mod rules;

pub use capabilities::{canonical_feature, normalize_feature, Capabilities, DEFAULT_FEATURES};
pub use compare::GrantIdentity;
pub use declaration::Declaration;
pub use environment::{EnvironmentDeclaration, EnvironmentPolicy};
pub use error::Error;
pub use given::Given;
pub use limits::{LimitValue, Limits, LIMIT_NAMES};
pub use mount::{normalize_target, parse_access};
pub(crate) use network::allow_entries;
pub use network::{Inspection, NetworkPolicy, NetworkRequest};
pub use network_mode::{NetworkMode, Unenforceable};
pub use network_rules::{
    AllowEntry, AllowRequest, InspectRequest, NetworkRules, RuleRequest, SecretEntry, SecretRequest,
};
pub use rules::{
    GrantTable, Policy, PolicyDeclaration, ProtectList, RootFilesystem, ACCESS_MODES, COMMON_KEYS,
    DEFAULT_PROTECTED, ROOT_FILESYSTEM_MODES,
};
