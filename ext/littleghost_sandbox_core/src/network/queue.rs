//! The queue events wait in between the thread that made them (a gateway's
//! threads, which must never wait for their consumer) and the one thread
//! that delivers them. [`EventQueue::push`] never blocks: the queue is
//! bounded ([`CAPACITY`]), and when it is full the new event is **dropped
//! and counted** (the producer's own record, such as the denial log, still
//! has it), so the consumer can say how many it missed. Dropping the newest
//! keeps what the consumer already waited for in order, and bounds memory
//! whatever the producer does. [`EventQueue::close`] hands what is queued
//! over as the last batch.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How many undelivered events a queue holds before it drops new ones.
pub const CAPACITY: usize = 1024;

struct QueueState<E> {
    items: VecDeque<E>,
    /// Events dropped because the queue was full, not yet reported.
    dropped: u64,
    /// Set by [`EventQueue::set_closing`]: the next batch is the last.
    closing: bool,
}

/// A bounded FIFO of events from any thread to one consumer thread.
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

/// What the consumer takes from the queue in one go.
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
    pub fn take(&self, slice: Duration) -> Option<Batch<E>> {
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

    /// Closes the queue for good (its owner is gone): the consumer takes
    /// what is queued as its last batch.
    pub fn close(&self) {
        self.set_closing(true);
    }

    /// Closes the queue (`true`: the next batch is the last) or reopens it.
    pub fn set_closing(&self, closing: bool) {
        self.lock().closing = closing;
        self.ready.notify_all();
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
