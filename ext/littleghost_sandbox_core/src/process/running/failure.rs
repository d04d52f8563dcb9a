//! What a launch that could not start means to the caller (17.5, 18.1): the
//! one set of exec-failure messages every backend shows.

use super::super::spawn::SpawnError;

/// How a run-to-completion call reports a child that never started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartFailure {
    /// Reported like a shell would: an Execution with this stderr and exit code.
    Exited { stderr: String, code: i32 },
    /// Raised: ToolError "MESSAGE (Errno::EXXX)" with that Errno as `cause`.
    Refused { message: &'static str, errno: i32 },
    /// Raised: CapabilityError with this reason; nothing was started (L.3).
    Unenforceable { reason: String },
    /// Raised: the core error (its documented class); nothing of it ran.
    Checked(crate::error::Error),
}

impl StartFailure {
    /// The report for `error` when starting `program` (argv[0]).
    pub fn of(error: &SpawnError, program: &str) -> StartFailure {
        match error {
            SpawnError::NotFound => StartFailure::Exited {
                stderr: format!("{program}: command not found\n"),
                code: 127,
            },
            SpawnError::NotExecutable => StartFailure::Exited {
                stderr: format!("{program}: permission denied\n"),
                code: 126,
            },
            SpawnError::WorkingDirectory(_) => StartFailure::Refused {
                message: "Working directory is not available",
                errno: error.errno(),
            },
            SpawnError::Os(_) => StartFailure::Refused {
                message: "Command could not be started",
                errno: error.errno(),
            },
            SpawnError::Unenforceable(reason) => StartFailure::Unenforceable {
                reason: reason.clone(),
            },
            SpawnError::Refused(error) => StartFailure::Checked(error.clone()),
        }
    }
}

/// What a session's `SystemCallError` names (18.1): the working directory
/// when that is what failed, else the program.
pub fn session_failure_subject<'a>(error: &SpawnError, program: &'a str) -> &'a str {
    match error {
        SpawnError::WorkingDirectory(_) => "chdir",
        _ => program,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn missing_and_unexecutable_programs_read_like_a_shell() {
        assert_eq!(
            StartFailure::of(&SpawnError::NotFound, "nope"),
            StartFailure::Exited {
                stderr: "nope: command not found\n".into(),
                code: 127
            }
        );
        assert_eq!(
            StartFailure::of(&SpawnError::NotExecutable, "./x"),
            StartFailure::Exited {
                stderr: "./x: permission denied\n".into(),
                code: 126
            }
        );
    }

    #[test]
    fn os_failures_are_refused_with_their_errno() {
        let chdir = SpawnError::WorkingDirectory(io::Error::from_raw_os_error(libc::ENOTDIR));
        assert_eq!(
            StartFailure::of(&chdir, "ls"),
            StartFailure::Refused {
                message: "Working directory is not available",
                errno: libc::ENOTDIR
            }
        );
        assert_eq!(session_failure_subject(&chdir, "ls"), "chdir");
        let other = SpawnError::Os(io::Error::from_raw_os_error(libc::EMFILE));
        assert_eq!(
            StartFailure::of(&other, "ls"),
            StartFailure::Refused {
                message: "Command could not be started",
                errno: libc::EMFILE
            }
        );
        assert_eq!(session_failure_subject(&other, "ls"), "ls");
    }
}
