//! The limits' unit tests, and (`host`) limits hit for real on this host.

mod host;

use super::*;

#[test]
fn messages_name_the_limit() {
    assert_eq!(
        LimitExceeded::Memory { bytes: 64 }.message(),
        "Program memory exceeded 64 bytes"
    );
    assert_eq!(
        LimitExceeded::Cpu { seconds: 1 }.message(),
        "Program CPU time exceeded 1 second"
    );
}

#[test]
fn a_refusal_names_the_first_unenforceable_limit() {
    let mut enforcement = Enforcement::none(Unavailable::NotWritable {
        dir: "/x".into(),
        reason: "denied".into(),
    });
    enforcement.memory = Ok(());
    let memory_only = ProcessLimits {
        memory_bytes: Some(1),
        ..ProcessLimits::default()
    };
    assert_eq!(enforcement.refusal(&memory_only), None);
    let tasks = ProcessLimits {
        tasks: Some(1),
        ..memory_only.clone()
    };
    assert_eq!(
        enforcement.refusal(&tasks).as_deref(),
        Some("cannot create a cgroup in /x: denied")
    );
    assert!(!ProcessLimits::default().wants_cgroup());
}
