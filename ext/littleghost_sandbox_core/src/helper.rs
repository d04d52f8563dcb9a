//! The gem's helper executable (`littleghost-sandbox-helper`), run only from
//! a copy no child can change.
//!
//! It is installed beside the extension library, and the binding tells the
//! core that directory once, when the extension loads ([`load`]). That is the
//! only time the file is read: it is opened without following a final
//! symlink, checked (a regular, executable file owned by root or by this
//! process's effective user, writable by nobody else), and copied into a
//! sealed in-memory file (`memfd_create` + `F_SEAL_SEAL | SHRINK | GROW |
//! WRITE`, and `F_SEAL_EXEC` where the kernel has it). Every later launch
//! executes that copy through its descriptor (the Landlock supervisor:
//! [`Sealed::fd`], handed to the process runner) or gives Bubblewrap a fresh
//! read-only view of it (the relay: [`Sealed::reopen`]). A child that
//! replaces the file on disk, in place or by rename, changes nothing the gem
//! runs afterwards (runc's answer to CVE-2019-5736).
//!
//! When the file fails a check, or the kernel refuses an executable
//! in-memory file (`vm.memfd_noexec = 2`), [`sealed`] says why and backends
//! that need the helper refuse (DependencyError in Ruby); nothing ever falls
//! back to the path.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::kind::Kind;

/// What a helper function returns: its own error, carried across
/// mechanisms by `crate::error::Error`.
pub type Result<T> = std::result::Result<T, Error>;

/// The helper's file name.
pub const EXECUTABLE: &str = "littleghost-sandbox-helper";

/// The sealed in-memory copy of the helper, made once at load.
#[derive(Debug)]
pub struct Sealed {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// The memfd's identity, checked before every use: a descriptor number
    /// the Ruby process closed and reused for another file is refused.
    #[cfg(target_os = "linux")]
    identity: (u64, u64),
    /// The file it was copied from (for messages and `argv[0]`).
    source: PathBuf,
}

/// Why the gem's helper (or another executable the gem runs, `what`)
/// cannot be run; every one is a [`Kind::Dependency`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the gem's helper executable location is unknown (the extension did not record it)")]
    LocationUnknown,
    #[error("the gem's helper runs only on Linux")]
    NotLinux,
    #[error("the gem's helper executable at {} runs only on Linux", .0.display())]
    NotLinuxAt(PathBuf),
    #[error("{what} at {} is not a regular file", .path.display())]
    NotRegular { what: String, path: PathBuf },
    #[error(
        "{what} at {} is owned by uid {uid}, not by root or by this process's user \
         (uid {euid}); install it as one of them",
        .path.display()
    )]
    ForeignOwner {
        what: String,
        path: PathBuf,
        uid: u32,
        euid: u32,
    },
    #[error(
        "{what} at {shown} is writable by its group or others (mode {mode:04o}); run \
         `chmod go-w {shown}`",
        shown = .path.display()
    )]
    Writable {
        what: String,
        path: PathBuf,
        mode: u32,
    },
    #[error("{what} at {} is not executable (mode {mode:04o})", .path.display())]
    NotExecutable {
        what: String,
        path: PathBuf,
        mode: u32,
    },
    #[error("{what} at {} is a symlink; it must be the file itself", .path.display())]
    Symlink { what: String, path: PathBuf },
    /// `reason`: the OS's error, as it words it.
    #[error("{what} is missing or not executable at {} ({reason})", .path.display())]
    Missing {
        what: String,
        path: PathBuf,
        reason: String,
    },
    #[error("cannot stat {}: {reason}", .path.display())]
    Stat { path: PathBuf, reason: String },
    #[error("cannot copy the gem's helper executable at {}: {reason}", .path.display())]
    Copy { path: PathBuf, reason: String },
    #[error("the gem's helper executable at {} changed while it was being copied", .0.display())]
    ChangedWhileCopied(PathBuf),
    /// `vm.memfd_noexec` (`None`: unreadable) forbids an executable memfd.
    #[error(
        "the kernel forbids executable in-memory files (vm.memfd_noexec = {}), so the \
         gem cannot run its helper from a sealed copy; set vm.memfd_noexec to 0 or 1 \
         (sysctl -w vm.memfd_noexec=1)",
        .memfd_noexec.as_deref().unwrap_or("?")
    )]
    MemfdForbidden { memfd_noexec: Option<String> },
    #[error(
        "cannot make a sealed in-memory copy of the gem's helper: {}",
        std::io::Error::from_raw_os_error(*.errno)
    )]
    Memfd { errno: i32 },
    #[error("cannot seal the in-memory copy of the gem's helper: {reason}")]
    Seal { reason: String },
    /// The sealed copy's own descriptor failed (`reason`: the OS's words).
    #[error("{reason}")]
    Copied { reason: String },
    #[error(
        "cannot reopen the sealed copy of the gem's helper through {path} ({reason}); \
         is /proc mounted?"
    )]
    Reopen { path: String, reason: String },
    #[error(
        "the sealed copy of the gem's helper ({}) is no longer open in this process \
         (its descriptor was closed or reused)",
        .0.display()
    )]
    Replaced(PathBuf),
}

