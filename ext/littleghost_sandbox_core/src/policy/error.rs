//! A declaration whose values have the wrong shape (a name that is not a
//! name, an entry that is not a table), name no member of their set (a
//! network mode, an access), or do not go together (options a network mode
//! does not take). The core words them in its own terms;
//! the binding, which knows what shape a Ruby caller gave, may word them in
//! Ruby's (its `helpers/errors.rs`).

use crate::error::kind::Kind;
use crate::error::show::{plain, ShowName};
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
    #[error("{}", self.worded(&plain))]
    NetworkMode { shown: String },
    /// A network inspection that is neither connect nor http.
    #[error("{}", self.worded(&plain))]
    Inspection { shown: String },
    /// Allowlist options given with another network mode.
    #[error("network mode {} does not take allow, secrets, upstream_ca, resolve, gateway, authorizer or headers; use mode allowlist", .0.name())]
    OptionsWithoutAllowlist(NetworkMode),
    #[error("network inspection http requires mode allowlist")]
    HttpWithoutAllowlist,
    #[error("{}", self.worded(&plain))]
    HttpWithoutAuthorizer,
    #[error("{}", self.worded(&plain))]
    EmptyAllowlist,
    /// A network gateway provider that is none of builtin, envoy and external.
    #[error("unknown network gateway provider {shown}")]
    GatewayProvider { shown: String },
    /// A mount access that is neither read_only nor read_write.
    #[error("{}", self.worded(&plain))]
    MountAccess { shown: String },
    /// A root filesystem mode that is none of isolated, read_only and read_write.
    #[error("{}", self.worded(&plain))]
    RootFilesystem { shown: String },
    /// The access of grant `name` in `category` (`files`, `runtime_paths`).
    #[error("{}", self.worded(&plain))]
    GrantAccess {
        category: String,
        name: String,
        shown: String,
    },
    /// A workspace directory (by name) a grant stands for that is not absolute.
    #[error("{}", self.worded(&plain))]
    RelativeDirectory(String),
    /// Capability network modes that are no network mode, by name.
    #[error("{}", self.worded(&plain))]
    UnsupportedNetworkModes(Vec<String>),
    /// A declaration's `what` (`files`, `runtime_paths`, `environment`) given as something other than a table.
    #[error("sandbox {what} must be a table")]
    NotATable { what: &'static str },
    /// A size (`what`, in bytes) that is not a positive integer.
    #[error("{what} must be a positive integer (bytes), got {shown}")]
    NotAPositiveSize { what: &'static str, shown: String },
    /// `protect` given as something other than a list.
    #[error("sandbox protect must be a list of relative paths (protect: [] protects nothing)")]
    ProtectNotAList,
    /// Keys of `what`'s table (a network policy, an allow entry, a secret)
    /// that are none of `valid`, each as it reads.
    #[error("{}", self.worded(&plain))]
    UnknownKeys {
        what: String,
        unknown: Vec<String>,
        valid: Vec<&'static str>,
    },
    /// Keys of a keyword table that name none of the `known` keywords, each
    /// as it reads.
    #[error("unknown keywords: {} (known: {})", unknown.join(", "), known.join(", "))]
    UnknownKeywords {
        unknown: Vec<String>,
        known: Vec<&'static str>,
    },
}

impl Error {
    /// The message with each name it lists or carries (a mode, an access, a
    /// grant's) shown by `name`; the shapes stay in the core's words.
    pub fn worded(&self, name: ShowName) -> String {
        let modes = || {
            let [inherit, none, allowlist] = ["inherit", "none", "allowlist"].map(name);
            format!("{inherit}, {none} or {allowlist}")
        };
        let accesses = || format!("{} or {}", name("read_only"), name("read_write"));
        match self {
            Error::NetworkMode { shown } => {
                format!("network mode must be {}, got {shown}", modes())
            }
            Error::Inspection { shown } => format!(
                "network inspection must be {} or {}, got {shown}",
                name("connect"),
                name("http")
            ),
            Error::HttpWithoutAuthorizer => {
                format!("network inspection {} requires an authorizer", name("http"))
            }
            Error::EmptyAllowlist => format!(
                "network mode {} requires a non-empty allow list (\"host:port\" entries)",
                name("allowlist")
            ),
            Error::MountAccess { shown } => {
                format!("mount access must be {}, got {shown}", accesses())
            }
            Error::RootFilesystem { shown } => format!(
                "sandbox root_filesystem must be {}, {} or {}, got {shown}",
                name("isolated"),
                name("read_only"),
                name("read_write")
            ),
            Error::GrantAccess {
                category,
                name: grant,
                shown,
            } => format!(
                "sandbox {category} access for {} must be {}, got {shown}",
                name(grant),
                accesses()
            ),
            Error::RelativeDirectory(path) => {
                format!("workspace path {} must be absolute", name(path))
            }
            Error::UnsupportedNetworkModes(names) => {
                let shown: Vec<String> = names.iter().map(|n| name(n)).collect();
                format!(
                    "unsupported network modes: {} (use {})",
                    shown.join(", "),
                    modes()
                )
            }
            Error::UnknownKeys {
                what,
                unknown,
                valid,
            } => {
                let unknown: Vec<String> = unknown.iter().map(|key| name(key)).collect();
                let valid: Vec<String> = valid.iter().map(|key| name(key)).collect();
                format!(
                    "unknown {what} {}: {} (valid keys: {})",
                    if unknown.len() == 1 { "key" } else { "keys" },
                    unknown.join(", "),
                    valid.join(", ")
                )
            }
            other => other.to_string(),
        }
    }

    /// Misuse of a constructor is an argument error; a bad declaration a policy error.
    pub fn kind(&self) -> Kind {
        match self {
            Error::FeatureNotAName { .. }
            | Error::IsolationNotAName
            | Error::AllowEntryWithoutDestination
            | Error::UnsupportedNetworkModes(_)
            | Error::UnknownKeywords { .. }
            | Error::UnknownKeys { .. }
            | Error::RelativeDirectory(_) => Kind::Argument,
            _ => Kind::Policy,
        }
    }
}
