//! Why a file operation failed: a leaf the core's cross-mechanism error can
//! carry (`errors.rs` words the failures of a walk and of the OS into it).

use crate::denial::Reason;
use crate::error::kind::Kind;

/// Why a file operation failed, in the words the caller sees (14.5 to
/// 14.12): never a host path or the OS's own error text (1.2). Every one is
/// a [`Kind::Tool`] failure; [`Error::reason`] says which rule refused, if
/// one did, so a denial is recorded without reading the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("Path is outside the sandbox scope")]
    Outside,
    #[error("Path escapes the sandbox scope")]
    Escapes,
    #[error("Path must identify a sandbox entry")]
    NotAnEntry,
    #[error("Path contains a null byte")]
    NulByte,
    #[error("Path is not a file")]
    NotAFile,
    #[error("Path is not a directory")]
    NotADirectory,
    #[error("Path does not exist")]
    Missing,
    #[error("Path cannot traverse a symbolic link")]
    TraversesSymlink,
    #[error("Path cannot be a symbolic link")]
    IsSymlink,
    #[error("Write target cannot be a symbolic link")]
    WriteTargetSymlink,
    #[error("Write target parent does not exist")]
    WriteParentMissing,
    #[error("Multiply-linked files are not accessible through sandbox tools")]
    MultiplyLinked,
    #[error("Sandbox scope is read-only")]
    ReadOnly,
    #[error("File is not valid UTF-8 text")]
    NotUtf8,
    #[error("Path name is too long; shorten each component to at most 255 bytes")]
    NameTooLong,
    /// The file is larger than the read limit (in bytes).
    #[error("File exceeds the read limit")]
    ReadLimit(u64),
    /// The content is larger than the write limit (in bytes).
    #[error("Content exceeds the write limit")]
    WriteLimit(u64),
    /// The directory holds more entries than the listing limit.
    #[error("Directory exceeds the listing limit")]
    ListLimit(u64),
    /// A removal of a non-empty directory without `recursive`.
    #[error("Directory is not empty")]
    NotEmpty,
    #[error("Text to replace cannot be empty")]
    EmptyOldText,
    /// The logical path the text was looked for in.
    #[error("Text was not found in {0}")]
    TextNotFound(String),
    /// The logical path the text occurs in more than once.
    #[error("Text occurs more than once in {0}")]
    TextRepeated(String),
    /// Reading an opened file failed (the reader's own words).
    #[error("Could not read file: {0}")]
    Unreadable(String),
    #[error("Sandbox mount source changed after initialization")]
    SourceChanged,
    #[error("Sandbox mount source does not exist")]
    SourceMissing,
    #[error("Sandbox mount source is not a directory")]
    SourceNotADirectory,
    /// The workspace path (by name) that is no longer the directory `open` verified.
    #[error("workspace path changed after opening: {0}")]
    PinMoved(String),
    /// An OS failure no rule names; the text after the prefix says what the
    /// caller can act on (": no space left on the host filesystem"), or is empty.
    #[error("Sandbox filesystem operation failed{0}")]
    Host(&'static str),
    /// The host ran out of descriptors or memory (`errno`): reported as
    /// itself, with the errno's name, never as "changed" or "missing".
    #[error("{}", self.worded(&crate::error::show::plain))]
    Exhausted(rustix::io::Errno),
    #[cfg(test)]
    #[error("injected failure before rename")]
    Injected,
    /// A failure of one operation on `logical`, the path as the caller gave it.
    #[error("{}", on_path(.error, .logical))]
    OnPath { error: Box<Error>, logical: String },
}

/// The result of a file operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Always [`Kind::Tool`]: a per-operation failure, safe to show the model.
    pub fn kind(&self) -> Kind {
        Kind::Tool
    }

    /// The rule that refused, if this is a refusal rather than a failure.
    pub fn reason(&self) -> Option<Reason> {
        Some(match self {
            Error::Outside => Reason::OutsideScope,
            Error::Escapes => Reason::EscapesScope,
            Error::ReadOnly => Reason::ReadOnly,
            Error::ReadLimit(_) => Reason::ReadLimit,
            Error::WriteLimit(_) => Reason::WriteLimit,
            Error::ListLimit(_) => Reason::ListLimit,
            Error::MultiplyLinked => Reason::MultiplyLinked,
            Error::TraversesSymlink | Error::IsSymlink | Error::WriteTargetSymlink => {
                Reason::Symlink
            }
            Error::OnPath { error, .. } => return error.reason(),
            _ => return None,
        })
    }

    /// The message with the errno name an exhaustion carries shown by
    /// `errno` (`EMFILE` as it is; Ruby names its exception class).
    pub fn worded(&self, errno: crate::error::show::ShowName) -> String {
        match self {
            Error::Exhausted(code) => exhausted(None, *code, errno),
            Error::OnPath { error, logical } => match **error {
                Error::Exhausted(code) => exhausted(Some(logical), code, errno),
                _ => self.to_string(),
            },
            other => other.to_string(),
        }
    }

    /// This failure named by the caller's logical path (W10: never a host path).
    pub(crate) fn on(self, logical: &str) -> Error {
        match self {
            named @ Error::OnPath { .. } => named,
            error => Error::OnPath {
                error: Box::new(error),
                logical: logical.to_owned(),
            },
        }
    }
}

/// The message of running out of `code` (EMFILE, ENFILE or ENOMEM), on
/// `logical` when it is named, with the errno's name shown by `show`.
fn exhausted(
    logical: Option<&str>,
    code: rustix::io::Errno,
    show: crate::error::show::ShowName,
) -> String {
    use rustix::io::Errno;
    let (what, name) = match code {
        Errno::MFILE => ("the host process has too many open files", "EMFILE"),
        Errno::NFILE => ("the host system has too many open files", "ENFILE"),
        _ => ("the host is out of memory", "ENOMEM"),
    };
    let on = logical
        .map(|logical| format!(" on {logical}"))
        .unwrap_or_default();
    format!(
        "Sandbox filesystem operation failed{on}: {what} ({})",
        show(name)
    )
}

/// A failure as named by [`Error::on`]: today's wording stays the prefix, a
/// limit is named with its value, and failures that already name the path
/// ("Text was not found in ...") or are about a grant, not the path, are
/// unchanged.
fn on_path(error: &Error, logical: &str) -> String {
    match error {
        Error::ReadLimit(limit) => format!("{error} of {limit} bytes: {logical}"),
        Error::WriteLimit(limit) => format!("{error} of {limit} bytes: {logical}"),
        Error::ListLimit(limit) => format!("{error} of {limit} entries: {logical}"),
        Error::Host(reason) => format!("Sandbox filesystem operation failed on {logical}{reason}"),
        Error::Exhausted(code) => exhausted(Some(logical), *code, &crate::error::show::plain),
        Error::Outside
        | Error::Escapes
        | Error::NotAnEntry
        | Error::NotAFile
        | Error::NotADirectory
        | Error::Missing
        | Error::TraversesSymlink
        | Error::IsSymlink
        | Error::WriteTargetSymlink
        | Error::WriteParentMissing
        | Error::MultiplyLinked
        | Error::ReadOnly
        | Error::NotUtf8
        | Error::NameTooLong => format!("{error}: {logical}"),
        other => other.to_string(),
    }
}
