//! Bounded output capture (17.9 per stream, 18.5 combined for sessions).
//!
//! The drain tasks keep reading after a bound is reached and drop the excess,
//! so a chatty child never blocks on a full pipe and memory stays bounded.

/// The default bound on captured output, per stream for an execute and
/// combined for a session (5.1 `output_bytes`).
pub const DEFAULT_OUTPUT_BYTES: u64 = 1_000_000;

/// Appended to a stream when anything was dropped (17.9).
pub const TRUNCATION_MARKER: &str = "\n[output truncated]";

/// Which output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout = 0,
    Stderr = 1,
}

/// How captured bytes are bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureMode {
    /// Keep at most `limit` bytes of each stream; drop the rest (execute).
    /// With `stop_at_limit`, the first dropped byte is reported like a
    /// combined overflow, so the child is terminated at the cap instead of
    /// running on to its timeout (`kill_on_output_limit:`).
    PerStream { limit: usize, stop_at_limit: bool },
    /// One counter over both streams for the whole run; passing `limit` is an
    /// overflow and nothing more is kept (sessions).
    Combined { limit: u64 },
}

impl CaptureMode {
    /// A run's capture (17.9): each stream bounded by `max_output_bytes`
    /// (a bound past the address space keeps everything); with
    /// `stop_at_limit` the run ends at the bound rather than dropping the excess.
    pub fn per_stream(max_output_bytes: u64, stop_at_limit: bool) -> CaptureMode {
        CaptureMode::PerStream {
            limit: usize::try_from(max_output_bytes).unwrap_or(usize::MAX),
            stop_at_limit,
        }
    }
}

/// Bytes of one stream waiting to be taken.
#[derive(Debug, Default)]
pub struct StreamBuffer {
    pub data: Vec<u8>,
    /// Bytes were dropped because of the bound.
    pub truncated: bool,
    /// The pipe reached EOF (or failed); nothing more will arrive.
    pub eof: bool,
}

/// Both streams plus the bound.
#[derive(Debug)]
pub struct Capture {
    mode: CaptureMode,
    streams: [StreamBuffer; 2],
    total: u64,
    overflowed: bool,
}

impl Capture {
    pub fn new(mode: CaptureMode) -> Self {
        Capture {
            mode,
            streams: Default::default(),
            total: 0,
            overflowed: false,
        }
    }

    /// Records `bytes` read from `stream`. Returns true the first time a
    /// combined bound is passed.
    pub fn accept(&mut self, stream: Stream, bytes: &[u8]) -> bool {
        let buffer = &mut self.streams[stream as usize];
        match self.mode {
            CaptureMode::PerStream {
                limit,
                stop_at_limit,
            } => {
                let room = limit.saturating_sub(buffer.data.len());
                let kept = room.min(bytes.len());
                buffer.data.extend_from_slice(&bytes[..kept]);
                if kept == bytes.len() {
                    return false;
                }
                buffer.truncated = true;
                let first = stop_at_limit && !self.overflowed;
                self.overflowed |= stop_at_limit;
                first
            }
            CaptureMode::Combined { limit } => {
                let before = self.total;
                self.total = self.total.saturating_add(bytes.len() as u64);
                if self.overflowed {
                    return false;
                }
                if self.total > limit {
                    // The bytes up to the bound are kept: the error that
                    // ends the session carries them.
                    let room = usize::try_from(limit.saturating_sub(before)).unwrap_or(usize::MAX);
                    buffer
                        .data
                        .extend_from_slice(&bytes[..room.min(bytes.len())]);
                    self.overflowed = true;
                    buffer.truncated = true;
                    return true;
                }
                buffer.data.extend_from_slice(bytes);
                false
            }
        }
    }

    pub fn mark_eof(&mut self, stream: Stream) {
        self.streams[stream as usize].eof = true;
    }

    pub fn stream(&self, stream: Stream) -> &StreamBuffer {
        &self.streams[stream as usize]
    }

    /// Both pipes reached EOF.
    pub fn complete(&self) -> bool {
        self.streams.iter().all(|s| s.eof)
    }

    /// A stream is closed once it reached EOF and everything was taken.
    pub fn closed(&self, stream: Stream) -> bool {
        let buffer = &self.streams[stream as usize];
        buffer.eof && buffer.data.is_empty()
    }

    /// Kept bytes of `stream` from `offset` on (what a streaming caller has
    /// not seen yet). Only meaningful for [`CaptureMode::PerStream`], whose
    /// buffer only grows until it is rendered.
    pub fn since(&self, stream: Stream, offset: usize) -> &[u8] {
        let data = &self.streams[stream as usize].data;
        data.get(offset..).unwrap_or_default()
    }

    /// The combined bound was passed (or, with `stop_at_limit`, a per-stream one).
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Removes and returns up to `max` buffered bytes of `stream`.
    pub fn take(&mut self, stream: Stream, max: usize) -> Vec<u8> {
        let data = &mut self.streams[stream as usize].data;
        if data.len() <= max {
            return std::mem::take(data);
        }
        let rest = data.split_off(max);
        std::mem::replace(data, rest)
    }

    /// The final text of `stream` (17.9): kept bytes scrubbed to UTF-8, plus
    /// the marker if anything was dropped.
    pub fn render(&mut self, stream: Stream) -> String {
        let buffer = &mut self.streams[stream as usize];
        render(&std::mem::take(&mut buffer.data), buffer.truncated)
    }
}

