//! How a failure on a sandbox entry is worded: by operation, never with a
//! host path or the OS's own error text (14.5, 14.6, 14.8 to 14.10, 1.2).

use std::ffi::OsStr;
use std::os::fd::BorrowedFd;

use rustix::fs::{self as rfs, AtFlags, FileType};
use rustix::io::Errno;

pub use super::error::{Error, Result};
use super::walk::{Failure, WalkError};
use super::*;

/// 14.6, on the open handle.
pub(super) fn check_regular(stat: &rfs::Stat) -> Result<()> {
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Error::NotAFile);
    }
    if stat.st_nlink > 1 {
        return Err(Error::MultiplyLinked);
    }
    Ok(())
}

/// Explains a failed open of a single entry `name` in `parent`.
pub(super) fn explain_last(parent: BorrowedFd<'_>, name: &OsStr, errno: Errno) -> WalkError {
    let failure = match errno {
        Errno::NOENT | Errno::LOOP => match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                Failure::Symlink
            }
            Err(Errno::NOENT) => Failure::Missing,
            _ => Failure::Os(errno),
        },
        other => Failure::Os(other),
    };
    WalkError {
        last: true,
        failure,
    }
}

/// The message for a failed walk, worded for the operation (14.5, 14.8–14.10).
pub(super) fn walk_error(wording: Wording, error: WalkError) -> Error {
    match (error.failure, wording) {
        (Failure::Symlink, Wording::Read) if error.last => Error::IsSymlink,
        (Failure::Symlink, Wording::Write) if error.last => Error::WriteTargetSymlink,
        (Failure::Symlink, _) => Error::TraversesSymlink,
        (Failure::Missing | Failure::NotDirectory, Wording::Write) => Error::WriteParentMissing,
        (Failure::NotDirectory, Wording::List) => Error::NotADirectory,
        (Failure::Missing | Failure::NotDirectory, _) => Error::Missing,
        (Failure::Os(errno), _) => errno_error(errno),
    }
}

/// Maps an OS error on a sandbox entry to a message without host paths.
pub(super) fn errno_error(errno: Errno) -> Error {
    match errno {
        // A socket, a FIFO without a reader, a directory opened for writing...
        Errno::ISDIR | Errno::NXIO | Errno::NODEV | Errno::OPNOTSUPP => Error::NotAFile,
        // Bad input the caller can fix: say what to change rather than echo the errno.
        Errno::NAMETOOLONG => Error::NameTooLong,
        other => io_error(other),
    }
}

/// Whether `errno` says the host ran out of a resource (descriptors,
/// memory) rather than anything about the entry: such a failure is reported
/// as itself, never as "changed" or "does not exist".
pub(super) fn exhausted(errno: Errno) -> bool {
    matches!(errno, Errno::MFILE | Errno::NFILE | Errno::NOMEM)
}

/// An OS failure no rule of §14 names, in our own words: the OS's error text
/// is never embedded (1.2), but the model still learns what it can act on.
pub(super) fn io_error(errno: Errno) -> Error {
    if exhausted(errno) {
        return Error::Exhausted(errno);
    }
    Error::Host(match errno {
        Errno::NOSPC | Errno::DQUOT => ": no space left on the host filesystem",
        Errno::ROFS => ": the host filesystem is read-only",
        Errno::ACCESS | Errno::PERM => ": the host refused access",
        _ => "",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Running out of descriptors is reported as such,
    /// with the errno's name, not as a changed grant or a missing entry.
    #[test]
    fn exhaustion_keeps_its_errno() {
        for (errno, name) in [
            (Errno::MFILE, "EMFILE"),
            (Errno::NFILE, "ENFILE"),
            (Errno::NOMEM, "ENOMEM"),
        ] {
            assert!(exhausted(errno));
            for error in [io_error(errno), errno_error(errno)] {
                assert!(error.to_string().ends_with(&format!("({name})")), "{error}");
                let ruby = error.on("a.txt").worded(&|name| format!("Errno::{name}"));
                assert!(ruby.ends_with(&format!("(Errno::{name})")), "{ruby}");
                assert!(ruby.contains("failed on a.txt: the host"), "{ruby}");
            }
        }
        assert!(!exhausted(Errno::NOENT));
    }
}
