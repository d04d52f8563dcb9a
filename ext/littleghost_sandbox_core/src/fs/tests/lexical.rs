//! Lexical rules (14.1, 14.4).

use super::*;

#[test]
fn nul_bytes_parent_components_and_outside_paths_are_refused() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "a");
    let before = tree.outside();
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        let nul = PathBuf::from(OsStr::from_bytes(
            format!("{}/a.txt\0x", ws.display()).as_bytes(),
        ));
        assert_tool(broker.read(&nul, "a.txt"), "Path contains a null byte");
        assert_tool(
            broker.write(&nul, "a.txt", b"x"),
            "Path contains a null byte",
        );
        let up = ws.join("../outside/secret.txt");
        assert_tool(
            broker.read(&up, "../outside/secret.txt"),
            "Path escapes the sandbox scope",
        );
        assert_tool(
            broker.write(&up, "x", b"x"),
            "Path escapes the sandbox scope",
        );
        assert_tool(
            broker.replace(&up, "x", b"outside", b"in"),
            "Path escapes the sandbox scope",
        );
        assert_tool(
            broker.list(&ws.join(".."), ".."),
            "Path escapes the sandbox scope",
        );
        let outside = tree.path("outside/secret.txt");
        assert_tool(
            broker.read(&outside, "x"),
            "Path is outside the sandbox scope",
        );
        assert_tool(
            broker.write(&outside, "x", b"x"),
            "Path is outside the sandbox scope",
        );
        assert_tool(
            broker.list(&tree.path("outside"), "x"),
            "Path is outside the sandbox scope",
        );
        assert_tool(
            broker.read(Path::new("a.txt"), "a.txt"),
            "Path is outside the sandbox scope",
        );
        // A sibling sharing a name prefix is not covered.
        tree.file("ws2/a.txt", "sibling");
        assert_tool(
            broker.read(&tree.path("ws2/a.txt"), "x"),
            "Path is outside the sandbox scope",
        );
        for operation in [FsOperation::Read, FsOperation::Write, FsOperation::List] {
            assert!(!broker.allows(operation, &up));
            assert!(!broker.allows(operation, &nul));
            assert!(!broker.allows(operation, &outside));
        }
    }
    assert_eq!(tree.outside(), before);
}

#[test]
fn the_grant_root_is_not_an_entry() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let broker = broker(&[grant(&ws, RW)]);
    assert_tool(broker.read(&ws, "."), "Path must identify a sandbox entry");
    assert_tool(
        broker.write(&ws, ".", b"x"),
        "Path must identify a sandbox entry",
    );
    assert_tool(
        broker.replace(&ws, ".", b"a", b"b"),
        "Path must identify a sandbox entry",
    );
    assert_eq!(broker.list(&ws, ".").unwrap(), "");
    assert!(broker.allows(FsOperation::List, &ws));
    assert!(broker.allows(FsOperation::Write, &ws));
}

#[test]
fn doubled_slashes_and_dots_are_cleaned() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/sub/a.txt", "clean");
    let broker = broker(&[grant(&ws, RO)]);
    let messy = PathBuf::from(format!("{}//sub/./a.txt", ws.display()));
    assert_eq!(broker.read(&messy, "sub/a.txt").unwrap(), "clean");
}
