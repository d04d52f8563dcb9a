//! The gateway's own HTTP/1.1 reading of the child's side against hyper's
//! (docs/security.md "Request framing"). Against httparse, hyper's parser:
//! for every request head the gateway accepts and forwards, httparse reads
//! the forwarded head completely, with the method and path the gateway
//! decided on, no field the gateway did not read (its own `Host` and
//! `Connection` aside), and the same framing of the body; and every
//! chunk-size line the gateway accepts gives httparse the same size.
//! Against hyper's server (`server::conn::http1`): every whole request the
//! gateway reads (head and body, by `Content-Length` or chunked, extensions
//! and trailers included) hyper reads with the same method, target,
//! version, fields and body bytes, ending where the gateway's ends. Run over
//! seeds and deterministic mutations of them: a fuzz sized for `cargo
//! test` (the fuzz targets `request_head` and `request_hyper` run the same
//! checks unbounded).

use super::*;

/// Bytes that change how a head splits into lines, fields and tokens.
const INTERESTING: &[u8] = b"\r\n\t :,;\"\x00\x0b\x0c\x7f\x80\xff0aA";

/// Fields that change framing, routing or what is hop-by-hop.
const FIELDS: &[&str] = &[
    "Content-Length: 5",
    "Content-Length: 0",
    "Content-Length: 05",
    "Transfer-Encoding: chunked",
    "Transfer-Encoding: Chunked",
    "Connection: keep-alive, Content-Length",
    "Connection: x-hop",
    "Connection: close",
    "Connection: Upgrade",
    "Upgrade: websocket",
    "Host: other.test",
    "TE: trailers",
    "Trailer: X",
    "Keep-Alive: timeout=5",
    "Proxy-Authorization: Basic eA==",
    "X-Hop: 1",
];

const SEEDS: &[&str] = &[
    "GET http://a.test/ok/a HTTP/1.1\r\nHost: a.test",
    "GET http://a.test:8080/p?q=1#f HTTP/1.0\r\nHost: a.test:8080\r\nAccept: */*",
    "POST http://a.test/form HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nConnection: keep-alive",
    "POST http://a.test/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: x-hop\r\nX-Hop: 1",
    "GET http://a.test/ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nTE: trailers",
    "PUT http://a.test/x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\nX-Empty:",
];

/// A deterministic xorshift generator: the same cases on every run.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

fn mutate(seed: &[u8], random: &mut Random) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..=random.below(3) {
        let at = random.below(bytes.len() + 1);
        match random.below(4) {
            0 => bytes.insert(at, INTERESTING[random.below(INTERESTING.len())]),
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 if at < bytes.len() => bytes[at] = INTERESTING[random.below(INTERESTING.len())],
            _ => {
                let field = FIELDS[random.below(FIELDS.len())];
                bytes.extend_from_slice(b"\r\n");
                bytes.extend_from_slice(field.as_bytes());
            }
        }
    }
    bytes
}

