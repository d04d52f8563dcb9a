//! The provider registries of `Sandbox` (§12) and `Workspace` (3.9): a name
//! resolves to exactly the class registered under it, never to another.

use super::Error;

/// A dependency failure for a provider name nothing is registered under: says
/// the name is unknown (not merely uninstalled) and lists the registered
/// names, sorted. `label` ("sandbox", "workspace") starts the message.
pub fn unknown(label: &str, name: &str, mut registered: Vec<String>) -> crate::Error {
    registered.sort();
    Error::UnknownProvider {
        label: label.to_string(),
        name: name.to_string(),
        registered,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_lists_the_registered_ones_sorted() {
        let names = vec!["seatbelt".to_string(), "bubblewrap".to_string()];
        let err = unknown("sandbox", "bwrap", names);
        assert_eq!(err.kind(), crate::error::Kind::Dependency);
        assert_eq!(
            err.message(),
            "sandbox provider bwrap is not available; it is not a registered sandbox provider \
             (registered: bubblewrap, seatbelt)"
        );
    }

    #[test]
    fn an_empty_registry_says_none() {
        let err = unknown("workspace", "scratch", Vec::new());
        assert!(err.message().ends_with("(registered: none)"));
    }
}
