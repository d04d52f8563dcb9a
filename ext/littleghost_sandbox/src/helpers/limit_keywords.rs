//! The limit keywords of `execute_program`/`start_program` and of the backend
//! option `process_limits:` (docs/spec.md §25 L.1-L.3): which names exist and
//! which Ruby values are accepted. Each Ruby value is classified as a [`Given`];
//! an `Err` is the ArgumentError's message. How a call's limits combine with a
//! sandbox's defaults and how they are enforced is the core's
//! (`littleghost_sandbox_core::limits::plan`).

use littleghost_sandbox_core::limits::plan::Requested;

/// The limit keywords, in the order [`Requested`] holds them.
pub const KEYS: [&str; 3] = ["memory_bytes", "tasks", "cpu_seconds"];

/// The message for a `process_limits:` option that is not a Hash.
pub const NOT_A_HASH: &str = "process_limits must be a Hash of memory_bytes:, tasks:, cpu_seconds:";

/// A value as the caller gave it, classified by the binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// An Integer (saturated to the range of `i128`).
    Integer(i128),
    /// Anything else (a Float, a numeric String, ...): refused, never truncated.
    NotInteger,
}

/// The ArgumentError message for a value of `name` that is not a positive Integer.
pub fn not_positive(name: &str) -> String {
    format!("{name} must be a positive Integer")
}

/// A positive count from an Integer; anything beyond `u64` is as good as
/// unlimited and saturates.
pub fn positive(name: &str, given: Given) -> Result<u64, String> {
    match given {
        Given::Integer(n) if n > 0 => Ok(u64::try_from(n).unwrap_or(u64::MAX)),
        _ => Err(not_positive(name)),
    }
}

/// The three limits from their values (`None`: unlimited), in [`KEYS`] order.
pub fn requested(values: [Option<Given>; 3]) -> Result<Requested, String> {
    let [memory_bytes, tasks, cpu_seconds] = values;
    let one = |value: Option<Given>, name: &str| value.map(|v| positive(name, v)).transpose();
    Ok(Requested {
        memory_bytes: one(memory_bytes, KEYS[0])?,
        tasks: one(tasks, KEYS[1])?,
        cpu_seconds: one(cpu_seconds, KEYS[2])?,
        own_tree_if_possible: false,
    })
}

/// One entry of a `process_limits:` Hash: its key's name (a Symbol's or a
/// String's, `None` for other keys), the key as `inspect` shows it, and the
/// value (`None` for nil).
pub struct Entry<'a> {
    pub name: Option<&'a str>,
    pub shown: &'a str,
    pub value: Option<Given>,
}

/// The `process_limits:` defaults from the entries of its Hash: every key
/// must be a limit keyword (the first that is not is named), then every
/// value a positive Integer or nil. A later duplicate key wins.
pub fn defaults(entries: &[Entry<'_>]) -> Result<Requested, String> {
    let mut values: [Option<Given>; 3] = [None; 3];
    for entry in entries {
        match entry
            .name
            .and_then(|name| KEYS.iter().position(|known| *known == name))
        {
            Some(index) => values[index] = entry.value,
            None => {
                return Err(format!(
                    "unknown process limit {} (known: memory_bytes, tasks, cpu_seconds)",
                    entry.shown
                ))
            }
        }
    }
    requested(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_accepts_counts_and_saturates() {
        assert_eq!(positive("tasks", Given::Integer(3)), Ok(3));
        assert_eq!(positive("tasks", Given::Integer(i128::MAX)), Ok(u64::MAX));
    }

    #[test]
    fn positive_refuses_zero_negative_and_non_integers() {
        for given in [Given::Integer(0), Given::Integer(-1), Given::NotInteger] {
            assert_eq!(
                positive("memory_bytes", given),
                Err("memory_bytes must be a positive Integer".to_string())
            );
        }
    }

    #[test]
    fn requested_names_the_bad_keyword() {
        let bad = requested([None, None, Some(Given::NotInteger)]);
        assert_eq!(bad, Err("cpu_seconds must be a positive Integer".into()));
        let good = requested([Some(Given::Integer(10)), None, Some(Given::Integer(2))]).unwrap();
        assert_eq!(good.memory_bytes, Some(10));
        assert_eq!(good.tasks, None);
        assert_eq!(good.cpu_seconds, Some(2));
    }

    #[test]
    fn defaults_refuse_unknown_keys_before_values() {
        let entries = [
            Entry {
                name: Some("tasks"),
                shown: ":tasks",
                value: Some(Given::NotInteger),
            },
            Entry {
                name: None,
                shown: "1",
                value: None,
            },
        ];
        assert_eq!(
            defaults(&entries),
            Err("unknown process limit 1 (known: memory_bytes, tasks, cpu_seconds)".into())
        );
    }

    #[test]
    fn defaults_take_nil_as_unlimited_and_later_keys_win() {
        let entries = [
            Entry {
                name: Some("tasks"),
                shown: ":tasks",
                value: Some(Given::Integer(5)),
            },
            Entry {
                name: Some("memory_bytes"),
                shown: "\"memory_bytes\"",
                value: None,
            },
            Entry {
                name: Some("tasks"),
                shown: ":tasks",
                value: Some(Given::Integer(7)),
            },
        ];
        let parsed = defaults(&entries).unwrap();
        assert_eq!(parsed.tasks, Some(7));
        assert_eq!(parsed.memory_bytes, None);
    }
}