/// A body's framing as hyper derives it from the fields httparse read
/// (RFC 9112 §6.3): the last transfer coding chunked, else one length.
fn framing_read(fields: &[httparse::Header<'_>]) -> Option<Framing> {
    let named = |wanted: &str| -> Vec<&[u8]> {
        fields
            .iter()
            .filter(|field| field.name.eq_ignore_ascii_case(wanted))
            .map(|field| field.value)
            .collect()
    };
    let codings = named("transfer-encoding");
    if let Some(last) = codings.last() {
        let last = std::str::from_utf8(last).ok()?;
        let chunked = last
            .rsplit(',')
            .next()
            .is_some_and(|coding| coding.trim().eq_ignore_ascii_case("chunked"));
        return chunked.then_some(Framing::Chunked);
    }
    let lengths = named("content-length");
    let Some(first) = lengths.first() else {
        return Some(Framing::None);
    };
    if lengths.iter().any(|other| other != first) {
        return None;
    }
    match std::str::from_utf8(first).ok()?.parse::<u64>().ok()? {
        0 => Some(Framing::None),
        length => Some(Framing::Length(length)),
    }
}

/// The check itself, on one head as the client sent it (no blank line);
/// whether the gateway would forward it (and it was checked).
fn check_against_httparse(bytes: &[u8]) -> bool {
    let Ok(head) = parse_head(bytes) else {
        return false;
    };
    let (Ok(framing), None) = (request_framing(&head), names_framing_header(&head.headers)) else {
        return false;
    };
    let Ok((destination, path)) = absolute_form(&head.target) else {
        return false;
    };
    if head.method.eq_ignore_ascii_case("CONNECT") {
        return false;
    }
    let upgrade = requested_upgrade(&head);
    let forwarded = origin_form(
        &head,
        &head.headers,
        &host_value(&destination, 80),
        &path,
        "keep-alive",
        upgrade.as_deref(),
    );
    let shown = String::from_utf8_lossy(&forwarded).into_owned();
    let mut storage = [httparse::EMPTY_HEADER; 128];
    let mut read = httparse::Request::new(&mut storage);
    let status = read.parse(&forwarded);
    assert_eq!(
        status,
        Ok(httparse::Status::Complete(forwarded.len())),
        "{:?} forwarded as {shown:?}",
        String::from_utf8_lossy(bytes)
    );
    assert_eq!(read.method, Some(head.method.as_str()), "{shown:?}");
    assert_eq!(read.path, Some(path.as_str()), "{shown:?}");
    let version = u8::from(head.version == "HTTP/1.1");
    assert_eq!(read.version, Some(version), "{shown:?}");
    let mut added = 0;
    for field in read.headers.iter() {
        let gateway_own = ["host", "connection", "upgrade"]
            .iter()
            .any(|own| field.name.eq_ignore_ascii_case(own));
        if gateway_own {
            added += 1;
            continue;
        }
        let client_sent = head
            .headers
            .iter()
            .any(|(name, value)| name == field.name && value.as_bytes() == field.value);
        assert!(
            client_sent,
            "httparse read {}: {:?}, which the gateway did not: {shown:?}",
            field.name,
            String::from_utf8_lossy(field.value)
        );
    }
    assert_eq!(added, 2 + usize::from(upgrade.is_some()), "{shown:?}");
    assert_eq!(framing_read(read.headers), Some(framing), "{shown:?}");
    true
}

/// Every chunk-size line the gateway's decoder accepts, httparse reads
/// whole, to the same size; whether the gateway accepted it.
fn check_chunk_size_line(line: &[u8]) -> bool {
    let mut decoder = Chunked::new();
    let mut input = line.to_vec();
    input.extend_from_slice(b"\r\n");
    let Ok(Step::Framing(used)) = decoder.step(&input) else {
        return false;
    };
    let size = match decoder.state {
        ChunkState::Data(size) => size,
        ChunkState::Trailer => 0,
        _ => return false,
    };
    assert_eq!(
        httparse::parse_chunk_size(&input),
        Ok(httparse::Status::Complete((used, size))),
        "{:?}",
        String::from_utf8_lossy(line)
    );
    true
}

#[test]
fn httparse_reads_every_forwarded_head_as_the_gateway_wrote_it() {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let mut forwarded = 0;
    for seed in SEEDS {
        assert!(check_against_httparse(seed.as_bytes()), "{seed:?}");
        for _ in 0..20_000 {
            forwarded += usize::from(check_against_httparse(&mutate(
                seed.as_bytes(),
                &mut random,
            )));
        }
    }
    // Most mutations are refused; enough are forwarded for the check to mean something.
    assert!(forwarded > 10_000, "{forwarded}");
}

#[test]
fn httparse_reads_every_accepted_chunk_size_as_the_gateway_did() {
    let mut random = Random(0x2545_f491_4f6c_dd1d);
    let seeds = [
        "5",
        "00a",
        "FfFf",
        "5;ext",
        "5;a=\"b c\"",
        "0",
        "0;x",
        "fffffffffffffff",
    ];
    let mut accepted = 0;
    for seed in seeds {
        assert!(check_chunk_size_line(seed.as_bytes()), "{seed:?}");
        for _ in 0..20_000 {
            accepted += usize::from(check_chunk_size_line(&mutate(seed.as_bytes(), &mut random)));
        }
    }
    assert!(accepted > 10_000, "{accepted}");
}

/// Whole requests, bodies included, for the check against hyper's server.
const REQUESTS: &[&str] = &[
    "POST /a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello",
    "POST /a HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
    "PUT http://a.test/x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "POST http://a.test/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n00\r\n\r\n",
    "GET http://a.test/g?q=1 HTTP/1.0\r\nHost: a.test\r\nAccept: */*\r\n\r\n",
    "POST /z HTTP/1.1\r\nContent-Length: 05\r\nX-Empty:\r\n\r\nhello",
];

/// The request sent after the one under test: where hyper starts reading
/// it is where hyper ended the first.
const NEXT: &[u8] = b"GET /next HTTP/1.1\r\nHost: next.test\r\n\r\n";

/// One request as hyper's server read it: method, target, version, fields
/// (names in lower case, sorted) and body (`None` when reading it failed).
#[derive(Debug, PartialEq, Eq)]
struct HyperRead {
    method: String,
    target: String,
    version: hyper::Version,
    fields: Vec<(String, Vec<u8>)>,
    body: Option<Vec<u8>>,
}

/// Every request hyper's server (`server::conn::http1`) reads from `bytes`
/// sent over an in-memory stream, in order.
fn hyper_reads(runtime: &tokio::runtime::Runtime, bytes: &[u8]) -> Vec<HyperRead> {
    use http_body_util::{BodyExt, Empty};
    use hyper::body::Bytes;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    runtime.block_on(async move {
        let (mut client, server) = tokio::io::duplex(bytes.len() + 64 * 1024);
        let service =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let record = record.clone();
                async move {
                    let (parts, body) = request.into_parts();
                    let body = body
                        .collect()
                        .await
                        .ok()
                        .map(|body| body.to_bytes().to_vec());
                    let mut fields: Vec<(String, Vec<u8>)> = parts
                        .headers
                        .iter()
                        .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
                        .collect();
                    fields.sort();
                    record.lock().unwrap().push(HyperRead {
                        method: parts.method.as_str().to_owned(),
                        target: parts.uri.to_string(),
                        version: parts.version,
                        fields,
                        body,
                    });
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(Empty::<Bytes>::new()))
                }
            });
        let serving = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(server), service);
        let talking = async move {
            let _ = client.write_all(bytes).await;
            let _ = client.shutdown().await;
            let _ = client.read_to_end(&mut Vec::new()).await;
        };
        let _ = tokio::join!(serving, talking);
    });
    let read = std::mem::take(&mut *seen.lock().unwrap());
    read
}

