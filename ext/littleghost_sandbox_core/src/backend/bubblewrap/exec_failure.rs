//! 17.4: bwrap's own exec failure, read back as a shell-style exit status.

/// Why bwrap could not start the program (17.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecFailure {
    /// No such program inside the sandbox: exit 127.
    NotFound,
    /// The program exists but cannot be executed: exit 126.
    NotExecutable,
}

impl ExecFailure {
    /// The shell-style exit status.
    pub fn exit_code(self) -> i32 {
        match self {
            ExecFailure::NotFound => 127,
            ExecFailure::NotExecutable => 126,
        }
    }

    /// The stderr the caller sees, naming the program as the caller wrote it.
    pub fn message(self, argv0: &str) -> String {
        match self {
            ExecFailure::NotFound => format!("{argv0}: command not found\n"),
            ExecFailure::NotExecutable => format!("{argv0}: permission denied\n"),
        }
    }
}

/// Reads bwrap's own `execvp` failure. bwrap reports it as exit 1 with
/// exactly `bwrap: execvp ARGV0: STRERROR\n` on stderr and nothing on stdout
/// (its environment is empty, so the C locale's wording applies). Anything
/// else is the program's own result and is left alone.
pub fn classify_exec_failure(
    exit_code: Option<i32>,
    stdout: &[u8],
    stderr: &[u8],
    exec_argv0: &[u8],
) -> Option<ExecFailure> {
    if exit_code != Some(1) || !stdout.is_empty() {
        return None;
    }
    let prefix = [b"bwrap: execvp ".as_slice(), exec_argv0, b": "].concat();
    let reason = stderr
        .strip_prefix(prefix.as_slice())?
        .strip_suffix(b"\n")?;
    match reason {
        b"No such file or directory" | b"Not a directory" => Some(ExecFailure::NotFound),
        b"Permission denied" | b"Exec format error" | b"Operation not permitted" => {
            Some(ExecFailure::NotExecutable)
        }
        _ => None,
    }
}
