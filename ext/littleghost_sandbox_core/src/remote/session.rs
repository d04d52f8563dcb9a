//! A program started on the daemon (`Start`): its output gathered from the
//! stream as it comes, its stdin and signals sent by id. Dropping the
//! session drops the stream, and the daemon ends a program whose client
//! went away (TERM, then KILL after the grace).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use littleghost_sandbox_proto::process::v1 as pb;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::error::Error;
use super::pending::Pending;
use super::programs::Grpc;
use crate::process::running::Exit;
use crate::process::session::SessionStatus;
use crate::process::TERMINATION_GRACE;

/// What arrived since the last read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The program ended and everything it wrote was read.
    pub eof: bool,
}

#[derive(Default)]
struct Inbox {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The exit code the daemon reported, or why the stream broke.
    end: Option<Result<i32, Error>>,
}

/// The inbox, and its two bells: one for threads, one for the runtime's tasks.
type Shared = Arc<(Mutex<Inbox>, Condvar, Notify)>;

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
        let inbox: Shared = Arc::new(Default::default());
        let filled = inbox.clone();
        let address = grpc.endpoint.grpc.clone();
        let reader = runtime
            .spawn(async move {
                loop {
                    let message = stream.message().await;
                    let (lock, arrived, _) = &*filled;
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
                    filled.2.notify_waiters();
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
        self.inbox.2.notify_waiters();
    }

    /// What arrives within `limit` (docs/spec.md 18.11): the first output,
    /// or the end, or nothing once the limit passed.
    pub fn read_within(&self, limit: Duration) -> Pending<Chunk> {
        Pending::spawn(&self.runtime, {
            let inbox = self.inbox.clone();
            async move {
                let taken = until(&inbox, Some(limit), |inbox| {
                    let something =
                        !inbox.stdout.is_empty() || !inbox.stderr.is_empty() || inbox.end.is_some();
                    something.then(|| Chunk {
                        stdout: std::mem::take(&mut inbox.stdout),
                        stderr: std::mem::take(&mut inbox.stderr),
                        eof: inbox.end.is_some(),
                    })
                });
                Ok(taken.await.unwrap_or_default())
            }
        })
    }

    /// The program's status once it ends within `limit` (None: however
    /// long it takes); None if it did not.
    pub fn exit_within(&self, limit: Option<Duration>) -> Pending<Option<SessionStatus>> {
        let (pid, inbox) = (self.pid, self.inbox.clone());
        Pending::spawn(&self.runtime, async move {
            let end = ended(&inbox, limit).await.transpose()?;
            Ok(end.map(|code| status(pid, code)))
        })
    }

    /// docs/spec.md 17.12 over the protocol: TERM to the program's group,
    /// KILL once the grace passed; its status.
    pub fn terminate(&self) -> Pending<SessionStatus> {
        let (grpc, pid, inbox) = (self.grpc.clone(), self.pid, self.inbox.clone());
        Pending::spawn(&self.runtime, async move {
            let mut end = ended(&inbox, Some(Duration::ZERO)).await;
            if end.is_none() {
                grpc.signal(pid, pb::Signal::Sigterm).await?;
                end = ended(&inbox, Some(TERMINATION_GRACE)).await;
            }
            if end.is_none() {
                grpc.signal(pid, pb::Signal::Sigkill).await?;
                end = ended(&inbox, None).await;
            }
            Ok(status(pid, end.expect("a wait without a limit ends")?))
        })
    }

    /// How it stands, in a word: `running`, `ended` or `closed`.
    pub fn state(&self) -> &'static str {
        match (self.closed(), self.ended()) {
            (true, _) => "closed",
            (false, true) => "ended",
            (false, false) => "running",
        }
    }

    /// Refused once the session is closed (its stream is gone).
    fn refused_when_closed(&self) -> Option<Pending<()>> {
        self.closed()
            .then(|| Pending::ready(Err(Error::Closed("session is closed".into()))))
    }

    /// Writes `bytes` to the program's stdin.
    pub fn write(&self, bytes: Vec<u8>) -> Pending<()> {
        if let Some(refused) = self.refused_when_closed() {
            return refused;
        }
        let grpc = self.grpc.clone();
        let pid = self.pid;
        Pending::spawn(&self.runtime, async move {
            grpc.write_stdin(pid, Some(bytes)).await
        })
    }

    /// Closes the program's stdin: it reads end of file.
    pub fn close_write(&self) -> Pending<()> {
        if let Some(refused) = self.refused_when_closed() {
            return refused;
        }
        let grpc = self.grpc.clone();
        let pid = self.pid;
        Pending::spawn(
            &self.runtime,
            async move { grpc.write_stdin(pid, None).await },
        )
    }
}

/// Waits on the runtime until `take` takes something from the inbox, or
/// `limit` passed (None: no limit); what it took.
async fn until<T>(
    inbox: &Shared,
    limit: Option<Duration>,
    mut take: impl FnMut(&mut Inbox) -> Option<T>,
) -> Option<T> {
    let deadline = limit.map(|limit| tokio::time::Instant::now() + limit);
    loop {
        // Listening before looking, so a change between the two still wakes it.
        let rung = inbox.2.notified();
        tokio::pin!(rung);
        rung.as_mut().enable();
        if let Some(taken) = take(&mut inbox.0.lock().unwrap_or_else(|p| p.into_inner())) {
            return Some(taken);
        }
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, rung).await.ok()?,
            None => rung.await,
        }
    }
}

/// The status of an exit `code` as the daemon reports it: the program's
/// status, or 128 + the signal that ended it.
fn status(pid: i32, code: i32) -> SessionStatus {
    SessionStatus {
        pid,
        exit: Exit::Status((code & 0xff) << 8),
    }
}

/// The program's end, if it comes within `limit`.
async fn ended(inbox: &Shared, limit: Option<Duration>) -> Option<Result<i32, Error>> {
    until(inbox, limit, |inbox| inbox.end.clone()).await
}

impl Drop for Session {
    /// The stream goes, so the daemon ends the program.
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled_later(inbox: &Shared, fill: impl FnOnce(&mut Inbox) + Send + 'static) {
        let inbox = inbox.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            fill(&mut inbox.0.lock().unwrap());
            inbox.2.notify_waiters();
        });
    }

    #[tokio::test]
    async fn a_wait_gives_the_end_when_it_comes_and_nothing_at_its_limit() {
        let inbox: Shared = Arc::new(Default::default());
        assert_eq!(ended(&inbox, Some(Duration::ZERO)).await, None);
        filled_later(&inbox, |inbox| inbox.end = Some(Ok(3)));
        assert_eq!(ended(&inbox, None).await, Some(Ok(3)));
        let exit = status(7, 3);
        assert_eq!((exit.pid, exit.exit.code()), (7, Some(3)));
    }

    #[tokio::test]
    async fn until_takes_output_as_it_arrives() {
        let inbox: Shared = Arc::new(Default::default());
        let printed = |inbox: &mut Inbox| {
            (!inbox.stdout.is_empty()).then(|| std::mem::take(&mut inbox.stdout))
        };
        assert_eq!(
            until(&inbox, Some(Duration::from_millis(1)), printed).await,
            None
        );
        filled_later(&inbox, |inbox| inbox.stdout.extend_from_slice(b"hello"));
        assert_eq!(until(&inbox, None, printed).await, Some(b"hello".to_vec()));
        assert!(
            inbox.0.lock().unwrap().stdout.is_empty(),
            "taken, not copied"
        );
    }
}
