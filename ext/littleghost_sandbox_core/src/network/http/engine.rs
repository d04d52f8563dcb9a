//! The engine's loop over one client connection: read a head, decide it, forward it through the
//! destination's side ([`super::upstream`]), relay the answer, and read the next (keep-alive).

use super::*;

/// Where requests go.
pub(super) enum Mode<'h> {
    /// The forward proxy: absolute-form `http://` targets, an upstream per
    /// destination (each resolved, vetted and counted against `Held`),
    /// `CONNECT` handed back to the caller.
    Proxy(&'h mut Held),
    /// Decrypted TLS to one destination: origin-form targets (or absolute
    /// ones naming it), its one upstream.
    Inspected(Destination),
}

/// How the engine writes to its client: the stream's own write half (the
/// proxy, which can give a `CONNECT`'s stream back whole), or a
/// [`PipeWriter`] feeding a writer task of its own (inspected TLS).
pub(super) trait ToClient<C>: AsyncWrite + Unpin + Send {
    /// The client stream whole again, where this writer can give it back.
    fn rejoin(self, read: ReadHalf<C>) -> Option<C>;
}

impl<C: AsyncRead + AsyncWrite + Unpin> ToClient<C> for WriteHalf<C>
where
    WriteHalf<C>: Send,
{
    fn rejoin(self, read: ReadHalf<C>) -> Option<C> {
        Some(read.unsplit(self))
    }
}

impl<C> ToClient<C> for PipeWriter {
    fn rejoin(self, _read: ReadHalf<C>) -> Option<C> {
        None
    }
}

pub(super) struct Engine<'a, C, W> {
    pub(super) shared: &'a Shared,
    pub(super) client: Reader<ReadHalf<C>>,
    pub(super) to_client: W,
    pub(super) upstream: Option<Upstream>,
    pub(super) mode: Mode<'a>,
    pub(super) served: u64,
}

/// A `CONNECT` read by the proxy engine, for [`proxy`] to decide.
pub(in crate::network) struct Connect<C> {
    pub head: Head,
    /// The head as received (scanned for stand-ins).
    pub raw: Vec<u8>,
    /// The client, with what it sent after the head still to be read.
    pub client: Rewound<C>,
    /// What held the client's reader buffer, for the tunnel's.
    pub lease: Lease,
    pub start: Instant,
}

/// What a request did to the connection.
pub(super) enum Next {
    Continue,
    Close,
}

/// Serves a proxy client: plain-HTTP requests until the connection ends;
/// a `CONNECT` is returned (with the client) for the tunnel branch. The
/// client's reader buffers in `lease`.
pub(in crate::network) async fn serve_proxy(
    client: UnixStream,
    lease: Lease,
    shared: &Shared,
    held: &mut Held,
) -> Option<Connect<UnixStream>> {
    let (reader, to_client) = tokio::io::split(client);
    let engine = Engine {
        shared,
        client: Reader::new(reader, lease),
        to_client,
        upstream: None,
        mode: Mode::Proxy(held),
        served: 0,
    };
    engine.run().await
}

/// Serves an already-decrypted client stream whose requests all go to
/// `destination` over `upstream` (already connected and verified): the same
/// engine, but a request naming another host (`Host` or an absolute URL) is
/// refused with `HostMismatch`, `CONNECT` is refused, and events are marked
/// inspected. Returns when either side is done.
///
/// What goes to the client is encrypted and written by a task of its own
/// ([`super::pipe`]), so the destination's side (decrypting, scanning,
/// framing) and the client's (encrypting) run at once on the runtime's two
/// workers. When the engine ends, what it queued is still written (within
/// the idle timeout), as it would have been had the engine written it.
pub(in crate::network) async fn serve_inspected<C, U>(
    client: C,
    upstream: U,
    leases: InspectedLeases,
    destination: &Destination,
    shared: &Shared,
) where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    U: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let upstream = Upstream::start(
        destination.clone(),
        Box::new(upstream),
        leases.upstream,
        shared.max_header_bytes,
    )
    .await
    .ok();
    let (reader, to_client) = tokio::io::split(client);
    let (to_client, writer) = pipe(to_client, leases.to_client);
    let writer = tokio::spawn(writer);
    let stop_writer = writer.abort_handle();
    // Not left running if this connection's task is dropped (the gateway's stop).
    let _abort = AbortOnDrop(stop_writer.clone());
    let engine = Engine {
        shared,
        client: Reader::new(reader, leases.client),
        to_client,
        upstream,
        mode: Mode::Inspected(destination.clone()),
        served: 0,
    };
    if let Some(connect) = engine.run().await {
        // Not reached: run() hands CONNECT back only in proxy mode.
        drop(connect);
    }
    if timeout(shared.idle_timeout, writer).await.is_err() {
        stop_writer.abort();
    }
}

