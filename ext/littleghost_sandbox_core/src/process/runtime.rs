//! One tokio runtime per process, created on first use.
//!
//! After `fork` the child inherits the parent's runtime structure but not its
//! worker threads, so the child must neither use nor drop it (dropping would
//! try to join threads that do not exist, or take locks held at fork time).
//! Each runtime remembers the pid that built it; a process that finds a
//! foreign runtime leaks it on purpose and builds its own.

use std::sync::atomic::{AtomicPtr, Ordering};

use tokio::runtime::{Builder, Handle, Runtime};

struct Owned {
    pid: rustix::process::Pid,
    runtime: Runtime,
}

static CURRENT: AtomicPtr<Owned> = AtomicPtr::new(std::ptr::null_mut());

/// A handle to this process's runtime, building it if needed.
pub fn handle() -> std::io::Result<Handle> {
    let me = rustix::process::getpid();
    loop {
        let current = CURRENT.load(Ordering::Acquire);
        // SAFETY: entries are never freed once published (see module docs).
        if let Some(owned) = unsafe { current.as_ref() } {
            if owned.pid == me {
                return Ok(owned.runtime.handle().clone());
            }
        }
        let runtime = Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("littleghost-process")
            .enable_io()
            .enable_time()
            .build()?;
        let fresh = Box::into_raw(Box::new(Owned { pid: me, runtime }));
        match CURRENT.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // The previous entry (if any) belongs to a parent process: leaked.
            Ok(_) => continue,
            Err(_) => {
                // Another thread of this process won the race; ours never ran anything.
                // SAFETY: `fresh` was never published.
                let lost = unsafe { Box::from_raw(fresh) };
                lost.runtime.shutdown_background();
            }
        }
    }
}

/// Whether this process built the current runtime (false in a forked child
/// until it first runs something).
pub fn owned_by_this_process() -> bool {
    let current = CURRENT.load(Ordering::Acquire);
    // SAFETY: as in `handle`.
    unsafe { current.as_ref() }.is_some_and(|owned| owned.pid == rustix::process::getpid())
}
