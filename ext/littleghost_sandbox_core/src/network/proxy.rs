//! One gateway connection: read the request head (bounded, with a deadline),
//! decide, then tunnel (`CONNECT`) or forward one plain-HTTP request
//! (absolute-form rewritten to origin-form, `Connection: close`, the
//! connection ends with the response: one request per connection).
//!
//! Names are resolved here and every resolved address is vetted before any
//! connection is made; the gateway then connects only to those addresses, so
//! a DNS answer that changes between check and connect cannot redirect it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::timeout;

use super::allowlist::{refused_address, Allowlist, Destination, Host};
use super::budget::Held;
use super::denial::{DenialReason, Denials};
use super::egress::{Decision, EgressEvent, EgressLog};
use super::secrets::Secrets;

pub(super) struct Shared {
    pub allowlist: Allowlist,
    // Read by the request engine that swaps stand-ins and records egress.
    #[allow(dead_code)]
    pub secrets: Secrets,
    pub denials: Arc<Denials>,
    pub egress: Arc<EgressLog>,
    pub max_header_bytes: usize,
    pub handshake_timeout: Duration,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
}

/// An HTTP error answer: status line text and a short reason.
#[derive(Debug)]
struct Refusal {
    status: &'static str,
    reason: String,
}

fn refusal(status: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        status,
        reason: reason.into(),
    }
}

/// A parsed request head plus any bytes the client sent after it.
struct Head {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
    rest: Vec<u8>,
}

/// Serves one admitted connection; `held` is its client descriptor and
/// takes the upstream one before the destination is opened.
pub(super) async fn serve(mut client: UnixStream, shared: Arc<Shared>, mut held: Held) {
    let start = Instant::now();
    let head = match timeout(
        shared.handshake_timeout,
        read_head(&mut client, shared.max_header_bytes),
    )
    .await
    {
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => return,
        Ok(Err(refused)) => return answer(&mut client, &refused).await,
        Err(_) => {
            return answer(
                &mut client,
                &refusal("408 Request Timeout", "request head not received in time"),
            )
            .await
        }
    };
    let mut exchange = Exchange::new(start, &head.method, shared.clone());
    match forward(&mut client, head, &shared, &mut held, &mut exchange).await {
        Ok(status) => exchange.record(Decision::Allowed, status),
        Err(refused) => {
            answer(&mut client, &refused).await;
            exchange.record(Decision::Denied, status_code(refused.status));
        }
    }
}

// --- Egress record (issue 22 item 5), the smallest version -----------------
// SUPERSEDED by the request engine (gwengine's proxy.rs/http.rs), which
// records one event per request of a keep-alive connection and per inspected
// request: at merge keep the engine's recording and drop this block and its
// calls (`Exchange`, `Flow`, the counters passed to `pump`). Here: one event
// per CONNECT tunnel, one per forwarded plain-HTTP request, one per refusal
// once the destination is known, and one for a connection refused unread.

/// What one exchange through the gateway did, for its egress event. An
/// exchange cut short (its task aborted by `Gateway::stop`) is recorded when
/// dropped, with what moved until then, so `close` loses no event.
struct Exchange {
    shared: Arc<Shared>,
    start: Instant,
    /// Set once the request's target parsed.
    destination: Option<String>,
    method: String,
    /// The origin-form path of a plain-HTTP request.
    path: Option<String>,
    flow: Flow,
    /// The destination was connected to (an opened tunnel answers 200).
    opened: bool,
    /// The CONNECT method: a tunnel.
    tunnel: bool,
}

/// Bytes moved each way after the request head, and the first bytes of the
/// destination's answer (for its status).
#[derive(Default)]
struct Flow {
    sent: AtomicU64,
    received: AtomicU64,
    answer: Mutex<Vec<u8>>,
}

impl Exchange {
    fn new(start: Instant, method: &str, shared: Arc<Shared>) -> Exchange {
        Exchange {
            shared,
            start,
            destination: None,
            method: method.to_ascii_uppercase(),
            path: None,
            flow: Flow::default(),
            opened: false,
            tunnel: method.eq_ignore_ascii_case("CONNECT"),
        }
    }

