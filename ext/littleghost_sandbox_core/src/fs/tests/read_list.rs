//! Read (14.8) and list (14.9).

use super::*;

#[test]
fn read_returns_text_and_keeps_a_bom() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/bom.txt", "\u{feff}héllo\n");
    tree.file("ws/empty.txt", "");
    tree.file("ws/a/b/c/deep.txt", "deep");
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        assert_eq!(
            broker.read(&ws.join("bom.txt"), "bom.txt").unwrap(),
            "\u{feff}héllo\n"
        );
        assert_eq!(broker.read(&ws.join("empty.txt"), "empty.txt").unwrap(), "");
        assert_eq!(
            broker
                .read(&ws.join("a/b/c/deep.txt"), "a/b/c/deep.txt")
                .unwrap(),
            "deep"
        );
    }
}

#[test]
fn read_refuses_invalid_utf8_and_missing_paths() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    std::fs::write(ws.join("bin.dat"), [0x66, 0xff, 0x00]).unwrap();
    tree.file("ws/a.txt", "a");
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        assert_tool(
            broker.read(&ws.join("bin.dat"), "bin.dat"),
            "File is not valid UTF-8 text",
        );
        assert_tool(
            broker.read(&ws.join("missing.txt"), "missing.txt"),
            "Path does not exist",
        );
        assert_tool(
            broker.read(&ws.join("missing/a.txt"), "missing/a.txt"),
            "Path does not exist",
        );
        assert_tool(
            broker.read(&ws.join("a.txt/x"), "a.txt/x"),
            "Path does not exist",
        );
    }
}

#[test]
fn read_enforces_the_limit() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/exact.txt", &"x".repeat(1024));
    tree.file("ws/over.txt", &"x".repeat(1025));
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        assert_eq!(
            broker
                .read(&ws.join("exact.txt"), "exact.txt")
                .unwrap()
                .len(),
            1024
        );
        assert_tool(
            broker.read(&ws.join("over.txt"), "over.txt"),
            "File exceeds the read limit",
        );
        assert_tool(
            broker.replace(&ws.join("over.txt"), "over.txt", b"x", b"y"),
            "File exceeds the read limit",
        );
    }
    assert_eq!(tree.content("ws/over.txt").len(), 1025);
}

// ---- list (14.9) ----

#[test]
fn list_suffixes_directories_and_sorts_bytewise() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "");
    tree.dir("ws/a");
    tree.file("ws/B", "");
    tree.file("ws/.hidden", "");
    tree.dir("ws/empty");
    symlink(ws.join("a"), ws.join("link-to-dir")).unwrap();
    symlink(tree.path("outside"), ws.join("link-out")).unwrap();
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        assert_eq!(
            broker.list(&ws, ".").unwrap(),
            ".hidden\nB\na.txt\na/\nempty/\nlink-out\nlink-to-dir"
        );
        assert_eq!(broker.list(&ws.join("empty"), "empty").unwrap(), "");
    }
}

#[test]
fn list_reports_missing_and_non_directory_paths() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "a");
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        assert_tool(
            broker.list(&ws.join("missing"), "missing"),
            "Path does not exist",
        );
        assert_tool(
            broker.list(&ws.join("missing/deeper"), "missing/deeper"),
            "Path does not exist",
        );
        assert_tool(
            broker.list(&ws.join("a.txt"), "a.txt"),
            "Path is not a directory",
        );
        assert_tool(
            broker.list(&ws.join("a.txt/x"), "a.txt/x"),
            "Path is not a directory",
        );
    }
}

#[test]
fn list_enforces_the_entry_limit() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    for index in 0..100 {
        tree.file(&format!("ws/{index:03}"), "");
    }
    let broker = broker(&[grant(&ws, RO)]);
    assert_eq!(broker.list(&ws, ".").unwrap().lines().count(), 100);
    tree.file("ws/one-more", "");
    assert_tool(broker.list(&ws, "."), "Directory exceeds the listing limit");
}

#[test]
fn list_shows_virtual_children_of_granted_paths() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    let api = tree.dir("ws/docs/api");
    tree.file("ws/private.txt", "not granted");
    tree.file("ws/docs/draft.md", "not granted");
    for broker in brokers(&[grant(&src, RO), grant(&api, RW)], &[]) {
        assert_eq!(broker.list(&ws, ".").unwrap(), "docs/\nsrc/");
        assert_eq!(broker.list(&ws.join("docs"), "docs").unwrap(), "api/");
        assert!(broker.allows(FsOperation::List, &ws));
        assert_tool(
            broker.read(&ws.join("private.txt"), "private.txt"),
            "Path is outside the sandbox scope",
        );
        assert_tool(
            broker.list(&tree.path("outside"), "x"),
            "Path is outside the sandbox scope",
        );
    }
    // The workspace root kept as runtime-only: still only the virtual children.
    let broker = broker(&[runtime(&ws, RW), grant(&src, RO)]);
    assert_eq!(broker.list(&ws, ".").unwrap(), "src/");
}

#[test]
fn list_merges_virtual_children_with_real_entries() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let data = tree.dir("data");
    symlink(&data, ws.join("named")).unwrap();
    tree.file("ws/a.txt", "");
    let named = Grant {
        source: data,
        target: ws.join("named"),
        access: RW,
        tools: true,
        protect_aliases: false,
    };
    let broker = broker(&[grant(&ws, RW), named]);
    assert_eq!(broker.list(&ws, ".").unwrap(), "a.txt\nnamed\nnamed/");
}

/// One line per entry, always. A name holding a line feed
/// (or not UTF-8, or starting with `~` or `"`) is shown quoted, so a listing
/// never shows an entry that does not exist, and the shown form names it.
#[test]
fn list_shows_one_line_per_entry_and_quotes_misleading_names() {
    use std::os::unix::ffi::OsStrExt;
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/notes.md\nINSTRUCTIONS.md", "x");
    tree.file("ws/~notes.md", "x");
    tree.file("ws/plain.md", "x");
    std::fs::write(ws.join(std::ffi::OsStr::from_bytes(b"caf\xe9")), "x").unwrap();
    std::fs::create_dir(ws.join("dir\tx")).unwrap();
    for broker in brokers(&[grant(&ws, RO)], &[]) {
        let listing = broker.list(&ws, ".").unwrap();
        assert_eq!(
            listing.lines().collect::<Vec<_>>(),
            [
                r#""caf\xE9""#,
                r#""dir\tx"/"#,
                r#""notes.md\nINSTRUCTIONS.md""#,
                "plain.md",
                r#""~notes.md""#,
            ]
        );
    }
}
