//! The fuzz targets' checks (`fuzz/fuzz_targets/`): the engine's own steps without I/O.

use super::*;

/// The fuzz target's check (`fuzz/fuzz_targets/request_head.rs`): parses
/// `bytes` as a request head and, when it is accepted and its URL is, checks
/// what the destination would receive. Panics when the rewrite could carry
/// a control byte, a second line, a second `Host` or a proxy credential.
pub(in crate::network) fn check_request_head(bytes: &[u8]) {
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

/// Why [`forward_request`] would not forward a request head.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotForwarded {
    /// The head, its target or its framing is refused (the answer's reason).
    #[error("{0}")]
    Malformed(String),
    #[error("CONNECT opens a tunnel")]
    Connect,
    /// `Connection` names a header that frames the request.
    #[error("Connection names {0}")]
    ConnectionNames(String),
    /// The destination or the HTTP rules deny it.
    #[error("{0:?}")]
    Denied(DenialReason),
}

/// The head the plain-HTTP proxy would forward for the request head `raw`
/// (without its blank line), or why it refuses it: the engine's own steps
/// in its order (parse, target, framing, destination, [`decide`],
/// [`origin_form`]) without I/O, so the fuzz targets judge what the engine
/// decides. `allowlist: None` allows the named destination with no rules.
pub(in crate::network) fn forward_request(
    raw: &[u8],
    allowlist: Option<&Allowlist>,
    secrets: &Secrets,
) -> Result<Forwarded, NotForwarded> {
    let malformed = |refused: Refusal| NotForwarded::Malformed(refused.reason);
    let head = parse_head(raw).map_err(malformed)?;
    if head.method.eq_ignore_ascii_case("CONNECT") {
        return Err(NotForwarded::Connect);
    }
    let (destination, path) = absolute_form(&head.target).map_err(malformed)?;
    if let Some(named) = names_framing_header(&head.headers) {
        return Err(NotForwarded::ConnectionNames(named.to_string()));
    }
    let framing = request_framing(&head).map_err(malformed)?;
    let open = Rule::destination(Pattern {
        host: HostPattern::Exact(destination.host.clone()),
        port: PortPattern::Exact(destination.port),
    });
    let access = match allowlist {
        Some(allowlist) => decide::destination(allowlist, &destination),
        None => Access::new(vec![&open]).ok_or(DenialReason::NotAllowed),
    }
    .map_err(NotForwarded::Denied)?;
    let upgrade = requested_upgrade(&head);
    let (path, headers) = decide(
        &head,
        &path,
        &destination,
        &access,
        upgrade.as_deref(),
        secrets,
    )
    .map_err(NotForwarded::Denied)?;
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

/// A request as the engine reads it from the child's bytes: the head its
/// parser accepted and the body decoded from the framing it read
/// (`fuzz_targets/request_hyper.rs` holds it against hyper's server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub method: String,
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// How many bytes the request took: head, blank line and body.
    pub length: usize,
}

/// The first request of `bytes` as the engine reads it ([`Reader::read_head`]'s
/// end of a head, [`parse_head`], the refusal of a `Connection` naming a
/// framing field, [`request_framing`], and the body as [`Chunked`] or the
/// length decodes it), or `None` when the engine refuses it or its body is
/// incomplete.
pub(in crate::network) fn read_request(bytes: &[u8]) -> Option<ReadRequest> {
    let end = find(bytes, b"\r\n\r\n")?;
    let head = parse_head(&bytes[..end]).ok()?;
    if names_framing_header(&head.headers).is_some() {
        return None;
    }
    let rest = &bytes[end + 4..];
    let (body, used) = match request_framing(&head).ok()? {
        Framing::None => (Vec::new(), 0),
        Framing::Length(length) => {
            let length = usize::try_from(length).ok().filter(|&n| n <= rest.len())?;
            (rest[..length].to_vec(), length)
        }
        Framing::Chunked => {
            let (end, data) = decode_chunked(rest, rest.len());
            (data, end.ok()?)
        }
        Framing::UntilClose => return None,
    };
    Some(ReadRequest {
        method: head.method,
        target: head.target,
        version: head.version,
        headers: head.headers,
        body,
        length: end + 4 + used,
    })
}

/// The fuzz check of the chunked decoder (`fuzz_targets/chunked.rs`): the
/// same bytes give the same data and verdict however reads split them (the
/// first byte picks the split), every step stays inside its input, and
/// accepted framing lines hold no control byte but HTAB.
pub(in crate::network) fn check_chunked(bytes: &[u8]) {
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
pub(super) fn decode_chunked(input: &[u8], piece: usize) -> (Result<usize, &'static str>, Vec<u8>) {
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
