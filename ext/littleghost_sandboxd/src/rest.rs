//! sandboxd's filesystem REST API (`GET/HEAD/PUT/DELETE /v1/files/{path}`,
//! `/v1/health`, `/v1/metadata`), `GET /v1/x-littleghost/denials`
//! (JSON lines) and the extensions a local file call's exact behaviour
//! needs: `POST /v1/x-littleghost/replace/{path}` (an atomic replace) and
//! `x-littleghost-create-parents: false` on `PUT` (docs/spec.md 14.10). Every file call goes through the core's broker from the
//! root's handle; error bodies are `{"code": ..., "message": ...}` with the
//! reference server's codes (403 PERMISSION_DENIED, 404 NOT_FOUND, 409
//! CONFLICT, 400 INVALID_ARGUMENT).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use littleghost_sandbox_core::denial::{Denial, Operation, Reason, Refusal};
use littleghost_sandbox_core::error::kind::Kind;
use littleghost_sandbox_core::error::Error;
use littleghost_sandbox_core::fs::{Broker, EntryInfo, Error as FileError};
use littleghost_sandbox_core::scope::file_operation;
use littleghost_sandbox_core::workspace::refused_reference;
use serde_json::json;

use crate::confinement::denial_json;
use crate::scope;
use crate::Daemon;

pub type Body = BoxBody<Bytes, Infallible>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn json_response(status: StatusCode, value: serde_json::Value) -> Response<Body> {
    let mut text = value.to_string();
    text.push('\n');
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(full(text))
        .expect("a valid response")
}

fn answer(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    json_response(status, json!({"code": code, "message": message}))
}

fn no_content() -> Response<Body> {
    Response::builder()
        .status(StatusCode::NO_CONTENT)
        .body(full(Bytes::new()))
        .expect("a valid response")
}

/// 401: the request lacks the token.
pub fn unauthorized() -> Response<Body> {
    answer(
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
        "a valid bearer token is required",
    )
}

/// Answers one request (the token was checked by the caller).
pub async fn handle(daemon: Arc<Daemon>, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or("").to_string();
    let method = request.method().clone();
    match (method.clone(), path.as_str()) {
        (Method::GET, "/v1/health") => health(&daemon, true),
        (Method::GET, "/v1/metadata") => metadata(&daemon),
        (Method::GET, "/v1/x-littleghost/denials") => denials(&daemon, &query),
        (Method::POST, _) if path.starts_with(REPLACE_ROUTE) => {
            let encoded = &path[REPLACE_ROUTE.len()..];
            match Call::of(daemon, &request, encoded) {
                Ok(call) => call.replace(request, &query).await,
                Err(refused) => refused,
            }
        }
        _ if path.starts_with(ALLOWS) => {
            let scope = match request.headers().get(scope::HEADER) {
                None => None,
                Some(text) => match scope::narrow(&daemon.confinement, text.as_bytes()) {
                    Ok(scope) => Some(scope.broker),
                    Err(refused) => return scope_refused(refused),
                },
            };
            allows(&daemon, scope, &path[ALLOWS.len()..], &query).await
        }
        _ => match path.strip_prefix("/v1/files/").or(
            // `GET /v1/files` lists the root.
            (path == "/v1/files").then_some(""),
        ) {
            Some(encoded) => match Call::of(daemon, &request, encoded) {
                Ok(call) => call.files(request, &query).await,
                Err(refused) => refused,
            },
            None => answer(StatusCode::NOT_FOUND, "NOT_FOUND", "no such endpoint"),
        },
    }
}

/// The extension route of an atomic `replace` (docs/spec.md 14.11):
/// `POST /v1/x-littleghost/replace/{path}?old_bytes=N`, the body the old
/// text's N bytes followed by the new text's, so both travel exactly as
/// given (they need not be UTF-8). The answer is `{"message": ...}`, the
/// broker's result; a refusal is answered as the file routes answer it.
pub const REPLACE_ROUTE: &str = "/v1/x-littleghost/replace/";

/// The request header by which a `PUT` asks for §14.10's write: no parent
/// directory is made (`Write target parent does not exist`), a new file
/// gets `0644 & ~umask` and a directory target is "Path is not a file".
/// Without it, `PUT` keeps the reference's semantics (parents made).
pub const CREATE_PARENTS_HEADER: &str = "x-littleghost-create-parents";

