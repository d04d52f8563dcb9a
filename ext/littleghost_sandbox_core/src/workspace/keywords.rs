//! The refusals of `Workspace.new`'s keywords whose shape only the binding
//! can see (a Ruby Hash, a callable): the binding tells the shapes apart,
//! the wording is here.

use crate::error::{argument, Error};

/// `paths:` given as something without pairs.
pub fn paths_not_a_hash() -> Error {
    argument("workspace paths must be a Hash")
}

/// `setup:` or `teardown:` (the `hook`) given as something that cannot be called.
pub fn hook_not_callable(hook: &str) -> Error {
    argument(format!("workspace {hook} must be callable"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misshapen_keywords_are_argument_errors_naming_the_keyword() {
        let error = paths_not_a_hash();
        assert!(matches!(error, Error::Argument(_)));
        assert_eq!(error.message(), "workspace paths must be a Hash");
        let error = hook_not_callable("teardown");
        assert!(matches!(error, Error::Argument(_)));
        assert_eq!(error.message(), "workspace teardown must be callable");
    }
}
