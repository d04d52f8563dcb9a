//! When a wait ends (17.8, 18.5, H.6): a point in time, or never, and the
//! slices of at most [`POLL_INTERVAL`] that callers wait in until then.

use std::time::{Duration, Instant};

use super::POLL_INTERVAL;

/// The end of a wait; `never` waits in full slices forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// No deadline.
    pub fn never() -> Self {
        Deadline(None)
    }

    /// `duration` from now (one too long to represent is never).
    pub fn after(duration: Duration) -> Self {
        Deadline(Instant::now().checked_add(duration))
    }

    /// `seconds` from now; seconds that no Duration holds are never.
    pub fn after_secs(seconds: f64) -> Self {
        Duration::try_from_secs_f64(seconds).map_or(Self::never(), Self::after)
    }

    /// The next wait: the time left, at most [`POLL_INTERVAL`]; `None` once
    /// the deadline has passed.
    pub fn slice(&self) -> Option<Duration> {
        match self.0 {
            None => Some(POLL_INTERVAL),
            Some(end) => {
                let now = Instant::now();
                (now < end).then(|| POLL_INTERVAL.min(end - now))
            }
        }
    }

    /// Whether the deadline has passed.
    pub fn passed(&self) -> bool {
        self.slice().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_waits_in_full_slices() {
        assert_eq!(Deadline::never().slice(), Some(POLL_INTERVAL));
        assert_eq!(Deadline::after_secs(f64::MAX).slice(), Some(POLL_INTERVAL));
    }

    #[test]
    fn zero_has_passed_at_once() {
        assert!(Deadline::after_secs(0.0).passed());
        assert!(Deadline::after(Duration::ZERO).passed());
    }

    #[test]
    fn slices_are_bounded_by_the_time_left() {
        let long = Deadline::after(Duration::from_secs(5));
        assert_eq!(long.slice(), Some(POLL_INTERVAL));
        let short = Deadline::after(Duration::from_millis(3)).slice().unwrap();
        assert!(short <= Duration::from_millis(3));
        std::thread::sleep(Duration::from_millis(5));
        assert!(Deadline::after(Duration::from_millis(1))
            .slice()
            .is_some_and(|s| s <= Duration::from_millis(1)));
    }

    #[test]
    fn a_deadline_passes() {
        let deadline = Deadline::after(Duration::from_millis(2));
        std::thread::sleep(Duration::from_millis(4));
        assert!(deadline.passed());
    }
}
