//! The gateway's request parser: whatever head it accepts, the request it
//! forwards has no control byte but its CRLF line ends, exactly one `Host`
//! (its own), no `Proxy-Authorization`, and a three-part request line (the
//! core's `network::http::check_request_head`, which unit tests run too).
//!
//! Then differentially, against `httparse` and a model of a server's body
//! framing (`fuzz/models/head.rs`): a head the engine accepts is read by
//! `httparse` as the same one request (method, target, headers, framing);
//! the head it forwards is read as exactly one request with that method, the
//! origin form of that target and the body framed as the engine framed it;
//! and a head whose `Connection` names `Content-Length`, `Transfer-Encoding`
//! or `Host` is never accepted (`TE`, `Trailer` and `Upgrade` may be named:
//! the forwarded head then has no `TE` or `Trailer`, and `Upgrade` only with
//! `Connection: Upgrade`). The engine may refuse more than `httparse`.
#![no_main]

#[path = "../models/head.rs"]
mod head;

use head::Body;
use libfuzzer_sys::fuzz_target;
use littleghost_sandbox_core::network::{fuzz_forward, fuzz_request_head, FuzzFraming, Secrets};

/// The origin form of an absolute `http://` target.
fn origin_form(target: &str) -> Option<String> {
    let (scheme, rest) = target.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") {
        return None;
    }
    let path = &rest[rest.find(['/', '?', '#']).unwrap_or(rest.len())..];
    let path = path.split('#').next().unwrap_or_default();
    Some(match path {
        "" => "/".to_owned(),
        p if p.starts_with('/') => p.to_owned(),
        p => format!("/{p}"),
    })
}

fn body_of(framing: FuzzFraming) -> Body {
    match framing {
        FuzzFraming::None => Body::None,
        FuzzFraming::Length(n) => Body::Length(n),
        FuzzFraming::Chunked => Body::Chunked,
        FuzzFraming::UntilClose => Body::Refused,
    }
}

fuzz_target!(|data: &[u8]| {
    fuzz_request_head(data);
    let Ok(forwarded) = fuzz_forward(data, None, &Secrets::default()) else {
        return;
    };
    let sent = [data, b"\r\n\r\n"].concat();
    let theirs = match head::read(&sent) {
        Ok(Some(read)) => read,
        Err(httparse::Error::TooManyHeaders) => return,
        other => panic!("the engine accepts a head httparse reads as {other:?}"),
    };
    // The same one request, as the engine read it.
    assert_eq!(theirs.length, sent.len(), "one request");
    let line = std::str::from_utf8(data)
        .unwrap()
        .split("\r\n")
        .next()
        .unwrap();
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!([theirs.method.as_str(), theirs.target.as_str()], parts[..2]);
    assert_eq!(format!("HTTP/1.{}", theirs.version), parts[2]);
    let framing = body_of(forwarded.framing);
    assert_ne!(framing, Body::Refused);
    assert_eq!(theirs.body(), framing, "framing of {data:?}");
    let tokens = theirs.connection_tokens();
    for named in ["content-length", "transfer-encoding", "host"] {
        assert!(
            !tokens.iter().any(|t| t == named),
            "Connection names {named}"
        );
    }
    // What the destination receives: exactly one request, framed alike.
    let out = match head::read(&forwarded.head) {
        Ok(Some(read)) => read,
        other => panic!(
            "the forwarded head reads as {other:?}: {:?}",
            forwarded.head
        ),
    };
    assert_eq!(out.length, forwarded.head.len(), "one request");
    assert_eq!(out.method, theirs.method);
    assert_eq!(Some(out.target.clone()), origin_form(&theirs.target));
    assert_eq!(out.version, theirs.version);
    assert_eq!(out.body(), framing, "{:?}", forwarded.head);
    assert_eq!(out.values("host").count(), 1);
    assert_eq!(out.values("te").count() + out.values("trailer").count(), 0);
    let upgrading = out.connection_tokens() == ["upgrade"];
    assert!(out.values("upgrade").count() <= usize::from(upgrading));
    for token in out.connection_tokens() {
        assert!(["close", "keep-alive", "upgrade"].contains(&token.as_str()));
    }
});
