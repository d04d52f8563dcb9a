//! Delivering events made where Ruby cannot run (a gateway's threads, which
//! never hold the GVL) to Ruby callables, on a Ruby thread the sandbox owns.
//! Generic over the event, so a later stream (the network events'
//! `on_network`) reuses it with its own event type and delivery function.
//!
//! - [`EventQueue`] is pure Rust: [`EventQueue::push`] never blocks and never
//!   calls Ruby, so a producer (the gateway) can never be held up by a slow or
//!   stuck subscriber. It is bounded ([`CAPACITY`]); when it is full the new
//!   event is **dropped and counted** (the producer's own record, such as
//!   `sandbox.denials`, still has it), and the next delivery first warns how
//!   many were dropped. Dropping the newest keeps what subscribers already
//!   waited for in order, and bounds memory whatever the producer does.
//! - [`Delivery`] is the Ruby Thread that drains the queue, in order, one
//!   event at a time. It is started lazily, from a Ruby thread, by
//!   [`Delivery::ensure`] (a producer thread cannot start a Ruby thread), and
//!   again after `fork` (the child inherits the Thread object but not the
//!   thread: the owning pid is recorded and compared). [`Delivery::stop`]
//!   closes the queue, lets the thread deliver what is queued, joins it, and
//!   reopens the queue so a reopened sandbox starts a new thread on demand.
//! - The thread waits without the GVL, a bounded slice at a time, so Ruby can
//!   interrupt it (Thread#kill, interpreter exit) within one slice.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use magnus::{gc::Marker, prelude::*, value::Opaque, Error, Ruby, Value};

use crate::helpers::nogvl;

/// How many undelivered events a queue holds before it drops new ones.
pub const CAPACITY: usize = 1024;

/// How long the delivery thread waits without the GVL before it checks for
/// Ruby's interrupts (Thread#kill, exit); a bound on shutdown latency, not a
/// poll for events (those wake it at once).
const SLICE: Duration = Duration::from_millis(50);

struct QueueState<E> {
    items: VecDeque<E>,
    /// Events dropped because the queue was full, not yet warned about.
    dropped: u64,
    /// Set by [`Delivery::stop`]: deliver what is queued, then end.
    closing: bool,
}

/// A bounded FIFO of events from any thread to one Ruby delivery thread.
pub struct EventQueue<E> {
    state: Mutex<QueueState<E>>,
    ready: Condvar,
    capacity: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue::new(CAPACITY)
    }
}

/// What the delivery thread takes from the queue in one go.
pub struct Batch<E> {
    pub items: Vec<E>,
    /// Events dropped since the last batch (the queue was full).
    pub dropped: u64,
    /// The queue is closing and this is the last batch.
    pub last: bool,
}

impl<E> EventQueue<E> {
    pub fn new(capacity: usize) -> Self {
        EventQueue {
            state: Mutex::new(QueueState {
                items: VecDeque::new(),
                dropped: 0,
                closing: false,
            }),
            ready: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState<E>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `event` for delivery; never blocks. Returns false (and counts
    /// it) when the queue is full.
    pub fn push(&self, event: E) -> bool {
        let mut state = self.lock();
        if state.items.len() >= self.capacity {
            state.dropped += 1;
            return false;
        }
        state.items.push_back(event);
        drop(state);
        self.ready.notify_all();
        true
    }

    /// Waits up to `slice` for events (or for closing); `None` if nothing came.
    fn take(&self, slice: Duration) -> Option<Batch<E>> {
        let mut state = self.lock();
        if state.items.is_empty() && state.dropped == 0 && !state.closing {
            state = self
                .ready
                .wait_timeout(state, slice)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if state.items.is_empty() && state.dropped == 0 && !state.closing {
            return None;
        }
        Some(Batch {
            items: state.items.drain(..).collect(),
            dropped: std::mem::take(&mut state.dropped),
            last: state.closing,
        })
    }

    /// Closes the queue for good (its owner is gone): the thread delivers
    /// what is queued and ends.
    pub fn close(&self) {
        self.set_closing(true);
    }

    fn set_closing(&self, closing: bool) {
        self.lock().closing = closing;
        self.ready.notify_all();
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_the_newest_and_counts_them() {
        let queue = EventQueue::new(2);
        assert!(queue.push(1));
        assert!(queue.push(2));
        assert!(!queue.push(3));
        let batch = queue.take(Duration::ZERO).unwrap();
        assert_eq!(
            (batch.items, batch.dropped, batch.last),
            (vec![1, 2], 1, false)
        );
        assert!(queue.take(Duration::ZERO).is_none());
        assert!(queue.push(4), "room again once drained");
    }

    #[test]
    fn closing_hands_over_the_rest_as_the_last_batch() {
        let queue = EventQueue::new(4);
        queue.push("a");
        queue.set_closing(true);
        let batch = queue.take(Duration::ZERO).unwrap();
        assert_eq!((batch.items, batch.last), (vec!["a"], true));
        queue.set_closing(false);
        assert!(queue.take(Duration::ZERO).is_none());
    }
}
