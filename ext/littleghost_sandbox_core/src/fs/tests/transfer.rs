//! The file-transfer operations (transfer.rs): bytes, entries with their
//! metadata, writes that make parents, removal.

use super::*;

#[test]
fn bytes_and_metadata_are_read_from_the_handle() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    std::fs::write(ws.join("bin.dat"), [0xff, 0x00, 0xfe]).unwrap();
    tree.dir("ws/sub");
    let broker = broker(&[grant(&ws, RW)]);
    assert_eq!(
        broker.read_bytes(&ws.join("bin.dat"), "bin.dat").unwrap(),
        [0xff, 0x00, 0xfe]
    );
    let info = broker.stat(&ws.join("bin.dat"), "bin.dat").unwrap();
    assert!(!info.directory);
    assert_eq!(info.size, 3);
    assert!(broker.stat(&ws, ".").unwrap().directory);
    let mut listed: Vec<(String, bool, u64)> = broker
        .entries(&ws, ".")
        .unwrap()
        .into_iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.directory, e.size))
        .collect();
    listed.sort();
    assert_eq!(listed[0], ("bin.dat".to_string(), false, 3));
    assert_eq!((listed[1].0.as_str(), listed[1].1), ("sub", true));
    assert_tool(
        broker.stat(&ws.join("missing"), "missing"),
        "Path does not exist: missing",
    );
}

#[test]
fn a_symlink_is_never_followed_or_listed_as_its_target() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    symlink(tree.path("outside"), ws.join("out")).unwrap();
    let broker = broker(&[grant(&ws, RW)]);
    assert_tool(broker.stat(&ws.join("out"), "out"), "symbolic link");
    assert_tool(
        broker.read_bytes(&ws.join("out/secret.txt"), "out/secret.txt"),
        "symbolic link",
    );
    assert_tool(
        broker.write_creating(&ws.join("out/planted"), "out/planted", b"x", None),
        "symbolic link",
    );
    let listed = broker.entries(&ws, ".").unwrap();
    assert!(listed.iter().all(|e| !e.directory));
    assert_tool(
        broker.remove(&ws.join("out/secret.txt"), "out/secret.txt", false),
        "symbolic link",
    );
    // Removing the link removes the link, never what it points to.
    broker.remove(&ws.join("out"), "out", true).unwrap();
    assert_eq!(tree.content("outside/secret.txt"), "outside secret");
    assert_eq!(tree.outside().len(), 1);
}

#[test]
fn writes_make_their_parents_with_the_given_mode() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let broker = broker(&[grant(&ws, RW)]);
    broker
        .write_creating(
            &ws.join("a/b/c.sh"),
            "a/b/c.sh",
            b"#!/bin/sh\n",
            Some(0o755),
        )
        .unwrap();
    assert_eq!(tree.content("ws/a/b/c.sh"), "#!/bin/sh\n");
    let mode = std::fs::metadata(ws.join("a/b/c.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    let read_only = broker_of_read_only(&tree);
    assert_tool(
        read_only.write_creating(&ws.join("x/y"), "x/y", b"", None),
        "Sandbox scope is read-only",
    );
    assert!(!ws.join("x").exists());
}

fn broker_of_read_only(tree: &Tree) -> Broker {
    broker(&[grant(&tree.path("ws"), RO)])
}

#[test]
fn removal_needs_recursive_for_contents_and_spares_stricter_grants() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/full/one.txt", "1");
    tree.file("ws/keep/.git/config", "hooks");
    let broker = broker(&[grant(&ws, RW), grant(&tree.path("ws/keep/.git"), RO)]);
    assert_tool(
        broker.remove(&ws.join("full"), "full", false),
        "Directory is not empty",
    );
    broker.remove(&ws.join("full"), "full", true).unwrap();
    assert!(!ws.join("full").exists());
    assert_tool(
        broker.remove(&ws.join("keep"), "keep", true),
        "Sandbox scope is read-only",
    );
    assert_eq!(tree.content("ws/keep/.git/config"), "hooks");
    assert_tool(
        broker.remove(&ws, ".", true),
        "Path must identify a sandbox entry",
    );
    assert_tool(
        broker_of_read_only(&tree).remove(&ws.join("keep"), "keep", true),
        "Sandbox scope is read-only",
    );
}
