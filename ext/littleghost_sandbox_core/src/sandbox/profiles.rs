//! 10.8: which of a scope profile's options `scope` uses.

use super::{check_profile_keys, PROFILE_KEYS};
use crate::error::Result;

/// A profile's `(option name, value)` pairs as the four options of
/// [`PROFILE_KEYS`], in that order (an absent option is None; of two pairs
/// with one name the first wins); PolicyError naming any other option.
pub fn selection<T: Copy>(named: &[(String, T)]) -> Result<[Option<T>; 4]> {
    check_profile_keys(named.iter().map(|(name, _)| name.as_str()))?;
    Ok(PROFILE_KEYS.map(|key| {
        named
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| *value)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(pairs: &[(&str, u8)]) -> Vec<(String, u8)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn options_come_back_in_profile_key_order() {
        let given = named(&[("network", 4), ("files", 1)]);
        assert_eq!(selection(&given).unwrap(), [Some(1), None, None, Some(4)]);
        assert_eq!(selection::<u8>(&[]).unwrap(), [None; 4]);
    }

    #[test]
    fn the_first_of_two_pairs_with_one_name_wins() {
        let given = named(&[("capabilities", 1), ("capabilities", 2)]);
        assert_eq!(selection(&given).unwrap()[2], Some(1));
    }

    #[test]
    fn unknown_options_are_a_policy_error() {
        let err = selection(&named(&[("files", 1), ("bogus", 2)])).unwrap_err();
        assert_eq!(err.kind(), crate::error::Kind::Policy);
        assert_eq!(
            err.message(),
            "unknown sandbox scope profile options: bogus"
        );
    }
}