    /// The status the destination's answer began with, for plain HTTP.
    fn answer_status(&self) -> Option<u16> {
        answer_status(&self.flow.answer.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Records the event once, if the destination was understood.
    fn record(&mut self, decision: Decision, status: Option<u16>) {
        let Some(destination) = self.destination.take() else {
            return;
        };
        self.shared.egress.push(EgressEvent {
            at: SystemTime::now(),
            destination,
            method: Some(self.method.clone()),
            path: self.path.take(),
            status,
            bytes_sent: self.flow.sent.load(Ordering::Relaxed),
            bytes_received: self.flow.received.load(Ordering::Relaxed),
            duration: self.start.elapsed(),
            decision,
            inspected: false,
        });
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if self.destination.is_none() {
            return; // recorded, or never understood
        }
        if !self.opened {
            return self.record(Decision::Denied, None);
        }
        let status = if self.tunnel {
            Some(200)
        } else {
            self.answer_status()
        };
        self.record(Decision::Allowed, status);
    }
}

/// `403` of `"403 Forbidden"`.
fn status_code(status: &str) -> Option<u16> {
    status.get(..3)?.parse().ok()
}

/// The status of an HTTP response starting with `answer` (`HTTP/1.1 200 ...`).
fn answer_status(answer: &[u8]) -> Option<u16> {
    if !answer.starts_with(b"HTTP/") {
        return None;
    }
    let line = answer.split(|b| *b == b'\r').next()?;
    let code = std::str::from_utf8(line).ok()?.split(' ').nth(1)?;
    status_code(code).filter(|_| code.len() == 3)
}
// --- end of the superseded egress record ------------------------------------

/// Refuses a connection the budget has no descriptor for, before reading
/// anything (its destination is unknown: the denial names `*`): one
/// non-blocking write of the `503`, then the socket is closed.
pub(super) fn refuse_unread(client: UnixStream, shared: &Shared) {
    let refused = deny(shared, "*".to_owned(), DenialReason::DescriptorBudget);
    // Superseded by the request engine's egress record (see `Exchange`).
    shared.egress.push(EgressEvent {
        at: SystemTime::now(),
        destination: "*".to_owned(),
        method: None,
        path: None,
        status: status_code(refused.status),
        bytes_sent: 0,
        bytes_received: 0,
        duration: Duration::ZERO,
        decision: Decision::Denied,
        inspected: false,
    });
    // A plain non-blocking write: tokio's `try_write` would refuse to try
    // before the reactor has seen the new socket writable.
    if let Ok(client) = client.into_std() {
        let _ = std::io::Write::write(&mut &client, &response(&refused));
    }
}

/// Tunnels or forwards; `Ok` with the status the child received.
async fn forward(
    client: &mut UnixStream,
    head: Head,
    shared: &Shared,
    held: &mut Held,
    exchange: &mut Exchange,
) -> Result<Option<u16>, Refusal> {
    let connect = head.method.eq_ignore_ascii_case("CONNECT");
    let (destination, path) = if connect {
        let destination = Destination::parse(&head.target, None)
            .map_err(|why| refusal("400 Bad Request", format!("CONNECT target {why}")))?;
        (destination, String::new())
    } else {
        absolute_form(&head.target)?
    };
    exchange.destination = Some(destination.to_string());
    if !connect {
        exchange.path = Some(path.clone());
    }
    let upstream = open(&destination, shared, held).await?;
    exchange.opened = true;
    let mut upstream = upstream;
    if connect {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .map_err(|_| refusal("500 Internal Server Error", "client went away"))?;
        if !head.rest.is_empty() {
            if upstream.write_all(&head.rest).await.is_err() {
                return Ok(Some(200));
            }
            let sent = head.rest.len() as u64;
            exchange.flow.sent.fetch_add(sent, Ordering::Relaxed);
        }
    } else {
        let rewritten = origin_form(&head, &destination, &path);
        if upstream.write_all(&rewritten).await.is_err()
            || upstream.write_all(&head.rest).await.is_err()
        {
            return Err(refusal(
                "502 Bad Gateway",
                "destination closed the connection",
            ));
        }
        let sent = head.rest.len() as u64;
        exchange.flow.sent.fetch_add(sent, Ordering::Relaxed);
    }
    splice(
        client,
        upstream,
        shared.idle_timeout,
        !connect,
        &exchange.flow,
    )
    .await;
    if connect {
        return Ok(Some(200));
    }
    Ok(exchange.answer_status())
}

/// Checks the allowlist, resolves, vets every address, takes the upstream
/// descriptor from the budget and connects to a vetted address.
async fn open(
    destination: &Destination,
    shared: &Shared,
    held: &mut Held,
) -> Result<TcpStream, Refusal> {
    let shown = destination.to_string();
    if !shared.allowlist.allows(destination) {
        return Err(deny(shared, shown, DenialReason::NotAllowed));
    }
    let addresses: Vec<SocketAddr> = match &destination.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, destination.port)],
        Host::Name(name) => {
            let lookup = tokio::net::lookup_host((name.as_str(), destination.port));
            match timeout(shared.connect_timeout, lookup).await {
                Ok(Ok(found)) => found.collect(),
                _ => Vec::new(),
            }
        }
    };
    if addresses.is_empty() {
        return Err(refusal(
            "502 Bad Gateway",
            format!("cannot resolve {shown}"),
        ));
    }
    if !shared.allowlist.allow_private_destinations()
        && addresses
            .iter()
            .any(|address| refused_address(address.ip()))
    {
        return Err(deny(shared, shown, DenialReason::PrivateDestination));
    }
    if !held.take() {
        return Err(deny(shared, shown, DenialReason::DescriptorBudget));
    }
    for address in addresses {
        if let Ok(Ok(stream)) = timeout(shared.connect_timeout, TcpStream::connect(address)).await {
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
    }
    Err(refusal(
        "502 Bad Gateway",
        format!("cannot connect to {shown}"),
    ))
}

