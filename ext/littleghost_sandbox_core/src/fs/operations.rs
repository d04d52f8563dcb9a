//! The broker's operations (14.8 to 14.12) once a path is resolved: reading
//! a regular file within its limit, listing a directory without its hidden
//! entries, writing and replacing text, and the check of `allows`.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType};
use rustix::io::Errno;

use super::walk::{self, Failure, WalkError};
use super::*;

impl Broker {
    pub(super) fn read_file(&self, physical: &Path) -> Result<String> {
        let bytes = self.read_file_bytes(physical)?;
        String::from_utf8(bytes).map_err(|_| Error::NotUtf8)
    }

    /// The bytes of a regular file within the read limit (14.8 without its UTF-8 rule).
    pub(super) fn read_file_bytes(&self, physical: &Path) -> Result<Vec<u8>> {
        let resolved = self.resolve(physical, true)?;
        let root = self.verify(&resolved)?;
        let file = if resolved.effective.guarded_reads {
            let (parent, name, _) = self.open_parent(&root, &resolved, Wording::Read, false)?;
            let parent = parent.get(&root);
            rfs::openat(
                parent,
                name,
                walk::FILE_READ | walk::ALWAYS,
                rfs::Mode::empty(),
            )
            .map_err(|errno| walk_error(Wording::Read, explain_last(parent, name, errno)))?
        } else {
            walk::open_beneath(
                self.strategy,
                root.as_fd(),
                &resolved.below,
                walk::FILE_READ,
            )
            .map_err(|error| walk_error(Wording::Read, error))?
        };
        self.read_regular(file)
    }

    pub(super) fn list_dir(&self, physical: &Path) -> Result<String> {
        let path = lexical_path(physical)?;
        let virtual_children = self.virtual_children(&path);
        if !self.visible_covers(&path) && !virtual_children.is_empty() {
            return Ok(join_listing(virtual_children));
        }
        let (dir, listed_at) = self.open_listed_directory(&path)?;
        let mut names = self.directory_entries(dir, &listed_at)?;
        names.extend(virtual_children);
        Ok(join_listing(names))
    }

    /// The directory at `path` opened for listing (14.9), by the same walk
    /// as every read, and where it is on the host (for the hidden entries).
    pub(super) fn open_listed_directory(&self, path: &Path) -> Result<(OwnedFd, PathBuf)> {
        let resolved = self.resolve_clean(path, false)?;
        let root = self.verify(&resolved)?;
        let dir = if resolved.effective.guarded_reads && !resolved.below.as_os_str().is_empty() {
            let (dir, _) = self.open_dirs(
                root.as_fd(),
                resolved.effective.rule,
                &resolved.below,
                walk::DIR_READ,
                Wording::List,
                false,
            )?;
            dir.ok_or(Error::Missing)?
        } else {
            walk::open_beneath(self.strategy, root.as_fd(), &resolved.below, walk::DIR_READ)
                .map_err(|error| walk_error(Wording::List, error))?
        };
        Ok((dir, resolved.effective.realpath.join(&resolved.below)))
    }

    pub(super) fn write_file(
        &self,
        physical: &Path,
        logical: &str,
        content: &[u8],
    ) -> Result<String> {
        let resolved = self.resolve(physical, true)?;
        if !resolved.writable {
            return Err(Error::ReadOnly);
        }
        self.check_write_size(content)?;
        let root = self.verify(&resolved)?;
        let (parent, name, _) = self.open_parent(&root, &resolved, Wording::Write, true)?;
        write::replace_file(parent.get(&root), name, content)?;
        Ok(wrote(content, logical))
    }

