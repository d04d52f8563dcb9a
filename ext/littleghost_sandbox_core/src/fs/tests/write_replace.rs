//! Write (14.10) and replace (14.11).

use super::*;

#[test]
fn write_creates_and_replaces_files_with_the_documented_message() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/sub/old.md", "old content that is longer");
    let broker = broker(&[grant(&ws, RW)]);
    assert_eq!(
        broker.write(&ws.join("new.md"), "new.md", b"yes").unwrap(),
        "Wrote 3 bytes to new.md"
    );
    assert_eq!(tree.content("ws/new.md"), "yes");
    let message = broker
        .write(
            &ws.join("sub/old.md"),
            "workspace://root/sub/old.md",
            b"new",
        )
        .unwrap();
    assert_eq!(message, "Wrote 3 bytes to workspace://root/sub/old.md");
    assert!(!message.contains(&*tree.base.to_string_lossy()));
    assert_eq!(tree.content("ws/sub/old.md"), "new");
    assert_eq!(
        broker.write(&ws.join("empty.md"), "empty.md", b"").unwrap(),
        "Wrote 0 bytes to empty.md"
    );
    // Bytes are written as given, without a UTF-8 check.
    broker
        .write(&ws.join("bin.dat"), "bin.dat", &[0xff, 0x00, 0xfe])
        .unwrap();
    assert_eq!(
        std::fs::read(ws.join("bin.dat")).unwrap(),
        [0xff, 0x00, 0xfe]
    );
    assert_eq!(entries(&ws), ["bin.dat", "empty.md", "new.md", "sub"]);
    assert_eq!(entries(&ws.join("sub")), ["old.md"]);
}

#[test]
fn write_keeps_the_mode_of_an_existing_file_and_uses_the_umask_for_new_ones() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let private = tree.file("ws/private.txt", "old");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    let script = tree.file("ws/run.sh", "old");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let broker = broker(&[grant(&ws, RW)]);
    broker.write(&private, "private.txt", b"new").unwrap();
    broker.write(&script, "run.sh", b"new").unwrap();
    broker
        .write(&ws.join("fresh.txt"), "fresh.txt", b"new")
        .unwrap();
    assert_eq!(std::fs::metadata(&private).unwrap().mode() & 0o7777, 0o600);
    assert_eq!(std::fs::metadata(&script).unwrap().mode() & 0o7777, 0o750);
    let expected = 0o644 & !current_umask();
    assert_eq!(
        std::fs::metadata(ws.join("fresh.txt")).unwrap().mode() & 0o7777,
        expected
    );
    assert_eq!(tree.content("ws/private.txt"), "new");
}

#[test]
fn write_never_creates_parents() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "a");
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        assert_tool(
            broker.write(&ws.join("missing/new.txt"), "missing/new.txt", b"x"),
            "Write target parent does not exist",
        );
        assert_tool(
            broker.write(&ws.join("a/b/new.txt"), "a/b/new.txt", b"x"),
            "Write target parent does not exist",
        );
        assert_tool(
            broker.write(&ws.join("a.txt/new.txt"), "a.txt/new.txt", b"x"),
            "Write target parent does not exist",
        );
        assert!(!broker.allows(FsOperation::Write, &ws.join("missing/new.txt")));
        assert!(broker.allows(FsOperation::Write, &ws.join("new.txt")));
        assert!(!broker.allows(FsOperation::Read, &ws.join("new.txt")));
    }
    assert_eq!(entries(&ws), ["a.txt"]);
}

#[test]
fn write_enforces_the_limit_before_touching_anything() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "old");
    let broker = broker(&[grant(&ws, RW)]);
    assert_tool(
        broker.write(&ws.join("a.txt"), "a.txt", &[b'x'; 1025]),
        "Content exceeds the write limit",
    );
    assert_tool(
        broker.write(&ws.join("b.txt"), "b.txt", &[b'x'; 1025]),
        "Content exceeds the write limit",
    );
    assert_eq!(tree.content("ws/a.txt"), "old");
    assert_eq!(entries(&ws), ["a.txt"]);
    broker
        .write(&ws.join("a.txt"), "a.txt", &[b'x'; 1024])
        .unwrap();
    assert_eq!(tree.content("ws/a.txt").len(), 1024);
}

#[test]
fn a_failed_write_keeps_the_old_content_and_leaves_no_temporary_file() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "old");
    for broker in brokers(&[grant(&ws, RW)], &[]) {
        write::FAIL_BEFORE_RENAME.with(|fail| fail.set(true));
        let existing = broker.write(&ws.join("a.txt"), "a.txt", b"new content");
        let fresh = broker.write(&ws.join("b.txt"), "b.txt", b"new content");
        write::FAIL_BEFORE_RENAME.with(|fail| fail.set(false));
        assert_tool(existing, "injected failure");
        assert_tool(fresh, "injected failure");
        assert_eq!(tree.content("ws/a.txt"), "old");
        assert_eq!(entries(&ws), ["a.txt"]);
    }
}

