//! Denial records of the built-in gateway (SPEC G.7): each refused request
//! is kept in a bounded list (oldest dropped first) and handed to an optional
//! callback, which the binding turns into `sandbox.denials` events.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenialReason {
    /// The destination is not an allowlist entry.
    NotAllowed,
    /// The destination resolved into a refused range (loopback, private...).
    PrivateDestination,
    /// The gateway or the process is at its descriptor budget (503).
    DescriptorBudget,
}

impl DenialReason {
    /// Short text, used in the 403 body and in Ruby.
    pub fn text(self) -> &'static str {
        match self {
            DenialReason::NotAllowed => "destination is not in the allowlist",
            DenialReason::PrivateDestination => {
                "destination resolves to a private or reserved address"
            }
            DenialReason::DescriptorBudget => {
                "the gateway is at its descriptor budget; try again when a connection closes"
            }
        }
    }

    /// The HTTP status the client is answered with.
    pub fn status(self) -> &'static str {
        match self {
            DenialReason::NotAllowed | DenialReason::PrivateDestination => "403 Forbidden",
            DenialReason::DescriptorBudget => "503 Service Unavailable",
        }
    }
}

/// One refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub at: SystemTime,
    /// The requested `host:port` as the gateway understood it.
    pub destination: String,
    pub reason: DenialReason,
}

/// Called for every denial, on a gateway thread; must not block.
pub type DenialCallback = Arc<dyn Fn(&Denial) + Send + Sync>;

/// A bounded list of denials plus the callback.
pub struct Denials {
    capacity: usize,
    state: Mutex<(VecDeque<Denial>, u64)>,
    callback: Option<DenialCallback>,
}

impl std::fmt::Debug for Denials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Denials")
            .field("capacity", &self.capacity)
            .field("callback", &self.callback.is_some())
            .finish()
    }
}

impl Denials {
    /// Keeps the last `capacity` denials (at least one).
    pub fn new(capacity: usize, callback: Option<DenialCallback>) -> Denials {
        Denials {
            capacity: capacity.max(1),
            state: Mutex::new((VecDeque::new(), 0)),
            callback,
        }
    }

    /// Records a denial and calls the callback.
    pub fn record(&self, destination: String, reason: DenialReason) {
        let denial = Denial {
            at: SystemTime::now(),
            destination,
            reason,
        };
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.0.len() == self.capacity {
                state.0.pop_front();
                state.1 += 1;
            }
            state.0.push_back(denial.clone());
        }
        if let Some(callback) = &self.callback {
            callback(&denial);
        }
    }

    /// The kept denials, oldest first.
    pub fn list(&self) -> Vec<Denial> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0.iter().cloned().collect()
    }

    /// How many denials were dropped to respect the bound.
    pub fn dropped(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn bounded_and_calls_back() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let denials = Denials::new(
            2,
            Some(Arc::new(move |_: &Denial| {
                seen.fetch_add(1, Ordering::SeqCst);
            })),
        );
        for port in 1..=3 {
            denials.record(format!("a:{port}"), DenialReason::NotAllowed);
        }
        let kept: Vec<String> = denials.list().into_iter().map(|d| d.destination).collect();
        assert_eq!(kept, ["a:2", "a:3"]);
        assert_eq!(denials.dropped(), 1);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
