//! A program started on the daemon (`Start`): its output gathered from the
//! stream as it comes, its stdin and signals sent by id. Dropping the
//! session drops the stream, and the daemon ends a program whose client
//! went away (TERM, then KILL after the grace).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use littleghost_sandbox_proto::process::v1 as pb;
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use super::error::Error;
use super::pending::Pending;
use super::programs::Grpc;

/// What arrived since the last read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The program ended and everything it wrote was read.
    pub eof: bool,
}

/// The signals sandboxd's protocol carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
    Kill,
}

#[derive(Default)]
struct Inbox {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The exit code the daemon reported, or why the stream broke.
    end: Option<Result<i32, Error>>,
}

type Shared = Arc<(Mutex<Inbox>, Condvar)>;

/// One started program.
pub struct Session {
    pub pid: i32,
    grpc: Grpc,
    runtime: Handle,
    inbox: Shared,
    reader: AbortHandle,
    closed: AtomicBool,
}

impl Session {
    pub(crate) fn begin(
        runtime: &Handle,
        grpc: Grpc,
        pid: i32,
        mut stream: tonic::Streaming<pb::StartResponse>,
    ) -> Session {
        let inbox: Shared = Arc::default();
        let filled = inbox.clone();
        let address = grpc.endpoint.grpc.clone();
        let reader = runtime
            .spawn(async move {
                loop {
                    let message = stream.message().await;
                    let (lock, arrived) = &*filled;
                    let mut inbox = lock.lock().unwrap_or_else(|p| p.into_inner());
                    use pb::start_response::Event;
                    let ended = match message {
                        Ok(Some(pb::StartResponse { event: Some(event) })) => match event {
                            Event::Stdout(bytes) => {
                                inbox.stdout.extend_from_slice(&bytes);
                                false
                            }
                            Event::Stderr(bytes) => {
                                inbox.stderr.extend_from_slice(&bytes);
                                false
                            }
                            Event::Exit(exit) => {
                                inbox.end = Some(Ok(exit.exit_code));
                                true
                            }
                            Event::Init(_) => false,
                        },
                        Ok(Some(_)) => false,
                        Ok(None) => {
                            inbox.end = Some(Err(Error::Protocol(
                                "the program's stream ended without its exit".into(),
                            )));
                            true
                        }
                        Err(status) => {
                            inbox.end = Some(Err(Error::from_status(&address, &status)));
                            true
                        }
                    };
                    arrived.notify_all();
                    if ended {
                        return;
                    }
                }
            })
            .abort_handle();
        Session {
            pid,
            grpc,
            runtime: runtime.clone(),
            inbox,
            reader,
            closed: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What arrived, waiting up to `slice` for something if nothing has.
    pub fn read(&self, slice: Duration) -> Chunk {
        let deadline = Instant::now() + slice;
        let mut inbox = self.lock();
        while inbox.stdout.is_empty() && inbox.stderr.is_empty() && inbox.end.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            inbox = self
                .inbox
                .1
                .wait_timeout(inbox, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        Chunk {
            stdout: std::mem::take(&mut inbox.stdout),
            stderr: std::mem::take(&mut inbox.stderr),
            eof: inbox.end.is_some(),
        }
    }

    /// The program's end, if it comes within `slice`.
    pub fn wait(&self, slice: Duration) -> Option<Result<i32, Error>> {
        let inbox = self.lock();
        let (inbox, _) = self
            .inbox
            .1
            .wait_timeout_while(inbox, slice, |inbox| inbox.end.is_none())
            .unwrap_or_else(|p| p.into_inner());
        inbox.end.clone()
    }

    /// Whether [`end`](Self::end) was called (by the session or its sandbox).
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Whether the program is known to have ended.
    pub fn ended(&self) -> bool {
        self.lock().end.is_some()
    }

    /// Drops the stream, so the daemon ends the program (TERM, then KILL);
    /// the session then reads as ended.
    pub fn end(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.reader.abort();
        let mut inbox = self.lock();
        if inbox.end.is_none() {
            inbox.end = Some(Err(Error::Closed("the session is closed".into())));
        }
        self.inbox.1.notify_all();
    }

    /// Writes `bytes` to the program's stdin.
    pub fn write(&self, bytes: Vec<u8>) -> Pending<()> {
        let grpc = self.grpc.clone();
        let pid = self.pid;
        Pending::spawn(&self.runtime, async move {
            grpc.write_stdin(pid, Some(bytes)).await
        })
    }

    /// Closes the program's stdin: it reads end of file.
    pub fn close_write(&self) -> Pending<()> {
        let grpc = self.grpc.clone();
        let pid = self.pid;
        Pending::spawn(
            &self.runtime,
            async move { grpc.write_stdin(pid, None).await },
        )
    }

    /// Signals the program's group.
    pub fn signal(&self, signal: Signal) -> Pending<()> {
        let grpc = self.grpc.clone();
        let pid = self.pid;
        let signal = match signal {
            Signal::Interrupt => pb::Signal::Sigint,
            Signal::Terminate => pb::Signal::Sigterm,
            Signal::Kill => pb::Signal::Sigkill,
        };
        Pending::spawn(&self.runtime, async move { grpc.signal(pid, signal).await })
    }
}

impl Drop for Session {
    /// The stream goes, so the daemon ends the program.
    fn drop(&mut self) {
        self.reader.abort();
    }
}