/// `GET /v1/health` is the one request that may answer without the token
/// (with `--health-without-token`): kubelet's probes carry none, and it says
/// only whether the daemon is alive or draining (docs/security.md "The
/// daemon").
pub fn answers_without_token<T>(request: &Request<T>) -> bool {
    request.method() == Method::GET && request.uri().path() == "/v1/health"
}

/// 200 while serving, 503 once SIGTERM arrived; the uptime only to a
/// caller that holds the token (`authorized`).
pub fn health(daemon: &Daemon, authorized: bool) -> Response<Body> {
    if daemon.stopping() {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            "sandboxd is shutting down",
        );
    }
    let body = match authorized {
        true => json!({"status": "ok", "uptime_seconds": daemon.started.elapsed().as_secs()}),
        false => json!({"status": "ok"}),
    };
    json_response(StatusCode::OK, body)
}

/// Non-sensitive facts only (the spec's rule): the reference's `env`, and
/// beside it `x-littleghost`, what the daemon enforces (docs/spec.md RM.6).
fn metadata(daemon: &Daemon) -> Response<Body> {
    let confinement = &daemon.confinement;
    json_response(
        StatusCode::OK,
        json!({
            "env": {
                "SANDBOXD_IMPLEMENTATION": "littleghost-sandboxd",
                "LITTLEGHOST_BACKEND": confinement.backend_name(),
                "LITTLEGHOST_NETWORK": confinement.network_mode().name(),
                "LITTLEGHOST_ROOT_FILESYSTEM": confinement.policy.root_filesystem.name(),
            },
            "x-littleghost": confinement.enforced(),
        }),
    )
}

/// `GET /v1/x-littleghost/allows/{path}?operation=FEATURE`: whether the
/// broker (the call's scope's, else the policy's) lets the canonical
/// feature past on `path`, as `allows?` asks locally (docs/spec.md SC.13,
/// 14.12): `{"allowed": bool}`. A path the workspace refuses is not allowed.
const ALLOWS: &str = "/v1/x-littleghost/allows/";

async fn allows(
    daemon: &Arc<Daemon>,
    scope: Option<Broker>,
    encoded: &str,
    query: &str,
) -> Response<Body> {
    let (Some(logical), Some(feature)) = (decode(encoded), query_value(query, "operation")) else {
        return answer(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            "allows takes a percent-encoded path and ?operation=FEATURE",
        );
    };
    let daemon = daemon.clone();
    blocking(move || {
        let broker = scope.as_ref().unwrap_or(&daemon.confinement.broker);
        let allowed = match daemon.confinement.workspace.resolve(&logical) {
            Ok(physical) => broker.allows(file_operation(&feature), &physical),
            Err(_) => false,
        };
        json_response(StatusCode::OK, json!({"allowed": allowed}))
    })
    .await
}

/// The denials as JSON lines, from now on (after those recorded, with `replay=true`).
fn denials(daemon: &Daemon, query: &str) -> Response<Body> {
    let replay = query_value(query, "replay").as_deref() == Some("true");
    let receiver = daemon.confinement.denials.watch(replay);
    let lines = futures_stream(receiver);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/x-ndjson")
        .body(StreamBody::new(lines).boxed())
        .expect("a valid response")
}

fn futures_stream(
    receiver: tokio::sync::mpsc::UnboundedReceiver<Denial>,
) -> impl tokio_stream::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + Sync {
    use tokio_stream::StreamExt;
    tokio_stream::wrappers::UnboundedReceiverStream::new(receiver).map(|denial| {
        let mut line = denial_json(&denial).to_string();
        line.push('\n');
        Ok(Frame::data(Bytes::from(line)))
    })
}

/// `%XX` decoded, the result UTF-8; a leading `/` is dropped (sandbox-relative).
fn decode(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    let text = String::from_utf8(out).ok()?;
    let relative = text.trim_start_matches('/');
    Some(if relative.is_empty() {
        ".".to_string()
    } else {
        relative.to_string()
    })
}

