//! Unit tests of the workspace path model.

use super::*;

fn layout() -> Layout {
    Layout {
        root: PathBuf::from("/w"),
        paths: vec![
            ("source".into(), PathBuf::from("/w/src")),
            ("deep".into(), PathBuf::from("/w/src/deep")),
            ("home".into(), PathBuf::from("/home/agent")),
        ],
    }
}

fn resolve(reference: &str) -> Result<PathBuf> {
    layout().resolve(OsStr::new(reference))
}

fn message(result: Result<PathBuf>) -> String {
    result.unwrap_err().to_string()
}

#[test]
fn workspace_resolve_relative_and_named() {
    assert_eq!(
        resolve("notes/a.md").unwrap(),
        PathBuf::from("/w/notes/a.md")
    );
    assert_eq!(resolve(".").unwrap(), PathBuf::from("/w"));
    assert_eq!(resolve("a//b/./c").unwrap(), PathBuf::from("/w/a/b/c"));
    assert_eq!(
        resolve("workspace://home").unwrap(),
        PathBuf::from("/home/agent")
    );
    assert_eq!(
        resolve("workspace://home/.x/y").unwrap(),
        PathBuf::from("/home/agent/.x/y")
    );
    // The root has the reserved name `root`.
    assert_eq!(resolve("workspace://root").unwrap(), PathBuf::from("/w"));
    assert_eq!(
        resolve("workspace://root/notes/a.md").unwrap(),
        PathBuf::from("/w/notes/a.md")
    );
    assert!(message(resolve("workspace://root/../etc")).contains("traversal is not allowed"));
}

#[test]
fn workspace_resolve_rejects_bad_references() {
    assert!(message(resolve("/etc/passwd")).contains("must be relative or use workspace://"));
    assert!(message(resolve("")).contains("must not be empty"));
    assert!(message(resolve("workspace://home/")).contains("must not be empty"));
    assert!(message(resolve("workspace:///x")).contains("must name a configured path"));
    assert!(message(resolve("a/../../etc")).contains("traversal is not allowed"));
    assert!(message(resolve("..")).contains("traversal is not allowed"));
    assert!(message(resolve("workspace://home/../w")).contains("traversal is not allowed"));
    assert!(message(resolve("~/x")).contains("escapes its root"));
    assert!(message(resolve("a\0b")).contains("null byte"));
    let kind = |reference: &str| resolve(reference).unwrap_err().kind();
    assert_eq!(kind("workspace://nope/x"), crate::error::Kind::Key);
    assert_eq!(kind(".."), crate::error::Kind::Argument);
}

#[test]
fn workspace_resolve_allows_dots_inside_names() {
    assert_eq!(resolve("..a/b..").unwrap(), PathBuf::from("/w/..a/b.."));
}

#[test]
fn workspace_reference_prefers_the_longest_named_path() {
    let l = layout();
    assert_eq!(
        l.reference(Path::new("/w/src/deep/x")).unwrap(),
        "workspace://deep/x"
    );
    assert_eq!(
        l.reference(Path::new("/w/src/deep")).unwrap(),
        "workspace://deep"
    );
    assert_eq!(
        l.reference(Path::new("/w/src/a")).unwrap(),
        "workspace://source/a"
    );
    assert_eq!(
        l.reference(Path::new("/w/notes/a.md")).unwrap(),
        "notes/a.md"
    );
    assert_eq!(l.reference(Path::new("/w")).unwrap(), ".");
    assert_eq!(l.reference(Path::new("/w/srcx")).unwrap(), "srcx");
    let err = l.reference(Path::new("/etc")).unwrap_err();
    assert_eq!(err, Error::Outside);
    assert_eq!(err.kind(), crate::error::Kind::Argument);
}

#[test]
fn workspace_reference_inverts_resolve() {
    let l = layout();
    for reference in ["a/b", "workspace://deep/q", "workspace://home", "."] {
        let physical = l.resolve(OsStr::new(reference)).unwrap();
        assert_eq!(l.reference(&physical).unwrap(), reference);
    }
}

