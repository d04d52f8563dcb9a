//! Limits (SPEC §5): byte and entry caps for file operations and captured
//! output. The names, defaults and the rules a value must pass live here;
//! the binding only turns each Ruby value into a [`LimitValue`] with Ruby's
//! `Integer()`.

use super::declared::Declared;
use super::Given;
use crate::error::{policy, Result};
use crate::fs::FsLimits;
use crate::process::capture::DEFAULT_OUTPUT_BYTES;

/// The limit names, in the order Ruby shows them.
pub const LIMIT_NAMES: [&str; 4] = ["read_bytes", "write_bytes", "list_entries", "output_bytes"];

/// A validated set of limits, each a positive count no larger than `i64::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// The largest file `read` returns, in bytes.
    pub read_bytes: u64,
    /// The largest content `write` or `replace` accepts, in bytes.
    pub write_bytes: u64,
    /// The most entries `list` returns.
    pub list_entries: u64,
    /// The most bytes of process output captured per stream.
    pub output_bytes: u64,
}

impl Default for Limits {
    /// The defaults of 5.1.
    fn default() -> Limits {
        Limits {
            read_bytes: 1_000_000,
            write_bytes: 1_000_000,
            list_entries: 10_000,
            output_bytes: DEFAULT_OUTPUT_BYTES,
        }
    }
}

/// A caller's value for one limit, after Ruby's `Integer()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitValue {
    /// An integer that fits in an `i64`.
    Integer(i64),
    /// An integer above `i64::MAX`.
    TooLarge,
    /// An integer below `i64::MIN`.
    TooSmall,
    /// A value `Integer()` refused.
    NotInteger,
}

