//! Allows (14.12), path comparisons, OS failures and how refusals are named.

use super::*;

#[test]
fn allows_mirrors_the_operations() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    let rt = tree.dir("ws/rt");
    tree.file("ws/a.txt", "a");
    tree.file("ws/src/lib.rb", "code");
    symlink(ws.join("a.txt"), ws.join("link.txt")).unwrap();
    for broker in brokers(&[grant(&ws, RW), grant(&src, RO), runtime(&rt, RW)], &[]) {
        let allows = |operation, rel: &str| broker.allows(operation, &ws.join(rel));
        assert!(allows(FsOperation::Read, "a.txt"));
        assert!(allows(FsOperation::Write, "a.txt"));
        assert!(allows(FsOperation::Replace, "a.txt"));
        assert!(allows(FsOperation::List, "src"));
        assert!(allows(FsOperation::Read, "src/lib.rb"));
        assert!(!allows(FsOperation::Write, "src/lib.rb"));
        assert!(!allows(FsOperation::Replace, "src/new.rb"));
        assert!(allows(FsOperation::Write, "new.txt"));
        assert!(!allows(FsOperation::Read, "new.txt"));
        assert!(!allows(FsOperation::Read, "link.txt"));
        assert!(!allows(FsOperation::Read, "rt/x"));
        assert!(!allows(FsOperation::List, "rt"));
        assert!(!allows(FsOperation::Write, "missing/new.txt"));
        assert!(broker.allows(FsOperation::List, &ws));
        assert!(broker.allows(FsOperation::Read, &ws));
        assert!(!broker.allows(FsOperation::Read, &tree.path("outside/secret.txt")));
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn openat2_is_used_on_this_kernel() {
    // Linux >= 5.6 has openat2; if this fails on an older or filtered kernel,
    // the fallback is in use and still covered by every two-strategy test.
    assert_eq!(walk::kernel_strategy(), walk::Strategy::Beneath);
}

#[test]
fn byte_path_comparisons_agree_with_component_comparisons() {
    let clean = [
        "/",
        "/a",
        "/ab",
        "/a/b",
        "/a/bc",
        "/a/b/c",
        "/ab/c",
        "/b",
        "/a/b/c/d.txt",
        "/a.b/c",
    ];
    for path in clean {
        assert!(is_clean_absolute(path.as_bytes()), "{path}");
        for base in clean {
            let expected = Path::new(path).strip_prefix(base).ok();
            assert_eq!(
                clean_remainder(Path::new(path), Path::new(base)),
                expected,
                "{path} - {base}"
            );
        }
    }
    for unclean in [
        "", "a", "//", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/a/..",
    ] {
        assert!(!is_clean_absolute(unclean.as_bytes()), "{unclean:?}");
    }
}

#[test]
fn unclean_physical_paths_are_still_cleaned_and_checked() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/d/a.txt", "text");
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        let doubled = PathBuf::from(format!("{}//d/./a.txt", ws.display()));
        assert_eq!(broker.read(&doubled, "d/a.txt").unwrap(), "text");
        let escaping = PathBuf::from(format!("{}/d/../../outside/x", ws.display()));
        assert_tool(
            broker.read(&escaping, "x"),
            "Path escapes the sandbox scope",
        );
        let sibling = PathBuf::from(format!("{}x/a.txt", ws.display()));
        assert_tool(broker.read(&sibling, "x"), OUTSIDE);
    }
}

#[test]
fn unnamed_os_failures_never_carry_the_os_error_text() {
    use rustix::io::Errno;
    let io = super::io_error(Errno::IO);
    assert_eq!(io.to_string(), "Sandbox filesystem operation failed");
    assert!(!io.to_string().contains("Input/output"));
    let full = super::io_error(Errno::NOSPC);
    assert_eq!(
        full.to_string(),
        "Sandbox filesystem operation failed: no space left on the host filesystem"
    );
    assert_eq!(Error::from(full).kind(), crate::error::Kind::Tool);
}

