//! What a decided request becomes toward its destination: its target, its fields with stand-ins
//! swapped, the hop-by-hop ones removed (docs/security.md "Request framing", "Secrets").

use super::*;

/// Whether the client asked to close after this request (HTTP/1.0, or
/// `Connection: close`).
pub(super) fn client_closes(head: &Head) -> bool {
    head.version == "HTTP/1.0"
        || connection_tokens(&head.headers)
            .iter()
            .any(|t| t == "close")
}

/// The `Connection` value of a forwarded head.
pub(super) fn forwarded_connection(upgrade: Option<&str>, client_close: bool) -> &'static str {
    if upgrade.is_some() {
        "Upgrade"
    } else if client_close {
        "close"
    } else {
        "keep-alive"
    }
}

/// What a request asks of an allowed destination, decided: its rules, then
/// the stand-ins in its head; `Ok` is the path and headers to forward.
/// The rules are checked on the request as the client sent it and again as
/// it will be forwarded (values swapped in), so a value can never carry a
/// request outside them; a value that cannot stand in the request line as
/// is would change its shape and is refused (docs/security.md "Secrets").
pub(super) fn decide(
    head: &Head,
    path: &str,
    destination: &Destination,
    access: &Access<'_>,
    upgrade: Option<&str>,
    secrets: &Secrets,
) -> Result<(String, Vec<(String, String)>), DenialReason> {
    decide::request(access, &head.method, path, upgrade)?;
    let forwarded = substitute_head(head, path, destination, secrets)
        .map_err(|_| DenialReason::SecretExfiltration)?;
    if secrets.unplaceable_in_target(&head.target).is_some() {
        return Err(DenialReason::SecretPlacement);
    }
    decide::request(access, &head.method, &forwarded.0, upgrade)?;
    Ok(forwarded)
}

/// The `Upgrade` value when the request asks for one (HTTP/1.1, listed in
/// `Connection`).
pub(super) fn requested_upgrade(head: &Head) -> Option<String> {
    if head.version != "HTTP/1.1"
        || !connection_tokens(&head.headers)
            .iter()
            .any(|t| t == "upgrade")
    {
        return None;
    }
    let mut offered = values(&head.headers, "upgrade");
    let first = offered.next()?;
    (offered.next().is_none() && !first.is_empty()).then(|| first.to_owned())
}

/// The request line's path and header values with stand-ins swapped for
/// `destination`; a stand-in whose secret may not go there (in the target,
/// a value or a field name), or a swapped `TRACE` (which would echo the
/// value back), refuses the request.
pub(super) fn substitute_head(
    head: &Head,
    path: &str,
    destination: &Destination,
    secrets: &Secrets,
) -> Result<(String, Vec<(String, String)>), Exfiltration> {
    if secrets.is_empty() {
        return Ok((path.to_owned(), head.headers.clone()));
    }
    secrets.substitute(&head.target, destination)?;
    let forwarded = secrets.substitute(path, destination)?;
    let mut swapped = matches!(forwarded, std::borrow::Cow::Owned(_));
    let mut headers = Vec::with_capacity(head.headers.len());
    for (name, value) in &head.headers {
        if let Some(found) = secrets.find_bound_elsewhere(name.as_bytes(), None) {
            return Err(found);
        }
        let value = secrets.substitute(value, destination)?;
        swapped |= matches!(value, std::borrow::Cow::Owned(_));
        headers.push((name.clone(), value.into_owned()));
    }
    if swapped && head.method.eq_ignore_ascii_case("TRACE") {
        let name = secrets
            .find_bound_elsewhere(head_text(head).as_bytes(), None)
            .map(|found| found.name)
            .unwrap_or_default();
        return Err(Exfiltration { name });
    }
    Ok((forwarded.into_owned(), headers))
}

pub(super) fn head_text(head: &Head) -> String {
    let mut text = head.target.clone();
    for (name, value) in &head.headers {
        text.push_str(name);
        text.push_str(value);
    }
    text
}

