//! Reading a scope's request (SPEC §13: SC.3, SC.9, SC.10) out of values
//! the caller's language holds. The caller implements [`Keyword`] over the
//! same values it reads a network declaration with ([`Declared`]), adding
//! the few accessors a scope reads; the shapes are decided here, once, and
//! a misshapen value is refused as a typed [`Misshapen`] the caller words.

use std::path::PathBuf;

use super::network_request::{secrets_request, Plain};
use super::{CapabilityRequest, Request, SecretsRequest};
use crate::error::Error;
use crate::policy::network_requests::Declared;
use crate::policy::{normalize_feature, parse_access, Capabilities};

/// A scope's request value of the wrong shape; `category` is the grant
/// category (`files` or `runtime_paths`) it was given for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misshapen {
    #[error("sandbox scope {category} must be a table or a list")]
    Grants { category: String },
    #[error("sandbox scope {category} entries must be names or (name, access) pairs")]
    GrantEntry { category: String },
    #[error("sandbox scope capabilities must be a list of features or a capabilities report")]
    Capabilities,
    #[error("sandbox scope network secrets names the parent's secrets: a list of names, or name => destinations (no value)")]
    Secrets,
}

/// A value of a scope's request, as the caller's language holds it.
pub trait Keyword: Declared {
    /// `error` as the caller raises it, worded in its own types' terms.
    fn misshapen_request(&self, error: Misshapen) -> Self::Error;
    /// A core `error` about this value, as the caller raises it.
    fn refused(&self, error: Error) -> Self::Error;
    /// Calls `each` with every pair when it is a table or yields pairs as
    /// one does (then true); false for any other value.
    fn each_pair(
        &self,
        each: &mut dyn FnMut(Self, Self) -> Result<(), Self::Error>,
    ) -> Result<bool, Self::Error>;
    /// A grant's name, as the caller converts a value to a name.
    fn name(&self) -> Result<String, Self::Error>;
    /// The capabilities it reports, when it is the caller's capabilities object.
    fn capabilities(&self) -> Option<Capabilities>;
}

