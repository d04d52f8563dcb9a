//! The gateway's HTTP/1.1 engine seen from a client: keep-alive, exact
//! framing both ways, per-request rules, secrets swapped only toward their
//! destinations, the egress record, and DNS answers that change between lookups. Loopback servers started here
//! stand in for the internet, hence `allow_private_destinations: true`
//! except where that option is the test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use littleghost_sandbox_core::network::resolve::Lookup;
use littleghost_sandbox_core::network::{
    Allowlist, Decision, DenialReason, EgressEvent, Gateway, GatewayConfig, Pattern, Resolve, Rule,
    Secret, Secrets,
};

// ---------------------------------------------------------------------------
// A keep-alive HTTP/1.1 server
// ---------------------------------------------------------------------------

/// One request as the server decoded it.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Vec<u8>,
}

struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Seen>>>,
    /// Every byte received, all connections together.
    raw: Arc<Mutex<Vec<u8>>>,
}

impl Server {
    fn requests(&self) -> Vec<Seen> {
        self.requests.lock().unwrap().clone()
    }

    fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    fn entry(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// Reads through a `BufReader` and copies what it consumed into `raw`.
struct Recording<R> {
    inner: R,
    raw: Arc<Mutex<Vec<u8>>>,
}

impl<R: Read> Read for Recording<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.raw.lock().unwrap().extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

fn read_line<R: BufRead>(reader: &mut R) -> Option<String> {
    let mut line = String::new();
    (reader.read_line(&mut line).ok()? > 0).then_some(line)
}

/// Headers of a head (lower-case names).
fn header(head: &str, name: &str) -> Option<String> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

/// A chunked body's data (trailers dropped).
fn read_chunked<R: BufRead>(reader: &mut R) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?;
        let size = usize::from_str_radix(line.trim_end().split(';').next()?, 16).ok()?;
        if size == 0 {
            while read_line(reader)? != "\r\n" {}
            return Some(body);
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).ok()?;
        body.extend_from_slice(&chunk[..size]);
    }
}

fn server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let raw = Arc::new(Mutex::new(Vec::new()));
    let (count, seen, all) = (connections.clone(), requests.clone(), raw.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            let (seen, all) = (seen.clone(), all.clone());
            std::thread::spawn(move || serve_connection(stream, seen, all));
        }
    });
    Server {
        port,
        connections,
        requests,
        raw,
    }
}

fn serve_connection(stream: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, raw: Arc<Mutex<Vec<u8>>>) {
    let mut out = stream.try_clone().unwrap();
    let mut reader = BufReader::new(Recording {
        inner: stream,
        raw: raw.clone(),
    });
    loop {
        let mut head = String::new();
        loop {
            let Some(line) = read_line(&mut reader) else {
                return;
            };
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let body = if header(&head, "transfer-encoding").is_some() {
            match read_chunked(&mut reader) {
                Some(body) => body,
                None => return,
            }
        } else {
            let length: usize = header(&head, "content-length")
                .map(|v| v.parse().unwrap())
                .unwrap_or(0);
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            body
        };
        seen.lock().unwrap().push(Seen {
            head: head.clone(),
            body: body.clone(),
        });
        let mut parts = head.split(' ');
        let (method, path) = (parts.next().unwrap(), parts.next().unwrap());
        let answer: Vec<u8> = if path.starts_with("/chunked") {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n".to_vec()
        } else if path.starts_with("/204") {
            b"HTTP/1.1 204 No Content\r\nX: y\r\n\r\n".to_vec()
        } else if path.starts_with("/304") {
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n".to_vec()
        } else if path.starts_with("/ws") {
            let _ = out.write_all(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            );
            // Echo whatever comes next, raw.
            let mut buffer = [0u8; 4096];
            loop {
                let buffered = reader.buffer().to_vec();
                if !buffered.is_empty() {
                    reader.consume(buffered.len());
                    let _ = out.write_all(&buffered);
                    continue;
                }
                match reader.read(&mut buffer) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let _ = out.write_all(&buffer[..n]);
                    }
                }
            }
        } else if path.starts_with("/close") {
            let _ = out.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end");
            return;
        } else if path.starts_with("/big") {
            let body = vec![b'z'; 200 * 1024];
            [
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes(),
                body,
            ]
            .concat()
        } else {
            let text = format!("{method} {path} body={}", body.len());
            let shown = if method == "HEAD" { "" } else { text.as_str() };
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{shown}",
                text.len()
            )
            .into_bytes()
        };
        if out.write_all(&answer).is_err() {
            return;
        }
        if header(&head, "connection").is_some_and(|v| v.eq_ignore_ascii_case("close")) {
            return;
        }
    }
}

