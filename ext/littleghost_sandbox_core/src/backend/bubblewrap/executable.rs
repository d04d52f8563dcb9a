//! B.2: the bwrap executable, resolved once to an absolute path and checked.
//!
//! `bubblewrap:` (by default [`super::DEFAULT_EXECUTABLE`]) is resolved the
//! first time a probe or an `open` needs it: a bare name is searched in this
//! process's `PATH` once, the result is made absolute with every symlink
//! resolved, and both the file and its directory must be owned by root or by
//! this process's effective user and writable by nobody else (the gem's
//! helper obeys the same rule, [`crate::helper::check_executable`]). Then
//! `bwrap --version` must be at least [`MINIMUM_VERSION`]. A success is
//! remembered for the life of the process, and every launch runs that
//! absolute path; `PATH` is never searched per launch.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::helper::{check_executable, FileFacts};

/// A bwrap release, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The oldest bwrap the backend runs: 0.8.0 brought `--disable-userns`
/// (every launch passes it) and `--bind-fd`/`--ro-bind-fd` (binds from open
/// handles instead of paths).
pub const MINIMUM_VERSION: Version = Version(0, 8, 0);

/// A checked bwrap: where it is and which release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, without symlinks.
    pub path: PathBuf,
    pub version: Version,
}

/// Successful resolutions by the configured name.
static RESOLVED: Mutex<Vec<(PathBuf, Resolved)>> = Mutex::new(Vec::new());

/// The resolution of `configured` made earlier in this process, if any.
pub fn resolved(configured: &Path) -> Option<Resolved> {
    let cache = RESOLVED.lock().ok()?;
    cache
        .iter()
        .find(|(name, _)| name == configured)
        .map(|(_, resolved)| resolved.clone())
}

/// Why a bwrap cannot serve (B.2), in the core's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A bare name that no absolute directory of `PATH` holds.
    #[error(
        "Bubblewrap ({}) was not found in PATH (install it with `apt-get install \
         bubblewrap`, or pass bubblewrap: PATH)",
        .0.display()
    )]
    NotInPath(PathBuf),
    /// Nothing executable at the path given.
    #[error("{}", super::missing_reason(.0))]
    Missing(PathBuf),
    /// The file fails the checks the helper's file passes (type, owner, mode).
    #[error(transparent)]
    Untrusted(#[from] crate::helper::Error),
    /// Its directory cannot be read.
    #[error("{reason}")]
    DirectoryUnreadable { reason: String },
    /// Its directory belongs to someone else, who could swap the file.
    #[error(
        "the directory {} holding Bubblewrap is owned by uid {uid}, not by root or by this \
         process's user (uid {euid}); install bwrap where only they can change it",
        .directory.display()
    )]
    DirectoryOwner {
        directory: PathBuf,
        uid: u32,
        euid: u32,
    },
    /// Its directory is writable by its group or others.
    #[error(
        "the directory {} holding Bubblewrap is writable by its group or others (mode \
         {mode:04o}); install bwrap where only root or uid {euid} can change it",
        .directory.display()
    )]
    DirectoryWritable {
        directory: PathBuf,
        mode: u32,
        euid: u32,
    },
    /// `--version` failed or said something unreadable.
    #[error(
        "cannot tell the version of Bubblewrap at {} ({detail}); littleghost-sandbox needs \
         {MINIMUM_VERSION} or newer",
        .path.display()
    )]
    UnknownVersion { path: PathBuf, detail: String },
    /// Older than [`MINIMUM_VERSION`].
    #[error("{}", too_old(.path, *.version))]
    TooOld { path: PathBuf, version: Version },
}

/// Resolves and checks `configured` (once per process), or says why it cannot serve.
pub fn resolve(configured: &Path) -> Result<Resolved, Refused> {
    if let Some(found) = resolved(configured) {
        return Ok(found);
    }
    let path = locate(configured)?;
    check_trusted(&path)?;
    let version = version_of(&path)?;
    if version < MINIMUM_VERSION {
        return Err(Refused::TooOld { path, version });
    }
    let found = Resolved { path, version };
    remember(configured, found.clone());
    Ok(found)
}

/// Records a resolution (tests use it to stand in for a host bwrap).
pub(crate) fn remember(configured: &Path, found: Resolved) {
    if let Ok(mut cache) = RESOLVED.lock() {
        if !cache.iter().any(|(name, _)| name == configured) {
            cache.push((configured.to_path_buf(), found));
        }
    }
}

/// The reason for a bwrap older than [`MINIMUM_VERSION`].
pub fn too_old(path: &Path, version: Version) -> String {
    format!(
        "Bubblewrap {version} at {} is too old: littleghost-sandbox needs {MINIMUM_VERSION} or \
         newer (--disable-userns, --bind-fd/--ro-bind-fd); install bubblewrap >= \
         {MINIMUM_VERSION} (Debian 12, Ubuntu 23.04 and Fedora 38 ship it) and pass bubblewrap: \
         PATH if it is not {}",
        path.display(),
        super::DEFAULT_EXECUTABLE
    )
}