/// SC.3: absent (or nothing) keeps the category; a table of name => access, or a list
/// of names and `(name, access)` pairs, replaces it. `directory` finds the
/// directory a name stands for (one name at a time, in the order given).
pub fn grant_requests<K: Keyword>(
    value: Option<&K>,
    category: &str,
    mut directory: impl FnMut(&str) -> Result<PathBuf, K::Error>,
) -> Result<Option<Vec<Request>>, K::Error> {
    let Some(value) = value.filter(|value| !value.is_nothing()) else {
        return Ok(None);
    };
    let mut request = |name: &K, access: Option<&K>| -> Result<Request, K::Error> {
        let name = name.name()?;
        let access =
            access.map(|given| parse_access(&given.given()?).map_err(|e| given.refused(e)));
        let access = access.transpose()?;
        Ok(Request::new(directory(&name)?, access))
    };
    let mut requests = Vec::new();
    let mut pair = |name: K, access: K| -> Result<(), K::Error> {
        requests.push(request(&name, Some(&access))?);
        Ok(())
    };
    if value.each_pair(&mut pair)? {
        return Ok(Some(requests));
    }
    let Some(entries) = value.list() else {
        let category = category.to_owned();
        return Err(value.misshapen_request(Misshapen::Grants { category }));
    };
    entries
        .iter()
        .map(|entry| match entry.list().as_deref() {
            Some([name, access]) => request(name, Some(access)),
            Some(_) => {
                let category = category.to_owned();
                Err(entry.misshapen_request(Misshapen::GrantEntry { category }))
            }
            None => request(entry, None),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// SC.9: absent (or nothing) keeps the parent's; a capabilities report intersects; a
/// list keeps the parent's features it names.
pub fn capability_request<K: Keyword>(value: Option<&K>) -> Result<CapabilityRequest, K::Error> {
    let Some(value) = value.filter(|value| !value.is_nothing()) else {
        return Ok(CapabilityRequest::Parent);
    };
    if let Some(theirs) = value.capabilities() {
        return Ok(CapabilityRequest::intersecting(&theirs));
    }
    let Some(features) = value.list() else {
        return Err(value.misshapen_request(Misshapen::Capabilities));
    };
    let feature = |f: &K| normalize_feature(&f.given()?).map_err(|e| f.refused(e));
    let features = features.iter().map(feature).collect::<Result<_, _>>()?;
    Ok(CapabilityRequest::Features(features))
}

/// What a scope's `network` value asks for (SC.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkKeyword {
    /// Absent, nil or true: the parent's network.
    Parent,
    /// false: no network (mode none).
    Off,
    /// Anything else: a declaration the caller coerces to a network policy.
    Declared,
}

/// Which of [`NetworkKeyword`] `value` is.
pub fn network_keyword<K: Keyword>(value: Option<&K>) -> NetworkKeyword {
    match value {
        None => NetworkKeyword::Parent,
        Some(value) if value.is_nothing() || value.flag() == Some(true) => NetworkKeyword::Parent,
        Some(value) if value.flag() == Some(false) => NetworkKeyword::Off,
        Some(_) => NetworkKeyword::Declared,
    }
}

/// The parent's secrets a scope's network table names in its `secrets`
/// entry; `None` when it is no table, has no such entry, or declares
/// values (then the table is a whole declaration, parsed as one).
pub fn secrets_asked<K: Keyword>(network: &K) -> Result<Option<SecretsRequest>, K::Error> {
    let Some(pairs) = network.named_pairs()? else {
        return Ok(None);
    };
    let Some((_, given)) = pairs.iter().find(|(key, _)| key == "secrets") else {
        return Ok(None);
    };
    secrets_request(&plain(given)?).map_err(|_| given.misshapen_request(Misshapen::Secrets))
}

/// `value` as plain data: nothing, a list, a table (keys by name) or
/// anything else as its text.
pub fn plain<K: Keyword>(value: &K) -> Result<Plain, K::Error> {
    if value.is_nothing() {
        return Ok(Plain::Nil);
    }
    if let Some(items) = value.list() {
        return Ok(Plain::List(
            items.iter().map(plain).collect::<Result<_, _>>()?,
        ));
    }
    match value.named_pairs()? {
        Some(pairs) => pairs
            .into_iter()
            .map(|(key, item)| Ok((key, plain(&item)?)))
            .collect::<Result<_, _>>()
            .map(Plain::Table),
        None => Ok(Plain::Text(value.text()?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Access;
    use crate::policy::Given;
    use serde_json::{json, Value};

    /// JSON as a scope's request: an array is a list, an object a table,
    /// a string a name; `{"capabilities": [...]}` stands for a caller's
    /// capabilities object reporting those features.
    #[derive(Debug)]
    struct Json(Value);

    #[derive(Debug, PartialEq)]
    enum Refused {
        Misshapen(Misshapen),
        Core(String),
        NotAName(String),
    }

    impl Declared for Json {
        type Error = Refused;

        fn misshapen(&self, error: impl Into<Error>) -> Refused {
            Refused::Core(error.into().to_string())
        }

        fn items(&self) -> Result<Vec<Json>, Refused> {
            Ok(self.list().unwrap_or_else(|| vec![Json(self.0.clone())]))
        }

        fn text(&self) -> Result<String, Refused> {
            Ok(self.string().unwrap_or_else(|| self.0.to_string()))
        }

        fn string(&self) -> Option<String> {
            self.0.as_str().map(str::to_owned)
        }

        fn flag(&self) -> Option<bool> {
            self.0.as_bool()
        }

        fn shown(&self) -> Result<String, Refused> {
            Ok(self.0.to_string())
        }

        fn is_nothing(&self) -> bool {
            self.0.is_null()
        }

        fn truthy(&self) -> bool {
            !matches!(self.0, Value::Null | Value::Bool(false))
        }

        fn keyword(&self) -> Option<String> {
            None
        }

        fn given(&self) -> Result<Given<'static>, Refused> {
            Ok(match self.string() {
                Some(name) => Given::symbol(&name),
                None => Given::other(&self.0.to_string()),
            })
        }

        fn expanded_path(&self, _what: &str) -> Result<PathBuf, Refused> {
            unreachable!("a scope names no path")
        }

        fn list(&self) -> Option<Vec<Json>> {
            let items = self.0.as_array()?;
            Some(items.iter().cloned().map(Json).collect())
        }

        fn pairs(&self) -> Result<Option<Vec<(Json, Json)>>, Refused> {
            unreachable!("a scope reads named pairs")
        }

        fn named_pairs(&self) -> Result<Option<Vec<(String, Json)>>, Refused> {
            Ok(self.0.as_object().map(|map| {
                map.iter()
                    .map(|(key, value)| (key.clone(), Json(value.clone())))
                    .collect()
            }))
        }
    }

    impl Keyword for Json {
        fn misshapen_request(&self, error: Misshapen) -> Refused {
            Refused::Misshapen(error)
        }

        fn refused(&self, error: Error) -> Refused {
            Refused::Core(error.message())
        }

        fn each_pair(
            &self,
            each: &mut dyn FnMut(Json, Json) -> Result<(), Refused>,
        ) -> Result<bool, Refused> {
            let Some(pairs) = self
                .named_pairs()?
                .filter(|_| self.capabilities().is_none())
            else {
                return Ok(false);
            };
            for (key, value) in pairs {
                each(Json(Value::String(key)), value)?;
            }
            Ok(true)
        }

        fn name(&self) -> Result<String, Refused> {
            self.string()
                .ok_or_else(|| Refused::NotAName(self.0.to_string()))
        }

        fn capabilities(&self) -> Option<Capabilities> {
            let features = self.0.get("capabilities")?.as_array()?;
            let features = features
                .iter()
                .filter_map(|f| f.as_str().map(str::to_owned));
            Some(Capabilities {
                features: features.collect(),
                ..Capabilities::default()
            })
        }
    }

    fn grants(value: Value) -> Result<Option<Vec<Request>>, Refused> {
        let directory = |name: &str| match name {
            "gone" => Err(Refused::Core(format!("no directory {name}"))),
            _ => Ok(PathBuf::from(format!("/work/{name}"))),
        };
        grant_requests(Some(&Json(value)), "files", directory)
    }

    #[test]
    fn grants_are_a_table_or_a_list_of_names_and_pairs() {
        let by_table = grants(json!({"src": "read_write", "doc": "read_only"})).unwrap();
        let by_list = grants(json!(["src", ["doc", "read_only"]])).unwrap();
        assert_eq!(
            by_table.unwrap(),
            [
                Request::new("/work/doc", Some(Access::ReadOnly)),
                Request::new("/work/src", Some(Access::ReadWrite)),
            ]
        );
        assert_eq!(
            by_list.unwrap(),
            [
                Request::new("/work/src", None),
                Request::new("/work/doc", Some(Access::ReadOnly)),
            ]
        );
        let absent = grant_requests::<Json>(None, "files", |_| unreachable!());
        assert_eq!(absent.unwrap(), None);
        assert_eq!(grants(Value::Null).unwrap(), None);
    }

    #[test]
    fn misshapen_grants_are_refused_with_their_category() {
        let category = "files".to_owned();
        assert_eq!(
            grants(json!("src")).unwrap_err(),
            Refused::Misshapen(Misshapen::Grants { category })
        );
        let category = "files".to_owned();
        assert_eq!(
            grants(json!([["src", "read_only", "extra"]])).unwrap_err(),
            Refused::Misshapen(Misshapen::GrantEntry { category })
        );
        assert_eq!(
            grants(json!([7])).unwrap_err(),
            Refused::NotAName("7".into())
        );
        let refused = grants(json!({"src": "sideways"})).unwrap_err();
        assert!(matches!(refused, Refused::Core(m) if m.contains("sideways")));
        let unknown = grants(json!(["src", "gone"])).unwrap_err();
        assert_eq!(unknown, Refused::Core("no directory gone".into()));
    }

    #[test]
    fn capabilities_intersect_a_report_or_keep_the_features_a_list_names() {
        let report = Json(json!({"capabilities": ["filesystem_read"]}));
        let CapabilityRequest::Intersect { features, .. } =
            capability_request(Some(&report)).unwrap()
        else {
            panic!("a report intersects")
        };
        assert_eq!(features, ["filesystem_read"]);
        let list = Json(json!(["filesystem_read", "process_execute"]));
        assert_eq!(
            capability_request(Some(&list)).unwrap(),
            CapabilityRequest::Features(vec!["filesystem_read".into(), "process_execute".into()])
        );
        assert_eq!(
            capability_request::<Json>(None).unwrap(),
            CapabilityRequest::Parent
        );
        assert_eq!(
            capability_request(Some(&Json(Value::Null))).unwrap(),
            CapabilityRequest::Parent
        );
        assert_eq!(
            capability_request(Some(&Json(json!("filesystem_read")))).unwrap_err(),
            Refused::Misshapen(Misshapen::Capabilities)
        );
        let not_a_name = capability_request(Some(&Json(json!([1])))).unwrap_err();
        assert!(matches!(not_a_name, Refused::Core(m) if m.contains("got 1")));
    }

    #[test]
    fn network_nil_and_true_keep_the_parents_false_turns_it_off() {
        let keyword = |value: Value| network_keyword(Some(&Json(value)));
        assert_eq!(network_keyword::<Json>(None), NetworkKeyword::Parent);
        assert_eq!(keyword(Value::Null), NetworkKeyword::Parent);
        assert_eq!(keyword(json!(true)), NetworkKeyword::Parent);
        assert_eq!(keyword(json!(false)), NetworkKeyword::Off);
        assert_eq!(keyword(json!("none")), NetworkKeyword::Declared);
        assert_eq!(keyword(json!({"mode": "none"})), NetworkKeyword::Declared);
    }

    #[test]
    fn secrets_name_the_parents_unless_they_declare_values() {
        let asked = |value: Value| secrets_asked(&Json(value));
        let named = asked(json!({"secrets": ["token"], "mode": "allowlist"})).unwrap();
        assert_eq!(
            named,
            Some(SecretsRequest::Named(vec![("token".into(), None)]))
        );
        let declared = json!({"secrets": {"token": {"value": "x", "destinations": []}}});
        assert_eq!(asked(declared).unwrap(), None);
        assert_eq!(asked(json!({"mode": "none"})).unwrap(), None);
        assert_eq!(asked(json!("none")).unwrap(), None);
        assert_eq!(
            asked(json!({"secrets": "token"})).unwrap_err(),
            Refused::Misshapen(Misshapen::Secrets)
        );
    }

    #[test]
    fn plain_data_keeps_lists_tables_and_text() {
        let value = Json(json!({"a": [null, "x", {"b": 1}]}));
        let inner = Plain::Table(vec![("b".into(), Plain::Text("1".into()))]);
        assert_eq!(
            plain(&value).unwrap(),
            Plain::Table(vec![(
                "a".into(),
                Plain::List(vec![Plain::Nil, Plain::Text("x".into()), inner])
            )])
        );
    }
}