    pub(super) fn replace_text(
        &self,
        physical: &Path,
        logical: &str,
        old_text: &[u8],
        new_text: &[u8],
    ) -> Result<String> {
        if old_text.is_empty() {
            return Err(Error::EmptyOldText);
        }
        let resolved = self.resolve(physical, true)?;
        let root = self.verify(&resolved)?;
        let (parent, name, rule) = self.open_parent(&root, &resolved, Wording::Read, false)?;
        let parent = parent.get(&root);
        let file = rfs::openat(
            parent,
            name,
            walk::FILE_READ | walk::ALWAYS,
            rfs::Mode::empty(),
        )
        .map_err(|errno| walk_error(Wording::Read, explain_last(parent, name, errno)))?;
        let content = self.read_regular(file)?;
        let text = String::from_utf8(content).map_err(|_| Error::NotUtf8)?;
        let at = single_occurrence(&text, old_text, logical)?;
        if !resolved.writable {
            return Err(Error::ReadOnly);
        }
        rule.check(true)?;
        let mut updated = Vec::with_capacity(text.len() - old_text.len() + new_text.len());
        updated.extend_from_slice(&text.as_bytes()[..at]);
        updated.extend_from_slice(new_text);
        updated.extend_from_slice(&text.as_bytes()[at + old_text.len()..]);
        self.check_write_size(&updated)?;
        write::replace_file(parent, name, &updated)?;
        Ok(wrote(&updated, logical))
    }

    pub(super) fn allowed(&self, operation: FsOperation, physical: &Path) -> Result<bool> {
        let path = lexical_path(physical)?;
        if operation == FsOperation::List
            && !self.visible_covers(&path)
            && !self.virtual_children(&path).is_empty()
        {
            return Ok(true);
        }
        let resolved = self.resolve_clean(&path, false)?;
        if operation.writes() && !resolved.writable {
            return Ok(false);
        }
        let root = self.verify(&resolved)?;
        let Some(name) = resolved.below.file_name() else {
            return Ok(true); // a grant root: verify opened it as a directory
        };
        let parent_path = resolved.below.parent().unwrap_or(Path::new(""));
        let parent_fd;
        let parent = if parent_path.as_os_str().is_empty() {
            root.as_fd()
        } else {
            let opened = if self.guarded(resolved.effective, operation.writes()) {
                match self.walk_dirs(
                    root.as_fd(),
                    resolved.effective.rule,
                    parent_path,
                    walk::DIR_HANDLE,
                    operation.writes(),
                ) {
                    Ok((fd, _)) => Ok(fd),
                    Err(Walked::Refused(_)) => return Ok(false),
                    Err(Walked::Failed(error)) => Err(error),
                }
            } else {
                walk::open_beneath(self.strategy, root.as_fd(), parent_path, walk::DIR_HANDLE)
            };
            match opened {
                Ok(fd) => {
                    parent_fd = fd;
                    parent_fd.as_fd()
                }
                Err(WalkError {
                    failure: Failure::Os(Errno::ACCESS),
                    ..
                }) => return Ok(true),
                Err(_) => return Ok(false),
            }
        };
        Ok(match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            // A directory that is itself a stricter grant is judged by its identity.
            Ok(stat) => {
                FileType::from_raw_mode(stat.st_mode) != FileType::Symlink
                    && !self
                        .rule_of(identity(&stat))
                        .is_some_and(|rule| rule.refuses(operation.writes()))
            }
            Err(Errno::NOENT) => operation.writes(),
            Err(Errno::ACCESS) => true,
            Err(_) => false,
        })
    }

    /// Reads a regular, singly-linked file within the read limit (14.6, 14.8).
    pub(super) fn read_regular(&self, fd: OwnedFd) -> Result<Vec<u8>> {
        let stat = rfs::fstat(&fd).map_err(io_error)?;
        check_regular(&stat)?;
        let limit = self.limits.read_bytes;
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > limit {
            return Err(Error::ReadLimit(limit));
        }
        const MAX_PREALLOCATION: u64 = 64 << 20;
        let mut bytes = Vec::with_capacity(size.min(MAX_PREALLOCATION) as usize + 1);
        std::fs::File::from(fd)
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| Error::Unreadable(error.to_string()))?;
        if bytes.len() as u64 > limit {
            return Err(Error::ReadLimit(limit));
        }
        Ok(bytes)
    }

    pub(super) fn check_write_size(&self, content: &[u8]) -> Result<()> {
        if content.len() as u64 > self.limits.write_bytes {
            return Err(Error::WriteLimit(self.limits.write_bytes));
        }
        Ok(())
    }

    /// Entry names of an open directory, suffixed and filtered (14.9, W11).
    pub(super) fn directory_entries(&self, dir: OwnedFd, listed_at: &Path) -> Result<Vec<Vec<u8>>> {
        let hidden: Vec<&Root> = self
            .roots
            .iter()
            .filter(|root| {
                !root.visible
                    && !self
                        .roots
                        .iter()
                        .any(|r| r.visible && r.realpath == root.realpath)
            })
            .collect();
        let mut entries = rfs::Dir::new(dir).map_err(io_error)?;
        let mut names = Vec::new();
        let mut count: u64 = 0;
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(io_error)?;
            let lookup = entries.fd().map_err(io_error)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            count += 1;
            if count > self.limits.list_entries {
                return Err(Error::ListLimit(self.limits.list_entries));
            }
            let name_os = OsStr::from_bytes(name);
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => rfs::statat(lookup, name_os, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory)
                    .unwrap_or(false),
                _ => false,
            };
            if is_dir && self.is_hidden(&hidden, lookup, listed_at, name_os, entry.ino()) {
                continue;
            }
            let mut shown = name.to_vec();
            if is_dir {
                shown.push(b'/');
            }
            names.push(shown);
        }
        Ok(names)
    }

    /// W11: a directory that is a runtime-only grant or deny marker is not listed.
    pub(super) fn is_hidden(
        &self,
        hidden: &[&Root],
        dir: BorrowedFd<'_>,
        listed_at: &Path,
        name: &OsStr,
        ino: u64,
    ) -> bool {
        if hidden.is_empty() {
            return false;
        }
        let child = listed_at.join(name);
        if hidden.iter().any(|root| root.realpath == child) {
            return true;
        }
        // A hidden directory moved or reached another way: compare identities.
        // (d_ino differs from st_ino only at mount points, covered above.)
        hidden.iter().any(|root| root.ino == ino)
            && rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|stat| {
                    hidden
                        .iter()
                        .any(|root| identity(&stat) == (root.dev, root.ino))
                })
                .unwrap_or(true)
    }
}

