//! A declaration whose values have the wrong shape (a name that is not a
//! name, an entry that is not a table), name no member of their set (a
//! network mode, an access), or do not go together (options a network mode
//! does not take). The core words them in its own terms;
//! the binding, which knows what shape a Ruby caller gave, may word them in
//! Ruby's (its `helpers/errors.rs`).

use crate::error::kind::Kind;
use crate::policy::network_mode::NetworkMode;

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
    /// Network secrets given as something other than a table.
    #[error("network secrets must be a table of name => {{value, destinations}}")]
    SecretsNotATable,
    /// Network `resolve` given as something other than a table.
    #[error("network resolve must be a table of host name => IP address")]
    ResolveNotATable,
    /// A network mode that is none of inherit, none and allowlist.
    #[error("network mode must be inherit, none or allowlist, got {shown}")]
    NetworkMode { shown: String },
    /// A network inspection that is neither connect nor http.
    #[error("network inspection must be connect or http, got {shown}")]
    Inspection { shown: String },
    /// Allowlist options given with another network mode.
    #[error("network mode {} does not take allow, secrets, upstream_ca, resolve, gateway, authorizer or headers; use mode allowlist", .0.name())]
    OptionsWithoutAllowlist(NetworkMode),
    #[error("network inspection http requires mode allowlist")]
    HttpWithoutAllowlist,
    #[error("network inspection http requires an authorizer")]
    HttpWithoutAuthorizer,
    #[error("network mode allowlist requires a non-empty allow list (\"host:port\" entries)")]
    EmptyAllowlist,
    /// A network gateway provider that is none of builtin, envoy and external.
    #[error("unknown network gateway provider {shown}")]
    GatewayProvider { shown: String },
    /// A mount access that is neither read_only nor read_write.
    #[error("mount access must be read_only or read_write, got {shown}")]
    MountAccess { shown: String },
    /// A root filesystem mode that is none of isolated, read_only and read_write.
    #[error("sandbox root_filesystem must be isolated, read_only or read_write, got {shown}")]
    RootFilesystem { shown: String },
    /// The access of grant `name` in `category` (`files`, `runtime_paths`).
    #[error("sandbox {category} access for {name} must be read_only or read_write, got {shown}")]
    GrantAccess {
        category: String,
        name: String,
        shown: String,
    },
    /// A workspace directory (by name) a grant stands for that is not absolute.
    #[error("workspace path {0} must be absolute")]
    RelativeDirectory(String),
    /// Capability network modes that are no network mode, by name.
    #[error("unsupported network modes: {} (use inherit, none or allowlist)", .0.join(", "))]
    UnsupportedNetworkModes(Vec<String>),
    /// A declaration's `what` (`files`, `runtime_paths`, `environment`) given as something other than a table.
    #[error("sandbox {what} must be a table")]
    NotATable { what: &'static str },
    /// `protect` given as something other than a list.
    #[error("sandbox protect must be a list of relative paths (protect: [] protects nothing)")]
    ProtectNotAList,
    /// Keys of a keyword table that name none of the `known` keywords, each
    /// as it reads.
    #[error("unknown keywords: {} (known: {})", unknown.join(", "), known.join(", "))]
    UnknownKeywords {
        unknown: Vec<String>,
        known: Vec<&'static str>,
    },
}

impl Error {
    /// Misuse of a constructor is an argument error; a bad declaration a policy error.
    pub fn kind(&self) -> Kind {
        match self {
            Error::FeatureNotAName { .. }
            | Error::IsolationNotAName
            | Error::AllowEntryWithoutDestination
            | Error::UnsupportedNetworkModes(_)
            | Error::UnknownKeywords { .. }
            | Error::RelativeDirectory(_) => Kind::Argument,
            _ => Kind::Policy,
        }
    }
}
