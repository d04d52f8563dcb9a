//! The filesystem REST API as a client sees it: sandboxd's codes, and the
//! broker's rules (no `..`, no symlink, read-only grants) enforced.

mod support;

use support::{exists, Daemon, Options};

#[test]
fn files_are_written_read_listed_and_removed_as_sandboxd_answers() {
    let daemon = Daemon::start(Options::default());
    let (status, _) = daemon.http(
        "PUT",
        "/v1/files/src%2Fbin%2Frun.sh?mode=0755",
        b"#!/bin/sh\n",
    );
    assert_eq!(status, 204);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(daemon.path("src/bin/run.sh"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        daemon.http("GET", "/v1/files/src%2Fbin%2Frun.sh", b""),
        (200, b"#!/bin/sh\n".to_vec())
    );
    let (status, listing) = daemon.json("GET", "/v1/files/src", b"");
    assert_eq!(status, 200);
    assert_eq!(listing["path"], "/src");
    assert_eq!(listing["entries"][0]["name"], "bin");
    assert_eq!(listing["entries"][0]["type"], "directory");
    let (status, body) = daemon.json("PUT", "/v1/files/x?mode=644", b"");
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("INVALID_ARGUMENT"))
    );
    let (status, body) = daemon.json("GET", "/v1/files/missing", b"");
    assert_eq!((status, body["code"].as_str()), (404, Some("NOT_FOUND")));
    let (status, body) = daemon.json("DELETE", "/v1/files/src", b"");
    assert_eq!((status, body["code"].as_str()), (409, Some("CONFLICT")));
    assert_eq!(
        daemon.http("DELETE", "/v1/files/src?recursive=true", b"").0,
        204
    );
    assert!(!exists(&daemon.path("src")));
    let (status, body) = daemon.json("GET", "/v1/health", b"");
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    let multipart = "Content-Type: multipart/form-data; boundary=x";
    let (status, _) = support::request_with(&daemon, "PUT", "/v1/files/m.txt", multipart, b"--x--");
    assert_eq!(status, 400);
    assert!(!exists(&daemon.path("m.txt")));
}

#[test]
fn traversal_and_a_planted_symlink_are_refused_with_permission_denied() {
    let daemon = Daemon::start(Options::default());
    let outside = daemon.root.parent().unwrap().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), "outside secret").unwrap();
    // What a program in the sandbox (or a second client) could plant.
    std::os::unix::fs::symlink(&outside, daemon.path("link")).unwrap();
    for target in [
        "/v1/files/..%2Foutside%2Fsecret",
        "/v1/files/a%2F..%2F..%2Foutside%2Fsecret",
        "/v1/files/link%2Fsecret",
        "/v1/files/link",
    ] {
        let (status, body) = daemon.json("GET", target, b"");
        assert_eq!(status, 403, "{target}: {body}");
        assert_eq!(body["code"], "PERMISSION_DENIED", "{target}");
        assert!(!body.to_string().contains("outside secret"));
    }
    let (status, body) = daemon.json("PUT", "/v1/files/link%2Fplanted", b"x");
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("PERMISSION_DENIED"))
    );
    let (status, _) = daemon.json("DELETE", "/v1/files/link%2Fsecret", b"");
    assert_eq!(status, 403);
    assert!(!exists(&outside.join("planted")));
    assert_eq!(
        std::fs::read_to_string(outside.join("secret")).unwrap(),
        "outside secret"
    );
    // The listing shows the link as what it is, never its target's entries.
    let (_, listing) = daemon.json("GET", "/v1/files/", b"");
    assert_eq!(listing["entries"][0]["name"], "link");
    assert_eq!(listing["entries"][0]["type"], "file");
}