impl Error {
    /// Every helper failure is a missing or unusable dependency.
    pub fn kind(&self) -> Kind {
        Kind::Dependency
    }
}

static LOADED: OnceLock<std::result::Result<Sealed, Error>> = OnceLock::new();

/// Seals the helper found in `directory` (the extension's); only the first
/// call does anything. Failures are kept and reported by [`sealed`].
pub fn load(directory: &Path) {
    LOADED.get_or_init(|| seal(&directory.join(EXECUTABLE)));
}

/// [`load`] from the directory of the shared library this code is linked
/// into (the extension's, where the helper is installed beside it); nothing
/// when the dynamic loader cannot say.
pub fn load_beside_library() {
    if let Some(directory) = library_directory() {
        load(&directory);
    }
}

/// The loaded library's directory, from the dynamic loader's record of one
/// of its own functions.
fn library_directory() -> Option<PathBuf> {
    use std::ffi::{c_void, CStr, OsStr};
    use std::os::unix::ffi::OsStrExt;
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let address = library_directory as *const c_void;
    // SAFETY: `address` points into this library's code and `info` is a
    // writable Dl_info; dladdr only fills it in.
    let found = unsafe { libc::dladdr(address, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: dladdr returned non-zero, so `info` is initialised.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader for the
    // life of the mapping; we copy it at once.
    let file = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(OsStr::from_bytes(file.to_bytes()));
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    path.parent().map(PathBuf::from)
}

/// The sealed helper, or why there is none (DependencyError).
pub fn sealed() -> Result<&'static Sealed> {
    match LOADED.get() {
        Some(Ok(sealed)) => Ok(sealed),
        Some(Err(reason)) => Err(reason.clone()),
        None => Err(Error::LocationUnknown),
    }
}

/// Why backends that need the helper cannot run here, or None.
pub fn unavailable_reason() -> Option<String> {
    sealed().err().map(|error| error.to_string())
}

impl Sealed {
    /// The file the copy was made from.
    pub fn source(&self) -> &Path {
        &self.source
    }
}

/// What [`check_file`] needs to know about the opened file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFacts {
    pub regular: bool,
    pub uid: u32,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

/// The rule for an executable the gem runs on a sandbox's behalf: a regular,
/// executable file owned by root or by `euid`, writable by nobody else.
/// Returns why not, naming `path` and what to change.
pub fn check_file(path: &Path, facts: FileFacts, euid: u32) -> std::result::Result<(), Error> {
    check_executable("the gem's helper executable", path, facts, euid)
}

/// [`check_file`] for any executable, described as `what` in the reason.
pub fn check_executable(
    what: &str,
    path: &Path,
    facts: FileFacts,
    euid: u32,
) -> std::result::Result<(), Error> {
    let what = what.to_string();
    let path = path.to_path_buf();
    if !facts.regular {
        return Err(Error::NotRegular { what, path });
    }
    if facts.uid != 0 && facts.uid != euid {
        return Err(Error::ForeignOwner {
            what,
            path,
            uid: facts.uid,
            euid,
        });
    }
    let mode = facts.mode;
    if mode & 0o022 != 0 {
        return Err(Error::Writable { what, path, mode });
    }
    if mode & 0o111 == 0 {
        return Err(Error::NotExecutable { what, path, mode });
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
impl Sealed {
    /// Never reached: nothing is sealed off Linux.
    pub fn fd(&self) -> Result<std::os::fd::RawFd> {
        Err(Error::NotLinux)
    }
}

#[cfg(not(target_os = "linux"))]
fn seal(path: &Path) -> std::result::Result<Sealed, Error> {
    Err(Error::NotLinuxAt(path.to_path_buf()))
}

#[cfg(target_os = "linux")]
pub use linux::{memfd_refusal, open_verified};

#[cfg(target_os = "linux")]
use linux::seal;

#[cfg(target_os = "linux")]
mod linux {
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::Path;

    use super::{check_executable, Error, FileFacts, Result, Sealed};

    /// Every seal the copy must carry before it is run.
    const SEALS: libc::c_int =
        libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;

    /// Opens `path` without following a final symlink and checks the file
    /// it got ([`check_executable`]); returns it and what it was.
    pub fn open_verified(
        what: &str,
        path: &Path,
    ) -> std::result::Result<(File, std::fs::Metadata), Error> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(path)
            .map_err(|error| match error.raw_os_error() {
                Some(libc::ELOOP) => Error::Symlink {
                    what: what.to_string(),
                    path: path.to_path_buf(),
                },
                _ => Error::Missing {
                    what: what.to_string(),
                    path: path.to_path_buf(),
                    reason: error.to_string(),
                },
            })?;
        let stat_error = |e: std::io::Error| Error::Stat {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let meta = file.metadata().map_err(stat_error)?;
        let facts = FileFacts {
            regular: meta.file_type().is_file(),
            uid: meta.uid(),
            mode: meta.mode() & 0o7777,
        };
        check_executable(what, path, facts, rustix::process::geteuid().as_raw())?;
        Ok((file, meta))
    }

    /// Opens, checks and copies `path` into a sealed memfd.
    pub(super) fn seal(path: &Path) -> std::result::Result<Sealed, Error> {
        let (mut file, before) = open_verified("the gem's helper executable", path)?;
        let memfd = create()?;
        let mut copy = File::from(memfd);
        let copied =
            std::io::copy(&mut (&mut file).take(before.size()), &mut copy).map_err(|e| {
                Error::Copy {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                }
            })?;
        let after = file.metadata().map_err(|e| Error::Stat {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let unchanged = copied == before.size()
            && after.size() == before.size()
            && after.mtime() == before.mtime()
            && after.mtime_nsec() == before.mtime_nsec()
            && after.ctime() == before.ctime()
            && after.ctime_nsec() == before.ctime_nsec();
        if !unchanged {
            return Err(Error::ChangedWhileCopied(path.to_path_buf()));
        }
        let fd = OwnedFd::from(copy);
        add_seals(fd.as_fd())?;
        let copied_error = |e: std::io::Error| Error::Copied {
            reason: e.to_string(),
        };
        let meta = File::from(fd.try_clone().map_err(copied_error)?)
            .metadata()
            .map_err(copied_error)?;
        if meta.mode() & 0o111 == 0 {
            return Err(memfd_refusal(libc::EACCES));
        }
        let sealed = Sealed {
            identity: (meta.dev(), meta.ino()),
            fd,
            source: path.to_path_buf(),
        };
        // Both ways a launch uses the copy go through /proc/self/fd: refuse
        // now, with the reason, where that cannot work.
        sealed.reopen()?;
        Ok(sealed)
    }

    /// `memfd_create` for an executable copy: `MFD_EXEC` where the kernel
    /// knows it (6.3+), plain otherwise.
    fn create() -> std::result::Result<OwnedFd, Error> {
        let name = c"littleghost-sandbox-helper";
        let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
        for flags in [base | libc::MFD_EXEC, base] {
            // SAFETY: a NUL-terminated name and integer flags; the result is a new descriptor.
            let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
            if fd >= 0 {
                // SAFETY: `fd` was just created and nothing else owns it.
                return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
            }
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            // EINVAL: a kernel before MFD_EXEC; try without it.
            if errno != libc::EINVAL || flags == base {
                return Err(memfd_refusal(errno));
            }
        }
        unreachable!("the loop returns")
    }

    /// Why the kernel would not give an executable in-memory file.
    pub fn memfd_refusal(errno: i32) -> Error {
        let memfd_noexec = std::fs::read_to_string("/proc/sys/vm/memfd_noexec")
            .map(|v| v.trim().to_string())
            .ok()
            .filter(|v| !v.is_empty());
        if errno == libc::EACCES || errno == libc::EPERM || memfd_noexec.as_deref() == Some("2") {
            return Error::MemfdForbidden { memfd_noexec };
        }
        Error::Memfd { errno }
    }

    fn add_seals(fd: BorrowedFd<'_>) -> std::result::Result<(), Error> {
        for seals in [SEALS | libc::F_SEAL_EXEC, SEALS] {
            // SAFETY: fcntl on a descriptor we own, integer argument.
            if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } == 0 {
                return Ok(());
            }
            // EINVAL: a kernel before F_SEAL_EXEC (6.3); seal without it.
        }
        Err(Error::Seal {
            reason: std::io::Error::last_os_error().to_string(),
        })
    }

    impl Sealed {
        /// The copy's descriptor, for a launch that executes it: checked to
        /// still be the sealed copy made at load.
        pub fn fd(&self) -> Result<RawFd> {
            self.check()?;
            Ok(self.fd.as_raw_fd())
        }

        /// A new read-only descriptor of the copy with its own offset (for
        /// `bwrap --ro-bind-data`, which reads it to the end).
        pub fn reopen(&self) -> Result<OwnedFd> {
            self.check()?;
            let path = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(std::ffi::OsStr::from_bytes(path.as_bytes()))
                .map_err(|e| Error::Reopen {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
            let meta = file.metadata().map_err(|e| Error::Copied {
                reason: e.to_string(),
            })?;
            if (meta.dev(), meta.ino()) != self.identity {
                return Err(self.replaced());
            }
            Ok(OwnedFd::from(file))
        }

        /// Still our memfd, with every seal.
        fn check(&self) -> std::result::Result<(), Error> {
            let fd = self.fd.as_raw_fd();
            // SAFETY: fstat into a zeroed local; fcntl with an integer.
            let (stat, seals) = unsafe {
                let mut stat: libc::stat = std::mem::zeroed();
                let stat = (libc::fstat(fd, &mut stat) == 0).then_some(stat);
                (stat, libc::fcntl(fd, libc::F_GET_SEALS))
            };
            match stat {
                Some(stat)
                    if (stat.st_dev, stat.st_ino) == self.identity
                        && seals >= 0
                        && seals & SEALS == SEALS =>
                {
                    Ok(())
                }
                _ => Err(self.replaced()),
            }
        }

        fn replaced(&self) -> Error {
            Error::Replaced(self.source.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_directory_is_where_the_loaded_code_lives() {
        // A test binary is its own "library": the loader names the executable.
        let executable = std::env::current_exe().unwrap().canonicalize().unwrap();
        assert_eq!(library_directory().as_deref(), executable.parent());
    }

    fn facts(uid: u32, mode: u32) -> FileFacts {
        FileFacts {
            regular: true,
            uid,
            mode,
        }
    }

    #[test]
    fn only_a_file_owned_by_root_or_us_and_writable_by_nobody_else_is_run() {
        let path = Path::new("/gem/lib/littleghost-sandbox-helper");
        assert_eq!(check_file(path, facts(0, 0o755), 1000), Ok(()));
        assert_eq!(check_file(path, facts(1000, 0o700), 1000), Ok(()));
        let other = check_file(path, facts(1001, 0o755), 1000)
            .unwrap_err()
            .to_string();
        assert!(other.contains("owned by uid 1001"), "{other}");
        let group = check_file(path, facts(0, 0o775), 1000)
            .unwrap_err()
            .to_string();
        assert!(
            group.contains("writable by its group or others (mode 0775)"),
            "{group}"
        );
        assert!(group.contains("chmod go-w"), "{group}");
        assert!(check_file(path, facts(0, 0o757), 0).is_err());
        assert!(matches!(
            check_file(path, facts(0, 0o644), 0),
            Err(Error::NotExecutable { mode: 0o644, .. })
        ));
        let directory = FileFacts {
            regular: false,
            ..facts(0, 0o755)
        };
        assert!(check_file(path, directory, 0)
            .unwrap_err()
            .to_string()
            .ends_with("littleghost-sandbox-helper is not a regular file"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_copy_is_sealed_and_survives_the_file_being_replaced() {
        use std::os::fd::{BorrowedFd, FromRawFd};
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EXECUTABLE);
        std::fs::write(&path, b"#!/bin/sh\necho original\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let sealed = linux::seal(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"#!/bin/sh\necho replaced\n").unwrap();
        let fd = sealed.fd().unwrap();
        // SAFETY: `fd` stays open while `sealed` lives.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let seals = rustix::fs::fcntl_get_seals(borrowed).unwrap();
        assert!(seals.contains(rustix::fs::SealFlags::WRITE | rustix::fs::SealFlags::SEAL));
        assert!(rustix::io::pwrite(borrowed, b"x", 0).is_err());
        let mut copy = String::new();
        use std::io::Read;
        let reopened = sealed.reopen().unwrap();
        // SAFETY: we own the reopened descriptor.
        let mut file =
            unsafe { std::fs::File::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(reopened)) };
        file.read_to_string(&mut copy).unwrap();
        assert_eq!(copy, "#!/bin/sh\necho original\n");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_kernel_that_refuses_executable_memfds_is_named_with_the_sysctl() {
        let refused = memfd_refusal(libc::EACCES).to_string();
        assert!(
            refused.contains("the kernel forbids executable in-memory files (vm.memfd_noexec = "),
            "{refused}"
        );
        assert!(refused.contains("sysctl -w vm.memfd_noexec=1"), "{refused}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_symlink_or_a_group_writable_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, b"x").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o775)).unwrap();
        let refused = linux::seal(&real).unwrap_err().to_string();
        assert!(
            refused.contains("writable by its group or others"),
            "{refused}"
        );
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(linux::seal(&link), Err(Error::Symlink { .. })));
    }
}
