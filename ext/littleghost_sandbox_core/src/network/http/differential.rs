//! The gateway's own HTTP/1.1 reading against httparse, hyper's parser
//! (docs/security.md "Request framing"): for every request head the gateway
//! accepts and forwards, httparse reads the forwarded head completely, with
//! the method and path the gateway decided on, no field the gateway did not
//! read (its own `Host` and `Connection` aside), and the same framing of the
//! body; and every chunk-size line the gateway accepts gives httparse the
//! same size. Run over seeds and deterministic mutations of them: a fuzz
//! sized for `cargo test`.

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