#[test]
fn a_concurrent_reader_sees_the_old_or_the_new_content_never_a_prefix() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let size = 64 * 1024;
    tree.file("ws/a.txt", &"a".repeat(size));
    let limits = FsLimits {
        read_bytes: 1 << 20,
        write_bytes: 1 << 20,
        list_entries: 10,
    };
    let broker = Broker::new(vec![grant(&ws, RW)], vec![], limits).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (done, path) = (done.clone(), ws.join("a.txt"));
        std::thread::spawn(move || {
            let mut reads = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) || reads == 0 {
                let content = std::fs::read(&path).unwrap();
                assert_eq!(content.len(), size, "saw a partial file");
                assert!(
                    content.iter().all(|&b| b == content[0]),
                    "saw mixed content"
                );
                reads += 1;
            }
        })
    };
    for round in 0..40 {
        let byte = if round % 2 == 0 { b'b' } else { b'a' };
        broker
            .write(&ws.join("a.txt"), "a.txt", &vec![byte; size])
            .unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    assert_eq!(entries(&ws), ["a.txt"]);
}

#[test]
fn a_hardlink_made_after_a_write_is_refused_and_never_written_through() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "shared");
    let broker = broker(&[grant(&ws, RW)]);
    broker
        .write(&ws.join("a.txt"), "a.txt", b"replaced")
        .unwrap();
    std::fs::hard_link(ws.join("a.txt"), tree.path("outside/hard.txt")).unwrap();
    assert_tool(
        broker.write(&ws.join("a.txt"), "a.txt", b"again"),
        "Multiply-linked files",
    );
    assert_eq!(tree.content("outside/hard.txt"), "replaced");
}

// ---- replace (14.11) ----

#[test]
fn replace_needs_exactly_one_occurrence() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "hello world");
    tree.file("ws/twice.txt", "aaaa");
    tree.file("ws/overlap.txt", "aaa");
    let broker = broker(&[grant(&ws, RW)]);
    assert_tool(
        broker.replace(&ws.join("missing.txt"), "missing.txt", b"", b"x"),
        "Text to replace cannot be empty",
    );
    assert_tool(
        broker.replace(&ws.join("a.txt"), "a.txt", b"absent", b"x"),
        "Text was not found in a.txt",
    );
    assert_tool(
        broker.replace(&ws.join("a.txt"), "a.txt", &[0xff], b"x"),
        "Text was not found in a.txt",
    );
    assert_tool(
        broker.replace(&ws.join("twice.txt"), "twice.txt", b"aa", b"b"),
        "Text occurs more than once in twice.txt",
    );
    assert_eq!(tree.content("ws/twice.txt"), "aaaa");
    // Non-overlapping: "aaa" holds "aa" once.
    assert_eq!(
        broker
            .replace(&ws.join("overlap.txt"), "overlap.txt", b"aa", b"b")
            .unwrap(),
        "Wrote 2 bytes to overlap.txt"
    );
    assert_eq!(tree.content("ws/overlap.txt"), "ba");
    assert_tool(
        broker.replace(&ws.join("missing.txt"), "missing.txt", b"a", b"b"),
        "Path does not exist",
    );
    assert_tool(
        broker.replace(&ws.join("no/such.txt"), "no/such.txt", b"a", b"b"),
        "Path does not exist",
    );
}

#[test]
fn replace_inserts_the_new_text_literally() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    tree.file("ws/a.txt", "say hello");
    let broker = broker(&[grant(&ws, RW)]);
    let result = broker
        .replace(&ws.join("a.txt"), "a.txt", b"hello", br"\0 \& \1 $1")
        .unwrap();
    assert_eq!(result, "Wrote 15 bytes to a.txt");
    assert_eq!(tree.content("ws/a.txt"), r"say \0 \& \1 $1");
}

#[test]
fn replace_enforces_the_write_limit_on_the_result() {
    let tree = Tree::new();
    let ws = tree.path("ws");
    let original = format!("{}MARK", "x".repeat(1000));
    tree.file("ws/a.txt", &original);
    tree.file("ws/b.txt", "marker");
    let broker = broker(&[grant(&ws, RW)]);
    assert_tool(
        broker.replace(&ws.join("a.txt"), "a.txt", b"MARK", &[b'y'; 100]),
        "Content exceeds the write limit",
    );
    assert_eq!(tree.content("ws/a.txt"), original);
    assert_eq!(entries(&ws), ["a.txt", "b.txt"]);
}
