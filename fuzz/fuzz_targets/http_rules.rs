//! HTTP rules (`network/rules.rs`): an allow entry with methods and path
//! prefixes, and a plain-HTTP request to its destination. Whatever the
//! engine forwards uses an allowed method and lies under an allowed prefix
//! however a server reads its path: as sent or decoded once, twice or three
//! times, its query split off before or after decoding, `\` as `/`, `;`
//! parameters kept or stripped, dot segments resolved (the model in
//! `fuzz/models/paths.rs`, which calls nothing of the gateway's). The rule is
//! declared through the policy's own validation, so a prefix it refuses is
//! never fuzzed.
//!
//! Input, as text: the rule's methods (`,`-separated, none for any), its
//! prefixes (space-separated, none for any), the request's method, each on
//! its own line, then the request target after `http://a.test`, e.g.
//! `GET\n/repos/org/\nGET\n/repos/org/x`.
#![no_main]

#[path = "../models/paths.rs"]
mod paths;

use libfuzzer_sys::fuzz_target;
use littleghost_sandbox_core::network::{fuzz_forward, Allowlist, Secrets};
use littleghost_sandbox_core::policy::network_rules::{AllowRequest, NetworkRules, RuleRequest};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(4, '\n');
    let (Some(methods), Some(paths), Some(method), Some(target)) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return;
    };
    let methods: Vec<String> = methods.split_terminator(',').map(str::to_owned).collect();
    let paths: Vec<String> = paths.split_terminator(' ').map(str::to_owned).collect();
    let rule = RuleRequest {
        keys: vec!["destination".into(), "methods".into(), "paths".into()],
        destination: Some("a.test:80".into()),
        inspect: None,
        methods: methods.clone(),
        paths: paths.clone(),
    };
    let Ok(rules) = NetworkRules::new(&[AllowRequest::Rule(rule)], &[], None) else {
        return;
    };
    let allowlist = Allowlist::with_rules(rules.rules().unwrap(), true).unwrap();
    let raw = format!("{method} http://a.test{target} HTTP/1.1\r\nHost: a.test");
    let Ok(forwarded) = fuzz_forward(raw.as_bytes(), Some(&allowlist), &Secrets::default()) else {
        return;
    };
    let line = forwarded.head.split(|&b| b == b'\r').next().unwrap();
    let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    assert_eq!(fields.len(), 3);
    let (sent_method, sent_target) = (fields[0], fields[1]);
    let upper: Vec<String> = methods.iter().map(|m| m.to_ascii_uppercase()).collect();
    assert!(
        upper.is_empty() || upper.iter().any(|m| m.as_bytes() == sent_method),
        "{method} forwarded under {methods:?}"
    );
    if !paths.is_empty() {
        let verdicts: Vec<_> = paths
            .iter()
            .map(|prefix| paths::under(sent_target, prefix.as_bytes()))
            .collect();
        assert!(
            verdicts.iter().any(|v| v.is_ok()),
            "{:?} forwarded under {paths:?}: {verdicts:?}",
            String::from_utf8_lossy(sent_target)
        );
    }
});
