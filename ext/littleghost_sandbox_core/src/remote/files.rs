//! `read`, `list`, `write` and `replace` over the filesystem REST API, with
//! the broker's results and messages (docs/spec.md §14): the daemon's
//! broker decides, from the root's handle; this side only shapes its
//! answers as the local operations do.

use hyper::body::Bytes;
use hyper::{Method, StatusCode};

use super::endpoint::Endpoint;
use super::error::Error;
use super::http::{self, Answer};

/// What one file call needs: where, with which narrowing.
pub struct Target<'a> {
    pub endpoint: &'a Endpoint,
    pub scope: Option<&'a str>,
    pub logical: &'a str,
}

/// The request header by which littleghost-sandboxd's `PUT` writes as
/// 14.10 says (no parent directory made); a daemon that does not know it
/// (agent-sandbox's reference sandboxd) makes the parents.
const CREATE_PARENTS_HEADER: (&str, &str) = ("x-littleghost-create-parents", "false");

/// littleghost-sandboxd's atomic replace (14.11 in one call):
/// `POST {REPLACE_ROUTE}{path}?old_bytes=N`, the body the old text then
/// the new, the answer `{"message": ...}`.
const REPLACE_ROUTE: &str = "/v1/x-littleghost/replace/";

impl Target<'_> {
    fn uri(&self, route: &str, query: &str) -> String {
        format!("{route}{}{query}", http::encode(self.logical.as_bytes()))
    }

    async fn call(
        &self,
        method: Method,
        route: &str,
        query: &str,
        extra: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Answer, Error> {
        let uri = self.uri(route, query);
        http::call(self.endpoint, method, &uri, self.scope, extra, body).await
    }
}

/// sandboxd's files API.
const FILES_ROUTE: &str = "/v1/files/";

/// 3.3: an absolute reference is refused before anything is sent (the
/// daemon would read it as relative to its root).
pub(super) fn relative(logical: &str) -> Result<(), Error> {
    if logical.starts_with('/') {
        return Err(Error::Refused(
            "workspace paths must be relative or use workspace://".into(),
        ));
    }
    if logical.starts_with("workspace://") {
        return Err(Error::Unsupported(
            "the remote provider's workspace is the daemon's root alone; workspace:// names no path there"
                .into(),
        ));
    }
    Ok(())
}

/// A refusal the broker words with the logical path after it.
fn named(message: &str, logical: &str) -> Error {
    Error::Refused(format!("{message}: {logical}"))
}

/// GET of a path: the bytes of a file, or the entries of a directory.
enum Got {
    File(Bytes),
    Directory(Vec<(String, bool)>),
}

async fn get(target: &Target<'_>) -> Result<Got, Error> {
    relative(target.logical)?;
    let answer = target
        .call(Method::GET, FILES_ROUTE, "", &[], Bytes::new())
        .await?;
    if answer.status != StatusCode::OK {
        return Err(http::failure(&answer));
    }
    if !answer.json {
        return Ok(Got::File(answer.body));
    }
    let listing: serde_json::Value = serde_json::from_slice(&answer.body)
        .map_err(|error| Error::Protocol(format!("a listing that is not JSON: {error}")))?;
    let entries = listing
        .get("entries")
        .and_then(|entries| entries.as_array())
        .ok_or_else(|| Error::Protocol("a listing without entries".into()))?;
    entries
        .iter()
        .map(|entry| {
            let name = entry.get("name").and_then(|n| n.as_str());
            let kind = entry.get("type").and_then(|t| t.as_str());
            match (name, kind) {
                (Some(name), Some(kind)) => Ok((name.to_string(), kind == "directory")),
                _ => Err(Error::Protocol(
                    "a listing entry without name or type".into(),
                )),
            }
        })
        .collect::<Result<_, _>>()
        .map(Got::Directory)
}

/// 14.8: the file's text.
pub async fn read(target: Target<'_>) -> Result<String, Error> {
    match get(&target).await? {
        Got::File(bytes) => String::from_utf8(bytes.to_vec())
            .map_err(|_| named("File is not valid UTF-8 text", target.logical)),
        Got::Directory(_) => Err(named("Path is not a file", target.logical)),
    }
}

/// 14.9: the names, a directory's with `/`, sorted bytewise after the
/// suffix, one a line.
pub async fn list(target: Target<'_>) -> Result<String, Error> {
    match get(&target).await? {
        Got::Directory(entries) => {
            let names = entries
                .into_iter()
                .map(|(name, directory)| if directory { name + "/" } else { name })
                .map(String::into_bytes)
                .collect();
            Ok(crate::fs::join_listing(names))
        }
        Got::File(_) => Err(named("Path is not a directory", target.logical)),
    }
}

/// 14.10: an atomic PUT that makes no parent directory; an existing file
/// keeps its mode (none is sent).
pub async fn write(target: Target<'_>, content: Vec<u8>) -> Result<String, Error> {
    relative(target.logical)?;
    let wrote = crate::fs::wrote(&content, target.logical);
    let answer = target
        .call(
            Method::PUT,
            FILES_ROUTE,
            "",
            &[CREATE_PARENTS_HEADER],
            Bytes::from(content),
        )
        .await?;
    match answer.status {
        StatusCode::NO_CONTENT | StatusCode::OK | StatusCode::CREATED => Ok(wrote),
        _ => Err(http::failure(&answer)),
    }
}

/// 14.11: the single occurrence replaced by the daemon's broker in one
/// call (read, replace and atomic write there, so no writer comes between).
pub async fn replace(target: Target<'_>, old: &[u8], new: &[u8]) -> Result<String, Error> {
    if old.is_empty() {
        return Err(Error::Refused("Text to replace cannot be empty".into()));
    }
    relative(target.logical)?;
    let query = format!("?old_bytes={}", old.len());
    let body = Bytes::from([old, new].concat());
    let answer = target
        .call(Method::POST, REPLACE_ROUTE, &query, &[], body)
        .await?;
    if answer.status != StatusCode::OK {
        return Err(http::failure(&answer));
    }
    serde_json::from_slice::<serde_json::Value>(&answer.body)
        .ok()
        .and_then(|value| value.get("message")?.as_str().map(str::to_string))
        .ok_or_else(|| Error::Protocol("a replace answered without its message".into()))
}
