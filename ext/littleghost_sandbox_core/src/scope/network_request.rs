//! What a scope's `network:` keyword asks of its parent's network (SPEC §13,
//! SC.10): which secrets a `secrets:` entry names, and whether the scope
//! keeps the parent's network, takes a mode, or gets an allowlist narrowed
//! from the parent's. The caller reads its values into plain data
//! ([`Plain`], [`NetworkAsk`]); every choice is made here.

use super::network::{narrow_allowlist, widen, NetworkRequest, SecretsRequest};
use crate::error::Result;
use crate::policy::{NetworkMode, NetworkPolicy};

/// A value as the caller wrote it, in plain data: tables keep their order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plain {
    Nil,
    Text(String),
    List(Vec<Plain>),
    Table(Vec<(String, Plain)>),
}

/// A scope's `secrets:` that is neither a list of the parent's secret names
/// nor a table of names to their destinations (or to nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MisshapenSecrets;

type Shaped<T> = std::result::Result<T, MisshapenSecrets>;

/// What a scope's `secrets:` names. `Ok(None)` when it declares values: a
/// full declaration, which the network policy parses and
/// [`narrow_allowlist`] compares with the parent's.
pub fn secrets_request(given: &Plain) -> Shaped<Option<SecretsRequest>> {
    match given {
        Plain::Nil => Ok(Some(SecretsRequest::Reachable)),
        Plain::List(names) => {
            let names = texts(names)?.into_iter().map(|name| (name, None));
            Ok(Some(SecretsRequest::Named(names.collect())))
        }
        Plain::Table(entries) if entries.iter().any(|(_, entry)| declares_value(entry)) => Ok(None),
        Plain::Table(entries) => {
            let named = entries
                .iter()
                .map(|(name, entry)| Ok((name.clone(), destinations(entry)?)))
                .collect::<Shaped<_>>()?;
            Ok(Some(SecretsRequest::Named(named)))
        }
        Plain::Text(_) => Err(MisshapenSecrets),
    }
}

fn declares_value(entry: &Plain) -> bool {
    matches!(entry, Plain::Table(keys) if keys.iter().any(|(key, _)| key == "value"))
}

fn texts(items: &[Plain]) -> Shaped<Vec<String>> {
    let text = |item: &Plain| match item {
        Plain::Text(text) => Ok(text.clone()),
        _ => Err(MisshapenSecrets),
    };
    items.iter().map(text).collect()
}

/// `name => nil` or `name => {}` (the parent's destinations), or `name =>
/// {destinations: [...]}` (one destination may stand alone, none is nil).
fn destinations(entry: &Plain) -> Shaped<Option<Vec<String>>> {
    let Plain::Table(keys) = entry else {
        return match entry {
            Plain::Nil => Ok(None),
            _ => Err(MisshapenSecrets),
        };
    };
    let mut destinations = None;
    for (key, value) in keys {
        destinations = Some(match (key.as_str(), value) {
            ("destinations", Plain::Nil) => Vec::new(),
            ("destinations", Plain::Text(text)) => vec![text.clone()],
            ("destinations", Plain::List(items)) => texts(items)?,
            _ => return Err(MisshapenSecrets),
        });
    }
    Ok(destinations)
}

/// What a scope's `network:` asked, once the caller read it.
#[derive(Debug, Clone, Copy)]
pub enum NetworkAsk<'a> {
    /// Nothing, `nil` or `true`: the parent's network.
    Parent,
    /// A table of only `secrets:`: the parent's allow entries, fewer secrets.
    Secrets(&'a SecretsRequest),
    /// A network policy (`false` reads as mode none) and the secrets its
    /// table named. `same_as_parent`: it equals the parent's policy (the
    /// caller's equality, which sees the gateway and authorizer objects);
    /// `parents_objects`: the gateway and authorizer it names are absent or
    /// the parent's.
    Policy {
        requested: &'a NetworkPolicy,
        secrets: Option<&'a SecretsRequest>,
        same_as_parent: bool,
        parents_objects: bool,
    },
}

