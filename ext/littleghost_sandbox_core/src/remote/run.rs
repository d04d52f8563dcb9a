//! A run whose output arrives as it is printed (`execute_program` with a
//! block): `Start` asking to be a run (`x-littleghost-run`: launched,
//! bounded and shown as `Execute` does it), stdin closed at once
//! (`WriteStdin` with end of file, which a daemon without the extension
//! needs), ended at its timeout by dropping the stream (the daemon then
//! ends the program, as it does at an `Execute`'s deadline).

use std::time::{Duration, Instant};

use super::error::Error;
use super::session::Session;

/// What a run printed and how it ended (the daemon's exit code: the
/// status, or 128 + the signal that ended it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Execution {
    /// Each stream as the caller shows it (docs/spec.md 17.9): at most
    /// `limit` bytes, scrubbed UTF-8, and the marker if any were dropped.
    pub fn bounded(&self, limit: u64) -> (String, String) {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let shown = |bytes: &[u8]| {
            let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(limit)]).into_owned();
            if bytes.len() > limit {
                text.push_str(crate::process::TRUNCATION_MARKER);
            }
            text
        };
        (shown(&self.stdout), shown(&self.stderr))
    }
}

/// What a wait on a run gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Output printed since the last wait, each stream within its bound.
    Printed { stdout: Vec<u8>, stderr: Vec<u8> },
    /// Nothing yet.
    Waiting,
    /// The run ended: its Execution (as `Execute` answers it), or why not.
    Ended(Result<Execution, Error>),
}

/// One streamed run.
pub struct StreamedRun {
    session: Session,
    timeout: f64,
    deadline: Instant,
    /// How many bytes of each stream are handed on; one more is kept, so
    /// the caller can tell output was cut (17.9's marker).
    bound: usize,
    kept: [Vec<u8>; 2],
}

impl StreamedRun {
    /// The run of `session`, which was asked for at `started`.
    pub(crate) fn new(
        session: Session,
        timeout: f64,
        started: Instant,
        bound: usize,
    ) -> StreamedRun {
        StreamedRun {
            session,
            timeout,
            deadline: started + Duration::from_secs_f64(timeout),
            bound,
            kept: [Vec::new(), Vec::new()],
        }
    }

    /// Waits up to `slice` for output or the end. At the timeout the
    /// stream is dropped and the run ends with 17.10's error.
    pub fn next(&mut self, slice: Duration) -> Progress {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            self.session.end();
            return Progress::Ended(Err(Error::timed_out(self.timeout)));
        }
        let chunk = self.session.read(slice.min(left));
        let stdout = keep(&mut self.kept[0], self.bound, &chunk.stdout);
        let stderr = keep(&mut self.kept[1], self.bound, &chunk.stderr);
        if !stdout.is_empty() || !stderr.is_empty() {
            return Progress::Printed { stdout, stderr };
        }
        if !chunk.eof {
            return Progress::Waiting;
        }
        match self.session.wait(Duration::ZERO) {
            Some(Ok(exit_code)) => Progress::Ended(Ok(Execution {
                exit_code,
                stdout: std::mem::take(&mut self.kept[0]),
                stderr: std::mem::take(&mut self.kept[1]),
            })),
            Some(Err(error)) => Progress::Ended(Err(error)),
            None => Progress::Waiting,
        }
    }
}

impl Drop for StreamedRun {
    /// A run given up (an interrupt, an error) drops its stream: the
    /// daemon ends the program.
    fn drop(&mut self) {
        self.session.end();
    }
}

/// Keeps up to `bound + 1` bytes of a stream in `kept`; returns the part of
/// `bytes` within `bound`, which is what the caller sees printed.
fn keep(kept: &mut Vec<u8>, bound: usize, bytes: &[u8]) -> Vec<u8> {
    let before = kept.len();
    let room = bound.saturating_add(1).saturating_sub(before);
    kept.extend_from_slice(&bytes[..room.min(bytes.len())]);
    let shown_end = kept.len().min(bound);
    kept.get(before..shown_end).unwrap_or_default().to_vec()
}

#[cfg(test)]
mod tests {
    use super::{keep, Execution};

    #[test]
    fn a_run_is_shown_within_its_bound_with_the_marker_when_cut() {
        let execution = Execution {
            exit_code: 0,
            stdout: b"abcdef".to_vec(),
            stderr: b"ab\xff".to_vec(),
        };
        let marker = crate::process::TRUNCATION_MARKER;
        assert_eq!(
            execution.bounded(5),
            (format!("abcde{marker}"), "ab\u{fffd}".to_owned())
        );
        assert_eq!(execution.bounded(6).0, "abcdef");
        assert_eq!(execution.bounded(0).1, marker);
    }

    #[test]
    fn each_stream_is_handed_on_within_its_bound_and_kept_one_past_it() {
        let mut kept = Vec::new();
        assert_eq!(keep(&mut kept, 5, b"abc"), b"abc");
        assert_eq!(keep(&mut kept, 5, b"defgh"), b"de");
        assert_eq!(keep(&mut kept, 5, b"ijk"), b"");
        assert_eq!(kept, b"abcdef");
    }
}
