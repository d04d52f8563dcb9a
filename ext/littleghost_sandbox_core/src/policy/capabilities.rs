//! Capabilities (SPEC §4): what a backend can enforce, with the feature
//! aliases of 4.3 and the intersection a scope narrows by.

use super::declared::{self, givens, Declared};
use super::Error;
use super::{Given, NetworkMode};
use crate::error::Result;

/// The features a backend reports when it is not told otherwise (4.1).
pub const DEFAULT_FEATURES: [&str; 3] = ["filesystem_read", "filesystem_list", "process_execute"];

/// The keywords a declaration of capabilities takes.
pub const KEYWORDS: [&str; 3] = ["features", "network_modes", "isolation"];

/// Short names accepted wherever a feature is named (4.3).
const ALIASES: [(&str, &str); 6] = [
    ("read", "filesystem_read"),
    ("list", "filesystem_list"),
    ("write", "filesystem_write"),
    ("replace", "filesystem_replace"),
    ("execute", "process_execute"),
    ("spawn", "process_spawn"),
];

/// The canonical name of a feature name (`read` → `filesystem_read`); other names pass through.
pub fn canonical_feature(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map(|(_, full)| *full)
        .unwrap_or(name)
}

/// The canonical name of a given feature; ArgumentError when it is not a name.
pub fn normalize_feature(feature: &Given<'_>) -> Result<String> {
    match feature.name() {
        Some(name) => Ok(canonical_feature(name).to_owned()),
        None => Err(Error::FeatureNotAName {
            shown: feature.shown(),
        }
        .into()),
    }
}

/// A frozen capability report: features (canonical names, unique, in the
/// given order), the network modes the backend can enforce, and a
/// descriptive isolation name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Capabilities {
    pub features: Vec<String>,
    pub network_modes: Vec<NetworkMode>,
    pub isolation: String,
}

impl Default for Capabilities {
    /// `Capabilities.new`: the default features, `[:inherit]`, `:none`.
    fn default() -> Capabilities {
        Capabilities {
            features: DEFAULT_FEATURES.iter().map(|f| f.to_string()).collect(),
            network_modes: vec![NetworkMode::Inherit],
            isolation: "none".to_owned(),
        }
    }
}

