//! Construction and identity (14.3): pinned roots, renames, exchanges.

use super::*;

#[test]
fn broker_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Broker>();
}

#[test]
fn a_missing_root_fails_construction() {
    let tree = Tree::new();
    let missing = Grant {
        source: tree.path("gone"),
        ..grant(&tree.path("ws"), RW)
    };
    assert_tool(
        Broker::new(vec![missing.clone()], vec![], LIMITS),
        "Sandbox mount source does not exist",
    );
    assert_tool(
        Broker::new(vec![grant(&tree.path("ws"), RW)], vec![missing], LIMITS),
        "Sandbox mount source does not exist",
    );
}

#[test]
fn a_grant_root_renamed_and_replaced_after_build_is_refused() {
    let tree = Tree::new();
    let project = tree.dir("ws/project");
    tree.file("ws/project/a.txt", "original");
    for broker in brokers(&[grant(&project, RW)], &[]) {
        std::fs::rename(&project, tree.path("ws/project.old")).unwrap();
        tree.file("ws/project/a.txt", "impostor");
        assert_tool(
            broker.read(&project.join("a.txt"), "a.txt"),
            "Sandbox mount source changed after initialization",
        );
        assert_tool(
            broker.write(&project.join("b.txt"), "b.txt", b"x"),
            "changed after initialization",
        );
        assert_tool(broker.list(&project, "."), "changed after initialization");
        assert_tool(
            broker.replace(&project.join("a.txt"), "a.txt", b"impostor", b"x"),
            "changed after initialization",
        );
        assert!(!broker.allows(FsOperation::Read, &project.join("a.txt")));
        assert_eq!(entries(&project), ["a.txt"]);
        assert_eq!(tree.content("ws/project/a.txt"), "impostor");
        assert_eq!(entries(&tree.path("ws/project.old")), ["a.txt"]);
        assert_eq!(tree.content("ws/project.old/a.txt"), "original");
        // Put things back for the next strategy.
        std::fs::remove_dir_all(&project).unwrap();
        std::fs::rename(tree.path("ws/project.old"), &project).unwrap();
        assert_eq!(
            broker.read(&project.join("a.txt"), "a.txt").unwrap(),
            "original"
        );
    }
}

#[test]
fn a_removed_grant_root_is_refused() {
    let tree = Tree::new();
    let project = tree.dir("ws/project");
    let broker = broker(&[grant(&project, RW)]);
    std::fs::remove_dir(&project).unwrap();
    assert_tool(
        broker.write(&project.join("a.txt"), "a.txt", b"x"),
        "changed after initialization",
    );
    assert!(!project.exists());
}

#[test]
fn a_grant_root_reached_through_a_new_symlink_is_refused() {
    let tree = Tree::new();
    let project = tree.dir("ws/project");
    let broker = broker(&[grant(&project, RW)]);
    // Same directory, but its canonical path no longer holds without links.
    std::fs::rename(tree.path("ws"), tree.path("ws2")).unwrap();
    symlink(tree.path("ws2"), tree.path("ws")).unwrap();
    assert_tool(
        broker.write(&project.join("a.txt"), "a.txt", b"x"),
        "changed after initialization",
    );
    assert_eq!(entries(&tree.path("ws2/project")), Vec::<String>::new());
}

#[test]
fn moving_a_read_only_directory_within_a_writable_grant_does_not_shed_its_rules() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    tree.file("ws/src/keep.txt", "protected");
    for broker in brokers(&[grant(&ws, RW), grant(&src, RO)], &[]) {
        std::fs::rename(&src, tree.path("ws/moved")).unwrap();
        // H.1: the moved directory's identity still makes it read-only...
        assert_tool(
            broker.write(&ws.join("moved/keep.txt"), "moved/keep.txt", b"owned"),
            "Sandbox scope is read-only",
        );
        assert_tool(
            broker.write(&ws.join("moved/new.txt"), "moved/new.txt", b"owned"),
            "Sandbox scope is read-only",
        );
        assert_tool(
            broker.replace(
                &ws.join("moved/keep.txt"),
                "moved/keep.txt",
                b"protected",
                b"x",
            ),
            "Sandbox scope is read-only",
        );
        assert!(!broker.allows(FsOperation::Write, &ws.join("moved/new.txt")));
        // ...still readable, and the rest of the writable grant keeps working.
        assert_eq!(
            broker
                .read(&ws.join("moved/keep.txt"), "moved/keep.txt")
                .unwrap(),
            "protected"
        );
        broker.write(&ws.join("a.txt"), "a.txt", b"ok").unwrap();
        assert_eq!(tree.content("ws/moved/keep.txt"), "protected");
        assert_eq!(entries(&tree.path("ws/moved")), ["keep.txt"]);
        std::fs::rename(tree.path("ws/moved"), &src).unwrap();
    }
}

/// Exchanges two directories atomically, as a concurrent attacker would.
fn exchange(a: &Path, b: &Path) {
    rfs::renameat_with(rfs::CWD, a, rfs::CWD, b, rfs::RenameFlags::EXCHANGE).unwrap();
}