/// What an inspected connection's buffers are held in: the decrypted
/// client's reader, the destination's reader, the queue toward the child.
pub(in crate::network) struct InspectedLeases {
    pub client: Lease,
    pub upstream: Lease,
    pub to_client: Lease,
}

pub(super) struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<'a, C, W> Engine<'a, C, W>
where
    C: AsyncRead + AsyncWrite + Unpin + Send,
    W: ToClient<C>,
{
    async fn run(mut self) -> Option<Connect<C>> {
        loop {
            let raw = match self.next_head().await {
                None => return None,
                Some(Ok(raw)) => raw,
                Some(Err(refused)) => {
                    self.answer(&refused, false).await;
                    self.close().await;
                    return None;
                }
            };
            let start = Instant::now();
            let head = match parse_head(&raw) {
                Ok(head) => head,
                Err(refused) => {
                    self.answer(&refused, false).await;
                    self.close().await;
                    return None;
                }
            };
            if head.method.eq_ignore_ascii_case("CONNECT") {
                if matches!(self.mode, Mode::Proxy(_)) {
                    drop(self.upstream.take());
                    let (client, lease) = self.client.into_rewound();
                    let Rewound {
                        prefix,
                        start: from,
                        inner,
                    } = client;
                    let stream = self.to_client.rejoin(inner)?;
                    return Some(Connect {
                        head,
                        raw,
                        client: Rewound {
                            prefix,
                            start: from,
                            inner: stream,
                        },
                        lease,
                        start,
                    });
                }
                let refused = refusal(
                    "405 Method Not Allowed",
                    "CONNECT inside an inspected connection",
                );
                self.answer(&refused, false).await;
                self.close().await;
                return None;
            }
            self.served += 1;
            match self.request(head, start).await {
                Next::Continue => {}
                Next::Close => {
                    self.close().await;
                    return None;
                }
            }
        }
    }

    /// The next request head. After the first request it waits (up to the
    /// idle timeout) for the client's next byte, and ends the connection
    /// when the open upstream closes first (or speaks unasked): the client
    /// then sees the destination's connection end as it would directly.
    async fn next_head(&mut self) -> Option<Result<Vec<u8>, Refusal>> {
        let shared = self.shared;
        if self.served > 0 {
            loop {
                while self.client.buffered().starts_with(b"\r\n") {
                    self.client.consume(2);
                }
                if !self.client.buffered().is_empty() && self.client.buffered() != b"\r" {
                    break;
                }
                let (client, upstream) = (&mut self.client, &mut self.upstream);
                let wait = async {
                    match upstream {
                        Some(upstream) => tokio::select! {
                            read = client.fill() => matches!(read, Ok(n) if n > 0),
                            // hyper ends the connection when the destination
                            // closes it or sends what no request asked for.
                            () = upstream.ended() => false,
                        },
                        None => matches!(client.fill().await, Ok(n) if n > 0),
                    }
                };
                match timeout(shared.idle_timeout, wait).await {
                    Ok(true) => {}
                    _ => return None,
                }
            }
        }
        match timeout(
            shared.handshake_timeout,
            self.client.read_head(shared.max_header_bytes),
        )
        .await
        {
            Ok(Ok(Some(raw))) => Some(Ok(raw)),
            Ok(Ok(None)) | Ok(Err(HeadError::Truncated)) => None,
            Ok(Err(HeadError::TooLarge)) => Some(Err(refusal(
                "431 Request Header Fields Too Large",
                "request head too large",
            ))),
            Ok(Err(HeadError::Io)) => Some(Err(refusal("400 Bad Request", "read error"))),
            Err(_) => Some(Err(refusal(
                "408 Request Timeout",
                "request head not received in time",
            ))),
        }
    }

    /// Ends the connection in stages (RFC 9112 §9.6, "Tear-down"): the
    /// gateway's side first, after all it queued (inspected, with a TLS
    /// close_notify), then what the client still sends is read and dropped
    /// until the client ends its side too, within the idle timeout. Closed
    /// at once with the client's bytes unread, the client's next write
    /// fails (a broken pipe; over TCP, a reset that can destroy the answer),
    /// and a client still sending a body or its own close_notify may then
    /// never read the answer waiting for it (a refusal's `400`).
    async fn close(&mut self) {
        let _ = self.to_client.shutdown().await;
        self.shared.drain(self.client.drop_buffered()).await;
    }

    /// Writes the gateway's own answer; ends the gateway's side unless
    /// `keep_alive` (the caller then [closes](Self::close)).
    async fn answer(&mut self, refused: &Refusal, keep_alive: bool) {
        let _ = self
            .to_client
            .write_all(&connection::response(
                refused,
                keep_alive,
                &self.shared.secrets,
            ))
            .await;
        let _ = self.to_client.flush().await;
        if !keep_alive {
            let _ = self.to_client.shutdown().await;
        }
    }

    /// Answers a refusal, records the request, and says whether the
    /// connection goes on (`keep_alive`). Callers keep it only for a request
    /// refused for what it asks of an allowed destination (its rules, a
    /// stand-in in its head), when it had no body (all its bytes are then
    /// read, so the next request starts cleanly; the gateway never reads a
    /// body it refused) and the client did not ask to close. A refused
    /// destination, a malformed request or a failed upstream closes it.
    async fn refuse(
        &mut self,
        refused: Refusal,
        keep_alive: bool,
        mut event: Event,
        start: Instant,
    ) -> Next {
        event.refused(&refused, &self.shared.secrets);
        self.answer(&refused, keep_alive).await;
        event.push(self.shared, start);
        if keep_alive {
            Next::Continue
        } else {
            Next::Close
        }
    }

    /// The destination, origin-form path and `Host` value of a request.
    fn target(&self, head: &Head) -> Result<(Destination, String, String), Refusal> {
        match &self.mode {
            Mode::Proxy(_) => {
                let (destination, path) = absolute_form(&head.target)?;
                let host = host_value(&destination, 80);
                Ok((destination, path, host))
            }
            Mode::Inspected(destination) => {
                let default = destination.port;
                let path = if head.target.starts_with('/') {
                    head.target.split('#').next().unwrap_or("/").to_owned()
                } else if let Some(scheme_end) = head.target.find("://") {
                    let scheme = &head.target[..scheme_end];
                    if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http")
                    {
                        return Err(refusal("400 Bad Request", "unknown URL scheme"));
                    }
                    let (named, path) = split_url(&head.target[scheme_end + 3..], default)?;
                    if &named != destination {
                        return Err(self.mismatch(destination, head, &path));
                    }
                    path
                } else {
                    return Err(refusal("400 Bad Request", "malformed request target"));
                };
                for value in values(&head.headers, "host") {
                    if Destination::parse(value, Some(default)).ok().as_ref() != Some(destination) {
                        return Err(self.mismatch(destination, head, &path));
                    }
                }
                Ok((destination.clone(), path, host_value(destination, 443)))
            }
        }
    }

    fn mismatch(&self, destination: &Destination, head: &Head, path: &str) -> Refusal {
        connection::deny(
            self.shared,
            destination,
            DenialReason::HostMismatch,
            Some((head.method.clone(), path.to_owned())),
        )
    }

    /// Decides, forwards and relays one request.
    async fn request(&mut self, head: Head, start: Instant) -> Next {
        let shared = self.shared;
        let secrets = &shared.secrets;
        let inspected = matches!(self.mode, Mode::Inspected(_));
        let method = head.method.clone();
        let client_close = client_closes(&head);
        let mut event = Event::new("*".to_owned(), &method, inspected);
        event.arm(shared, start);
        let (destination, path, host) = match self.target(&head) {
            Ok(target) => target,
            Err(refused) => {
                if let Mode::Inspected(destination) = &self.mode {
                    event.destination = secrets.redact(&destination.to_string()).into_owned();
                }
                return self.refuse(refused, false, event, start).await;
            }
        };
        event.destination = secrets.redact(&destination.to_string()).into_owned();
        let shown_path = secrets.redact(&path).into_owned();
        event.path = Some(shown_path.clone());
        let request = || Some((method.clone(), shown_path.clone()));
        // Refused before anything else is decided: the body's end is not
        // certain, so the connection ends with it.
        if names_framing_header(&head.headers).is_some() {
            let refused = connection::deny(
                shared,
                &destination,
                DenialReason::MalformedRequest,
                request(),
            );
            return self.refuse(refused, false, event, start).await;
        }
        let framing = match request_framing(&head) {
            Ok(framing) => framing,
            Err(refused) => return self.refuse(refused, false, event, start).await,
        };
        let keep = !client_close && framing == Framing::None;

        let access = match decide::destination(&shared.allowlist, &destination) {
            Ok(access) => access,
            Err(reason) => {
                // A refused destination ends the connection, as it always did
                // (and as a refused CONNECT does); only a request refused for
                // what it asks of an allowed destination lets the next one come.
                let refused = connection::deny(shared, &destination, reason, None);
                return self.refuse(refused, false, event, start).await;
            }
        };
        let upgrade = requested_upgrade(&head);
        // Refused for what it asks of an allowed destination, the
        // connection may go on.
        let checked = decide(
            &head,
            &path,
            &destination,
            &access,
            upgrade.as_deref(),
            secrets,
        );
        let (forwarded_path, headers) = match checked {
            Ok(forwarded) => forwarded,
            Err(reason) => {
                let refused = connection::deny(shared, &destination, reason, request());
                return self.refuse(refused, keep, event, start).await;
            }
        };
        if let Err(refused) = self.upstream_for(&destination).await {
            return self.refuse(refused, false, event, start).await;
        }
        // Allowed from here on: an exchange cut before its end is recorded so.
        event.decision = Decision::Allowed;

        let connection = forwarded_connection(upgrade.as_deref(), client_close);
        let fields = forwarded_fields(&head, &headers, &host, connection, upgrade.as_deref());
        drop(headers);
        let framed_by_hyper: Vec<(String, String)> = fields
            .into_iter()
            .filter(|(name, _)| {
                !name.eq_ignore_ascii_case("content-length")
                    && !name.eq_ignore_ascii_case("transfer-encoding")
            })
            .collect();
        let (mut forwarded, feed) = match upstream::request(
            &method,
            &head.version,
            &forwarded_path,
            &framed_by_hyper,
            framing,
        ) {
            Ok(forwarded) => forwarded,
            Err(why) => {
                return self
                    .refuse(refusal("400 Bad Request", why), false, event, start)
                    .await
            }
        };
        drop(framed_by_hyper);
        let (interim_to, mut interim) = tokio::sync::mpsc::unbounded_channel();
        hyper::ext::on_informational(&mut forwarded, move |response| {
            let head =
                upstream::interim_head(response.version(), response.status(), response.headers());
            let _ = interim_to.send(head);
        });
        let to_head = method.eq_ignore_ascii_case("HEAD");
        let Some(up) = self.upstream.as_mut() else {
            return Next::Close;
        };
        let reused = up.used;
        let pending = match up.send(forwarded).await {
            Ok(pending) => pending,
            Err(()) => {
                self.upstream = None;
                if reused {
                    // The destination closed a kept-alive connection: end
                    // the client's too, as the destination itself would.
                    event.push(shared, start);
                    return Next::Close;
                }
                let refused = connection::fail_request(
                    shared,
                    &destination,
                    DenialReason::UpstreamFailed,
                    "destination closed the connection",
                    request(),
                );
                return self.refuse(refused, false, event, start).await;
            }
        };

        let progress = Progress::new();
        let (sent, received) = (AtomicU64::new(0), AtomicU64::new(0));
        let mut body_end: Option<Result<(), BodyError>> = None;
        let mut response_end: Option<Response> = None;
        {
            let Engine {
                client, to_client, ..
            } = &mut *self;
            let mut scanner = Scanner::new(secrets, Some(&destination));
            let scanning = (scanner.keep > 0).then_some(&mut scanner);
            let body = forward_body(client, feed, framing, scanning, &sent, &progress);
            let response = upstream::relay_response(
                pending,
                &mut interim,
                to_client,
                to_head,
                upgrade.is_some(),
                &received,
                &progress,
            );
            tokio::pin!(body, response);
            let exchange = async {
                loop {
                    tokio::select! {
                        end = &mut body, if body_end.is_none() => {
                            let stop = matches!(end, Err(BodyError::Exfiltrated | BodyError::Malformed(_)));
                            body_end = Some(end);
                            if stop {
                                break;
                            }
                        }
                        end = &mut response, if response_end.is_none() => response_end = Some(end),
                    }
                    if body_end.is_some() && response_end.is_some() {
                        break;
                    }
                }
            };
            tokio::select! {
                () = exchange => {}
                () = progress.idle(shared.idle_timeout) => {}
            }
        }
        event.sent = sent.load(Ordering::Relaxed);
        event.received = received.load(Ordering::Relaxed);
        let answered = event.received > 0;

        match body_end {
            Some(Err(BodyError::Exfiltrated)) => {
                self.upstream = None;
                let refused = connection::deny(
                    shared,
                    &destination,
                    DenialReason::SecretExfiltration,
                    request(),
                );
                if answered {
                    event.cut(DenialReason::SecretExfiltration);
                    event.push(shared, start);
                    return Next::Close;
                }
                return self.refuse(refused, false, event, start).await;
            }
            Some(Err(BodyError::Malformed(why))) => {
                self.upstream = None;
                if answered {
                    event.push(shared, start);
                    return Next::Close;
                }
                return self
                    .refuse(refusal("400 Bad Request", why), false, event, start)
                    .await;
            }
            _ => {}
        }
        let body_complete = matches!(body_end, Some(Ok(())));
        match response_end {
            Some(Response::Done { status, close }) => {
                event.status = Some(status);
                event.decision = Decision::Allowed;
                event.push(shared, start);
                if close || !body_complete {
                    self.upstream = None;
                    return Next::Close;
                }
                if client_close {
                    return Next::Close;
                }
                Next::Continue
            }
            Some(Response::Upgraded(switching)) => {
                let Some(mut up) = self.upstream.take() else {
                    return Next::Close;
                };
                event.status = Some(101);
                event.decision = Decision::Allowed;
                let switched = timeout(shared.idle_timeout, switching).await;
                let Ok(Ok(switched)) = switched else {
                    event.push(shared, start);
                    return Next::Close;
                };
                let lease = up.lease.split_off(FIRST_ROOM);
                drop(up);
                let (from_upstream, mut to_upstream) =
                    tokio::io::split(hyper_util::rt::TokioIo::new(switched));
                let mut from_upstream = Reader::new(from_upstream, lease);
                let tunneled = relay_both(
                    &mut self.client,
                    &mut self.to_client,
                    &mut from_upstream,
                    &mut to_upstream,
                    Scanner::new(secrets, None),
                    shared.idle_timeout,
                )
                .await;
                event.sent += tunneled.sent;
                event.received += tunneled.received;
                if tunneled.cut.is_some() {
                    connection::deny(
                        shared,
                        &destination,
                        DenialReason::SecretExfiltration,
                        request(),
                    );
                    event.cut(DenialReason::SecretExfiltration);
                }
                event.push(shared, start);
                Next::Close
            }
            Some(Response::Failed(failure)) => {
                self.upstream = None;
                if answered || (reused && failure == Failure::Closed) {
                    event.decision = Decision::Allowed;
                    event.push(shared, start);
                    return Next::Close;
                }
                let why = match failure {
                    Failure::Closed => "destination closed the connection",
                    Failure::Bad(why) => why,
                };
                let refused = connection::fail_request(
                    shared,
                    &destination,
                    DenialReason::UpstreamFailed,
                    why,
                    request(),
                );
                self.refuse(refused, false, event, start).await
            }
            None => {
                // Idle too long (or the body stopped early and the response never came).
                self.upstream = None;
                if !answered && !matches!(body_end, Some(Err(BodyError::ReadEnded))) {
                    let refused = connection::fail_request(
                        shared,
                        &destination,
                        DenialReason::UpstreamTimeout,
                        format!("no answer within {:?}", shared.idle_timeout),
                        request(),
                    );
                    return self.refuse(refused, false, event, start).await;
                }
                event.decision = Decision::Allowed;
                event.push(shared, start);
                Next::Close
            }
        }
    }

    /// Makes the upstream for `destination` current: the open one when it
    /// goes there, else (proxy) a new one, resolved and vetted again.
    async fn upstream_for(&mut self, destination: &Destination) -> Result<(), Refusal> {
        if self
            .upstream
            .as_ref()
            .is_some_and(|up| &up.destination == destination)
        {
            return Ok(());
        }
        match &mut self.mode {
            Mode::Inspected(_) => Err(connection::fail(
                self.shared,
                destination,
                DenialReason::UpstreamFailed,
                "destination closed the connection",
            )),
            Mode::Proxy(held) => {
                self.upstream = None;
                let floor = upstream::floor(self.shared.max_header_bytes);
                let lease = connection::lease(self.shared, destination, floor)?;
                let stream = connection::open(destination, self.shared, held).await?;
                let started = Upstream::start(
                    destination.clone(),
                    Box::new(stream),
                    lease,
                    self.shared.max_header_bytes,
                )
                .await
                .map_err(|_| {
                    connection::fail(
                        self.shared,
                        destination,
                        DenialReason::UpstreamFailed,
                        "destination closed the connection",
                    )
                })?;
                self.upstream = Some(started);
                Ok(())
            }
        }
    }
}