/// SC.10: the request [`super::narrow_network`] takes for `ask` under
/// `parent` (`None`: the backend's default), and the allowlist narrowed from
/// the parent's when the scope gets one (`None`: the parent's or the
/// requested policy, as the request says). Anything wider is a refusal.
pub fn scope_network(
    parent: Option<&NetworkPolicy>,
    ask: NetworkAsk<'_>,
) -> Result<(NetworkRequest, Option<NetworkPolicy>)> {
    let allowlist = parent.filter(|parent| parent.mode == NetworkMode::Allowlist);
    let (requested, secrets, same_as_parent, parents_objects) = match ask {
        NetworkAsk::Parent => return Ok((NetworkRequest::Parent, None)),
        NetworkAsk::Secrets(secrets) => {
            let parent = allowlist.ok_or_else(widen)?;
            // The parent's allow entries, and only the secrets `secrets:` names
            // (a parent passed as the request would name all of its own).
            let mut requested = parent.clone();
            requested.rules.secrets.clear();
            let narrowed = narrow_allowlist(parent, &requested, secrets)?;
            return Ok((NetworkRequest::Narrowed, Some(narrowed)));
        }
        NetworkAsk::Policy {
            requested,
            secrets,
            same_as_parent,
            parents_objects,
        } => (requested, secrets, same_as_parent, parents_objects),
    };
    match allowlist {
        Some(parent) if !same_as_parent && requested.mode == NetworkMode::Allowlist => {
            if !parents_objects {
                return Err(widen());
            }
            let secrets = secrets.cloned().unwrap_or_default();
            let narrowed = narrow_allowlist(parent, requested, &secrets)?;
            Ok((NetworkRequest::Narrowed, Some(narrowed)))
        }
        _ if secrets.is_some() => Err(widen()),
        _ => {
            let mode = requested.mode;
            Ok((
                NetworkRequest::Mode {
                    mode,
                    same_as_parent,
                },
                None,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{AllowRequest, Given, NetworkRequest as Declared, SecretRequest};
    use crate::scope::NetworkNarrowing;

    fn text(value: &str) -> Plain {
        Plain::Text(value.to_owned())
    }

    fn table(entries: Vec<(&str, Plain)>) -> Plain {
        Plain::Table(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    }

    fn named(entries: &[(&str, Option<&[&str]>)]) -> Option<SecretsRequest> {
        let entry = |(name, destinations): &(&str, Option<&[&str]>)| {
            let destinations = destinations.map(|d| d.iter().map(|s| s.to_string()).collect());
            (name.to_string(), destinations)
        };
        Some(SecretsRequest::Named(entries.iter().map(entry).collect()))
    }

    fn allowlist(allow: &[&str], secret: Option<(&str, &str)>) -> NetworkPolicy {
        let mut request = Declared::mode(Given::symbol("allowlist"));
        request.allow = allow
            .iter()
            .map(|a| AllowRequest::Text(a.to_string()))
            .collect();
        if let Some((name, destination)) = secret {
            request.secrets = vec![SecretRequest {
                name: name.to_owned(),
                keys: Some(vec!["value".into(), "destinations".into()]),
                value: Some("s3cret".into()),
                destinations: vec![destination.to_owned()],
            }];
        }
        NetworkPolicy::new(request).unwrap()
    }

    fn mode(name: &str) -> NetworkPolicy {
        NetworkPolicy::new(Declared::mode(Given::symbol(name))).unwrap()
    }

    fn widens(result: Result<(NetworkRequest, Option<NetworkPolicy>)>) -> bool {
        matches!(
            result,
            Err(crate::Error::NetworkNarrowing(NetworkNarrowing::Widens))
        )
    }

    #[test]
    fn secrets_name_the_parents_by_list_or_table() {
        assert_eq!(
            secrets_request(&Plain::Nil),
            Ok(Some(SecretsRequest::Reachable))
        );
        let list = Plain::List(vec![text("github"), text("aws")]);
        assert_eq!(
            secrets_request(&list),
            Ok(named(&[("github", None), ("aws", None)]))
        );
        let by_table = table(vec![
            (
                "github",
                table(vec![("destinations", Plain::List(vec![text("a:1")]))]),
            ),
            ("aws", Plain::Nil),
            ("one", table(vec![("destinations", text("b:2"))])),
        ]);
        let expected = named(&[
            ("github", Some(&["a:1"])),
            ("aws", None),
            ("one", Some(&["b:2"])),
        ]);
        assert_eq!(secrets_request(&by_table), Ok(expected));
    }

    #[test]
    fn secrets_with_a_value_are_a_declaration() {
        let declared = table(vec![("github", table(vec![("value", text("v"))]))]);
        assert_eq!(secrets_request(&declared), Ok(None));
    }

    #[test]
    fn misshapen_secrets_are_refused() {
        let extra_key = table(vec![(
            "github",
            table(vec![
                ("destinations", Plain::List(vec![])),
                ("bogus", text("1")),
            ]),
        )]);
        for misshapen in [
            text("github"),
            extra_key,
            table(vec![("github", text("a:1"))]),
            Plain::List(vec![Plain::List(vec![])]),
        ] {
            assert_eq!(
                secrets_request(&misshapen),
                Err(MisshapenSecrets),
                "{misshapen:?}"
            );
        }
    }

    #[test]
    fn nothing_keeps_the_parent_and_secrets_alone_need_an_allowlist_parent() {
        let parent = allowlist(&["a.test:8080"], Some(("token", "a.test:8080")));
        let (request, narrowed) = scope_network(Some(&parent), NetworkAsk::Parent).unwrap();
        assert_eq!((request, narrowed), (NetworkRequest::Parent, None));
        let none = SecretsRequest::Named(Vec::new());
        let (request, narrowed) = scope_network(Some(&parent), NetworkAsk::Secrets(&none)).unwrap();
        assert_eq!(request, NetworkRequest::Narrowed);
        let narrowed = narrowed.unwrap();
        assert_eq!(narrowed.destinations(), parent.destinations());
        assert!(narrowed.rules.secrets.is_empty(), "secrets: [] keeps none");
        let token = SecretsRequest::Named(vec![("token".into(), None)]);
        let (_, kept) = scope_network(Some(&parent), NetworkAsk::Secrets(&token)).unwrap();
        assert_eq!(kept.unwrap().rules.secrets, parent.rules.secrets);
        let inherit = mode("inherit");
        assert!(widens(scope_network(
            Some(&inherit),
            NetworkAsk::Secrets(&none)
        )));
        assert!(widens(scope_network(None, NetworkAsk::Secrets(&none))));
    }

    #[test]
    fn another_allowlist_is_narrowed_only_with_the_parents_objects() {
        let parent = allowlist(&["a.test:443", "b.test:443"], None);
        let requested = allowlist(&["a.test:443"], None);
        let ask = |parents_objects| NetworkAsk::Policy {
            requested: &requested,
            secrets: None,
            same_as_parent: false,
            parents_objects,
        };
        let (request, narrowed) = scope_network(Some(&parent), ask(true)).unwrap();
        assert_eq!(request, NetworkRequest::Narrowed);
        assert_eq!(narrowed.unwrap().destinations(), ["a.test:443"]);
        assert!(widens(scope_network(Some(&parent), ask(false))));
    }

    #[test]
    fn a_mode_goes_to_narrow_network_and_secrets_need_an_allowlist() {
        let parent = allowlist(&["a.test:443"], None);
        let none = mode("none");
        let ask = |secrets, same_as_parent| NetworkAsk::Policy {
            requested: &none,
            secrets,
            same_as_parent,
            parents_objects: true,
        };
        let (request, narrowed) = scope_network(Some(&parent), ask(None, false)).unwrap();
        let mode = NetworkMode::None;
        let same_as_parent = false;
        assert_eq!(
            request,
            NetworkRequest::Mode {
                mode,
                same_as_parent
            }
        );
        assert!(narrowed.is_none());
        let reachable = SecretsRequest::Reachable;
        assert!(widens(scope_network(
            Some(&parent),
            ask(Some(&reachable), false)
        )));
        // The parent's own allowlist is no narrowing: narrow_network keeps the parent's.
        let same = NetworkAsk::Policy {
            requested: &parent,
            secrets: None,
            same_as_parent: true,
            parents_objects: true,
        };
        let (request, _) = scope_network(Some(&parent), same).unwrap();
        let mode = NetworkMode::Allowlist;
        assert_eq!(
            request,
            NetworkRequest::Mode {
                mode,
                same_as_parent: true
            }
        );
    }
}
