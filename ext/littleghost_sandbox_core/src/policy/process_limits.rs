//! The whole-tree launch limits a caller names (docs/spec.md §25 L.1-L.3):
//! the `memory_bytes`, `tasks` and `cpu_seconds` of a launch, and the
//! defaults a sandbox's `process_limits` option gives every launch. Which
//! names exist and which values count is decided here; how a call's limits
//! combine with the defaults and how they are enforced is
//! [`crate::limits::plan`]'s.

use crate::limits::plan::Requested;

/// The limit names, in the order [`Requested`] holds them.
pub const PROCESS_LIMIT_KEYS: [&str; 3] = ["memory_bytes", "tasks", "cpu_seconds"];

/// A limit value as the caller gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitGiven {
    /// An integer (saturated to the range of `i128`).
    Integer(i128),
    /// Anything else (a fraction, a numeric text, ...): refused, never truncated.
    NotInteger,
}

/// Why a limit was refused; the caller words it in its own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessLimitError {
    /// The value of the named limit is not a positive integer.
    NotPositive(String),
    /// A `process_limits` entry names no limit; `shown` is its key as the caller wrote it.
    Unknown { shown: String },
}

/// A positive count from an integer; anything beyond `u64` is as good as
/// unlimited and saturates.
pub fn positive(name: &str, given: LimitGiven) -> Result<u64, ProcessLimitError> {
    match given {
        LimitGiven::Integer(n) if n > 0 => Ok(u64::try_from(n).unwrap_or(u64::MAX)),
        _ => Err(ProcessLimitError::NotPositive(name.to_owned())),
    }
}

/// The three limits from their values (`None`: unlimited), in [`PROCESS_LIMIT_KEYS`] order.
pub fn requested(values: [Option<LimitGiven>; 3]) -> Result<Requested, ProcessLimitError> {
    let [memory_bytes, tasks, cpu_seconds] = values;
    let one = |value: Option<LimitGiven>, name| value.map(|v| positive(name, v)).transpose();
    Ok(Requested {
        memory_bytes: one(memory_bytes, PROCESS_LIMIT_KEYS[0])?,
        tasks: one(tasks, PROCESS_LIMIT_KEYS[1])?,
        cpu_seconds: one(cpu_seconds, PROCESS_LIMIT_KEYS[2])?,
        own_tree_if_possible: false,
    })
}

/// One entry of a `process_limits` table: its key's name (`None` for a key
/// that is no name), the key as the caller wrote it, and the value (`None`
/// for nil).
pub struct LimitEntry<'a> {
    pub name: Option<&'a str>,
    pub shown: &'a str,
    pub value: Option<LimitGiven>,
}

/// The `process_limits` defaults from the entries of its table: every key
/// must be a limit name (the first that is not is named), then every value
/// a positive integer or nil. A later duplicate key wins.
pub fn process_limit_defaults(entries: &[LimitEntry<'_>]) -> Result<Requested, ProcessLimitError> {
    let mut values: [Option<LimitGiven>; 3] = [None; 3];
    for entry in entries {
        let known = entry
            .name
            .and_then(|name| PROCESS_LIMIT_KEYS.iter().position(|key| *key == name));
        match known {
            Some(index) => values[index] = entry.value,
            None => {
                return Err(ProcessLimitError::Unknown {
                    shown: entry.shown.to_owned(),
                })
            }
        }
    }
    requested(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(
        name: Option<&'a str>,
        shown: &'a str,
        value: Option<LimitGiven>,
    ) -> LimitEntry<'a> {
        LimitEntry { name, shown, value }
    }

    #[test]
    fn positive_accepts_counts_and_saturates() {
        assert_eq!(positive("tasks", LimitGiven::Integer(3)), Ok(3));
        assert_eq!(
            positive("tasks", LimitGiven::Integer(i128::MAX)),
            Ok(u64::MAX)
        );
    }

    #[test]
    fn positive_refuses_zero_negative_and_non_integers() {
        for given in [
            LimitGiven::Integer(0),
            LimitGiven::Integer(-1),
            LimitGiven::NotInteger,
        ] {
            assert_eq!(
                positive("memory_bytes", given),
                Err(ProcessLimitError::NotPositive("memory_bytes".into()))
            );
        }
    }

    #[test]
    fn requested_names_the_bad_limit() {
        let bad = requested([None, None, Some(LimitGiven::NotInteger)]);
        assert_eq!(
            bad,
            Err(ProcessLimitError::NotPositive("cpu_seconds".into()))
        );
        let good = requested([
            Some(LimitGiven::Integer(10)),
            None,
            Some(LimitGiven::Integer(2)),
        ]);
        let good = good.unwrap();
        assert_eq!(good.memory_bytes, Some(10));
        assert_eq!(good.tasks, None);
        assert_eq!(good.cpu_seconds, Some(2));
    }

    #[test]
    fn defaults_refuse_unknown_keys_before_values() {
        let entries = [
            entry(Some("tasks"), ":tasks", Some(LimitGiven::NotInteger)),
            entry(None, "1", None),
        ];
        let shown = "1".to_owned();
        assert_eq!(
            process_limit_defaults(&entries),
            Err(ProcessLimitError::Unknown { shown })
        );
    }

    #[test]
    fn defaults_take_nil_as_unlimited_and_later_keys_win() {
        let entries = [
            entry(Some("tasks"), ":tasks", Some(LimitGiven::Integer(5))),
            entry(Some("memory_bytes"), "\"memory_bytes\"", None),
            entry(Some("tasks"), ":tasks", Some(LimitGiven::Integer(7))),
        ];
        let parsed = process_limit_defaults(&entries).unwrap();
        assert_eq!(parsed.tasks, Some(7));
        assert_eq!(parsed.memory_bytes, None);
    }
}
