//! How a call to littleghost-sandboxd fails, and which documented class
//! each failure is (docs/spec.md §1; the table is in docs/design.md "The
//! remote provider").

use crate::error::kind::Kind;

/// A failed call to the daemon; `Display` is what the caller sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The endpoint or token given to the provider is malformed (ArgumentError).
    #[error("{0}")]
    Endpoint(String),
    /// No connection could be made, or it broke (DependencyError: the
    /// configured sandbox is unusable, not the call).
    #[error("littleghost-sandboxd at {address} is unreachable: {detail}")]
    Unreachable { address: String, detail: String },
    /// The daemon refused the token, or asked for one (DependencyError).
    #[error("littleghost-sandboxd refused the call: a valid token is required ({0})")]
    Unauthenticated(String),
    /// The daemon refused or failed the operation; its message is the
    /// broker's or the launcher's, safe to show the model (ToolError).
    #[error("{0}")]
    Refused(String),
    /// The daemon cannot do what was asked here (CapabilityError).
    #[error("{0}")]
    Unsupported(String),
    /// A run passed its timeout and the daemon ended it (ToolError, 17.10).
    #[error("{0}")]
    TimedOut(String),
    /// The daemon answered something the protocol does not allow (ToolError).
    #[error("littleghost-sandboxd answered unexpectedly: {0}")]
    Protocol(String),
    /// A scope's narrowings are not shaped as the daemon reads them (ArgumentError).
    #[error("{0}")]
    Narrowing(String),
    /// A session's stream is closed (IOError).
    #[error("{0}")]
    Closed(String),
}

impl Error {
    /// 17.10: a run of `seconds` timed out.
    pub fn timed_out(seconds: f64) -> Error {
        Error::TimedOut(crate::process::arguments::run_timed_out(seconds))
    }

    /// Which documented class this failure is.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Endpoint(_) | Error::Narrowing(_) => Kind::Argument,
            Error::Unreachable { .. } | Error::Unauthenticated(_) => Kind::Dependency,
            Error::Unsupported(_) => Kind::Capability,
            Error::Refused(_) | Error::TimedOut(_) | Error::Protocol(_) => Kind::Tool,
            Error::Closed(_) => Kind::Io,
        }
    }

    /// The error a gRPC status stands for (the reference server's codes).
    pub(crate) fn from_status(address: &str, status: &tonic::Status) -> Error {
        use tonic::Code;
        let message = status.message().to_string();
        match status.code() {
            Code::Unauthenticated => Error::Unauthenticated(message),
            // tonic reports a connection it could not make or lost as these.
            Code::Unavailable | Code::Unknown if code_is_transport(status) => Error::Unreachable {
                address: address.to_string(),
                detail: message,
            },
            Code::Unavailable => Error::Unreachable {
                address: address.to_string(),
                detail: message,
            },
            Code::Unimplemented => Error::Unsupported(message),
            _ => Error::Refused(message),
        }
    }
}

fn code_is_transport(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::Unavailable || status.message().contains("transport error")
}
