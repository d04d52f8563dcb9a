//! How error messages show plain values, the way Ruby's `inspect` does
//! (Floats: [`crate::process::arguments::float_text`]).

/// Whether a Symbol named `name` is shown bare (`:name`) rather than quoted
/// (`:"a b"`): an identifier (a letter or `_`, then letters, digits or `_`),
/// optionally ending in `?`, `!` or `=`.
pub fn bare_symbol(name: &str) -> bool {
    let starts_well = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_');
    starts_well
        && name
            .trim_end_matches(['?', '!', '='])
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_')
}

/// `1 byte`, `2 bytes`, `0 bytes`: a count with its unit in the right number
/// (messages a model and a user read).
pub fn count(n: u64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_in_number() {
        assert_eq!(count(1, "byte"), "1 byte");
        assert_eq!(count(0, "byte"), "0 bytes");
        assert_eq!(count(6, "second"), "6 seconds");
    }

    #[test]
    fn identifiers_are_bare() {
        for name in [
            "stdout",
            "exit_code",
            "_private",
            "Const",
            "ready?",
            "save!",
            "name=",
            "é",
        ] {
            assert!(bare_symbol(name), "{name}");
        }
    }

    #[test]
    fn anything_else_is_quoted() {
        for name in ["", "a b", "1st", "-", "a-b", "?", "x.y"] {
            assert!(!bare_symbol(name), "{name}");
        }
    }
}
