//! The broker's operations for a file-transfer API (littleghost-sandboxd's
//! REST files, docs/design.md "littleghost-sandboxd"): bytes instead of
//! text, a directory's entries with their metadata, one entry's metadata,
//! a write with permission bits that makes its parent directories, and
//! removal. Each walks from the pinned roots exactly as read, list and
//! write do (14.5, H.1): no symlink or `..` is followed, and a stricter
//! grant met on the way (a protected `.git`) decides by its identity.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::walk;
use super::*;

/// One entry's metadata, as `lstat` tells it (a symlink is never followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryInfo {
    /// The raw name (a listing); empty for the entry [`Broker::stat`] named.
    pub name: OsString,
    pub directory: bool,
    pub size: u64,
    /// Seconds and nanoseconds since the Unix epoch.
    pub modified: (i64, u32),
    /// The permission bits.
    pub mode: u32,
}

impl EntryInfo {
    fn of(name: OsString, stat: &rfs::Stat) -> EntryInfo {
        EntryInfo {
            name,
            directory: FileType::from_raw_mode(stat.st_mode) == FileType::Directory,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            modified: (
                stat.st_mtime,
                u32::try_from(stat.st_mtime_nsec).unwrap_or(0),
            ),
            mode: stat.st_mode & 0o7777,
        }
    }
}

impl Broker {
    /// The bytes of a regular file within `read_bytes` (14.8 for any content).
    pub fn read_bytes(&self, physical: &Path, logical: &str) -> crate::Result<Vec<u8>> {
        self.read_file_bytes(physical)
            .map_err(|error| error.on(logical).into())
    }

    /// The metadata of the entry at `physical` (a grant root included).
    pub fn stat(&self, physical: &Path, logical: &str) -> crate::Result<EntryInfo> {
        self.stat_entry(physical)
            .map_err(|error| error.on(logical).into())
    }

    /// The entries of a directory with their metadata, hidden ones left out
    /// as `list` leaves them out (14.9, W11), within `list_entries`.
    pub fn entries(&self, physical: &Path, logical: &str) -> crate::Result<Vec<EntryInfo>> {
        self.directory_infos(physical)
            .map_err(|error| error.on(logical).into())
    }

    /// Writes `content` atomically as [`Broker::write`] does, creating the
    /// missing parent directories first (each beneath a writable grant,
    /// checked like a write), the file getting `mode` when given.
    pub fn write_creating(
        &self,
        physical: &Path,
        logical: &str,
        content: &[u8],
        mode: Option<u32>,
    ) -> crate::Result<()> {
        self.write_with_parents(physical, content, mode)
            .map_err(|error| error.on(logical).into())
    }

    /// Removes the entry at `physical`: a file or an empty directory, or
    /// with `recursive` a directory and everything beneath it. A grant root
    /// cannot be removed, nor anything a read-only grant governs.
    pub fn remove(&self, physical: &Path, logical: &str, recursive: bool) -> crate::Result<()> {
        self.remove_entry(physical, recursive)
            .map_err(|error| error.on(logical).into())
    }

