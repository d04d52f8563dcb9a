//! The waiting discipline shared with ProcessSession (0.7, 0.8, 17.12):
//! [`Waiter`] waits in slices of at most 10 ms, either without the GVL on the
//! child's notification fd or, under a fiber scheduler, through the
//! scheduler's `kernel_sleep` so sibling fibers run; interrupts are handled
//! between slices with the GVL held. [`terminate_group`] drives the core's
//! one termination protocol with those waits.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use littleghost_sandbox_core::process::{
    self as core_process, Notifier, PollFlags, RunningProcess, TerminationStep,
};
use magnus::{
    rb_sys::{protect, AsRawValue},
    Error, Ruby,
};

use crate::helpers::nogvl::{self, Wake};

/// 17.12 through the core's one protocol ([`core_process::Termination`]):
/// TERM the group, poll every 10 ms for up to 0.5 s, KILL if still alive,
/// reap the leader. The grace wait follows 0.7. A second interrupt that
/// raises (or kills) during the grace cuts it short (straight to KILL) and is
/// returned as `Err` after the cleanup finished; pending interrupts that do
/// not raise (SIGCHLD, a trap handler) run and the grace goes on.
pub fn terminate_group(
    ruby: &Ruby,
    waiter: &mut Waiter,
    process: &RunningProcess,
) -> Result<(), Error> {
    let mut interruption = None;
    let mut termination = process.begin_termination();
    while let TerminationStep::Wait(pause) = termination.step() {
        match waiter.pause(ruby, pause) {
            Pause::Slept => {}
            Pause::Interrupted(None) => {
                // Stopping the leader to list its descendants sends this
                // process SIGCHLD, which wakes the wait like an interrupt: run
                // what is pending; only an exception or a kill ends the grace.
                if let Err(error) = nogvl::check_interrupts(ruby) {
                    interruption = Some(error);
                    termination.kill();
                    break;
                }
                // Still pending (deferred by handle_interrupt): do not spin.
                std::thread::sleep(Duration::from_millis(1));
            }
            Pause::Interrupted(Some(error)) => {
                interruption = Some(error);
                termination.kill();
                break;
            }
        }
    }
    reap_leader(ruby, waiter, process);
    interruption.map_or(Ok(()), Err)
}

/// Waits (without the GVL, ignoring interrupts) until the leader is reaped.
/// After SIGKILL this takes microseconds; if the kernel keeps the process
/// longer, the background exit watcher still reaps it.
pub fn reap_leader(ruby: &Ruby, waiter: &mut Waiter, process: &RunningProcess) {
    let give_up = Instant::now() + Duration::from_secs(2);
    while process.try_reap().is_none() && Instant::now() < give_up {
        waiter.pause_quietly(ruby, core_process::POLL_INTERVAL);
    }
}

/// Outcome of a pause inside termination.
pub enum Pause {
    Slept,
    /// Ruby wants the thread back; under a scheduler, with the exception.
    Interrupted(Option<Error>),
}

/// Waits on one child's notification fd in short slices, the way 0.7 asks.
///
/// Under a fiber scheduler the wait is `Kernel#sleep` (the scheduler's
/// `kernel_sleep`), in slices growing from 1 ms to 10 ms, rather than
/// `IO#wait_readable` on the notification fd: async 1.30's `io_wait` rescues
/// every `Async::TimeoutError`, so a caller's `task.with_timeout` would be
/// swallowed by an IO wait, while a sleep lets it through.
pub struct Waiter<'a> {
    notifier: &'a Notifier,
    wake: Wake,
    scheduler_slice: Duration,
}

/// Whether a fiber scheduler is active for the current (non-blocking) fiber.
pub fn fiber_scheduler_active() -> bool {
    // SAFETY: plain C API call with the GVL held; nil means none (or a blocking fiber).
    !rb_sys::NIL_P(unsafe { rb_sys::rb_fiber_scheduler_current() })
}

impl<'a> Waiter<'a> {
    pub fn new(process: &'a RunningProcess) -> Self {
        let notifier = process.notifier();
        Waiter {
            notifier,
            wake: Wake::new(notifier.raw_write_fd()),
            scheduler_slice: Duration::from_millis(1),
        }
    }

    /// Sleeps through the fiber scheduler's `kernel_sleep` (the hook
    /// `Kernel#sleep` calls) so sibling fibers run.
    fn scheduler_sleep(&mut self, ruby: &Ruby, slice: Duration) -> Result<(), Error> {
        let nap = self.scheduler_slice.min(slice);
        self.scheduler_slice = (self.scheduler_slice * 2).min(core_process::POLL_INTERVAL);
        let seconds = ruby.float_from_f64(nap.as_secs_f64());
        // SAFETY: GVL held; the scheduler is current (checked by the caller,
        // re-read here); a raise inside the hook is caught by `protect`.
        protect(|| unsafe {
            let scheduler = rb_sys::rb_fiber_scheduler_current();
            rb_sys::rb_fiber_scheduler_kernel_sleep(scheduler, seconds.as_raw())
        })?;
        self.notifier.clear();
        Ok(())
    }

    /// Waits up to `slice` for news from the child (or for `extra` to become
    /// ready), then runs pending interrupts. Errors are interrupts, unchanged.
    pub fn wait_for(
        &mut self,
        ruby: &Ruby,
        slice: Duration,
        extra: Option<(BorrowedFd<'_>, PollFlags)>,
    ) -> Result<(), Error> {
        if fiber_scheduler_active() {
            // `extra` (stdin room) is simply retried after the nap.
            self.scheduler_sleep(ruby, slice)?;
        } else {
            self.wake.reset();
            let notifier = self.notifier;
            nogvl::without_gvl(ruby, || notifier.wait(slice, extra), &self.wake)?;
        }
        nogvl::check_interrupts(ruby)
    }

    /// [`wait_for`](Self::wait_for) on the notification fd alone.
    pub fn wait(&mut self, ruby: &Ruby, slice: Duration) -> Result<(), Error> {
        self.wait_for(ruby, slice, None)
    }

    /// A grace-period pause: wakes early on child news; reports an interrupt
    /// without running it (it stays pending for Ruby to raise later), except
    /// under a scheduler where the wait itself raises.
    pub fn pause(&mut self, ruby: &Ruby, slice: Duration) -> Pause {
        if fiber_scheduler_active() {
            return match self.scheduler_sleep(ruby, slice) {
                Ok(()) => Pause::Slept,
                Err(error) => Pause::Interrupted(Some(error)),
            };
        }
        self.pause_nogvl(ruby, slice)
    }

    /// A pause that leaves interrupts pending (used only while reaping after
    /// KILL, which takes microseconds).
    pub fn pause_quietly(&mut self, ruby: &Ruby, slice: Duration) {
        if let Pause::Interrupted(_) = self.pause_nogvl(ruby, slice) {
            // An interrupt is pending, so Ruby will not release the GVL; keep
            // the wait short instead of spinning.
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn pause_nogvl(&mut self, ruby: &Ruby, slice: Duration) -> Pause {
        self.wake.reset();
        let notifier = self.notifier;
        let ran = nogvl::without_gvl(ruby, || notifier.wait(slice, None), &self.wake);
        match ran {
            Ok(Some(())) if !self.wake.interrupted() => Pause::Slept,
            Ok(_) => Pause::Interrupted(None),
            Err(error) => Pause::Interrupted(Some(error)),
        }
    }
}