/// A TCP server that records every byte and echoes it back.
fn echo_server() -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Arc::new(Mutex::new(Vec::new()));
    let all = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let all = all.clone();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                loop {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            all.lock().unwrap().extend_from_slice(&buffer[..n]);
                            let _ = stream.write_all(&buffer[..n]);
                        }
                    }
                }
            });
        }
    });
    (port, received)
}

// ---------------------------------------------------------------------------
// A client that reads responses framed
// ---------------------------------------------------------------------------

#[derive(Debug)]
struct Response {
    status: u16,
    head: String,
    body: Vec<u8>,
    /// Bytes this response took on the wire.
    wire: usize,
}

struct Client {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Client {
    fn new(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Client { stream, reader }
    }

    fn send(&mut self, bytes: impl AsRef<[u8]>) {
        self.stream.write_all(bytes.as_ref()).unwrap();
    }

    /// The next response; `to_head` when it answers a HEAD.
    fn response(&mut self, to_head: bool) -> Response {
        let mut head = String::new();
        loop {
            let line = read_line(&mut self.reader).expect("a response head");
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let status: u16 = head[9..12].parse().unwrap();
        let mut wire = head.len();
        let established = head.starts_with("HTTP/1.1 200 Connection Established\r\n");
        let body = if to_head || established || status == 204 || status == 304 || status == 101 {
            Vec::new()
        } else if header(&head, "transfer-encoding").is_some() {
            let mut counted = Counted {
                inner: &mut self.reader,
                count: 0,
            };
            let body = read_chunked(&mut BufReader::new(&mut counted)).unwrap();
            wire += counted.count;
            body
        } else if let Some(length) = header(&head, "content-length") {
            let mut body = vec![0; length.parse().unwrap()];
            self.reader.read_exact(&mut body).unwrap();
            wire += body.len();
            body
        } else {
            let mut body = Vec::new();
            self.reader.read_to_end(&mut body).unwrap();
            wire += body.len();
            body
        };
        Response {
            status,
            head,
            body,
            wire,
        }
    }

    /// Whether the gateway closed the connection (EOF, nothing more).
    fn closed(&mut self) -> bool {
        let mut rest = Vec::new();
        matches!(self.reader.read_to_end(&mut rest), Ok(0))
    }
}

/// Counts what a chunked read consumed (byte by byte, so nothing is read ahead).
struct Counted<'r, R> {
    inner: &'r mut R,
    count: usize,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let limit = buf.len().min(1);
        let n = self.inner.read(&mut buf[..limit])?;
        self.count += n;
        Ok(n)
    }
}

fn get(target: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n")
}

fn rules(rules: Vec<Rule>) -> Allowlist {
    Allowlist::with_rules(rules, true).unwrap()
}

fn plain(entries: &[String]) -> Allowlist {
    Allowlist::new(entries, true).unwrap()
}

