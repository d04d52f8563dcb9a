//! File types and links (14.6).

use super::*;

#[test]
fn hardlinks_to_protected_files_are_refused() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    let rt = tree.dir("ws/rt");
    tree.file("ws/src/keep.txt", "read only");
    tree.file("ws/rt/secret.txt", "runtime only");
    std::fs::hard_link(ws.join("src/keep.txt"), ws.join("keep-alias.txt")).unwrap();
    std::fs::hard_link(ws.join("rt/secret.txt"), ws.join("secret-alias.txt")).unwrap();
    std::fs::hard_link(
        tree.path("outside/secret.txt"),
        ws.join("outside-alias.txt"),
    )
    .unwrap();
    let before = tree.outside();
    for broker in brokers(&[grant(&ws, RW), grant(&src, RO), runtime(&rt, RW)], &[]) {
        for name in ["keep-alias.txt", "secret-alias.txt", "outside-alias.txt"] {
            let path = ws.join(name);
            assert_tool(
                broker.read(&path, name),
                "Multiply-linked files are not accessible through sandbox tools",
            );
            assert_tool(broker.write(&path, name, b"owned"), "Multiply-linked files");
            assert_tool(
                broker.replace(&path, name, b"e", b"E"),
                "Multiply-linked files",
            );
        }
    }
    assert_eq!(tree.content("ws/src/keep.txt"), "read only");
    assert_eq!(tree.content("ws/rt/secret.txt"), "runtime only");
    assert_eq!(
        std::fs::metadata(ws.join("src/keep.txt")).unwrap().nlink(),
        2
    );
    assert_eq!(tree.outside(), before);
}

#[test]
fn a_fifo_is_refused_without_hanging() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let pipe = ws.join("pipe");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &pipe,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        let broker = Arc::new(broker);
        let (b, p) = (broker.clone(), pipe.clone());
        assert_tool(
            without_hanging(move || b.read(&p, "pipe")),
            "Path is not a file",
        );
        let (b, p) = (broker.clone(), pipe.clone());
        assert_tool(
            without_hanging(move || b.write(&p, "pipe", b"x")),
            "Path is not a file",
        );
        let (b, p) = (broker.clone(), pipe.clone());
        assert_tool(
            without_hanging(move || b.replace(&p, "pipe", b"x", b"y")),
            "Path is not a file",
        );
        let (b, p) = (broker.clone(), ws.clone());
        assert_eq!(without_hanging(move || b.list(&p, ".")).unwrap(), "pipe");
    }
    assert!(std::fs::symlink_metadata(&pipe)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(entries(&ws), ["pipe"]);
}

#[test]
fn a_device_node_is_refused() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let null = ws.join("null");
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        &null,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    );
    if made.is_err() {
        eprintln!("skipping: mknod is not permitted here ({made:?})");
        return;
    }
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        let broker = Arc::new(broker);
        let (b, p) = (broker.clone(), null.clone());
        assert_tool(
            without_hanging(move || b.read(&p, "null")),
            "Path is not a file",
        );
        let (b, p) = (broker.clone(), null.clone());
        assert_tool(
            without_hanging(move || b.write(&p, "null", b"x")),
            "Path is not a file",
        );
    }
    assert!(std::fs::symlink_metadata(&null)
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn directories_are_not_files() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    tree.dir("ws/sub");
    symlink(&src, ws.join("alias")).unwrap();
    // Protects `src`, which it names through a link: `ws/src` is that grant's root.
    let alias = Grant {
        source: src.clone(),
        target: ws.join("alias"),
        access: RW,
        tools: true,
        protect_aliases: true,
    };
    for broker in brokers(&[grant(&ws, RW), alias], &[]) {
        assert_tool(broker.read(&ws.join("sub"), "sub"), "Path is not a file");
        assert_tool(
            broker.write(&ws.join("sub"), "sub", b"x"),
            "Path is not a file",
        );
        assert_tool(broker.read(&ws.join("src"), "src"), "Path is not a file");
        assert_tool(
            broker.write(&ws.join("src"), "src", b"x"),
            "Path is not a file",
        );
        assert_tool(
            broker.replace(&ws.join("src"), "src", b"x", b"y"),
            "Path is not a file",
        );
        assert_eq!(broker.list(&ws.join("src"), "src").unwrap(), "");
    }
    assert!(ws.join("sub").is_dir() && src.is_dir());
    assert_eq!(entries(&ws), ["alias", "src", "sub"]);
}
