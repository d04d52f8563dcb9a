//! Delivering events made where Ruby cannot run (a gateway's threads, which
//! never hold the GVL) to Ruby callables, on a Ruby thread the sandbox owns.
//! Generic over the event, so a later stream (the network events'
//! `on_network`) reuses it with its own event type and delivery function.
//!
//! - [`EventQueue`] is the core's (`network::queue`): pushing never blocks
//!   and never calls Ruby, so a producer (the gateway) can never be held up
//!   by a slow or stuck subscriber; when it is full the new event is dropped
//!   and counted, and the next delivery first warns how many were dropped.
//! - [`Delivery`] is the Ruby Thread that drains the queue, in order, one
//!   event at a time. It is started lazily, from a Ruby thread, by
//!   [`Delivery::ensure`] (a producer thread cannot start a Ruby thread), and
//!   again after `fork` (the child inherits the Thread object but not the
//!   thread: the owning pid is recorded and compared). [`Delivery::stop`]
//!   closes the queue, lets the thread deliver what is queued, joins it, and
//!   reopens the queue so a reopened sandbox starts a new thread on demand.
//! - The thread waits without the GVL, a bounded slice at a time, so Ruby can
//!   interrupt it (Thread#kill, interpreter exit) within one slice.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use littleghost_sandbox_core::network::queue::{EventQueue, CAPACITY};
use magnus::{gc::Marker, prelude::*, value::Opaque, Error, Ruby, Value};

use crate::helpers::nogvl;

/// How long the delivery thread waits without the GVL before it checks for
/// Ruby's interrupts (Thread#kill, exit); a bound on shutdown latency, not a
/// poll for events (those wake it at once).
const SLICE: Duration = Duration::from_millis(50);

/// The Ruby Thread draining an [`EventQueue`], and the process that started it.
///
/// Its lock is taken by the GC's mark function, so it is never held across a
/// call into Ruby (which may allocate, and so mark): the slot is read, the
/// lock dropped, Ruby called, and the slot written again. `starting` keeps
/// two Ruby threads from starting two delivery threads meanwhile.
#[derive(Default)]
pub struct Delivery {
    thread: Mutex<Option<(Opaque<Value>, u32)>>,
    starting: std::sync::atomic::AtomicBool,
}

impl Delivery {
    fn lock(&self) -> MutexGuard<'_, Option<(Opaque<Value>, u32)>> {
        self.thread.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the Thread object (a dead one is no longer a GC root).
    pub fn mark(&self, marker: &Marker) {
        if let Some((thread, _)) = *self.lock() {
            marker.mark(thread);
        }
    }

    /// Starts the delivery thread unless one of this process is alive.
    /// `deliver` is called with the GVL, on that thread, for each event in
    /// order; `dropped` is told how many events the full queue dropped. An
    /// exception either returns is its caller's to report; a non-local exit
    /// (Thread#kill) ends the thread, and the next `ensure` starts another.
    pub fn ensure<E, D, W>(&self, ruby: &Ruby, queue: &Arc<EventQueue<E>>, deliver: D, dropped: W)
    where
        E: Send + 'static,
        D: Fn(&Ruby, E) -> Result<(), Error> + Send + 'static,
        W: Fn(&Ruby, u64) -> Result<(), Error> + Send + 'static,
    {
        use std::sync::atomic::Ordering;
        let pid = std::process::id();
        let current = *self.lock();
        if let Some((thread, owner)) = current {
            // A fork child holds its parent's Thread object, never alive here.
            // (`thread` is marked through the slot; this frame holds it too.)
            if owner == pid && alive(ruby.get_inner(thread)) {
                return;
            }
        }
        if self
            .starting
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return; // another Ruby thread is starting it
        }
        let queue = queue.clone();
        let thread =
            ruby.thread_create_from_fn(move |ruby| drain(ruby, &queue, &deliver, &dropped));
        *self.lock() = Some((thread.as_value().into(), pid));
        self.starting.store(false, Ordering::SeqCst);
    }

    /// Delivers what is queued, ends the thread and waits for it (unless
    /// called from it, say by a subscriber that closes the sandbox), then
    /// reopens the queue for a later [`ensure`](Self::ensure).
    pub fn stop<E>(&self, ruby: &Ruby, queue: &EventQueue<E>) -> Result<(), Error> {
        let thread = self.lock().take();
        let Some((thread, owner)) = thread else {
            return Ok(());
        };
        let thread = ruby.get_inner(thread);
        if owner != std::process::id() || !alive(thread) {
            return Ok(());
        }
        if thread.equal(ruby.thread_current().as_value())? {
            return Ok(()); // it ends after the event it is delivering
        }
        queue.set_closing(true);
        let joined = thread.funcall::<_, _, Value>("join", ());
        queue.set_closing(false);
        joined.map(|_| ())
    }
}

fn alive(thread: Value) -> bool {
    thread.funcall::<_, _, bool>("alive?", ()).unwrap_or(false)
}

/// The delivery thread's body: wait without the GVL, deliver with it.
fn drain<E, D, W>(ruby: &Ruby, queue: &EventQueue<E>, deliver: &D, dropped: &W) -> Result<(), Error>
where
    D: Fn(&Ruby, E) -> Result<(), Error>,
    W: Fn(&Ruby, u64) -> Result<(), Error>,
{
    // No fd to wake: the wait is one bounded slice, after which Ruby's
    // interrupts are checked anyway.
    let wake = nogvl::Wake::new(-1);
    loop {
        let batch = nogvl::without_gvl(ruby, || queue.take(SLICE), &wake)?;
        nogvl::check_interrupts(ruby)?;
        wake.reset();
        let Some(Some(batch)) = batch else {
            continue;
        };
        if batch.dropped > 0 {
            dropped(ruby, batch.dropped)?;
        }
        for event in batch.items {
            deliver(ruby, event)?;
        }
        if batch.last {
            return Ok(());
        }
    }
}
