//! `ProcessSession::Status`: what `wait` and `terminate` return, shaped
//! like `Process::Status`; the core's [`CoreStatus`] decides what it says.

use littleghost_sandbox_core::process::session::SessionStatus as CoreStatus;
use magnus::{prelude::*, Value};

/// The result of `wait` and `terminate`, shaped like `Process::Status`.
#[magnus::wrap(
    class = "LittleGhost::Sandbox::ProcessSession::Status",
    free_immediately,
    size
)]
pub struct SessionStatus(pub(crate) CoreStatus);

impl SessionStatus {
    /// The pid of the session's leader.
    pub(super) fn pid(&self) -> i32 {
        self.0.pid
    }
    /// The raw wait status (nil if another waiter reaped the child).
    pub(super) fn to_i(&self) -> Option<i32> {
        self.0.exit.raw()
    }
    /// The exit status, or nil if the child did not exit normally.
    pub(super) fn exitstatus(&self) -> Option<i32> {
        self.0.exit.code()
    }
    /// True for exit 0, false for another status, nil if it did not exit.
    pub(super) fn success(&self) -> Option<bool> {
        self.0.success()
    }
    /// Whether the child exited normally.
    pub(super) fn exited(&self) -> bool {
        self.0.exit.code().is_some()
    }
    /// Whether a signal killed the child.
    pub(super) fn signaled(&self) -> bool {
        self.0.exit.signal().is_some()
    }
    /// The signal that killed the child, or nil.
    pub(super) fn termsig(&self) -> Option<i32> {
        self.0.exit.signal()
    }
    /// Always false: sessions never report stopped children.
    pub(super) fn stopped(&self) -> bool {
        false
    }
    /// `#<LittleGhost::Sandbox::ProcessSession::Status: pid N exit C>` or `... SIGNAME (signal S)`.
    pub(super) fn inspect(&self) -> String {
        let class = "LittleGhost::Sandbox::ProcessSession::Status";
        format!("#<{class}: {}>", self.0.describe())
    }
    /// Equal to another Status with the same pid and raw status, or to an Integer equal to `to_i`.
    pub(super) fn equal(&self, other: Value) -> bool {
        if let Ok(other) = <&SessionStatus>::try_convert(other) {
            return other.0 == self.0;
        }
        i64::try_convert(other).is_ok_and(|number| self.0.equals_raw(number))
    }
}
