//! Secrets' stand-ins in streamed bytes: a scanner that finds one split across reads.

use super::*;

/// Looks for stand-ins in a stream of bytes, keeping the last
/// `longest_stand_in() - 1` bytes of one piece to search across the next,
/// so a stand-in split between reads is still found before its last piece
/// is passed on.
pub(in crate::network) struct Scanner<'s> {
    pub(super) secrets: &'s Secrets,
    /// `Some`: a readable body toward this destination (stand-ins of secrets
    /// that may go there pass); `None`: a tunnel (every stand-in refused).
    pub(super) toward: Option<&'s Destination>,
    pub(super) carry: Vec<u8>,
    pub(super) keep: usize,
}

impl<'s> Scanner<'s> {
    pub(in crate::network) fn new(
        secrets: &'s Secrets,
        toward: Option<&'s Destination>,
    ) -> Scanner<'s> {
        Scanner {
            secrets,
            toward,
            carry: Vec::new(),
            keep: secrets.longest_stand_in().saturating_sub(1),
        }
    }

    /// Checks a whole line of framing (a chunk extension, a trailer field)
    /// apart from the data stream.
    pub(in crate::network) fn check_line(&self, line: &[u8]) -> Option<Exfiltration> {
        if self.keep == 0 {
            return None;
        }
        self.secrets.find_bound_elsewhere(line, self.toward)
    }

    /// Checks the next piece; `Some` when a stand-in completes in it.
    pub(in crate::network) fn feed(&mut self, data: &[u8]) -> Option<Exfiltration> {
        if self.keep == 0 {
            return None;
        }
        if !self.carry.is_empty() {
            let mut joined = self.carry.clone();
            joined.extend_from_slice(&data[..data.len().min(self.keep)]);
            if let Some(found) = self.secrets.find_bound_elsewhere(&joined, self.toward) {
                return Some(found);
            }
        }
        if let Some(found) = self.secrets.find_bound_elsewhere(data, self.toward) {
            return Some(found);
        }
        if data.len() >= self.keep {
            self.carry.clear();
            self.carry
                .extend_from_slice(&data[data.len() - self.keep..]);
        } else {
            self.carry.extend_from_slice(data);
            let excess = self.carry.len().saturating_sub(self.keep);
            self.carry.drain(..excess);
        }
        None
    }
}
