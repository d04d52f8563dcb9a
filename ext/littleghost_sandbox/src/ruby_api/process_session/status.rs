//! `ProcessSession::Status`: what `wait` and `terminate` return, shaped
//! like `Process::Status`.

use littleghost_sandbox_core::process::Exit;
use magnus::{prelude::*, Value};

/// The result of `wait` and `terminate`, shaped like `Process::Status`.
#[magnus::wrap(
    class = "LittleGhost::Sandbox::ProcessSession::Status",
    free_immediately,
    size
)]
pub struct SessionStatus {
    pub(super) pid: i32,
    pub(super) exit: Exit,
}

impl SessionStatus {
    /// The pid of the session's leader.
    pub(super) fn pid(&self) -> i32 {
        self.pid
    }
    /// The raw wait status (nil if another waiter reaped the child).
    pub(super) fn to_i(&self) -> Option<i32> {
        self.exit.raw()
    }
    /// The exit status, or nil if the child did not exit normally.
    pub(super) fn exitstatus(&self) -> Option<i32> {
        self.exit.code()
    }
    /// True for exit 0, false for another status, nil if it did not exit.
    pub(super) fn success(&self) -> Option<bool> {
        self.exit.code().map(|code| code == 0)
    }
    /// Whether the child exited normally.
    pub(super) fn exited(&self) -> bool {
        self.exit.code().is_some()
    }
    /// Whether a signal killed the child.
    pub(super) fn signaled(&self) -> bool {
        self.exit.signal().is_some()
    }
    /// The signal that killed the child, or nil.
    pub(super) fn termsig(&self) -> Option<i32> {
        self.exit.signal()
    }
    /// Always false: sessions never report stopped children.
    pub(super) fn stopped(&self) -> bool {
        false
    }
    /// `#<LittleGhost::Sandbox::ProcessSession::Status: pid N exit C>` or `... SIGNAME (signal S)`.
    pub(super) fn inspect(&self) -> String {
        let detail = match (self.exit.code(), self.exit.signal()) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            _ => "status unknown".to_string(),
        };
        format!(
            "#<LittleGhost::Sandbox::ProcessSession::Status: pid {} {detail}>",
            self.pid
        )
    }
    /// Equal to another Status with the same pid and raw status, or to an Integer equal to `to_i`.
    pub(super) fn equal(&self, other: Value) -> bool {
        if let Ok(other) = <&SessionStatus>::try_convert(other) {
            return other.pid == self.pid && other.exit == self.exit;
        }
        match (i64::try_convert(other), self.exit.raw()) {
            (Ok(number), Some(raw)) => number == i64::from(raw),
            _ => false,
        }
    }
}
