//! Unit tests of the engine's mechanisms.

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

fn scripted_within(reads: Vec<std::io::Result<Vec<u8>>>, memory: &Arc<Memory>) -> Reader<Scripted> {
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
    let mut bulk = scripted_within((0..20).map(|_| Ok(vec![1u8; 16 * 1024])).collect(), &memory);
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
    let mut reader = scripted_within(vec![Ok(vec![1u8; FIRST_ROOM]), Ok(vec![2u8; 512])], &memory);
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
        parse_head(b"POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1").is_ok()
    );
    let framing = |head: &[u8]| request_framing(&parse_head(head).unwrap()).map_err(|r| r.status);
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
fn chunked_framing_is_decoded_strictly() {
    let (end, data) = decode_chunked(b"5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\nNEXT", 3);
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
        // Moved in: the child's end closes when it is done, as a client's would.
        let child = async move {
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

/// A refusal that closes the connection reaches a client still sending:
/// the gateway ends its side after the answer, then reads what the client
/// sends until the client ends too. Closed at once with the client's bytes
/// unread, the client's next write fails (a broken pipe), and a TLS client,
/// whose read first finishes its pending writes (its close_notify), then
/// never reads the answer.
#[test]
fn a_closing_refusal_reads_on_until_the_client_ends() {
    use super::super::allowlist::Allowlist;
    use super::super::denial::Denials;
    use super::super::egress::EgressLog;
    use super::super::rules::{Pattern, Rule};

    let destination = Destination::parse("api.test:443", None).unwrap();
    let rule = Rule {
        destination: Pattern::parse("api.test:443").unwrap(),
        inspect: true,
        methods: vec!["GET".into()],
        paths: vec!["/ok/".into()],
    };
    let shared = Shared {
        allowlist: Allowlist::with_rules(vec![rule], false).unwrap(),
        secrets: Secrets::new(vec![]).unwrap(),
        denials: Arc::new(Denials::new(10, None)),
        egress: Arc::new(EgressLog::new(10, None)),
        resolver: super::super::resolve::system(),
        inspector: None,
        memory: Memory::new(1 << 20),
        max_header_bytes: 32 * 1024,
        handshake_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
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
        let (upstream, _destination_side) = tokio::io::duplex(64 * 1024);
        let engine = serve_inspected(client, upstream, leases, &destination, &shared);
        tokio::pin!(engine);
        let mut answer = Vec::new();
        let engine_ended_first = {
            let asked = async {
                child
                    .write_all(b"GET /ok/a HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive, Content-Length\r\nContent-Length: 30\r\n\r\n")
                    .await
                    .unwrap();
                child.read_to_end(&mut answer).await.unwrap();
            };
            tokio::pin!(asked);
            // The engine is polled first whenever both are ready: one that
            // closes as soon as its answer is out ends here.
            let ended = tokio::select! {
                biased;
                () = &mut engine => true,
                () = &mut asked => false,
            };
            if ended {
                asked.await;
            }
            ended
        };
        // The rest of what the client had to send (the body it announced).
        let late = child.write_all(b"DELETE /x HTTP/1.1\r\nX-Ignore: ").await;
        drop(child);
        if !engine_ended_first {
            engine.await;
        }
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
        assert!(
            late.is_ok(),
            "the gateway closed with the client's bytes unread: {late:?}"
        );
    });
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
        let head =
            parse_head(format!("GET http://a.test/ HTTP/1.1\r\nConnection: {allowed}").as_bytes())
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
        Err(NotForwarded::Denied(DenialReason::SecretPlacement))
    );
    assert_eq!(
        forward(format!(
            "GET http://a.test/repos/org/{climbing_in} HTTP/1.1"
        )),
        Err(NotForwarded::Denied(DenialReason::RequestNotAllowed))
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
        assert_eq!(
            refused,
            NotForwarded::ConnectionNames(named.to_ascii_lowercase())
        );
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
