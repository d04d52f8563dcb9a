//! A bounded record of gateway events (denials, the egress log): the last
//! `capacity` kept, oldest dropped first, each handed to an optional
//! callback on the gateway thread that made it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Called for every record, on a gateway thread; must not block.
pub type Callback<T> = Arc<dyn Fn(&T) + Send + Sync>;

/// The last `capacity` records plus the callback.
pub struct Log<T> {
    capacity: usize,
    state: Mutex<(VecDeque<T>, u64)>,
    callback: Option<Callback<T>>,
}

impl<T> std::fmt::Debug for Log<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("capacity", &self.capacity)
            .field("callback", &self.callback.is_some())
            .finish()
    }
}

impl<T: Clone> Log<T> {
    /// Keeps the last `capacity` records (at least one).
    pub fn new(capacity: usize, callback: Option<Callback<T>>) -> Log<T> {
        Log {
            capacity: capacity.max(1),
            state: Mutex::new((VecDeque::new(), 0)),
            callback,
        }
    }

    /// Keeps `record` (dropping the oldest at capacity), then calls back.
    pub fn push(&self, record: T) {
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.0.len() == self.capacity {
                state.0.pop_front();
                state.1 += 1;
            }
            state.0.push_back(record.clone());
        }
        if let Some(callback) = &self.callback {
            callback(&record);
        }
    }

    /// The kept records, oldest first.
    pub fn list(&self) -> Vec<T> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0.iter().cloned().collect()
    }

    /// How many records were dropped to respect the bound.
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
        let log = Log::new(
            2,
            Some(Arc::new(move |_: &u32| {
                seen.fetch_add(1, Ordering::SeqCst);
            })),
        );
        for n in 1..=3 {
            log.push(n);
        }
        assert_eq!(log.list(), [2, 3]);
        assert_eq!(log.dropped(), 1);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
