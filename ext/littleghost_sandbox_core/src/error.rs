//! The core's errors. A mechanism says what went wrong in its own enum
//! (`helper::Error`, `limits::Error`, ...), in the core's words: logical
//! paths and values, never a Ruby class. [`Error`] carries one of them across
//! mechanisms, and [`Error::kind`] says which documented class of failure it
//! is; the binding maps each [`Kind`] onto one Ruby class (its
//! `helpers/errors.rs`, the one place that does).

use crate::denial::{Reason, Refusal};

pub mod kind;
pub mod show;
pub use kind::Kind;
pub use show::{plain, ShowName};

/// A failure the caller can act on; its `Display` is what the user sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A [`Kind::Tool`] failure worded by a mechanism that has no enum of its own yet.
    #[error("{0}")]
    Tool(String),
    /// A [`Kind::Tool`] refusal of policy: the message plus the rule that
    /// refused, so the binding records a denial without parsing the message.
    #[error("{}", .0.message)]
    Refused(Refusal),
    /// See [`Error::Tool`], for [`Kind::Policy`].
    #[error("{0}")]
    Policy(String),
    /// See [`Error::Tool`], for [`Kind::Capability`].
    #[error("{0}")]
    Capability(String),
    /// See [`Error::Tool`], for [`Kind::Dependency`].
    #[error("{0}")]
    Dependency(String),
    /// See [`Error::Tool`], for [`Kind::UnsupportedPlatform`].
    #[error("{0}")]
    UnsupportedPlatform(String),
    /// See [`Error::Tool`], for [`Kind::Cleanup`].
    #[error("{0}")]
    Cleanup(String),
    /// See [`Error::Tool`], for [`Kind::Argument`].
    #[error("{0}")]
    Argument(String),
    /// See [`Error::Tool`], for [`Kind::Key`].
    #[error("{0}")]
    Key(String),
    /// See [`Error::Tool`], for [`Kind::Io`].
    #[error("{0}")]
    Io(String),
    /// The gem's helper executable cannot be run.
    #[error(transparent)]
    Helper(#[from] crate::helper::Error),
    /// Launch limits that cannot be enforced here.
    #[error(transparent)]
    Limits(#[from] crate::limits::Error),
    /// A misshapen value in a policy declaration.
    #[error(transparent)]
    Declaration(#[from] crate::policy::error::Error),
    /// A file operation's failure or refusal.
    #[error(transparent)]
    File(#[from] crate::fs::error::Error),
    /// A scope or mount that would widen its parent's grants.
    #[error(transparent)]
    Narrowing(#[from] crate::grants::Narrowing),
    /// A scope's network that would widen its parent's.
    #[error(transparent)]
    NetworkNarrowing(#[from] crate::scope::refusal::NetworkNarrowing),
    /// A workspace configuration or path refused.
    #[error(transparent)]
    Workspace(#[from] crate::workspace::error::Error),
    /// A workspace directory that cannot be pinned.
    #[error(transparent)]
    Anchor(#[from] crate::fs::anchor::Refusal),
    /// A network mode a backend cannot enforce.
    #[error(transparent)]
    Unenforceable(#[from] crate::policy::network_mode::Unenforceable),
    /// A refusal of the sandbox base class's rules.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::error::Error),
    /// A read-only grant Landlock cannot enforce inside a writable one.
    #[error(transparent)]
    NestedReadOnly(#[from] crate::backend::landlock::nested::NestedReadOnly),
    /// An external gateway's runtime paths refused.
    #[error(transparent)]
    ExternalGateway(#[from] crate::network::external_refusal::Refusal),
    /// A call to littleghost-sandboxd that failed (the remote provider).
    #[error(transparent)]
    Remote(#[from] crate::remote::Error),
}

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Which documented class this failure is.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Tool(_) | Error::Refused(_) => Kind::Tool,
            Error::Policy(_) => Kind::Policy,
            Error::Capability(_) => Kind::Capability,
            Error::Dependency(_) => Kind::Dependency,
            Error::UnsupportedPlatform(_) => Kind::UnsupportedPlatform,
            Error::Cleanup(_) => Kind::Cleanup,
            Error::Argument(_) => Kind::Argument,
            Error::Key(_) => Kind::Key,
            Error::Io(_) => Kind::Io,
            Error::Helper(error) => error.kind(),
            Error::Limits(error) => error.kind(),
            Error::Declaration(error) => error.kind(),
            Error::Sandbox(error) => error.kind(),
            Error::Remote(error) => error.kind(),
            Error::File(error) => error.kind(),
            Error::Narrowing(error) => error.kind(),
            Error::NetworkNarrowing(error) => error.kind(),
            Error::Workspace(error) => error.kind(),
            Error::Anchor(error) => error.kind(),
            Error::Unenforceable(error) => error.kind(),
            Error::NestedReadOnly(_) => Kind::Capability,
            Error::ExternalGateway(error) => error.kind(),
        }
    }

    /// The refusal this error carries, if it is one.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Error::Refused(refusal) => Some(refusal.clone()),
            Error::File(error) => error.reason().map(|reason| Refusal {
                reason,
                message: error.to_string(),
            }),
            _ => None,
        }
    }

    /// The message the user sees (the error's `Display`).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The message with each name it carries shown by `name`; the other
    /// errors carry no name and read as their `Display`.
    pub fn worded(&self, name: ShowName) -> String {
        match self {
            Error::Workspace(error) => error.worded(name),
            Error::Anchor(error) => error.worded(name),
            Error::Unenforceable(error) => error.worded(name),
            Error::Sandbox(error) => error.worded(name),
            Error::Declaration(error) => error.worded(name),
            Error::NetworkNarrowing(error) => error.worded(name),
            Error::NestedReadOnly(error) => error.worded(name),
            Error::ExternalGateway(error) => error.worded(name),
            other => other.message(),
        }
    }
}

/// A directory that could not be created is an I/O failure; a rule's
/// refusal is carried as itself.
impl From<crate::fs::anchor::AnchorError> for Error {
    fn from(error: crate::fs::anchor::AnchorError) -> Error {
        match error {
            crate::fs::anchor::AnchorError::Create(error) => Error::Io(error.to_string()),
            crate::fs::anchor::AnchorError::Rule(refusal) => refusal.into(),
        }
    }
}

/// The Landlock, seccomp and helper-argument code lives in its own crate
/// (the helper builds it alone); its two kinds are the variants of the same name.
impl From<littleghost_sandbox_restrict::Error> for Error {
    fn from(error: littleghost_sandbox_restrict::Error) -> Error {
        match error {
            littleghost_sandbox_restrict::Error::Argument(m) => Error::Argument(m),
            littleghost_sandbox_restrict::Error::Capability(m) => Error::Capability(m),
        }
    }
}

/// Shorthand constructors keep call sites short: `tool("Path does not exist")`.
pub fn tool(message: impl Into<String>) -> Error {
    Error::Tool(message.into())
}
/// A `ToolError` that refuses by `reason` (see [`Error::Refused`]).
pub fn refused(reason: Reason, message: impl Into<String>) -> Error {
    Error::Refused(Refusal {
        reason,
        message: message.into(),
    })
}
/// See [`tool`].
pub fn policy(message: impl Into<String>) -> Error {
    Error::Policy(message.into())
}
/// See [`tool`].
pub fn capability(message: impl Into<String>) -> Error {
    Error::Capability(message.into())
}
/// See [`tool`].
pub fn argument(message: impl Into<String>) -> Error {
    Error::Argument(message.into())
}

/// What a caller reports for a panic caught at its boundary (a panic never
/// unwinds into a foreign runtime): the panic's own text where it has one.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string());
    format!("littleghost-sandbox internal error: {detail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::anchor::Refusal;
    use crate::policy::network_mode::{NetworkMode, Unenforceable};
    use crate::scope::refusal::NetworkNarrowing;
    use crate::workspace::error::Error as Workspace;

    fn symbol(name: &str) -> String {
        format!(":{name}")
    }

    #[test]
    fn worded_shows_every_carried_name_its_callers_way() {
        let unknown = Error::from(Workspace::UnknownGrant {
            category: "files".into(),
            name: "docs".into(),
            known: vec!["src".into(), "out".into()],
        });
        assert_eq!(
            unknown.worded(&symbol),
            "sandbox policy files grants :docs, which is not a workspace path \
             (workspace paths: :src, :out)"
        );
        assert_eq!(
            unknown.to_string(),
            "sandbox policy files grants docs, which is not a workspace path \
             (workspace paths: src, out)"
        );
        let reserved = Error::from(Workspace::ReservedRoot);
        assert!(reserved
            .worded(&symbol)
            .starts_with("workspace path :root is reserved"));
        let missing = Error::from(Refusal::Missing {
            name: "src".into(),
            relative: "a/b".into(),
            at: "/w/a".into(),
        });
        assert_eq!(
            missing.worded(&symbol),
            "workspace path :src (a/b) does not exist: /w/a is missing"
        );
        let mode = Error::from(Unenforceable::Unrestricted(NetworkMode::None));
        assert_eq!(
            mode.worded(&symbol),
            "the unrestricted sandbox cannot enforce network mode :none"
        );
        let landlock = Error::from(Unenforceable::LandlockAllowlist {
            missing: "no seccomp".into(),
        });
        assert_eq!(
            landlock.to_string(),
            "the landlock sandbox cannot enforce network mode allowlist here: no seccomp"
        );
        let scoped = Error::from(NetworkNarrowing::Unsupported(NetworkMode::Allowlist));
        assert!(scoped
            .worded(&symbol)
            .ends_with("scoped network mode :allowlist"));
    }

    #[test]
    fn worded_shows_provider_names_but_not_a_profile_name() {
        let provider = Error::from(crate::sandbox::Error::UnknownProvider {
            label: "sandbox".into(),
            name: "bwrap".into(),
            registered: vec!["native".into(), "unrestricted".into()],
        });
        assert_eq!(
            provider.worded(&symbol),
            "sandbox provider :bwrap is not available; it is not a registered sandbox provider \
             (registered: :native, :unrestricted)"
        );
        let none = crate::sandbox::Error::UnknownProvider {
            label: "workspace".into(),
            name: "x".into(),
            registered: vec![],
        };
        assert!(none.worded(&symbol).ends_with("(registered: none)"));
        let profile = crate::sandbox::Error::UnknownProfile { name: "ro".into() };
        assert_eq!(profile.worded(&symbol), "unknown sandbox scope profile: ro");
        let options = crate::sandbox::Error::UnknownProfileOptions {
            names: vec!["bogus".into()],
        };
        assert_eq!(
            options.worded(&symbol),
            "unknown sandbox scope profile options: :bogus"
        );
    }

    #[test]
    fn a_misshapen_declaration_shows_the_names_it_lists() {
        use crate::policy::error::Error as Misshapen;
        let mode = Error::from(Misshapen::NetworkMode {
            shown: "\"x\"".into(),
        });
        assert_eq!(
            mode.worded(&symbol),
            "network mode must be :inherit, :none or :allowlist, got \"x\""
        );
        assert_eq!(
            mode.to_string(),
            "network mode must be inherit, none or allowlist, got \"x\""
        );
        let access = Misshapen::GrantAccess {
            category: "files".into(),
            name: "src".into(),
            shown: ":rw".into(),
        };
        assert_eq!(
            access.worded(&symbol),
            "sandbox files access for :src must be :read_only or :read_write, got :rw"
        );
        let modes = Misshapen::UnsupportedNetworkModes(vec!["open".into(), "all".into()]);
        assert_eq!(
            modes.to_string(),
            "unsupported network modes: open, all (use inherit, none or allowlist)"
        );
        assert_eq!(
            Misshapen::HttpWithoutAuthorizer.worded(&symbol),
            "network inspection :http requires an authorizer"
        );
        // A shape keeps the core's words; only a caller knows its types.
        assert_eq!(
            Misshapen::ResolveNotATable.worded(&symbol),
            Misshapen::ResolveNotATable.to_string()
        );
    }

    #[test]
    fn errors_without_names_read_as_their_display() {
        let error = Error::Policy("bad".into());
        assert_eq!(error.worded(&symbol), "bad");
    }

    #[test]
    fn a_caught_panic_reads_as_an_internal_error_with_its_text() {
        let caught = |work: fn()| std::panic::catch_unwind(work).unwrap_err();
        let text = caught(|| panic!("static text"));
        let formatted = caught(|| panic!("formatted {}", 7));
        let other = caught(|| std::panic::panic_any(7_u8));
        let expected = "littleghost-sandbox internal error: static text";
        assert_eq!(panic_message(&*text), expected);
        let expected = "littleghost-sandbox internal error: formatted 7";
        assert_eq!(panic_message(&*formatted), expected);
        let expected = "littleghost-sandbox internal error: panic";
        assert_eq!(panic_message(&*other), expected);
    }
}