#[test]
fn a_read_only_grant_refuses_every_write() {
    let daemon = Daemon::start(Options {
        policy: Some(r#"{"files": {"root": "read_only"}}"#),
        ..Options::default()
    });
    std::fs::write(daemon.path("notes.md"), "kept").unwrap();
    assert_eq!(
        daemon.http("GET", "/v1/files/notes.md", b""),
        (200, b"kept".to_vec())
    );
    for (method, target) in [
        ("PUT", "/v1/files/notes.md"),
        ("PUT", "/v1/files/new%2Fdir%2Ffile"),
        ("DELETE", "/v1/files/notes.md"),
    ] {
        let (status, body) = daemon.json(method, target, b"changed");
        assert_eq!(
            (status, body["code"].as_str()),
            (403, Some("PERMISSION_DENIED")),
            "{method} {target}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(daemon.path("notes.md")).unwrap(),
        "kept"
    );
    assert!(!exists(&daemon.path("new")));
}

#[test]
fn a_bad_policy_file_stops_the_daemon_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, r#"{"files": {"root": "rw"}}"#).unwrap();
    let output = std::process::Command::new(support::binary())
        .arg("--root")
        .arg(dir.path().join("root"))
        .arg("--policy")
        .arg(&policy)
        .args(["--grpc", "127.0.0.1:0", "--rest", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("sandbox files access for root must be read_only or read_write"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_calls_scope_narrows_and_never_widens() {
    let daemon = Daemon::start(Options::default());
    std::fs::write(daemon.path("notes.md"), "kept").unwrap();
    let read_only = r#"x-littleghost-scope: {"files": {"root": "read_only"}}"#;
    let (status, body) =
        support::request_with(&daemon, "PUT", "/v1/files/notes.md", read_only, b"changed");
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        std::fs::read_to_string(daemon.path("notes.md")).unwrap(),
        "kept"
    );
    let (status, body) =
        support::request_with(&daemon, "GET", "/v1/files/notes.md", read_only, b"");
    assert_eq!((status, body.as_slice()), (200, &b"kept"[..]));
    let nothing = r#"x-littleghost-scope: {"files": {}}"#;
    assert_eq!(
        support::request_with(&daemon, "GET", "/v1/files/notes.md", nothing, b"").0,
        403
    );
    let malformed = r#"x-littleghost-scope: {"file": {}}"#;
    assert_eq!(
        support::request_with(&daemon, "GET", "/v1/files/notes.md", malformed, b"").0,
        400
    );
    // Without a scope the policy's own grant writes.
    assert_eq!(daemon.http("PUT", "/v1/files/notes.md", b"changed").0, 204);

    let strict = Daemon::start(Options {
        policy: Some(r#"{"files": {"root": "read_only"}}"#),
        ..Options::default()
    });
    let widen = r#"x-littleghost-scope: {"files": {"root": "read_write"}}"#;
    let (status, body) = support::request_with(&strict, "PUT", "/v1/files/x", widen, b"x");
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    assert!(!exists(&strict.path("x")));
}

#[test]
fn refusals_stream_back_as_json_lines() {
    use std::io::{Read, Write};
    let daemon = Daemon::start(Options::default());
    assert_eq!(daemon.http("GET", "/v1/files/..%2Fsecret", b"").0, 403);
    let mut stream = std::net::TcpStream::connect(&daemon.rest).unwrap();
    let request = format!(
        "GET /v1/x-littleghost/denials?replay=true HTTP/1.1\r\nHost: {}\r\n\r\n",
        daemon.rest
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    // The stream stays open: read until the replayed denial's line arrived.
    while !seen.ends_with(b"\n") || !String::from_utf8_lossy(&seen).contains("}\n") {
        let read = stream.read(&mut buffer).unwrap();
        assert!(
            read > 0,
            "the stream ended: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..read]);
    }
    let text = String::from_utf8_lossy(&seen).to_string();
    let line = text
        .lines()
        .find(|line| line.starts_with('{'))
        .expect("a JSON line");
    let denial: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(denial["kind"], "filesystem");
    assert_eq!(denial["operation"], "read");
    assert_eq!(denial["reason"], "escapes_scope");
    assert_eq!(denial["target"], "../secret");
}

#[test]
fn the_replace_extension_is_the_brokers_replace_in_one_call() {
    let daemon = Daemon::start(Options::default());
    std::fs::write(daemon.path("notes.md"), "alpha beta").unwrap();
    // The old text's 4 bytes, then the new text's.
    let (status, body) = daemon.json(
        "POST",
        "/v1/x-littleghost/replace/notes.md?old_bytes=4",
        b"betagamma",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"], "Wrote 11 bytes to notes.md");
    assert_eq!(
        std::fs::read_to_string(daemon.path("notes.md")).unwrap(),
        "alpha gamma"
    );
    let (status, body) = daemon.json(
        "POST",
        "/v1/x-littleghost/replace/notes.md?old_bytes=4",
        b"zetax",
    );
    assert_eq!(status, 400);
    assert_eq!(body["message"], "Text was not found in notes.md");
    let (status, body) = daemon.json(
        "POST",
        "/v1/x-littleghost/replace/..%2Fouter?old_bytes=1",
        b"ab",
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("PERMISSION_DENIED"))
    );
    let (status, _) = daemon.json("POST", "/v1/x-littleghost/replace/notes.md", b"ab");
    assert_eq!(status, 400);
    // A read-only scope on the call: refused, the file unchanged.
    let scope = r#"x-littleghost-scope: {"files": {"root": "read_only"}}"#;
    let (status, body) = support::request_with(
        &daemon,
        "POST",
        "/v1/x-littleghost/replace/notes.md?old_bytes=5",
        scope,
        b"alphaomega",
    );
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        std::fs::read_to_string(daemon.path("notes.md")).unwrap(),
        "alpha gamma"
    );
}

#[test]
fn a_put_asked_not_to_create_parents_writes_as_a_local_write() {
    let daemon = Daemon::start(Options::default());
    let local = "x-littleghost-create-parents: false";
    let (status, body) =
        support::request_with(&daemon, "PUT", "/v1/files/new%2Fnote.md", local, b"x");
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("Write target parent does not exist"));
    assert!(!exists(&daemon.path("new")));
    let (status, _) = support::request_with(&daemon, "PUT", "/v1/files/note.md", local, b"x");
    assert_eq!(status, 204);
    assert_eq!(
        std::fs::read_to_string(daemon.path("note.md")).unwrap(),
        "x"
    );
    let (status, _) =
        support::request_with(&daemon, "PUT", "/v1/files/note.md?mode=0600", local, b"x");
    assert_eq!(status, 400);
    // Without the header, the reference's PUT: parents made.
    assert_eq!(daemon.http("PUT", "/v1/files/new%2Fnote.md", b"y").0, 204);
    assert_eq!(
        std::fs::read_to_string(daemon.path("new/note.md")).unwrap(),
        "y"
    );
}
