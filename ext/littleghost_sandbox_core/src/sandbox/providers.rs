//! The provider registries of `Sandbox` (§12) and `Workspace` (3.9): a name
//! resolves to exactly the class registered under it, never to another.

use std::collections::BTreeMap;

use super::Error;

/// A provider registry: each name stands for the one class registered under
/// it (`T`, the caller's handle of a class), and a name nothing is
/// registered under is refused ([`unknown`]), never resolved to another.
#[derive(Debug, Clone)]
pub struct Registry<T> {
    /// "sandbox" or "workspace": starts a refusal's message.
    label: &'static str,
    classes: BTreeMap<String, T>,
}

impl<T: Clone> Registry<T> {
    pub const fn new(label: &'static str) -> Registry<T> {
        Registry {
            label,
            classes: BTreeMap::new(),
        }
    }

    /// "sandbox" or "workspace".
    pub fn label(&self) -> &'static str {
        self.label
    }

    /// Registers `class` under `name`, replacing what was there.
    pub fn register(&mut self, name: String, class: T) {
        self.classes.insert(name, class);
    }

    /// The class registered under `name`, or the refusal naming the registered ones.
    pub fn resolve(&self, name: &str) -> crate::Result<T> {
        match self.classes.get(name) {
            Some(class) => Ok(class.clone()),
            None => Err(unknown(self.label, name, self.names())),
        }
    }

    /// The first name, in sorted order, whose class `is` picks.
    pub fn name_of(&self, is: impl Fn(&T) -> bool) -> Option<String> {
        let mut classes = self.classes.iter();
        classes
            .find(|(_, class)| is(class))
            .map(|(name, _)| name.clone())
    }

    /// Every name and its class, sorted by name.
    pub fn entries(&self) -> Vec<(String, T)> {
        let classes = self.classes.iter();
        classes
            .map(|(name, class)| (name.clone(), class.clone()))
            .collect()
    }

    fn names(&self) -> Vec<String> {
        self.classes.keys().cloned().collect()
    }
}

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
    fn a_registry_resolves_exactly_the_registered_class() {
        let mut registry = Registry::new("sandbox");
        registry.register("native".into(), 1);
        registry.register("bubblewrap".into(), 2);
        registry.register("bwrap".into(), 2);
        registry.register("native".into(), 3);
        assert_eq!(registry.resolve("native"), Ok(3));
        assert_eq!(
            registry.name_of(|class| *class == 2),
            Some("bubblewrap".into())
        );
        assert_eq!(registry.name_of(|class| *class == 1), None);
        let refused = registry.resolve("landlock").unwrap_err();
        assert_eq!(refused.kind(), crate::error::Kind::Dependency);
        assert!(refused
            .message()
            .ends_with("(registered: bubblewrap, bwrap, native)"));
        let entries = registry.entries();
        assert_eq!(entries[0], ("bubblewrap".to_string(), 2));
        assert_eq!(entries.len(), 3);
    }

    #[test]
    fn an_empty_registry_says_none() {
        let err = unknown("workspace", "scratch", Vec::new());
        assert!(err.message().ends_with("(registered: none)"));
    }
}
