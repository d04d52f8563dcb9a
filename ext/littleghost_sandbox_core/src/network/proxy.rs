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
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::timeout;

use super::allowlist::{refused_address, Allowlist, Destination, Host};
use super::budget::Held;
use super::denial::{DenialReason, Denials};
use super::egress::{Decision, EgressEvent, EgressLog};
use super::inspect::{AcceptError, Inspector};
use super::secrets::Secrets;

pub(super) struct Shared {
    pub allowlist: Allowlist,
    // Read by the request engine that swaps stand-ins and records egress.
    #[allow(dead_code)]
    pub secrets: Secrets,
    pub denials: Arc<Denials>,
    #[allow(dead_code)]
    pub egress: Arc<EgressLog>,
    /// The gateway's CA and TLS configurations, when a rule asks for inspection.
    pub inspector: Option<Arc<Inspector>>,
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
    if let Err(refused) = forward(&mut client, head, &shared, &mut held).await {
        answer(&mut client, &refused).await;
    }
}

/// Refuses a connection the budget has no descriptor for, before reading
/// anything (its destination is unknown: the denial names `*`): one
/// non-blocking write of the `503`, then the socket is closed.
pub(super) fn refuse_unread(client: UnixStream, shared: &Shared) {
    let refused = deny(shared, "*".to_owned(), DenialReason::DescriptorBudget);
    // A plain non-blocking write: tokio's `try_write` would refuse to try
    // before the reactor has seen the new socket writable.
    if let Ok(client) = client.into_std() {
        let _ = std::io::Write::write(&mut &client, &response(&refused));
    }
}

async fn forward(
    client: &mut UnixStream,
    head: Head,
    shared: &Shared,
    held: &mut Held,
) -> Result<(), Refusal> {
    let connect = head.method.eq_ignore_ascii_case("CONNECT");
    let (destination, path) = if connect {
        let destination = Destination::parse(&head.target, None)
            .map_err(|why| refusal("400 Bad Request", format!("CONNECT target {why}")))?;
        (destination, String::new())
    } else {
        absolute_form(&head.target)?
    };
    let upstream = open(&destination, shared, held).await?;
    let mut upstream = upstream;
    if connect {
        let inspect = shared
            .allowlist
            .access(&destination)
            .is_some_and(|access| access.inspect());
        if inspect {
            // Fail closed: never a plain tunnel where inspection was asked for.
            let Some(inspector) = &shared.inspector else {
                return Err(refusal(
                    "500 Internal Server Error",
                    "inspection is not set up",
                ));
            };
            return inspect_tunnel(client, head.rest, upstream, &destination, inspector, shared)
                .await;
        }
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .map_err(|_| refusal("500 Internal Server Error", "client went away"))?;
        if !head.rest.is_empty() && upstream.write_all(&head.rest).await.is_err() {
            return Ok(());
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
    }
    splice(client, upstream, shared.idle_timeout, !connect).await;
    Ok(())
}

/// A CONNECT to an inspected destination (the TCP connection to a vetted
/// address is open): TLS to the destination first, verifying its certificate
/// for the CONNECT target (a failure is a `502` to the CONNECT, with the
/// reason, and an egress event), then `200`, then the child's TLS with a leaf
/// of the gateway's CA (an SNI naming another host is refused: denial
/// `HostMismatch`), then the two decrypted streams are relayed.
async fn inspect_tunnel(
    client: &mut UnixStream,
    early: Vec<u8>,
    upstream: TcpStream,
    destination: &Destination,
    inspector: &Inspector,
    shared: &Shared,
) -> Result<(), Refusal> {
    let started = Instant::now();
    let shown = destination.to_string();
    let record = |status: Option<u16>, decision: Decision| {
        shared.egress.push(EgressEvent {
            at: std::time::SystemTime::now(),
            destination: shown.clone(),
            method: Some("CONNECT".to_owned()),
            path: None,
            status,
            bytes_sent: 0,
            bytes_received: 0,
            duration: started.elapsed(),
            decision,
            inspected: true,
        });
    };
    let upstream = match timeout(
        shared.connect_timeout,
        inspector.connect(destination, upstream),
    )
    .await
    {
        Ok(Ok(upstream)) => upstream,
        failed => {
            let why = match failed {
                Ok(Err(why)) => why,
                _ => "timed out".to_owned(),
            };
            record(Some(502), Decision::Denied);
            return Err(refusal(
                "502 Bad Gateway",
                format!("{shown}: TLS to the destination failed, so it is not inspected: {why}"),
            ));
        }
    };
    client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await
        .map_err(|_| refusal("500 Internal Server Error", "client went away"))?;
    // Bytes the child sent before the 200 (a pipelined ClientHello) come first.
    let (reader, writer) = client.split();
    let child = tokio::io::join(std::io::Cursor::new(early).chain(reader), writer);
    let accepted = timeout(
        shared.handshake_timeout,
        inspector.accept(destination, child),
    )
    .await;
    let child = match accepted {
        Ok(Ok(child)) => child,
        Ok(Err(AcceptError::HostMismatch { .. })) => {
            let _ = deny(shared, shown.clone(), DenialReason::HostMismatch);
            record(None, Decision::Denied);
            return Ok(());
        }
        Ok(Err(AcceptError::Handshake(_))) | Err(_) => {
            record(None, Decision::Denied);
            return Ok(());
        }
    };
    record(Some(200), Decision::Allowed);
    relay_inspected(child, upstream, shared.idle_timeout).await;
    Ok(())
}

/// Relays between the child's and the destination's decrypted streams.
/// THE LEAD REPLACES THIS WITH `http::serve_inspected` AT MERGE: this plain
/// two-way copy applies no HTTP rule and swaps no secret.
async fn relay_inspected<C, U>(child: C, upstream: U, idle: Duration)
where
    C: AsyncRead + AsyncWrite,
    U: AsyncRead + AsyncWrite,
{
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let (child_read, child_write) = tokio::io::split(child);
    let (upstream_read, upstream_write) = tokio::io::split(upstream);
    let up = pump(child_read, upstream_write, start, &last);
    let down = pump(upstream_read, child_write, start, &last);
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = watchdog(start, &last, idle) => {}
    }
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
) {
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let (client_read, client_write) = client.split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let up = pump(client_read, upstream_write, start, &last);
    let down = pump(upstream_read, client_write, start, &last);
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

async fn pump<R, W>(mut from: R, mut to: W, start: Instant, last: &AtomicU64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                // A TLS writer may keep what it accepted in its buffer until
                // flushed (a no-op for a socket).
                if to.write_all(&buffer[..n]).await.is_err() || to.flush().await.is_err() {
                    break;
                }
                last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
            }
        }
    }
    let _ = to.shutdown().await;
}

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
