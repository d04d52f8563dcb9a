//! The gem's own directories (the Landlock sandbox's private `TMPDIR`, the
//! network gateway's folders): made, granted and removed through handles.
//!
//! An [`OwnDirectory`] is made with `mkdirat` beneath its parent's handle and
//! pinned at once as an `O_PATH` handle; a Landlock rule or a bwrap
//! `--ro-bind-fd` is built from that handle, and [`OwnDirectory::remove`]
//! empties it through it and unlinks its entry relative to the parent's
//! handle, only while that entry still is this directory. Its path is kept
//! only to tell a child where it is (`TMPDIR`, a bind's destination): a
//! directory renamed, or replaced by a symlink, since it was made is never
//! followed (docs/security.md, "The gem's own directories").

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::walk::DIR_HANDLE;

/// How deep [`OwnDirectory::remove`] descends; a deeper tree a child made
/// is left behind (an error), never walked by path.
const REMOVE_DEPTH: usize = 256;

/// A directory the gem made for itself: its handle, its parent's handle,
/// its name there and the path it was made at.
#[derive(Debug)]
pub struct OwnDirectory {
    parent: Arc<OwnedFd>,
    name: CString,
    fd: OwnedFd,
    dev: u64,
    ino: u64,
    path: PathBuf,
}

/// A directory's handle (`O_PATH`) and the real path it was reached by:
/// `path` is the host's configuration (`TMPDIR`, `/tmp`), so it is followed
/// once; what was opened is what the kernel says the handle is.
pub fn open_parent(path: &Path) -> io::Result<(Arc<OwnedFd>, PathBuf)> {
    let fd = rfs::openat(rfs::CWD, path, DIR_HANDLE | OFlags::CLOEXEC, Mode::empty())?;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
    Ok((Arc::new(fd), real))
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// A random name: `prefix` and 16 hex digits.
fn random_name(prefix: &str) -> io::Result<String> {
    let mut random = [0u8; 8];
    rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty())?;
    let digits: String = random.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{prefix}{digits}"))
}

impl OwnDirectory {
    /// A fresh directory (mode 0700) named `prefix` and random digits beneath
    /// `parent` (a handle from [`open_parent`], reached at `parent_path`).
    pub fn create(
        parent: &Arc<OwnedFd>,
        parent_path: &Path,
        prefix: &str,
    ) -> io::Result<OwnDirectory> {
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..8 {
            let name = random_name(prefix)?;
            match OwnDirectory::make(parent, parent_path, &name) {
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last = error,
                made => return made,
            }
        }
        Err(last)
    }

    /// A new directory `name` (mode 0700) beneath this one: a gateway view.
    pub fn child(&self, name: &str) -> io::Result<OwnDirectory> {
        let parent = Arc::new(self.reopen()?);
        OwnDirectory::make(&parent, &self.path, name)
    }

    /// This user's directory `name` beneath `parent`, shared by every
    /// process of the user and never removed: made when missing, and refused
    /// unless it is a real directory (not a symlink) this user owns that no
    /// one else may enter (someone else made it first).
    pub fn shared(
        parent: &Arc<OwnedFd>,
        parent_path: &Path,
        name: &str,
    ) -> io::Result<OwnDirectory> {
        match OwnDirectory::make(parent, parent_path, name) {
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                OwnDirectory::pin(parent, parent_path, &c_name(name)?)
            }
            made => made,
        }
    }

    /// This user's existing directory `name` beneath `parent`, refused (as by
    /// [`OwnDirectory::shared`]) unless a private directory of this user's.
    pub fn existing(
        parent: &Arc<OwnedFd>,
        parent_path: &Path,
        name: &str,
    ) -> io::Result<OwnDirectory> {
        OwnDirectory::pin(parent, parent_path, &c_name(name)?)
    }

    fn make(parent: &Arc<OwnedFd>, parent_path: &Path, name: &str) -> io::Result<OwnDirectory> {
        let c = c_name(name)?;
        rfs::mkdirat(parent.as_fd(), c.as_c_str(), Mode::from_raw_mode(0o700))?;
        OwnDirectory::pin(parent, parent_path, &c)
    }

    /// Opens `name` beneath `parent` refusing a symlink, and checks it is a
    /// directory of this user's, closed to everyone else.
    fn pin(parent: &Arc<OwnedFd>, parent_path: &Path, name: &CStr) -> io::Result<OwnDirectory> {
        let fd = rfs::openat(
            parent.as_fd(),
            name,
            DIR_HANDLE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let stat = rfs::fstat(&fd)?;
        if stat.st_uid != rustix::process::geteuid().as_raw() || stat.st_mode & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "it is not a private directory of this user's",
            ));
        }
        #[allow(clippy::unnecessary_cast)]
        Ok(OwnDirectory {
            parent: parent.clone(),
            path: parent_path.join(OsStr::from_bytes(name.to_bytes())),
            name: name.to_owned(),
            fd,
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
        })
    }

    /// The handle (`O_PATH`): what a rule or a bind is built from.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Its identity (device, inode), as pinned when it was made or opened.
    pub fn id(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    /// Where it was made: only what a child is told, never opened again.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new handle on the same directory.
    pub fn reopen(&self) -> io::Result<OwnedFd> {
        let flags = DIR_HANDLE | OFlags::CLOEXEC;
        Ok(rfs::openat(self.fd.as_fd(), c".", flags, Mode::empty())?)
    }

    /// A path to `name` inside this directory that goes through the handle
    /// (`/proc/self/fd/N/name`), for calls that only take a path (binding a
    /// Unix socket); short enough for a socket address.
    pub fn through_handle(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}/{name}", self.fd.as_raw_fd()))
    }

    /// `name` inside this directory opened as a handle (`O_PATH`), never
    /// through a symlink: a file bound into a launch (the CA bundle).
    pub fn open_entry(&self, name: &str) -> io::Result<OwnedFd> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(rfs::openat(
            self.fd.as_fd(),
            c_name(name)?.as_c_str(),
            flags,
            Mode::empty(),
        )?)
    }

    /// A new file `name` (mode `mode`) inside this directory, made through
    /// the handle and never through a symlink: the CA bundle.
    pub fn create_file(&self, name: &str, mode: u32) -> io::Result<std::fs::File> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let name = c_name(name)?;
        let fd = rfs::openat(
            self.fd.as_fd(),
            name.as_c_str(),
            flags,
            Mode::from_raw_mode(mode),
        )?;
        Ok(std::fs::File::from(fd))
    }

    /// Empties the directory through its handle (never following a
    /// symlink a child left in it), then removes its entry from the parent
    /// while that entry is still this directory: one renamed away or
    /// replaced is left where it is, emptied.
    pub fn remove(&self) -> io::Result<()> {
        empty(self.fd.as_fd(), REMOVE_DEPTH)?;
        let flags = AtFlags::SYMLINK_NOFOLLOW;
        let current = match rfs::statat(self.parent.as_fd(), self.name.as_c_str(), flags) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Ok(()),
            Err(errno) => return Err(errno.into()),
        };
        #[allow(clippy::unnecessary_cast)]
        let same = (current.st_dev as u64, current.st_ino as u64) == (self.dev, self.ino);
        if !same {
            return Ok(());
        }
        match rfs::unlinkat(
            self.parent.as_fd(),
            self.name.as_c_str(),
            AtFlags::REMOVEDIR,
        ) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(errno) => Err(errno.into()),
        }
    }
}

