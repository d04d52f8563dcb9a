//! What a session's `wait` and `terminate` return, shaped like
//! `Process::Status`.

use crate::process::Exit;

/// The leader's pid and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionStatus {
    pub pid: i32,
    pub exit: Exit,
}

impl SessionStatus {
    /// True for exit 0, false for another status, None if it did not exit.
    pub fn success(&self) -> Option<bool> {
        self.exit.code().map(|code| code == 0)
    }

    /// `pid N exit C`, `pid N signal S` or `pid N status unknown`, the body
    /// of `inspect`.
    pub fn describe(&self) -> String {
        let detail = match (self.exit.code(), self.exit.signal()) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            _ => "status unknown".to_string(),
        };
        format!("pid {} {detail}", self.pid)
    }

    /// Equal to an Integer equal to the raw wait status (never when unknown).
    pub fn equals_raw(&self, number: i64) -> bool {
        self.exit.raw().is_some_and(|raw| number == i64::from(raw))
    }
}