impl Capabilities {
    /// Validates the constructor's inputs (None = the default for that field):
    /// aliases resolved and duplicates removed in both lists, network modes
    /// limited to `:inherit`, `:none` and `:allowlist` (all unsupported ones
    /// named), the isolation a name.
    pub fn new(
        features: Option<&[Given<'_>]>,
        network_modes: Option<&[Given<'_>]>,
        isolation: Option<&Given<'_>>,
    ) -> Result<Capabilities> {
        let defaults = Capabilities::default();
        let features = match features {
            Some(list) => unique_names(list)?,
            None => defaults.features,
        };
        let network_modes = match network_modes {
            Some(list) => network_modes_of(unique_names(list)?)?,
            None => defaults.network_modes,
        };
        let isolation = match isolation {
            Some(given) => given
                .name()
                .map(str::to_owned)
                .ok_or(Error::IsolationNotAName)?,
            None => defaults.isolation,
        };
        Ok(Capabilities {
            features,
            network_modes,
            isolation,
        })
    }

    /// [`Capabilities::new`] from its keywords `features`, `network_modes`
    /// (lists of names) and `isolation` (a name).
    pub fn declared<D: Declared>(keywords: &D) -> std::result::Result<Capabilities, D::Error> {
        let [features, network_modes, isolation] = declared::keywords(keywords, KEYWORDS)?;
        let features = features.as_ref().map(givens).transpose()?;
        let network_modes = network_modes.as_ref().map(givens).transpose()?;
        let isolation = isolation.map(|name| name.given()).transpose()?;
        let capabilities = Capabilities::new(
            features.as_deref(),
            network_modes.as_deref(),
            isolation.as_ref(),
        );
        capabilities.map_err(|error| keywords.misshapen(error))
    }

    /// Whether `feature` (any alias) is supported; for `network`, whether the
    /// mode `mode` names is (any mode when it is absent or nothing; none
    /// when it is no name).
    pub fn supports_declared<D: Declared>(
        &self,
        feature: &D,
        mode: Option<D>,
    ) -> std::result::Result<bool, D::Error> {
        let feature = normalize_feature(&feature.given()?).map_err(|e| feature.misshapen(e))?;
        if feature != "network" {
            return Ok(self.supports(&feature));
        }
        match declared::present(mode) {
            None => Ok(self.supports_network(None)),
            Some(mode) => Ok(mode
                .given()?
                .name()
                .is_some_and(|name| self.supports_network(Some(name)))),
        }
    }

    /// A report from names a backend knows to be valid (no aliases, no duplicates expected).
    pub fn of(features: &[&str], network_modes: &[NetworkMode], isolation: &str) -> Capabilities {
        let mut out = Capabilities {
            features: Vec::new(),
            network_modes: Vec::new(),
            isolation: isolation.to_owned(),
        };
        for feature in features {
            let name = canonical_feature(feature).to_owned();
            if !out.features.contains(&name) {
                out.features.push(name);
            }
        }
        for mode in network_modes {
            if !out.network_modes.contains(mode) {
                out.network_modes.push(*mode);
            }
        }
        out
    }

    /// No features and no network modes (10.4, 12.3).
    pub fn empty() -> Capabilities {
        Capabilities::of(&[], &[], "none")
    }

    /// Whether `feature` (any alias) is supported.
    pub fn supports(&self, feature: &str) -> bool {
        let feature = canonical_feature(feature);
        self.features.iter().any(|f| f == feature)
    }

    /// Whether any network mode is available, or (with `mode`) that one.
    pub fn supports_network(&self, mode: Option<&str>) -> bool {
        match mode {
            None => !self.network_modes.is_empty(),
            Some(name) => self.network_modes.iter().any(|m| m.name() == name),
        }
    }

    /// The features and network modes both support, in the receiver's order,
    /// with the receiver's isolation. `other_features` are names compared
    /// exactly (no alias resolution), as the other side reports them.
    pub fn intersect(&self, other_features: &[String], other_modes: &[String]) -> Capabilities {
        Capabilities {
            features: self
                .features
                .iter()
                .filter(|f| other_features.contains(f))
                .cloned()
                .collect(),
            network_modes: self
                .network_modes
                .iter()
                .filter(|m| other_modes.iter().any(|o| o == m.name()))
                .copied()
                .collect(),
            isolation: self.isolation.clone(),
        }
    }
}

fn unique_names(list: &[Given<'_>]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for item in list {
        let name = normalize_feature(item)?;
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(out)
}

fn network_modes_of(names: Vec<String>) -> Result<Vec<NetworkMode>> {
    let unsupported: Vec<String> = names
        .iter()
        .filter(|name| NetworkMode::parse(name).is_none())
        .cloned()
        .collect();
    if !unsupported.is_empty() {
        return Err(super::Error::UnsupportedNetworkModes(unsupported).into());
    }
    Ok(names.iter().filter_map(|n| NetworkMode::parse(n)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(names: &[&str]) -> Vec<Given<'static>> {
        names.iter().map(|n| Given::symbol(n)).collect()
    }

    #[test]
    fn defaults_aliases_and_order() {
        assert_eq!(
            Capabilities::new(None, None, None).unwrap(),
            Capabilities::default()
        );
        let caps = Capabilities::new(
            Some(&given(&[
                "spawn",
                "filesystem_read",
                "process_spawn",
                "gpu",
                "read",
            ])),
            Some(&given(&["none", "allowlist"])),
            Some(&Given::symbol("namespace")),
        )
        .unwrap();
        assert_eq!(caps.features, ["process_spawn", "filesystem_read", "gpu"]);
        assert_eq!(
            caps.network_modes,
            [NetworkMode::None, NetworkMode::Allowlist]
        );
        assert_eq!(caps.isolation, "namespace");
        assert!(caps.supports("read") && caps.supports("spawn") && !caps.supports("write"));
        assert!(caps.supports_network(None) && caps.supports_network(Some("none")));
        assert!(!caps.supports_network(Some("inherit")));
    }

    #[test]
    fn refuses_unsupported_modes_and_non_names() {
        let err =
            Capabilities::new(None, Some(&given(&["none", "bridge", "tor"])), None).unwrap_err();
        assert_eq!(
            err,
            Error::UnsupportedNetworkModes(vec!["bridge".into(), "tor".into()]).into()
        );
        assert_eq!(err.kind(), crate::error::Kind::Argument);
        let err = Capabilities::new(Some(&[Given::other("1")]), None, None).unwrap_err();
        assert_eq!(err, Error::FeatureNotAName { shown: "1".into() }.into());
        let err = Capabilities::new(None, None, Some(&Given::other("1"))).unwrap_err();
        assert_eq!(err, Error::IsolationNotAName.into());
        assert_eq!(err.kind(), crate::error::Kind::Argument);
    }

    #[test]
    fn intersect_keeps_the_receivers_order_and_isolation() {
        let mine = Capabilities::of(
            &["process_execute", "filesystem_read", "filesystem_write"],
            &[NetworkMode::Inherit, NetworkMode::None],
            "namespace",
        );
        let both = mine.intersect(
            &[
                "filesystem_write".into(),
                "process_execute".into(),
                "read".into(),
            ],
            &["none".into(), "allowlist".into()],
        );
        assert_eq!(both.features, ["process_execute", "filesystem_write"]);
        assert_eq!(both.network_modes, [NetworkMode::None]);
        assert_eq!(both.isolation, "namespace");
    }

    #[test]
    fn a_declaration_gives_lists_of_names_and_an_isolation_name() {
        use crate::policy::network_requests::tests::Json;
        use serde_json::json;
        let keywords = Json(json!({":features": ["read", "read"], ":network_modes": null}));
        let caps = Capabilities::declared(&keywords).unwrap();
        assert_eq!(caps.features, ["filesystem_read"]);
        assert!(caps.network_modes.is_empty());
        assert_eq!(caps.isolation, "none");
        let no_name = Json(json!({":isolation": 1}));
        let error = Capabilities::declared(&no_name).unwrap_err();
        assert!(matches!(
            error,
            crate::Error::Declaration(Error::IsolationNotAName)
        ));
    }

    #[test]
    fn a_declared_feature_or_network_mode_is_looked_up_by_name() {
        use crate::policy::network_requests::tests::Json;
        use serde_json::json;
        let caps = Capabilities::of(&["filesystem_read"], &[NetworkMode::None], "none");
        let supports = |feature, mode: Option<serde_json::Value>| {
            caps.supports_declared(&Json(feature), mode.map(Json))
                .unwrap()
        };
        assert!(supports(json!("read"), None));
        assert!(!supports(json!("write"), None));
        assert!(supports(json!("network"), None));
        assert!(supports(json!("network"), Some(json!(null))));
        assert!(supports(json!("network"), Some(json!("none"))));
        assert!(!supports(json!("network"), Some(json!("inherit"))));
        assert!(!supports(json!("network"), Some(json!(1))));
        assert!(caps.supports_declared(&Json(json!(1)), None).is_err());
    }
}
