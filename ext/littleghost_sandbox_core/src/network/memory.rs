//! The gateways' memory budget.
//!
//! Every byte a gateway buffers for a connection lives in the host process:
//! what it read from one side and has not yet passed to the other, the
//! queue of an inspected download waiting to be encrypted toward the child,
//! the TLS sessions' buffers. A child that opens connections and never
//! reads them would otherwise make each one hold its buffers full, so the
//! host's memory would be bounded only by the descriptor budget
//! ([`super::budget`]). So all of one gateway's (one sandbox's) buffers are
//! taken from one budget, [`Memory`], by [`Lease`]s:
//!
//! - a connection, and each part of it that buffers, first takes a small
//!   lease it can always use (its floor); when the budget cannot give it,
//!   the connection is refused with `503` and a denial
//!   ([`super::DenialReason::MemoryBudget`]);
//! - a buffer grows past its floor only with what the budget has free: a
//!   reader then reads less at once, and a queue toward the child waits
//!   (back-pressure, so the destination is read no faster than the child
//!   takes) until another connection gives bytes back.
//!
//! A floor is never given back while its buffer lives, so every admitted
//! connection can always move some bytes: one stalled connection slows the
//! others, it cannot stop them.

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// One gateway's budget, with its default ([`DEFAULT_LIMIT`], see
/// `docs/design.md` for the figures behind it).
pub const DEFAULT_LIMIT: usize = 32 << 20;

/// Bytes one gateway may hold in its buffers across its connections.
#[derive(Debug)]
pub struct Memory {
    limit: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_use: usize,
    /// Buffers waiting for bytes to be given back.
    waiting: Vec<Waker>,
}

impl Memory {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Memory> {
        Arc::new(Memory {
            limit,
            state: Mutex::new(State::default()),
        })
    }

    /// How many bytes the gateway may hold.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    pub fn in_use(&self) -> usize {
        self.lock().in_use
    }

    /// A lease of `floor` bytes, or `None` when they are not free (the
    /// caller refuses the connection).
    pub fn lease(self: &Arc<Memory>, floor: usize) -> Option<Lease> {
        let mut state = self.lock();
        if self.limit - state.in_use < floor {
            return None;
        }
        state.in_use += floor;
        Some(Lease {
            memory: self.clone(),
            floor,
            held: floor,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes up to `wanted` bytes, at least `needed`; what was taken, or
    /// `None` (with `waker` kept) when not even `needed` is free.
    fn take(&self, needed: usize, wanted: usize, waker: Option<&Waker>) -> Option<usize> {
        let mut state = self.lock();
        let free = self.limit - state.in_use;
        if free < needed {
            if let Some(waker) = waker {
                if !state.waiting.iter().any(|w| w.will_wake(waker)) {
                    state.waiting.push(waker.clone());
                }
            }
            return None;
        }
        let taken = wanted.min(free);
        state.in_use += taken;
        Some(taken)
    }

    /// Gives `bytes` back and wakes every waiting buffer (each takes what
    /// it needs, or waits again).
    fn give_back(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let waiting = {
            let mut state = self.lock();
            state.in_use -= bytes;
            std::mem::take(&mut state.waiting)
        };
        for waker in waiting {
            waker.wake();
        }
    }
}

/// Bytes one buffer holds of a [`Memory`]; given back when dropped.
#[derive(Debug)]
pub struct Lease {
    memory: Arc<Memory>,
    /// Held for as long as the lease lives.
    floor: usize,
    held: usize,
}

impl Lease {
    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Grows to at most `wanted` bytes with what the budget has free now;
    /// the bytes held after.
    pub fn grow_to(&mut self, wanted: usize) -> usize {
        if wanted > self.held {
            let taken = self.memory.take(0, wanted - self.held, None).unwrap_or(0);
            self.held += taken;
        }
        self.held
    }

    /// Grows to at least `needed` bytes (and up to `wanted`): the bytes held
    /// after, or `Pending` until bytes are given back when the budget has
    /// not enough free.
    pub fn poll_grow(&mut self, cx: &mut Context<'_>, needed: usize, wanted: usize) -> Poll<usize> {
        if needed <= self.held {
            return Poll::Ready(self.grow_to(wanted));
        }
        match self.memory.take(
            needed - self.held,
            wanted.max(needed) - self.held,
            Some(cx.waker()),
        ) {
            Some(taken) => {
                self.held += taken;
                Poll::Ready(self.held)
            }
            None => Poll::Pending,
        }
    }

    /// Gives back what is held beyond `bytes` (never the floor).
    pub fn shrink_to(&mut self, bytes: usize) {
        let keep = bytes.max(self.floor);
        if self.held > keep {
            self.memory.give_back(self.held - keep);
            self.held = keep;
        }
    }

    /// Moves `floor` bytes of this lease (a part of its own floor) into a
    /// new lease of their own, for another buffer of the same connection.
    pub fn split_off(&mut self, floor: usize) -> Lease {
        let floor = floor.min(self.floor);
        self.floor -= floor;
        self.held -= floor;
        Lease {
            memory: self.memory.clone(),
            floor,
            held: floor,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.memory.give_back(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    #[test]
    fn leases_take_from_the_budget_and_give_back_when_dropped() {
        let memory = Memory::new(100);
        let mut first = memory.lease(10).unwrap();
        assert_eq!(first.grow_to(50), 50);
        let second = memory.lease(30).unwrap();
        assert_eq!(memory.in_use(), 80);
        first.shrink_to(0);
        assert_eq!((first.held(), memory.in_use()), (10, 40), "the floor stays");
        drop((first, second));
        assert_eq!(memory.in_use(), 0);
    }

    #[test]
    fn a_lease_is_refused_when_its_floor_is_not_free() {
        let memory = Memory::new(100);
        let mut held = memory.lease(60).unwrap();
        assert_eq!(held.grow_to(95), 95);
        assert!(memory.lease(10).is_none(), "only 5 bytes are free");
        assert_eq!(memory.in_use(), 95, "a refusal takes nothing");
        held.shrink_to(80);
        assert!(memory.lease(10).is_some());
    }

    #[test]
    fn growth_takes_only_what_is_free() {
        let memory = Memory::new(100);
        let _other = memory.lease(70).unwrap();
        let mut lease = memory.lease(10).unwrap();
        assert_eq!(lease.grow_to(1000), 30);
        assert_eq!(memory.in_use(), 100);
        assert_eq!(lease.grow_to(1000), 30, "nothing left");
    }

    #[test]
    fn a_waiting_buffer_is_woken_when_bytes_are_given_back() {
        let memory = Memory::new(100);
        let mut full = memory.lease(0).unwrap();
        assert_eq!(full.grow_to(100), 100);
        let mut waiting = memory.lease(0).unwrap();
        let (woken, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(waiting.poll_grow(&mut cx, 20, 50).is_pending());
        assert!(waiting.poll_grow(&mut cx, 20, 50).is_pending(), "again");
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);
        full.shrink_to(60);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "woken once");
        assert_eq!(waiting.poll_grow(&mut cx, 20, 50), Poll::Ready(40));
        assert_eq!(memory.in_use(), 100);
        drop(waiting);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "no longer waiting");
    }

    #[test]
    fn a_split_floor_is_held_by_its_own_lease() {
        let memory = Memory::new(100);
        let mut connection = memory.lease(30).unwrap();
        let part = connection.split_off(20);
        assert_eq!((connection.held(), part.held()), (10, 20));
        drop(connection);
        assert_eq!(memory.in_use(), 20);
        drop(part);
        assert_eq!(memory.in_use(), 0);
    }
}
