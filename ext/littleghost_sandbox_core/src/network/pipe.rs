//! The child's side of an inspected connection, written by a task of its
//! own: the engine reads the destination's TLS (decrypting) and hands the
//! bytes over; this writer encrypts them and writes them to the child. So a
//! download through inspection is two pipelined stages that the runtime's
//! two workers can run at once, instead of one thread doing both
//! cryptographic halves in turn.
//!
//! Order is kept (one queue, one writer), at most [`LIMIT`] bytes wait, and
//! a write fails once the child's side has failed. The writer writes and
//! flushes every piece as soon as it has it, so bytes never wait for a
//! flush: [`PipeWriter`]'s `flush` only reports a failed writer, and its
//! `shutdown` waits until everything queued was written and the stream shut.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Most bytes queued for the writer before a write waits.
pub(super) const LIMIT: usize = 512 * 1024;

#[derive(Default)]
struct State {
    queue: VecDeque<Vec<u8>>,
    queued: usize,
    /// The writer failed or ended: nothing more can be written.
    broken: bool,
    /// The engine asked for a shutdown (after what is queued).
    closing: bool,
    /// The engine is gone: write what is queued, then end.
    released: bool,
    /// The writer shut the stream down.
    shut: bool,
    writer: Option<Waker>,
    engine: Option<Waker>,
}

struct Shared {
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn wake(waker: &mut Option<Waker>) {
    if let Some(waker) = waker.take() {
        waker.wake();
    }
}

/// The engine's end: an `AsyncWrite` that queues for the writer task.
pub(super) struct PipeWriter {
    shared: Arc<Shared>,
}

/// Splits `to` into a [`PipeWriter`] and the future that writes what it
/// queues (to be spawned; it ends after a shutdown, a failure, or once the
/// `PipeWriter` is dropped and the queue written).
pub(super) fn pipe<W>(to: W) -> (PipeWriter, impl std::future::Future<Output = ()>)
where
    W: AsyncWrite + Unpin,
{
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
    });
    let writer = write_queued(shared.clone(), to);
    (PipeWriter { shared }, writer)
}

enum Next {
    Data(Vec<Vec<u8>>),
    Shutdown,
    End,
}

async fn write_queued<W: AsyncWrite + Unpin>(shared: Arc<Shared>, mut to: W) {
    loop {
        let next = std::future::poll_fn(|cx| {
            let mut state = shared.lock();
            if !state.queue.is_empty() {
                let taken: Vec<Vec<u8>> = state.queue.drain(..).collect();
                state.queued = 0;
                wake(&mut state.engine);
                return Poll::Ready(Next::Data(taken));
            }
            if state.closing {
                return Poll::Ready(Next::Shutdown);
            }
            if state.released {
                return Poll::Ready(Next::End);
            }
            state.writer = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
        let failed = match next {
            Next::Data(pieces) => {
                let mut failed = false;
                for piece in &pieces {
                    if to.write_all(piece).await.is_err() {
                        failed = true;
                        break;
                    }
                }
                failed || to.flush().await.is_err()
            }
            Next::Shutdown => {
                let _ = to.shutdown().await;
                let mut state = shared.lock();
                state.shut = true;
                state.broken = true;
                wake(&mut state.engine);
                return;
            }
            Next::End => true,
        };
        if failed {
            let mut state = shared.lock();
            state.broken = true;
            state.queue.clear();
            state.queued = 0;
            wake(&mut state.engine);
            return;
        }
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut state = self.shared.lock();
        if state.broken || state.closing {
            return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if state.queued >= LIMIT {
            state.engine = Some(cx.waker().clone());
            return Poll::Pending;
        }
        state.queue.push_back(buf.to_vec());
        state.queued += buf.len();
        wake(&mut state.writer);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The writer flushes each piece itself; only a failure is reported.
        if self.shared.lock().broken {
            return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut state = self.shared.lock();
        if state.shut || (state.broken && state.queue.is_empty()) {
            return Poll::Ready(Ok(()));
        }
        state.closing = true;
        state.engine = Some(cx.waker().clone());
        wake(&mut state.writer);
        Poll::Pending
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.released = true;
        wake(&mut state.writer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    /// Every byte written arrives, in order, and a shutdown reaches the
    /// reader only after all of them.
    #[test]
    fn bytes_arrive_in_order_and_the_shutdown_after_them() {
        runtime().block_on(async {
            let (near, mut far) = tokio::io::duplex(64 * 1024);
            let (mut pipe, writer) = pipe(near);
            let writer = tokio::spawn(writer);
            let sent: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
            let reader = tokio::spawn(async move {
                let mut got = Vec::new();
                far.read_to_end(&mut got).await.unwrap();
                got
            });
            for piece in sent.chunks(70_001) {
                pipe.write_all(piece).await.unwrap();
                pipe.flush().await.unwrap();
            }
            pipe.shutdown().await.unwrap();
            assert!(reader.await.unwrap() == sent);
            writer.await.unwrap();
        });
    }

    /// Dropped without a shutdown, the pipe still delivers what was queued
    /// (then the stream just ends).
    #[test]
    fn a_dropped_pipe_still_delivers_what_it_queued() {
        runtime().block_on(async {
            let (near, mut far) = tokio::io::duplex(1024);
            let (mut pipe, writer) = pipe(near);
            let writer = tokio::spawn(writer);
            pipe.write_all(&[7u8; 300_000]).await.unwrap();
            drop(pipe);
            let mut got = Vec::new();
            far.read_to_end(&mut got).await.unwrap();
            assert_eq!(got.len(), 300_000);
            writer.await.unwrap();
        });
    }

    /// Once the reader is gone, writing fails (the engine stops relaying)
    /// instead of queueing without end.
    #[test]
    fn writes_fail_once_the_other_side_is_gone() {
        runtime().block_on(async {
            let (near, far) = tokio::io::duplex(1024);
            let (mut pipe, writer) = pipe(near);
            let writer = tokio::spawn(writer);
            drop(far);
            // Far more than LIMIT: a writer that never reported the failure
            // would leave this waiting for room (bounded here, not timed).
            let writes = async {
                for _ in 0..100 {
                    if pipe.write_all(&[1u8; 64 * 1024]).await.is_err() {
                        return true;
                    }
                }
                false
            };
            let failed = tokio::time::timeout(std::time::Duration::from_secs(60), writes).await;
            assert!(matches!(failed, Ok(true)), "writes went on: {failed:?}");
            writer.await.unwrap();
        });
    }
}
