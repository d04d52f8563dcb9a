//! Reading a `network:` declaration's allow entries, secrets, `resolve:`
//! pairs and header lists out of a declared value, whatever language wrote
//! it: the caller implements [`Declared`] with its own conversions (the
//! binding: Ruby's `String()` and `Array()`), and the shapes are decided
//! here, once, before [`super::NetworkPolicy::new`] validates the values.

use std::path::PathBuf;

use super::network_rules::{AllowRequest, InspectRequest, RuleRequest, SecretRequest};
use super::{Error as Misshapen, Given};

/// A value of a declaration, as the caller's language holds it.
pub trait Declared: Sized {
    /// A conversion the caller's language refused.
    type Error;
    /// `error` as the caller raises it.
    fn misshapen(&self, error: impl Into<crate::Error>) -> Self::Error;
    /// Its items, as the caller's language lists a value (nil: none).
    fn items(&self) -> Result<Vec<Self>, Self::Error>;
    /// Its text, as the caller's language converts a value to text.
    fn text(&self) -> Result<String, Self::Error>;
    /// Its text only when it is text already (never converted).
    fn string(&self) -> Option<String>;
    /// true or false; `None` for any other value.
    fn flag(&self) -> Option<bool>;
    /// How it reads in a message.
    fn shown(&self) -> Result<String, Self::Error>;
    /// Whether it is the language's "no value" (given, but nil).
    fn is_nothing(&self) -> bool;
    /// Whether the language counts it as yes (anything but nothing and false).
    fn truthy(&self) -> bool;
    /// Its name only when it is a name already (a keyword; never converted).
    fn keyword(&self) -> Option<String>;
    /// As a name-ish value: its name when it converts to one, and how it reads.
    fn given(&self) -> Result<Given<'static>, Self::Error>;
    /// A path made absolute, as the caller's language expands one; `what`
    /// names it in a refusal.
    fn expanded_path(&self, what: &str) -> Result<PathBuf, Self::Error>;
    /// Its items only when it is a list already (never converted).
    fn list(&self) -> Option<Vec<Self>>;
    /// Its pairs as given, when it is a table.
    fn pairs(&self) -> Result<Option<Vec<(Self, Self)>>, Self::Error>;
    /// Its pairs keyed by name (a key that is no name by how it reads), when it is a table.
    fn named_pairs(&self) -> Result<Option<Vec<(String, Self)>>, Self::Error>;
}

/// The text of each item of `value` (absent: none).
pub fn texts<D: Declared>(value: Option<&D>) -> Result<Vec<String>, D::Error> {
    match value {
        Some(value) => value.items()?.iter().map(D::text).collect(),
        None => Ok(Vec::new()),
    }
}

/// `allow:` entries: a table is a rule `{destination, inspect, methods,
/// paths}`, anything else its text.
pub fn allow_requests<D: Declared>(allow: Option<&D>) -> Result<Vec<AllowRequest>, D::Error> {
    let Some(allow) = allow else {
        return Ok(Vec::new());
    };
    let mut requests = Vec::new();
    for entry in allow.items()? {
        let Some(pairs) = entry.named_pairs()? else {
            requests.push(AllowRequest::Text(entry.text()?));
            continue;
        };
        let mut rule = RuleRequest::default();
        for (key, value) in pairs {
            match key.as_str() {
                "destination" => rule.destination = Some(value.text()?),
                "inspect" => {
                    rule.inspect = Some(match value.flag() {
                        Some(flag) => InspectRequest::Flag(flag),
                        None => InspectRequest::Other {
                            shown: value.shown()?,
                        },
                    })
                }
                "methods" => rule.methods = texts(Some(&value))?,
                "paths" => rule.paths = texts(Some(&value))?,
                _ => {}
            }
            rule.keys.push(key);
        }
        requests.push(AllowRequest::Rule(rule));
    }
    Ok(requests)
}

/// `secrets:` as `{name => {value, destinations}}`; a value that is not
/// text is passed on as absent (and refused), never converted, so no
/// message can show it.
pub fn secret_requests<D: Declared>(secrets: Option<&D>) -> Result<Vec<SecretRequest>, D::Error> {
    let Some(secrets) = secrets else {
        return Ok(Vec::new());
    };
    let Some(pairs) = secrets.pairs()? else {
        return Err(secrets.misshapen(Misshapen::SecretsNotATable));
    };
    let mut requests = Vec::new();
    for (name, declaration) in pairs {
        let mut request = SecretRequest {
            name: name.text()?,
            ..SecretRequest::default()
        };
        if let Some(pairs) = declaration.named_pairs()? {
            let mut keys = Vec::new();
            for (key, value) in pairs {
                match key.as_str() {
                    "value" => request.value = value.string(),
                    "destinations" => request.destinations = texts(Some(&value))?,
                    _ => {}
                }
                keys.push(key);
            }
            request.keys = Some(keys);
        }
        requests.push(request);
    }
    Ok(requests)
}