/// A target as hyper's `Uri` shows it: no fragment (the engine too leaves
/// it out of the path it forwards), `http` and `https` in lower case, an
/// absolute form's empty path as `/`.
fn as_hyper_shows(target: &str) -> String {
    let target = target.split('#').next().unwrap_or_default();
    let absolute = target
        .split_once("://")
        .filter(|_| !target.starts_with('/'));
    let Some((scheme, rest)) = absolute else {
        return target.to_owned();
    };
    let scheme = if ["http", "https"]
        .iter()
        .any(|s| scheme.eq_ignore_ascii_case(s))
    {
        scheme.to_ascii_lowercase()
    } else {
        scheme.to_owned()
    };
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let slash = if path.starts_with('/') { "" } else { "/" };
    format!("{scheme}://{authority}{slash}{path}")
}

/// The check on one input: the first request of `bytes` as the engine
/// reads it (head and body), sent to hyper's server followed by [`NEXT`],
/// is read by hyper alike (method, target, version, fields, body bytes),
/// and hyper's next request is [`NEXT`]. hyper may refuse a target its
/// `Uri` does not take (a stricter reading). Whether the engine read one.
fn check_against_hyper(runtime: &tokio::runtime::Runtime, bytes: &[u8]) -> bool {
    let Some(read) = read_request(bytes) else {
        return false;
    };
    if read.method.eq_ignore_ascii_case("CONNECT") {
        return false;
    }
    let sent = [&bytes[..read.length], NEXT].concat();
    let shown = String::from_utf8_lossy(&sent).into_owned();
    let seen = hyper_reads(runtime, &sent);
    let Some(first) = seen.first() else {
        assert!(
            read.target.parse::<hyper::Uri>().is_err(),
            "hyper refused what the engine reads: {shown:?}"
        );
        return true;
    };
    let version = if read.version == "HTTP/1.0" {
        hyper::Version::HTTP_10
    } else {
        hyper::Version::HTTP_11
    };
    let mut fields: Vec<(String, Vec<u8>)> = read
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.as_bytes().to_vec()))
        .collect();
    fields.sort();
    // hyper keeps one of repeated equal lengths (the engine refuses unequal ones).
    fields.dedup_by(|a, b| a.0 == "content-length" && a == b);
    let engine = HyperRead {
        method: read.method.clone(),
        target: as_hyper_shows(&read.target),
        version,
        fields,
        body: Some(read.body.clone()),
    };
    assert_eq!(first, &engine, "{shown:?}");
    if let Some(next) = seen.get(1) {
        assert_eq!(
            (next.method.as_str(), next.target.as_str()),
            ("GET", "/next"),
            "{shown:?}"
        );
    }
    assert!(seen.len() <= 2, "{shown:?}");
    true
}

#[test]
fn hyper_reads_every_request_the_gateway_reads_alike() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut random = Random(0x853c_49e6_748f_ea9b);
    let mut read = 0;
    for seed in REQUESTS {
        assert!(check_against_hyper(&runtime, seed.as_bytes()), "{seed:?}");
        for _ in 0..3_000 {
            read += usize::from(check_against_hyper(
                &runtime,
                &mutate(seed.as_bytes(), &mut random),
            ));
        }
    }
    assert!(read > 3_000, "{read}");
}
