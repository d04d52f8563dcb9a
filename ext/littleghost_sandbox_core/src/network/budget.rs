//! The gateways' descriptor budget.
//!
//! Every connection a gateway serves costs the host process descriptors: one
//! for the client's socket and, once the destination is opened, one for the
//! upstream socket. A child connecting straight to the gateway's socket could
//! otherwise make the host's own `File.open`, launches and broker calls fail
//! with `EMFILE`. So every descriptor a gateway holds for a connection is
//! taken from two budgets, both derived from the soft `RLIMIT_NOFILE` read at
//! the moment of taking (a limit lowered later is honoured at once):
//!
//! - the process: all gateways together hold at most half the soft limit,
//!   leaving the other half to the application;
//! - one gateway (one sandbox): at most half of the process budget and at most
//!   two per allowed connection (`max_connections`), so one sandbox cannot
//!   starve the others.
//!
//! A connection that cannot get its descriptor is refused with `503` and a
//! denial ([`super::DenialReason::DescriptorBudget`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Descriptors held by gateways across the process, against a limit.
#[derive(Debug)]
pub struct Pool {
    in_use: AtomicUsize,
    /// A fixed limit (tests); `None` derives it from `RLIMIT_NOFILE`.
    fixed: Option<usize>,
}

impl Pool {
    /// A pool with a fixed limit, for tests.
    pub fn fixed(limit: usize) -> Arc<Pool> {
        Arc::new(Pool {
            in_use: AtomicUsize::new(0),
            fixed: Some(limit),
        })
    }

    /// The one pool of this process, sized from `RLIMIT_NOFILE`.
    pub fn process() -> Arc<Pool> {
        static PROCESS: OnceLock<Arc<Pool>> = OnceLock::new();
        PROCESS
            .get_or_init(|| {
                Arc::new(Pool {
                    in_use: AtomicUsize::new(0),
                    fixed: None,
                })
            })
            .clone()
    }

    /// How many descriptors all gateways may hold together now.
    pub fn limit(&self) -> usize {
        self.fixed.unwrap_or_else(|| soft_nofile() / 2)
    }

    /// Descriptors held now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::SeqCst)
    }
}

/// The soft `RLIMIT_NOFILE`; "unlimited" counts as a very large number.
fn soft_nofile() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    match limit.current {
        Some(current) => usize::try_from(current).unwrap_or(usize::MAX),
        None => usize::MAX / 2,
    }
}

/// Takes one descriptor from `counter` unless that would pass `limit`.
fn take_one(counter: &AtomicUsize, limit: usize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
            (held < limit).then_some(held + 1)
        })
        .is_ok()
}

/// One gateway's budget, drawing on a [`Pool`].
#[derive(Debug)]
pub struct Budget {
    pool: Arc<Pool>,
    in_use: AtomicUsize,
    /// Two descriptors per allowed connection.
    max_descriptors: usize,
}

impl Budget {
    /// A gateway's budget: at most two descriptors per connection of
    /// `max_connections`, and at most half of what `pool` allows.
    pub fn new(pool: Arc<Pool>, max_connections: usize) -> Arc<Budget> {
        Arc::new(Budget {
            pool,
            in_use: AtomicUsize::new(0),
            max_descriptors: max_connections.max(1).saturating_mul(2),
        })
    }

    /// How many descriptors this gateway may hold now.
    pub fn limit(&self) -> usize {
        self.max_descriptors.min((self.pool.limit() / 2).max(2))
    }

    /// Descriptors this gateway holds now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::SeqCst)
    }

    /// One descriptor for a new connection's client socket, or `None` when
    /// this gateway or the process is at its budget.
    pub fn admit(self: &Arc<Budget>) -> Option<Held> {
        let mut held = Held {
            budget: self.clone(),
            count: 0,
        };
        held.take().then_some(held)
    }

    fn take(&self) -> bool {
        if !take_one(&self.pool.in_use, self.pool.limit()) {
            return false;
        }
        if !take_one(&self.in_use, self.limit()) {
            self.pool.in_use.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    fn give_back(&self, count: usize) {
        self.in_use.fetch_sub(count, Ordering::SeqCst);
        self.pool.in_use.fetch_sub(count, Ordering::SeqCst);
    }
}

/// Descriptors one connection holds; given back when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<Budget>,
    count: usize,
}

impl Held {
    /// One more descriptor (the upstream side of a tunnel); false when the
    /// gateway or the process is at its budget.
    pub fn take(&mut self) -> bool {
        let taken = self.budget.take();
        if taken {
            self.count += 1;
        }
        taken
    }

    /// How many descriptors this connection holds.
    pub fn count(&self) -> usize {
        self.count
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_of_a_tunnel_count_against_the_gateway_and_the_process() {
        let pool = Pool::fixed(8);
        let budget = Budget::new(pool.clone(), 512);
        assert_eq!(budget.limit(), 4, "half the process budget");
        let mut first = budget.admit().unwrap();
        assert!(first.take(), "the upstream side");
        let mut second = budget.admit().unwrap();
        assert!(second.take());
        assert_eq!((budget.in_use(), pool.in_use()), (4, 4));
        assert!(budget.admit().is_none(), "the gateway is at its budget");
        drop(first);
        assert_eq!((budget.in_use(), pool.in_use()), (2, 2));
        let third = budget.admit().unwrap();
        assert_eq!(third.count(), 1);
        drop((second, third));
        assert_eq!((budget.in_use(), pool.in_use()), (0, 0));
    }

    #[test]
    fn gateways_share_the_process_budget() {
        let pool = Pool::fixed(8);
        let gateways: Vec<_> = (0..3).map(|_| Budget::new(pool.clone(), 512)).collect();
        let mut held = Vec::new();
        for gateway in &gateways[..2] {
            for _ in 0..4 {
                held.push(gateway.admit().unwrap());
            }
        }
        assert!(
            gateways[2].admit().is_none(),
            "the process is at its budget"
        );
        assert_eq!(gateways[2].in_use(), 0, "a refused take is given back");
        held.pop();
        assert!(gateways[2].admit().is_some());
    }

    #[test]
    fn max_connections_caps_a_gateway_at_two_descriptors_each() {
        let budget = Budget::new(Pool::fixed(1000), 2);
        assert_eq!(budget.limit(), 4);
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut connection = budget.admit().unwrap();
            assert!(connection.take());
            held.push(connection);
        }
        assert!(budget.admit().is_none());
    }

    #[test]
    fn the_process_budget_follows_the_soft_nofile_limit() {
        let soft = soft_nofile();
        assert_eq!(Pool::process().limit(), soft / 2);
        let budget = Budget::new(Pool::process(), usize::MAX / 4);
        assert_eq!(budget.limit(), (soft / 4).max(2));
    }
}