/// An absolute, symlink-free path for `configured`: searched in `PATH`
/// (this process's) when it is a bare name.
fn locate(configured: &Path) -> Result<PathBuf, Refused> {
    let is_bare = configured.components().count() == 1 && !configured.has_root();
    let candidate = if is_bare {
        let search = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        std::env::split_paths(&search)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(configured))
            .find(|path| super::is_executable_file(path))
            .ok_or_else(|| Refused::NotInPath(configured.to_path_buf()))?
    } else {
        configured.to_path_buf()
    };
    let missing = || Refused::Missing(configured.to_path_buf());
    if !super::is_executable_file(&candidate) {
        return Err(missing());
    }
    std::fs::canonicalize(&candidate).map_err(|_| missing())
}

/// The rule of the gem's helper, for bwrap and the directory holding it.
fn check_trusted(path: &Path) -> Result<(), Refused> {
    let euid = rustix::process::geteuid().as_raw();
    let facts = |meta: &std::fs::Metadata| FileFacts {
        regular: meta.file_type().is_file(),
        uid: meta.uid(),
        mode: meta.mode() & 0o7777,
    };
    let meta = std::fs::metadata(path).map_err(|_| Refused::Missing(path.to_path_buf()))?;
    check_executable("Bubblewrap", path, facts(&meta), euid)?;
    let directory = path.parent().unwrap_or(Path::new("/"));
    let meta = std::fs::metadata(directory).map_err(|e| Refused::DirectoryUnreadable {
        reason: e.to_string(),
    })?;
    let FileFacts { uid, mode, .. } = facts(&meta);
    let directory = directory.to_path_buf();
    if uid != 0 && uid != euid {
        return Err(Refused::DirectoryOwner {
            directory,
            uid,
            euid,
        });
    }
    if mode & 0o022 != 0 {
        return Err(Refused::DirectoryWritable {
            directory,
            mode,
            euid,
        });
    }
    Ok(())
}

/// `major.minor.patch` from `bwrap --version` ("bubblewrap 0.8.0").
pub fn parse_version(output: &str) -> Option<Version> {
    let word = output
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let mut parts = word
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some(Version(major, minor, patch))
}

/// Runs `path --version` (5 s, 4 KiB of output) and parses it.
fn version_of(path: &Path) -> Result<Version, Refused> {
    let unknown = |detail: &str| Refused::UnknownVersion {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    };
    let mut child = std::process::Command::new(path)
        .arg("--version")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| unknown(&e.to_string()))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(unknown("`--version` did not finish"));
            }
        }
    }
    let mut output = String::new();
    if let Some(pipe) = child.stdout.take() {
        let _ = pipe.take(4096).read_to_string(&mut output);
    }
    parse_version(&output).ok_or_else(|| unknown(&format!("`--version` said {:?}", output.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_bwrap(dir: &Path, version: &str) -> PathBuf {
        let path = dir.join("bwrap");
        std::fs::write(&path, format!("#!/bin/sh\necho 'bubblewrap {version}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn versions_are_read_from_bwraps_own_words() {
        assert_eq!(parse_version("bubblewrap 0.8.0\n"), Some(Version(0, 8, 0)));
        assert_eq!(parse_version("bubblewrap 0.11.0"), Some(Version(0, 11, 0)));
        assert_eq!(parse_version("bubblewrap 0.7"), Some(Version(0, 7, 0)));
        assert_eq!(parse_version("usage: bwrap"), None);
        assert!(Version(0, 7, 9) < MINIMUM_VERSION && Version(0, 10, 0) > MINIMUM_VERSION);
    }

    #[test]
    fn a_bwrap_older_than_0_8_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = fake_bwrap(dir.path(), "0.7.0");
        let refused = resolve(&old).unwrap_err();
        let path = std::fs::canonicalize(&old).unwrap();
        assert_eq!(
            refused,
            Refused::TooOld {
                path,
                version: Version(0, 7, 0)
            }
        );
        let refused = refused.to_string();
        assert!(refused.contains("Bubblewrap 0.7.0"), "{refused}");
        assert!(refused.contains("needs 0.8.0 or newer"), "{refused}");
        assert!(resolved(&old).is_none());
        std::fs::write(&old, "#!/bin/sh\necho 'bubblewrap 0.8.0'\n").unwrap();
        let found = resolve(&old).unwrap();
        assert_eq!(found.version, Version(0, 8, 0));
        assert_eq!(found.path, std::fs::canonicalize(&old).unwrap());
        assert_eq!(resolved(&old), Some(found));
    }

    #[test]
    fn a_bwrap_others_can_replace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bwrap = fake_bwrap(dir.path(), "0.9.0");
        std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o775)).unwrap();
        let refused = resolve(&bwrap).unwrap_err().to_string();
        assert!(
            refused.contains("writable by its group or others"),
            "{refused}"
        );
        std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = resolve(&bwrap).unwrap_err().to_string();
        assert!(refused.contains("the directory"), "{refused}");
        assert!(refused.contains("(mode 0777)"), "{refused}");
    }

    #[test]
    fn a_missing_bwrap_says_where_it_was_looked_for() {
        let refused = resolve(Path::new("/nonexistent/bwrap"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            refused,
            super::super::missing_reason(Path::new("/nonexistent/bwrap"))
        );
        let bare = resolve(Path::new("lg-no-such-bwrap"))
            .unwrap_err()
            .to_string();
        assert!(bare.contains("was not found in PATH"), "{bare}");
    }
}
