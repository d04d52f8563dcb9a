//! The REST side: one HTTP/1.1 request per connection to the daemon's REST
//! address, with the bearer token; error bodies are the filesystem spec's
//! `{"code": ..., "message": ...}`.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::endpoint::Endpoint;
use super::error::Error;

/// A whole answer.
pub struct Answer {
    pub status: StatusCode,
    pub json: bool,
    pub body: Bytes,
}

/// Sends one request and returns the response with its body still coming.
pub async fn send(
    endpoint: &Endpoint,
    method: Method,
    target: &str,
    scope: Option<&str>,
    extra: &[(&str, &str)],
    body: Bytes,
) -> Result<Response<Incoming>, Error> {
    let unreachable = |detail: String| Error::Unreachable {
        address: format!("http://{}", endpoint.rest),
        detail,
    };
    let stream = TcpStream::connect(&endpoint.rest)
        .await
        .map_err(|error| unreachable(error.to_string()))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| unreachable(error.to_string()))?;
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(target)
        .header("host", &endpoint.rest);
    if let Some(authorization) = endpoint.authorization() {
        request = request.header("authorization", authorization);
    }
    if let Some(scope) = scope {
        request = request.header(super::endpoint::SCOPE_HEADER, scope);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(body))
        .map_err(|error| Error::Endpoint(error.to_string()))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| unreachable(error.to_string()))?;
    if response.status() == StatusCode::UNAUTHORIZED {
        let answer = collect(endpoint, response).await?;
        return Err(Error::Unauthenticated(message(&answer.body)));
    }
    Ok(response)
}

/// Sends one request and reads the whole answer.
pub async fn call(
    endpoint: &Endpoint,
    method: Method,
    target: &str,
    scope: Option<&str>,
    extra: &[(&str, &str)],
    body: Bytes,
) -> Result<Answer, Error> {
    let response = send(endpoint, method, target, scope, extra, body).await?;
    collect(endpoint, response).await
}

async fn collect(endpoint: &Endpoint, response: Response<Incoming>) -> Result<Answer, Error> {
    let status = response.status();
    let json = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| Error::Unreachable {
            address: format!("http://{}", endpoint.rest),
            detail: error.to_string(),
        })?
        .to_bytes();
    Ok(Answer { status, json, body })
}

/// The `message` of an error body, or the body itself.
pub fn message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| value.get("message")?.as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string())
}

/// The error an answer other than success stands for: the daemon's
/// message, which is the broker's (docs/spec.md §14).
pub fn failure(answer: &Answer) -> Error {
    let text = message(&answer.body);
    if answer.status.is_server_error() && answer.status != StatusCode::INTERNAL_SERVER_ERROR {
        return Error::Protocol(format!("{} {text}", answer.status.as_u16()));
    }
    Error::Refused(text)
}

/// `%XX` for every byte but the unreserved ones, `/` included: the daemon
/// decodes the whole path (the filesystem spec's rule for `{path}`), and
/// nothing between here and there may read `..` or `/` in it.
pub fn encode(path: &[u8]) -> String {
    let mut encoded = String::with_capacity(path.len() * 3);
    for byte in path {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' => {
                encoded.push(char::from(*byte))
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_encoded_whole() {
        assert_eq!(encode(b"a/b.txt"), "a%2Fb%2Etxt");
        assert_eq!(encode(b"../etc"), "%2E%2E%2Fetc");
        assert_eq!(encode("é".as_bytes()), "%C3%A9");
    }

    #[test]
    fn error_bodies_give_their_message() {
        assert_eq!(
            message(br#"{"code":"PERMISSION_DENIED","message":"Path escapes the sandbox scope"}"#),
            "Path escapes the sandbox scope"
        );
        assert_eq!(message(b"plain\n"), "plain");
    }
}
