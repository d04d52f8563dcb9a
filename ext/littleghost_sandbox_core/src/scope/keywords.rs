//! The shapes `Scope.new` takes for its keywords (SC.3, SC.9) and the errors
//! for any other: the binding tells the shapes of a Ruby value apart, the
//! wording of a refusal is here.

use crate::error::{policy, Error};

/// `files:` or `runtime_paths:` (the `category`) given as neither a Hash nor an Array.
pub fn not_a_grant_list(category: &str) -> Error {
    policy(format!(
        "sandbox scope {category} must be a Hash or an Array"
    ))
}

/// An Array entry of `category` that is neither a name nor a `[name, access]` pair.
pub fn malformed_grant_entry(category: &str) -> Error {
    policy(format!(
        "sandbox scope {category} entries must be names or [name, access] pairs"
    ))
}

/// `capabilities:` given as neither an Array of feature names nor a Capabilities.
pub fn not_a_capability_list() -> Error {
    policy("sandbox scope capabilities must be an Array or Sandbox::Capabilities")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misshapen_keywords_are_policy_errors_naming_the_keyword() {
        let error = not_a_grant_list("files");
        assert!(matches!(error, Error::Policy(_)));
        assert_eq!(
            error.message(),
            "sandbox scope files must be a Hash or an Array"
        );
        assert_eq!(
            malformed_grant_entry("runtime_paths").message(),
            "sandbox scope runtime_paths entries must be names or [name, access] pairs"
        );
        let error = not_a_capability_list();
        assert!(matches!(error, Error::Policy(_)));
        assert_eq!(
            error.message(),
            "sandbox scope capabilities must be an Array or Sandbox::Capabilities"
        );
    }
}
