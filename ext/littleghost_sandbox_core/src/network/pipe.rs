//! The child's side of an inspected connection, written by a task of its
//! own: the engine reads the destination's TLS (decrypting) and hands the
//! bytes over; this writer encrypts them and writes them to the child. So a
//! download through inspection is two pipelined stages that the runtime's
//! two workers can run at once, instead of one thread doing both
//! cryptographic halves in turn.
//!
//! Order is kept (one queue, one writer), at most [`LIMIT`] bytes wait (or
//! are being written), each taken from the gateway's memory budget
//! ([`super::memory`]): past its floor, a write waits for bytes the budget
//! has free. A write fails once the child's side has failed. The writer writes and
//! flushes every piece as soon as it has it, so bytes never wait for a
//! flush: [`PipeWriter`]'s `flush` only reports a failed writer, and its
//! `shutdown` waits until everything queued was written and the stream shut.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::memory::Lease;

/// Most bytes queued or being written before a write waits: eight TLS
/// records' worth, enough that the writer never waits for the engine on a
/// fast download (see `docs/design.md`, "Memory budget").
pub(super) const LIMIT: usize = 128 * 1024;

/// What a pipe can always queue whatever the budget (one TLS record).
pub(super) const FLOOR: usize = 16 * 1024;

struct State {
    queue: VecDeque<Vec<u8>>,
    /// Bytes queued or taken by the writer and not yet written.
    unwritten: usize,
    /// Holds `unwritten` (at least its floor) of the budget.
    lease: Lease,
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
/// `PipeWriter` is dropped and the queue written). What waits is held in
/// `lease` (best with a floor of [`FLOOR`]: with none, a write can wait
/// for the budget with nothing of its own queued).
pub(super) fn pipe<W>(to: W, lease: Lease) -> (PipeWriter, impl std::future::Future<Output = ()>)
where
    W: AsyncWrite + Unpin,
{
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            unwritten: 0,
            lease,
            broken: false,
            closing: false,
            released: false,
            shut: false,
            writer: None,
            engine: None,
        }),
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
                // Still counted (and held) until written.
                let taken: Vec<Vec<u8>> = state.queue.drain(..).collect();
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
                let failed = failed || to.flush().await.is_err();
                if !failed {
                    let written: usize = pieces.iter().map(Vec::len).sum();
                    drop(pieces);
                    let mut state = shared.lock();
                    state.unwritten -= written;
                    let unwritten = state.unwritten;
                    state.lease.shrink_to(unwritten);
                    wake(&mut state.engine);
                }
                failed
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
            state.unwritten = 0;
            state.lease.shrink_to(0);
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
        let unwritten = state.unwritten;
        if unwritten >= LIMIT {
            state.engine = Some(cx.waker().clone());
            return Poll::Pending;
        }
        // Woken by the writer (bytes written) or by the budget (bytes
        // given back by any connection), whichever comes first.
        let wanted = (unwritten + buf.len()).min(LIMIT);
        let held = match state.lease.poll_grow(cx, unwritten + 1, wanted) {
            Poll::Ready(held) => held,
            Poll::Pending => {
                state.engine = Some(cx.waker().clone());
                return Poll::Pending;
            }
        };
        let n = buf.len().min(held.min(LIMIT) - unwritten);
        state.queue.push_back(buf[..n].to_vec());
        state.unwritten += n;
        wake(&mut state.writer);
        Poll::Ready(Ok(n))
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
    use crate::network::memory::Memory;
    use tokio::io::AsyncReadExt;

    fn lease(limit: usize) -> Lease {
        Memory::new(limit).lease(FLOOR).unwrap()
    }

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
            let (mut pipe, writer) = pipe(near, lease(usize::MAX));
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
            let (mut pipe, writer) = pipe(near, lease(usize::MAX));
            let writer = tokio::spawn(writer);
            pipe.write_all(&[7u8; 100_000]).await.unwrap();
            drop(pipe);
            let mut got = Vec::new();
            far.read_to_end(&mut got).await.unwrap();
            assert_eq!(got.len(), 100_000);
            writer.await.unwrap();
        });
    }

    /// Once the reader is gone, writing fails (the engine stops relaying)
    /// instead of queueing without end.
    #[test]
    fn writes_fail_once_the_other_side_is_gone() {
        runtime().block_on(async {
            let (near, far) = tokio::io::duplex(1024);
            let (mut pipe, writer) = pipe(near, lease(usize::MAX));
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

    /// A child that never reads holds at most [`LIMIT`] bytes of the
    /// budget in its pipe: the engine's writes wait, nothing grows.
    #[test]
    fn an_unread_pipe_holds_at_most_its_limit_of_the_budget() {
        runtime().block_on(async {
            let memory = Memory::new(usize::MAX / 2);
            let (near, _far) = tokio::io::duplex(1024);
            let (mut pipe, writer) = pipe(near, memory.lease(FLOOR).unwrap());
            let writer = tokio::spawn(writer);
            let mut accepted = 0;
            let writes = async {
                loop {
                    pipe.write_all(&[3u8; 64 * 1024]).await.unwrap();
                    accepted += 64 * 1024;
                }
            };
            // Waits for good once full; the timeout only ends the wait.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writes).await;
            assert!(accepted <= LIMIT, "{accepted} bytes accepted");
            assert!(memory.in_use() <= LIMIT + 1024, "{} held", memory.in_use());
            writer.abort();
        });
    }

    /// With the gateway's budget taken by others, a write waits past its
    /// floor, and goes on once another connection gives bytes back.
    #[test]
    fn writes_wait_for_the_budget_and_resume_when_bytes_come_back() {
        runtime().block_on(async {
            let memory = Memory::new(FLOOR + 100_000);
            let floor = memory.lease(FLOOR).unwrap();
            let mut others = memory.lease(0).unwrap();
            assert_eq!(others.grow_to(usize::MAX), 100_000);
            let (near, mut far) = tokio::io::duplex(1024);
            let (mut pipe, writer) = pipe(near, floor);
            let writer = tokio::spawn(writer);
            let (accepted_tx, mut accepted_rx) = tokio::sync::mpsc::unbounded_channel();
            let engine = tokio::spawn(async move {
                for _ in 0..4 {
                    pipe.write_all(&[5u8; 32 * 1024]).await.unwrap();
                    accepted_tx.send(()).unwrap();
                }
                pipe.shutdown().await.unwrap();
            });
            // Nobody reads `far`, the floor is full: the first write cannot finish.
            let first =
                tokio::time::timeout(std::time::Duration::from_secs(1), accepted_rx.recv()).await;
            assert!(first.is_err(), "a write went past the floor");
            assert!(memory.in_use() <= memory.limit());
            others.shrink_to(0);
            let mut got = Vec::new();
            far.read_to_end(&mut got).await.unwrap();
            assert_eq!(got.len(), 4 * 32 * 1024);
            engine.await.unwrap();
            writer.await.unwrap();
        });
    }
}