/// The `Host` value for `destination`, without the scheme's default port.
pub(super) fn host_value(destination: &Destination, default_port: u16) -> String {
    if destination.port == default_port {
        destination.host.to_string()
    } else {
        destination.to_string()
    }
}

/// `http://host[:port]/path?query` into its destination and origin-form path.
pub(in crate::network) fn absolute_form(target: &str) -> Result<(Destination, String), Refusal> {
    let scheme_end = target.find("://").unwrap_or(0);
    if scheme_end == 0 {
        return Err(refusal(
            "400 Bad Request",
            "a proxy request needs an absolute http:// URL (use CONNECT for https)",
        ));
    }
    if !target[..scheme_end].eq_ignore_ascii_case("http") {
        return Err(refusal(
            "400 Bad Request",
            "only http:// URLs are forwarded (use CONNECT for https)",
        ));
    }
    split_url(&target[scheme_end + 3..], 80)
}

/// `authority[/path]` (after the scheme) into a destination and a path.
pub(super) fn split_url(after: &str, default_port: u16) -> Result<(Destination, String), Refusal> {
    let split = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, path) = after.split_at(split);
    if authority.contains('@') {
        return Err(refusal(
            "400 Bad Request",
            "URLs with user information are refused",
        ));
    }
    let destination = Destination::parse(authority, Some(default_port))
        .map_err(|why| refusal("400 Bad Request", format!("URL host {why}")))?;
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('/') => p.split('#').next().unwrap_or("/").to_owned(),
        p => format!("/{}", p.split('#').next().unwrap_or_default()),
    };
    Ok((destination, path))
}

/// The request head as the destination sees it: origin-form, its own
/// `Host`, hop-by-hop and proxy headers removed, one `Connection` (and the
/// `Upgrade` asked for, if any). `Content-Length` and `Transfer-Encoding`
/// are kept whatever `Connection` lists: the forwarded head is framed as
/// the gateway read it, always. `headers` are `head`'s with values swapped
/// in; what is hop-by-hop is what the client's `Connection` listed, so a
/// swapped value can never drop a header (docs/security.md "Secrets").
pub(super) fn origin_form(
    head: &Head,
    headers: &[(String, String)],
    host: &str,
    path: &str,
    connection: &str,
    upgrade: Option<&str>,
) -> Vec<u8> {
    let (method, version) = (&head.method, &head.version);
    let mut out = format!("{method} {path} {version}\r\n");
    for (name, value) in forwarded_fields(head, headers, host, connection, upgrade) {
        out.push_str(&name);
        out.push_str(": ");
        out.push_str(&value);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// The fields of the head [`origin_form`] writes, in order: `Host`, the
/// client's fields but hop-by-hop and proxy ones, the `Upgrade` asked for,
/// one `Connection`. The engine hands these to hyper without the framing
/// fields, which hyper writes from the body it forwards.
pub(super) fn forwarded_fields(
    head: &Head,
    headers: &[(String, String)],
    host: &str,
    connection: &str,
    upgrade: Option<&str>,
) -> Vec<(String, String)> {
    let listed = connection_tokens(&head.headers);
    let mut fields = vec![("Host".to_owned(), host.to_owned())];
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        let hop = matches!(
            lower.as_str(),
            "host"
                | "connection"
                | "proxy-connection"
                | "keep-alive"
                | "proxy-authorization"
                | "proxy-authenticate"
                | "te"
                | "trailer"
                | "upgrade"
        ) || (listed.contains(&lower)
            && !NOT_NAMED_IN_CONNECTION.contains(&lower.as_str()));
        if !hop {
            fields.push((name.clone(), value.clone()));
        }
    }
    if let Some(upgrade) = upgrade {
        fields.push(("Upgrade".to_owned(), upgrade.to_owned()));
    }
    fields.push(("Connection".to_owned(), connection.to_owned()));
    fields
}
