//! Grants and nesting (14.4, 14.7).

use super::*;

#[test]
fn a_read_only_grant_refuses_writes() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "old");
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        assert_tool(
            broker.write(&ws.join("a.txt"), "a.txt", b"new"),
            "Sandbox scope is read-only",
        );
        assert_tool(
            broker.write(&ws.join("b.txt"), "b.txt", b"new"),
            "Sandbox scope is read-only",
        );
        assert_tool(
            broker.replace(&ws.join("a.txt"), "a.txt", b"old", b"new"),
            "Sandbox scope is read-only",
        );
        assert_eq!(broker.read(&ws.join("a.txt"), "a.txt").unwrap(), "old");
        assert!(!broker.allows(FsOperation::Write, &ws.join("a.txt")));
        assert!(!broker.allows(FsOperation::Replace, &ws.join("a.txt")));
        assert!(broker.allows(FsOperation::Read, &ws.join("a.txt")));
    }
    assert_eq!(entries(&ws), ["a.txt"]);
    assert_eq!(tree.content("ws/a.txt"), "old");
}

#[test]
fn a_read_only_grant_nested_in_a_writable_root_stays_read_only() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    tree.file("ws/src/lib.rb", "code");
    tree.dir("ws/src/deep");
    for protect_aliases in [true, false] {
        let nested = Grant {
            protect_aliases,
            ..grant(&src, RO)
        };
        for broker in brokers(&[grant(&ws, RW), nested], &[]) {
            assert_tool(
                broker.write(&src.join("lib.rb"), "src/lib.rb", b"owned"),
                "Sandbox scope is read-only",
            );
            assert_tool(
                broker.write(&src.join("deep/new.rb"), "src/deep/new.rb", b"x"),
                "Sandbox scope is read-only",
            );
            assert_tool(
                broker.replace(&src.join("lib.rb"), "src/lib.rb", b"code", b"x"),
                "Sandbox scope is read-only",
            );
            assert_eq!(
                broker
                    .write(&ws.join("notes.md"), "notes.md", b"yes")
                    .unwrap(),
                "Wrote 3 bytes to notes.md"
            );
            assert!(!broker.allows(FsOperation::Write, &src.join("new.rb")));
            assert!(broker.allows(FsOperation::Write, &ws.join("new.rb")));
        }
    }
    assert_eq!(tree.content("ws/src/lib.rb"), "code");
    assert_eq!(entries(&src), ["deep", "lib.rb"]);
    assert_eq!(entries(&src.join("deep")), Vec::<String>::new());
}

#[test]
fn a_writable_grant_nested_in_a_read_only_root_is_writable() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let out = tree.dir("ws/out");
    let broker = broker(&[grant(&ws, RO), grant(&out, RW)]);
    assert_eq!(
        broker
            .write(&out.join("r.txt"), "out/r.txt", b"ok")
            .unwrap(),
        "Wrote 2 bytes to out/r.txt"
    );
    assert_tool(
        broker.write(&ws.join("r.txt"), "r.txt", b"no"),
        "Sandbox scope is read-only",
    );
    assert_eq!(entries(&ws), ["out"]);
}

#[test]
fn a_physical_alias_of_a_read_only_directory_keeps_read_only() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    tree.file("ws/src/lib.rb", "code");
    symlink(&src, ws.join("alias")).unwrap();
    // A writable named path that is really the read-only directory.
    let alias = Grant {
        source: src.clone(),
        target: ws.join("alias"),
        access: RW,
        tools: true,
        protect_aliases: false,
    };
    for broker in brokers(&[grant(&ws, RW), grant(&src, RO), alias.clone()], &[]) {
        assert_tool(
            broker.write(&ws.join("alias/lib.rb"), "alias/lib.rb", b"owned"),
            "Sandbox scope is read-only",
        );
        assert_tool(
            broker.write(&ws.join("alias/new.rb"), "alias/new.rb", b"owned"),
            "Sandbox scope is read-only",
        );
        assert_eq!(
            broker
                .read(&ws.join("alias/lib.rb"), "alias/lib.rb")
                .unwrap(),
            "code"
        );
    }
    // Without the named path, the link is just a link inside the writable root.
    let broker = broker(&[grant(&ws, RW), grant(&src, RO)]);
    assert_tool(
        broker.write(&ws.join("alias/lib.rb"), "alias/lib.rb", b"owned"),
        "Path cannot traverse a symbolic link",
    );
    assert_eq!(tree.content("ws/src/lib.rb"), "code");
    assert_eq!(entries(&src), ["lib.rb"]);
}

