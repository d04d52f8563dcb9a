//! Unit tests of the bwrap argv, grouped by behaviour; a fake host stands in
//! for the filesystem except in `real_bwrap`, which runs the real binary.

mod args;
mod command;
mod launcher;
mod options;
mod overlays;
mod probe;
mod real_bwrap;

use super::*;
use crate::error::{policy, tool};
use std::collections::HashMap;
use std::ffi::OsString;

/// A host described by a table: directories, symlinks and realpaths.
#[derive(Default)]
struct FakeHost {
    entries: HashMap<PathBuf, HostEntry>,
    realpaths: HashMap<PathBuf, PathBuf>,
}

impl FakeHost {
    /// Debian 12: merged /usr with relative compatibility symlinks.
    fn debian() -> FakeHost {
        let mut host = FakeHost::default();
        host.entries.insert("/usr".into(), HostEntry::Directory);
        for (link, target) in [
            ("/bin", "usr/bin"),
            ("/sbin", "usr/sbin"),
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
        ] {
            host.entries
                .insert(link.into(), HostEntry::Symlink(target.into()));
        }
        host
    }
    fn alias(mut self, path: &str, real: &str) -> FakeHost {
        self.realpaths.insert(path.into(), real.into());
        self
    }
}

impl HostProbe for FakeHost {
    fn entry(&self, path: &Path) -> HostEntry {
        self.entries
            .get(path)
            .cloned()
            .unwrap_or(HostEntry::Missing)
    }
    fn is_dir(&self, path: &Path) -> bool {
        matches!(self.entries.get(path), Some(HostEntry::Directory))
    }
    fn realpath(&self, path: &Path) -> Option<PathBuf> {
        Some(
            self.realpaths
                .get(path)
                .cloned()
                .unwrap_or_else(|| path.to_path_buf()),
        )
    }
}

fn grant(path: &str, access: Access, tools: bool) -> Grant {
    Grant {
        source: path.into(),
        target: path.into(),
        access,
        tools,
        protect_aliases: true,
    }
}
fn rw(path: &str) -> Grant {
    grant(path, Access::ReadWrite, true)
}
fn ro(path: &str) -> Grant {
    grant(path, Access::ReadOnly, true)
}
fn runtime(path: &str, access: Access) -> Grant {
    grant(path, access, false)
}

fn strings(argv: &[OsString]) -> Vec<String> {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}
fn args(launch: &Launch, host: &FakeHost) -> Vec<String> {
    strings(&bubblewrap_args(launch, host).unwrap())
}
/// True iff `needle` occurs as a contiguous run in `haystack`.
fn has(haystack: &[String], needle: &[&str]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.iter().zip(needle).all(|(a, b)| a == b))
}
fn position(haystack: &[String], needle: &[&str]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w.iter().zip(needle).all(|(a, b)| a == b))
        .unwrap_or_else(|| panic!("{needle:?} not in {haystack:?}"))
}

fn isolated_workspace() -> Launch {
    Launch::new(RootFilesystem::Isolated, vec![rw("/w")], "/w".into())
}

/// Fails the test (never passes it silently) where bwrap is missing: these
/// tests are the only proof that the argv works with the real binary.
fn require_bwrap() {
    assert!(
        Path::new(DEFAULT_EXECUTABLE).exists(),
        "this test runs the real bwrap, which is not installed at {DEFAULT_EXECUTABLE} \
         (run bin/setup, or `apt-get install bubblewrap`)"
    );
}