/// Every path `reference` returns resolves back to the same
/// physical path, whatever bytes its names hold (`~notes.md` was refused).
#[test]
fn every_reference_resolves_back_to_its_physical_path() {
    use std::os::unix::ffi::OsStrExt;
    let l = layout();
    let names: [&[u8]; 9] = [
        b"~notes.md",
        b"notes.md\nINSTRUCTIONS.md",
        b"caf\xe9.md",
        b"\"quoted\"",
        b"\"open",
        b" lead",
        b"x~",
        b"~",
        b"tab\t\r\x7f",
    ];
    for base in ["/w", "/w/sub", "/w/src", "/w/src/deep/x", "/home/agent"] {
        for name in names {
            let physical = Path::new(base).join(OsStr::from_bytes(name));
            let reference = l.reference(&physical).unwrap();
            assert!(!reference.as_bytes().contains(&b'\n'), "{reference:?}");
            assert_eq!(l.resolve(&reference).unwrap(), physical, "{reference:?}");
        }
    }
    assert_eq!(
        l.reference(Path::new("/w/~notes.md")).unwrap(),
        "\"~notes.md\""
    );
    assert_eq!(
        l.reference(Path::new("/w/src/a\nb")).unwrap(),
        "workspace://source/\"a\\nb\""
    );
    // A plain leading `~` still means File.expand_path's home (3.3).
    assert!(message(resolve("~/x")).contains("escapes its root"));
    assert!(message(resolve("workspace://source/~x")).contains("escapes its root"));
    assert!(message(resolve("\"..\"/x")).contains("cannot be empty"));
    assert!(message(resolve("\"a")).contains("malformed quoted name"));
}

#[test]
fn workspace_variable_names() {
    assert_eq!(variable_name("source"), "LITTLE_GHOST_WORKSPACE_SOURCE");
    assert_eq!(
        variable_name("foo-bar.2"),
        "LITTLE_GHOST_WORKSPACE_FOO_BAR_2"
    );
    assert_eq!(variable_name("é"), "LITTLE_GHOST_WORKSPACE__");
}

#[test]
fn workspace_environment_lists_root_then_paths() {
    let env = layout().environment();
    assert_eq!(env[0], (ROOT_VARIABLE.to_owned(), PathBuf::from("/w")));
    assert_eq!(
        env[3],
        (
            "LITTLE_GHOST_WORKSPACE_HOME".to_owned(),
            PathBuf::from("/home/agent")
        )
    );
    assert_eq!(env.len(), 4);
}

#[test]
fn workspace_w17_names_are_checked() {
    assert!(check_path_names(["source", "home"]).is_ok());
    let err = check_path_names(["root"]).unwrap_err();
    assert_eq!(err, Error::ReservedRoot);
    let err = check_path_names(["ROOT"]).unwrap_err();
    assert!(matches!(err, Error::RootVariable { ref name, .. } if name == "ROOT"));
    let err = check_path_names(["foo-bar", "foo_bar"]).unwrap_err();
    assert_eq!(
        err,
        Error::SameVariable {
            first: "foo-bar".into(),
            second: "foo_bar".into(),
            variable: "LITTLE_GHOST_WORKSPACE_FOO_BAR".into()
        }
    );
    assert_eq!(err.kind(), crate::error::Kind::Argument);
}

#[test]
fn workspace_environment_entries_are_checked() {
    let ok = check_environment_entry(OsStr::new("A"), OsStr::new("b=c"));
    assert!(ok.is_ok());
    for bad in ["", "A=B", "A\0"] {
        assert!(
            check_environment_entry(OsStr::new(bad), OsStr::new("x")).is_err(),
            "{bad:?}"
        );
    }
    assert!(check_environment_entry(OsStr::new("A"), OsStr::new("x\0y")).is_err());
}

#[test]
fn workspace_relative_paths_stay_beneath_root() {
    assert!(check_relative_path("c", Path::new("/w"), Path::new("/w/cache")).is_ok());
    assert!(check_relative_path("c", Path::new("/w"), Path::new("/w")).is_ok());
    let err = check_relative_path("c", Path::new("/w"), Path::new("/cache")).unwrap_err();
    assert_eq!(err, Error::RelativeOutside("c".into()));
    assert!(check_relative_path("c", Path::new("/w"), Path::new("/wx")).is_err());
}

