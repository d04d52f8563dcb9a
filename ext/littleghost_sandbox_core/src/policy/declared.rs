//! Reading the value objects' declarations (their keywords, lists and
//! names) out of a [`Declared`] value, whatever language wrote it: the
//! caller implements the trait once with its own conversions (the binding:
//! Ruby's `String()`, `Array()`, `to_sym`), so every caller gets the same
//! shapes and the same typed refusals (docs/spec.md §4-§9).

pub use super::network_requests::Declared;
use super::{Error as Misshapen, Given};

/// The values of the keywords `known` in the keyword table `table`, in that
/// order (absent: `None`); a key that is not one of them (a keyword of
/// another name, or no keyword at all) is refused, every one named by how it
/// reads, as [`Misshapen::UnknownKeywords`].
pub fn keywords<D: Declared, const N: usize>(
    table: &D,
    known: [&'static str; N],
) -> Result<[Option<D>; N], D::Error> {
    let mut values: [Option<D>; N] = std::array::from_fn(|_| None);
    let mut unknown = Vec::new();
    for (key, value) in table.pairs()?.unwrap_or_default() {
        let slot = key
            .keyword()
            .and_then(|name| known.iter().position(|k| *k == name));
        match slot {
            Some(index) => values[index] = Some(value),
            None => unknown.push(key.shown()?),
        }
    }
    if !unknown.is_empty() {
        let known = known.to_vec();
        return Err(table.misshapen(Misshapen::UnknownKeywords { unknown, known }));
    }
    Ok(values)
}

/// The name-ish value of each item of `list`.
pub fn givens<D: Declared>(list: &D) -> Result<Vec<Given<'static>>, D::Error> {
    list.items()?.iter().map(D::given).collect()
}

/// `value` unless it is the language's "no value".
pub fn present<D: Declared>(value: Option<D>) -> Option<D> {
    value.filter(|value| !value.is_nothing())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::network_requests::tests::Json;
    use serde_json::{json, Value};

    #[test]
    fn keywords_come_in_the_known_order_and_any_other_key_is_refused_by_how_it_reads() {
        let table = Json(json!({":b": 2, ":a": 1}));
        let [a, b, c] = keywords(&table, ["a", "b", "c"]).unwrap();
        assert_eq!(a.unwrap().0, json!(1));
        assert_eq!(b.unwrap().0, json!(2));
        assert!(c.is_none());
        let table = Json(json!({":a": 1, ":zip": 2, "plain": 3}));
        let error = keywords(&table, ["a"]).unwrap_err();
        let crate::Error::Declaration(Misshapen::UnknownKeywords { unknown, known }) = error else {
            panic!("{error:?}")
        };
        assert_eq!(unknown, ["\":zip\"", "\"plain\""]);
        assert_eq!(known, ["a"]);
    }

    #[test]
    fn nothing_is_not_present_and_a_list_gives_names() {
        assert!(present(Some(Json(Value::Null))).is_none());
        assert!(present(Some(Json(json!(false)))).is_some());
        let names = givens(&Json(json!(["a", 1]))).unwrap();
        assert_eq!(names[0].name(), Some("a"));
        assert_eq!(names[1].name(), None);
    }
}