/// Byte offset of the only non-overlapping occurrence of `old_text` (14.11).
pub fn single_occurrence(text: &str, old_text: &[u8], logical: &str) -> Result<usize> {
    let not_found = || Error::TextNotFound(logical.to_owned());
    // Text that is not UTF-8 cannot match whole characters of UTF-8 content.
    let needle = std::str::from_utf8(old_text).map_err(|_| not_found())?;
    let mut occurrences = text.match_indices(needle).map(|(at, _)| at);
    let first = occurrences.next().ok_or_else(not_found)?;
    if occurrences.next().is_some() {
        return Err(Error::TextRepeated(logical.to_owned()));
    }
    Ok(first)
}

pub fn wrote(content: &[u8], logical: &str) -> String {
    format!(
        "Wrote {} to {}",
        crate::shown::count(content.len() as u64, "byte"),
        logical
    )
}

/// Sorts bytewise after suffixing, de-duplicates and joins with newlines;
/// each name in its shown form ([`crate::names`]: quoted when it holds a
/// control character or is not UTF-8...), so one line is always one entry.
pub fn join_listing(mut names: Vec<Vec<u8>>) -> String {
    names.sort();
    names.dedup();
    // One buffer for the whole listing: a String per entry cost a tenth of
    // a 1,000-entry `list` (bench/filesystem.rb).
    let mut out = String::with_capacity(names.iter().map(|n| n.len() + 1).sum());
    for (index, entry) in names.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        match entry.strip_suffix(b"/") {
            Some(directory) => {
                out.push_str(&crate::names::show(directory));
                out.push('/');
            }
            None => out.push_str(&crate::names::show(entry)),
        }
    }
    out
}
