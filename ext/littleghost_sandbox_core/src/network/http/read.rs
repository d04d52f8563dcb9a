//! Buffered reading of a connection: a reader whose buffer grows with the memory budget, and a
//! stream that first yields what was read past a `CONNECT` head.

use super::*;

/// A reader with a buffer of bytes read but not yet used (the rest of a
/// pipelined request, a response's first body bytes...).
pub(in crate::network) struct Reader<R> {
    pub(super) inner: R,
    /// Storage, initialised once and reused; `start..end` is unread.
    pub(super) buffer: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
    /// How much one fill takes at most: from 16 KiB, doubled (up to
    /// [`READ_SIZE`]) each time a fill takes all of it, so a connection
    /// that only ever carries small messages keeps a small buffer.
    pub(super) room: usize,
    /// Holds `buffer` of the gateway's memory budget: the buffer grows only
    /// with what the budget has free ([`super::memory`]).
    pub(super) lease: Lease,
    /// An error met after bytes were already read in the same fill: held
    /// back so those bytes go first, returned by the next fill.
    pub(super) failed: Option<std::io::Error>,
}

/// Why a head could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum HeadError {
    TooLarge,
    /// The peer closed in the middle of a head.
    Truncated,
    Io,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// A reader whose buffer is held in `lease` (whose floor should be
    /// [`FIRST_ROOM`]: with less, a first read can wait for the budget).
    pub(in crate::network) fn new(inner: R, lease: Lease) -> Reader<R> {
        Reader {
            inner,
            buffer: Vec::new(),
            start: 0,
            end: 0,
            room: FIRST_ROOM,
            lease,
            failed: None,
        }
    }

    pub(super) fn buffered(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start >= self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more into the buffer: waits for the first bytes, then takes
    /// whatever else is ready at once, up to its room ([`READ_SIZE`] once
    /// the connection carried that much at once; a TLS stream
    /// yields one record, at most 16 KiB, per read: taking the records
    /// already received together lets them be passed on in one write).
    /// The buffer grows only with what the memory budget has free: when it
    /// has little, a fill takes less; when it has none and the buffer is
    /// full, the fill waits for bytes given back.
    /// `Ok(0)` at end of stream. Cancel safe: what was read is in the
    /// buffer, a cancelled fill loses nothing.
    pub(super) async fn fill(&mut self) -> std::io::Result<usize> {
        if let Some(failed) = self.failed.take() {
            return Err(failed);
        }
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let wanted = self.end + self.room;
        if self.buffer.len() < wanted {
            let (lease, end) = (&mut self.lease, self.end);
            let held = std::future::poll_fn(|cx| lease.poll_grow(cx, end + 1, wanted)).await;
            let grown = held.min(wanted);
            if self.buffer.len() < grown {
                self.buffer.resize(grown, 0);
            }
        }
        let room = wanted.min(self.buffer.len()) - self.end;
        let Reader {
            inner,
            buffer,
            end,
            failed,
            room: next_room,
            ..
        } = self;
        let first = *end;
        std::future::poll_fn(|cx| loop {
            let total = *end - first;
            let mut read = ReadBuf::new(&mut buffer[*end..first + room]);
            match Pin::new(&mut *inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    *end += n;
                    if n == 0 || total + n == room {
                        if total + n == room {
                            *next_room = (room * 2).min(READ_SIZE);
                        }
                        return Poll::Ready(Ok(total + n));
                    }
                }
                Poll::Ready(Err(error)) if total > 0 => {
                    *failed = Some(error);
                    return Poll::Ready(Ok(total));
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending if total > 0 => return Poll::Ready(Ok(total)),
                Poll::Pending => return Poll::Pending,
            }
        })
        .await
    }

    /// The stream under the buffer, with what is buffered dropped: for a
    /// close that only drains what still comes (`Shared::drain`).
    pub(super) fn drop_buffered(&mut self) -> &mut R {
        self.consume(self.buffered().len());
        &mut self.inner
    }

    /// The next head (without its blank line), consumed from the buffer;
    /// `None` when the stream ended before its first byte.
    pub(super) async fn read_head(&mut self, limit: usize) -> Result<Option<Vec<u8>>, HeadError> {
        let mut searched: usize = 0;
        loop {
            let buffered = self.buffered();
            let from = searched.saturating_sub(3);
            if let Some(at) = find(&buffered[from..], b"\r\n\r\n") {
                let end = from + at;
                if end + 4 > limit {
                    return Err(HeadError::TooLarge);
                }
                let head = buffered[..end].to_vec();
                self.consume(end + 4);
                return Ok(Some(head));
            }
            if buffered.len() > limit {
                return Err(HeadError::TooLarge);
            }
            searched = buffered.len();
            match self.fill().await {
                Ok(0) if self.buffered().is_empty() => return Ok(None),
                Ok(0) => return Err(HeadError::Truncated),
                Ok(_) => {}
                Err(_) => return Err(HeadError::Io),
            }
        }
    }

    /// The stream, with what was buffered but not used in front of it, and
    /// the lease that held the buffer (still holding what the prefix keeps).
    pub(super) fn into_rewound(mut self) -> (Rewound<R>, Lease) {
        self.buffer.truncate(self.end);
        let rewound = Rewound {
            prefix: self.buffer,
            start: self.start,
            inner: self.inner,
        };
        (rewound, self.lease)
    }
}

/// A stream that first yields bytes already read from it (what followed a
/// `CONNECT` head: a TLS ClientHello, a tunnelled protocol's first bytes).
pub(in crate::network) struct Rewound<S> {
    pub(super) prefix: Vec<u8>,
    pub(super) start: usize,
    pub(super) inner: S,
}

impl<S> Rewound<S> {
    /// The bytes not yet yielded before the stream's own.
    pub(in crate::network) fn prefix(&self) -> &[u8] {
        &self.prefix[self.start..]
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewound<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.start < this.prefix.len() {
            let n = (this.prefix.len() - this.start).min(buf.remaining());
            buf.put_slice(&this.prefix[this.start..this.start + n]);
            this.start += n;
            if this.start == this.prefix.len() {
                this.prefix = Vec::new();
                this.start = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewound<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
