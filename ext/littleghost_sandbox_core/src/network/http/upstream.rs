//! The destination's side of the engine, written and read by hyper
//! (`client::conn::http1`, one client connection per upstream).
//!
//! The engine decides a request and hands hyper its head (method, path,
//! the fields it forwards) and a [`Forwarded`] body: the data it decoded
//! from the child's framing, frame by frame, after scanning. hyper frames
//! what it sends from that body (`Content-Length` of the bytes decoded, or
//! chunked), so no header the gateway removed can move where a body ends,
//! and a body the gateway cuts (a stand-in bound elsewhere, malformed
//! chunks, the child gone) is never completed toward the destination: its
//! channel closes without an end, hyper fails the request and drops the
//! connection (docs/security.md "Request framing").
//!
//! The response hyper parsed is written back to the child by
//! [`relay_response`]: interim (1xx) responses as hyper reports them, the
//! final head with its fields, the body framed as the destination framed
//! it (re-chunked from the data hyper decoded), or the switch of a `101`.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http_body_util::BodyExt;
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::client::conn::http1;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri, Version};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::{Framing, Io, Progress, FIRST_ROOM};
use crate::network::allowlist::Destination;
use crate::network::memory::Lease;

/// How much hyper reads of a destination at once: 64 KiB (a plain 100 MB
/// download ran within the noise of 128 KiB reads, docs/design.md, at half
/// the memory each upstream holds), or room for the largest response head
/// the gateway accepts.
fn buffer_limit(max_header_bytes: usize) -> usize {
    (64 * 1024).max(max_header_bytes + FIRST_ROOM)
}

/// What one upstream holds of the gateway's memory budget for as long as it
/// lives: hyper's read buffer, a decoded piece of the body waiting in
/// hyper's body channel, and the piece the engine is writing to the child,
/// each at most one of hyper's reads. hyper allocates them itself, so they
/// cannot grow with what the budget has free as the engine's own readers
/// do: the lease holds them whole (docs/design.md "The gateway's memory
/// budget"; `tests/gateway_memory_heap.rs` counts the heap they take).
pub(in crate::network) fn floor(max_header_bytes: usize) -> usize {
    3 * buffer_limit(max_header_bytes)
}

