//! EnvironmentPolicy (SPEC §6): the variables a process gets, and whether it
//! starts from the parent's environment.

use std::hash::{Hash, Hasher};

use super::declared::Declared;

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

/// What an environment declaration gives (docs/spec.md §6): the table of
/// variables (`None`: none) and whether processes inherit the parent's
/// environment.
#[derive(Debug)]
pub struct EnvironmentDeclaration<D> {
    pub values: Option<D>,
    pub inherit: bool,
}

impl<D: Declared + Clone> EnvironmentDeclaration<D> {
    /// Reads `{set:, inherit:}`, or a plain table of variables that
    /// processes get without inheriting; a key `set` or `inherit` (a keyword
    /// or text) makes the nested form. `None` when `table` is no table.
    pub fn read(table: &D) -> Result<Option<EnvironmentDeclaration<D>>, D::Error> {
        let Some(pairs) = table.pairs()? else {
            return Ok(None);
        };
        // The value under `name` as a keyword (`keyword`) or as text.
        let under = |name: &str, keyword: bool| {
            let matches = |key: &D| match keyword {
                true => key.keyword().as_deref() == Some(name),
                false => key.string().as_deref() == Some(name),
            };
            pairs.iter().find(|(key, _)| matches(key)).map(|(_, v)| v)
        };
        let given = |name: &str| under(name, true).or(under(name, false));
        if given("set").is_none() && given("inherit").is_none() {
            let values = Some(table.clone());
            return Ok(Some(EnvironmentDeclaration {
                values,
                inherit: false,
            }));
        }
        // `set` as a keyword when that is yes, else as text when that is.
        let set = [under("set", true), under("set", false)];
        let values = set.into_iter().flatten().find(|v| v.truthy()).cloned();
        // `inherit` as a keyword when given (even as false), else as text.
        let inherit = given("inherit").is_some_and(D::truthy);
        Ok(Some(EnvironmentDeclaration { values, inherit }))
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

    #[test]
    fn a_declaration_is_nested_when_it_names_set_or_inherit() {
        use crate::policy::network_requests::tests::Json;
        use serde_json::json;
        let read = |value| EnvironmentDeclaration::read(&Json(value)).unwrap();
        let plain = read(json!({"A": "1"})).unwrap();
        assert_eq!(plain.values.unwrap().0, json!({"A": "1"}));
        assert!(!plain.inherit);
        // The keyword's false wins over the text's true; a false set is none.
        let nested = read(json!({":inherit": false, "inherit": true, ":set": false})).unwrap();
        assert!(!nested.inherit && nested.values.is_none());
        let text = read(json!({"set": {"B": "2"}, "inherit": true})).unwrap();
        assert_eq!(text.values.unwrap().0, json!({"B": "2"}));
        assert!(text.inherit);
        assert!(read(json!(["A"])).is_none());
    }
}
