//! Symlinks (14.5), never followed.

use super::*;

#[test]
fn a_symlink_as_the_last_component_is_refused() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/inside.txt", "inside");
    symlink(tree.path("outside/secret.txt"), ws.join("out.txt")).unwrap();
    symlink(ws.join("inside.txt"), ws.join("in.txt")).unwrap();
    symlink("inside.txt", ws.join("rel.txt")).unwrap();
    symlink(tree.path("outside/created.txt"), ws.join("dangling.txt")).unwrap();
    let before = tree.outside();
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        for name in ["out.txt", "in.txt", "rel.txt", "dangling.txt"] {
            let path = ws.join(name);
            assert_tool(broker.read(&path, name), "Path cannot be a symbolic link");
            assert_tool(
                broker.replace(&path, name, b"secret", b"x"),
                "Path cannot be a symbolic link",
            );
            assert_tool(
                broker.write(&path, name, b"owned"),
                "Write target cannot be a symbolic link",
            );
            assert!(!broker.allows(FsOperation::Read, &path));
            assert!(!broker.allows(FsOperation::Write, &path));
            assert!(std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink());
        }
    }
    assert_eq!(tree.content("ws/inside.txt"), "inside");
    assert_eq!(tree.outside(), before);
    assert!(!tree.path("outside/created.txt").exists());
}

#[test]
fn a_symlink_in_the_middle_is_refused() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/sub/a.txt", "inside");
    symlink(tree.path("outside"), ws.join("out")).unwrap();
    symlink(ws.join("sub"), ws.join("in")).unwrap();
    // Relative links that stay inside are refused too (RESOLVE_BENEATH alone would follow them).
    symlink("sub", ws.join("rel")).unwrap();
    symlink("../outside", ws.join("rel-out")).unwrap();
    let before = tree.outside();
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        for (dir, file) in [
            ("out", "secret.txt"),
            ("in", "a.txt"),
            ("rel", "a.txt"),
            ("rel-out", "secret.txt"),
        ] {
            let path = ws.join(dir).join(file);
            let logical = format!("{dir}/{file}");
            assert_tool(
                broker.read(&path, &logical),
                "Path cannot traverse a symbolic link",
            );
            assert_tool(
                broker.write(&path, &logical, b"owned"),
                "Path cannot traverse a symbolic link",
            );
            assert_tool(
                broker.write(&ws.join(dir).join("new.txt"), "new", b"x"),
                "Path cannot traverse a symbolic link",
            );
            assert_tool(
                broker.replace(&path, &logical, b"i", b"x"),
                "Path cannot traverse a symbolic link",
            );
            assert_tool(
                broker.list(&ws.join(dir), dir),
                "Path cannot traverse a symbolic link",
            );
            assert!(!broker.allows(FsOperation::Read, &path));
            assert!(!broker.allows(FsOperation::Write, &ws.join(dir).join("new.txt")));
        }
    }
    assert_eq!(tree.content("ws/sub/a.txt"), "inside");
    assert_eq!(entries(&tree.path("ws/sub")), ["a.txt"]);
    assert_eq!(tree.outside(), before);
}

#[test]
fn a_symlink_swapped_in_after_build_is_refused() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/sub/a.txt", "inside");
    let before = tree.outside();
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        assert_eq!(
            broker.read(&ws.join("sub/a.txt"), "sub/a.txt").unwrap(),
            "inside"
        );
        // Directory swapped for a link to the outside.
        std::fs::rename(ws.join("sub"), ws.join("sub.real")).unwrap();
        symlink(tree.path("outside"), ws.join("sub")).unwrap();
        assert_tool(
            broker.read(&ws.join("sub/secret.txt"), "sub/secret.txt"),
            "Path cannot traverse a symbolic link",
        );
        assert_tool(
            broker.write(&ws.join("sub/secret.txt"), "sub/secret.txt", b"owned"),
            "Path cannot traverse a symbolic link",
        );
        assert_tool(
            broker.list(&ws.join("sub"), "sub"),
            "Path cannot traverse a symbolic link",
        );
        std::fs::remove_file(ws.join("sub")).unwrap();
        std::fs::rename(ws.join("sub.real"), ws.join("sub")).unwrap();
        // File swapped for a link to the outside.
        std::fs::rename(ws.join("sub/a.txt"), ws.join("sub/a.real")).unwrap();
        symlink(tree.path("outside/secret.txt"), ws.join("sub/a.txt")).unwrap();
        assert_tool(
            broker.read(&ws.join("sub/a.txt"), "sub/a.txt"),
            "Path cannot be a symbolic link",
        );
        assert_tool(
            broker.write(&ws.join("sub/a.txt"), "sub/a.txt", b"owned"),
            "Write target cannot be a symbolic link",
        );
        std::fs::remove_file(ws.join("sub/a.txt")).unwrap();
        std::fs::rename(ws.join("sub/a.real"), ws.join("sub/a.txt")).unwrap();
    }
    assert_eq!(tree.outside(), before);
}

#[test]
fn a_symlinked_workspace_path_never_leads_outside() {
    // A named path whose lexical target is a link: the grant pins its realpath,
    // so it stays the realpath's directory even if the link is repointed.
    let tree = Tree::new();
    let ws = tree.path("ws");
    let data = tree.dir("data");
    tree.file("data/a.txt", "data");
    symlink(&data, ws.join("named")).unwrap();
    let named = Grant {
        source: data.clone(),
        target: ws.join("named"),
        access: RW,
        tools: true,
        protect_aliases: false,
    };
    let before = tree.outside();
    for broker in brokers(&[grant(&ws, RW), named.clone()], &[]) {
        assert_eq!(
            broker.read(&ws.join("named/a.txt"), "named/a.txt").unwrap(),
            "data"
        );
        std::fs::remove_file(ws.join("named")).unwrap();
        symlink(tree.path("outside"), ws.join("named")).unwrap();
        assert_tool(
            broker.read(&ws.join("named/secret.txt"), "x"),
            "Path does not exist",
        );
        broker
            .write(&ws.join("named/secret.txt"), "named/secret.txt", b"in data")
            .unwrap();
        assert_eq!(tree.content("data/secret.txt"), "in data");
        std::fs::remove_file(tree.path("data/secret.txt")).unwrap();
        std::fs::remove_file(ws.join("named")).unwrap();
        symlink(&data, ws.join("named")).unwrap();
    }
    assert_eq!(tree.outside(), before);
}
