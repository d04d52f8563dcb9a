//! The gateway's HTTP/1.1 engine: a sequential keep-alive loop over one
//! client connection, generic over `AsyncRead + AsyncWrite` streams so it
//! serves the plain-HTTP proxy (a Unix socket in, TCP out) and decrypted
//! inspected TLS alike ([`serve_inspected`]).
//!
//! For each request: read the head (strict parser, bounded, with a
//! deadline), decide (allowlist, the destination's HTTP rules, secrets),
//! forward the head and a body framed exactly (`Content-Length` or chunked,
//! anything ambiguous refused), then relay the response framed exactly
//! (status line and headers parsed as strictly; no body for `HEAD`, 1xx,
//! 204 and 304; `Content-Length`; chunked; else until close), and read the
//! next request on the same connection. Each request is decided on its own:
//! one naming another destination gets an upstream of its own. A `101` to a
//! request that asked for an upgrade turns the connection into a tunnel (a
//! destination whose rules read each request may only switch to WebSocket).
//!
//! What the gateway reads it checks for secrets' stand-ins: swapped for the
//! real value in the request line and header values toward a destination
//! the secret names, refused toward any other, and refused in bodies and
//! tunnels bound where the secret may not go (a body or tunnel is never
//! rewritten: the value only ever travels in a request head the gateway
//! wrote). Stand-ins are redacted from every record and message.
//!
//! Each request read (and each tunnel) leaves one [`EgressEvent`].

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::UnixStream;
use tokio::time::timeout;

use super::allowlist::Allowlist;
use super::allowlist::Destination;
use super::budget::Held;
use super::connection::{self, refusal, Refusal, Shared};
use super::denial::DenialReason;
use super::egress::{Decision, EgressEvent, EgressLog};
use super::memory::Lease;
use super::pipe::{pipe, PipeWriter};
use super::rules::{is_token, Access, HostPattern, Pattern, PortPattern, Rule};
use super::secrets::{Exfiltration, Secrets};
use upstream::{Failure, Piece, Response, Upstream};

mod upstream;

/// A stream the engine can serve.
pub(super) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// How much a read asks for at once (heads, bodies, tunnels).
const READ_SIZE: usize = 128 * 1024;
/// What a new connection's first read asks for (see [`Reader::fill`]), and
/// the floor of a reader's lease of the memory budget.
pub(super) const FIRST_ROOM: usize = 16 * 1024;
/// Longest chunk-size line (with extensions) accepted.
const MAX_CHUNK_LINE: usize = 4096;
/// Largest trailer section accepted after a chunked body.
const MAX_TRAILERS: usize = 32 * 1024;

// ---------------------------------------------------------------------------
// Buffered reading
// ---------------------------------------------------------------------------

/// A reader with a buffer of bytes read but not yet used (the rest of a
/// pipelined request, a response's first body bytes...).
pub(super) struct Reader<R> {
    inner: R,
    /// Storage, initialised once and reused; `start..end` is unread.
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// How much one fill takes at most: from 16 KiB, doubled (up to
    /// [`READ_SIZE`]) each time a fill takes all of it, so a connection
    /// that only ever carries small messages keeps a small buffer.
    room: usize,
    /// Holds `buffer` of the gateway's memory budget: the buffer grows only
    /// with what the budget has free ([`super::memory`]).
    lease: Lease,
    /// An error met after bytes were already read in the same fill: held
    /// back so those bytes go first, returned by the next fill.
    failed: Option<std::io::Error>,
}

