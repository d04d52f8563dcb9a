//! EnvironmentPolicy (SPEC §6): the variables a process gets, and whether it
//! starts from the parent's environment.

use std::hash::{Hash, Hasher};

/// Variables as byte strings, each name once (a later duplicate replaces the
/// value in place, as a Hash would), in the order given. Equality and hashing
/// ignore the order, as Ruby's Hash does.
#[derive(Debug, Clone, Default)]
pub struct EnvironmentPolicy {
    inherit: bool,
    values: Vec<(Vec<u8>, Vec<u8>)>,
}

impl EnvironmentPolicy {
    /// A policy setting `values` (name, value) and inheriting the parent's environment iff `inherit`.
    pub fn new(
        inherit: bool,
        values: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    ) -> EnvironmentPolicy {
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for (name, value) in values {
            match out.iter_mut().find(|(existing, _)| *existing == name) {
                Some(slot) => slot.1 = value,
                None => out.push((name, value)),
            }
        }
        EnvironmentPolicy {
            inherit,
            values: out,
        }
    }

    /// Whether processes start from the parent's environment.
    pub fn inherit(&self) -> bool {
        self.inherit
    }

    /// The variables to set, in order.
    pub fn values(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.values
    }

    fn sorted(&self) -> Vec<&(Vec<u8>, Vec<u8>)> {
        let mut pairs: Vec<_> = self.values.iter().collect();
        pairs.sort();
        pairs
    }
}

impl PartialEq for EnvironmentPolicy {
    fn eq(&self, other: &Self) -> bool {
        self.inherit == other.inherit
            && self.values.len() == other.values.len()
            && self.sorted() == other.sorted()
    }
}

impl Eq for EnvironmentPolicy {}

impl Hash for EnvironmentPolicy {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inherit.hash(state);
        self.sorted().hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str, value: &str) -> (Vec<u8>, Vec<u8>) {
        (name.as_bytes().to_vec(), value.as_bytes().to_vec())
    }

    #[test]
    fn later_duplicates_replace_in_place_and_order_does_not_matter() {
        let a = EnvironmentPolicy::new(false, [pair("A", "1"), pair("B", "2"), pair("A", "3")]);
        assert_eq!(a.values(), [pair("A", "3"), pair("B", "2")]);
        let b = EnvironmentPolicy::new(false, [pair("B", "2"), pair("A", "3")]);
        assert_eq!(a, b);
        assert_ne!(
            a,
            EnvironmentPolicy::new(true, [pair("B", "2"), pair("A", "3")])
        );
        assert!(!EnvironmentPolicy::default().inherit());
    }
}