#[test]
fn pins_must_be_the_directories_the_workspace_recorded_at_open() {
    let tree = Tree::new();
    let source = tree.dir("ws/src/lib");
    tree.dir("ws/d/lib");
    let recorded = vec![
        (
            "root".to_owned(),
            Identity::capture(&tree.path("ws")).unwrap(),
        ),
        ("source".to_owned(), Identity::capture(&source).unwrap()),
    ];
    let grants = [grant(&tree.path("ws"), RW), grant(&source, RO)];
    broker(&grants).check_pins(&recorded).unwrap();
    // Exchanged before the broker is built: the path now names the decoy.
    std::fs::rename(tree.path("ws/src"), tree.path("ws/tmp")).unwrap();
    std::fs::rename(tree.path("ws/d"), tree.path("ws/src")).unwrap();
    let err = broker(&grants).check_pins(&recorded).unwrap_err();
    assert_eq!(
        err.to_string(),
        "workspace path changed after opening: source"
    );
}

#[test]
fn refusals_name_the_logical_path_and_the_limit() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/big.log", &"x".repeat(2000));
    tree.dir("ws/sub");
    let limits = FsLimits {
        read_bytes: 1000,
        write_bytes: 10,
        list_entries: 1,
    };
    let broker = Broker::new(vec![grant(&ws, RW)], Vec::new(), limits).unwrap();
    let message = |result: Result<String>| result.unwrap_err().message().to_owned();
    assert_eq!(
        message(broker.read(&ws.join("notes/missing.md"), "notes/missing.md")),
        "Path does not exist: notes/missing.md"
    );
    assert_eq!(
        message(broker.read(&ws.join("big.log"), "big.log")),
        "File exceeds the read limit of 1000 bytes: big.log"
    );
    assert_eq!(
        message(broker.write(&ws.join("a.txt"), "a.txt", &[b'y'; 11])),
        "Content exceeds the write limit of 10 bytes: a.txt"
    );
    assert_eq!(
        message(broker.list(&ws, ".")),
        "Directory exceeds the listing limit of 1 entries: ."
    );
    assert_eq!(
        message(broker.read(&ws.join("sub"), "sub")),
        "Path is not a file: sub"
    );
    let read_only = Broker::new(vec![grant(&ws, RO)], Vec::new(), LIMITS).unwrap();
    assert_eq!(
        message(read_only.write(&ws.join("app.rb"), "source/app.rb", b"x")),
        "Sandbox scope is read-only: source/app.rb"
    );
}

/// A refusal of policy carries its rule, so the binding
/// records a denial without parsing the message; other failures do not.
#[test]
fn refusals_carry_their_rule_and_other_failures_do_not() {
    use crate::denial::Reason;
    let tree = Tree::new();
    let ws = tree.path("ws");
    let docs = tree.dir("ws/docs");
    tree.file("ws/docs/a.md", "a");
    tree.file("ws/big.txt", &"x".repeat(LIMITS.read_bytes as usize + 1));
    tree.dir("outside");
    let broker = broker(&[grant(&ws, RW), grant(&docs, RO)]);
    let reason = |result: Result<String>| result.unwrap_err().refusal().map(|r| r.reason);
    assert_eq!(
        reason(broker.write(&docs.join("a.md"), "docs/a.md", b"b")),
        Some(Reason::ReadOnly)
    );
    let refused = broker
        .write(&docs.join("a.md"), "docs/a.md", b"b")
        .unwrap_err();
    assert_eq!(refused.message(), "Sandbox scope is read-only: docs/a.md");
    assert_eq!(
        reason(broker.read(&tree.path("outside/x"), "../outside/x")),
        Some(Reason::OutsideScope)
    );
    assert_eq!(
        reason(broker.read(&ws.join("big.txt"), "big.txt")),
        Some(Reason::ReadLimit)
    );
    assert_eq!(reason(broker.read(&ws.join("missing"), "missing")), None);
}
