//! Turns a plan's rules into Landlock `path_beneath` rules when some rule
//! lies beneath a stronger one.
//!
//! Landlock only adds access: a rule on a directory grants its rights to
//! everything beneath it, so a read-only grant inside a writable one (or
//! `/proc` hidden inside a readable root) cannot be expressed by a rule on
//! the outer directory. Instead the outer rule is *carved*: each directory on
//! the path from the outer rule down to the weaker one gets only the rights
//! the weaker rules beneath it also have, and every other entry of those
//! directories (its siblings) gets the outer rule's rights.
//!
//! The cost, stated in the README: entries created later (by the host) in a
//! directory along such a path get only the narrower rights; the directories
//! along the path cannot gain or lose entries from inside the sandbox
//! (unless the narrower rights allow it); a symbolic link among the siblings
//! gets no rule (its target is judged by the rules of the target's own path,
//! so a link can never widen access). It runs in the helper, at launch,
//! relative to directory descriptors, never by re-resolving full paths.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use landlock::{AccessFs, BitFlags};
use rustix::fs::{self as rfs, FileType, Mode, OFlags};

use super::Rule;
use crate::error::{capability, Result};

/// One descriptor and the rights Landlock grants beneath it.
pub struct Beneath {
    pub fd: OwnedFd,
    pub access: BitFlags<AccessFs>,
}

/// The `path_beneath` rules for `rules` (absolute paths).
pub fn expand(rules: &[Rule]) -> Result<Vec<Beneath>> {
    expand_with(rules, &[])
}

/// [`expand`], where a rule whose path has an inherited `handles` entry is
/// built from (a copy of) that descriptor instead of opening its path.
pub fn expand_with(rules: &[Rule], handles: &[(PathBuf, RawFd)]) -> Result<Vec<Beneath>> {
    let mut out = Vec::new();
    for rule in rules {
        let access = rule.access.rights();
        if access.is_empty() {
            continue;
        }
        // The weaker rules strictly beneath this one: each takes rights away.
        let weaker: Vec<(Vec<PathBuf>, BitFlags<AccessFs>)> = rules
            .iter()
            .filter(|other| other.path != rule.path && other.path.starts_with(&rule.path))
            .filter(|other| !(access & !other.access.rights()).is_empty())
            .map(|other| (relative(&rule.path, &other.path), other.access.rights()))
            .collect();
        let handle = handles.iter().find(|(path, _)| *path == rule.path);
        let opened = match handle {
            // SAFETY: the helper inherited this descriptor for this plan.
            Some((_, fd)) => unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) }
                .try_clone_to_owned()
                .map_err(|e| {
                    rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::BADF)
                }),
            None => open_path(&rule.path, true),
        };
        let fd = match opened {
            Ok(fd) => fd,
            // A declared path that does not exist (say /lib64 on aarch64)
            // grants nothing.
            Err(rustix::io::Errno::NOENT) => continue,
            Err(errno) => return Err(unreachable_rule(&rule.path, errno)),
        };
        if weaker.is_empty() {
            push(&mut out, fd, access)?;
        } else {
            carve(&mut out, fd, &rule.path, access, &weaker)?;
        }
    }
    Ok(out)
}

/// Components of `inner` below `outer`.
fn relative(outer: &Path, inner: &Path) -> Vec<PathBuf> {
    inner
        .strip_prefix(outer)
        .expect("filtered on starts_with")
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(PathBuf::from(name)),
            _ => None,
        })
        .collect()
}

/// `dir` (open) gets what every weaker rule beneath it keeps; its entries
/// get `access` unless a weaker rule lies at or beneath them.
fn carve(
    out: &mut Vec<Beneath>,
    dir: OwnedFd,
    path: &Path,
    access: BitFlags<AccessFs>,
    weaker: &[(Vec<PathBuf>, BitFlags<AccessFs>)],
) -> Result<()> {
    let kept = weaker.iter().fold(access, |acc, (_, rights)| acc & *rights);
    let listing = rfs::openat(
        &dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| unreachable_rule(path, errno))?;
    let mut names = Vec::new();
    for entry in rfs::Dir::new(listing).map_err(|errno| unreachable_rule(path, errno))? {
        let entry = entry.map_err(|errno| unreachable_rule(path, errno))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(PathBuf::from(OsStr::from_bytes(name)));
        }
    }
    for name in names {
        let child = path.join(&name);
        let beneath: Vec<(Vec<PathBuf>, BitFlags<AccessFs>)> = weaker
            .iter()
            .filter(|(components, _)| components.first() == Some(&name))
            .map(|(components, rights)| (components[1..].to_vec(), *rights))
            .collect();
        if beneath.iter().any(|(rest, _)| rest.is_empty()) {
            // The weaker rule itself: its own rule (if any) covers it.
            continue;
        }
        let fd = match rfs::openat(
            &dir,
            &name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => continue, // removed meanwhile
            Err(errno) => return Err(unreachable_rule(&child, errno)),
        };
        let kind = FileType::from_raw_mode(
            rfs::fstat(&fd)
                .map_err(|e| unreachable_rule(&child, e))?
                .st_mode,
        );
        if beneath.is_empty() {
            if kind != FileType::Symlink {
                push(out, fd, access)?;
            }
        } else if kind == FileType::Directory {
            carve(out, fd, &child, access, &beneath)?;
        } else {
            return Err(capability(format!(
                "the landlock sandbox cannot enforce the rule on {}: {} is not a directory",
                child.display(),
                child.display()
            )));
        }
    }
    if !kept.is_empty() {
        push(out, dir, kept)?;
    }
    Ok(())
}

/// Adds a rule, keeping only the rights Landlock accepts on a non-directory.
fn push(out: &mut Vec<Beneath>, fd: OwnedFd, access: BitFlags<AccessFs>) -> Result<()> {
    let stat = rfs::fstat(fd.as_fd())
        .map_err(|errno| capability(format!("landlock: fstat failed: {errno}")))?;
    let access = if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
        access
    } else {
        access & AccessFs::from_file(super::ABI_USED)
    };
    if !access.is_empty() {
        out.push(Beneath { fd, access });
    }
    Ok(())
}

/// Opens `path` for a rule (`O_PATH`); declared paths follow symbolic links.
pub fn open_path(path: &Path, follow: bool) -> rustix::io::Result<OwnedFd> {
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::open(path, flags, Mode::empty())
}

fn unreachable_rule(path: &Path, errno: rustix::io::Errno) -> crate::Error {
    capability(format!(
        "the landlock sandbox cannot enforce the rule on {}: {errno}",
        path.display()
    ))
}