    fn stat_entry(&self, physical: &Path) -> Result<EntryInfo> {
        let path = lexical_path(physical)?;
        let resolved = self.resolve_clean(&path, false)?;
        let root = self.verify(&resolved)?;
        if resolved.below.as_os_str().is_empty() {
            let stat = rfs::fstat(&root).map_err(io_error)?;
            return Ok(EntryInfo::of(OsString::new(), &stat));
        }
        let (parent, name, _) = self.open_parent(&root, &resolved, Wording::Read, false)?;
        let parent = parent.get(&root);
        let stat = rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| walk_error(Wording::Read, explain_last(parent, name, errno)))?;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
            return Err(Error::TraversesSymlink);
        }
        Ok(EntryInfo::of(OsString::new(), &stat))
    }

    fn directory_infos(&self, physical: &Path) -> Result<Vec<EntryInfo>> {
        let path = lexical_path(physical)?;
        let (dir, listed_at) = self.open_listed_directory(&path)?;
        let lookup = rfs::openat(&dir, ".", walk::DIR_HANDLE | OFlags::CLOEXEC, Mode::empty())
            .map_err(io_error)?;
        let names = self.directory_entries(dir, &listed_at)?;
        let mut infos = Vec::with_capacity(names.len());
        for mut name in names {
            if name.last() == Some(&b'/') {
                name.pop();
            }
            let name = OsString::from_vec(name);
            match rfs::statat(&lookup, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => infos.push(EntryInfo::of(name, &stat)),
                // Removed since it was listed.
                Err(Errno::NOENT) => continue,
                Err(errno) => return Err(io_error(errno)),
            }
        }
        Ok(infos)
    }

    fn write_with_parents(&self, physical: &Path, content: &[u8], mode: Option<u32>) -> Result<()> {
        let path = lexical_path(physical)?;
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        for directory in ancestors {
            if self.resolve_clean(directory, true).is_ok() {
                self.make_directory(directory)?;
            }
        }
        let resolved = self.resolve(&path, true)?;
        if !resolved.writable {
            return Err(Error::ReadOnly);
        }
        self.check_write_size(content)?;
        let root = self.verify(&resolved)?;
        let (parent, name, _) = self.open_parent(&root, &resolved, Wording::Write, true)?;
        write::replace_file_with_mode(parent.get(&root), name, content, mode)
    }

    /// Makes the directory `path` (an entry beneath a grant root) unless a
    /// directory is there already.
    fn make_directory(&self, path: &Path) -> Result<()> {
        let resolved = self.resolve_clean(path, true)?;
        let root = self.verify(&resolved)?;
        let (parent, name, rule) = self.open_parent(&root, &resolved, Wording::Write, false)?;
        let parent = parent.get(&root);
        match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => return Ok(()),
                FileType::Symlink => return Err(Error::TraversesSymlink),
                _ => return Err(Error::NotADirectory),
            },
            Err(Errno::NOENT) => {}
            Err(errno) => return Err(io_error(errno)),
        }
        if !resolved.writable {
            return Err(Error::ReadOnly);
        }
        rule.check(true)?;
        match rfs::mkdirat(parent, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => Ok(()),
            Err(errno) => Err(io_error(errno)),
        }
    }

    fn remove_entry(&self, physical: &Path, recursive: bool) -> Result<()> {
        let path = lexical_path(physical)?;
        let resolved = self.resolve_clean(&path, true)?;
        if resolved.below.as_os_str().is_empty() {
            return Err(Error::NotAnEntry);
        }
        if !resolved.writable {
            return Err(Error::ReadOnly);
        }
        let root = self.verify(&resolved)?;
        let (parent, name, _) = self.open_parent(&root, &resolved, Wording::Write, true)?;
        let parent = parent.get(&root);
        let stat = rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| walk_error(Wording::Read, explain_last(parent, name, errno)))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return rfs::unlinkat(parent, name, AtFlags::empty()).map_err(io_error);
        }
        self.check_removable(&stat)?;
        if recursive {
            let dir = rfs::openat(parent, name, walk::DIR_READ | walk::ALWAYS, Mode::empty())
                .map_err(io_error)?;
            self.empty_directory(dir)?;
        }
        rfs::unlinkat(parent, name, AtFlags::REMOVEDIR).map_err(|errno| match errno {
            Errno::NOTEMPTY | Errno::EXIST => Error::NotEmpty,
            other => io_error(other),
        })
    }

    /// A directory that is some grant's root (a protected `.git`, another
    /// grant) is never removed from beneath the grant holding it.
    fn check_removable(&self, stat: &rfs::Stat) -> Result<()> {
        match self.rule_of(identity(stat)) {
            Some(Rule::Writable) | None => Ok(()),
            Some(rule) => {
                rule.check(true)?;
                Err(Error::ReadOnly)
            }
        }
    }

    /// Removes everything in `dir`, never following a symlink (one is
    /// removed as the link it is) and refusing any grant root met.
    fn empty_directory(&self, dir: OwnedFd) -> Result<()> {
        let lookup = rfs::openat(&dir, ".", walk::DIR_HANDLE | OFlags::CLOEXEC, Mode::empty())
            .map_err(io_error)?;
        let mut names = Vec::new();
        for entry in rfs::Dir::new(dir).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        for name in names {
            self.remove_beneath(lookup.as_fd(), &name)?;
        }
        Ok(())
    }

    fn remove_beneath(&self, parent: BorrowedFd<'_>, name: &OsStr) -> Result<()> {
        let stat = match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Ok(()),
            Err(errno) => return Err(io_error(errno)),
        };
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            self.check_removable(&stat)?;
            let dir = rfs::openat(parent, name, walk::DIR_READ | walk::ALWAYS, Mode::empty())
                .map_err(|errno| walk_error(Wording::Write, explain_last(parent, name, errno)))?;
            if identity(&rfs::fstat(&dir).map_err(io_error)?) != identity(&stat) {
                return Err(Error::SourceChanged);
            }
            self.empty_directory(dir)?;
            return rfs::unlinkat(parent, name, AtFlags::REMOVEDIR).map_err(io_error);
        }
        rfs::unlinkat(parent, name, AtFlags::empty()).map_err(io_error)
    }
}