/// The one place a gateway denial is made: recorded, and answered with the
/// reason's status (403, or 503 for the descriptor budget).
fn deny(shared: &Shared, destination: String, reason: DenialReason) -> Refusal {
    let text = format!("{destination}: {}", reason.text());
    shared.denials.record(destination, reason);
    refusal(reason.status(), text)
}

fn response(refused: &Refusal) -> Vec<u8> {
    let body = format!("littleghost gateway: {}\n", refused.reason);
    format!(
        "HTTP/1.1 {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        refused.status,
        body.len()
    )
    .into_bytes()
}

async fn answer(client: &mut UnixStream, refused: &Refusal) {
    let _ = client.write_all(&response(refused)).await;
    let _ = client.shutdown().await;
}

/// Reads until the blank line ending the head; `None` when the client closed first.
async fn read_head(client: &mut UnixStream, limit: usize) -> Result<Option<Head>, Refusal> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client
            .read(&mut chunk)
            .await
            .map_err(|_| refusal("400 Bad Request", "read error"))?;
        if n == 0 {
            return Ok(None);
        }
        let searched_from = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = find(&buffer[searched_from..], b"\r\n\r\n") {
            let end = searched_from + end;
            if end + 4 > limit {
                break;
            }
            let rest = buffer.split_off(end + 4);
            return parse_head(&buffer[..end], rest).map(Some);
        }
        if buffer.len() > limit {
            break;
        }
    }
    Err(refusal(
        "431 Request Header Fields Too Large",
        "request head too large",
    ))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A control byte: C0 (CR, LF and HTAB included) or DEL.
fn is_control(byte: u8) -> bool {
    byte < 0x20 || byte == 0x7f
}

