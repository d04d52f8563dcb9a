//! The child's side of the gateway is read by hand (docs/design.md says
//! why); this holds that reading against hyper's own server
//! (`server::conn::http1` over an in-memory stream on a current-thread
//! runtime). For bytes the engine accepts as a request (head and body,
//! `network::fuzz_read_request`), sent to hyper followed by a second,
//! plain request: hyper reads the same method, target, version, header
//! fields and body bytes, and its next request is that second one, so the
//! two agree where the first request ends. hyper may refuse what the engine
//! accepts only for a target its `Uri` does not take (a stricter reading);
//! it never reads differently. The same check runs in `cargo test` over
//! deterministic mutations (`network/http/differential.rs`).
#![no_main]

use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock};

use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use libfuzzer_sys::fuzz_target;
use littleghost_sandbox_core::network::fuzz_read_request;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The request sent after the one under test: where hyper starts reading it
/// is where hyper ended the first.
const NEXT: &[u8] = b"GET /next HTTP/1.1\r\nHost: next.test\r\n\r\n";

/// One request as hyper's server read it.
#[derive(Debug)]
struct Seen {
    method: String,
    target: String,
    version: hyper::Version,
    fields: Vec<(String, Vec<u8>)>,
    /// `None` when hyper failed reading the body.
    body: Option<Vec<u8>>,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    })
}

/// Every request hyper's server reads from `bytes` (the client's side then
/// ends), in order.
fn hyper_reads(bytes: &[u8]) -> Vec<Seen> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    runtime().block_on(async move {
        let (mut client, server) = tokio::io::duplex(bytes.len() + 64 * 1024);
        let service = service_fn(move |request: Request<Incoming>| {
            let record = record.clone();
            async move {
                let (parts, body) = request.into_parts();
                let body = body
                    .collect()
                    .await
                    .ok()
                    .map(|body| body.to_bytes().to_vec());
                let fields = parts
                    .headers
                    .iter()
                    .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
                    .collect();
                record.lock().unwrap().push(Seen {
                    method: parts.method.as_str().to_owned(),
                    target: parts.uri.to_string(),
                    version: parts.version,
                    fields,
                    body,
                });
                Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
            }
        });
        let serving = http1::Builder::new().serve_connection(TokioIo::new(server), service);
        let talking = async move {
            let _ = client.write_all(bytes).await;
            let _ = client.shutdown().await;
            let mut answers = Vec::new();
            let _ = client.read_to_end(&mut answers).await;
        };
        let _ = tokio::join!(serving, talking);
    });
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen
}

/// A target as hyper's `Uri` shows it: no fragment (the engine too leaves
/// it out of the path it forwards), `http` and `https` in lower case, an
/// absolute form's empty path as `/`.
fn as_hyper_shows(target: &str) -> String {
    let target = target.split('#').next().unwrap_or_default();
    let absolute = target
        .split_once("://")
        .filter(|_| !target.starts_with('/'));
    let Some((scheme, rest)) = absolute else {
        return target.to_owned();
    };
    let scheme = if ["http", "https"]
        .iter()
        .any(|s| scheme.eq_ignore_ascii_case(s))
    {
        scheme.to_ascii_lowercase()
    } else {
        scheme.to_owned()
    };
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let slash = if path.starts_with('/') { "" } else { "/" };
    format!("{scheme}://{authority}{slash}{path}")
}

fn sorted(mut fields: Vec<(String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    fields.sort();
    fields
}

fuzz_target!(|data: &[u8]| {
    let Some(read) = fuzz_read_request(data) else {
        return;
    };
    if read.method.eq_ignore_ascii_case("CONNECT") {
        return; // a tunnel: no body to frame
    }
    let sent = [&data[..read.length], NEXT].concat();
    let seen = hyper_reads(&sent);
    let Some(first) = seen.first() else {
        // hyper refused the head: only a target its `Uri` does not take (a
        // stricter reading of the same bytes).
        assert!(
            read.target.parse::<hyper::Uri>().is_err(),
            "hyper refused a head the engine reads: {:?}",
            String::from_utf8_lossy(&data[..read.length])
        );
        return;
    };
    let shown = String::from_utf8_lossy(&sent).into_owned();
    assert_eq!(first.method, read.method, "{shown:?}");
    assert_eq!(first.target, as_hyper_shows(&read.target), "{shown:?}");
    let version = if read.version == "HTTP/1.0" {
        hyper::Version::HTTP_10
    } else {
        hyper::Version::HTTP_11
    };
    assert_eq!(first.version, version, "{shown:?}");
    let mut engine_fields = sorted(
        read.headers
            .iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), value.as_bytes().to_vec()))
            .collect(),
    );
    // hyper keeps one of repeated equal lengths (the engine refuses unequal ones).
    engine_fields.dedup_by(|a, b| a.0 == "content-length" && a == b);
    assert_eq!(sorted(first.fields.clone()), engine_fields, "{shown:?}");
    assert_eq!(
        first.body.as_deref(),
        Some(read.body.as_slice()),
        "{shown:?}"
    );
    // Where the first request ends: the next one hyper reads (if it reads
    // one: a request that closes the connection ends it) is `NEXT`.
    if let Some(next) = seen.get(1) {
        assert_eq!(
            (next.method.as_str(), next.target.as_str()),
            ("GET", "/next"),
            "{shown:?}"
        );
        assert_eq!(next.body.as_deref(), Some(&b""[..]), "{shown:?}");
    }
    assert!(seen.len() <= 2, "{shown:?}");
});