/// `resolve:` as `{name => address}`, each pair as text (validated by
/// [`super::NetworkRules::resolving`]).
pub fn resolve_requests<D: Declared>(
    resolve: Option<&D>,
) -> Result<Vec<(String, String)>, D::Error> {
    let Some(resolve) = resolve else {
        return Ok(Vec::new());
    };
    let Some(pairs) = resolve.pairs()? else {
        return Err(resolve.misshapen(Misshapen::ResolveNotATable));
    };
    pairs
        .iter()
        .map(|(name, address)| Ok((name.text()?, address.text()?)))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// JSON as a declaration whose conversions never fail: a list is its
    /// items (null: none), anything else one item; text is a string's own
    /// or the JSON; a keyword is a string starting with `:` (JSON has none).
    #[derive(Debug, Clone)]
    pub(crate) struct Json(pub Value);

    type Misshapen = crate::Error;

    impl Declared for Json {
        type Error = Misshapen;

        fn misshapen(&self, error: impl Into<Misshapen>) -> Misshapen {
            error.into()
        }

        fn items(&self) -> Result<Vec<Json>, Misshapen> {
            Ok(match &self.0 {
                Value::Array(items) => items.iter().cloned().map(Json).collect(),
                Value::Null => Vec::new(),
                other => vec![Json(other.clone())],
            })
        }

        fn text(&self) -> Result<String, Misshapen> {
            Ok(self.string().unwrap_or_else(|| self.0.to_string()))
        }

        fn string(&self) -> Option<String> {
            self.0.as_str().map(str::to_owned)
        }

        fn flag(&self) -> Option<bool> {
            self.0.as_bool()
        }

        fn shown(&self) -> Result<String, Misshapen> {
            Ok(self.0.to_string())
        }

        fn is_nothing(&self) -> bool {
            self.0.is_null()
        }

        fn truthy(&self) -> bool {
            !matches!(self.0, Value::Null | Value::Bool(false))
        }

        fn keyword(&self) -> Option<String> {
            self.0.as_str()?.strip_prefix(':').map(str::to_owned)
        }

        fn given(&self) -> Result<Given<'static>, Misshapen> {
            Ok(match self.0.as_str() {
                Some(text) => Given::symbol(text.trim_start_matches(':')),
                None => Given::other(&self.0.to_string()),
            })
        }

        fn expanded_path(&self, _what: &str) -> Result<PathBuf, Misshapen> {
            Ok(PathBuf::from("/base").join(self.text()?))
        }

        fn list(&self) -> Option<Vec<Json>> {
            let items = self.0.as_array()?;
            Some(items.iter().cloned().map(Json).collect())
        }

        fn pairs(&self) -> Result<Option<Vec<(Json, Json)>>, Misshapen> {
            Ok(self.0.as_object().map(|map| {
                map.iter()
                    .map(|(key, value)| (Json(Value::String(key.clone())), Json(value.clone())))
                    .collect()
            }))
        }

        fn named_pairs(&self) -> Result<Option<Vec<(String, Json)>>, Misshapen> {
            Ok(self.0.as_object().map(|map| {
                map.iter()
                    .map(|(key, value)| {
                        let name = key.trim_start_matches(':').to_owned();
                        (name, Json(value.clone()))
                    })
                    .collect()
            }))
        }
    }

    #[test]
    fn an_allow_entry_is_text_or_a_rule_with_every_key_named() {
        let allow = Json(json!([
            "a.test:80",
            {"destination": "b.test:443", "inspect": "yes", "methods": "GET", "extra": 1}
        ]));
        let requests = allow_requests(Some(&allow)).unwrap();
        assert_eq!(requests[0], AllowRequest::Text("a.test:80".into()));
        let AllowRequest::Rule(rule) = &requests[1] else {
            panic!("{requests:?}")
        };
        assert_eq!(rule.keys, ["destination", "extra", "inspect", "methods"]);
        assert_eq!(rule.destination.as_deref(), Some("b.test:443"));
        assert_eq!(
            rule.inspect,
            Some(InspectRequest::Other {
                shown: "\"yes\"".into()
            })
        );
        assert_eq!(rule.methods, ["GET"]);
        assert!(allow_requests::<Json>(None).unwrap().is_empty());
    }

    #[test]
    fn a_secret_value_that_is_not_text_is_absent_never_converted() {
        let secrets = Json(json!({
            "token": {"value": 42, "destinations": ["a.test:443"]},
            "plain": "not a table"
        }));
        let requests = secret_requests(Some(&secrets)).unwrap();
        let token = requests.iter().find(|r| r.name == "token").unwrap();
        assert_eq!(token.value, None);
        assert_eq!(token.destinations, ["a.test:443"]);
        assert_eq!(
            token.keys.as_deref(),
            Some(&["destinations".to_owned(), "value".to_owned()][..])
        );
        let plain = requests.iter().find(|r| r.name == "plain").unwrap();
        assert_eq!(plain.keys, None);
    }

    #[test]
    fn secrets_and_resolve_must_be_tables() {
        let list = Json(json!(["a"]));
        assert!(matches!(
            secret_requests(Some(&list)),
            Err(crate::Error::Declaration(
                super::Misshapen::SecretsNotATable
            ))
        ));
        assert!(matches!(
            resolve_requests(Some(&list)),
            Err(crate::Error::Declaration(
                super::Misshapen::ResolveNotATable
            ))
        ));
        let resolve = Json(json!({"a.test": "10.0.0.1"}));
        assert_eq!(
            resolve_requests(Some(&resolve)).unwrap(),
            [("a.test".to_owned(), "10.0.0.1".to_owned())]
        );
    }
}
