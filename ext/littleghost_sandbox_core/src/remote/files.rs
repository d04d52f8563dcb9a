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

impl Target<'_> {
    fn uri(&self, query: &str) -> String {
        format!("/v1/files/{}{query}", http::encode(self.logical.as_bytes()))
    }

    async fn call(&self, method: Method, query: &str, body: Bytes) -> Result<Answer, Error> {
        http::call(self.endpoint, method, &self.uri(query), self.scope, body).await
    }
}

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
    let answer = target.call(Method::GET, "", Bytes::new()).await?;
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

/// 14.10: an atomic PUT; an existing file keeps its mode (none is sent).
pub async fn write(target: Target<'_>, content: Vec<u8>) -> Result<String, Error> {
    relative(target.logical)?;
    let wrote = crate::fs::wrote(&content, target.logical);
    let answer = target.call(Method::PUT, "", Bytes::from(content)).await?;
    match answer.status {
        StatusCode::NO_CONTENT | StatusCode::OK | StatusCode::CREATED => Ok(wrote),
        _ => Err(http::failure(&answer)),
    }
}

/// 14.11: the single occurrence replaced, read and written through the
/// daemon (two calls: a writer between them loses to this one).
pub async fn replace(target: Target<'_>, old: &[u8], new: &[u8]) -> Result<String, Error> {
    if old.is_empty() {
        return Err(Error::Refused("Text to replace cannot be empty".into()));
    }
    let text = match get(&target).await? {
        Got::File(bytes) => bytes,
        Got::Directory(_) => return Err(named("Path is not a file", target.logical)),
    };
    let text = std::str::from_utf8(&text)
        .map_err(|_| named("File is not valid UTF-8 text", target.logical))?;
    let at = crate::fs::single_occurrence(text, old, target.logical)
        .map_err(|error| Error::Refused(error.to_string()))?;
    let mut replaced = Vec::with_capacity(text.len() + new.len());
    replaced.extend_from_slice(&text.as_bytes()[..at]);
    replaced.extend_from_slice(new);
    replaced.extend_from_slice(&text.as_bytes()[at + old.len()..]);
    write(target, replaced).await
}