#[test]
fn a_decoy_exchanged_with_a_read_only_grants_parent_gets_the_grants_rules() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let lib = tree.dir("ws/src/lib");
    tree.file("ws/src/lib/main.rb", "puts 1");
    tree.file("ws/d/lib/main.rb", "puts 1");
    for broker in brokers(&[grant(&ws, RW), grant(&lib, RO)], &[]) {
        exchange(&ws.join("src"), &ws.join("d"));
        // ws/d/lib is now the read-only grant, whatever the path said.
        let pwn = ws.join("d/lib/pwn");
        assert_tool(broker.write(&pwn, "d/lib/pwn", b"x"), "read-only");
        assert_tool(
            broker.replace(&ws.join("d/lib/main.rb"), "d/lib/main.rb", b"1", b"2"),
            "read-only",
        );
        assert!(!broker.allows(FsOperation::Write, &pwn));
        assert!(!broker.allows(FsOperation::Replace, &ws.join("d/lib/main.rb")));
        assert!(broker.allows(FsOperation::Read, &ws.join("d/lib/main.rb")));
        assert_eq!(broker.list(&ws.join("d/lib"), "d/lib").unwrap(), "main.rb");
        exchange(&ws.join("src"), &ws.join("d"));
        // Back in place, the decoy is writable again.
        broker.write(&pwn, "d/lib/pwn", b"x").unwrap();
        std::fs::remove_file(&pwn).unwrap();
    }
    assert_eq!(entries(&lib), ["main.rb"]);
    assert_eq!(tree.content("ws/src/lib/main.rb"), "puts 1");
}

#[test]
fn a_decoy_exchanged_with_a_hidden_grants_parent_reveals_nothing() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let home = tree.dir("ws/cfg/home");
    tree.file("ws/cfg/home/secret", "runtime-secret");
    tree.file("ws/e/home/secret", "decoy");
    for broker in brokers(&[grant(&ws, RW), runtime(&home, RW)], &[]) {
        assert_eq!(
            broker
                .read(&ws.join("e/home/secret"), "e/home/secret")
                .unwrap(),
            "decoy"
        );
        exchange(&ws.join("cfg"), &ws.join("e"));
        let secret = ws.join("e/home/secret");
        assert_tool(broker.read(&secret, "e/home/secret"), OUTSIDE);
        assert_tool(broker.list(&ws.join("e/home"), "e/home"), OUTSIDE);
        assert_tool(
            broker.replace(&secret, "e/home/secret", b"runtime", b"x"),
            OUTSIDE,
        );
        assert_tool(
            broker.write(&ws.join("e/home/new"), "e/home/new", b"x"),
            OUTSIDE,
        );
        // W11: listed by identity, the real home does not show under its new parent.
        assert_eq!(broker.list(&ws.join("e"), "e").unwrap(), "");
        assert!(!broker.allows(FsOperation::Read, &secret));
        assert!(!broker.allows(FsOperation::List, &ws.join("e/home")));
        exchange(&ws.join("cfg"), &ws.join("e"));
    }
    assert_eq!(entries(&home), ["secret"]);
    assert_eq!(tree.content("ws/cfg/home/secret"), "runtime-secret");
}

#[test]
fn only_grants_with_a_stricter_grant_on_their_device_walk_by_identity() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    let rt = tree.dir("ws/rt");
    let flags = |broker: &Broker| -> Vec<(Rule, bool, bool)> {
        let roots = broker.roots.iter();
        roots
            .map(|root| (root.rule, root.guarded_reads, root.guarded_writes))
            .collect()
    };
    // A lone grant: one openat2 for everything.
    let alone = broker(&[grant(&ws, RW)]);
    assert_eq!(flags(&alone), [(Rule::Writable, false, false)]);
    // A read-only grant guards writes under the writable one, not reads.
    let nested = broker(&[grant(&ws, RW), grant(&src, RO)]);
    assert_eq!(
        flags(&nested),
        [
            (Rule::Writable, false, true),
            (Rule::ReadOnly, false, false)
        ]
    );
    // A hidden grant guards reads and writes everywhere on its device.
    let hidden = broker(&[grant(&ws, RW), grant(&src, RO), runtime(&rt, RW)]);
    assert_eq!(
        flags(&hidden),
        [
            (Rule::Writable, true, true),
            (Rule::ReadOnly, true, true),
            (Rule::Hidden, false, true)
        ]
    );
    // The same directory as a file and a runtime grant: visible, and read-only if either is.
    let tie = broker(&[grant(&ws, RW), grant(&rt, RW), runtime(&rt, RO)]);
    assert_eq!(flags(&tie)[1].0, Rule::ReadOnly);
}

#[test]
fn a_deleted_nested_grant_no_longer_blocks_its_parent() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let src = tree.dir("ws/src");
    let rt = tree.dir("ws/rt");
    let broker = broker(&[grant(&ws, RW), grant(&src, RO), runtime(&rt, RW)]);
    std::fs::remove_dir(&src).unwrap();
    std::fs::remove_dir(&rt).unwrap();
    assert_eq!(
        broker.write(&ws.join("a.txt"), "a.txt", b"ok").unwrap(),
        "Wrote 2 bytes to a.txt"
    );
    // A new directory at the old place is not the pinned one, and keeps its rules.
    tree.file("ws/src/f.txt", "new");
    assert_tool(
        broker.read(&src.join("f.txt"), "src/f.txt"),
        "changed after initialization",
    );
    assert_tool(
        broker.write(&src.join("f.txt"), "src/f.txt", b"x"),
        "Sandbox scope is read-only",
    );
    assert_eq!(tree.content("ws/src/f.txt"), "new");
}