#[test]
fn workspace_identities_detect_aliases_and_swaps() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
    let aliased = Layout {
        root: root.clone(),
        paths: vec![
            ("a".into(), root.join("a")),
            ("l".into(), root.join("link")),
        ],
    };
    let err = aliased.capture_identities().unwrap_err();
    assert_eq!(
        err.to_string(),
        "workspace paths must not alias the same directory: a, l"
    );

    let clean = Layout {
        root: root.clone(),
        paths: vec![("a".into(), root.join("a")), ("b".into(), root.join("b"))],
    };
    let ids = clean.capture_identities().unwrap();
    assert_eq!(ids.len(), 3);
    clean.validate(&ids).unwrap();
    std::fs::rename(root.join("b"), root.join("b-old")).unwrap();
    std::fs::create_dir(root.join("b")).unwrap();
    let err = clean.validate(&ids).unwrap_err();
    assert_eq!(err, Error::Moved("b".into()));
    std::fs::remove_dir(root.join("b")).unwrap();
    let err = clean.validate(&ids).unwrap_err();
    assert!(err.to_string().contains(": b"));
}

#[test]
fn workspace_validate_sees_a_directory_moved_behind_a_symlink() {
    // The path still leads to the very same directory (same dev and ino),
    // but through a symlink now, so its realpath changed (3.7).
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(base.join("parent/ws")).unwrap();
    let layout = Layout {
        root: base.join("parent/ws"),
        paths: vec![],
    };
    let ids = layout.capture_identities().unwrap();
    layout.validate(&ids).unwrap();
    std::fs::rename(base.join("parent"), base.join("moved")).unwrap();
    std::os::unix::fs::symlink(base.join("moved"), base.join("parent")).unwrap();
    let err = layout.validate(&ids).unwrap_err();
    assert_eq!(err, Error::Moved("root".into()));
}

#[test]
fn workspace_validate_accepts_a_root_configured_through_a_symlink() {
    // Such a root is not its own realpath, so validation takes the full
    // realpath comparison; it passes until the target is swapped.
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(base.join("real")).unwrap();
    std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
    let layout = Layout {
        root: base.join("link"),
        paths: vec![],
    };
    let ids = layout.capture_identities().unwrap();
    assert_eq!(ids[0].1.realpath, base.join("real"));
    layout.validate(&ids).unwrap();
    std::fs::rename(base.join("real"), base.join("old")).unwrap();
    std::fs::create_dir(base.join("real")).unwrap();
    let err = layout.validate(&ids).unwrap_err();
    assert!(err.to_string().ends_with(": root"));
}

#[test]
fn workspace_resolve_joins_clean_references_like_cleaning_would() {
    let cases = [
        ("/", "a/b"),
        ("/w", "a"),
        ("/w", "a/b.c/d"),
        ("/w/x", "..a/b.."),
    ];
    for (root, reference) in cases {
        let layout = Layout {
            root: PathBuf::from(root),
            paths: vec![],
        };
        let expected = paths::clean(&Path::new(root).join(reference));
        assert_eq!(
            layout.resolve(OsStr::new(reference)).unwrap(),
            expected,
            "{root} {reference}"
        );
    }
    let unclean = Layout {
        root: PathBuf::from("/w//x/"),
        paths: vec![],
    };
    assert_eq!(
        unclean.resolve(OsStr::new("a//b/")).unwrap(),
        PathBuf::from("/w/x/a/b")
    );
}

#[test]
fn workspace_root_alias_names_root() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout {
        root: dir.path().to_path_buf(),
        paths: vec![("here".into(), dir.path().to_path_buf())],
    };
    let err = layout.capture_identities().unwrap_err();
    assert!(err.to_string().ends_with(": root, here"));
}

#[test]
fn a_grant_must_name_root_or_a_workspace_path() {
    check_grant_names([("files", "root"), ("runtime_paths", "home")], &["home"]).unwrap();
    let err = check_grant_names([("files", "docs")], &["source", "home"]).unwrap_err();
    assert_eq!(err.kind(), crate::error::Kind::Policy);
    assert_eq!(
        err,
        Error::UnknownGrant {
            category: "files".into(),
            name: "docs".into(),
            known: vec!["root".into(), "source".into(), "home".into()]
        }
    );
}