/// Why a head could not be read.
#[derive(Debug, PartialEq, Eq)]
enum HeadError {
    TooLarge,
    /// The peer closed in the middle of a head.
    Truncated,
    Io,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// A reader whose buffer is held in `lease` (whose floor should be
    /// [`FIRST_ROOM`]: with less, a first read can wait for the budget).
    pub(super) fn new(inner: R, lease: Lease) -> Reader<R> {
        Reader {
            inner,
            buffer: Vec::new(),
            start: 0,
            end: 0,
            room: FIRST_ROOM,
            lease,
            failed: None,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start >= self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more into the buffer: waits for the first bytes, then takes
    /// whatever else is ready at once, up to its room ([`READ_SIZE`] once
    /// the connection carried that much at once; a TLS stream
    /// yields one record, at most 16 KiB, per read: taking the records
    /// already received together lets them be passed on in one write).
    /// The buffer grows only with what the memory budget has free: when it
    /// has little, a fill takes less; when it has none and the buffer is
    /// full, the fill waits for bytes given back.
    /// `Ok(0)` at end of stream. Cancel safe: what was read is in the
    /// buffer, a cancelled fill loses nothing.
    async fn fill(&mut self) -> std::io::Result<usize> {
        if let Some(failed) = self.failed.take() {
            return Err(failed);
        }
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let wanted = self.end + self.room;
        if self.buffer.len() < wanted {
            let (lease, end) = (&mut self.lease, self.end);
            let held = std::future::poll_fn(|cx| lease.poll_grow(cx, end + 1, wanted)).await;
            let grown = held.min(wanted);
            if self.buffer.len() < grown {
                self.buffer.resize(grown, 0);
            }
        }
        let room = wanted.min(self.buffer.len()) - self.end;
        let Reader {
            inner,
            buffer,
            end,
            failed,
            room: next_room,
            ..
        } = self;
        let first = *end;
        std::future::poll_fn(|cx| loop {
            let total = *end - first;
            let mut read = ReadBuf::new(&mut buffer[*end..first + room]);
            match Pin::new(&mut *inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    *end += n;
                    if n == 0 || total + n == room {
                        if total + n == room {
                            *next_room = (room * 2).min(READ_SIZE);
                        }
                        return Poll::Ready(Ok(total + n));
                    }
                }
                Poll::Ready(Err(error)) if total > 0 => {
                    *failed = Some(error);
                    return Poll::Ready(Ok(total));
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending if total > 0 => return Poll::Ready(Ok(total)),
                Poll::Pending => return Poll::Pending,
            }
        })
        .await
    }

    /// The next head (without its blank line), consumed from the buffer;
    /// `None` when the stream ended before its first byte.
    async fn read_head(&mut self, limit: usize) -> Result<Option<Vec<u8>>, HeadError> {
        let mut searched: usize = 0;
        loop {
            let buffered = self.buffered();
            let from = searched.saturating_sub(3);
            if let Some(at) = find(&buffered[from..], b"\r\n\r\n") {
                let end = from + at;
                if end + 4 > limit {
                    return Err(HeadError::TooLarge);
                }
                let head = buffered[..end].to_vec();
                self.consume(end + 4);
                return Ok(Some(head));
            }
            if buffered.len() > limit {
                return Err(HeadError::TooLarge);
            }
            searched = buffered.len();
            match self.fill().await {
                Ok(0) if self.buffered().is_empty() => return Ok(None),
                Ok(0) => return Err(HeadError::Truncated),
                Ok(_) => {}
                Err(_) => return Err(HeadError::Io),
            }
        }
    }

    /// The stream, with what was buffered but not used in front of it, and
    /// the lease that held the buffer (still holding what the prefix keeps).
    fn into_rewound(mut self) -> (Rewound<R>, Lease) {
        self.buffer.truncate(self.end);
        let rewound = Rewound {
            prefix: self.buffer,
            start: self.start,
            inner: self.inner,
        };
        (rewound, self.lease)
    }
}

/// A stream that first yields bytes already read from it (what followed a
/// `CONNECT` head: a TLS ClientHello, a tunnelled protocol's first bytes).
pub(super) struct Rewound<S> {
    prefix: Vec<u8>,
    start: usize,
    inner: S,
}

impl<S> Rewound<S> {
    /// The bytes not yet yielded before the stream's own.
    pub(super) fn prefix(&self) -> &[u8] {
        &self.prefix[self.start..]
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewound<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.start < this.prefix.len() {
            let n = (this.prefix.len() - this.start).min(buf.remaining());
            buf.put_slice(&this.prefix[this.start..this.start + n]);
            this.start += n;
            if this.start == this.prefix.len() {
                this.prefix = Vec::new();
                this.start = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewound<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------
// Request and response heads
// ---------------------------------------------------------------------------

/// A parsed request head.
pub(super) struct Head {
    pub method: String,
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

/// A control byte: C0 (CR, LF and HTAB included) or DEL.
fn is_control(byte: u8) -> bool {
    byte < 0x20 || byte == 0x7f
}

/// One header line: a token name directly followed by `:`, a value with no
/// control byte but HTAB (leading and trailing blanks trimmed).
fn parse_field(line: &[u8]) -> Result<(String, String), &'static str> {
    if line.iter().any(|&b| is_control(b) && b != b'\t') {
        return Err("control character in a header field");
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or("malformed header line")?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
        return Err("malformed header name");
    }
    let value = String::from_utf8_lossy(value);
    Ok((
        String::from_utf8_lossy(name).into_owned(),
        value.trim_matches([' ', '\t']).to_owned(),
    ))
}

fn values<'h>(
    headers: &'h [(String, String)],
    wanted: &'static str,
) -> impl Iterator<Item = &'h str> {
    headers
        .iter()
        .filter(move |(name, _)| name.eq_ignore_ascii_case(wanted))
        .map(|(_, value)| value.as_str())
}

/// The lower-case tokens of every `Connection` header.
fn connection_tokens(headers: &[(String, String)]) -> Vec<String> {
    values(headers, "connection")
        .flat_map(|value| value.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .filter(|token| !token.is_empty())
        .collect()
}

/// Headers a `Connection` header may not name (RFC 9110 §7.6.1): the
/// framing of the body (`Content-Length`, `Transfer-Encoding`, and `TE` and
/// `Trailer`, which say how a chunked body may end) and the request's
/// routing (`Host`). A hop-by-hop listing of one would leave a forwarded
/// head framed differently from what the gateway read, so a body could
/// become a second request at the destination (docs/security.md "Request
/// framing"). `Upgrade` may be named: every WebSocket client must
/// (RFC 9110 §7.8), and the gateway writes the `Upgrade` it forwards itself.
const NOT_NAMED_IN_CONNECTION: [&str; 5] = [
    "content-length",
    "transfer-encoding",
    "host",
    "te",
    "trailer",
];

/// The first framing or routing header a `Connection` header names.
fn names_framing_header(headers: &[(String, String)]) -> Option<String> {
    connection_tokens(headers)
        .into_iter()
        .find(|token| NOT_NAMED_IN_CONNECTION.contains(&token.as_str()))
}

/// A body is framed once: not both `Content-Length` and
/// `Transfer-Encoding`, and one length however often it is repeated.
fn check_lengths(headers: &[(String, String)]) -> Result<(), &'static str> {
    let mut lengths = values(headers, "content-length");
    if let Some(first) = lengths.next() {
        if values(headers, "transfer-encoding").next().is_some() {
            return Err("both Content-Length and Transfer-Encoding");
        }
        if lengths.any(|other| other != first) || !first.bytes().all(|b| b.is_ascii_digit()) {
            return Err("malformed Content-Length");
        }
    }
    Ok(())
}

/// Parses the head strictly: lines end with CRLF only; no
/// CR, LF or other control byte in the request line or a header field (HTAB
/// only inside a value); the version is exactly `HTTP/1.0` or `HTTP/1.1`; a
/// header name is a token directly followed by `:`; a body is framed once
/// (not both `Content-Length` and `Transfer-Encoding`, one length).
/// Whatever this accepts is what the destination sees, minus what
/// [`origin_form`] strips, so nothing can hide a second line inside a field.
pub(super) fn parse_head(bytes: &[u8]) -> Result<Head, Refusal> {
    let bad = |why: &str| refusal("400 Bad Request", why.to_owned());
    let text = std::str::from_utf8(bytes).map_err(|_| bad("request head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    if request_line.bytes().any(is_control) {
        return Err(bad("control character in the request line"));
    }
    let parts: Vec<&str> = request_line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(bad("malformed request line"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) || target.is_empty() {
        return Err(bad("malformed request line"));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(bad("only HTTP/1.0 and HTTP/1.1 are accepted"));
    }
    let headers = lines
        .map(|line| parse_field(line.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    check_lengths(&headers).map_err(bad)?;
    Ok(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers,
    })
}

/// A parsed response head (the raw bytes are what the client receives).
pub(super) struct ResponseHead {
    pub version: &'static str,
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

/// Parses a response head as strictly as a request head: `HTTP/1.0` or
/// `HTTP/1.1`, a three-digit status, a reason without control bytes (HTAB
/// aside; bytes above 0x7f are allowed, as obs-text), lines ending in CRLF
/// only, token header names, one framing of the body.
pub(super) fn parse_response_head(bytes: &[u8]) -> Result<ResponseHead, &'static str> {
    let text = bytes;
    let mut parts = split_crlf(text);
    let status_line = parts.next().unwrap_or_default();
    if status_line.iter().any(|&b| is_control(b) && b != b'\t') {
        return Err("control character in the status line");
    }
    let version = match status_line.get(..9) {
        Some(b"HTTP/1.1 ") => "HTTP/1.1",
        Some(b"HTTP/1.0 ") => "HTTP/1.0",
        _ => return Err("only HTTP/1.0 and HTTP/1.1 responses are accepted"),
    };
    let rest = &status_line[9..];
    let code = rest.get(..3).ok_or("malformed status line")?;
    if !code.iter().all(u8::is_ascii_digit) || code[0] == b'0' {
        return Err("malformed status code");
    }
    if rest.len() > 3 && rest[3] != b' ' {
        return Err("malformed status line");
    }
    let status = code
        .iter()
        .fold(0u16, |n, &digit| n * 10 + u16::from(digit - b'0'));
    let headers = parts.map(parse_field).collect::<Result<Vec<_>, _>>()?;
    check_lengths(&headers)?;
    Ok(ResponseHead {
        version,
        status,
        headers,
    })
}

fn split_crlf(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(bytes);
    std::iter::from_fn(move || {
        let current = rest?;
        match find(current, b"\r\n") {
            Some(at) => {
                rest = Some(&current[at + 2..]);
                Some(&current[..at])
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

// ---------------------------------------------------------------------------
// Body framing
// ---------------------------------------------------------------------------

/// How a message's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

fn content_length(headers: &[(String, String)]) -> Result<Option<u64>, &'static str> {
    values(headers, "content-length")
        .next()
        .map(|text| text.parse::<u64>().map_err(|_| "malformed Content-Length"))
        .transpose()
}

/// A request's body: `Content-Length`, or `Transfer-Encoding: chunked`
/// exactly (in HTTP/1.1); any other transfer coding is refused, since the
/// gateway could not tell where the body ends the way the destination would.
fn request_framing(head: &Head) -> Result<Framing, Refusal> {
    let bad = |why: &str| refusal("400 Bad Request", why.to_owned());
    let codings: Vec<&str> = values(&head.headers, "transfer-encoding").collect();
    if !codings.is_empty() {
        if head.version != "HTTP/1.1"
            || codings.len() != 1
            || !codings[0].eq_ignore_ascii_case("chunked")
        {
            return Err(bad(
                "only Transfer-Encoding: chunked is accepted on a request",
            ));
        }
        return Ok(Framing::Chunked);
    }
    match content_length(&head.headers).map_err(bad)? {
        None | Some(0) => Ok(Framing::None),
        Some(length) => Ok(Framing::Length(length)),
    }
}

/// A response's body (RFC 9112 §6.3).
fn response_framing(to_head: bool, response: &ResponseHead) -> Result<Framing, &'static str> {
    let status = response.status;
    if to_head || (100..200).contains(&status) || status == 204 || status == 304 {
        return Ok(Framing::None);
    }
    let codings: Vec<&str> = values(&response.headers, "transfer-encoding")
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect();
    if !codings.is_empty() {
        if response.version == "HTTP/1.1"
            && codings
                .last()
                .is_some_and(|c| c.eq_ignore_ascii_case("chunked"))
        {
            return Ok(Framing::Chunked);
        }
        return Ok(Framing::UntilClose);
    }
    Ok(match content_length(&response.headers)? {
        Some(0) => Framing::None,
        Some(length) => Framing::Length(length),
        None => Framing::UntilClose,
    })
}

/// One step of reading a chunked body (sans I/O, so it can be fuzzed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The input ends inside a line: read more.
    More,
    /// This many bytes of framing (a size line, a CRLF, a trailer line).
    Framing(usize),
    /// This many bytes of data.
    Data(usize),
    /// The final blank line (this many bytes): the body is over.
    Done(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

/// A strict decoder of chunked framing: `HEX[;ext] CRLF data CRLF`...,
/// `0[;ext] CRLF`, trailer fields, `CRLF`. Lines end in CRLF only and hold
/// no control byte but HTAB; sizes are 1 to 16 hex digits.
pub(super) struct Chunked {
    state: ChunkState,
    trailers: usize,
}

impl Chunked {
    pub(super) fn new() -> Chunked {
        Chunked {
            state: ChunkState::Size,
            trailers: 0,
        }
    }

    /// Looks at the start of `input` (the unread bytes) and says what the
    /// first bytes are; the caller consumes them and calls again.
    pub(super) fn step(&mut self, input: &[u8]) -> Result<Step, &'static str> {
        match self.state {
            ChunkState::Size | ChunkState::Trailer => {
                let limit = if self.state == ChunkState::Size {
                    MAX_CHUNK_LINE
                } else {
                    MAX_TRAILERS - self.trailers
                };
                let Some(end) = find(input, b"\r\n") else {
                    let partial = input.strip_suffix(b"\r").unwrap_or(input);
                    if partial.iter().any(|&b| is_control(b) && b != b'\t') {
                        return Err("control character in chunked framing");
                    }
                    if partial.len() > limit {
                        return Err("chunked framing line too long");
                    }
                    return Ok(Step::More);
                };
                let line = &input[..end];
                if line.iter().any(|&b| is_control(b) && b != b'\t') {
                    return Err("control character in chunked framing");
                }
                if end > limit {
                    return Err("chunked framing line too long");
                }
                if self.state == ChunkState::Size {
                    let size = chunk_size(line)?;
                    self.state = if size == 0 {
                        ChunkState::Trailer
                    } else {
                        ChunkState::Data(size)
                    };
                    return Ok(Step::Framing(end + 2));
                }
                if end == 0 {
                    self.state = ChunkState::Done;
                    return Ok(Step::Done(2));
                }
                parse_field(line)?;
                self.trailers += end + 2;
                Ok(Step::Framing(end + 2))
            }
            ChunkState::Data(left) => {
                if input.is_empty() {
                    return Ok(Step::More);
                }
                let take = left.min(input.len() as u64);
                self.state = if take == left {
                    ChunkState::DataEnd
                } else {
                    ChunkState::Data(left - take)
                };
                Ok(Step::Data(take as usize))
            }
            ChunkState::DataEnd => match input {
                [b'\r', b'\n', ..] => {
                    self.state = ChunkState::Size;
                    Ok(Step::Framing(2))
                }
                [] | [b'\r'] => Ok(Step::More),
                _ => Err("chunk data not followed by CRLF"),
            },
            ChunkState::Done => Ok(Step::Done(0)),
        }
    }
}

/// `HEX[;extensions]`: 1 to 16 hex digits, nothing else before `;`.
fn chunk_size(line: &[u8]) -> Result<u64, &'static str> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    if digits.is_empty() || digits.len() > 16 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err("malformed chunk size");
    }
    let text = std::str::from_utf8(digits).map_err(|_| "malformed chunk size")?;
    u64::from_str_radix(text, 16).map_err(|_| "malformed chunk size")
}

// ---------------------------------------------------------------------------
// Secrets in streamed bytes
// ---------------------------------------------------------------------------

/// Looks for stand-ins in a stream of bytes, keeping the last
/// `longest_stand_in() - 1` bytes of one piece to search across the next,
/// so a stand-in split between reads is still found before its last piece
/// is passed on.
pub(super) struct Scanner<'s> {
    secrets: &'s Secrets,
    /// `Some`: a readable body toward this destination (stand-ins of secrets
    /// that may go there pass); `None`: a tunnel (every stand-in refused).
    toward: Option<&'s Destination>,
    carry: Vec<u8>,
    keep: usize,
}

impl<'s> Scanner<'s> {
    pub(super) fn new(secrets: &'s Secrets, toward: Option<&'s Destination>) -> Scanner<'s> {
        Scanner {
            secrets,
            toward,
            carry: Vec::new(),
            keep: secrets.longest_stand_in().saturating_sub(1),
        }
    }

    /// Checks a whole line of framing (a chunk extension, a trailer field)
    /// apart from the data stream.
    pub(super) fn check_line(&self, line: &[u8]) -> Option<Exfiltration> {
        if self.keep == 0 {
            return None;
        }
        self.secrets.find_bound_elsewhere(line, self.toward)
    }

    /// Checks the next piece; `Some` when a stand-in completes in it.
    pub(super) fn feed(&mut self, data: &[u8]) -> Option<Exfiltration> {
        if self.keep == 0 {
            return None;
        }
        if !self.carry.is_empty() {
            let mut joined = self.carry.clone();
            joined.extend_from_slice(&data[..data.len().min(self.keep)]);
            if let Some(found) = self.secrets.find_bound_elsewhere(&joined, self.toward) {
                return Some(found);
            }
        }
        if let Some(found) = self.secrets.find_bound_elsewhere(data, self.toward) {
            return Some(found);
        }
        if data.len() >= self.keep {
            self.carry.clear();
            self.carry
                .extend_from_slice(&data[data.len() - self.keep..]);
        } else {
            self.carry.extend_from_slice(data);
            let excess = self.carry.len().saturating_sub(self.keep);
            self.carry.drain(..excess);
        }
        None
    }
}

// ---------------------------------------------------------------------------
// Copying
// ---------------------------------------------------------------------------

/// Progress shared by the two directions of one exchange.
struct Progress {
    start: Instant,
    /// Milliseconds after `start` of the last movement either way.
    last: AtomicU64,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            start: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    fn moved(&self) {
        self.last
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Returns once nothing moved for `idle`.
    async fn idle(&self, idle: Duration) {
        loop {
            let deadline =
                self.start + Duration::from_millis(self.last.load(Ordering::Relaxed)) + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

/// Why a body stopped before its end.
#[derive(Debug)]
enum BodyError {
    /// A stand-in bound where its secret may not go (not passed on).
    Exfiltrated,
    Malformed(&'static str),
    /// The sending side ended early.
    ReadEnded,
    /// The receiving side is gone.
    WriteFailed,
}

async fn send<W: AsyncWrite + Unpin>(to: &mut W, bytes: &[u8]) -> Result<(), BodyError> {
    to.write_all(bytes)
        .await
        .map_err(|_| BodyError::WriteFailed)?;
    to.flush().await.map_err(|_| BodyError::WriteFailed)
}

async fn more<R: AsyncRead + Unpin>(from: &mut Reader<R>) -> Result<(), BodyError> {
    match from.fill().await {
        Ok(0) | Err(_) => Err(BodyError::ReadEnded),
        Ok(_) => Ok(()),
    }
}

/// Hands `to` (hyper's request body) the data of one body the child framed
/// as `framing`, decoded, scanning it (and a chunked body's size lines and
/// trailer fields) when a scanner is given; `count` is what it read of the
/// child's connection, framing included. [`Piece::End`] goes only after the
/// whole body was read and scanned: on any error `to` is dropped without
/// it, and hyper never completes the request toward the destination.
async fn forward_body<R>(
    from: &mut Reader<R>,
    to: tokio::sync::mpsc::Sender<Piece>,
    framing: Framing,
    mut scanner: Option<&mut Scanner<'_>>,
    count: &AtomicU64,
    progress: &Progress,
) -> Result<(), BodyError>
where
    R: AsyncRead + Unpin,
{
    let pass = |data: &[u8]| Piece::Data(hyper::body::Bytes::copy_from_slice(data));
    match framing {
        Framing::None => {}
        Framing::UntilClose => return Err(BodyError::Malformed("a request body needs a length")),
        Framing::Length(mut left) => {
            while left > 0 {
                if from.buffered().is_empty() {
                    more(from).await?;
                }
                let take = (from.buffered().len() as u64).min(left) as usize;
                let data = &from.buffered()[..take];
                if scanner.as_deref_mut().and_then(|s| s.feed(data)).is_some() {
                    return Err(BodyError::Exfiltrated);
                }
                let piece = pass(data);
                from.consume(take);
                to.send(piece).await.map_err(|_| BodyError::WriteFailed)?;
                left -= take as u64;
                count.fetch_add(take as u64, Ordering::Relaxed);
                progress.moved();
            }
        }
        Framing::Chunked => {
            let mut decoder = Chunked::new();
            let mut data = Vec::new();
            loop {
                let buffered = from.buffered();
                let mut used = 0;
                let mut done = false;
                while !done {
                    match decoder
                        .step(&buffered[used..])
                        .map_err(BodyError::Malformed)?
                    {
                        Step::More => break,
                        Step::Framing(n) => {
                            // Size lines (extensions) and trailer fields:
                            // whole lines, checked on their own, not forwarded.
                            let line = &buffered[used..used + n];
                            if scanner
                                .as_deref()
                                .and_then(|s| s.check_line(line))
                                .is_some()
                            {
                                return Err(BodyError::Exfiltrated);
                            }
                            used += n;
                        }
                        Step::Data(n) => {
                            let piece = &buffered[used..used + n];
                            if scanner.as_deref_mut().and_then(|s| s.feed(piece)).is_some() {
                                return Err(BodyError::Exfiltrated);
                            }
                            data.extend_from_slice(piece);
                            used += n;
                        }
                        Step::Done(n) => {
                            used += n;
                            done = true;
                        }
                    }
                }
                if used > 0 {
                    from.consume(used);
                    if !data.is_empty() {
                        let piece = Piece::Data(std::mem::take(&mut data).into());
                        to.send(piece).await.map_err(|_| BodyError::WriteFailed)?;
                    }
                    count.fetch_add(used as u64, Ordering::Relaxed);
                    progress.moved();
                }
                if done {
                    break;
                }
                if used == 0 {
                    more(from).await?;
                }
            }
        }
    }
    // hyper drops the body once a length is complete: no end to hand it then.
    let _ = to.send(Piece::End).await;
    Ok(())
}

/// How a tunnel ended.
pub(super) struct Tunneled {
    pub sent: u64,
    pub received: u64,
    /// The stand-in that cut it, client to destination.
    pub cut: Option<Exfiltration>,
}

/// Copies one direction until its end (then shuts the other side's write
/// half down), scanning when asked; a stand-in stops it before the piece
/// that completes it is passed on.
async fn pump<R, W>(
    from: &mut Reader<R>,
    to: &mut W,
    mut scanner: Option<&mut Scanner<'_>>,
    count: &AtomicU64,
    progress: &Progress,
) -> Option<Exfiltration>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        if from.buffered().is_empty() {
            match from.fill().await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let data = from.buffered();
        if let Some(found) = scanner.as_deref_mut().and_then(|s| s.feed(data)) {
            return Some(found);
        }
        if send(to, data).await.is_err() {
            break;
        }
        let n = data.len();
        from.consume(n);
        count.fetch_add(n as u64, Ordering::Relaxed);
        progress.moved();
    }
    let _ = to.shutdown().await;
    None
}

/// Relays both ways until both directions ended, a stand-in cuts the
/// tunnel, or nothing moved for `idle`. Bytes already buffered in either
/// reader go first.
async fn relay_both<CR, CW, UR, UW>(
    client: &mut Reader<CR>,
    to_client: &mut CW,
    upstream: &mut Reader<UR>,
    to_upstream: &mut UW,
    mut scanner: Scanner<'_>,
    idle: Duration,
) -> Tunneled
where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    UR: AsyncRead + Unpin,
    UW: AsyncWrite + Unpin,
{
    let progress = Progress::new();
    let (sent, received) = (AtomicU64::new(0), AtomicU64::new(0));
    let scanning = (scanner.keep > 0).then_some(&mut scanner);
    let up = pump(client, to_upstream, scanning, &sent, &progress);
    let down = pump(upstream, to_client, None, &received, &progress);
    tokio::pin!(up, down);
    let mut cut = None;
    let transfer = async {
        let (mut up_done, mut down_done) = (false, false);
        while !(up_done && down_done) {
            tokio::select! {
                found = &mut up, if !up_done => {
                    up_done = true;
                    if found.is_some() {
                        return found;
                    }
                }
                _ = &mut down, if !down_done => down_done = true,
            }
        }
        None
    };
    tokio::select! {
        found = transfer => cut = found,
        () = progress.idle(idle) => {}
    }
    Tunneled {
        sent: sent.load(Ordering::Relaxed),
        received: received.load(Ordering::Relaxed),
        cut,
    }
}

/// Tunnels `client` (whose first bytes were already scanned with the
/// `CONNECT` head) to `upstream`: every stand-in the client sends cuts it.
/// Each side's reader buffers in its own lease.
pub(super) async fn tunnel<C: Io, U: Io>(
    client: (C, Lease),
    upstream: (U, Lease),
    shared: &Shared,
) -> Tunneled {
    let (client_read, mut to_client) = tokio::io::split(client.0);
    let (upstream_read, mut to_upstream) = tokio::io::split(upstream.0);
    let mut client = Reader::new(client_read, client.1);
    let mut upstream = Reader::new(upstream_read, upstream.1);
    relay_both(
        &mut client,
        &mut to_client,
        &mut upstream,
        &mut to_upstream,
        Scanner::new(&shared.secrets, None),
        shared.idle_timeout,
    )
    .await
}

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------

/// What one request or tunnel leaves in the egress record.
pub(super) struct Event {
    pub destination: String,
    pub method: Option<String>,
    pub path: Option<String>,
    pub status: Option<u16>,
    pub sent: u64,
    pub received: u64,
    pub decision: Decision,
    pub inspected: bool,
    /// Why it was refused, and the upstream's words ([`Event::refused`]).
    pub reason: Option<DenialReason>,
    pub detail: Option<String>,
    /// Once [`Event::arm`]ed, where a dropped event still goes: an exchange
    /// cut by the gateway's stop (its task aborted) is recorded too, so
    /// `close` loses no event.
    armed: Option<(Arc<EgressLog>, Instant)>,
}

impl Event {
    pub(super) fn new(destination: String, method: &str, inspected: bool) -> Event {
        Event {
            destination,
            method: Some(method.to_owned()),
            path: None,
            status: None,
            sent: 0,
            received: 0,
            decision: Decision::Denied,
            inspected,
            reason: None,
            detail: None,
            armed: None,
        }
    }

    /// Marks it refused by the gateway with `refused`'s status and reason
    /// (a malformed head has no denial: its parse error is the detail,
    /// stand-ins redacted as in the answer's body).
    pub(super) fn refused(&mut self, refused: &Refusal, secrets: &Secrets) {
        self.status = Some(refused.code());
        self.decision = Decision::Denied;
        match &refused.denied {
            Some((reason, detail)) => {
                self.reason = Some(*reason);
                self.detail = detail.clone();
            }
            None => self.detail = Some(secrets.redact(&refused.reason).into_owned()),
        }
    }

    /// Marks it refused for `reason` after it was allowed (a cut tunnel or body).
    pub(super) fn cut(&mut self, reason: DenialReason) {
        self.decision = Decision::Denied;
        self.reason = Some(reason);
    }

    /// Makes the event record itself if it is dropped before [`Event::push`].
    pub(super) fn arm(&mut self, shared: &Shared, start: Instant) {
        self.armed = Some((shared.egress.clone(), start));
    }

    pub(super) fn push(mut self, shared: &Shared, start: Instant) {
        self.armed = None;
        shared.egress.push(self.record(start));
    }

    fn record(&mut self, start: Instant) -> EgressEvent {
        EgressEvent {
            at: SystemTime::now(),
            destination: std::mem::take(&mut self.destination),
            method: self.method.take(),
            path: self.path.take(),
            status: self.status,
            bytes_sent: self.sent,
            bytes_received: self.received,
            duration: start.elapsed(),
            decision: self.decision,
            inspected: self.inspected,
            reason: self.reason,
            detail: self.detail.take(),
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Some((log, start)) = self.armed.take() {
            log.push(self.record(start));
        }
    }
}

// ---------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------

/// Where requests go.
enum Mode<'h> {
    /// The forward proxy: absolute-form `http://` targets, an upstream per
    /// destination (each resolved, vetted and counted against `Held`),
    /// `CONNECT` handed back to the caller.
    Proxy(&'h mut Held),
    /// Decrypted TLS to one destination: origin-form targets (or absolute
    /// ones naming it), its one upstream.
    Inspected(Destination),
}

/// How the engine writes to its client: the stream's own write half (the
/// proxy, which can give a `CONNECT`'s stream back whole), or a
/// [`PipeWriter`] feeding a writer task of its own (inspected TLS).
trait ToClient<C>: AsyncWrite + Unpin + Send {
    /// The client stream whole again, where this writer can give it back.
    fn rejoin(self, read: ReadHalf<C>) -> Option<C>;
}

impl<C: AsyncRead + AsyncWrite + Unpin> ToClient<C> for WriteHalf<C>
where
    WriteHalf<C>: Send,
{
    fn rejoin(self, read: ReadHalf<C>) -> Option<C> {
        Some(read.unsplit(self))
    }
}

impl<C> ToClient<C> for PipeWriter {
    fn rejoin(self, _read: ReadHalf<C>) -> Option<C> {
        None
    }
}

struct Engine<'a, C, W> {
    shared: &'a Shared,
    client: Reader<ReadHalf<C>>,
    to_client: W,
    upstream: Option<Upstream>,
    mode: Mode<'a>,
    served: u64,
}

/// A `CONNECT` read by the proxy engine, for [`proxy`] to decide.
pub(super) struct Connect<C> {
    pub head: Head,
    /// The head as received (scanned for stand-ins).
    pub raw: Vec<u8>,
    /// The client, with what it sent after the head still to be read.
    pub client: Rewound<C>,
    /// What held the client's reader buffer, for the tunnel's.
    pub lease: Lease,
    pub start: Instant,
}

/// What a request did to the connection.
enum Next {
    Continue,
    Close,
}

/// Serves a proxy client: plain-HTTP requests until the connection ends;
/// a `CONNECT` is returned (with the client) for the tunnel branch. The
/// client's reader buffers in `lease`.
pub(super) async fn serve_proxy(
    client: UnixStream,
    lease: Lease,
    shared: &Shared,
    held: &mut Held,
) -> Option<Connect<UnixStream>> {
    let (reader, to_client) = tokio::io::split(client);
    let engine = Engine {
        shared,
        client: Reader::new(reader, lease),
        to_client,
        upstream: None,
        mode: Mode::Proxy(held),
        served: 0,
    };
    engine.run().await
}

/// Serves an already-decrypted client stream whose requests all go to
/// `destination` over `upstream` (already connected and verified): the same
/// engine, but a request naming another host (`Host` or an absolute URL) is
/// refused with `HostMismatch`, `CONNECT` is refused, and events are marked
/// inspected. Returns when either side is done.
///
/// What goes to the client is encrypted and written by a task of its own
/// ([`super::pipe`]), so the destination's side (decrypting, scanning,
/// framing) and the client's (encrypting) run at once on the runtime's two
/// workers. When the engine ends, what it queued is still written (within
/// the idle timeout), as it would have been had the engine written it.
pub(super) async fn serve_inspected<C, U>(
    client: C,
    upstream: U,
    leases: InspectedLeases,
    destination: &Destination,
    shared: &Shared,
) where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    U: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let upstream = Upstream::start(
        destination.clone(),
        Box::new(upstream),
        leases.upstream,
        shared.max_header_bytes,
    )
    .await
    .ok();
    let (reader, to_client) = tokio::io::split(client);
    let (to_client, writer) = pipe(to_client, leases.to_client);
    let writer = tokio::spawn(writer);
    let stop_writer = writer.abort_handle();
    // Not left running if this connection's task is dropped (the gateway's stop).
    let _abort = AbortOnDrop(stop_writer.clone());
    let engine = Engine {
        shared,
        client: Reader::new(reader, leases.client),
        to_client,
        upstream,
        mode: Mode::Inspected(destination.clone()),
        served: 0,
    };
    if let Some(connect) = engine.run().await {
        // Not reached: run() hands CONNECT back only in proxy mode.
        drop(connect);
    }
    if timeout(shared.idle_timeout, writer).await.is_err() {
        stop_writer.abort();
    }
}

/// What an inspected connection's buffers are held in: the decrypted
/// client's reader, the destination's reader, the queue toward the child.
pub(super) struct InspectedLeases {
    pub client: Lease,
    pub upstream: Lease,
    pub to_client: Lease,
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<'a, C, W> Engine<'a, C, W>
where
    C: AsyncRead + AsyncWrite + Unpin + Send,
    W: ToClient<C>,
{
    async fn run(mut self) -> Option<Connect<C>> {
        loop {
            let raw = match self.next_head().await {
                None => return None,
                Some(Ok(raw)) => raw,
                Some(Err(refused)) => {
                    self.answer(&refused, false).await;
                    return None;
                }
            };
            let start = Instant::now();
            let head = match parse_head(&raw) {
                Ok(head) => head,
                Err(refused) => {
                    self.answer(&refused, false).await;
                    return None;
                }
            };
            if head.method.eq_ignore_ascii_case("CONNECT") {
                if matches!(self.mode, Mode::Proxy(_)) {
                    drop(self.upstream.take());
                    let (client, lease) = self.client.into_rewound();
                    let Rewound {
                        prefix,
                        start: from,
                        inner,
                    } = client;
                    let stream = self.to_client.rejoin(inner)?;
                    return Some(Connect {
                        head,
                        raw,
                        client: Rewound {
                            prefix,
                            start: from,
                            inner: stream,
                        },
                        lease,
                        start,
                    });
                }
                let refused = refusal(
                    "405 Method Not Allowed",
                    "CONNECT inside an inspected connection",
                );
                self.answer(&refused, false).await;
                return None;
            }
            self.served += 1;
            match self.request(head, start).await {
                Next::Continue => {}
                Next::Close => {
                    let _ = self.to_client.shutdown().await;
                    return None;
                }
            }
        }
    }

    /// The next request head. After the first request it waits (up to the
    /// idle timeout) for the client's next byte, and ends the connection
    /// when the open upstream closes first (or speaks unasked): the client
    /// then sees the destination's connection end as it would directly.
    async fn next_head(&mut self) -> Option<Result<Vec<u8>, Refusal>> {
        let shared = self.shared;
        if self.served > 0 {
            loop {
                while self.client.buffered().starts_with(b"\r\n") {
                    self.client.consume(2);
                }
                if !self.client.buffered().is_empty() && self.client.buffered() != b"\r" {
                    break;
                }
                let (client, upstream) = (&mut self.client, &mut self.upstream);
                let wait = async {
                    match upstream {
                        Some(upstream) => tokio::select! {
                            read = client.fill() => matches!(read, Ok(n) if n > 0),
                            // hyper ends the connection when the destination
                            // closes it or sends what no request asked for.
                            () = upstream.ended() => false,
                        },
                        None => matches!(client.fill().await, Ok(n) if n > 0),
                    }
                };
                match timeout(shared.idle_timeout, wait).await {
                    Ok(true) => {}
                    _ => return None,
                }
            }
        }
        match timeout(
            shared.handshake_timeout,
            self.client.read_head(shared.max_header_bytes),
        )
        .await
        {
            Ok(Ok(Some(raw))) => Some(Ok(raw)),
            Ok(Ok(None)) | Ok(Err(HeadError::Truncated)) => None,
            Ok(Err(HeadError::TooLarge)) => Some(Err(refusal(
                "431 Request Header Fields Too Large",
                "request head too large",
            ))),
            Ok(Err(HeadError::Io)) => Some(Err(refusal("400 Bad Request", "read error"))),
            Err(_) => Some(Err(refusal(
                "408 Request Timeout",
                "request head not received in time",
            ))),
        }
    }

    /// Writes the gateway's own answer; closes unless `keep_alive`.
    async fn answer(&mut self, refused: &Refusal, keep_alive: bool) {
        let _ = self
            .to_client
            .write_all(&connection::response(
                refused,
                keep_alive,
                &self.shared.secrets,
            ))
            .await;
        let _ = self.to_client.flush().await;
        if !keep_alive {
            let _ = self.to_client.shutdown().await;
        }
    }

    /// Answers a refusal, records the request, and says whether the
    /// connection goes on (`keep_alive`). Callers keep it only for a request
    /// refused for what it asks of an allowed destination (its rules, a
    /// stand-in in its head), when it had no body (all its bytes are then
    /// read, so the next request starts cleanly; the gateway never reads a
    /// body it refused) and the client did not ask to close. A refused
    /// destination, a malformed request or a failed upstream closes it.
    async fn refuse(
        &mut self,
        refused: Refusal,
        keep_alive: bool,
        mut event: Event,
        start: Instant,
    ) -> Next {
        event.refused(&refused, &self.shared.secrets);
        self.answer(&refused, keep_alive).await;
        event.push(self.shared, start);
        if keep_alive {
            Next::Continue
        } else {
            Next::Close
        }
    }

    /// The destination, origin-form path and `Host` value of a request.
    fn target(&self, head: &Head) -> Result<(Destination, String, String), Refusal> {
        match &self.mode {
            Mode::Proxy(_) => {
                let (destination, path) = absolute_form(&head.target)?;
                let host = host_value(&destination, 80);
                Ok((destination, path, host))
            }
            Mode::Inspected(destination) => {
                let default = destination.port;
                let path = if head.target.starts_with('/') {
                    head.target.split('#').next().unwrap_or("/").to_owned()
                } else if let Some(scheme_end) = head.target.find("://") {
                    let scheme = &head.target[..scheme_end];
                    if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http")
                    {
                        return Err(refusal("400 Bad Request", "unknown URL scheme"));
                    }
                    let (named, path) = split_url(&head.target[scheme_end + 3..], default)?;
                    if &named != destination {
                        return Err(self.mismatch(destination, head, &path));
                    }
                    path
                } else {
                    return Err(refusal("400 Bad Request", "malformed request target"));
                };
                for value in values(&head.headers, "host") {
                    if Destination::parse(value, Some(default)).ok().as_ref() != Some(destination) {
                        return Err(self.mismatch(destination, head, &path));
                    }
                }
                Ok((destination.clone(), path, host_value(destination, 443)))
            }
        }
    }

    fn mismatch(&self, destination: &Destination, head: &Head, path: &str) -> Refusal {
        connection::deny(
            self.shared,
            destination,
            DenialReason::HostMismatch,
            Some((head.method.clone(), path.to_owned())),
        )
    }

    /// Decides, forwards and relays one request.
    async fn request(&mut self, head: Head, start: Instant) -> Next {
        let shared = self.shared;
        let secrets = &shared.secrets;
        let inspected = matches!(self.mode, Mode::Inspected(_));
        let method = head.method.clone();
        let client_close = client_closes(&head);
        let mut event = Event::new("*".to_owned(), &method, inspected);
        event.arm(shared, start);
        let (destination, path, host) = match self.target(&head) {
            Ok(target) => target,
            Err(refused) => {
                if let Mode::Inspected(destination) = &self.mode {
                    event.destination = secrets.redact(&destination.to_string()).into_owned();
                }
                return self.refuse(refused, false, event, start).await;
            }
        };
        event.destination = secrets.redact(&destination.to_string()).into_owned();
        let shown_path = secrets.redact(&path).into_owned();
        event.path = Some(shown_path.clone());
        let request = || Some((method.clone(), shown_path.clone()));
        // Refused before anything else is decided: the body's end is not
        // certain, so the connection ends with it.
        if names_framing_header(&head.headers).is_some() {
            let refused = connection::deny(
                shared,
                &destination,
                DenialReason::MalformedRequest,
                request(),
            );
            return self.refuse(refused, false, event, start).await;
        }
        let framing = match request_framing(&head) {
            Ok(framing) => framing,
            Err(refused) => return self.refuse(refused, false, event, start).await,
        };
        let keep = !client_close && framing == Framing::None;

        let Some(access) = shared.allowlist.access(&destination) else {
            // A refused destination ends the connection, as it always did
            // (and as a refused CONNECT does); only a request refused for
            // what it asks of an allowed destination lets the next one come.
            let refused = connection::deny(shared, &destination, DenialReason::NotAllowed, None);
            return self.refuse(refused, false, event, start).await;
        };
        let upgrade = requested_upgrade(&head);
        // Refused for what it asks of an allowed destination, the
        // connection may go on.
        let checked = decide(
            &head,
            &path,
            &destination,
            &access,
            upgrade.as_deref(),
            secrets,
        );
        let (forwarded_path, headers) = match checked {
            Ok(forwarded) => forwarded,
            Err(reason) => {
                let refused = connection::deny(shared, &destination, reason, request());
                return self.refuse(refused, keep, event, start).await;
            }
        };
        if let Err(refused) = self.upstream_for(&destination).await {
            return self.refuse(refused, false, event, start).await;
        }
        // Allowed from here on: an exchange cut before its end is recorded so.
        event.decision = Decision::Allowed;

        let connection = forwarded_connection(upgrade.as_deref(), client_close);
        let fields = forwarded_fields(&head, &headers, &host, connection, upgrade.as_deref());
        drop(headers);
        let framed_by_hyper: Vec<(String, String)> = fields
            .into_iter()
            .filter(|(name, _)| {
                !name.eq_ignore_ascii_case("content-length")
                    && !name.eq_ignore_ascii_case("transfer-encoding")
            })
            .collect();
        let (mut forwarded, feed) = match upstream::request(
            &method,
            &head.version,
            &forwarded_path,
            &framed_by_hyper,
            framing,
        ) {
            Ok(forwarded) => forwarded,
            Err(why) => {
                return self
                    .refuse(refusal("400 Bad Request", why), false, event, start)
                    .await
            }
        };
        drop(framed_by_hyper);
        let (interim_to, mut interim) = tokio::sync::mpsc::unbounded_channel();
        hyper::ext::on_informational(&mut forwarded, move |response| {
            let head =
                upstream::interim_head(response.version(), response.status(), response.headers());
            let _ = interim_to.send(head);
        });
        let to_head = method.eq_ignore_ascii_case("HEAD");
        let Some(up) = self.upstream.as_mut() else {
            return Next::Close;
        };
        let reused = up.used;
        let pending = match up.send(forwarded).await {
            Ok(pending) => pending,
            Err(()) => {
                self.upstream = None;
                if reused {
                    // The destination closed a kept-alive connection: end
                    // the client's too, as the destination itself would.
                    event.push(shared, start);
                    return Next::Close;
                }
                let refused = connection::fail_request(
                    shared,
                    &destination,
                    DenialReason::UpstreamFailed,
                    "destination closed the connection",
                    request(),
                );
                return self.refuse(refused, false, event, start).await;
            }
        };

        let progress = Progress::new();
        let (sent, received) = (AtomicU64::new(0), AtomicU64::new(0));
        let mut body_end: Option<Result<(), BodyError>> = None;
        let mut response_end: Option<Response> = None;
        {
            let Engine {
                client, to_client, ..
            } = &mut *self;
            let mut scanner = Scanner::new(secrets, Some(&destination));
            let scanning = (scanner.keep > 0).then_some(&mut scanner);
            let body = forward_body(client, feed, framing, scanning, &sent, &progress);
            let response = upstream::relay_response(
                pending,
                &mut interim,
                to_client,
                to_head,
                upgrade.is_some(),
                &received,
                &progress,
            );
            tokio::pin!(body, response);
            let exchange = async {
                loop {
                    tokio::select! {
                        end = &mut body, if body_end.is_none() => {
                            let stop = matches!(end, Err(BodyError::Exfiltrated | BodyError::Malformed(_)));
                            body_end = Some(end);
                            if stop {
                                break;
                            }
                        }
                        end = &mut response, if response_end.is_none() => response_end = Some(end),
                    }
                    if body_end.is_some() && response_end.is_some() {
                        break;
                    }
                }
            };
            tokio::select! {
                () = exchange => {}
                () = progress.idle(shared.idle_timeout) => {}
            }
        }
        event.sent = sent.load(Ordering::Relaxed);
        event.received = received.load(Ordering::Relaxed);
        let answered = event.received > 0;

        match body_end {
            Some(Err(BodyError::Exfiltrated)) => {
                self.upstream = None;
                let refused = connection::deny(
                    shared,
                    &destination,
                    DenialReason::SecretExfiltration,
                    request(),
                );
                if answered {
                    event.cut(DenialReason::SecretExfiltration);
                    event.push(shared, start);
                    return Next::Close;
                }
                return self.refuse(refused, false, event, start).await;
            }
            Some(Err(BodyError::Malformed(why))) => {
                self.upstream = None;
                if answered {
                    event.push(shared, start);
                    return Next::Close;
                }
                return self
                    .refuse(refusal("400 Bad Request", why), false, event, start)
                    .await;
            }
            _ => {}
        }
        let body_complete = matches!(body_end, Some(Ok(())));
        match response_end {
            Some(Response::Done { status, close }) => {
                event.status = Some(status);
                event.decision = Decision::Allowed;
                event.push(shared, start);
                if close || !body_complete {
                    self.upstream = None;
                    return Next::Close;
                }
                if client_close {
                    return Next::Close;
                }
                Next::Continue
            }
            Some(Response::Upgraded(switching)) => {
                let Some(mut up) = self.upstream.take() else {
                    return Next::Close;
                };
                event.status = Some(101);
                event.decision = Decision::Allowed;
                let switched = timeout(shared.idle_timeout, switching).await;
                let Ok(Ok(switched)) = switched else {
                    event.push(shared, start);
                    return Next::Close;
                };
                let lease = up.lease.split_off(FIRST_ROOM);
                drop(up);
                let (from_upstream, mut to_upstream) =
                    tokio::io::split(hyper_util::rt::TokioIo::new(switched));
                let mut from_upstream = Reader::new(from_upstream, lease);
                let tunneled = relay_both(
                    &mut self.client,
                    &mut self.to_client,
                    &mut from_upstream,
                    &mut to_upstream,
                    Scanner::new(secrets, None),
                    shared.idle_timeout,
                )
                .await;
                event.sent += tunneled.sent;
                event.received += tunneled.received;
                if tunneled.cut.is_some() {
                    connection::deny(
                        shared,
                        &destination,
                        DenialReason::SecretExfiltration,
                        request(),
                    );
                    event.cut(DenialReason::SecretExfiltration);
                }
                event.push(shared, start);
                Next::Close
            }
            Some(Response::Failed(failure)) => {
                self.upstream = None;
                if answered || (reused && failure == Failure::Closed) {
                    event.decision = Decision::Allowed;
                    event.push(shared, start);
                    return Next::Close;
                }
                let why = match failure {
                    Failure::Closed => "destination closed the connection",
                    Failure::Bad(why) => why,
                };
                let refused = connection::fail_request(
                    shared,
                    &destination,
                    DenialReason::UpstreamFailed,
                    why,
                    request(),
                );
                self.refuse(refused, false, event, start).await
            }
            None => {
                // Idle too long (or the body stopped early and the response never came).
                self.upstream = None;
                if !answered && !matches!(body_end, Some(Err(BodyError::ReadEnded))) {
                    let refused = connection::fail_request(
                        shared,
                        &destination,
                        DenialReason::UpstreamTimeout,
                        format!("no answer within {:?}", shared.idle_timeout),
                        request(),
                    );
                    return self.refuse(refused, false, event, start).await;
                }
                event.decision = Decision::Allowed;
                event.push(shared, start);
                Next::Close
            }
        }
    }

    /// Makes the upstream for `destination` current: the open one when it
    /// goes there, else (proxy) a new one, resolved and vetted again.
    async fn upstream_for(&mut self, destination: &Destination) -> Result<(), Refusal> {
        if self
            .upstream
            .as_ref()
            .is_some_and(|up| &up.destination == destination)
        {
            return Ok(());
        }
        match &mut self.mode {
            Mode::Inspected(_) => Err(connection::fail(
                self.shared,
                destination,
                DenialReason::UpstreamFailed,
                "destination closed the connection",
            )),
            Mode::Proxy(held) => {
                self.upstream = None;
                let lease = connection::lease(self.shared, destination, FIRST_ROOM)?;
                let stream = connection::open(destination, self.shared, held).await?;
                let started = Upstream::start(
                    destination.clone(),
                    Box::new(stream),
                    lease,
                    self.shared.max_header_bytes,
                )
                .await
                .map_err(|_| {
                    connection::fail(
                        self.shared,
                        destination,
                        DenialReason::UpstreamFailed,
                        "destination closed the connection",
                    )
                })?;
                self.upstream = Some(started);
                Ok(())
            }
        }
    }
}

/// Whether the client asked to close after this request (HTTP/1.0, or
/// `Connection: close`).
fn client_closes(head: &Head) -> bool {
    head.version == "HTTP/1.0"
        || connection_tokens(&head.headers)
            .iter()
            .any(|t| t == "close")
}

/// The `Connection` value of a forwarded head.
fn forwarded_connection(upgrade: Option<&str>, client_close: bool) -> &'static str {
    if upgrade.is_some() {
        "Upgrade"
    } else if client_close {
        "close"
    } else {
        "keep-alive"
    }
}

/// What a request asks of an allowed destination, decided: its rules, then
/// the stand-ins in its head; `Ok` is the path and headers to forward.
/// The rules are checked on the request as the client sent it and again as
/// it will be forwarded (values swapped in), so a value can never carry a
/// request outside them; a value that cannot stand in the request line as
/// is would change its shape and is refused (docs/security.md "Secrets").
/// After a switch the gateway reads nothing more: a destination whose rules
/// must read each request may switch only to WebSocket (whose messages are
/// not requests), never to another HTTP (h2c) carrying requests the rules
/// never saw.
fn decide(
    head: &Head,
    path: &str,
    destination: &Destination,
    access: &Access<'_>,
    upgrade: Option<&str>,
    secrets: &Secrets,
) -> Result<(String, Vec<(String, String)>), DenialReason> {
    let switches_past_rules =
        access.restricts_requests() && upgrade.is_some_and(|u| !only_websocket(u));
    if !access.permits(&head.method, path) || switches_past_rules {
        return Err(DenialReason::RequestNotAllowed);
    }
    let forwarded = substitute_head(head, path, destination, secrets)
        .map_err(|_| DenialReason::SecretExfiltration)?;
    if secrets.unplaceable_in_target(&head.target).is_some() {
        return Err(DenialReason::SecretPlacement);
    }
    if !access.permits(&head.method, &forwarded.0) {
        return Err(DenialReason::RequestNotAllowed);
    }
    Ok(forwarded)
}

/// The `Upgrade` value when the request asks for one (HTTP/1.1, listed in
/// `Connection`).
fn requested_upgrade(head: &Head) -> Option<String> {
    if head.version != "HTTP/1.1"
        || !connection_tokens(&head.headers)
            .iter()
            .any(|t| t == "upgrade")
    {
        return None;
    }
    let mut offered = values(&head.headers, "upgrade");
    let first = offered.next()?;
    (offered.next().is_none() && !first.is_empty()).then(|| first.to_owned())
}

/// Whether every protocol an `Upgrade` value offers is WebSocket
/// (`websocket`, any case, with or without a version).
fn only_websocket(upgrade: &str) -> bool {
    upgrade.split(',').all(|offered| {
        offered
            .trim()
            .split('/')
            .next()
            .is_some_and(|name| name.eq_ignore_ascii_case("websocket"))
    })
}

/// The request line's path and header values with stand-ins swapped for
/// `destination`; a stand-in whose secret may not go there (in the target,
/// a value or a field name), or a swapped `TRACE` (which would echo the
/// value back), refuses the request.
fn substitute_head(
    head: &Head,
    path: &str,
    destination: &Destination,
    secrets: &Secrets,
) -> Result<(String, Vec<(String, String)>), Exfiltration> {
    if secrets.is_empty() {
        return Ok((path.to_owned(), head.headers.clone()));
    }
    secrets.substitute(&head.target, destination)?;
    let forwarded = secrets.substitute(path, destination)?;
    let mut swapped = matches!(forwarded, std::borrow::Cow::Owned(_));
    let mut headers = Vec::with_capacity(head.headers.len());
    for (name, value) in &head.headers {
        if let Some(found) = secrets.find_bound_elsewhere(name.as_bytes(), None) {
            return Err(found);
        }
        let value = secrets.substitute(value, destination)?;
        swapped |= matches!(value, std::borrow::Cow::Owned(_));
        headers.push((name.clone(), value.into_owned()));
    }
    if swapped && head.method.eq_ignore_ascii_case("TRACE") {
        let name = secrets
            .find_bound_elsewhere(head_text(head).as_bytes(), None)
            .map(|found| found.name)
            .unwrap_or_default();
        return Err(Exfiltration { name });
    }
    Ok((forwarded.into_owned(), headers))
}

fn head_text(head: &Head) -> String {
    let mut text = head.target.clone();
    for (name, value) in &head.headers {
        text.push_str(name);
        text.push_str(value);
    }
    text
}

/// The `Host` value for `destination`, without the scheme's default port.
fn host_value(destination: &Destination, default_port: u16) -> String {
    if destination.port == default_port {
        destination.host.to_string()
    } else {
        destination.to_string()
    }
}

/// `http://host[:port]/path?query` into its destination and origin-form path.
pub(super) fn absolute_form(target: &str) -> Result<(Destination, String), Refusal> {
    let scheme_end = target.find("://").unwrap_or(0);
    if scheme_end == 0 {
        return Err(refusal(
            "400 Bad Request",
            "a proxy request needs an absolute http:// URL (use CONNECT for https)",
        ));
    }
    if !target[..scheme_end].eq_ignore_ascii_case("http") {
        return Err(refusal(
            "400 Bad Request",
            "only http:// URLs are forwarded (use CONNECT for https)",
        ));
    }
    split_url(&target[scheme_end + 3..], 80)
}

/// `authority[/path]` (after the scheme) into a destination and a path.
fn split_url(after: &str, default_port: u16) -> Result<(Destination, String), Refusal> {
    let split = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, path) = after.split_at(split);
    if authority.contains('@') {
        return Err(refusal(
            "400 Bad Request",
            "URLs with user information are refused",
        ));
    }
    let destination = Destination::parse(authority, Some(default_port))
        .map_err(|why| refusal("400 Bad Request", format!("URL host {why}")))?;
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('/') => p.split('#').next().unwrap_or("/").to_owned(),
        p => format!("/{}", p.split('#').next().unwrap_or_default()),
    };
    Ok((destination, path))
}

/// The request head as the destination sees it: origin-form, its own
/// `Host`, hop-by-hop and proxy headers removed, one `Connection` (and the
/// `Upgrade` asked for, if any). `Content-Length` and `Transfer-Encoding`
/// are kept whatever `Connection` lists: the forwarded head is framed as
/// the gateway read it, always. `headers` are `head`'s with values swapped
/// in; what is hop-by-hop is what the client's `Connection` listed, so a
/// swapped value can never drop a header (docs/security.md "Secrets").
fn origin_form(
    head: &Head,
    headers: &[(String, String)],
    host: &str,
    path: &str,
    connection: &str,
    upgrade: Option<&str>,
) -> Vec<u8> {
    let (method, version) = (&head.method, &head.version);
    let mut out = format!("{method} {path} {version}\r\n");
    for (name, value) in forwarded_fields(head, headers, host, connection, upgrade) {
        out.push_str(&name);
        out.push_str(": ");
        out.push_str(&value);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// The fields of the head [`origin_form`] writes, in order: `Host`, the
/// client's fields but hop-by-hop and proxy ones, the `Upgrade` asked for,
/// one `Connection`. The engine hands these to hyper without the framing
/// fields, which hyper writes from the body it forwards.
fn forwarded_fields(
    head: &Head,
    headers: &[(String, String)],
    host: &str,
    connection: &str,
    upgrade: Option<&str>,
) -> Vec<(String, String)> {
    let listed = connection_tokens(&head.headers);
    let mut fields = vec![("Host".to_owned(), host.to_owned())];
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        let hop = matches!(
            lower.as_str(),
            "host"
                | "connection"
                | "proxy-connection"
                | "keep-alive"
                | "proxy-authorization"
                | "proxy-authenticate"
                | "te"
                | "trailer"
                | "upgrade"
        ) || (listed.contains(&lower)
            && !NOT_NAMED_IN_CONNECTION.contains(&lower.as_str()));
        if !hop {
            fields.push((name.clone(), value.clone()));
        }
    }
    if let Some(upgrade) = upgrade {
        fields.push(("Upgrade".to_owned(), upgrade.to_owned()));
    }
    fields.push(("Connection".to_owned(), connection.to_owned()));
    fields
}

// ---------------------------------------------------------------------------
// Fuzz checks
// ---------------------------------------------------------------------------

/// The fuzz target's check (`fuzz/fuzz_targets/request_head.rs`): parses
/// `bytes` as a request head and, when it is accepted and its URL is, checks
/// what the destination would receive. Panics when the rewrite could carry
/// a control byte, a second line, a second `Host` or a proxy credential.
pub(super) fn check_request_head(bytes: &[u8]) {
    let Ok(head) = parse_head(bytes) else {
        return;
    };
    assert!(head.version == "HTTP/1.1" || head.version == "HTTP/1.0");
    let _ = request_framing(&head);
    if head.method.eq_ignore_ascii_case("CONNECT") {
        return;
    }
    let Ok((destination, path)) = absolute_form(&head.target) else {
        return;
    };
    let upgrade = requested_upgrade(&head);
    let connection = if upgrade.is_some() {
        "Upgrade"
    } else {
        "close"
    };
    let rewritten = origin_form(
        &head,
        &head.headers,
        &host_value(&destination, 80),
        &path,
        connection,
        upgrade.as_deref(),
    );
    let text = std::str::from_utf8(&rewritten).expect("the rewrite is UTF-8");
    let body = text
        .strip_suffix("\r\n\r\n")
        .expect("one blank line ends the head");
    let lines: Vec<&str> = body.split("\r\n").collect();
    for line in &lines {
        assert!(
            !line.bytes().any(|b| is_control(b) && b != b'\t'),
            "control byte in {line:?}"
        );
    }
    let named = |wanted: &str| {
        lines[1..]
            .iter()
            .filter(|line| {
                let name = line.split(':').next().unwrap_or_default();
                name.eq_ignore_ascii_case(wanted)
            })
            .count()
    };
    assert_eq!(named("host"), 1, "{text:?}");
    assert_eq!(named("proxy-authorization"), 0, "{text:?}");
    assert_eq!(named("connection"), 1, "{text:?}");
    assert!(named("upgrade") <= 1, "{text:?}");
    assert_eq!(lines[0].split(' ').count(), 3, "{text:?}");
    // The framing invariant: the forwarded head is framed exactly as the
    // gateway read it, whatever `Connection` lists (a head naming a framing
    // header there is refused by the engine, and would be framed the same).
    let framing_of = |headers: &[(String, String)]| {
        let mut framing: Vec<(String, String)> = headers
            .iter()
            .filter(|(name, _)| {
                name.eq_ignore_ascii_case("content-length")
                    || name.eq_ignore_ascii_case("transfer-encoding")
            })
            .map(|(name, value)| (name.to_ascii_lowercase(), value.clone()))
            .collect();
        framing.sort();
        framing
    };
    let reparsed = parse_head(body.as_bytes()).expect("the rewrite parses as strictly");
    assert_eq!(
        framing_of(&head.headers),
        framing_of(&reparsed.headers),
        "{text:?}"
    );
    assert_eq!(
        request_framing(&head).ok(),
        request_framing(&reparsed).ok(),
        "{text:?}"
    );
}

/// A request head as the gateway would forward it, and its body's framing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    pub head: Vec<u8>,
    pub framing: Framing,
}

/// The head the plain-HTTP proxy would forward for the request head `raw`
/// (without its blank line), or why it refuses it: the engine's own steps
/// in its order (parse, target, framing, destination, [`decide`],
/// [`origin_form`]) without I/O, so the fuzz targets judge what the engine
/// decides. `allowlist: None` allows the named destination with no rules.
pub(super) fn forward_request(
    raw: &[u8],
    allowlist: Option<&Allowlist>,
    secrets: &Secrets,
) -> Result<Forwarded, String> {
    let head = parse_head(raw).map_err(|refused| refused.reason)?;
    if head.method.eq_ignore_ascii_case("CONNECT") {
        return Err("CONNECT opens a tunnel".to_owned());
    }
    let (destination, path) = absolute_form(&head.target).map_err(|refused| refused.reason)?;
    if let Some(named) = names_framing_header(&head.headers) {
        return Err(format!("Connection names {named}"));
    }
    let framing = request_framing(&head).map_err(|refused| refused.reason)?;
    let open = Rule::destination(Pattern {
        host: HostPattern::Exact(destination.host.clone()),
        port: PortPattern::Exact(destination.port),
    });
    let access = match allowlist {
        Some(allowlist) => allowlist.access(&destination),
        None => Access::new(vec![&open]),
    }
    .ok_or_else(|| format!("{:?}", DenialReason::NotAllowed))?;
    let upgrade = requested_upgrade(&head);
    let (path, headers) = decide(
        &head,
        &path,
        &destination,
        &access,
        upgrade.as_deref(),
        secrets,
    )
    .map_err(|reason| format!("{reason:?}"))?;
    let head = origin_form(
        &head,
        &headers,
        &host_value(&destination, 80),
        &path,
        forwarded_connection(upgrade.as_deref(), client_closes(&head)),
        upgrade.as_deref(),
    );
    Ok(Forwarded { head, framing })
}

/// The fuzz check of the response parser (`fuzz_targets/response_head.rs`):
/// an accepted head, relayed verbatim, has exactly the lines it parsed (no
/// hidden line), no control byte but HTAB, one framing of its body.
pub(super) fn check_response_head(bytes: &[u8]) {
    let Ok(response) = parse_response_head(bytes) else {
        return;
    };
    assert!((100..=999).contains(&response.status));
    let lines: Vec<&[u8]> = split_crlf(bytes).collect();
    assert_eq!(lines.len(), response.headers.len() + 1);
    for line in &lines {
        assert!(
            !line.iter().any(|&b| is_control(b) && b != b'\t'),
            "{line:?}"
        );
    }
    let both = values(&response.headers, "content-length").next().is_some()
        && values(&response.headers, "transfer-encoding")
            .next()
            .is_some();
    assert!(!both);
    for to_head in [false, true] {
        let _ = response_framing(to_head, &response);
    }
}

/// The fuzz check of the chunked decoder (`fuzz_targets/chunked.rs`): the
/// same bytes give the same data and verdict however reads split them (the
/// first byte picks the split), every step stays inside its input, and
/// accepted framing lines hold no control byte but HTAB.
pub(super) fn check_chunked(bytes: &[u8]) {
    let Some((&split, input)) = bytes.split_first() else {
        return;
    };
    let whole = decode_chunked(input, input.len());
    let pieces = decode_chunked(input, usize::from(split % 7) + 1);
    assert_eq!(whole, pieces);
    if let (Ok(end), _) = &whole {
        let framing_checked = &input[..*end];
        assert!(framing_checked.ends_with(b"\r\n"));
    }
}

/// Decodes `input` arriving `piece` bytes at a time: the verdict (`Ok(end)`,
/// `Err` or incomplete as `Err("incomplete")`) and the data.
fn decode_chunked(input: &[u8], piece: usize) -> (Result<usize, &'static str>, Vec<u8>) {
    let mut decoder = Chunked::new();
    let mut data = Vec::new();
    let (mut used, mut available) = (0, piece.min(input.len()));
    loop {
        let window = &input[used..available];
        match decoder.step(window) {
            Err(why) => return (Err(why).map_err(|_: &str| "error"), data),
            Ok(Step::More) => {
                if available == input.len() {
                    return (Err("incomplete"), data);
                }
                available = (available + piece).min(input.len());
            }
            Ok(Step::Framing(n)) => {
                assert!(n > 0 && n <= window.len());
                let line = &window[..n];
                assert!(line.ends_with(b"\r\n"));
                assert!(!line[..n - 2].iter().any(|&b| is_control(b) && b != b'\t'));
                used += n;
            }
            Ok(Step::Data(n)) => {
                assert!(n > 0 && n <= window.len());
                data.extend_from_slice(&window[..n]);
                used += n;
            }
            Ok(Step::Done(n)) => {
                assert!(n == 2 && window.starts_with(b"\r\n"));
                return (Ok(used + n), data);
            }
        }
    }
}

#[cfg(test)]
mod differential;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::memory::Memory;
    use tokio::io::AsyncReadExt;

    /// A stream that yields the given reads in order (each ready at once),
    /// then `Pending` for good; counts how often it was polled.
    struct Scripted {
        reads: std::collections::VecDeque<std::io::Result<Vec<u8>>>,
        polls: usize,
    }

    impl AsyncRead for Scripted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.polls += 1;
            match self.reads.pop_front() {
                Some(Ok(mut bytes)) => {
                    // What does not fit is read next time.
                    let n = bytes.len().min(buf.remaining());
                    buf.put_slice(&bytes[..n]);
                    if n < bytes.len() {
                        self.reads.push_front(Ok(bytes.split_off(n)));
                    }
                    Poll::Ready(Ok(()))
                }
                Some(Err(error)) => Poll::Ready(Err(error)),
                None => Poll::Pending,
            }
        }
    }

    fn scripted(reads: Vec<std::io::Result<Vec<u8>>>) -> Reader<Scripted> {
        scripted_within(reads, &Memory::new(usize::MAX / 2))
    }

    fn scripted_within(
        reads: Vec<std::io::Result<Vec<u8>>>,
        memory: &Arc<Memory>,
    ) -> Reader<Scripted> {
        Reader::new(
            Scripted {
                reads: reads.into(),
                polls: 0,
            },
            memory.lease(FIRST_ROOM).unwrap(),
        )
    }

    fn fill_now<R: AsyncRead + Unpin>(reader: &mut Reader<R>) -> Poll<std::io::Result<usize>> {
        let mut fill = std::pin::pin!(reader.fill());
        std::future::Future::poll(
            fill.as_mut(),
            &mut Context::from_waker(std::task::Waker::noop()),
        )
    }

    /// One fill takes every piece already there (a TLS stream gives one
    /// record per read), in order, and no more than READ_SIZE.
    #[test]
    fn a_fill_takes_all_that_is_ready_in_order() {
        let pieces: Vec<Vec<u8>> = (0..12u8).map(|i| vec![i; 16 * 1024]).collect();
        let mut reader = scripted(pieces.iter().cloned().map(Ok).collect());
        reader.room = READ_SIZE;
        let Poll::Ready(Ok(n)) = fill_now(&mut reader) else {
            panic!("the first fill did not complete");
        };
        assert_eq!(n, READ_SIZE);
        assert!(reader.buffered() == pieces[..8].concat().as_slice());
        reader.consume(READ_SIZE);
        assert!(matches!(fill_now(&mut reader), Poll::Ready(Ok(n)) if n == 4 * 16 * 1024));
        assert!(reader.buffered() == pieces[8..].concat().as_slice());
        // Nothing more is ready: the fill waits.
        assert!(fill_now(&mut reader).is_pending());
    }

    /// A connection starts with a small buffer, grown while fills use all
    /// of it, up to READ_SIZE.
    /// How much each of `fills` fills took, each consumed at once.
    fn fill_sizes<R: AsyncRead + Unpin>(reader: &mut Reader<R>, fills: usize) -> Vec<usize> {
        (0..fills)
            .map(|_| {
                let Poll::Ready(Ok(n)) = fill_now(reader) else {
                    panic!("a fill did not complete");
                };
                reader.consume(n);
                n
            })
            .collect()
    }

    #[test]
    fn the_buffer_grows_only_while_fills_use_it_all() {
        let mut small = scripted(vec![Ok(b"GET / HTTP/1.1\r\n\r\n".to_vec())]);
        assert!(fill_now(&mut small).is_ready());
        assert_eq!((small.room, small.buffer.len()), (FIRST_ROOM, FIRST_ROOM));
        let mut bulk = scripted((0..20).map(|_| Ok(vec![1u8; 16 * 1024])).collect());
        let sizes = fill_sizes(&mut bulk, 5);
        assert_eq!(sizes, [16, 32, 64, 128, 80].map(|k| k * 1024));
    }

    /// A reader's buffer grows only with what the gateway's memory budget
    /// has free: a fill then takes less (its floor at worst), never more.
    #[test]
    fn the_buffer_grows_only_with_what_the_budget_has_free() {
        let memory = Memory::new(FIRST_ROOM + 40 * 1024);
        let mut bulk =
            scripted_within((0..20).map(|_| Ok(vec![1u8; 16 * 1024])).collect(), &memory);
        let sizes = fill_sizes(&mut bulk, 5);
        assert_eq!(sizes, [16, 32, 56, 56, 56].map(|k| k * 1024));
        assert_eq!(bulk.buffer.len(), 56 * 1024);
        assert_eq!(memory.in_use(), memory.limit());
        drop(bulk);
        assert_eq!(memory.in_use(), 0, "given back with the reader");
    }

    /// With its buffer full of unused bytes and the budget taken, a fill
    /// waits, and reads on once bytes are given back.
    #[test]
    fn a_full_reader_waits_for_the_budget() {
        let memory = Memory::new(FIRST_ROOM + 1024);
        let mut reader =
            scripted_within(vec![Ok(vec![1u8; FIRST_ROOM]), Ok(vec![2u8; 512])], &memory);
        let others = memory.lease(1024).unwrap();
        assert!(matches!(fill_now(&mut reader), Poll::Ready(Ok(n)) if n == FIRST_ROOM));
        assert!(fill_now(&mut reader).is_pending(), "no room, none free");
        drop(others);
        assert!(matches!(fill_now(&mut reader), Poll::Ready(Ok(512))));
        assert_eq!(reader.buffered().len(), FIRST_ROOM + 512);
    }

    /// An error after some bytes: the bytes first, the error on the next
    /// fill (not lost, not turned into an end of stream).
    #[test]
    fn an_error_after_bytes_comes_on_the_next_fill() {
        let mut reader = scripted(vec![
            Ok(b"abc".to_vec()),
            Err(std::io::ErrorKind::ConnectionReset.into()),
            Ok(Vec::new()),
        ]);
        assert!(matches!(fill_now(&mut reader), Poll::Ready(Ok(3))));
        assert_eq!(reader.buffered(), b"abc");
        let polls = reader.inner.polls;
        let Poll::Ready(Err(error)) = fill_now(&mut reader) else {
            panic!("the error was not returned");
        };
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset);
        assert_eq!(reader.inner.polls, polls, "the stream was read again");
        assert_eq!(reader.buffered(), b"abc");
    }

    #[test]
    fn absolute_form_is_rewritten() {
        let (destination, path) = absolute_form("http://Example.com:8080/a?b=1#frag").unwrap();
        assert_eq!(destination.to_string(), "example.com:8080");
        assert_eq!(path, "/a?b=1");
        let (destination, path) = absolute_form("http://example.com").unwrap();
        assert_eq!((destination.port, path.as_str()), (80, "/"));
        assert!(absolute_form("/relative").is_err());
        assert!(absolute_form("https://example.com/").is_err());
        assert!(absolute_form("http://user@example.com/").is_err());
        assert!(absolute_form("http://[::1]:81/").is_ok());
    }

    fn forwarded(head: &Head, connection: &str) -> String {
        let (destination, path) = absolute_form(&head.target).unwrap();
        let upgrade = requested_upgrade(head);
        String::from_utf8(origin_form(
            head,
            &head.headers,
            &host_value(&destination, 80),
            &path,
            connection,
            upgrade.as_deref(),
        ))
        .unwrap()
    }

    #[test]
    fn origin_form_drops_hop_by_hop_headers() {
        let head = parse_head(
            b"GET http://a.test/x HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: x\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nAccept: */*",
        )
        .unwrap();
        assert_eq!(
            forwarded(&head, "keep-alive"),
            "GET /x HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n"
        );
        let upgrade = parse_head(
            b"GET http://a.test:81/ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k",
        )
        .unwrap();
        assert_eq!(
            forwarded(&upgrade, "Upgrade"),
            "GET /ws HTTP/1.1\r\nHost: a.test:81\r\nSec-WebSocket-Key: k\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        );
    }

    #[test]
    fn only_a_websocket_upgrade_counts_as_websocket() {
        for yes in [
            "websocket",
            "WebSocket",
            "websocket/13",
            " websocket , WEBSOCKET",
        ] {
            assert!(only_websocket(yes), "{yes}");
        }
        for no in ["h2c", "H2C", "websocket, h2c", "TLS/1.2", "", "websocketx"] {
            assert!(!only_websocket(no), "{no}");
        }
    }

    #[test]
    fn malformed_heads_are_refused() {
        assert!(parse_head(b"GET  http://a/ HTTP/1.1").is_err());
        assert!(parse_head(b"GET http://a/ SPDY/3").is_err());
        assert!(parse_head(b"GET http://a/ HTTP/1.1\r\nBad Name: x").is_err());
        assert!(parse_head(b"GET http://a/ HTTP/1.1\r\n folded").is_err());
    }

    fn refused(head: &[u8]) -> String {
        match parse_head(head) {
            Ok(parsed) => panic!("accepted {:?} as {:?}", head, parsed.headers),
            Err(refused) => {
                assert_eq!(refused.status, "400 Bad Request");
                refused.reason
            }
        }
    }

    #[test]
    fn a_bare_line_feed_or_carriage_return_is_refused_anywhere() {
        // The smuggling request an attack used: a bare LF in the request line and in a header.
        let why = refused(
            b"GET http://allowed.test/ HTTP/1.1\nHost:internal.example\r\nAccept: */*\nProxy-Authorization: smuggled",
        );
        assert_eq!(why, "control character in the request line");
        assert_eq!(
            refused(b"GET http://a/ HTTP/1.1\r\nAccept: */*\nProxy-Authorization: smuggled"),
            "control character in a header field"
        );
        refused(b"GET http://a/ HTTP/1.1\r\nAccept: a\rb");
        refused(b"GET http://a/x\ry HTTP/1.1");
        refused(b"GET http://a/ HTTP/1.1\r\nX-\nName: 1");
    }

    #[test]
    fn other_control_bytes_are_refused_and_a_tab_only_inside_a_value() {
        for byte in (0u8..0x20).chain([0x7f]) {
            let line = [b"GET http://a/ HTTP/1.1\r\nX: a".as_slice(), &[byte], b"b"].concat();
            if byte == b'\t' {
                let head = parse_head(&line).unwrap();
                assert_eq!(head.headers, [("X".to_owned(), "a\tb".to_owned())]);
            } else {
                refused(&line);
            }
            refused(&[b"GET http://a/".as_slice(), &[byte], b" HTTP/1.1"].concat());
        }
        refused(b"GET\thttp://a/ HTTP/1.1");
    }

    #[test]
    fn only_http_1_0_and_1_1_are_accepted() {
        for version in ["HTTP/1.0", "HTTP/1.1"] {
            let line = format!("GET http://a/ {version}");
            assert_eq!(parse_head(line.as_bytes()).unwrap().version, version);
        }
        for version in ["HTTP/1.2", "HTTP/1.", "HTTP/1.1x", "HTTP/2.0", "http/1.1"] {
            let line = format!("GET http://a/ {version}");
            assert_eq!(
                refused(line.as_bytes()),
                "only HTTP/1.0 and HTTP/1.1 are accepted"
            );
        }
        refused(b"GET http://a/ HTTP/1.1 ");
    }

    #[test]
    fn a_body_is_framed_one_way_only() {
        refused(b"POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked");
        refused(b"POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 2");
        refused(b"POST http://a/ HTTP/1.1\r\nContent-Length: -1");
        assert!(
            parse_head(b"POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1")
                .is_ok()
        );
        let framing =
            |head: &[u8]| request_framing(&parse_head(head).unwrap()).map_err(|r| r.status);
        assert_eq!(
            framing(b"POST http://a/ HTTP/1.1\r\nContent-Length: 7"),
            Ok(Framing::Length(7))
        );
        assert_eq!(
            framing(b"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: Chunked"),
            Ok(Framing::Chunked)
        );
        assert_eq!(framing(b"GET http://a/ HTTP/1.1"), Ok(Framing::None));
        for ambiguous in [
            b"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked".as_slice(),
            b"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
            b"POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked",
            b"POST http://a/ HTTP/1.1\r\nContent-Length: 99999999999999999999999",
            b"POST http://a/ HTTP/1.1\r\nContent-Length: ",
        ] {
            assert_eq!(framing(ambiguous), Err("400 Bad Request"), "{ambiguous:?}");
        }
    }

    #[test]
    fn response_heads_are_parsed_strictly() {
        let ok =
            parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: caf\xe9").unwrap();
        assert_eq!((ok.version, ok.status), ("HTTP/1.1", 200));
        assert_eq!(response_framing(false, &ok), Ok(Framing::Length(5)));
        assert_eq!(response_framing(true, &ok), Ok(Framing::None));
        assert_eq!(parse_response_head(b"HTTP/1.0 204").unwrap().status, 204);
        for bad in [
            b"HTTP/1.1 200 OK\nX: 1".as_slice(),
            b"HTTP/1.1 200 OK\r\nX: 1\rY: 2",
            b"HTTP/2 200 OK",
            b"HTTP/1.1 20 OK",
            b"HTTP/1.1 2000 OK",
            b"HTTP/1.1 200 OK\r\n X: folded",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2",
            b"HTTP/1.1 200 O\x00K",
        ] {
            assert!(parse_response_head(bad).is_err(), "{bad:?}");
        }
        let framing = |head: &[u8]| response_framing(false, &parse_response_head(head).unwrap());
        assert_eq!(
            framing(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9"),
            Ok(Framing::None)
        );
        assert_eq!(framing(b"HTTP/1.1 100 Continue"), Ok(Framing::None));
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked"),
            Ok(Framing::Chunked)
        );
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip"),
            Ok(Framing::UntilClose)
        );
        assert_eq!(
            framing(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked"),
            Ok(Framing::UntilClose)
        );
        assert_eq!(framing(b"HTTP/1.1 200 OK"), Ok(Framing::UntilClose));
    }

    #[test]
    fn chunked_framing_is_decoded_strictly() {
        let (end, data) =
            decode_chunked(b"5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\nNEXT", 3);
        assert_eq!(
            end,
            Ok(b"5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\n".len())
        );
        assert_eq!(data, b"hello!");
        for bad in [
            b"5\nhello\r\n0\r\n\r\n".as_slice(),
            b"5\r\nhelloX\r\n0\r\n\r\n",
            b" 5\r\nhello\r\n0\r\n\r\n",
            b"-5\r\n",
            b"0x5\r\n",
            b"11111111111111111\r\n",
            b"0\r\nBad Trailer: 1\r\n\r\n",
            b"0\r\nX: a\rb\r\n\r\n",
        ] {
            assert_eq!(decode_chunked(bad, bad.len()).0, Err("error"), "{bad:?}");
        }
        assert_eq!(decode_chunked(b"5\r\nhel", 2).0, Err("incomplete"));
        check_chunked(b"\x03a\r\n0123456789\r\n0\r\n\r\n");
    }

    #[test]
    fn a_scanner_finds_a_stand_in_split_across_pieces() {
        let secret =
            super::super::secrets::Secret::new("tok", "real", &["a.test:80".to_owned()]).unwrap();
        let stand_in = secret.stand_in().to_owned();
        let secrets = Secrets::new(vec![secret]).unwrap();
        let elsewhere = Destination::parse("b.test:80", None).unwrap();
        let home = Destination::parse("a.test:80", None).unwrap();
        for cut in 1..stand_in.len() {
            let text = format!("xx{stand_in}yy");
            let (first, second) = text.as_bytes().split_at(cut + 2);
            let mut scanner = Scanner::new(&secrets, Some(&elsewhere));
            assert!(scanner.feed(first).is_none());
            assert_eq!(scanner.feed(second).unwrap().name, "tok");
            let mut tunnel = Scanner::new(&secrets, None);
            assert!(tunnel.feed(first).is_none() && tunnel.feed(second).is_some());
            let mut home = Scanner::new(&secrets, Some(&home));
            assert!(home.feed(first).is_none() && home.feed(second).is_none());
        }
        let mut scanner = Scanner::new(&secrets, None);
        for byte in format!("ab{stand_in}").bytes().take(stand_in.len() + 1) {
            assert!(scanner.feed(&[byte]).is_none());
        }
        assert!(scanner
            .feed(
                stand_in
                    .as_bytes()
                    .last()
                    .map(std::slice::from_ref)
                    .unwrap()
            )
            .is_some());
    }

    async fn read_until_blank<R: AsyncRead + Unpin>(from: &mut R) -> String {
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !seen.ends_with(b"\r\n\r\n") {
            if from.read(&mut byte).await.unwrap() == 0 {
                break;
            }
            seen.push(byte[0]);
        }
        String::from_utf8(seen).unwrap()
    }

    /// The seam for inspection: over an already-decrypted client stream
    /// and a connected upstream, requests are checked one by one (rules,
    /// stand-ins swapped), a Host naming another destination is refused,
    /// and events say `inspected`.
    #[test]
    fn serve_inspected_checks_each_request_against_its_one_destination() {
        use super::super::allowlist::Allowlist;
        use super::super::denial::Denials;
        use super::super::egress::EgressLog;
        use super::super::rules::{Pattern, Rule};
        use super::super::secrets::Secret;

        let destination = Destination::parse("api.test:443", None).unwrap();
        let rule = Rule {
            destination: Pattern::parse("api.test:443").unwrap(),
            inspect: true,
            methods: vec!["GET".into()],
            paths: vec!["/repos/".into()],
        };
        let secret = Secret::new("gh", "ghp_value", &["api.test:443".to_owned()]).unwrap();
        let stand_in = secret.stand_in().to_owned();
        let shared = Shared {
            allowlist: Allowlist::with_rules(vec![rule], false).unwrap(),
            secrets: Secrets::new(vec![secret]).unwrap(),
            denials: Arc::new(Denials::new(10, None)),
            egress: Arc::new(EgressLog::new(10, None)),
            resolver: super::super::resolve::system(),
            inspector: None,
            memory: Memory::new(1 << 20),
            max_header_bytes: 32 * 1024,
            handshake_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10),
        };
        let leases = InspectedLeases {
            client: shared.memory.lease(FIRST_ROOM).unwrap(),
            upstream: shared.memory.lease(FIRST_ROOM).unwrap(),
            to_client: shared.memory.lease(super::super::pipe::FLOOR).unwrap(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (mut child, client) = tokio::io::duplex(64 * 1024);
            let (upstream, mut server) = tokio::io::duplex(64 * 1024);
            let engine = serve_inspected(client, upstream, leases, &destination, &shared);
            let server = async {
                let head = read_until_blank(&mut server).await;
                server
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await
                    .unwrap();
                let mut rest = Vec::new();
                let _ = server.read_to_end(&mut rest).await;
                (head, rest)
            };
            let child = async {
                child
                    .write_all(
                        format!("GET /repos/x HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer {stand_in}\r\n\r\n")
                            .as_bytes(),
                    )
                    .await
                    .unwrap();
                let first = read_until_blank(&mut child).await;
                let mut ok = [0u8; 2];
                child.read_exact(&mut ok).await.unwrap();
                child
                    .write_all(b"POST /repos/x HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
                    .await
                    .unwrap();
                let second = read_until_blank(&mut child).await;
                let length: usize = second
                    .split("Content-Length: ")
                    .nth(1)
                    .and_then(|rest| rest.split("\r\n").next())
                    .unwrap()
                    .parse()
                    .unwrap();
                let mut body = vec![0u8; length];
                child.read_exact(&mut body).await.unwrap();
                child
                    .write_all(b"GET /repos/x HTTP/1.1\r\nHost: evil.test\r\n\r\n")
                    .await
                    .unwrap();
                let mut third = Vec::new();
                child.read_to_end(&mut third).await.unwrap();
                (first, second, String::from_utf8(third).unwrap())
            };
            let ((), (head, rest), (first, second, third)) = tokio::join!(engine, server, child);
            assert!(head.starts_with("GET /repos/x HTTP/1.1\r\nHost: api.test\r\n"), "{head}");
            assert!(head.contains("Authorization: Bearer ghp_value\r\n"), "{head}");
            assert!(rest.is_empty(), "refused requests never reached the destination");
            assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
            assert!(second.starts_with("HTTP/1.1 403"), "{second}");
            assert!(third.starts_with("HTTP/1.1 403"), "{third}");
            assert!(third.contains("differs from the CONNECT target"), "{third}");
        });
        let reasons: Vec<DenialReason> = shared.denials.list().iter().map(|d| d.reason).collect();
        assert_eq!(
            reasons,
            [DenialReason::RequestNotAllowed, DenialReason::HostMismatch]
        );
        let events = shared.egress.list();
        assert_eq!(events.len(), 3);
        assert!(events
            .iter()
            .all(|e| e.inspected && e.destination == "api.test:443"));
        let statuses: Vec<Option<u16>> = events.iter().map(|e| e.status).collect();
        assert_eq!(statuses, [Some(200), Some(403), Some(403)]);
    }

    /// A client that lists `Content-Length` in `Connection` would, if the
    /// header were dropped as hop-by-hop, have its body read by the
    /// destination as a second request the gateway never decided on.
    #[test]
    fn a_connection_header_naming_a_framing_or_routing_header_is_refused() {
        for named in [
            "Content-Length",
            "transfer-encoding",
            "HOST",
            "te",
            "Trailer",
        ] {
            let head =
                parse_head(format!("GET http://a.test/ok/a HTTP/1.1\r\nConnection: keep-alive, {named}\r\nContent-Length: 5").as_bytes())
                    .unwrap();
            assert_eq!(
                names_framing_header(&head.headers).as_deref(),
                Some(named.to_ascii_lowercase().as_str())
            );
        }
        for allowed in ["upgrade", "keep-alive, close", "x-te, trailers"] {
            let head = parse_head(
                format!("GET http://a.test/ HTTP/1.1\r\nConnection: {allowed}").as_bytes(),
            )
            .unwrap();
            assert_eq!(names_framing_header(&head.headers), None, "{allowed}");
        }
        // Even so listed, the forwarded head keeps the framing it was read with.
        let head = parse_head(
            b"POST http://a.test/ok/a HTTP/1.1\r\nConnection: content-length, transfer-encoding\r\nContent-Length: 5",
        )
        .unwrap();
        let forwarded = String::from_utf8(origin_form(
            &head,
            &head.headers,
            "a.test",
            "/ok/a",
            "close",
            None,
        ))
        .unwrap();
        assert!(
            forwarded.contains("\r\nContent-Length: 5\r\n"),
            "{forwarded}"
        );
        let smuggled = b"GET http://a.test/ok/a HTTP/1.1\r\nConnection: keep-alive, Content-Length\r\nContent-Length: 5";
        check_request_head(smuggled);
        assert_eq!(DenialReason::MalformedRequest.status(), "400 Bad Request");
    }

    #[test]
    fn the_fuzz_checks_hold_for_the_issues_requests() {
        check_request_head(
            b"GET http://a.test/x HTTP/1.1\r\nHost: evil\r\nProxy-Authorization: x\r\nhost: b",
        );
        check_request_head(
            b"GET http://allowed/ HTTP/1.1\nHost:internal.example\r\nProxy-Authorization: smuggled",
        );
        check_request_head(b"GET http://a.test/x HTTP/1.0\r\nX:\ty\r\nConnection: close, te");
        check_request_head(
            b"GET http://a.test/x HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: a\r\nupgrade: b",
        );
        check_response_head(b"HTTP/1.1 200 OK\r\nA: b\r\nC: d");
        check_response_head(b"HTTP/1.1 200 OK\r\n");
    }

    /// Fuzz findings F3a and F3b through the engine's own decision: a value
    /// with a space is never placed in a request target, and a value that
    /// would carry the path outside the prefix it passed is refused; in a
    /// header the same value keeps the head's shape and is placed.
    #[test]
    fn a_swapped_value_never_changes_the_requests_shape_or_leaves_its_rule() {
        use super::super::secrets::Secret;

        let rule = Rule {
            destination: Pattern::parse("a.test:80").unwrap(),
            inspect: false,
            methods: vec!["GET".into()],
            paths: vec!["/repos/org/".into()],
        };
        let allowlist = Allowlist::with_rules(vec![rule], true).unwrap();
        let spaced = Secret::new("tok", "sec ret", &["a.test:80".to_owned()]).unwrap();
        let climbing = Secret::new("up", "v/../../admin", &["a.test:80".to_owned()]).unwrap();
        let spaced_in = spaced.stand_in().to_owned();
        let climbing_in = climbing.stand_in().to_owned();
        let secrets = Secrets::new(vec![spaced, climbing]).unwrap();
        let forward = |head: String| forward_request(head.as_bytes(), Some(&allowlist), &secrets);
        assert_eq!(
            forward(format!(
                "GET http://a.test/repos/org/x?t={spaced_in} HTTP/1.1"
            )),
            Err("SecretPlacement".to_owned())
        );
        assert_eq!(
            forward(format!(
                "GET http://a.test/repos/org/{climbing_in} HTTP/1.1"
            )),
            Err("RequestNotAllowed".to_owned())
        );
        let sent = forward(format!(
            "GET http://a.test/repos/org/x HTTP/1.1\r\nAuthorization: Bearer {spaced_in}"
        ))
        .unwrap();
        let sent = String::from_utf8(sent.head).unwrap();
        assert!(
            sent.starts_with("GET /repos/org/x HTTP/1.1\r\n"),
            "{sent:?}"
        );
        assert!(
            sent.contains("\r\nAuthorization: Bearer sec ret\r\n"),
            "{sent:?}"
        );
    }

    /// Fuzz finding of the `secrets` target: a value swapped into
    /// `Connection` named headers that were then dropped as hop-by-hop, so a
    /// swap changed which headers the destination received. What is
    /// hop-by-hop is what the client listed.
    #[test]
    fn a_swapped_value_never_drops_a_header() {
        use super::super::secrets::Secret;

        let allowlist = Allowlist::new(&["a.test:80".to_owned()], true).unwrap();
        let listing = Secret::new("tok", "close, x-keep", &["a.test:80".to_owned()]).unwrap();
        let stand_in = listing.stand_in().to_owned();
        let secrets = Secrets::new(vec![listing]).unwrap();
        let head = format!("GET http://a.test/ HTTP/1.1\r\nConnection: {stand_in}\r\nX-Keep: 1");
        let sent = forward_request(head.as_bytes(), Some(&allowlist), &secrets).unwrap();
        let sent = String::from_utf8(sent.head).unwrap();
        assert_eq!(
            sent,
            "GET / HTTP/1.1\r\nHost: a.test\r\nX-Keep: 1\r\nConnection: keep-alive\r\n\r\n"
        );
    }

    /// The framing invariant of the `request_head` fuzz target: a head whose
    /// `Connection` names a framing or routing header is refused, one naming
    /// only `Upgrade`-unrelated options is forwarded without them and framed
    /// as read.
    #[test]
    fn a_forwarded_head_keeps_the_framing_the_gateway_read() {
        let none = Secrets::default();
        for named in [
            "content-length",
            "Transfer-Encoding",
            "host",
            "TE",
            "trailer",
        ] {
            let head = format!(
                "POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nConnection: keep-alive, {named}"
            );
            let refused = forward_request(head.as_bytes(), None, &none).unwrap_err();
            assert!(refused.contains(&named.to_ascii_lowercase()), "{refused}");
        }
        let sent = forward_request(
            b"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTE: trailers\r\nConnection: X-Hop\r\nX-Hop: 1",
            None,
            &none,
        )
        .unwrap();
        assert_eq!(sent.framing, Framing::Chunked);
        assert_eq!(
            String::from_utf8(sent.head).unwrap(),
            "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        );
    }
}
