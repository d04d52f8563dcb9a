//! The one thread every child is started from (H.5).
//!
//! `PR_SET_PDEATHSIG` (bwrap's `--die-with-parent`) fires when the *thread*
//! that created the child exits, not the process. Ruby retires idle native
//! threads, and tokio retires idle blocking threads, so a child started from
//! either would be killed when that thread goes, seconds after the Ruby
//! thread that asked for it ended. Every spawn therefore runs on a dedicated
//! thread that lives as long as the process: a child's lifetime is tied to
//! the Ruby process, never to a Ruby thread.
//!
//! The thread is built on first use and, like the runtime, remembers the pid
//! that built it: a forked child (where the thread does not exist) leaks the
//! parent's handle and builds its own.

use std::io;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use super::notify::Notifier;

type Job = Box<dyn FnOnce() + Send>;

struct Spawner {
    pid: rustix::process::Pid,
    jobs: Sender<Job>,
}

static CURRENT: AtomicPtr<Spawner> = AtomicPtr::new(std::ptr::null_mut());

/// Runs `work` on the spawner thread and returns its result. Blocks the
/// caller (which should not hold the GVL) until the work is done.
pub fn run<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> io::Result<R> {
    submit(work)?.wait()
}

/// Hands `work` to the spawner thread without waiting for it: the caller
/// waits on [`Handoff::notifier`] in slices it can interrupt, and may
/// [`cancel`](Handoff::cancel) work that has not started yet.
pub fn submit<R: Send + 'static>(
    work: impl FnOnce() -> R + Send + 'static,
) -> io::Result<Handoff<R>> {
    let shared = Arc::new(Shared {
        slot: Mutex::new(Slot::Queued),
        done: Notifier::new()?,
    });
    let job_shared = shared.clone();
    let job: Job = Box::new(move || {
        {
            let mut slot = job_shared.lock();
            match *slot {
                Slot::Queued => *slot = Slot::Running,
                // Cancelled before it started: nothing is spawned.
                _ => return,
            }
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        *job_shared.lock() = match outcome {
            Ok(value) => Slot::Done(value),
            // A panicking job leaves no answer.
            Err(_) => Slot::Gone,
        };
        job_shared.done.notify();
    });
    current()?.jobs.send(job).map_err(|_| gone())?;
    Ok(Handoff { shared })
}

/// Work on its way through the spawner thread ([`submit`]).
pub struct Handoff<R> {
    shared: Arc<Shared<R>>,
}

struct Shared<R> {
    slot: Mutex<Slot<R>>,
    /// Notified once the work finished (or panicked).
    done: Notifier,
}

enum Slot<R> {
    Queued,
    Running,
    Done(R),
    /// Taken, cancelled, or the work panicked.
    Gone,
}

impl<R> Shared<R> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot<R>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<R> Handoff<R> {
    /// Readable once the work finished. Its write fd may also be signalled
    /// by the caller's interrupt handler to end a wait early.
    pub fn notifier(&self) -> &Notifier {
        &self.shared.done
    }

    /// The result, once the work finished; `Some(Err)` if it panicked (or
    /// the result was already taken or cancelled), `None` while it runs.
    pub fn try_take(&self) -> Option<io::Result<R>> {
        let mut slot = self.shared.lock();
        match *slot {
            Slot::Queued | Slot::Running => None,
            Slot::Done(_) | Slot::Gone => match std::mem::replace(&mut *slot, Slot::Gone) {
                Slot::Done(value) => Some(Ok(value)),
                _ => Some(Err(gone())),
            },
        }
    }

    /// Withdraws work that has not started: true if it never will (nothing
    /// to clean up); false if it is running or finished, so its result must
    /// still be taken (and what it started undone).
    pub fn cancel(&self) -> bool {
        let mut slot = self.shared.lock();
        if matches!(*slot, Slot::Queued) {
            *slot = Slot::Gone;
            return true;
        }
        false
    }

    /// Waits (blocking, without interruption) for the result.
    pub fn wait(&self) -> io::Result<R> {
        loop {
            if let Some(result) = self.try_take() {
                return result;
            }
            self.shared.done.wait(WAIT_SLICE, None);
        }
    }
}

/// How long a blocking [`Handoff::wait`] sleeps between looks at the slot
/// (a notification ends it at once; this only bounds a missed one).
const WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(100);

fn gone() -> io::Error {
    io::Error::other("the process spawner thread is not running")
}

/// This process's spawner, starting its thread if needed.
fn current() -> io::Result<&'static Spawner> {
    let me = rustix::process::getpid();
    loop {
        let existing = CURRENT.load(Ordering::Acquire);
        // SAFETY: published entries are never freed (a parent's is leaked in a fork).
        if let Some(spawner) = unsafe { existing.as_ref() } {
            if spawner.pid == me {
                return Ok(spawner);
            }
        }
        let (jobs, queue) = mpsc::channel::<Job>();
        let fresh = Box::into_raw(Box::new(Spawner { pid: me, jobs }));
        match CURRENT.compare_exchange(existing, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                let started = std::thread::Builder::new()
                    .name("littleghost-spawner".into())
                    .spawn(move || serve(queue));
                if let Err(error) = started {
                    // Unpublish so a later call retries; the entry is leaked
                    // (another thread may have read it already).
                    let _ = CURRENT.compare_exchange(
                        fresh,
                        std::ptr::null_mut(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                    return Err(error);
                }
            }
            Err(_) => {
                // Another thread of this process won the race.
                // SAFETY: `fresh` was never published.
                drop(unsafe { Box::from_raw(fresh) });
            }
        }
    }
}

/// The thread body: every signal blocked (Ruby's handlers run on its own
/// threads; the children reset their mask), then jobs until the process ends.
fn serve(queue: mpsc::Receiver<Job>) {
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initialises the set; pthread_sigmask reads it.
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_BLOCK, all.as_ptr(), std::ptr::null_mut());
    }
    for job in queue {
        // A panic must not end the thread (and with it the children's parent link).
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_one_long_lived_thread() {
        let first = run(|| std::thread::current().id()).unwrap();
        let second = std::thread::spawn(|| run(|| std::thread::current().id()).unwrap())
            .join()
            .unwrap();
        assert_eq!(first, second);
        assert_ne!(first, std::thread::current().id());
        assert!(run(|| -> () { panic!("job failed") }).is_err());
        assert_eq!(run(|| 7).unwrap(), 7);
    }

    #[test]
    fn queued_work_can_be_cancelled_and_never_runs() {
        // Hold the spawner thread so the second job stays queued.
        let (release, hold) = mpsc::channel::<()>();
        let busy = submit(move || hold.recv().is_ok()).unwrap();
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = ran.clone();
        let queued = submit(move || flag.store(true, Ordering::SeqCst)).unwrap();
        assert!(queued.try_take().is_none());
        assert!(queued.cancel());
        release.send(()).unwrap();
        assert!(busy.wait().unwrap());
        // The spawner runs jobs in order: once this one ran, the cancelled one was skipped.
        run(|| ()).unwrap();
        assert!(!ran.load(Ordering::SeqCst));
        assert!(queued.try_take().unwrap().is_err());
    }

    #[test]
    fn started_work_cannot_be_cancelled_and_its_result_stays_available() {
        let (release, hold) = mpsc::channel::<()>();
        let (started, running) = mpsc::channel::<()>();
        let job = submit(move || {
            started.send(()).unwrap();
            hold.recv().unwrap();
            42
        })
        .unwrap();
        running.recv().unwrap();
        assert!(!job.cancel());
        release.send(()).unwrap();
        assert_eq!(job.wait().unwrap(), 42);
    }
}