#[test]
fn workspace_configure_applies_the_rules_of_new() {
    let entry = |name: &str, given: &str, expanded: &str| PathEntry {
        name: name.to_owned(),
        given: given.into(),
        expanded: expanded.into(),
    };
    let (layout, relative) = configure(
        "/w".into(),
        vec![entry("src", "src", "/w/src"), entry("home", "/h", "/h")],
    )
    .unwrap();
    assert_eq!(layout.paths.len(), 2);
    assert_eq!(relative, vec!["src".to_owned()]);
    let err = configure("/w".into(), vec![entry("src", "", "/w")]).unwrap_err();
    assert_eq!(err, Error::EmptyPath("src".into()));
    let err = configure("/w".into(), vec![entry("up", "../x", "/x")]).unwrap_err();
    assert_eq!(err, Error::RelativeOutside("up".into()));
    let err = configure("/w".into(), vec![entry("root", "r", "/w/r")]).unwrap_err();
    assert_eq!(err, Error::ReservedRoot);
}

#[test]
fn workspace_prepare_creates_relative_paths_and_requires_absolute_ones() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let layout = Layout {
        root: base.join("ws"),
        paths: vec![
            ("src".to_owned(), base.join("ws/src")),
            ("home".to_owned(), base.join("home")),
        ],
    };
    match layout.prepare(&["src".to_owned()]) {
        Err(OpenError::Rule(err)) => assert_eq!(
            err,
            crate::fs::anchor::Refusal::AbsoluteMissing("home".into()).into()
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        base.join("ws/src").is_dir(),
        "relative paths are created first"
    );
    std::fs::create_dir(base.join("home")).unwrap();
    let (pinned, anchors) = layout.prepare(&["src".to_owned()]).unwrap();
    assert_eq!(pinned.len(), 3);
    assert_eq!(anchors.iter().count(), 3);
    assert!(layout.validate(&pinned).is_ok());
}

/// What the file tools raise for a reference the workspace
/// would not resolve; escapes are refusals (so denials), malformed ones not.
#[test]
fn a_refused_reference_is_a_refusal_when_it_tries_to_leave() {
    use crate::denial::Reason;
    let classify = |reference: &str| {
        let error = crate::Error::from(resolve(reference).unwrap_err());
        let message = error.message();
        let refused = resolve::refused_reference(reference.as_bytes(), error);
        assert_eq!(refused.message(), message, "{reference}: same message");
        refused.refusal().map(|refusal| refusal.reason)
    };
    assert_eq!(classify("../x"), Some(Reason::EscapesScope));
    assert_eq!(classify("notes/../../x"), Some(Reason::EscapesScope));
    assert_eq!(classify("~/x"), Some(Reason::EscapesScope));
    assert_eq!(
        classify("workspace://source/../x"),
        Some(Reason::EscapesScope)
    );
    assert_eq!(classify("/etc/passwd"), Some(Reason::OutsideScope));
    assert_eq!(classify("workspace://nope/x"), Some(Reason::OutsideScope));
    assert_eq!(classify("workspace:///x"), Some(Reason::OutsideScope));
    assert_eq!(classify("workspace://"), Some(Reason::OutsideScope));
    assert_eq!(classify(""), None);
    assert_eq!(classify("a\0b"), None);
    assert_eq!(
        resolve::refused_reference(b"a\0b", crate::error::argument("x")),
        crate::error::tool("x")
    );
    let other = crate::error::tool("Workspace root changed after initialization");
    assert_eq!(resolve::refused_reference(b"../x", other.clone()), other);
}

#[test]
fn a_named_reference_is_relative_after_its_name() {
    // Read as a host path before: `workspace://root//w/a.txt` gave `/w/a.txt`
    // and `workspace://source//x` said it escapes.
    for reference in [
        "workspace://root//w/a.txt",
        "workspace://source//x",
        "workspace://home///etc",
    ] {
        assert!(
            message(resolve(reference)).contains("must be relative after workspace://NAME/"),
            "{reference}"
        );
    }
    assert_eq!(
        resolve("workspace://source/x").unwrap(),
        PathBuf::from("/w/src/x")
    );
}

#[test]
fn a_directory_not_created_is_named_as_the_caller_shows_names() {
    let symbol = |name: &str| format!(":{name}");
    assert_eq!(
        OpenError::not_created(Some("cache"), &symbol),
        "could not create workspace path :cache"
    );
    assert_eq!(
        OpenError::not_created(None, &symbol),
        "could not create the workspace root"
    );
}
