//! Moving bytes: a request body decoded into hyper's request, and the two-way copy of tunnels
//! (`CONNECT`, a switched protocol), with the idle timeout of an exchange.

use super::*;

/// Progress shared by the two directions of one exchange.
pub(super) struct Progress {
    pub(super) start: Instant,
    /// Milliseconds after `start` of the last movement either way.
    pub(super) last: AtomicU64,
}

impl Progress {
    pub(super) fn new() -> Progress {
        Progress {
            start: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    pub(super) fn moved(&self) {
        self.last
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Returns once nothing moved for `idle`.
    pub(super) async fn idle(&self, idle: Duration) {
        loop {
            let deadline =
                self.start + Duration::from_millis(self.last.load(Ordering::Relaxed)) + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

/// Why a body stopped before its end.
#[derive(Debug)]
pub(super) enum BodyError {
    /// A stand-in bound where its secret may not go (not passed on).
    Exfiltrated,
    Malformed(&'static str),
    /// The sending side ended early.
    ReadEnded,
    /// The receiving side is gone.
    WriteFailed,
}

pub(super) async fn send<W: AsyncWrite + Unpin>(to: &mut W, bytes: &[u8]) -> Result<(), BodyError> {
    to.write_all(bytes)
        .await
        .map_err(|_| BodyError::WriteFailed)?;
    to.flush().await.map_err(|_| BodyError::WriteFailed)
}

pub(super) async fn more<R: AsyncRead + Unpin>(from: &mut Reader<R>) -> Result<(), BodyError> {
    match from.fill().await {
        Ok(0) | Err(_) => Err(BodyError::ReadEnded),
        Ok(_) => Ok(()),
    }
}

/// Hands `to` (hyper's request body) the data of one body the child framed
/// as `framing`, decoded, scanning it (and a chunked body's size lines and
/// trailer fields) when a scanner is given; `count` is what it read of the
/// child's connection, framing included. [`Piece::End`] goes only after the
/// whole body was read and scanned: on any error `to` is dropped without
/// it, and hyper never completes the request toward the destination.
pub(super) async fn forward_body<R>(
    from: &mut Reader<R>,
    to: tokio::sync::mpsc::Sender<Piece>,
    framing: Framing,
    mut scanner: Option<&mut Scanner<'_>>,
    count: &AtomicU64,
    progress: &Progress,
) -> Result<(), BodyError>
where
    R: AsyncRead + Unpin,
{
    let pass = |data: &[u8]| Piece::Data(hyper::body::Bytes::copy_from_slice(data));
    match framing {
        Framing::None => {}
        Framing::UntilClose => return Err(BodyError::Malformed("a request body needs a length")),
        Framing::Length(mut left) => {
            while left > 0 {
                if from.buffered().is_empty() {
                    more(from).await?;
                }
                let take = (from.buffered().len() as u64).min(left) as usize;
                let data = &from.buffered()[..take];
                if scanner.as_deref_mut().and_then(|s| s.feed(data)).is_some() {
                    return Err(BodyError::Exfiltrated);
                }
                let piece = pass(data);
                from.consume(take);
                to.send(piece).await.map_err(|_| BodyError::WriteFailed)?;
                left -= take as u64;
                count.fetch_add(take as u64, Ordering::Relaxed);
                progress.moved();
            }
        }
        Framing::Chunked => {
            let mut decoder = Chunked::new();
            let mut data = Vec::new();
            loop {
                let buffered = from.buffered();
                let mut used = 0;
                let mut done = false;
                while !done {
                    match decoder
                        .step(&buffered[used..])
                        .map_err(BodyError::Malformed)?
                    {
                        Step::More => break,
                        Step::Framing(n) => {
                            // Size lines (extensions) and trailer fields:
                            // whole lines, checked on their own, not forwarded.
                            let line = &buffered[used..used + n];
                            if scanner
                                .as_deref()
                                .and_then(|s| s.check_line(line))
                                .is_some()
                            {
                                return Err(BodyError::Exfiltrated);
                            }
                            used += n;
                        }
                        Step::Data(n) => {
                            let piece = &buffered[used..used + n];
                            if scanner.as_deref_mut().and_then(|s| s.feed(piece)).is_some() {
                                return Err(BodyError::Exfiltrated);
                            }
                            data.extend_from_slice(piece);
                            used += n;
                        }
                        Step::Done(n) => {
                            used += n;
                            done = true;
                        }
                    }
                }
                if used > 0 {
                    from.consume(used);
                    if !data.is_empty() {
                        let piece = Piece::Data(std::mem::take(&mut data).into());
                        to.send(piece).await.map_err(|_| BodyError::WriteFailed)?;
                    }
                    count.fetch_add(used as u64, Ordering::Relaxed);
                    progress.moved();
                }
                if done {
                    break;
                }
                if used == 0 {
                    more(from).await?;
                }
            }
        }
    }
    // hyper drops the body once a length is complete: no end to hand it then.
    let _ = to.send(Piece::End).await;
    Ok(())
}

/// How a tunnel ended.
pub(in crate::network) struct Tunneled {
    pub sent: u64,
    pub received: u64,
    /// The stand-in that cut it, client to destination.
    pub cut: Option<Exfiltration>,
}

/// Copies one direction until its end (then shuts the other side's write
/// half down), scanning when asked; a stand-in stops it before the piece
/// that completes it is passed on.
pub(super) async fn pump<R, W>(
    from: &mut Reader<R>,
    to: &mut W,
    mut scanner: Option<&mut Scanner<'_>>,
    count: &AtomicU64,
    progress: &Progress,
) -> Option<Exfiltration>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        if from.buffered().is_empty() {
            match from.fill().await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let data = from.buffered();
        if let Some(found) = scanner.as_deref_mut().and_then(|s| s.feed(data)) {
            return Some(found);
        }
        if send(to, data).await.is_err() {
            break;
        }
        let n = data.len();
        from.consume(n);
        count.fetch_add(n as u64, Ordering::Relaxed);
        progress.moved();
    }
    let _ = to.shutdown().await;
    None
}

/// Relays both ways until both directions ended, a stand-in cuts the
/// tunnel, or nothing moved for `idle`. Bytes already buffered in either
/// reader go first.
pub(super) async fn relay_both<CR, CW, UR, UW>(
    client: &mut Reader<CR>,
    to_client: &mut CW,
    upstream: &mut Reader<UR>,
    to_upstream: &mut UW,
    mut scanner: Scanner<'_>,
    idle: Duration,
) -> Tunneled
where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    UR: AsyncRead + Unpin,
    UW: AsyncWrite + Unpin,
{
    let progress = Progress::new();
    let (sent, received) = (AtomicU64::new(0), AtomicU64::new(0));
    let scanning = (scanner.keep > 0).then_some(&mut scanner);
    let up = pump(client, to_upstream, scanning, &sent, &progress);
    let down = pump(upstream, to_client, None, &received, &progress);
    tokio::pin!(up, down);
    let mut cut = None;
    let transfer = async {
        let (mut up_done, mut down_done) = (false, false);
        while !(up_done && down_done) {
            tokio::select! {
                found = &mut up, if !up_done => {
                    up_done = true;
                    if found.is_some() {
                        return found;
                    }
                }
                _ = &mut down, if !down_done => down_done = true,
            }
        }
        None
    };
    tokio::select! {
        found = transfer => cut = found,
        () = progress.idle(idle) => {}
    }
    Tunneled {
        sent: sent.load(Ordering::Relaxed),
        received: received.load(Ordering::Relaxed),
        cut,
    }
}

/// Tunnels `client` (whose first bytes were already scanned with the
/// `CONNECT` head) to `upstream`: every stand-in the client sends cuts it.
/// Each side's reader buffers in its own lease.
pub(in crate::network) async fn tunnel<C: Io, U: Io>(
    client: (C, Lease),
    upstream: (U, Lease),
    shared: &Shared,
) -> Tunneled {
    let (client_read, mut to_client) = tokio::io::split(client.0);
    let (upstream_read, mut to_upstream) = tokio::io::split(upstream.0);
    let mut client = Reader::new(client_read, client.1);
    let mut upstream = Reader::new(upstream_read, upstream.1);
    relay_both(
        &mut client,
        &mut to_client,
        &mut upstream,
        &mut to_upstream,
        Scanner::new(&shared.secrets, None),
        shared.idle_timeout,
    )
    .await
}
