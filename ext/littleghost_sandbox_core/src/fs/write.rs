//! Atomic replacement of one entry in an open directory (14.10, W7): the
//! content goes to a fresh temporary file in the same directory, which is
//! renamed over the target, so readers and crashes see the old or the new
//! content and a rename never writes through a link into another file.
//!
//! Atomicity, not durability: the rename guarantees that concurrent readers
//! and a crash of this process see either the old or the new content. The
//! temporary file is not fsync'ed first, so durability across power loss is
//! left to the filesystem, as with `File.write` (ext4's `auto_da_alloc`, for
//! one, starts writing the new data back when a file is replaced by rename).

use std::ffi::{OsStr, OsString};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as rfs, AtFlags, FileType, Gid, Mode, OFlags, Uid};
use rustix::io::Errno;

use super::{check_regular, errno_error, io_error, walk, Error, Result};

// Test hook: fail after the temporary file is written, before the rename.
#[cfg(test)]
thread_local! {
    pub(super) static FAIL_BEFORE_RENAME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Replaces (or creates) the regular file `name` in `parent` with `content`.
pub(super) fn replace_file(parent: BorrowedFd<'_>, name: &OsStr, content: &[u8]) -> Result<()> {
    replace_file_with_mode(parent, name, content, None)
}

/// [`replace_file`], the new file getting permission bits `mode` when given
/// (set on the temporary file before the rename, so the name never shows
/// other bits).
pub(super) fn replace_file_with_mode(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    content: &[u8],
    mode: Option<u32>,
) -> Result<()> {
    let existing = inspect_target(parent, name)?;
    // A new file gets 0644 & ~umask from the kernel; an existing file's mode
    // is applied after its owner (below), so the temp starts private.
    let create_mode = if existing.is_some() {
        Mode::from_raw_mode(0o600)
    } else {
        Mode::from_raw_mode(0o644)
    };
    let temp = TempFile::create(parent, create_mode)?;
    if let Some(stat) = &existing {
        keep_owner_and_mode(&temp.fd, stat)?;
    }
    if let Some(mode) = mode {
        rustix::fs::fchmod(&temp.fd, Mode::from_raw_mode(mode & 0o777)).map_err(errno_error)?;
    }
    write_all(&temp.fd, content)?;
    // No fdatasync before the rename (see the module comment): it cost about
    // 140 us of a 4 KiB write here, two thirds of the whole operation.
    #[cfg(test)]
    if FAIL_BEFORE_RENAME.with(|fail| fail.get()) {
        return Err(Error::Injected);
    }
    rfs::renameat(parent, &temp.name, parent, name).map_err(|errno| match errno {
        // The target became a directory (or a mount point) in the meantime.
        Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST | Errno::BUSY | Errno::NOTDIR => {
            Error::NotAFile
        }
        other => errno_error(other),
    })?;
    temp.keep();
    Ok(())
}

/// 14.6 on the existing target, if any: a look without opening (so devices
/// and FIFOs are never opened for writing), then the same checks on a
/// write handle, which also enforces the file's own write permission.
fn inspect_target(parent: BorrowedFd<'_>, name: &OsStr) -> Result<Option<rfs::Stat>> {
    match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => check_target(&stat)?,
        Err(Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(errno_error(errno)),
    }
    let handle = match rfs::openat(parent, name, OFlags::WRONLY | walk::ALWAYS, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None), // removed meanwhile: we create it
        Err(Errno::LOOP) => return Err(Error::WriteTargetSymlink),
        Err(errno) => return Err(errno_error(errno)),
    };
    let stat = rfs::fstat(&handle).map_err(io_error)?;
    check_target(&stat)?;
    Ok(Some(stat))
}

fn check_target(stat: &rfs::Stat) -> Result<()> {
    if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
        return Err(Error::WriteTargetSymlink);
    }
    check_regular(stat)
}

/// The replacement keeps the old file's owner (best effort: only root may
/// give a file away) and its permission bits. Set-id bits are dropped so a
/// privileged broker never mints a set-id file with new content.
fn keep_owner_and_mode(fd: &OwnedFd, old: &rfs::Stat) -> Result<()> {
    let now = rfs::fstat(fd).map_err(io_error)?;
    if now.st_uid != old.st_uid || now.st_gid != old.st_gid {
        let _ = rfs::fchown(
            fd,
            Some(Uid::from_raw(old.st_uid)),
            Some(Gid::from_raw(old.st_gid)),
        );
    }
    rfs::fchmod(fd, Mode::from_raw_mode(old.st_mode & 0o777)).map_err(io_error)
}

fn write_all(fd: &OwnedFd, mut content: &[u8]) -> Result<()> {
    while !content.is_empty() {
        match rustix::io::write(fd, content) {
            Ok(0) => return Err(io_error(Errno::IO)),
            Ok(written) => content = &content[written..],
            Err(Errno::INTR) => continue,
            Err(errno) => return Err(io_error(errno)),
        }
    }
    Ok(())
}

/// A temporary file that is removed on drop unless it was renamed into place.
struct TempFile<'p> {
    parent: BorrowedFd<'p>,
    name: OsString,
    fd: OwnedFd,
    kept: bool,
}

impl<'p> TempFile<'p> {
    fn create(parent: BorrowedFd<'p>, mode: Mode) -> Result<TempFile<'p>> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | walk::ALWAYS;
        for _ in 0..64 {
            // A random part, so a process that can watch a writable directory
            // cannot pre-create the next names and starve our writes.
            let name = OsString::from(format!(
                ".littleghost-{:016x}{:x}.tmp",
                random_u64(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match rfs::openat(parent, &name, flags, mode) {
                Ok(fd) => {
                    return Ok(TempFile {
                        parent,
                        name,
                        fd,
                        kept: false,
                    })
                }
                Err(Errno::EXIST) => continue,
                Err(errno) => return Err(errno_error(errno)),
            }
        }
        Err(Error::Host(": no free temporary name"))
    }

    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = rfs::unlinkat(self.parent, &self.name, AtFlags::empty());
        }
    }
}

/// 64 bits from the kernel's CSPRNG; the counter alone keeps names unique if it fails.
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    match rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()) {
        Ok(8) => u64::from_ne_bytes(bytes),
        _ => 0,
    }
}
