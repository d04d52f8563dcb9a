//! A bounded record of gateway events (denials, the egress log): the last
//! `capacity` kept, oldest dropped first, each handed to an optional
//! callback on the gateway thread that made it.
//!
//! Every text a record keeps (a request's path, a destination, an upstream's
//! words) is cut to [`TEXT_LIMIT`] bytes when it is pushed: a child sends
//! paths up to the head limit (32 KiB), and a full log of such paths would
//! hold tens of MiB outside the gateway's memory budget (docs/security.md,
//! "The gateway: descriptor and memory budgets").

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The most bytes of one text a record keeps, its cut marker included.
pub const TEXT_LIMIT: usize = 1024;

/// What ends a text cut to [`TEXT_LIMIT`], before the length it had.
pub const CUT_MARKER: &str = "...[cut from ";

/// `text` itself when it fits in [`TEXT_LIMIT`] bytes; else its start (on a
/// character boundary) followed by `...[cut from N bytes]`, N its length,
/// [`TEXT_LIMIT`] bytes at most in all.
pub fn capped(text: String) -> String {
    if text.len() <= TEXT_LIMIT {
        return text;
    }
    let marker = format!("{CUT_MARKER}{} bytes]", text.len());
    let mut end = TEXT_LIMIT - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut kept = text;
    kept.truncate(end);
    kept.push_str(&marker);
    kept
}

/// A record a [`Log`] keeps: its texts cut to [`TEXT_LIMIT`] by [`capped`].
pub trait Record: Clone {
    /// The same record with every text it holds [`capped`].
    fn capped(self) -> Self;
}

/// One field of a kept record as plain data: what its reader returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field<'a> {
    /// A member of a fixed set (`filesystem`, `allowed`), by its name.
    Name(&'static str),
    Text(&'a str),
    Count(u64),
    Seconds(f64),
    Flag(bool),
    Time(SystemTime),
    /// Not known for this record (no request was read, no detail given).
    Absent,
}

impl<'a> Field<'a> {
    /// The text, or [`Field::Absent`].
    pub fn text(text: Option<&'a str>) -> Field<'a> {
        text.map_or(Field::Absent, Field::Text)
    }
}

/// A record shown field by field (`Denial#target`, `NetworkEvent#to_h`).
pub trait Fields {
    /// The fields' names, in the order [`Fields::fields`] gives their values.
    const NAMES: &'static [&'static str];
    /// The value of each field named in [`Fields::NAMES`], in that order.
    fn fields(&self) -> Vec<Field<'_>>;
}

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

impl<T: Record> Log<T> {
    /// Keeps the last `capacity` records (at least one).
    pub fn new(capacity: usize, callback: Option<Callback<T>>) -> Log<T> {
        Log {
            capacity: capacity.max(1),
            state: Mutex::new((VecDeque::new(), 0)),
            callback,
        }
    }

    /// Keeps `record`, its texts [`capped`] (dropping the oldest at
    /// capacity), then calls back with what it kept.
    pub fn push(&self, record: T) {
        let record = record.capped();
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

    impl Record for u32 {
        fn capped(self) -> Self {
            self
        }
    }

    #[test]
    fn a_long_text_is_cut_to_the_limit_and_says_so() {
        assert_eq!(capped("/short".into()), "/short");
        let exact = "x".repeat(TEXT_LIMIT);
        assert_eq!(capped(exact.clone()), exact);
        let long = format!("/{}", "\u{e9}".repeat(15 * 1024));
        let cut = capped(long.clone());
        assert!(cut.len() <= TEXT_LIMIT, "{}", cut.len());
        assert!(cut.len() > TEXT_LIMIT - 4 - CUT_MARKER.len() - 16);
        assert!(long.starts_with(cut.split(CUT_MARKER).next().unwrap()));
        assert!(
            cut.ends_with(&format!("{CUT_MARKER}{} bytes]", long.len())),
            "{cut}"
        );
    }

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
