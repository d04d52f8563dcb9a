//! What the base class's rules refuse: a scope's profile selection and an
//! unknown provider name. Names are the caller's, as text; the binding shows
//! them as Ruby symbols (its `helpers/errors.rs`).

use crate::error::kind::Kind;

/// A refusal of the sandbox base class's rules (docs/spec.md §10, §12).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// docs/spec.md 10.8: a profile name and explicit options exclude each other.
    #[error("scope profile cannot be combined with explicit options")]
    ProfileWithExplicitOptions,
    /// A profile name the sandbox was not given.
    #[error("unknown sandbox scope profile: {name}")]
    UnknownProfile { name: String },
    /// A profile's options that are not among `PROFILE_KEYS`.
    #[error("unknown sandbox scope profile options: {}", .names.join(", "))]
    UnknownProfileOptions { names: Vec<String> },
    /// A provider name nothing is registered under (`label`: "sandbox" or
    /// "workspace"); `registered` is sorted.
    #[error(
        "{label} provider {name} is not available; it is not a registered {label} provider \
         (registered: {})",
        registered_list(.registered, "")
    )]
    UnknownProvider {
        label: String,
        name: String,
        registered: Vec<String>,
    },
}

impl Error {
    /// Which documented class each refusal is.
    pub fn kind(&self) -> Kind {
        match self {
            Error::ProfileWithExplicitOptions => Kind::Argument,
            Error::UnknownProfile { .. } | Error::UnknownProfileOptions { .. } => Kind::Policy,
            Error::UnknownProvider { .. } => Kind::Dependency,
        }
    }
}

/// The registered names, each behind `prefix`, joined; "none" for no name.
pub fn registered_list(registered: &[String], prefix: &str) -> String {
    if registered.is_empty() {
        return "none".to_string();
    }
    registered
        .iter()
        .map(|name| format!("{prefix}{name}"))
        .collect::<Vec<_>>()
        .join(", ")
}