/// A `token` character of RFC 9110 (methods and header names).
fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Parses the head strictly (issue 18, item 8): lines end with CRLF only; no
/// CR, LF or other control byte in the request line or a header field (HTAB
/// only inside a value); the version is exactly `HTTP/1.0` or `HTTP/1.1`; a
/// header name is a token directly followed by `:`; a body is framed once
/// (not both `Content-Length` and `Transfer-Encoding`, one length).
/// Whatever this accepts is what the destination sees, minus what
/// [`origin_form`] strips, so nothing can hide a second line inside a field.
fn parse_head(bytes: &[u8], rest: Vec<u8>) -> Result<Head, Refusal> {
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
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines {
        if line.bytes().any(|b| is_control(b) && b != b'\t') {
            return Err(bad("control character in a header field"));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad("malformed header line"))?;
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(bad("malformed header name"));
        }
        headers.push((name.to_owned(), value.trim_matches([' ', '\t']).to_owned()));
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
    let mut lengths = values(&headers, "content-length");
    if let Some(first) = lengths.next() {
        if values(&headers, "transfer-encoding").next().is_some() {
            return Err(bad("both Content-Length and Transfer-Encoding"));
        }
        if lengths.any(|other| other != first) || !first.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("malformed Content-Length"));
        }
    }
    drop(lengths);
    Ok(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers,
        rest,
    })
}

/// The fuzz target's check (`fuzz/fuzz_targets/request_head.rs`): parses
/// `bytes` as a request head and, when it is accepted and its URL is, checks
/// what the destination would receive. Panics when the rewrite could carry
/// a control byte, a second line, a second `Host` or a proxy credential.
pub(super) fn check_request_head(bytes: &[u8]) {
    let Ok(head) = parse_head(bytes, Vec::new()) else {
        return;
    };
    assert!(head.version == "HTTP/1.1" || head.version == "HTTP/1.0");
    if head.method.eq_ignore_ascii_case("CONNECT") {
        return;
    }
    let Ok((destination, path)) = absolute_form(&head.target) else {
        return;
    };
    let rewritten = origin_form(&head, &destination, &path);
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
    assert_eq!(lines[0].split(' ').count(), 3, "{text:?}");
}

/// `http://host[:port]/path?query` into its destination and origin-form path.
fn absolute_form(target: &str) -> Result<(Destination, String), Refusal> {
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
    let after = &target[scheme_end + 3..];
    let split = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, path) = after.split_at(split);
    if authority.contains('@') {
        return Err(refusal(
            "400 Bad Request",
            "URLs with user information are refused",
        ));
    }
    let destination = Destination::parse(authority, Some(80))
        .map_err(|why| refusal("400 Bad Request", format!("URL host {why}")))?;
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('/') => p.split('#').next().unwrap_or("/").to_owned(),
        p => format!("/{}", p.split('#').next().unwrap_or_default()),
    };
    Ok((destination, path))
}

/// The request head as the destination sees it: origin-form, its own `Host`,
/// hop-by-hop and proxy headers removed, `Connection: close`.
fn origin_form(head: &Head, destination: &Destination, path: &str) -> Vec<u8> {
    let listed: Vec<String> = head
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| value.split(',').map(|v| v.trim().to_ascii_lowercase()))
        .collect();
    let host = if destination.port == 80 {
        destination.host.to_string()
    } else {
        destination.to_string()
    };
    let mut out = format!(
        "{} {path} {}\r\nHost: {host}\r\n",
        head.method, head.version
    );
    for (name, value) in &head.headers {
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
        ) || listed.contains(&lower);
        if !hop {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

/// Copies both ways until both sides are done (or, for plain HTTP, until the
/// destination has sent its whole response), or nothing moved for `idle`.
async fn splice(
    client: &mut UnixStream,
    upstream: TcpStream,
    idle: Duration,
    end_with_response: bool,
    flow: &Flow,
) {
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let (client_read, client_write) = client.split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let up = pump(client_read, upstream_write, start, &last, &flow.sent, None);
    let down = pump(
        upstream_read,
        client_write,
        start,
        &last,
        &flow.received,
        Some(&flow.answer),
    );
    let transfer = async {
        if end_with_response {
            down.await;
        } else {
            tokio::join!(up, down);
        }
    };
    tokio::select! {
        _ = transfer => {}
        _ = watchdog(start, &last, idle) => {}
    }
}

/// Copies `from` to `to`, counting the bytes written in `moved` and keeping
/// the first [`ANSWER_SNIFF`] of them in `first` when given.
async fn pump<R, W>(
    mut from: R,
    mut to: W,
    start: Instant,
    last: &AtomicU64,
    moved: &AtomicU64,
    mut first: Option<&Mutex<Vec<u8>>>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(sniffed) = first {
                    let mut kept = sniffed.lock().unwrap_or_else(|e| e.into_inner());
                    let room = ANSWER_SNIFF.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buffer[..room]);
                    if kept.len() >= ANSWER_SNIFF {
                        first = None; // enough to read the status: no lock on later chunks
                    }
                }
                if to.write_all(&buffer[..n]).await.is_err() {
                    break;
                }
                moved.fetch_add(n as u64, Ordering::Relaxed);
                last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
            }
        }
    }
    let _ = to.shutdown().await;
}

