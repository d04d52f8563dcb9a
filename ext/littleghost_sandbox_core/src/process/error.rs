//! Why a child could not be started (shared by [`super::spawn`] and
//! [`super::program`] without either importing the other).

use std::io;

/// Why a child could not be started.
#[derive(Debug)]
pub enum SpawnError {
    /// The program does not exist (exit 127, "command not found").
    NotFound,
    /// The program exists but cannot be executed (exit 126, "permission denied").
    NotExecutable,
    /// The working directory is missing or not a directory.
    WorkingDirectory(io::Error),
    /// Any other OS failure (pipes, fork, limits).
    Os(io::Error),
    /// The launch asked for [`crate::limits::ProcessLimits`] this host cannot
    /// enforce (no writable cgroup, a missing controller); says why. Nothing
    /// was started.
    Unenforceable(String),
    /// A check made once the child was started, before anything of it ran,
    /// refused the launch (a held bwrap whose mounts are not what it asked
    /// for): the core error the caller raises. The child was killed.
    Refused(crate::error::Error),
}

impl SpawnError {
    /// The errno Ruby's `Errno::*` would carry for this failure.
    pub fn errno(&self) -> i32 {
        match self {
            SpawnError::NotFound => libc::ENOENT,
            SpawnError::NotExecutable => libc::EACCES,
            SpawnError::WorkingDirectory(error) | SpawnError::Os(error) => {
                error.raw_os_error().unwrap_or(libc::EIO)
            }
            SpawnError::Unenforceable(_) => libc::ENOTSUP,
            SpawnError::Refused(_) => libc::EPERM,
        }
    }
}
