//! The daemon's denials as they happen: `GET /v1/x-littleghost/denials`,
//! one JSON object a line (`kind`, `operation`, `target`, `reason`,
//! `message`, `time_unix_ms`), each handed on as a core [`Denial`].

use std::time::{Duration, SystemTime};

use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use tokio::task::AbortHandle;

use super::endpoint::Endpoint;
use super::error::Error;
use super::http;
use crate::denial::{Denial, Operation, Reason};

/// A running watch; dropping it ends it.
pub struct Watch {
    reader: AbortHandle,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens the stream (once this returns, the daemon reports every later
/// denial to it) and hands each denial to `sink` until the stream ends.
pub async fn watch(
    endpoint: Endpoint,
    sink: impl Fn(Denial) + Send + Sync + 'static,
) -> Result<Watch, Error> {
    let response = http::send(
        &endpoint,
        Method::GET,
        "/v1/x-littleghost/denials",
        None,
        &[],
        Bytes::new(),
    )
    .await?;
    if response.status() != StatusCode::OK {
        return Err(Error::Unsupported(format!(
            "littleghost-sandboxd at http://{} does not stream its denials (GET \
             /v1/x-littleghost/denials answered {})",
            endpoint.rest,
            response.status().as_u16()
        )));
    }
    let mut body = response.into_body();
    let reader = tokio::spawn(async move {
        let mut line = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            for byte in data {
                if byte != b'\n' {
                    line.push(byte);
                    continue;
                }
                if let Some(denial) = parse(&line) {
                    sink(denial);
                }
                line.clear();
            }
        }
    })
    .abort_handle();
    Ok(Watch { reader })
}

/// One line as a denial; a line this client cannot read is skipped.
fn parse(line: &[u8]) -> Option<Denial> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let text = |key: &str| value.get(key)?.as_str().map(str::to_string);
    let reason = Reason::from_name(&text("reason")?)?;
    let operation = Operation::from_name(&text("operation")?)?;
    let mut denial = Denial::new(operation, text("target")?, reason, text("message")?);
    if let Some(ms) = value.get("time_unix_ms").and_then(|ms| ms.as_u64()) {
        denial.at = SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
    }
    Some(denial)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_denials() {
        let line = br#"{"kind":"filesystem","operation":"read","target":"../x","reason":"escapes_scope","message":"Path escapes the sandbox scope: ../x","time_unix_ms":1000}"#;
        let denial = parse(line).unwrap();
        assert_eq!(denial.reason, Reason::EscapesScope);
        assert_eq!(denial.operation, Operation::Read);
        assert_eq!(denial.target, "../x");
        assert_eq!(denial.at, SystemTime::UNIX_EPOCH + Duration::from_secs(1));
        assert!(parse(br#"{"reason":"bogus"}"#).is_none());
        assert!(parse(b"not json").is_none());
    }
}
