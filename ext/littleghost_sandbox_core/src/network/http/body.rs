//! How a message's body ends (its framing) and a strict, sans-I/O decoder of chunked framing.

use super::*;

/// How a message's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

pub(super) fn content_length(headers: &[(String, String)]) -> Result<Option<u64>, &'static str> {
    values(headers, "content-length")
        .next()
        .map(|text| text.parse::<u64>().map_err(|_| "malformed Content-Length"))
        .transpose()
}

/// A request's body: `Content-Length`, or `Transfer-Encoding: chunked`
/// exactly (in HTTP/1.1); any other transfer coding is refused, since the
/// gateway could not tell where the body ends the way the destination would.
pub(super) fn request_framing(head: &Head) -> Result<Framing, Refusal> {
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

/// One step of reading a chunked body (sans I/O, so it can be fuzzed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::network) enum Step {
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
pub(super) enum ChunkState {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

/// A strict decoder of chunked framing: `HEX[;ext] CRLF data CRLF`...,
/// `0[;ext] CRLF`, trailer fields, `CRLF`. Lines end in CRLF only and hold
/// no control byte but HTAB; sizes are 1 to 16 hex digits.
pub(in crate::network) struct Chunked {
    pub(super) state: ChunkState,
    pub(super) trailers: usize,
}

impl Chunked {
    pub(in crate::network) fn new() -> Chunked {
        Chunked {
            state: ChunkState::Size,
            trailers: 0,
        }
    }

    /// Looks at the start of `input` (the unread bytes) and says what the
    /// first bytes are; the caller consumes them and calls again.
    pub(in crate::network) fn step(&mut self, input: &[u8]) -> Result<Step, &'static str> {
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
pub(super) fn chunk_size(line: &[u8]) -> Result<u64, &'static str> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    if digits.is_empty() || digits.len() > 16 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err("malformed chunk size");
    }
    let text = std::str::from_utf8(digits).map_err(|_| "malformed chunk size")?;
    u64::from_str_radix(text, 16).map_err(|_| "malformed chunk size")
}