fn start(allowlist: Allowlist, configure: impl FnOnce(&mut GatewayConfig)) -> Gateway {
    let mut config = GatewayConfig::new(allowlist);
    configure(&mut config);
    Gateway::start(config).unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The egress events once `count` are there (a request's event is pushed
/// just after its response is relayed).
fn events(gateway: &Gateway, count: usize) -> Vec<EgressEvent> {
    for _ in 0..500 {
        let events = gateway.egress();
        if events.len() >= count {
            return events;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("expected {count} egress events, got {:?}", gateway.egress());
}

/// The denials once `count` are there (a tunnel's is recorded as it ends).
fn denials(gateway: &Gateway, count: usize) -> Vec<littleghost_sandbox_core::network::Denial> {
    for _ in 0..500 {
        let denials = gateway.denials();
        if denials.len() >= count {
            return denials;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("expected {count} denials, got {:?}", gateway.denials());
}

// ---------------------------------------------------------------------------
// Keep-alive and framing
// ---------------------------------------------------------------------------

/// Invariant: requests on one client connection reuse one upstream
/// connection while they go to the same destination, and a request naming
/// another destination is decided and connected on its own.
#[test]
fn keep_alive_serves_two_requests_on_one_connection_and_another_destination_on_its_own() {
    let first = server();
    let second = server();
    let gateway = start(plain(&[first.entry(), second.entry()]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    client.send(get(&format!("http://{}/one", first.entry())));
    let one = client.response(false);
    client.send(get(&format!("http://{}/two", first.entry())));
    let two = client.response(false);
    assert_eq!(
        (one.status, text(&one.body)),
        (200, "GET /one body=0".into())
    );
    assert_eq!(
        (two.status, text(&two.body)),
        (200, "GET /two body=0".into())
    );
    assert_eq!(
        first.connections.load(Ordering::SeqCst),
        1,
        "one upstream connection"
    );
    assert_eq!(first.requests().len(), 2);

    client.send(get(&format!("http://{}/three", second.entry())));
    let three = client.response(false);
    assert_eq!(text(&three.body), "GET /three body=0");
    assert_eq!(second.connections.load(Ordering::SeqCst), 1);
    // Back to the first destination: a new connection to it.
    client.send(get(&format!("http://{}/four", first.entry())));
    assert_eq!(text(&client.response(false).body), "GET /four body=0");
    assert_eq!(first.connections.load(Ordering::SeqCst), 2);
    // The forwarded head asks the destination to keep the connection.
    let head = &first.requests()[0].head;
    assert!(head.contains("Connection: keep-alive\r\n"), "{head}");
}

/// Invariant: a request body of any size is forwarded whole (the old path
/// forwarded only what came with the head), and a chunked body goes
/// through chunked both ways.
#[test]
fn bodies_are_forwarded_whole_content_length_and_chunked_both_ways() {
    let upstream = server();
    let gateway = start(plain(&[upstream.entry()]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    let big: Vec<u8> = (0..300 * 1024).map(|i| (i % 251) as u8).collect();
    client.send(format!(
        "POST http://{}/upload HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        upstream.entry(),
        big.len()
    ));
    for piece in big.chunks(7000) {
        client.send(piece);
    }
    let answer = client.response(false);
    assert_eq!(
        text(&answer.body),
        format!("POST /upload body={}", big.len())
    );
    assert_eq!(upstream.requests()[0].body, big);

    client.send(format!(
        "POST http://{}/chunked HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n",
        upstream.entry()
    ));
    client.send("3;ext\r\nefg\r\n0\r\nX-Sum: 7\r\n\r\n");
    let chunked = client.response(false);
    assert_eq!(
        header(&chunked.head, "transfer-encoding").as_deref(),
        Some("chunked")
    );
    assert_eq!(text(&chunked.body), "hello, world");
    let seen = &upstream.requests()[1];
    assert_eq!(seen.body, b"abcdefg");
    assert!(
        seen.head.contains("Transfer-Encoding: chunked\r\n"),
        "{}",
        seen.head
    );
    // Still one upstream connection: both framings ended where they should.
    client.send(get(&format!("http://{}/after", upstream.entry())));
    assert_eq!(text(&client.response(false).body), "GET /after body=0");
    assert_eq!(upstream.connections.load(Ordering::SeqCst), 1);
}

/// Invariant: the destination receives each body framed anew from the data
/// the gateway decoded (docs/security.md "Request framing"): one
/// `Content-Length` however often the child repeated it, chunks without the
/// child's extensions, size lines or trailer fields, so no framing detail a
/// destination might read differently from the gateway ever reaches it.
#[test]
fn the_destination_gets_bodies_framed_anew_from_the_data_the_gateway_read() {
    let upstream = server();
    let gateway = start(plain(&[upstream.entry()]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    client.send(format!(
        "POST http://{}/twice HTTP/1.1\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc",
        upstream.entry()
    ));
    assert_eq!(text(&client.response(false).body), "POST /twice body=3");
    client.send(format!(
        "POST http://{}/ext HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
         02;name=\"x;y\"\r\nab\r\n1\r\nc\r\n0;last\r\nX-Late: 1\r\n\r\n",
        upstream.entry()
    ));
    assert_eq!(text(&client.response(false).body), "POST /ext body=3");
    let seen = upstream.requests();
    assert_eq!(seen[1].body, b"abc");
    let raw = text(&upstream.raw());
    let lengths = raw
        .to_ascii_lowercase()
        .matches("content-length: 3\r\n")
        .count();
    assert_eq!(lengths, 1, "{raw}");
    assert!(!raw.contains("name="), "{raw}");
    assert!(!raw.contains("last"), "{raw}");
    assert!(!raw.contains("X-Late"), "{raw}");
    assert_eq!(upstream.connections.load(Ordering::SeqCst), 1);
}

/// Invariant: responses without a body (HEAD, 204, 304 even with a
/// Content-Length) end where HTTP says, so the next response on the
/// connection is read from its first byte.
#[test]
fn head_204_and_304_responses_have_no_body_and_the_connection_goes_on() {
    let upstream = server();
    let gateway = start(plain(&[upstream.entry()]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    let base = format!("http://{}", upstream.entry());
    client.send(format!("HEAD {base}/x HTTP/1.1\r\n\r\n"));
    let head = client.response(true);
    assert_eq!(head.status, 200);
    assert_eq!(header(&head.head, "content-length").as_deref(), Some("14"));
    client.send(get(&format!("{base}/204")));
    assert_eq!(client.response(false).status, 204);
    client.send(get(&format!("{base}/304")));
    assert_eq!(client.response(false).status, 304);
    client.send(get(&format!("{base}/last")));
    let last = client.response(false);
    assert_eq!(
        (last.status, text(&last.body)),
        (200, "GET /last body=0".into())
    );
    assert_eq!(upstream.connections.load(Ordering::SeqCst), 1);
}

/// Invariant: pipelined requests (sent together before any answer) are
/// each decided and answered in order.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let upstream = server();
    let gateway = start(plain(&[upstream.entry()]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    let base = format!("http://{}", upstream.entry());
    client.send(format!(
        "{}POST {base}/b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz{}{}",
        get(&format!("{base}/a")),
        get(&format!("{base}/chunked")),
        format_args!("GET {base}/c HTTP/1.1\r\nConnection: close\r\n\r\n"),
    ));
    assert_eq!(text(&client.response(false).body), "GET /a body=0");
    assert_eq!(text(&client.response(false).body), "POST /b body=3");
    assert_eq!(text(&client.response(false).body), "hello, world");
    assert_eq!(text(&client.response(false).body), "GET /c body=0");
    assert!(client.closed(), "Connection: close ends it");
    assert_eq!(upstream.requests().len(), 4);
}

/// Invariant: a response that ends with the connection is relayed to its
/// end, and the client's connection ends with it.
#[test]
fn a_response_framed_by_close_is_relayed_whole_and_ends_the_connection() {
    let upstream = server();
    let gateway = start(plain(&[upstream.entry()]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    client.send(get(&format!("http://{}/close", upstream.entry())));
    let answer = client.response(false);
    assert_eq!(text(&answer.body), "until the end");
}

/// Invariant: bytes a destination sends past the response to a request
/// are never delivered as the response to the client's next request.
#[test]
fn a_response_nobody_asked_for_is_never_relayed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let served = served.clone();
            std::thread::spawn(move || {
                let mut out = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    loop {
                        match read_line(&mut reader) {
                            None => return,
                            Some(line) if line == "\r\n" => break,
                            Some(_) => {}
                        }
                    }
                    let answer: &[u8] = if served.fetch_add(1, Ordering::SeqCst) == 0 {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirstHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfake!"
                    } else {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nreal!"
                    };
                    let _ = out.write_all(answer);
                }
            });
        }
    });
    let gateway = start(plain(&[format!("127.0.0.1:{port}")]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    client.send(get(&format!("http://127.0.0.1:{port}/1")));
    assert_eq!(text(&client.response(false).body), "first");
    std::thread::sleep(Duration::from_millis(100));
    // Either the gateway closed the connection, or it answers the real response.
    if client
        .stream
        .write_all(get(&format!("http://127.0.0.1:{port}/2")).as_bytes())
        .is_ok()
    {
        let closed = client.reader.fill_buf().map_or(true, |b| b.is_empty());
        if !closed {
            assert_eq!(text(&client.response(false).body), "real!");
        }
    }
}

// ---------------------------------------------------------------------------
// HTTP rules
// ---------------------------------------------------------------------------

/// Invariant: a request outside its destination's methods/paths never
/// reaches it; the client gets 403 and a denial naming method and path, on
/// a connection that stays usable; dot segments and encoded dots cannot
/// climb out of an allowed prefix.
#[test]
fn a_request_outside_the_rules_gets_403_and_the_connection_goes_on() {
    let upstream = server();
    let rule = Rule {
        destination: Pattern::parse(&upstream.entry()).unwrap(),
        inspect: false,
        methods: vec!["GET".into()],
        paths: vec!["/public/".into()],
    };
    let gateway = start(rules(vec![rule]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    let base = format!("http://{}", upstream.entry());
    client.send(get(&format!("{base}/public/a")));
    assert_eq!(client.response(false).status, 200);
    let refused_paths = [
        "/private",
        "/public/../private",
        "/public/%2e%2e/private",
        "/public/%2E%2e%2fprivate",
        "/public/..%2fprivate",
        "/public/..;/private",
        "/public/.;x/..;y/private",
    ];
    for path in refused_paths {
        client.send(get(&format!("{base}{path}")));
        let answer = client.response(false);
        assert_eq!(answer.status, 403, "{path}: {}", answer.head);
        assert!(text(&answer.body).contains("outside the destination's rules"));
    }
    client.send(format!("POST {base}/public/a HTTP/1.1\r\n\r\n"));
    assert_eq!(client.response(false).status, 403);
    // A switch to another HTTP (h2c) would carry requests the rules never see.
    client.send(format!(
        "GET {base}/public/a HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
    ));
    assert_eq!(client.response(false).status, 403);
    // Same connection, still served.
    client.send(get(&format!("{base}/public/b")));
    assert_eq!(text(&client.response(false).body), "GET /public/b body=0");

    let seen: Vec<String> = upstream.requests().iter().map(|r| r.head.clone()).collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let denials = gateway.denials();
    assert_eq!(denials.len(), refused_paths.len() + 2);
    assert!(denials
        .iter()
        .all(|d| d.reason == DenialReason::RequestNotAllowed));
    assert_eq!(
        denials[1].request,
        Some(("GET".to_owned(), "/public/../private".to_owned()))
    );
    assert_eq!(
        denials[denials.len() - 2].request,
        Some(("POST".to_owned(), "/public/a".to_owned()))
    );
    assert_eq!(
        denials.last().unwrap().request,
        Some(("GET".to_owned(), "/public/a".to_owned()))
    );
    // A refused request with a body closes the connection (its body is never read).
    client.send(format!(
        "POST {base}/public/a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
    ));
    assert_eq!(client.response(false).status, 403);
    assert!(client.closed());
}

/// Invariant: HTTP rules on a destination reached by an uninspected
/// CONNECT cannot be enforced, so the tunnel is refused (fail closed).
#[test]
fn a_connect_to_a_destination_with_rules_but_no_inspection_is_refused() {
    let (port, received) = echo_server();
    let rule = Rule {
        destination: Pattern::parse(&format!("127.0.0.1:{port}")).unwrap(),
        inspect: false,
        methods: vec!["GET".into()],
        paths: Vec::new(),
    };
    let gateway = start(rules(vec![rule]), |_| {});
    let mut client = Client::new(gateway.socket_path());
    client.send(format!(
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    ));
    let answer = client.response(false);
    assert_eq!(answer.status, 403);
    assert!(
        text(&answer.body).contains("inspect: true"),
        "{}",
        text(&answer.body)
    );
    assert_eq!(
        gateway.denials()[0].reason,
        DenialReason::InspectionRequired
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(received.lock().unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------

const VALUE: &str = "real-token-value-4711";

struct Secreted {
    home: Server,
    other: Server,
    echo: u16,
    echo_received: Arc<Mutex<Vec<u8>>>,
    stand_in: String,
    gateway: Gateway,
}

/// A gateway with one secret for `home` only; `other` and a raw echo
/// server are allowed destinations too.
fn secreted() -> Secreted {
    let home = server();
    let other = server();
    let (echo, echo_received) = echo_server();
    let secret = Secret::new("token", VALUE, &[home.entry()]).unwrap();
    let stand_in = secret.stand_in().to_owned();
    let entries = [home.entry(), other.entry(), format!("127.0.0.1:{echo}")];
    let gateway = start(plain(&entries), |config| {
        config.secrets = Secrets::new(vec![secret]).unwrap();
    });
    Secreted {
        home,
        other,
        echo,
        echo_received,
        stand_in,
        gateway,
    }
}

fn assert_never_shown(case: &Secreted, what: &str) {
    for shown in [
        what.to_owned(),
        format!("{:?}", case.gateway.denials()),
        format!("{:?}", case.gateway.egress()),
    ] {
        assert!(!shown.contains(VALUE), "the value is shown: {shown}");
        assert!(
            !shown.contains(&case.stand_in),
            "the stand-in is shown: {shown}"
        );
    }
}

/// Invariant: the stand-in is swapped for the value in the request line and
/// headers toward the secret's destination, and refused (403, a
/// `secret_exfiltration` denial, nothing forwarded) toward any other; no
/// answer or record shows the value or the stand-in.
#[test]
fn a_stand_in_is_swapped_toward_its_destination_and_refused_toward_another() {
    let case = secreted();
    let stand_in = &case.stand_in;
    let mut client = Client::new(case.gateway.socket_path());
    client.send(format!(
        "GET http://{}/api?key={stand_in} HTTP/1.1\r\nAuthorization: Bearer {stand_in}\r\n\r\n",
        case.home.entry()
    ));
    let answer = client.response(false);
    assert_eq!(answer.status, 200);
    let seen = &case.home.requests()[0].head;
    assert!(
        seen.starts_with(&format!("GET /api?key={VALUE} HTTP/1.1\r\n")),
        "{seen}"
    );
    assert!(
        seen.contains(&format!("Authorization: Bearer {VALUE}\r\n")),
        "{seen}"
    );
    assert!(!seen.contains(stand_in.as_str()));
    // The answer echoes the path the server saw; the gateway's own never shows it.
    let requests = [
        format!(
            "GET http://{}/api?key={stand_in} HTTP/1.1\r\n\r\n",
            case.other.entry()
        ),
        format!(
            "GET http://{}/api HTTP/1.1\r\nAuthorization: Bearer {stand_in}\r\n\r\n",
            case.other.entry()
        ),
        format!(
            "GET http://{}/api HTTP/1.1\r\nX-{stand_in}: 1\r\n\r\n",
            case.other.entry()
        ),
        format!(
            "GET http://{}/{stand_in} HTTP/1.1\r\n\r\n",
            case.other.entry()
        ),
    ];
    for request in &requests {
        client.send(request);
        let refused = client.response(false);
        assert_eq!(refused.status, 403, "{request}");
        assert!(text(&refused.body).contains("stand-in"));
        assert_never_shown(&case, &format!("{}{}", refused.head, text(&refused.body)));
    }
    assert!(
        case.other.requests().is_empty(),
        "nothing reached the other destination"
    );
    let denials = case.gateway.denials();
    assert_eq!(denials.len(), requests.len());
    assert!(denials
        .iter()
        .all(|d| d.reason == DenialReason::SecretExfiltration));
    assert_eq!(
        denials[3].request,
        Some(("GET".to_owned(), "/{secret:token}".to_owned()))
    );
    // A TRACE would echo the swapped value back: refused even toward home.
    client.send(format!(
        "TRACE http://{}/ HTTP/1.1\r\nAuthorization: {stand_in}\r\n\r\n",
        case.home.entry()
    ));
    assert_eq!(client.response(false).status, 403);
    assert_eq!(case.home.requests().len(), 1);
    // A malformed URL quoting the stand-in: the 400 does not show it.
    let mut client = Client::new(case.gateway.socket_path());
    client.send(format!("GET http://a.test:{stand_in}/ HTTP/1.1\r\n\r\n"));
    let malformed = client.response(false);
    assert_eq!(malformed.status, 400);
    assert!(text(&malformed.body).contains("invalid port"));
    assert_never_shown(&case, &text(&malformed.body));
}

/// Invariant: a stand-in in a body bound for another destination is never
/// passed on whole (the body is cut before the piece completing it, the
/// client gets 403), however the body is framed or split; toward the
/// secret's own destination a body passes untouched.
#[test]
fn a_stand_in_in_a_body_toward_another_destination_is_cut() {
    let case = secreted();
    let stand_in = case.stand_in.clone();
    let socket = case.gateway.socket_path().to_owned();
    let split = stand_in.len() / 2;

    // Content-Length, the stand-in split across two writes, after 100 KiB.
    let mut body = vec![b'a'; 100 * 1024];
    body.extend_from_slice(stand_in.as_bytes());
    body.extend_from_slice(b"tail");
    let mut client = Client::new(&socket);
    client.send(format!(
        "POST http://{}/up HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        case.other.entry(),
        body.len()
    ));
    let at = 100 * 1024 + split;
    client.send(&body[..at]);
    std::thread::sleep(Duration::from_millis(200));
    client.send(&body[at..]);
    let answer = client.response(false);
    assert_eq!(answer.status, 403, "{}", answer.head);
    assert!(client.closed());

    // Chunked, the stand-in split across two chunks.
    let mut client = Client::new(&socket);
    client.send(format!(
        "POST http://{}/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n{:x}\r\n{}\r\n0\r\n\r\n",
        case.other.entry(),
        split,
        &stand_in[..split],
        stand_in.len() - split,
        &stand_in[split..],
    ));
    assert_eq!(client.response(false).status, 403);

    // Chunk extensions and trailer fields are read too.
    for framing in [
        format!("3;note={stand_in}\r\nabc\r\n0\r\n\r\n"),
        format!("3\r\nabc\r\n0\r\nX-Sig: {stand_in}\r\n\r\n"),
    ] {
        let mut client = Client::new(&socket);
        client.send(format!(
            "POST http://{}/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{framing}",
            case.other.entry()
        ));
        assert_eq!(client.response(false).status, 403, "{framing}");
    }

    std::thread::sleep(Duration::from_millis(200));
    let raw = case.other.raw();
    assert!(
        !raw.windows(stand_in.len())
            .any(|w| w == stand_in.as_bytes()),
        "the whole stand-in reached the other destination"
    );
    assert!(case.other.requests().is_empty(), "no body completed there");
    let denials = case.gateway.denials();
    assert_eq!(denials.len(), 4);
    assert!(denials
        .iter()
        .all(|d| d.reason == DenialReason::SecretExfiltration));

    // Toward home the body passes as it is (the value only goes in heads).
    let mut client = Client::new(&socket);
    client.send(format!(
        "POST http://{}/up HTTP/1.1\r\nContent-Length: {}\r\n\r\n{stand_in}",
        case.home.entry(),
        stand_in.len()
    ));
    assert_eq!(client.response(false).status, 200);
    assert_eq!(case.home.requests()[0].body, stand_in.as_bytes());
    assert_never_shown(&case, "");
}

/// Invariant: the gateway cannot swap inside a tunnel, so a stand-in in a
/// CONNECT head, or in the bytes of a tunnel, is refused: before the 200
/// when it came with the head, else by cutting the tunnel before the piece
/// that completes it; a denial is recorded either way.
#[test]
fn a_stand_in_in_a_tunnel_or_a_connect_head_is_refused() {
    let case = secreted();
    let stand_in = case.stand_in.clone();
    let socket = case.gateway.socket_path().to_owned();
    let target = format!("127.0.0.1:{}", case.echo);

    for request in [
        format!("CONNECT {target} HTTP/1.1\r\nProxy-Authorization: {stand_in}\r\n\r\n"),
        format!("CONNECT {stand_in}.example:443 HTTP/1.1\r\n\r\n"),
        format!("CONNECT {target} HTTP/1.1\r\n\r\nhello {stand_in}"),
    ] {
        let mut client = Client::new(&socket);
        client.send(&request);
        let answer = client.response(false);
        assert_eq!(answer.status, 403, "{request}");
        assert_never_shown(&case, &format!("{}{}", answer.head, text(&answer.body)));
    }

    let mut client = Client::new(&socket);
    client.send(format!("CONNECT {target} HTTP/1.1\r\n\r\n"));
    assert_eq!(client.response(false).status, 200);
    client.send("ping\n");
    let mut echoed = [0u8; 5];
    client.reader.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"ping\n");
    let split = stand_in.len() / 2;
    client.send(format!("token {}", &stand_in[..split]));
    std::thread::sleep(Duration::from_millis(200));
    client.send(&stand_in[split..]);
    let mut rest = Vec::new();
    let _ = client.reader.read_to_end(&mut rest);
    let received = case.echo_received.lock().unwrap().clone();
    assert!(
        !received
            .windows(stand_in.len())
            .any(|w| w == stand_in.as_bytes()),
        "the whole stand-in went through the tunnel"
    );
    let denials = denials(&case.gateway, 4);
    assert_eq!(denials.len(), 4, "{denials:?}");
    assert!(denials
        .iter()
        .all(|d| d.reason == DenialReason::SecretExfiltration));
    let events = events(&case.gateway, 4);
    let cut = events.last().unwrap();
    assert_eq!(
        (cut.method.as_deref(), cut.status, cut.decision),
        (Some("CONNECT"), Some(200), Decision::Denied)
    );
    assert!(events[..3]
        .iter()
        .all(|e| e.status == Some(403) && e.decision == Decision::Denied));
    assert_never_shown(&case, "");
}

// ---------------------------------------------------------------------------
// Upgrades
// ---------------------------------------------------------------------------

/// Invariant: a `101 Switching Protocols` to a request that asked for an
/// upgrade turns the connection into a two-way tunnel (WebSocket), whose
/// client bytes are still watched for stand-ins.
#[test]
fn a_101_upgrade_becomes_a_two_way_tunnel() {
    let case = secreted();
    let mut client = Client::new(case.gateway.socket_path());
    client.send(format!(
        "GET http://{}/ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n",
        case.other.entry()
    ));
    let answer = client.response(false);
    assert_eq!(answer.status, 101);
    let seen = &case.other.requests()[0].head;
    assert!(
        seen.contains("Upgrade: websocket\r\n") && seen.contains("Connection: Upgrade\r\n"),
        "{seen}"
    );
    client.send("frame one");
    let mut echoed = [0u8; 9];
    client.reader.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"frame one");
    client.send(format!("frame {}", case.stand_in));
    let mut rest = Vec::new();
    let _ = client.reader.read_to_end(&mut rest);
    assert!(!text(&rest).contains(&case.stand_in));
    let denials = denials(&case.gateway, 1);
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].reason, DenialReason::SecretExfiltration);
    let event = events(&case.gateway, 1).pop().unwrap();
    assert_eq!(
        (event.status, event.decision),
        (Some(101), Decision::Denied)
    );
}

// ---------------------------------------------------------------------------
// Egress record
// ---------------------------------------------------------------------------

/// Invariant: each request and tunnel leaves one event with its method,
/// path, status, decision and the bytes that crossed: the body sent after
/// the head, everything relayed back (head and body).
#[test]
fn egress_events_count_the_bytes_of_each_request_and_tunnel() {
    let upstream = server();
    let (echo, _) = echo_server();
    let unlisted = server();
    let gateway = start(
        plain(&[upstream.entry(), format!("127.0.0.1:{echo}")]),
        |_| {},
    );
    let mut client = Client::new(gateway.socket_path());
    let body = vec![b'q'; 1000];
    client.send(format!(
        "POST http://{}/form?x=1 HTTP/1.1\r\nContent-Length: 1000\r\n\r\n",
        upstream.entry()
    ));
    client.send(&body);
    let posted = client.response(false);
    client.send(get(&format!("http://{}/big", upstream.entry())));
    let big = client.response(false);
    assert_eq!(big.body.len(), 200 * 1024);
    client.send(format!(
        "POST http://{}/chunked HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        upstream.entry()
    ));
    let chunked = client.response(false);

    let mut refused = Client::new(gateway.socket_path());
    refused.send(get(&format!("http://{}/", unlisted.entry())));
    assert_eq!(refused.response(false).status, 403);

    let mut tunnel = Client::new(gateway.socket_path());
    tunnel.send(format!("CONNECT 127.0.0.1:{echo} HTTP/1.1\r\n\r\n"));
    assert_eq!(tunnel.response(false).status, 200);
    tunnel.send("0123456789");
    let mut echoed = [0u8; 10];
    tunnel.reader.read_exact(&mut echoed).unwrap();
    drop(tunnel);

    let events = events(&gateway, 5);
    let find = |method: &str, path: Option<&str>| {
        events
            .iter()
            .find(|e| e.method.as_deref() == Some(method) && e.path.as_deref() == path)
            .unwrap_or_else(|| panic!("no {method} {path:?} in {events:?}"))
            .clone()
    };
    let post = find("POST", Some("/form?x=1"));
    assert_eq!(post.destination, upstream.entry());
    assert_eq!(
        (post.status, post.decision, post.inspected),
        (Some(200), Decision::Allowed, false)
    );
    assert_eq!(
        (post.bytes_sent, post.bytes_received),
        (1000, posted.wire as u64)
    );
    let get_big = find("GET", Some("/big"));
    assert_eq!(
        (get_big.bytes_sent, get_big.bytes_received),
        (0, big.wire as u64)
    );
    let post_chunked = find("POST", Some("/chunked"));
    assert_eq!(
        post_chunked.bytes_sent,
        "3\r\nabc\r\n0\r\n\r\n".len() as u64
    );
    assert_eq!(post_chunked.bytes_received, chunked.wire as u64);
    let denied = find("GET", Some("/"));
    assert_eq!(
        (denied.status, denied.decision),
        (Some(403), Decision::Denied)
    );
    assert_eq!(denied.destination, unlisted.entry());
    let connect = find("CONNECT", None);
    assert_eq!(
        (connect.status, connect.decision),
        (Some(200), Decision::Allowed)
    );
    assert_eq!((connect.bytes_sent, connect.bytes_received), (10, 10));
}

// ---------------------------------------------------------------------------
// DNS
// ---------------------------------------------------------------------------

/// A name that answers a public address first and loopback afterwards.
struct Rebinding {
    lookups: AtomicUsize,
    private: SocketAddr,
}

impl Resolve for Rebinding {
    fn lookup<'a>(&'a self, _name: &'a str, port: u16) -> Lookup<'a> {
        let first = self.lookups.fetch_add(1, Ordering::SeqCst) == 0;
        let answer = if first {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::new(203, 0, 114, 1)), port)
        } else {
            self.private
        };
        Box::pin(async move { Ok(vec![answer]) })
    }
}

/// Invariant: the gateway resolves a name once per upstream connection
/// and connects only to the addresses of that answer, after vetting them:
/// a name that rebinds to a private address between check and connect
/// never gets the gateway to connect there, and a later lookup answering
/// it is refused.
#[test]
fn a_name_rebinding_to_a_private_address_is_never_connected() {
    let private = server();
    let resolver = Arc::new(Rebinding {
        lookups: AtomicUsize::new(0),
        private: SocketAddr::from(([127, 0, 0, 1], private.port)),
    });
    let name = format!("rebind.test:{}", private.port);
    let allowlist = Allowlist::new(std::slice::from_ref(&name), false).unwrap();
    let seam = resolver.clone();
    let gateway = start(allowlist, move |config| {
        config.resolver = seam;
        config.connect_timeout = Duration::from_millis(500);
    });
    let mut client = Client::new(gateway.socket_path());
    client.send(format!("CONNECT {name} HTTP/1.1\r\n\r\n"));
    // The vetted public answer was used (and failed to connect here, or connected
    // elsewhere): never a second lookup for the same connection.
    let first = client.response(false);
    assert_ne!(first.status, 403, "{}", first.head);
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 1);
    drop(client);
    for request in [
        format!("CONNECT {name} HTTP/1.1\r\n\r\n"),
        get(&format!("http://{name}/")),
    ] {
        let mut client = Client::new(gateway.socket_path());
        client.send(&request);
        let answer = client.response(false);
        assert_eq!(answer.status, 403, "{}", answer.head);
        assert!(text(&answer.body).contains("private or reserved"));
    }
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 3);
    assert_eq!(
        private.connections.load(Ordering::SeqCst),
        0,
        "the private address was never connected"
    );
    // The first answer failed to connect here (a denial saying so, with
    // the address it tried), then the two private ones were refused.
    let reasons: Vec<DenialReason> = gateway.denials().iter().map(|d| d.reason).collect();
    assert_eq!(
        reasons[reasons.len() - 2..],
        [DenialReason::PrivateDestination; 2]
    );
    assert!(reasons[..reasons.len() - 2]
        .iter()
        .all(|r| *r == DenialReason::UpstreamUnreachable));
}
