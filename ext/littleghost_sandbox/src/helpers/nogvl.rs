//! Running blocking work without the GVL, so other Ruby threads keep running,
//! while staying interruptible by Thread#raise, Thread#kill, Timeout and Ctrl-C.
//!
//! Built on `rb_nogvl` with `RB_NOGVL_INTR_FAIL`: Ruby never raises (longjmps)
//! through our Rust frames. If an interrupt is already pending, the work does
//! not run at all and the caller finds out through [`check_interrupts`], which
//! runs pending interrupts under `rb_protect` and returns them as `Err` (the
//! original exception object, or the Thread#kill jump, unchanged).
//!
//! The unblocking function is a [`Wake`]: it sets a flag and writes to a
//! notification fd, both async-signal-safe, so Ruby may call it straight from
//! its signal handler (`RB_NOGVL_UBF_ASYNC_SAFE`) instead of starting a helper
//! thread on every call. Work must watch that fd (or the flag) to return early.
//!
//! A panic in the work is caught and becomes a Ruby RuntimeError; it never
//! unwinds into Ruby's C frames.

use std::any::Any;
use std::ffi::c_void;
use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use magnus::{Error, Ruby};

/// Tells blocking work that Ruby wants this thread back.
pub struct Wake {
    interrupted: AtomicBool,
    fd: RawFd,
}

impl Wake {
    /// `fd` is written to (8 bytes, eventfd style) when Ruby interrupts; it
    /// must stay open while the work runs.
    pub fn new(fd: RawFd) -> Self {
        Wake {
            interrupted: AtomicBool::new(false),
            fd,
        }
    }

    /// Whether Ruby asked for the thread back since the last [`reset`](Self::reset).
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Forgets an earlier interrupt.
    pub fn reset(&self) {
        self.interrupted.store(false, Ordering::SeqCst);
    }
}

unsafe extern "C" fn wake(data: *mut c_void) {
    // SAFETY: `data` is the `&Wake` passed to rb_nogvl, alive for the call.
    let wake = &*(data as *const Wake);
    wake.interrupted.store(true, Ordering::SeqCst);
    littleghost_sandbox_core::process::notify::notify_raw(wake.fd);
}

struct Call<W, R> {
    work: Option<W>,
    result: Option<Result<R, Box<dyn Any + Send>>>,
}

unsafe extern "C" fn run<W: FnOnce() -> R, R>(data: *mut c_void) -> *mut c_void {
    // SAFETY: `data` is the `Call` on the caller's stack, alive for the call.
    let call = &mut *(data as *mut Call<W, R>);
    if let Some(work) = call.work.take() {
        call.result = Some(catch_unwind(AssertUnwindSafe(work)));
    }
    std::ptr::null_mut()
}

/// What became of the work.
enum Ran<W, R> {
    Done(R),
    /// An interrupt was pending, so Ruby did not release the GVL; here is the work back.
    NotRun(W),
}

fn call_without_gvl<W: FnOnce() -> R, R>(
    ruby: &Ruby,
    work: W,
    waker: Option<&Wake>,
) -> Result<Ran<W, R>, Error> {
    let mut call = Call {
        work: Some(work),
        result: None,
    };
    let (ubf, ubf_data, flags) = match waker {
        Some(waker) => (
            Some(wake as unsafe extern "C" fn(*mut c_void)),
            waker as *const Wake as *mut c_void,
            rb_sys::RB_NOGVL_INTR_FAIL | rb_sys::RB_NOGVL_UBF_ASYNC_SAFE,
        ),
        None => (None, std::ptr::null_mut(), rb_sys::RB_NOGVL_INTR_FAIL),
    };
    // SAFETY: `run` only touches `call`, which outlives the call; it does not
    // use Ruby APIs. With INTR_FAIL Ruby never raises out of rb_nogvl.
    unsafe {
        rb_sys::rb_nogvl(
            Some(run::<W, R>),
            &mut call as *mut Call<W, R> as *mut c_void,
            ubf,
            ubf_data,
            flags as i32,
        );
    }
    match call.result {
        Some(Ok(value)) => Ok(Ran::Done(value)),
        Some(Err(panic)) => {
            let message = littleghost_sandbox_core::error::panic_message(&*panic);
            Err(Error::new(ruby.exception_runtime_error(), message))
        }
        None => Ok(Ran::NotRun(
            call.work.take().expect("work not run is still present"),
        )),
    }
}

/// Runs `work` without the GVL, waking it through `waker` when Ruby wants the
/// thread back. Returns `Ok(None)` if an interrupt was pending so the work
/// never ran. Never raises; call [`check_interrupts`] afterwards.
pub fn without_gvl<R>(
    ruby: &Ruby,
    work: impl FnOnce() -> R,
    waker: &Wake,
) -> Result<Option<R>, Error> {
    match call_without_gvl(ruby, work, Some(waker))? {
        Ran::Done(value) => Ok(Some(value)),
        Ran::NotRun(_) => Ok(None),
    }
}

/// Runs short, bounded blocking work (a spawn, a /proc scan) without the GVL.
/// Pending interrupts are raised (as `Err`) before the work starts; once it
/// started it runs to completion.
pub fn blocking<R>(ruby: &Ruby, work: impl FnOnce() -> R) -> Result<R, Error> {
    let mut work = work;
    loop {
        match call_without_gvl(ruby, work, None)? {
            Ran::Done(value) => return Ok(value),
            Ran::NotRun(back) => {
                // Runs trap handlers or raises; if nothing raised, try again.
                check_interrupts(ruby)?;
                work = back;
            }
        }
    }
}

/// Runs pending interrupts (Thread#raise, Thread#kill, signal traps). An
/// exception or a kill comes back as `Err`, unchanged, for the caller to clean
/// up and then return.
pub fn check_interrupts(ruby: &Ruby) -> Result<(), Error> {
    ruby.thread_check_ints()
}
