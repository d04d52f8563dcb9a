//! Secrets the child may use but never read: each has a random stand-in,
//! new per gateway, that the child receives as `LITTLEGHOST_SECRET_<NAME>`;
//! the gateway swaps it for the real value in requests it can read that go
//! to one of the secret's destinations, and refuses it anywhere else.
//!
//! The real value lives only here: `Debug` redacts it, no message or record
//! carries it, and the stand-in is a random token unrelated to it.

use std::borrow::Cow;

use super::allowlist::{parse_pattern, Destination};
use super::rules::Pattern;
use crate::error::{policy, Result};

/// The prefix of every stand-in (searching for it is cheap, and a stand-in
/// is recognisable in a log).
pub const STAND_IN_PREFIX: &str = "lgsecret_";

/// One declared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    name: String,
    value: String,
    stand_in: String,
    destinations: Vec<Pattern>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("value", &"[REDACTED]")
            .field("destinations", &self.destinations)
            .finish()
    }
}

impl Secret {
    /// Validates a declaration: a name of `[a-z0-9_]` (1..64, down-cased),
    /// a value of printable ASCII or UTF-8 without control bytes (it goes
    /// into request heads), one destination at least. Messages never carry
    /// the value. The stand-in is drawn from the kernel's random source.
    pub fn new(name: &str, value: &str, destinations: &[String]) -> Result<Secret> {
        let name = name.to_ascii_lowercase();
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid_name {
            return Err(policy(format!(
                "network secret name {name:?} must be 1..64 of [a-z0-9_]"
            )));
        }
        if value.is_empty() || value.chars().any(char::is_control) {
            return Err(policy(format!(
                "network secret {name:?} needs a non-empty value without control characters (the value is not shown)"
            )));
        }
        if destinations.is_empty() {
            return Err(policy(format!(
                "network secret {name:?} needs destinations: (\"host:port\" entries it may be sent to)"
            )));
        }
        let normalized = crate::policy::allow_entries(destinations)?;
        let destinations = normalized
            .iter()
            .map(|entry| parse_pattern(entry))
            .collect::<Result<Vec<Pattern>>>()?;
        Ok(Secret {
            name,
            value: value.to_owned(),
            stand_in: random_stand_in()?,
            destinations,
        })
    }

    /// The down-cased name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `LITTLEGHOST_SECRET_<NAME>`.
    pub fn environment_name(&self) -> String {
        format!("LITTLEGHOST_SECRET_{}", self.name.to_ascii_uppercase())
    }

    /// What the child receives instead of the value.
    pub fn stand_in(&self) -> &str {
        &self.stand_in
    }

    /// The destinations the value may be sent to.
    pub fn destinations(&self) -> &[Pattern] {
        &self.destinations
    }

    /// Whether the value may go to `destination`.
    pub fn may_reach(&self, destination: &Destination) -> bool {
        self.destinations.iter().any(|p| p.matches(destination))
    }

    /// This secret, narrowed to the destinations `keep` says (for scopes).
    pub fn with_destinations(&self, destinations: Vec<Pattern>) -> Secret {
        Secret {
            destinations,
            ..self.clone()
        }
    }
}

/// A byte a request target carries as is: RFC 3986 `pchar`, `/`, `?` and
/// `%` (a value with `%` is a percent-encoding the path rules read again).
fn fits_request_target(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:@/?".contains(&byte)
}

/// `lgsecret_` and 32 random hex digits (128 bits).
fn random_stand_in() -> Result<String> {
    let mut random = [0u8; 16];
    let mut filled = 0;
    while filled < random.len() {
        filled += rustix::rand::getrandom(
            &mut random[filled..],
            rustix::rand::GetRandomFlags::empty(),
        )
        .map_err(|e| crate::error::Error::Io(format!("cannot draw a secret stand-in: {e}")))?;
    }
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{STAND_IN_PREFIX}{hex}"))
}

/// A stand-in that appeared where its secret may not go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exfiltration {
    /// The secret's name (never its value).
    pub name: String,
}

/// The secrets of one gateway.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    secrets: Vec<Secret>,
}

