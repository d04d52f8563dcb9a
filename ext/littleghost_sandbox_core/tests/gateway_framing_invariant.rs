//! The gateway's framing invariant, tested as one (docs/security.md
//! "Request framing"): whatever bytes a child sends to the gateway, the
//! destination parses exactly the requests the gateway decided on, each
//! framed as the gateway read it, and the real value of a secret leaves only
//! inside requests the rules allow, to that secret's destination, and never
//! comes back to the child.
//!
//! The destination here reads with hyper (httparse underneath), a widely
//! fuzzed HTTP/1.1 implementation with no code in common with the gateway's
//! parser, so a request the two read differently shows up as a request the
//! gateway never decided on. The child's bytes are smuggling shapes: a first
//! request whose body is itself a request, framed every way the gateway must
//! either read exactly or refuse, with every `Connection` option, then a
//! request carrying a secret's stand-in.

use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, StreamOwned};
use tokio_rustls::TlsAcceptor;

use littleghost_sandbox_core::network::{
    Allowlist, Decision, EgressEvent, Gateway, GatewayConfig, Pattern, Rule, Secret, Secrets,
};

const VALUE: &str = "real-value-of-the-secret-0815";

/// One request as the destination parsed it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    method: String,
    target: String,
    /// `name: value` lines as hyper read them.
    fields: String,
    body: Vec<u8>,
    /// Whether the body arrived whole.
    complete: bool,
}

impl Seen {
    fn carries_value(&self) -> bool {
        let text = format!("{} {}\n{}", self.method, self.target, self.fields);
        text.contains(VALUE) || String::from_utf8_lossy(&self.body).contains(VALUE)
    }
}

/// A keep-alive HTTP/1.1 destination served by hyper, in plain TCP or
/// behind TLS (the inspected channel). It answers a request for `/ok/...`
/// with `ok`, and any other with its own head (so a forbidden request
/// carrying the value would show it to the child).
struct Destination {
    port: u16,
    /// The CA of its certificate (TLS only).
    ca_pem: Option<String>,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Peers in the order their connections were accepted.
    accepted: Arc<Mutex<Vec<SocketAddr>>>,
    /// Connections still being served.
    open: Arc<AtomicUsize>,
    /// What hyper refused to parse.
    parse_errors: Arc<Mutex<Vec<String>>>,
    _runtime: tokio::runtime::Runtime,
}

