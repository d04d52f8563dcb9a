//! Broker tests: every rule of §14 and every escape we know of, tried for
//! real against a temporary tree. Escape tests run under both traversal
//! strategies (openat2 and the per-component fallback) and check that
//! nothing outside the grants changed.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::grants::{Access, Grant};

const LIMITS: FsLimits = FsLimits {
    read_bytes: 1024,
    write_bytes: 1024,
    list_entries: 100,
};
const RO: Access = Access::ReadOnly;
const RW: Access = Access::ReadWrite;

/// A temporary tree: `ws/` is the workspace, `outside/` is never granted.
struct Tree {
    _dir: tempfile::TempDir,
    base: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let tree = Tree { _dir: dir, base };
        tree.dir("ws");
        tree.file("outside/secret.txt", "outside secret");
        tree
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    fn dir(&self, rel: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    fn file(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    fn content(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Everything under `outside/`, to prove an escape changed nothing.
    fn outside(&self) -> BTreeMap<PathBuf, String> {
        snapshot(&self.path("outside"))
    }
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut seen = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let description = if meta.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                pending.push(path.clone());
                format!("dir {:o}", meta.mode())
            } else if meta.is_file() {
                format!("file {:o} {:?}", meta.mode(), std::fs::read(&path).unwrap())
            } else {
                format!("special {:o}", meta.mode())
            };
            seen.insert(path, description);
        }
    }
    seen
}

fn grant(dir: &Path, access: Access) -> Grant {
    Grant {
        source: std::fs::canonicalize(dir).unwrap(),
        target: dir.to_path_buf(),
        access,
        tools: true,
        protect_aliases: true,
    }
}

fn runtime(dir: &Path, access: Access) -> Grant {
    Grant {
        tools: false,
        ..grant(dir, access)
    }
}

/// The same broker under both traversal strategies.
fn brokers(grants: &[Grant], markers: &[Grant]) -> Vec<Broker> {
    let build = || Broker::new(grants.to_vec(), markers.to_vec(), LIMITS).unwrap();
    vec![build(), build().with_component_walk()]
}

fn broker(grants: &[Grant]) -> Broker {
    Broker::new(grants.to_vec(), vec![], LIMITS).unwrap()
}

#[track_caller]
fn assert_tool<T: std::fmt::Debug>(result: Result<T>, fragment: &str) {
    match result {
        Err(error @ (Error::Tool(_) | Error::Refused(_))) => assert!(
            error.message().contains(fragment),
            "expected ToolError containing {fragment:?}, got {:?}",
            error.message()
        ),
        other => panic!("expected ToolError containing {fragment:?}, got {other:?}"),
    }
}

/// Runs `operation` on another thread and fails (instead of hanging) if it blocks.
fn without_hanging<T: Send + 'static>(operation: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(operation());
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("broker operation blocked")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn current_umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("Umask:"))
        .unwrap();
    u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
}

// ---- construction and identity (14.3) ----

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

// ---- lexical rules (14.1, 14.4) ----

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

// ---- symlinks (14.5) ----

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

// ---- file types and links (14.6) ----

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

// ---- grants and nesting (14.4, 14.7) ----

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

// ---- read (14.8) ----

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

// ---- write (14.10) ----

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

// ---- allows (14.12) ----

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
    assert_eq!(io.message(), "Sandbox filesystem operation failed");
    assert!(!io.message().contains("Input/output"));
    let full = super::io_error(Errno::NOSPC);
    assert_eq!(
        full.message(),
        "Sandbox filesystem operation failed: no space left on the host filesystem"
    );
    assert!(matches!(full, Error::Tool(_)));
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
        err.message(),
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

/// Issue 12 item 12: a refusal of policy carries its rule, so the binding
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