/// Kept bytes as UTF-8 with invalid sequences replaced by U+FFFD, plus
/// [`TRUNCATION_MARKER`] when `truncated`.
pub fn render(bytes: &[u8], truncated: bool) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if truncated {
        text.push_str(TRUNCATION_MARKER);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_bounds_each_stream_at_its_max_output_bytes() {
        let mode = CaptureMode::per_stream(5, true);
        let expected = CaptureMode::PerStream {
            limit: 5,
            stop_at_limit: true,
        };
        assert_eq!(mode, expected);
    }

    #[test]
    fn per_stream_bound_keeps_the_prefix_and_marks_truncation() {
        // Upstream example: limit 5, "a" x 20 on stdout, "problem" on stderr.
        let mut capture = Capture::new(CaptureMode::PerStream {
            limit: 5,
            stop_at_limit: false,
        });
        for _ in 0..4 {
            capture.accept(Stream::Stdout, b"aaaaa");
        }
        capture.accept(Stream::Stderr, b"prob");
        capture.accept(Stream::Stderr, b"lem");
        assert_eq!(capture.render(Stream::Stdout), "aaaaa\n[output truncated]");
        assert_eq!(capture.render(Stream::Stderr), "probl\n[output truncated]");
    }

    #[test]
    fn exactly_the_limit_gets_no_marker() {
        let mut capture = Capture::new(CaptureMode::PerStream {
            limit: 5,
            stop_at_limit: false,
        });
        capture.accept(Stream::Stdout, b"abc");
        capture.accept(Stream::Stdout, b"de");
        capture.accept(Stream::Stdout, b"");
        assert_eq!(capture.render(Stream::Stdout), "abcde");
    }

    #[test]
    fn invalid_utf8_is_scrubbed_including_a_cut_character() {
        assert_eq!(render(b"ok\xff\xfeend", false), "ok\u{fffd}\u{fffd}end");
        // "é" is C3 A9; a bound that cuts after C3 leaves one replacement character.
        let mut capture = Capture::new(CaptureMode::PerStream {
            limit: 3,
            stop_at_limit: false,
        });
        capture.accept(Stream::Stdout, "abé".as_bytes());
        capture.accept(Stream::Stdout, b"more");
        assert_eq!(
            capture.render(Stream::Stdout),
            "ab\u{fffd}\n[output truncated]"
        );
    }

    #[test]
    fn combined_bound_counts_both_streams_and_overflows_once() {
        let mut capture = Capture::new(CaptureMode::Combined { limit: 6 });
        assert!(!capture.accept(Stream::Stdout, b"abc"));
        assert!(!capture.accept(Stream::Stderr, b"def"));
        assert!(!capture.overflowed());
        assert!(capture.accept(Stream::Stdout, b"g"));
        assert!(!capture.accept(Stream::Stdout, b"h"));
        assert!(capture.overflowed());
        assert_eq!(capture.take(Stream::Stdout, 2), b"ab");
        assert_eq!(capture.take(Stream::Stdout, 16), b"c");
        assert_eq!(capture.take(Stream::Stderr, 16), b"def");
    }

    #[test]
    fn a_combined_bound_keeps_the_bytes_up_to_it() {
        let mut capture = Capture::new(CaptureMode::Combined { limit: 6 });
        assert!(!capture.accept(Stream::Stderr, b"ab"));
        assert!(capture.accept(Stream::Stdout, b"cdefgh"));
        assert!(!capture.accept(Stream::Stdout, b"ij"));
        assert_eq!(capture.take(Stream::Stderr, 16), b"ab");
        assert_eq!(capture.take(Stream::Stdout, 16), b"cdef");
    }

    #[test]
    fn streams_close_after_eof_and_draining() {
        let mut capture = Capture::new(CaptureMode::Combined { limit: 100 });
        capture.accept(Stream::Stdout, b"x");
        capture.mark_eof(Stream::Stdout);
        assert!(!capture.closed(Stream::Stdout));
        capture.take(Stream::Stdout, 16);
        assert!(capture.closed(Stream::Stdout));
        assert!(!capture.complete());
        capture.mark_eof(Stream::Stderr);
        assert!(capture.complete());
    }

    #[test]
    fn stop_at_limit_reports_the_first_dropped_byte_once() {
        let mut capture = Capture::new(CaptureMode::PerStream {
            limit: 4,
            stop_at_limit: true,
        });
        assert!(!capture.accept(Stream::Stdout, b"abcd"));
        assert!(!capture.overflowed());
        assert!(capture.accept(Stream::Stderr, b"12345"));
        assert!(!capture.accept(Stream::Stdout, b"e"));
        assert!(capture.overflowed());
        assert_eq!(capture.render(Stream::Stdout), "abcd\n[output truncated]");
        assert_eq!(capture.render(Stream::Stderr), "1234\n[output truncated]");
    }

    #[test]
    fn without_stop_at_limit_a_full_stream_is_no_overflow() {
        let mut capture = Capture::new(CaptureMode::PerStream {
            limit: 1,
            stop_at_limit: false,
        });
        assert!(!capture.accept(Stream::Stdout, b"xyz"));
        assert!(!capture.overflowed());
    }

    #[test]
    fn since_returns_what_a_streaming_reader_has_not_seen() {
        let mut capture = Capture::new(CaptureMode::PerStream {
            limit: 6,
            stop_at_limit: false,
        });
        capture.accept(Stream::Stdout, b"abc");
        assert_eq!(capture.since(Stream::Stdout, 0), b"abc");
        capture.accept(Stream::Stdout, b"defgh");
        assert_eq!(capture.since(Stream::Stdout, 3), b"def");
        assert_eq!(capture.since(Stream::Stdout, 6), b"");
        assert_eq!(capture.since(Stream::Stdout, 60), b"");
        assert_eq!(capture.since(Stream::Stderr, 0), b"");
    }
}