/// A CA made here and a certificate it signed for `localhost`.
fn certificate() -> (String, Arc<ServerConfig>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca = params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let pem = pem::encode(&pem::Pem::new("CERTIFICATE", ca.der().to_vec()));
    (pem, Arc::new(config))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Destination {
    fn start(channel: Channel) -> Destination {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let (ca_pem, tls) = match channel {
            Channel::Plain => (None, None),
            Channel::Inspected => {
                let (pem, config) = certificate();
                (Some(pem), Some(TlsAcceptor::from(config)))
            }
        };
        let seen = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let open = Arc::new(AtomicUsize::new(0));
        let parse_errors = Arc::new(Mutex::new(Vec::new()));
        let (all, peers, count, errors) = (
            seen.clone(),
            accepted.clone(),
            open.clone(),
            parse_errors.clone(),
        );
        runtime.spawn(async move {
            loop {
                let Ok((stream, peer)) = listener.accept().await else {
                    continue;
                };
                count.fetch_add(1, Ordering::SeqCst);
                peers.lock().unwrap().push(peer);
                let (all, count, errors, tls) =
                    (all.clone(), count.clone(), errors.clone(), tls.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request| answer(request, all.clone()));
                    let served = match tls {
                        None => {
                            http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await
                        }
                        Some(tls) => match tls.accept(stream).await {
                            Ok(stream) => {
                                http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await
                            }
                            Err(_) => Ok(()),
                        },
                    };
                    if let Err(error) = served {
                        if error.is_parse() || error.is_parse_too_large() {
                            errors.lock().unwrap().push(error.to_string());
                        }
                    }
                    count.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Destination {
            port,
            ca_pem,
            seen,
            accepted,
            open,
            parse_errors,
            _runtime: runtime,
        }
    }

    /// Its allowlist entry: the name its certificate carries when behind TLS.
    fn entry(&self) -> String {
        match self.ca_pem {
            None => format!("127.0.0.1:{}", self.port),
            Some(_) => format!("localhost:{}", self.port),
        }
    }

    /// What it parsed, once every connection the gateway opened is over.
    /// Connections are accepted in the order they came, so once a last
    /// connection of its own is accepted every earlier one was; then it
    /// waits for them all to end.
    fn settled(&self) -> (Vec<Seen>, Vec<String>) {
        let last = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let own = last.local_addr().unwrap();
        for _ in 0..2000 {
            if self.accepted.lock().unwrap().contains(&own) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(self.accepted.lock().unwrap().contains(&own));
        drop(last);
        for _ in 0..2000 {
            if self.open.load(Ordering::SeqCst) == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            self.open.load(Ordering::SeqCst),
            0,
            "connections still open"
        );
        self.accepted.lock().unwrap().clear();
        let seen = std::mem::take(&mut *self.seen.lock().unwrap());
        let errors = std::mem::take(&mut *self.parse_errors.lock().unwrap());
        (seen, errors)
    }
}

/// The two ways a child's HTTP reaches the gateway's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    /// Plain HTTP to the proxy (absolute-form targets).
    Plain,
    /// HTTPS to an inspected destination: `CONNECT`, then TLS ending at the
    /// gateway (origin-form targets).
    Inspected,
}

async fn answer(
    request: Request<Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().to_string();
    let target = request.uri().to_string();
    let mut fields = String::new();
    for (name, value) in request.headers() {
        fields.push_str(&format!(
            "{name}: {}\n",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    // Recorded as soon as the head is parsed: a request whose body never
    // completes was still read as a request.
    let index = {
        let mut seen = seen.lock().unwrap();
        seen.push(Seen {
            method: method.clone(),
            target: target.clone(),
            fields: fields.clone(),
            body: Vec::new(),
            complete: false,
        });
        seen.len() - 1
    };
    if let Ok(body) = request.into_body().collect().await {
        let mut seen = seen.lock().unwrap();
        seen[index].body = body.to_bytes().to_vec();
        seen[index].complete = true;
    }
    let shown = if target.starts_with("/ok/") {
        "ok".to_owned()
    } else {
        format!("{method} {target}\n{fields}")
    };
    Ok(Response::new(Full::new(Bytes::from(shown))))
}

/// What one run of child bytes did.
struct Outcome {
    /// Everything the child received.
    child: Vec<u8>,
    events: Vec<EgressEvent>,
    seen: Vec<Seen>,
    parse_errors: Vec<String>,
}

/// A gateway of its own, allowing only `GET /ok/...` to `destination`, with
/// one secret bound to it; the child sends `bytes` on one connection (inside
/// TLS through a `CONNECT` when inspected), ends its side, and reads until
/// the gateway closes.
fn run(destination: &Destination, secret: &Secret, bytes: &[u8]) -> Outcome {
    let rule = Rule {
        destination: Pattern::parse(&destination.entry()).unwrap(),
        inspect: destination.ca_pem.is_some(),
        methods: vec!["GET".into()],
        paths: vec!["/ok/".into()],
    };
    let mut config = GatewayConfig::new(Allowlist::with_rules(vec![rule], true).unwrap());
    config.secrets = Secrets::new(vec![secret.clone()]).unwrap();
    config.idle_timeout = Duration::from_secs(1);
    config.upstream_ca = destination
        .ca_pem
        .as_ref()
        .map(|pem| pem.as_bytes().to_vec());
    let gateway = Gateway::start(config).unwrap();
    let mut child = UnixStream::connect(gateway.socket_path()).unwrap();
    child
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut received = Vec::new();
    // The gateway may refuse and close before it read everything.
    if destination.ca_pem.is_none() {
        let _ = child.write_all(bytes);
        let _ = child.shutdown(Shutdown::Write);
        let _ = child.read_to_end(&mut received);
    } else {
        let target = destination.entry();
        write!(child, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && child.read(&mut byte).unwrap() == 1 {
            head.push(byte[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 200 "),
            "{}",
            String::from_utf8_lossy(&head)
        );
        let bundle = std::fs::read_to_string(gateway.ca_bundle().unwrap()).unwrap();
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(
            CertificateDer::pem_slice_iter(bundle.as_bytes())
                .map(|certificate| certificate.unwrap()),
        );
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("localhost").unwrap();
        let connection = ClientConnection::new(Arc::new(client), name).unwrap();
        let mut tls = StreamOwned::new(connection, child);
        let _ = tls.write_all(bytes);
        tls.conn.send_close_notify();
        let _ = tls.flush();
        let _ = tls.read_to_end(&mut received);
    }
    // Stopping records every exchange still under way.
    gateway.stop().unwrap();
    let events = gateway.egress();
    let (seen, parse_errors) = destination.settled();
    Outcome {
        child: received,
        events,
        seen,
        parse_errors,
    }
}

/// Checks the invariant on one run. Events and parsed requests are matched
/// in order: each allowed request is the next one the destination parsed;
/// a request the gateway forwarded and then cut (a malformed or forbidden
/// body, recorded denied) may have reached the destination as a head whose
/// body never completed, never as a complete request; nothing else reached
/// it.
fn check(case: &str, outcome: &Outcome) {
    assert!(
        outcome.parse_errors.is_empty(),
        "{case}: the destination could not parse what the gateway sent: {:?}",
        outcome.parse_errors
    );
    let mut parsed = outcome.seen.iter().peekable();
    // The inspected channel's `CONNECT` is the tunnel's event, not a request
    // the destination reads.
    let requests = outcome
        .events
        .iter()
        .filter(|event| event.method.as_deref() != Some("CONNECT"));
    for event in requests {
        let decided = (
            event.method.as_deref().unwrap_or_default(),
            event.path.as_deref().unwrap_or_default(),
        );
        let next = parsed
            .peek()
            .map(|seen| (seen.method.as_str(), seen.target.as_str()));
        if event.decision == Decision::Allowed {
            assert_eq!(
                next,
                Some(decided),
                "{case}: an allowed request the destination did not parse next\n{:#?}\n{:#?}",
                outcome.events,
                outcome.seen
            );
            parsed.next();
        } else if next == Some(decided) && parsed.peek().is_some_and(|seen| !seen.complete) {
            parsed.next();
        }
    }
    let rest: Vec<&Seen> = parsed.collect();
    assert!(
        rest.is_empty(),
        "{case}: the destination parsed requests the gateway never allowed: {rest:#?}\n{:#?}\nthe child got {}",
        outcome.events,
        String::from_utf8_lossy(&outcome.child)
    );
    for seen in outcome.seen.iter().filter(|seen| seen.carries_value()) {
        assert!(
            seen.method == "GET" && seen.target.starts_with("/ok/"),
            "{case}: the value left in a request the rules refuse: {seen:?}"
        );
    }
    assert!(
        !String::from_utf8_lossy(&outcome.child).contains(VALUE),
        "{case}: the value came back to the child: {}",
        String::from_utf8_lossy(&outcome.child)
    );
}

fn chunked(body: &str, size: impl Fn(usize) -> String) -> String {
    if body.is_empty() {
        return "0\r\n\r\n".to_owned();
    }
    format!("{}\r\n{body}\r\n0\r\n\r\n", size(body.len()))
}

/// Framings of the first request's body: its framing headers and the body
/// as it goes on the wire, for a given body.
fn framings(body: &str) -> Vec<(String, String)> {
    let n = body.len();
    let plain = |size: usize| format!("{size:x}");
    let encoded = chunked(body, plain);
    let mut framings = vec![
        (format!("Content-Length: {n}\r\n"), body.to_owned()),
        (
            format!("Content-Length: {n}\r\nContent-Length: {n}\r\n"),
            body.to_owned(),
        ),
        (
            format!("Content-Length: {n}\r\nContent-Length: 0\r\n"),
            body.to_owned(),
        ),
        (format!("Content-Length: 0{n}\r\n"), body.to_owned()),
        (format!("Content-Length: +{n}\r\n"), body.to_owned()),
        (format!("Content-Length: {n},{n}\r\n"), body.to_owned()),
        (format!("Content-Length:{n} \r\n"), body.to_owned()),
        (format!("Content-Length : {n}\r\n"), body.to_owned()),
        (format!("Content-Length: {n}\n"), body.to_owned()),
        (format!("X: y\r\n Content-Length: {n}\r\n"), body.to_owned()),
        ("Content-Length: 0\r\n".into(), body.to_owned()),
        (String::new(), body.to_owned()),
        ("Transfer-Encoding: chunked\r\n".into(), encoded.clone()),
        ("Transfer-Encoding: chunked\r\n".into(), body.to_owned()),
        (
            format!("Transfer-Encoding: chunked\r\nContent-Length: {n}\r\n"),
            encoded.clone(),
        ),
        (
            format!(
                "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n",
                encoded.len()
            ),
            encoded.clone(),
        ),
        ("Transfer-Encoding: Chunked\r\n".into(), encoded.clone()),
        ("Transfer-Encoding:\tchunked\r\n".into(), encoded.clone()),
        (
            "Transfer-Encoding: chunked, identity\r\n".into(),
            encoded.clone(),
        ),
        (
            "Transfer-Encoding: identity, chunked\r\n".into(),
            encoded.clone(),
        ),
        ("Transfer-Encoding: xchunked\r\n".into(), encoded.clone()),
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n".into(),
            encoded.clone(),
        ),
        ("Transfer-Encoding : chunked\r\n".into(), encoded.clone()),
        (
            "X: y\r\n Transfer-Encoding: chunked\r\n".into(),
            encoded.clone(),
        ),
        ("Transfer-Encoding: chunked\r\r\n".into(), encoded.clone()),
    ];
    for size in [
        |n: usize| format!("{n:X}"),
        |n: usize| format!("000{n:x}"),
        |n: usize| format!("{n:x} "),
        |n: usize| format!(" {n:x}"),
        |n: usize| format!("0x{n:x}"),
        |n: usize| format!("{n:x};a=\"b\""),
        |n: usize| format!("{n:x};a=\"\r\n\""),
        |n: usize| format!("{n:x}\n"),
        |n: usize| format!("1{n:x}"),
        |n: usize| format!("1000000000000000{n:x}"),
    ] {
        framings.push(("Transfer-Encoding: chunked\r\n".into(), chunked(body, size)));
    }
    framings.push((
        "Transfer-Encoding: chunked\r\n".into(),
        format!("{n:x}\r\n{body}\r\n0\r\nX-Trailer: t\r\n\r\n"),
    ));
    framings.push((
        "Transfer-Encoding: chunked\r\n".into(),
        format!("{n:x}\r\n{body}0\r\n\r\n"),
    ));
    framings
}

/// Bodies of the first request that are themselves requests.
const SMUGGLED: [&str; 3] = [
    // A forbidden method carrying the next request as a header value.
    "DELETE /x HTTP/1.1\r\nHost: h\r\nX-Ignore: ",
    // A forbidden path whose body swallows the next request (and whose
    // answer would echo it).
    "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 120\r\n\r\n",
    // An allowed shape the gateway never decided on.
    "GET /ok/smuggled HTTP/1.1\r\nHost: h\r\n\r\n",
];

/// `Connection` options of the first request.
const OPTIONS: [&str; 10] = [
    "",
    "Connection: keep-alive\r\n",
    "Connection: close\r\n",
    "Connection: keep-alive, Content-Length\r\n",
    "Connection: Transfer-Encoding\r\n",
    "Connection: host\r\n",
    "Connection: te\r\nTE: trailers\r\n",
    "Connection: Trailer\r\nTrailer: X-Trailer\r\n",
    "Connection: Upgrade\r\nUpgrade: h2c\r\n",
    "Connection: X-Other\r\nX-Other: 1\r\n",
];

/// The request target of `path` on `channel`: absolute-form to the proxy,
/// origin-form inside inspected TLS.
fn target(destination: &Destination, path: &str) -> String {
    match destination.ca_pem {
        None => format!("http://{}{path}", destination.entry()),
        Some(_) => path.to_owned(),
    }
}

/// Runs every framing shape of each `smuggled` body under each of `options`,
/// each followed by a request carrying the secret's stand-in, and checks
/// the invariant on each; also that a request body the destination read
/// whole is exactly the body the child framed. Returns how many ran.
fn every_shape(channel: Channel, smuggled: &[&str], options: &[&str]) -> usize {
    let destination = Destination::start(channel);
    let entry = destination.entry();
    let secret = Secret::new("token", VALUE, std::slice::from_ref(&entry)).unwrap();
    let stand_in = secret.stand_in().to_owned();
    let (first, second) = (target(&destination, "/ok/a"), target(&destination, "/ok/b"));
    let follow = format!(
        "GET {second} HTTP/1.1\r\nHost: {entry}\r\nAuthorization: Bearer {stand_in}\r\n\r\n"
    );
    let mut runs = 0;
    for body in smuggled {
        for (framing, wire) in framings(body) {
            for option in options {
                let bytes = format!(
                    "GET {first} HTTP/1.1\r\nHost: {entry}\r\n{option}{framing}\r\n{wire}{follow}"
                );
                let outcome = run(&destination, &secret, bytes.as_bytes());
                let case = format!("{channel:?} {bytes:?}");
                check(&case, &outcome);
                // Framed as the gateway read it: the first request's body is
                // the smuggled bytes whole, or nothing (then the gateway read
                // them as a request of their own, and refused it).
                for seen in outcome.seen.iter().filter(|seen| seen.complete) {
                    let whole = seen.target == "/ok/a" && seen.body == body.as_bytes();
                    assert!(seen.body.is_empty() || whole, "{case}: {seen:?}");
                }
                runs += 1;
            }
        }
    }
    runs
}

/// Invariant (above), plain HTTP: every framing shape under every
/// `Connection` option.
#[test]
fn the_destination_parses_exactly_the_requests_the_gateway_decided_on() {
    assert_eq!(every_shape(Channel::Plain, &SMUGGLED, &OPTIONS), 1110);
}

/// Invariant (above), inspected HTTPS (the same engine behind TLS): every
/// framing shape of the smuggled `DELETE`, with no `Connection` option and
/// with one naming each framing header (two TLS handshakes per run: fewer
/// runs).
#[test]
fn the_destination_parses_exactly_the_requests_the_gateway_decided_on_inspected() {
    let options = [OPTIONS[0], OPTIONS[3], OPTIONS[4]];
    assert_eq!(
        every_shape(Channel::Inspected, &SMUGGLED[..1], &options),
        111
    );
}

/// A request as the destination should parse it: method, target, body.
type Expected<'a> = (&'a str, &'a str, &'a [u8]);

/// Invariant: requests the gateway reads whole reach the destination with
/// the bodies it read, framed for the destination as they were for the
/// gateway; the smuggling shape (a `Connection` naming `Content-Length`)
/// reaches it not at all.
#[test]
fn bodies_arrive_as_the_gateway_read_them_and_a_framing_option_sends_nothing() {
    for channel in [Channel::Plain, Channel::Inspected] {
        bodies_arrive_as_read(channel);
    }
}

fn bodies_arrive_as_read(channel: Channel) {
    let destination = Destination::start(channel);
    let entry = destination.entry();
    let (a, b) = (target(&destination, "/ok/a"), target(&destination, "/ok/b"));
    let secret = Secret::new("token", VALUE, std::slice::from_ref(&entry)).unwrap();
    let stand_in = secret.stand_in().to_owned();
    let first = |option: &str, framing: &str, wire: &str| {
        format!(
            "GET {a} HTTP/1.1\r\nHost: {entry}\r\n{option}{framing}\r\n{wire}\
             GET {b} HTTP/1.1\r\nHost: {entry}\r\nAuthorization: Bearer {stand_in}\r\n\r\n"
        )
    };
    let inner = "DELETE /x HTTP/1.1\r\nX-Ignore: ";
    let length = format!("Content-Length: {}\r\n", inner.len());
    let encoded = chunked(inner, |n| format!("{n:x}"));
    let cases: [(String, Vec<Expected>); 3] = [
        (
            first("Connection: keep-alive\r\n", &length, inner),
            vec![("GET", "/ok/a", inner.as_bytes()), ("GET", "/ok/b", b"")],
        ),
        (
            first("", "Transfer-Encoding: chunked\r\n", &encoded),
            vec![("GET", "/ok/a", inner.as_bytes()), ("GET", "/ok/b", b"")],
        ),
        (
            first("Connection: keep-alive, Content-Length\r\n", &length, inner),
            vec![],
        ),
    ];
    for (bytes, expected) in &cases {
        let outcome = run(&destination, &secret, bytes.as_bytes());
        check(bytes, &outcome);
        let got: Vec<Expected> = outcome
            .seen
            .iter()
            .map(|seen| {
                assert!(seen.complete, "{bytes:?}: {seen:?}");
                (seen.method.as_str(), seen.target.as_str(), &seen.body[..])
            })
            .collect();
        assert_eq!(&got, expected, "{bytes:?}");
        if let Some(last) = outcome.seen.last() {
            // The stand-in went out as the value, in the head the rules allow.
            assert!(last.fields.contains(&format!("Bearer {VALUE}")), "{last:?}");
        } else {
            let answer = String::from_utf8_lossy(&outcome.child);
            assert!(answer.starts_with("HTTP/1.1 400 "), "{bytes:?}: {answer:?}");
        }
    }
}