/// How much of an answer is kept to read its status line.
const ANSWER_SNIFF: usize = 64;

async fn watchdog(start: Instant, last: &AtomicU64, idle: Duration) {
    loop {
        let deadline = start + Duration::from_millis(last.load(Ordering::Relaxed)) + idle;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline.into()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answers_status_is_read_from_its_first_line() {
        assert_eq!(answer_status(b"HTTP/1.1 204 No Content\r\n"), Some(204));
        assert_eq!(answer_status(b"HTTP/1.0 404\r\n"), Some(404));
        assert_eq!(answer_status(b"HTTP/1.1 20"), None);
        assert_eq!(answer_status(b"SSH-2.0-x"), None);
        assert_eq!(status_code("503 Service Unavailable"), Some(503));
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

    #[test]
    fn origin_form_drops_hop_by_hop_headers() {
        let head = parse_head(
            b"GET http://a.test/x HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: x\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nAccept: */*",
            Vec::new(),
        )
        .unwrap();
        let (destination, path) = absolute_form(&head.target).unwrap();
        let text = String::from_utf8(origin_form(&head, &destination, &path)).unwrap();
        assert_eq!(
            text,
            "GET /x HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn malformed_heads_are_refused() {
        assert!(parse_head(b"GET  http://a/ HTTP/1.1", Vec::new()).is_err());
        assert!(parse_head(b"GET http://a/ SPDY/3", Vec::new()).is_err());
        assert!(parse_head(b"GET http://a/ HTTP/1.1\r\nBad Name: x", Vec::new()).is_err());
        assert!(parse_head(b"GET http://a/ HTTP/1.1\r\n folded", Vec::new()).is_err());
    }

    fn refused(head: &[u8]) -> String {
        match parse_head(head, Vec::new()) {
            Ok(parsed) => panic!("accepted {:?} as {:?}", head, parsed.headers),
            Err(refused) => {
                assert_eq!(refused.status, "400 Bad Request");
                refused.reason
            }
        }
    }

    #[test]
    fn a_bare_line_feed_or_carriage_return_is_refused_anywhere() {
        // Issue 18's smuggling request: a bare LF in the request line and in a header.
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
                let head = parse_head(&line, Vec::new()).unwrap();
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
            assert_eq!(
                parse_head(line.as_bytes(), Vec::new()).unwrap().version,
                version
            );
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
        assert!(parse_head(
            b"POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1",
            Vec::new()
        )
        .is_ok());
    }

    #[test]
    fn the_fuzz_check_holds_for_the_issues_requests() {
        check_request_head(
            b"GET http://a.test/x HTTP/1.1\r\nHost: evil\r\nProxy-Authorization: x\r\nhost: b",
        );
        check_request_head(
            b"GET http://allowed/ HTTP/1.1\nHost:internal.example\r\nProxy-Authorization: smuggled",
        );
        check_request_head(b"GET http://a.test/x HTTP/1.0\r\nX:\ty\r\nConnection: close, te");
    }
}