impl Secrets {
    /// Refuses two secrets of one name.
    pub fn new(secrets: Vec<Secret>) -> Result<Secrets> {
        for (i, secret) in secrets.iter().enumerate() {
            if secrets[..i].iter().any(|s| s.name == secret.name) {
                return Err(policy(format!(
                    "network secret {:?} is declared twice",
                    secret.name
                )));
            }
        }
        Ok(Secrets { secrets })
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Secret> {
        self.secrets.iter()
    }

    /// The child's variables: `LITTLEGHOST_SECRET_<NAME>=<stand-in>`.
    pub fn environment(&self) -> Vec<(String, String)> {
        self.secrets
            .iter()
            .map(|s| (s.environment_name(), s.stand_in.clone()))
            .collect()
    }

    /// `text` (a request line or a header value bound for `destination`)
    /// with every stand-in replaced by its value; the first stand-in whose
    /// secret may not reach `destination` refuses the whole request.
    pub fn substitute<'t>(
        &self,
        text: &'t str,
        destination: &Destination,
    ) -> std::result::Result<Cow<'t, str>, Exfiltration> {
        if !text.contains(STAND_IN_PREFIX) {
            return Ok(Cow::Borrowed(text));
        }
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.stand_in.as_str()) {
                if !secret.may_reach(destination) {
                    return Err(Exfiltration {
                        name: secret.name.clone(),
                    });
                }
                out = Cow::Owned(out.replace(secret.stand_in.as_str(), &secret.value));
            }
        }
        Ok(out)
    }

    /// The first secret whose stand-in occurs in `bytes` and may not go
    /// where they are bound: `Some(destination)` for bytes the gateway reads
    /// toward it (a body), `None` for bytes it cannot read (a tunnel: every
    /// stand-in there is refused, the gateway could not swap it).
    /// The name of a secret whose stand-in is in `target` (a request
    /// target) and whose value could not stand there as is: a space, or any
    /// byte outside RFC 3986's characters of a target, would change the
    /// request line's shape once swapped in (docs/security.md "Secrets").
    pub fn unplaceable_in_target(&self, target: &str) -> Option<&str> {
        self.secrets
            .iter()
            .find(|secret| {
                target.contains(secret.stand_in.as_str())
                    && !secret.value.bytes().all(fits_request_target)
            })
            .map(|secret| secret.name.as_str())
    }

    pub fn find_bound_elsewhere(
        &self,
        bytes: &[u8],
        destination: Option<&Destination>,
    ) -> Option<Exfiltration> {
        let prefix = STAND_IN_PREFIX.as_bytes();
        if !bytes.windows(prefix.len()).any(|w| w == prefix) {
            return None;
        }
        self.secrets
            .iter()
            .filter(|s| destination.is_none_or(|d| !s.may_reach(d)))
            .find(|s| {
                let needle = s.stand_in.as_bytes();
                bytes.windows(needle.len()).any(|w| w == needle)
            })
            .map(|s| Exfiltration {
                name: s.name.clone(),
            })
    }

    /// `text` with every stand-in replaced by `{secret:NAME}`, for records
    /// and messages (a stand-in is never shown, nor of course a value).
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if !text.contains(STAND_IN_PREFIX) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_owned();
        for secret in &self.secrets {
            out = out.replace(
                secret.stand_in.as_str(),
                &format!("{{secret:{}}}", secret.name),
            );
        }
        Cow::Owned(out)
    }

    /// The longest stand-in, so a streaming scanner keeps that many bytes
    /// minus one between chunks.
    pub fn longest_stand_in(&self) -> usize {
        self.secrets
            .iter()
            .map(|s| s.stand_in.len())
            .max()
            .unwrap_or(0)
    }

    /// Only the secrets named in `names` (for scopes).
    pub fn only(&self, names: &[String]) -> Secrets {
        Secrets {
            secrets: self
                .secrets
                .iter()
                .filter(|s| names.contains(&s.name))
                .cloned()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, value: &str, destinations: &[&str]) -> Secret {
        let owned: Vec<String> = destinations.iter().map(|s| s.to_string()).collect();
        Secret::new(name, value, &owned).unwrap()
    }

    fn dest(text: &str) -> Destination {
        Destination::parse(text, None).unwrap()
    }

    #[test]
    fn stand_ins_are_random_and_never_the_value() {
        let a = secret("GitHub", "ghp_real", &["api.github.com:443"]);
        let b = secret("github", "ghp_real", &["api.github.com:443"]);
        assert_ne!(a.stand_in(), b.stand_in());
        assert!(a.stand_in().starts_with(STAND_IN_PREFIX));
        assert_eq!(a.stand_in().len(), STAND_IN_PREFIX.len() + 32);
        assert_eq!(a.environment_name(), "LITTLEGHOST_SECRET_GITHUB");
        let shown = format!("{a:?}");
        assert!(
            !shown.contains("ghp_real") && shown.contains("REDACTED"),
            "{shown}"
        );
    }

    /// Fuzz finding F3a: a value must never change a request's shape.
    #[test]
    fn a_value_that_would_change_a_requests_shape_is_refused_or_never_placed() {
        for bad in ["a\rb", "a\nb", "a\0b", "a\r\nX-Injected: 1"] {
            let refused = Secret::new("tok", bad, &["a.test:80".to_owned()]).unwrap_err();
            assert!(!refused.to_string().contains(bad), "{refused}");
        }
        let spaced = secret("tok", "sec ret", &["a.test:80"]);
        let plain = secret("ok", "v/../x", &["a.test:80"]);
        let (spaced_in, plain_in) = (spaced.stand_in().to_owned(), plain.stand_in().to_owned());
        let secrets = Secrets::new(vec![spaced, plain]).unwrap();
        assert_eq!(
            secrets.unplaceable_in_target(&format!("/x?t={spaced_in}")),
            Some("tok")
        );
        assert_eq!(
            secrets.unplaceable_in_target(&format!("/x?t={plain_in}")),
            None
        );
        assert_eq!(secrets.unplaceable_in_target("/x"), None);
    }

    #[test]
    fn substitution_only_toward_the_secrets_destinations() {
        let secrets =
            Secrets::new(vec![secret("github", "ghp_real", &["api.github.com:443"])]).unwrap();
        let stand_in = secrets.iter().next().unwrap().stand_in().to_owned();
        let header = format!("Bearer {stand_in}");
        let swapped = secrets
            .substitute(&header, &dest("api.github.com:443"))
            .unwrap();
        assert_eq!(swapped, "Bearer ghp_real");
        let refused = secrets
            .substitute(&header, &dest("evil.test:443"))
            .unwrap_err();
        assert_eq!(refused.name, "github");
        assert!(matches!(
            secrets.substitute("no secret here", &dest("evil.test:443")),
            Ok(Cow::Borrowed(_))
        ));
        assert_eq!(
            secrets.find_bound_elsewhere(format!("x={stand_in}&y").as_bytes(), None),
            Some(Exfiltration {
                name: "github".into()
            })
        );
        assert_eq!(secrets.find_bound_elsewhere(b"lgsecret_0000", None), None);
    }

    #[test]
    fn declarations_are_checked_without_showing_the_value() {
        let error = |name: &str, value: &str, destinations: &[&str]| {
            let owned: Vec<String> = destinations.iter().map(|s| s.to_string()).collect();
            Secret::new(name, value, &owned)
                .unwrap_err()
                .message()
                .to_owned()
        };
        assert!(error("a-b", "v", &["a.test:1"]).contains("[a-z0-9_]"));
        let text = error("a", "top\nsecret", &["a.test:1"]);
        assert!(text.contains("control") && !text.contains("top"), "{text}");
        assert!(error("a", "v", &[]).contains("destinations"));
        assert!(error("a", "v", &["a.test"]).contains("missing a port"));
        let twice = Secrets::new(vec![
            secret("a", "1", &["a.test:1"]),
            secret("A", "2", &["a.test:1"]),
        ]);
        assert!(twice.unwrap_err().message().contains("declared twice"));
    }
}