impl Limits {
    /// Every limit by name, in [`LIMIT_NAMES`] order.
    pub fn fields(&self) -> [(&'static str, u64); 4] {
        [
            ("read_bytes", self.read_bytes),
            ("write_bytes", self.write_bytes),
            ("list_entries", self.list_entries),
            ("output_bytes", self.output_bytes),
        ]
    }

    /// The caps the filesystem broker enforces.
    pub fn fs(&self) -> FsLimits {
        FsLimits {
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            list_entries: self.list_entries,
        }
    }

    fn slot(&mut self, name: &str) -> Option<&mut u64> {
        match name {
            "read_bytes" => Some(&mut self.read_bytes),
            "write_bytes" => Some(&mut self.write_bytes),
            "list_entries" => Some(&mut self.list_entries),
            "output_bytes" => Some(&mut self.output_bytes),
            _ => None,
        }
    }

    /// The defaults with `given` merged over them. Every unknown name is
    /// refused first, all of them in one PolicyError; then each known value
    /// is converted by `convert` (in [`LIMIT_NAMES`] order) and must be a
    /// positive integer no larger than `i64::MAX`. A conversion's own error
    /// (not a refusal) is the outer `Err`.
    pub fn parse<'a, V, E>(
        given: Vec<(Given<'a>, V)>,
        mut convert: impl FnMut(V) -> std::result::Result<LimitValue, E>,
    ) -> std::result::Result<Result<Limits>, E> {
        let unknown: Vec<String> = given
            .iter()
            .filter(|(name, _)| !name.name().is_some_and(|n| LIMIT_NAMES.contains(&n)))
            .map(|(name, _)| {
                name.name()
                    .map(str::to_owned)
                    .unwrap_or_else(|| name.shown())
            })
            .collect();
        if !unknown.is_empty() {
            return Ok(Err(policy(format!(
                "unknown sandbox limits: {} (known: {})",
                unknown.join(", "),
                LIMIT_NAMES.join(", ")
            ))));
        }
        let mut given: Vec<(String, Option<V>)> = given
            .into_iter()
            .map(|(name, value)| (name.name().unwrap_or_default().to_owned(), Some(value)))
            .collect();
        let mut limits = Limits::default();
        for name in LIMIT_NAMES {
            // A later duplicate wins, as in a Hash.
            let Some(value) = given.iter_mut().rev().find(|(n, _)| n == name) else {
                continue;
            };
            let value = convert(value.1.take().expect("each value is taken once"))?;
            match check(name, value) {
                Ok(count) => *limits.slot(name).expect("a known name") = count,
                Err(error) => return Ok(Err(error)),
            }
        }
        Ok(Ok(limits))
    }
}

impl Limits {
    /// [`Limits::parse`] of the keyword table `keywords`: each key named by
    /// its keyword (another key by how it reads), each value converted by
    /// `convert`.
    pub fn declared<D: Declared>(
        keywords: &D,
        convert: impl FnMut(D) -> std::result::Result<LimitValue, D::Error>,
    ) -> std::result::Result<Limits, D::Error> {
        let mut given = Vec::new();
        for (key, value) in keywords.pairs()?.unwrap_or_default() {
            let shown = key.shown()?;
            let name = Given::new(key.keyword(), move || shown.clone());
            given.push((name, value));
        }
        Limits::parse(given, convert)?.map_err(|error| keywords.misshapen(error))
    }
}

/// `value` as a count for the limit `name`, or the PolicyError Ruby shows.
fn check(name: &str, value: LimitValue) -> Result<u64> {
    match value {
        LimitValue::NotInteger => Err(policy(format!("sandbox {name} must be an integer"))),
        LimitValue::TooSmall => Err(policy(format!("sandbox {name} must be positive"))),
        LimitValue::Integer(n) if n <= 0 => Err(policy(format!("sandbox {name} must be positive"))),
        // Every limit becomes a byte or entry count in the core; a value
        // beyond the platform's signed 64-bit range (off_t, ssize_t) could not
        // be carried, and would fail at first use instead of here.
        LimitValue::TooLarge => Err(policy(format!(
            "sandbox {name} must be at most {}",
            i64::MAX
        ))),
        LimitValue::Integer(n) => Ok(n as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn parse(pairs: &[(&str, LimitValue)]) -> Result<Limits> {
        let given = pairs
            .iter()
            .map(|(name, value)| (Given::symbol(name), *value))
            .collect();
        Limits::parse(given, Ok::<_, ()>).unwrap()
    }

    #[test]
    fn defaults_and_merging() {
        let defaults = Limits::default();
        assert_eq!(
            defaults.fields(),
            [
                ("read_bytes", 1_000_000),
                ("write_bytes", 1_000_000),
                ("list_entries", 10_000),
                ("output_bytes", 1_000_000)
            ]
        );
        assert_eq!(parse(&[]).unwrap(), defaults);
        let merged = parse(&[
            ("read_bytes", LimitValue::Integer(10)),
            ("list_entries", LimitValue::Integer(16)),
        ])
        .unwrap();
        assert_eq!(merged.read_bytes, 10);
        assert_eq!(merged.list_entries, 16);
        assert_eq!(merged.write_bytes, 1_000_000);
        assert_eq!(merged.fs().list_entries, 16);
        let last = parse(&[
            ("read_bytes", LimitValue::Integer(1)),
            ("read_bytes", LimitValue::Integer(2)),
        ]);
        assert_eq!(last.unwrap().read_bytes, 2);
    }

    #[test]
    fn unknown_names_are_listed_before_any_value_is_converted() {
        let given = vec![
            (Given::symbol("read_bytes"), 1),
            (Given::symbol("memory"), 2),
            (Given::other("\"cpu\""), 3),
        ];
        let error = Limits::parse(given, |_| -> std::result::Result<LimitValue, ()> {
            panic!("converted before the names were checked")
        })
        .unwrap()
        .unwrap_err();
        assert_eq!(
            error,
            Error::Policy(
                "unknown sandbox limits: memory, \"cpu\" (known: read_bytes, write_bytes, list_entries, output_bytes)"
                    .into()
            )
        );
    }

    #[test]
    fn values_must_be_positive_integers_in_range() {
        let message = |name, value| match parse(&[(name, value)]) {
            Err(Error::Policy(message)) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message("read_bytes", LimitValue::NotInteger),
            "sandbox read_bytes must be an integer"
        );
        assert_eq!(
            message("output_bytes", LimitValue::Integer(0)),
            "sandbox output_bytes must be positive"
        );
        assert_eq!(
            message("read_bytes", LimitValue::Integer(-5)),
            "sandbox read_bytes must be positive"
        );
        assert_eq!(
            message("write_bytes", LimitValue::TooSmall),
            "sandbox write_bytes must be positive"
        );
        assert_eq!(
            message("list_entries", LimitValue::TooLarge),
            format!("sandbox list_entries must be at most {}", i64::MAX)
        );
        assert_eq!(
            parse(&[("output_bytes", LimitValue::Integer(i64::MAX))])
                .unwrap()
                .output_bytes,
            i64::MAX as u64
        );
    }

    #[test]
    fn a_conversion_error_is_passed_through() {
        let given = vec![(Given::symbol("read_bytes"), 1)];
        assert_eq!(Limits::parse(given, |_| Err("interrupt")), Err("interrupt"));
    }

    #[test]
    fn a_declaration_names_its_keys_and_converts_each_value() {
        use crate::policy::network_requests::tests::Json;
        use serde_json::json;
        let integer = |value: Json| {
            Ok(value
                .0
                .as_i64()
                .map_or(LimitValue::NotInteger, LimitValue::Integer))
        };
        let limits = Limits::declared(&Json(json!({":read_bytes": 5})), integer).unwrap();
        assert_eq!(limits.read_bytes, 5);
        assert_eq!(limits.list_entries, Limits::default().list_entries);
        let error = Limits::declared(&Json(json!({":reads": 1, "plain": 2})), integer).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("unknown sandbox limits: reads, \"plain\""),
            "{error}"
        );
        let error = Limits::declared(&Json(json!({":tasks": 1})), integer).unwrap_err();
        assert_eq!(error.kind(), crate::error::Kind::Policy);
    }
}