/// Removes everything inside `directory` (a handle), each entry relative to
/// its own directory's handle, subdirectories opened refusing symlinks.
fn empty(directory: BorrowedFd<'_>, depth: usize) -> io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let readable = rfs::openat(directory, c".", flags, Mode::empty())?;
    let mut names = Vec::new();
    for entry in rfs::Dir::read_from(&readable)? {
        let name = entry?.file_name().to_owned();
        if name.as_bytes() != b"." && name.as_bytes() != b".." {
            names.push(name);
        }
    }
    for name in names {
        match rfs::unlinkat(&readable, name.as_c_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(Errno::ISDIR) if depth > 0 => {
                let inner = rfs::openat(&readable, name.as_c_str(), flags, Mode::empty())?;
                empty(inner.as_fd(), depth - 1)?;
                match rfs::unlinkat(&readable, name.as_c_str(), AtFlags::REMOVEDIR) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(errno) => return Err(errno.into()),
                }
            }
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> (Arc<OwnedFd>, PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("lg-own-{}", random_name("").unwrap()));
        std::fs::create_dir(&base).unwrap();
        let (fd, real) = open_parent(&base).unwrap();
        (fd, real, base)
    }

    #[test]
    fn a_made_directory_is_private_and_removed_with_its_content() {
        let (parent, real, base) = scratch();
        let own = OwnDirectory::create(&parent, &real, "x-").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(own.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::create_dir_all(own.path().join("a/b")).unwrap();
        std::fs::write(own.path().join("a/b/f"), b"x").unwrap();
        own.remove().unwrap();
        assert!(!own.path().exists());
        std::fs::remove_dir(base).unwrap();
    }

    #[test]
    fn removal_never_follows_a_symlink_put_in_its_place() {
        let (parent, real, base) = scratch();
        let own = OwnDirectory::create(&parent, &real, "x-").unwrap();
        let target = base.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("kept"), b"k").unwrap();
        std::fs::write(own.path().join("inside"), b"i").unwrap();
        // The directory moved away, a symlink to the target in its place,
        // and a symlink inside it to the target too.
        std::os::unix::fs::symlink(&target, own.path().join("link")).unwrap();
        let moved = base.join("moved");
        std::fs::rename(own.path(), &moved).unwrap();
        std::os::unix::fs::symlink(&target, own.path()).unwrap();
        own.remove().unwrap();
        assert!(target.join("kept").exists());
        assert!(std::fs::symlink_metadata(own.path()).unwrap().is_symlink());
        assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0);
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_shared_directory_of_someone_else_is_refused() {
        let (parent, real, base) = scratch();
        let first = OwnDirectory::shared(&parent, &real, "shared").unwrap();
        let again = OwnDirectory::shared(&parent, &real, "shared").unwrap();
        assert_eq!((first.dev, first.ino), (again.dev, again.ino));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(first.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(OwnDirectory::shared(&parent, &real, "shared").is_err());
        std::os::unix::fs::symlink(&base, base.join("link")).unwrap();
        assert!(OwnDirectory::shared(&parent, &real, "link").is_err());
        std::fs::remove_dir_all(base).unwrap();
    }
}
