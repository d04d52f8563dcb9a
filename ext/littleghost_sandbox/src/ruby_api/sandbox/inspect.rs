//! `Sandbox#inspect`: what a user needs, read from the
//! effective policy, and never internal state:
//! `#<CLASS provider=:NAME root="/w" files={root: :read_write} runtime_paths={} network=:none open|closed>`.

use littleghost_sandbox_core::policy::{GrantTable, Policy};

/// What an initialized sandbox shows.
pub struct Summary<'a> {
    pub class_name: &'a str,
    /// The name its class is registered under, if any.
    pub provider: Option<&'a str>,
    /// The workspace root as Ruby's `inspect` shows it; None when the workspace did not answer.
    pub root: Option<&'a str>,
    /// The effective policy; None when it is not a Policy (grants and network are then not shown).
    pub policy: Option<&'a Policy>,
    /// Between `open` and `close`.
    pub open: bool,
}

impl Summary<'_> {
    /// The text; `symbol` shows a grant name that is not a plain identifier
    /// as Ruby's `Symbol#inspect` does (`:"a-b"`).
    pub fn render(&self, symbol: impl Fn(&str) -> String) -> String {
        let mut out = format!("#<{}", self.class_name);
        if let Some(provider) = self.provider {
            out.push_str(&format!(" provider=:{provider}"));
        }
        if let Some(root) = self.root {
            out.push_str(&format!(" root={root}"));
        }
        let mut network = "default".to_owned();
        if let Some(policy) = self.policy {
            let files = grants(&policy.files, &symbol);
            let runtime_paths = grants(&policy.runtime_paths, &symbol);
            out.push_str(&format!(" files={files} runtime_paths={runtime_paths}"));
            if let Some(mode) = policy.network.as_ref().map(|n| n.mode.name()) {
                network = format!(":{mode}");
            }
        }
        out.push_str(&format!(" network={network}"));
        out.push_str(if self.open { " open>" } else { " closed>" });
        out
    }
}

/// A grant table as a Symbol-keyed Ruby Hash literal: `{root: :read_write}`.
fn grants(table: &GrantTable, symbol: &impl Fn(&str) -> String) -> String {
    let pairs: Vec<String> = table
        .entries()
        .iter()
        .map(|(name, access)| match plain(name) {
            true => format!("{name}: :{}", access.name()),
            false => format!("{} => :{}", symbol(name), access.name()),
        })
        .collect();
    format!("{{{}}}", pairs.join(", "))
}

/// An ASCII identifier, which Ruby shows as `name:` in a Hash.
fn plain(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use littleghost_sandbox_core::grants::Access;

    fn quoted(name: &str) -> String {
        format!(":{name:?}")
    }

    #[test]
    fn shows_provider_root_grants_network_and_state() {
        let policy = Policy {
            files: GrantTable::of(&[("root", Access::ReadWrite), ("source", Access::ReadOnly)]),
            runtime_paths: GrantTable::of(&[("cache-dir", Access::ReadWrite)]),
            ..Policy::default()
        };
        let summary = Summary {
            class_name: "LittleGhost::Sandboxes::Unrestricted",
            provider: Some("unrestricted"),
            root: Some("\"/w\""),
            policy: Some(&policy),
            open: false,
        };
        assert_eq!(
            summary.render(quoted),
            "#<LittleGhost::Sandboxes::Unrestricted provider=:unrestricted root=\"/w\" \
             files={root: :read_write, source: :read_only} \
             runtime_paths={:\"cache-dir\" => :read_write} network=default closed>"
        );
    }

    #[test]
    fn leaves_out_what_it_does_not_know() {
        let summary = Summary {
            class_name: "Mine",
            provider: None,
            root: None,
            policy: None,
            open: true,
        };
        assert_eq!(summary.render(quoted), "#<Mine network=default open>");
    }

    #[test]
    fn plain_names_are_ascii_identifiers() {
        assert!(plain("root") && plain("_tmp2"));
        assert!(!plain("2x") && !plain("a-b") && !plain("ok?") && !plain(""));
    }
}
