//! A program's launch options (docs/spec.md §17, §18) as the daemon's
//! protocol carries them: a run takes a timeout and an output bound, a
//! session neither; what a local launch also takes the protocol cannot
//! carry, so given, it is refused rather than dropped (10.3).

use super::error::Error;

/// What a launch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// A program run to its end (`execute_program`).
    Run,
    /// A program started as a session (`start_program`).
    Session,
}

/// The options a launch carries, besides a run's required `timeout`.
const CARRIED: [&str; 6] = [
    "context",
    "max_output_bytes",
    "environment",
    "inherit_environment",
    "scope",
    "cwd",
];

/// A local launch's limits and output options: littleghost-sandboxd
/// applies its `--policy`'s instead.
const NOT_CARRIED: [&str; 7] = [
    "output_bytes",
    "kill_on_output_limit",
    "allow_subprocesses",
    "memory_bytes",
    "tasks",
    "cpu_seconds",
    "file_bytes",
];

impl Launch {
    /// The options it requires.
    pub fn required(self) -> &'static [&'static str] {
        match self {
            Launch::Run => &["timeout"],
            Launch::Session => &[],
        }
    }

    /// The options it takes besides those: the carried ones, then the
    /// ones [`refuse_uncarried`](Self::refuse_uncarried) refuses when set
    /// (a session's `timeout` among them).
    pub fn optional(self) -> Vec<&'static str> {
        let session_only: &[&str] = match self {
            Launch::Run => &[],
            Launch::Session => &["timeout"],
        };
        [&CARRIED[..], session_only, &NOT_CARRIED[..]].concat()
    }

    /// CapabilityError for an option the protocol cannot carry; `given`
    /// tells, by name, whether an option is absent (None) or set (true:
    /// anything but false). A session takes no output bound or timeout at
    /// all (its `wait(timeout:)` bounds a wait); a program runs on the
    /// daemon's host, so it cannot inherit this process's environment.
    pub fn refuse_uncarried(self, given: impl Fn(&str) -> Option<bool>) -> Result<(), Error> {
        if let Some(name) = NOT_CARRIED.iter().find(|name| given(name) == Some(true)) {
            return Err(Error::Unsupported(format!(
                "the remote provider cannot set {name}: per call; littleghost-sandboxd applies its --policy's process_limits"
            )));
        }
        let bounded = given("max_output_bytes").is_some() || given("timeout").is_some();
        if self == Launch::Session && bounded {
            return Err(Error::Unsupported("the remote provider's sessions take no max_output_bytes: or timeout:; wait(timeout:) bounds a wait".into()));
        }
        if given("inherit_environment") == Some(true) {
            return Err(Error::Unsupported("the remote provider cannot inherit this process's environment: the program runs on the daemon's host".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given<'a>(set: &'a [(&'a str, bool)]) -> impl Fn(&str) -> Option<bool> + 'a {
        move |name| set.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    #[test]
    fn a_limit_the_protocol_cannot_carry_is_refused_when_set_only() {
        let refused = Launch::Run.refuse_uncarried(given(&[("memory_bytes", true)]));
        assert!(matches!(&refused, Err(Error::Unsupported(m)) if m.contains("memory_bytes:")));
        assert_eq!(
            refused.unwrap_err().kind(),
            crate::error::kind::Kind::Capability
        );
        assert_eq!(
            Launch::Run.refuse_uncarried(given(&[("tasks", false)])),
            Ok(())
        );
        let run = given(&[("max_output_bytes", true), ("timeout", true), ("cwd", true)]);
        assert_eq!(Launch::Run.refuse_uncarried(run), Ok(()));
    }

    #[test]
    fn a_session_takes_no_bound_or_timeout_even_false_and_none_inherits() {
        for name in ["max_output_bytes", "timeout"] {
            let refused = Launch::Session.refuse_uncarried(given(&[(name, false)]));
            assert!(
                matches!(refused, Err(Error::Unsupported(m)) if m.contains("sessions take no"))
            );
        }
        for launch in [Launch::Run, Launch::Session] {
            let refused = launch.refuse_uncarried(given(&[("inherit_environment", true)]));
            assert!(matches!(refused, Err(Error::Unsupported(m)) if m.contains("environment")));
            assert_eq!(
                launch.refuse_uncarried(given(&[("inherit_environment", false)])),
                Ok(())
            );
        }
    }

    #[test]
    fn a_run_requires_its_timeout_and_a_session_takes_it_only_to_refuse_it() {
        assert_eq!(Launch::Run.required(), ["timeout"]);
        assert!(!Launch::Run.optional().contains(&"timeout"));
        assert!(Launch::Session.required().is_empty());
        for launch in [Launch::Run, Launch::Session] {
            assert!(launch.optional().contains(&"file_bytes"));
            assert!(launch.optional().contains(&"scope"));
        }
        assert!(Launch::Session.optional().contains(&"timeout"));
    }
}
