//! Broker tests: every rule of §14 and every escape we know of, tried for
//! real against a temporary tree. Escape tests run under both traversal
//! strategies (openat2 and the per-component fallback) and check that
//! nothing outside the grants changed.

mod allows;
mod file_types;
mod identity;
mod lexical;
mod nesting;
mod read_list;
mod symlinks;
mod transfer;
mod write_replace;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::error::{Error, Result};
use crate::grants::{Access, Grant};
use rustix::fs as rfs;

const LIMITS: FsLimits = FsLimits {
    read_bytes: 1024,
    write_bytes: 1024,
    list_entries: 100,
};
const OUTSIDE: &str = "Path is outside the sandbox scope";
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
        Err(error) if error.kind() == crate::error::Kind::Tool => assert!(
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
