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

type Job = Box<dyn FnOnce() + Send>;

struct Spawner {
    pid: rustix::process::Pid,
    jobs: Sender<Job>,
}

static CURRENT: AtomicPtr<Spawner> = AtomicPtr::new(std::ptr::null_mut());

/// Runs `work` on the spawner thread and returns its result. Blocks the
/// caller (which should not hold the GVL) until the work is done.
pub fn run<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> io::Result<R> {
    let (reply, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = reply.send(work());
    });
    current()?.jobs.send(job).map_err(|_| gone())?;
    // A panicking job drops `reply` without an answer.
    answer.recv().map_err(|_| gone())
}

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
}
