//! Stand-in substitution (`network/secrets.rs` and the engine's decision).
//! Input, as text, one item a line: flags (`p`: `a.test:80` allows only
//! paths under `/repos/org/`; `b`: secret `b` may go to `a.test:80` too),
//! the destination the request names (`a.test`, `b.test`, `c.test` is not
//! allowed), secret `a`'s value, secret `b`'s value, then the rest of a
//! `GET http://DESTINATION` request head, in which `$a` and `$b` become the
//! stand-ins, e.g. `p\na.test\nsec ret\nv\n/repos/org/x?t=$a HTTP/1.1`.
//! Secret `a` may go to `a.test:80`, `b` to `b.test:80`; each value gets
//! `!a` or `!b` in front, and `!` is dropped from everything else, so only
//! a swap can put a value in the head. Whatever the engine forwards:
//! - a value only toward its secret's destinations (the model's list), and
//!   no stand-in left;
//! - the same shape as the head forwarded without secrets (stand-ins left
//!   in place): one request, the same method, the same header names in
//!   order, the same body framing (read by `httparse`, `fuzz/models/head.rs`);
//! - under the rule's path prefix however a server reads the swapped path
//!   (`fuzz/models/paths.rs`).
#![no_main]

#[path = "../models/head.rs"]
mod head;
#[path = "../models/paths.rs"]
mod paths;

use libfuzzer_sys::fuzz_target;
use littleghost_sandbox_core::network::{fuzz_forward, Allowlist};
use littleghost_sandbox_core::policy::network_rules::{
    AllowRequest, NetworkRules, RuleRequest, SecretRequest,
};

const PREFIX: &str = "/repos/org/";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(5, '\n');
    let (Some(flags), Some(destination), Some(value_a), Some(value_b), Some(template)) = (
        lines.next(),
        lines.next(),
        lines.next(),
        lines.next(),
        lines.next(),
    ) else {
        return;
    };
    if destination.contains(['/', '?', '#', '@']) {
        return;
    }
    let (with_prefix, b_reaches_a) = (flags.contains('p'), flags.contains('b'));
    let value_a = format!("!a{}", value_a.replace('!', ""));
    let value_b = format!("!b{}", value_b.replace('!', ""));
    let rule = RuleRequest {
        keys: vec!["destination".into(), "paths".into()],
        destination: Some("a.test:80".into()),
        inspect: None,
        methods: Vec::new(),
        paths: if with_prefix {
            vec![PREFIX.into()]
        } else {
            Vec::new()
        },
    };
    let secret = |name: &str, value: &str, destinations: &[&str]| SecretRequest {
        name: name.into(),
        keys: Some(vec!["value".into(), "destinations".into()]),
        value: Some(value.into()),
        destinations: destinations.iter().map(|d| d.to_string()).collect(),
    };
    let b_destinations: &[&str] = if b_reaches_a {
        &["b.test:80", "a.test:80"]
    } else {
        &["b.test:80"]
    };
    let declared = NetworkRules::new(
        &[
            AllowRequest::Rule(rule),
            AllowRequest::Text("b.test:80".into()),
        ],
        &[
            secret("a", &value_a, &["a.test:80"]),
            secret("b", &value_b, b_destinations),
        ],
        None,
    );
    let Ok(declared) = declared else {
        return;
    };
    let allowlist = Allowlist::with_rules(declared.rules().unwrap(), true).unwrap();
    let secrets = declared.gateway_secrets().unwrap();
    let stand_in = |name: &str| {
        let secret = secrets.iter().find(|s| s.name() == name).unwrap();
        secret.stand_in().to_owned()
    };
    let request = template
        .replace('!', "")
        .replace("$a", &stand_in("a"))
        .replace("$b", &stand_in("b"));
    let raw = format!("GET http://{destination}{request}");
    let Ok(forwarded) = fuzz_forward(raw.as_bytes(), Some(&allowlist), &secrets) else {
        return;
    };
    // The destination as the model reads it: a name, port 80 by default.
    let named = destination.to_ascii_lowercase();
    let (name, port) = named.rsplit_once(':').unwrap_or((&named, "80"));
    let host = if port.parse::<u16>() == Ok(80) {
        name
    } else {
        "elsewhere"
    };
    let out = head::read(&forwarded.head)
        .expect("the forwarded head reads")
        .expect("the forwarded head is whole");

    // Each value only toward its destinations, no stand-in left.
    let text = String::from_utf8_lossy(&forwarded.head);
    let may_reach = |name: &str| match name {
        "a" => host == "a.test",
        _ => host == "b.test" || (b_reaches_a && host == "a.test"),
    };
    for name in ["a", "b"] {
        if text.contains(&format!("!{name}")) {
            assert!(may_reach(name), "{name}'s value sent to {host}: {text:?}");
        }
        assert!(
            !text.contains(&stand_in(name)),
            "stand-in forwarded: {text:?}"
        );
    }

    // The shape of the request without secrets.
    let plain = fuzz_forward(raw.as_bytes(), Some(&allowlist), &Default::default())
        .expect("refused without secrets, forwarded with them");
    let before = head::read(&plain.head).unwrap().unwrap();
    assert_eq!(out.length, forwarded.head.len(), "one request: {text:?}");
    assert_eq!(out.method, before.method);
    let names = |read: &head::Read| -> Vec<String> {
        read.headers
            .iter()
            .map(|(n, _)| n.to_ascii_lowercase())
            .collect()
    };
    assert_eq!(names(&out), names(&before), "{text:?}");
    assert_eq!(out.body(), before.body(), "{text:?}");
    assert_eq!(forwarded.framing, plain.framing);

    // Under the prefix however a server reads the path.
    if with_prefix && host == "a.test" {
        if let Err(why) = paths::under(out.target.as_bytes(), PREFIX.as_bytes()) {
            panic!("swapped path {:?} leaves {PREFIX}: {why}", out.target);
        }
    }
});