#[test]
fn a_runtime_only_directory_inside_a_file_grant_is_hidden() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let rt = tree.dir("ws/rt");
    tree.file("ws/rt/secret.txt", "runtime");
    tree.file("ws/a.txt", "a");
    let as_grant = brokers(&[grant(&ws, RW), runtime(&rt, RW)], &[]);
    let as_marker = brokers(&[grant(&ws, RW)], &[runtime(&rt, RW)]);
    for broker in as_grant.into_iter().chain(as_marker) {
        assert_tool(
            broker.read(&rt.join("secret.txt"), "rt/secret.txt"),
            "Path is outside the sandbox scope",
        );
        assert_tool(
            broker.write(&rt.join("new.txt"), "rt/new.txt", b"x"),
            "Path is outside the sandbox scope",
        );
        assert_tool(
            broker.replace(&rt.join("secret.txt"), "rt/secret.txt", b"runtime", b"x"),
            "outside the sandbox scope",
        );
        assert_tool(broker.list(&rt, "rt"), "Path is outside the sandbox scope");
        assert_tool(
            broker.read(&rt.join("."), "rt"),
            "Path must identify a sandbox entry",
        );
        // W11: not even its name shows.
        assert_eq!(broker.list(&ws, ".").unwrap(), "a.txt");
        assert!(!broker.allows(FsOperation::List, &rt));
        assert!(!broker.allows(FsOperation::Read, &rt.join("secret.txt")));
    }
    assert_eq!(entries(&rt), ["secret.txt"]);
    assert_eq!(tree.content("ws/rt/secret.txt"), "runtime");
}

#[test]
fn moving_a_hidden_directory_keeps_it_hidden_and_its_parent_usable() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let rt = tree.dir("ws/deep/rt");
    tree.file("ws/a.txt", "a");
    tree.file("ws/deep/rt/secret.txt", "runtime");
    for broker in brokers(&[grant(&ws, RW), runtime(&rt, RW)], &[]) {
        assert_eq!(broker.list(&ws.join("deep"), "deep").unwrap(), "");
        // Moved elsewhere inside the writable grant, its identity still hides it.
        std::fs::rename(&rt, ws.join("deep/renamed")).unwrap();
        assert_eq!(broker.list(&ws.join("deep"), "deep").unwrap(), "");
        let moved = ws.join("deep/renamed/secret.txt");
        assert_tool(broker.read(&moved, "deep/renamed/secret.txt"), OUTSIDE);
        assert_tool(
            broker.list(&ws.join("deep/renamed"), "deep/renamed"),
            OUTSIDE,
        );
        assert_eq!(broker.read(&ws.join("a.txt"), "a.txt").unwrap(), "a");
        std::fs::rename(ws.join("deep/renamed"), &rt).unwrap();
    }
}

#[test]
fn a_tool_visible_grant_wins_a_tie_with_a_runtime_grant() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let cache = tree.dir("ws/cache");
    tree.file("ws/cache/c.txt", "cached");
    let tie = broker(&[grant(&ws, RW), grant(&cache, RW), runtime(&cache, RW)]);
    assert_eq!(
        tie.read(&cache.join("c.txt"), "cache/c.txt").unwrap(),
        "cached"
    );
    assert_eq!(tie.list(&ws, ".").unwrap(), "cache/");
    tie.write(&cache.join("c.txt"), "cache/c.txt", b"written")
        .unwrap();
    // Read-only if any tied grant is read-only.
    let read_only_tie = broker(&[grant(&ws, RW), grant(&cache, RW), runtime(&cache, RO)]);
    assert_tool(
        read_only_tie.write(&cache.join("c.txt"), "cache/c.txt", b"x"),
        "Sandbox scope is read-only",
    );
    assert_eq!(tree.content("ws/cache/c.txt"), "written");
}
