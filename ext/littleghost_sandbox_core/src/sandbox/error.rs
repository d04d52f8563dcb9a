//! What the base class's rules refuse: a scope's profile selection and an
//! unknown provider name. Names are the caller's, as text; the binding shows
//! them as Ruby symbols (its `helpers/errors.rs`).

use crate::error::kind::Kind;
use crate::error::show::{plain, ShowName};

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
    #[error("{}", self.worded(&plain))]
    UnknownProfileOptions { names: Vec<String> },
    /// A provider name nothing is registered under (`label`: "sandbox" or
    /// "workspace"); `registered` is sorted.
    #[error("{}", self.worded(&plain))]
    UnknownProvider {
        label: String,
        name: String,
        registered: Vec<String>,
    },
}

impl Error {
    /// The message with the option and provider names shown by `name` (a
    /// profile's name is shown as given).
    pub fn worded(&self, name: ShowName) -> String {
        match self {
            Error::UnknownProfileOptions { names } => {
                let shown: Vec<String> = names.iter().map(|n| name(n)).collect();
                format!(
                    "unknown sandbox scope profile options: {}",
                    shown.join(", ")
                )
            }
            Error::UnknownProvider {
                label,
                name: given,
                registered,
            } => format!(
                "{label} provider {} is not available; it is not a registered {label} provider \
                 (registered: {})",
                name(given),
                registered_list(registered, name)
            ),
            other => other.to_string(),
        }
    }

    /// Which documented class each refusal is.
    pub fn kind(&self) -> Kind {
        match self {
            Error::ProfileWithExplicitOptions => Kind::Argument,
            Error::UnknownProfile { .. } | Error::UnknownProfileOptions { .. } => Kind::Policy,
            Error::UnknownProvider { .. } => Kind::Dependency,
        }
    }
}

/// The registered names, each shown by `name`, joined; "none" for no name.
pub fn registered_list(registered: &[String], name: ShowName) -> String {
    if registered.is_empty() {
        return "none".to_string();
    }
    let shown: Vec<String> = registered.iter().map(|n| name(n)).collect();
    shown.join(", ")
}
