//! Request heads, parsed strictly: lines end in CRLF only, no control byte but HTAB inside a value,
//! token field names, one framing of a body. (Responses are read by hyper: `upstream`.)

use super::*;

/// A parsed request head.
pub(in crate::network) struct Head {
    pub method: String,
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

/// A control byte: C0 (CR, LF and HTAB included) or DEL.
pub(super) fn is_control(byte: u8) -> bool {
    byte < 0x20 || byte == 0x7f
}

/// One header line: a token name directly followed by `:`, a value with no
/// control byte but HTAB (leading and trailing blanks trimmed).
pub(super) fn parse_field(line: &[u8]) -> Result<(String, String), &'static str> {
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

pub(super) fn values<'h>(
    headers: &'h [(String, String)],
    wanted: &'static str,
) -> impl Iterator<Item = &'h str> {
    headers
        .iter()
        .filter(move |(name, _)| name.eq_ignore_ascii_case(wanted))
        .map(|(_, value)| value.as_str())
}

/// The lower-case tokens of every `Connection` header.
pub(super) fn connection_tokens(headers: &[(String, String)]) -> Vec<String> {
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
pub(super) const NOT_NAMED_IN_CONNECTION: [&str; 5] = [
    "content-length",
    "transfer-encoding",
    "host",
    "te",
    "trailer",
];

/// The first framing or routing header a `Connection` header names.
pub(super) fn names_framing_header(headers: &[(String, String)]) -> Option<String> {
    connection_tokens(headers)
        .into_iter()
        .find(|token| NOT_NAMED_IN_CONNECTION.contains(&token.as_str()))
}

/// A body is framed once: not both `Content-Length` and
/// `Transfer-Encoding`, and one length however often it is repeated.
pub(super) fn check_lengths(headers: &[(String, String)]) -> Result<(), &'static str> {
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
pub(in crate::network) fn parse_head(bytes: &[u8]) -> Result<Head, Refusal> {
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
