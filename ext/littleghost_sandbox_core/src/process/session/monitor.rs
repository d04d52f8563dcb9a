//! 18.9: the memory monitor of a session samples every 100 ms while the
//! session is alive; past the limit the caller marks the kill
//! ([`Session::end_at_sampled_memory`]) and hands the group to the one
//! termination protocol
//! ([`RunningProcess::terminate_detached`](crate::process::RunningProcess::terminate_detached)).
//! Three consecutive reader failures fail closed.

use std::time::{Duration, Instant};

use super::Session;

/// Memory sampling period (18.9).
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(100);
/// How often the monitor looks at its stop flag while it waits.
pub const STOP_CHECK: Duration = Duration::from_millis(10);
/// Consecutive reader failures that fail closed (18.9).
pub const FAILURE_LIMIT: u32 = 3;
/// How long `close` waits for a stopped monitor to end (before killing it,
/// and again after).
pub const STOP_WAIT: Duration = Duration::from_secs(1);
/// The nap between looks at whether the monitor ended.
const STOP_NAP: Duration = Duration::from_millis(1);

/// The error the session records when its memory supervisor fails closed,
/// naming the failure's kind (`cause`, the class of what the reader
/// raised) but not its message, which may carry what the reader saw (1.2).
pub fn supervisor_failed(cause: Option<&str>) -> String {
    format!(
        "Program memory supervisor failed ({})",
        cause.unwrap_or("unknown")
    )
}

/// One sample of the tree's memory.
#[derive(Debug, PartialEq, Eq)]
pub enum Sample<F> {
    /// At or under the limit.
    Under,
    /// Above the limit.
    Over,
    /// The reader failed with `F`.
    Failed(F),
}

impl<F> Sample<F> {
    /// `bytes` (as a reader answered it, possibly negative) against `limit`.
    pub fn of(bytes: i128, limit: u64) -> Sample<F> {
        if bytes > i128::from(limit) {
            Sample::Over
        } else {
            Sample::Under
        }
    }
}

/// How [`Session::watch_memory`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Watched<F> {
    /// The session ended, or `close` stopped the monitor.
    Ended,
    /// A sample was above the limit: mark the kill, terminate the group.
    Exceeded,
    /// The reader failed [`FAILURE_LIMIT`] times in a row, the last with `F`:
    /// fail closed.
    FailedClosed(F),
}

impl Session {
    /// Waits up to [`STOP_WAIT`] for the monitor to end, napping with
    /// `sleep`; false if it is still running.
    pub fn await_monitor<E>(
        &self,
        mut sleep: impl FnMut(Duration) -> Result<(), E>,
    ) -> Result<bool, E> {
        let give_up = Instant::now() + STOP_WAIT;
        while !self.monitor_finished() {
            if Instant::now() >= give_up {
                return Ok(false);
            }
            sleep(STOP_NAP)?;
        }
        Ok(true)
    }

    /// Samples with `sample` every [`SAMPLE_PERIOD`] while the session is
    /// alive and its monitor not stopped, sleeping with `sleep` in
    /// [`STOP_CHECK`] slices. An `Err` from either is returned at once.
    pub fn watch_memory<F, E>(
        &self,
        mut sample: impl FnMut() -> Result<Sample<F>, E>,
        mut sleep: impl FnMut(Duration) -> Result<(), E>,
    ) -> Result<Watched<F>, E> {
        let mut failures = 0;
        loop {
            if self.monitor_stopped() || !self.process().alive() {
                return Ok(Watched::Ended);
            }
            match sample()? {
                Sample::Under => failures = 0,
                Sample::Over => return Ok(Watched::Exceeded),
                Sample::Failed(failure) => {
                    failures += 1;
                    if failures >= FAILURE_LIMIT {
                        return Ok(Watched::FailedClosed(failure));
                    }
                }
            }
            let next = Instant::now() + SAMPLE_PERIOD;
            while Instant::now() < next {
                if self.monitor_stopped() {
                    return Ok(Watched::Ended);
                }
                sleep(STOP_CHECK)?;
            }
        }
    }
}
