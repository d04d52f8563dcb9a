//! A call running on the core's runtime that its caller waits for in
//! slices: between slices the caller may do other work (a Ruby binding
//! checks its interrupts) or give up, which drops the call (and the daemon,
//! seeing the request go, ends what it started for it).

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use super::error::Error;

/// The answer of a call that may not have arrived yet.
pub struct Pending<T> {
    answer: mpsc::Receiver<Result<T, Error>>,
    /// None for an answer known at once.
    task: Option<AbortHandle>,
}

impl<T: Send + 'static> Pending<T> {
    /// Runs `call` on `runtime`.
    pub(crate) fn spawn(
        runtime: &Handle,
        call: impl Future<Output = Result<T, Error>> + Send + 'static,
    ) -> Pending<T> {
        let (sender, answer) = mpsc::sync_channel(1);
        let task = runtime
            .spawn(async move {
                let _ = sender.send(call.await);
            })
            .abort_handle();
        Pending {
            answer,
            task: Some(task),
        }
    }

    /// An answer known already (nothing to send, or refused before sending).
    pub(crate) fn ready(answer: Result<T, Error>) -> Pending<T> {
        let (sender, receiver) = mpsc::sync_channel(1);
        let _ = sender.send(answer);
        Pending {
            answer: receiver,
            task: None,
        }
    }

    /// The answer, if it arrives within `slice`.
    pub fn wait(&self, slice: Duration) -> Option<Result<T, Error>> {
        match self.answer.recv_timeout(slice) {
            Ok(answer) => Some(answer),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Err(Error::Protocol(
                "the call ended without an answer".into(),
            ))),
        }
    }

    /// Waits for the answer however long it takes (tests, short calls).
    pub fn wait_all(self) -> Result<T, Error> {
        loop {
            if let Some(answer) = self.wait(Duration::from_secs(3600)) {
                return answer;
            }
        }
    }
}

impl<T> Drop for Pending<T> {
    /// A call nobody waits for is dropped, connection and all.
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}