/// One connection to a destination, driven by hyper in a task of its own
/// (aborted when this is dropped).
pub(in crate::network) struct Upstream {
    pub destination: Destination,
    sender: http1::SendRequest<Forwarded>,
    /// Changes never; its sender goes when hyper's connection ends.
    ended: watch::Receiver<()>,
    /// Whether it already carried a request (a close before the next
    /// response is then the ordinary keep-alive race, not a failure).
    pub used: bool,
    /// What this connection's buffers are held in; a switched connection's
    /// tunnel takes it over.
    pub lease: Lease,
    task: tokio::task::AbortHandle,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Upstream {
    /// Starts hyper on `stream` (already connected, and verified when TLS).
    pub(in crate::network) async fn start(
        destination: Destination,
        stream: Box<dyn Io>,
        lease: Lease,
        max_header_bytes: usize,
    ) -> Result<Upstream, hyper::Error> {
        let (sender, connection) = http1::Builder::new()
            // Field names go out as `Content-Type`, the way most clients write them.
            .title_case_headers(true)
            .max_header_size(max_header_bytes)
            .max_buf_size(buffer_limit(max_header_bytes))
            .handshake::<_, Forwarded>(TokioIo::new(stream))
            .await?;
        let (alive, ended) = watch::channel(());
        let task = tokio::spawn(async move {
            let _ = connection.with_upgrades().await;
            drop(alive);
        });
        Ok(Upstream {
            destination,
            sender,
            ended,
            used: false,
            lease,
            task: task.abort_handle(),
        })
    }

    /// Returns once hyper's connection ended (the destination closed it, or
    /// sent bytes no request asked for).
    pub(in crate::network) async fn ended(&mut self) {
        while self.ended.changed().await.is_ok() {}
    }

    /// Sends `request` once the connection can take it: `Err` when it is
    /// gone. The future resolves to the final response (1xx go to the
    /// request's `on_informational` callback).
    pub(in crate::network) async fn send(
        &mut self,
        request: Request<Forwarded>,
    ) -> Result<impl std::future::Future<Output = hyper::Result<hyper::Response<Incoming>>>, ()>
    {
        self.used = true;
        self.sender.ready().await.map_err(|_| ())?;
        Ok(self.sender.send_request(request))
    }
}

/// A piece of a forwarded body: data, or its end.
pub(in crate::network) enum Piece {
    Data(Bytes),
    End,
}

/// A request body fed by the engine through a channel. Its channel
/// closing without [`Piece::End`] is an error, so hyper never ends a body
/// the gateway cut (no last chunk, no last byte of a length).
pub(in crate::network) struct Forwarded {
    pieces: mpsc::Receiver<Piece>,
    /// The exact length, when the child framed it with one.
    length: Option<u64>,
    done: bool,
}

impl Body for Forwarded {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.pieces.poll_recv(cx) {
            Poll::Ready(Some(Piece::Data(data))) => Poll::Ready(Some(Ok(Frame::data(data)))),
            Poll::Ready(Some(Piece::End)) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(None) => Poll::Ready(Some(Err(std::io::Error::other(
                "the gateway cut the request body",
            )))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.length == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(length) => SizeHint::with_exact(length),
            None => SizeHint::default(),
        }
    }
}

/// The request hyper sends: `fields` are the forwarded head's fields (no
/// framing field among them: hyper writes the framing of the body, a
/// `Content-Length` of the length decoded or chunked, from `framing`), and
/// the sender the engine feeds its body through.
pub(in crate::network) fn request(
    method: &str,
    version: &str,
    path: &str,
    fields: &[(String, String)],
    framing: Framing,
) -> Result<(Request<Forwarded>, mpsc::Sender<Piece>), &'static str> {
    let (feed, pieces) = mpsc::channel(1);
    let length = match framing {
        Framing::None => Some(0),
        Framing::Length(length) => Some(length),
        Framing::Chunked | Framing::UntilClose => None,
    };
    let mut request = Request::new(Forwarded {
        pieces,
        length,
        done: false,
    });
    *request.method_mut() =
        Method::from_bytes(method.as_bytes()).map_err(|_| "method cannot be forwarded")?;
    *request.uri_mut() = Uri::try_from(path).map_err(|_| "request target cannot be forwarded")?;
    *request.version_mut() = if version == "HTTP/1.0" {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    let headers = request.headers_mut();
    for (name, value) in fields {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| "header name cannot be forwarded")?;
        let value = HeaderValue::from_bytes(value.as_bytes())
            .map_err(|_| "header value cannot be forwarded")?;
        headers.append(name, value);
    }
    match framing {
        Framing::Length(length) => {
            headers.insert(hyper::header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        Framing::Chunked => {
            headers.insert(
                hyper::header::TRANSFER_ENCODING,
                HeaderValue::from_static("chunked"),
            );
        }
        Framing::None | Framing::UntilClose => {}
    }
    Ok((request, feed))
}

/// A 1xx response hyper reported, as the child receives it.
pub(in crate::network) fn interim_head(
    version: Version,
    status: hyper::StatusCode,
    headers: &HeaderMap,
) -> Vec<u8> {
    let reason = status.canonical_reason().unwrap_or("");
    head_bytes(version, status.as_u16(), reason.as_bytes(), headers, &[])
}

/// A response head as the child receives it; `skipped` fields left out.
fn head_bytes(
    version: Version,
    status: u16,
    reason: &[u8],
    headers: &HeaderMap,
    skipped: &[HeaderName],
) -> Vec<u8> {
    let version = if version == Version::HTTP_10 {
        "HTTP/1.0"
    } else {
        "HTTP/1.1"
    };
    let mut out = format!("{version} {status} ").into_bytes();
    out.extend_from_slice(reason);
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        if skipped.contains(name) {
            continue;
        }
        title_case(name.as_str(), &mut out);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// `content-type` as `Content-Type`.
fn title_case(name: &str, out: &mut Vec<u8>) {
    let mut upper = true;
    for byte in name.bytes() {
        out.push(if upper {
            byte.to_ascii_uppercase()
        } else {
            byte
        });
        upper = byte == b'-';
    }
}

/// How relaying a response ended.
pub(in crate::network) enum Response {
    Done {
        status: u16,
        close: bool,
    },
    /// A `101` to a request that asked to switch: hyper hands the
    /// connection over through this.
    Upgraded(hyper::upgrade::OnUpgrade),
    Failed(Failure),
}

#[derive(Debug, PartialEq, Eq)]
pub(in crate::network) enum Failure {
    /// The destination closed before a response.
    Closed,
    Bad(&'static str),
}

async fn write<W: AsyncWrite + Unpin>(
    to: &mut W,
    parts: &[&[u8]],
    received: &AtomicU64,
    progress: &Progress,
) -> std::io::Result<()> {
    for part in parts {
        to.write_all(part).await?;
        received.fetch_add(part.len() as u64, Ordering::Relaxed);
    }
    to.flush().await?;
    progress.moved();
    Ok(())
}

/// Whether the last transfer coding of a response is chunked.
fn ends_chunked(headers: &HeaderMap) -> bool {
    headers
        .get_all(hyper::header::TRANSFER_ENCODING)
        .iter()
        .next_back()
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.rsplit(',').next())
        .is_some_and(|coding| coding.trim().eq_ignore_ascii_case("chunked"))
}

/// Whether a field's comma-separated tokens include `token`.
fn lists(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|value| {
        value.to_str().is_ok_and(|value| {
            value
                .split(',')
                .any(|listed| listed.trim().eq_ignore_ascii_case(token))
        })
    })
}

/// Relays the interim responses and the final one of the request `pending`
/// answers, as hyper read them: the head's fields as they came (names in
/// title case), the body framed the way the destination framed it.
pub(in crate::network) async fn relay_response<W: AsyncWrite + Unpin>(
    pending: impl std::future::Future<Output = hyper::Result<hyper::Response<Incoming>>>,
    interim: &mut mpsc::UnboundedReceiver<Vec<u8>>,
    to: &mut W,
    to_head: bool,
    upgrade: bool,
    received: &AtomicU64,
    progress: &Progress,
) -> Response {
    tokio::pin!(pending);
    let answered = loop {
        tokio::select! {
            biased;
            Some(head) = interim.recv() => {
                if write(to, &[&head], received, progress).await.is_err() {
                    return Response::Failed(Failure::Bad("client went away"));
                }
            }
            answered = &mut pending => break answered,
        }
    };
    while let Ok(head) = interim.try_recv() {
        if write(to, &[&head], received, progress).await.is_err() {
            return Response::Failed(Failure::Bad("client went away"));
        }
    }
    let mut response = match answered {
        Ok(response) => response,
        Err(error) if error.is_incomplete_message() || error.is_canceled() => {
            return Response::Failed(Failure::Closed)
        }
        Err(error) if error.is_parse() => {
            return Response::Failed(Failure::Bad("malformed or oversized response head"))
        }
        Err(_) => return Response::Failed(Failure::Bad("the destination's connection failed")),
    };
    let status = response.status().as_u16();
    if status == 101 && !upgrade {
        return Response::Failed(Failure::Bad("101 to a request that asked no upgrade"));
    }
    let headers = response.headers();
    let no_body = to_head || status == 101 || status == 204 || status == 304;
    let framing = if no_body {
        Framing::None
    } else if headers.contains_key(hyper::header::TRANSFER_ENCODING) {
        if ends_chunked(headers) {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else if let Some(length) = response.body().size_hint().exact() {
        Framing::Length(length)
    } else {
        Framing::UntilClose
    };
    // A chunked body is written chunked: a length the destination sent
    // beside it would contradict it.
    let skipped = if framing == Framing::Chunked {
        vec![hyper::header::CONTENT_LENGTH]
    } else {
        Vec::new()
    };
    let reason = response
        .extensions()
        .get::<hyper::ext::ReasonPhrase>()
        .map(|reason| reason.as_bytes().to_vec())
        .unwrap_or_else(|| {
            response
                .status()
                .canonical_reason()
                .unwrap_or("")
                .as_bytes()
                .to_vec()
        });
    let head = head_bytes(response.version(), status, &reason, headers, &skipped);
    let close = lists(headers, hyper::header::CONNECTION, "close")
        || (response.version() == Version::HTTP_10
            && !lists(headers, hyper::header::CONNECTION, "keep-alive"))
        || framing == Framing::UntilClose;
    if write(to, &[&head], received, progress).await.is_err() {
        return Response::Failed(Failure::Bad("client went away"));
    }
    if status == 101 {
        return Response::Upgraded(hyper::upgrade::on(&mut response));
    }
    if no_body {
        return Response::Done { status, close };
    }
    let mut body = response.into_body();
    let complete = loop {
        let frame = match body.frame().await {
            None => break true,
            Some(Err(_)) => break false,
            Some(Ok(frame)) => frame,
        };
        let written = match frame.into_data() {
            Ok(data) if framing == Framing::Chunked => {
                if data.is_empty() {
                    continue;
                }
                let size = format!("{:x}\r\n", data.len());
                write(to, &[size.as_bytes(), &data, b"\r\n"], received, progress).await
            }
            Ok(data) => write(to, &[&data], received, progress).await,
            Err(frame) => match frame.into_trailers() {
                Ok(trailers) if framing == Framing::Chunked => {
                    let mut end = b"0\r\n".to_vec();
                    let fields = head_bytes(Version::HTTP_11, 0, b"", &trailers, &[]);
                    // Drop the status line head_bytes wrote: trailers are fields only.
                    let first_line = fields
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(0, |at| at + 1);
                    end.extend_from_slice(&fields[first_line..]);
                    let sent = write(to, &[&end], received, progress).await;
                    if sent.is_err() {
                        break false;
                    }
                    return Response::Done { status, close };
                }
                _ => continue,
            },
        };
        if written.is_err() {
            break false;
        }
    };
    if !complete {
        // The child already has the status line: the connection just ends.
        return Response::Done {
            status,
            close: true,
        };
    }
    if framing == Framing::Chunked
        && write(to, &[b"0\r\n\r\n"], received, progress)
            .await
            .is_err()
    {
        return Response::Done {
            status,
            close: true,
        };
    }
    Response::Done { status, close }
}