fn query_value(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(key, _)| *key == name)
        .and_then(|(_, value)| decode(value))
}

/// A file call refused or failed: its status, code and message; a refusal
/// is recorded as a denial.
fn file_error(
    daemon: &Daemon,
    operation: Operation,
    logical: &str,
    error: Error,
) -> Response<Body> {
    let error = refused_reference(logical.as_bytes(), error);
    if let Some(refusal) = error.refusal() {
        daemon
            .confinement
            .denials
            .record(Denial::refused(operation, logical, &refusal));
        let limit = matches!(
            refusal.reason,
            Reason::ReadLimit | Reason::WriteLimit | Reason::ListLimit
        );
        return match limit {
            true => error_response(StatusCode::PAYLOAD_TOO_LARGE, "RESOURCE_EXHAUSTED", &error),
            false => error_response(StatusCode::FORBIDDEN, "PERMISSION_DENIED", &error),
        };
    }
    let message = error.to_string();
    match file_failure(&error) {
        Some(FileError::NotEmpty) => error_response(StatusCode::CONFLICT, "CONFLICT", &error),
        Some(FileError::Missing | FileError::WriteParentMissing) => {
            answer(StatusCode::NOT_FOUND, "NOT_FOUND", &message)
        }
        Some(_) => answer(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", &message),
        None if matches!(error.kind(), Kind::Tool | Kind::Argument) => {
            answer(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", &message)
        }
        None => answer(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", &message),
    }
}

/// The broker's own failure inside `error`, named path or not.
fn file_failure(error: &Error) -> Option<&FileError> {
    match error {
        Error::File(FileError::OnPath { error, .. }) => Some(error),
        Error::File(error) => Some(error),
        _ => None,
    }
}

fn error_response(status: StatusCode, code: &str, error: &Error) -> Response<Body> {
    answer(status, code, &error.to_string())
}

/// RFC 3339 in UTC, whole seconds (the reference's format).
fn rfc3339((seconds, _): (i64, u32)) -> String {
    let days = seconds.div_euclid(86_400);
    let second_of_day = seconds.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60
    )
}

fn entry_json(entry: &EntryInfo) -> serde_json::Value {
    json!({
        "name": entry.name.to_string_lossy(),
        "size": entry.size,
        "type": if entry.directory { "directory" } else { "file" },
        "modified_at": rfc3339(entry.modified),
        "mode": format!("{:04o}", entry.mode & 0o777),
    })
}

/// One file call: the daemon, the call's scope broker (None: the policy's), the path as the caller wrote it.
struct Call {
    daemon: Arc<Daemon>,
    scope: Option<Broker>,
    logical: String,
}

impl Call {
    /// The call on `encoded` (the percent-encoded path) under the request's
    /// `x-littleghost-scope`, or the answer refusing it.
    fn of(
        daemon: Arc<Daemon>,
        request: &Request<Incoming>,
        encoded: &str,
    ) -> Result<Call, Response<Body>> {
        let Some(logical) = decode(encoded) else {
            return Err(answer(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "the path is not valid percent-encoded UTF-8",
            ));
        };
        let scope = match request.headers().get(scope::HEADER) {
            None => None,
            Some(text) => match scope::narrow(&daemon.confinement, text.as_bytes()) {
                Ok(scope) => Some(scope.broker),
                Err(refused) => return Err(scope_refused(refused)),
            },
        };
        Ok(Call {
            daemon,
            scope,
            logical,
        })
    }

    fn broker(&self) -> &Broker {
        self.scope
            .as_ref()
            .unwrap_or(&self.daemon.confinement.broker)
    }

    fn refused(&self, operation: Operation, error: Error) -> Response<Body> {
        file_error(&self.daemon, operation, &self.logical, error)
    }

    async fn files(self, request: Request<Incoming>, query: &str) -> Response<Body> {
        let method = request.method().clone();
        let (parts, body) = request.into_parts();
        let headers = &parts.headers;
        let physical = match self.daemon.confinement.workspace.resolve(&self.logical) {
            Ok(physical) => physical,
            Err(error) => {
                let operation = match method {
                    Method::PUT | Method::DELETE => Operation::Write,
                    _ => Operation::Read,
                };
                return self.refused(operation, error);
            }
        };
        match method {
            Method::GET | Method::HEAD => {
                let head = method == Method::HEAD;
                blocking(move || self.get(physical, head)).await
            }
            Method::PUT if multipart(headers) => answer(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "multipart/form-data bodies are not supported: send the file's bytes as application/octet-stream",
            ),
            Method::PUT => {
                let mode = match query_value(query, "mode") {
                    None => 0o644,
                    Some(mode) => match parse_mode(&mode) {
                        Some(mode) => mode,
                        None => {
                            return answer(
                                StatusCode::BAD_REQUEST,
                                "INVALID_ARGUMENT",
                                &format!("mode {mode:?} must match ^0[0-7]{{3}}$"),
                            )
                        }
                    },
                };
                let create_parents = match headers.get(CREATE_PARENTS_HEADER) {
                    None => true,
                    Some(value) if value == "false" && query_value(query, "mode").is_none() => {
                        false
                    }
                    Some(_) => {
                        return answer(
                            StatusCode::BAD_REQUEST,
                            "INVALID_ARGUMENT",
                            &format!(
                                "{CREATE_PARENTS_HEADER} takes only the value false, and no ?mode= \
                                 (a new file gets 0644 less the umask, an existing one keeps its mode)"
                            ),
                        )
                    }
                };
                self.put(physical, mode, create_parents, body).await
            }
            Method::DELETE => {
                let recursive = query_value(query, "recursive").as_deref() == Some("true");
                blocking(
                    move || match self.broker().remove(&physical, &self.logical, recursive) {
                        Ok(()) => no_content(),
                        Err(error) => self.refused(Operation::Write, error),
                    },
                )
                .await
            }
            _ => answer(
                StatusCode::METHOD_NOT_ALLOWED,
                "INVALID_ARGUMENT",
                "files take GET, HEAD, PUT and DELETE",
            ),
        }
    }

    /// 14.11 in one call: the broker reads, replaces and writes atomically
    /// from the root's handle, so no writer can come between a read and a
    /// write as it could between a GET and a PUT.
    async fn replace(self, request: Request<Incoming>, query: &str) -> Response<Body> {
        let physical = match self.daemon.confinement.workspace.resolve(&self.logical) {
            Ok(physical) => physical,
            Err(error) => return self.refused(Operation::Replace, error),
        };
        let old_bytes = match query_value(query, "old_bytes").map(|n| n.parse::<usize>()) {
            Some(Ok(count)) => count,
            _ => {
                return answer(
                    StatusCode::BAD_REQUEST,
                    "INVALID_ARGUMENT",
                    "old_bytes= must give the old text's length in bytes",
                )
            }
        };
        let content = match self.body(request.into_body(), Operation::Replace).await {
            Ok(content) => content,
            Err(refused) => return refused,
        };
        if old_bytes > content.len() {
            return answer(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "old_bytes= is longer than the body",
            );
        }
        blocking(move || {
            let (old_text, new_text) = content.split_at(old_bytes);
            match self
                .broker()
                .replace(&physical, &self.logical, old_text, new_text)
            {
                Ok(message) => json_response(StatusCode::OK, json!({ "message": message })),
                Err(error) => self.refused(Operation::Replace, error),
            }
        })
        .await
    }

    /// The request's body, refused past what a write may hold (the old and
    /// new text of a replace together are bounded by the same limit's
    /// double: the old text is within a file the broker may read).
    async fn body(&self, body: Incoming, operation: Operation) -> Result<Bytes, Response<Body>> {
        let limits = &self.daemon.confinement.declaration.limits;
        let limit = match operation {
            Operation::Replace => limits.write_bytes.saturating_add(limits.read_bytes),
            _ => limits.write_bytes,
        };
        let bound = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        match Limited::new(body, bound).collect().await {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(_) => {
                let refusal = Error::Refused(Refusal {
                    reason: Reason::WriteLimit,
                    message: format!(
                        "Content exceeds the write limit of {limit} bytes: {}",
                        self.logical
                    ),
                });
                Err(self.refused(operation, refusal))
            }
        }
    }

    fn get(&self, physical: PathBuf, head: bool) -> Response<Body> {
        let (broker, logical) = (self.broker(), self.logical.as_str());
        let info = match broker.stat(&physical, logical) {
            Ok(info) => info,
            Err(error) => return self.refused(Operation::Read, error),
        };
        if info.directory {
            return match broker.entries(&physical, logical) {
                Ok(mut entries) => {
                    entries.sort_by(|a, b| a.name.cmp(&b.name));
                    let listed: Vec<_> = entries.iter().map(entry_json).collect();
                    let shown = if logical == "." {
                        "/".to_string()
                    } else {
                        format!("/{logical}")
                    };
                    json_response(StatusCode::OK, json!({"path": shown, "entries": listed}))
                }
                Err(error) => self.refused(Operation::List, error),
            };
        }
        match broker.read_bytes(&physical, logical) {
            Ok(bytes) => {
                let length = bytes.len();
                let body = if head {
                    Bytes::new()
                } else {
                    Bytes::from(bytes)
                };
                Response::builder()
                    .status(StatusCode::OK)
                    .header("content-type", "application/octet-stream")
                    .header("content-length", length)
                    .body(full(body))
                    .expect("a valid response")
            }
            Err(error) => self.refused(Operation::Read, error),
        }
    }

    /// The reference's `PUT` (parents made, `mode` for the file), or with
    /// `create_parents` false §14.10's write, as a local `write` does.
    async fn put(
        self,
        physical: PathBuf,
        mode: u32,
        create_parents: bool,
        body: Incoming,
    ) -> Response<Body> {
        let content = match self.body(body, Operation::Write).await {
            Ok(content) => content,
            Err(refused) => return refused,
        };
        blocking(move || {
            let (broker, logical) = (self.broker(), self.logical.as_str());
            if !create_parents {
                return match broker.write(&physical, logical, &content) {
                    Ok(_) => no_content(),
                    Err(error) => self.refused(Operation::Write, error),
                };
            }
            if let Ok(info) = broker.stat(&physical, logical) {
                if info.directory {
                    return answer(
                        StatusCode::BAD_REQUEST,
                        "INVALID_ARGUMENT",
                        "target path is a directory",
                    );
                }
            }
            match broker.write_creating(&physical, logical, &content, Some(mode)) {
                Ok(()) => no_content(),
                Err(error) => self.refused(Operation::Write, error),
            }
        })
        .await
    }
}

/// Whether the body is `multipart/form-data` (which the reference also takes).
fn multipart(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

/// A refused `x-littleghost-scope`: a malformed one is 400, one asking for
/// more than the policy gives 403.
fn scope_refused(refused: scope::Refused) -> Response<Body> {
    match refused {
        scope::Refused::Malformed(message) => {
            answer(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", &message)
        }
        scope::Refused::Rule(error) if scope::widens(&error) => answer(
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
            &error.to_string(),
        ),
        scope::Refused::Rule(error) => answer(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            &error.to_string(),
        ),
    }
}

/// `0` and three octal digits.
fn parse_mode(text: &str) -> Option<u32> {
    let digits = text.strip_prefix('0')?;
    if digits.len() != 3 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return None;
    }
    u32::from_str_radix(digits, 8).ok()
}

async fn blocking(work: impl FnOnce() -> Response<Body> + Send + 'static) -> Response<Body> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|_| {
        answer(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "the file call failed",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_decoded_and_sandbox_relative() {
        assert_eq!(decode("a%2Fb.txt").as_deref(), Some("a/b.txt"));
        assert_eq!(decode("%2Fa").as_deref(), Some("a"));
        assert_eq!(decode("").as_deref(), Some("."));
        assert_eq!(decode("%2E%2E%2Fetc").as_deref(), Some("../etc"));
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%ff"), None);
    }

    #[test]
    fn modes_are_zero_and_three_octal_digits() {
        assert_eq!(parse_mode("0755"), Some(0o755));
        assert_eq!(parse_mode("0644"), Some(0o644));
        assert_eq!(parse_mode("755"), None);
        assert_eq!(parse_mode("0855"), None);
        assert_eq!(parse_mode("07777"), None);
    }

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339((0, 0)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339((1_780_000_000, 0)), "2026-05-28T20:26:40Z");
    }
}
