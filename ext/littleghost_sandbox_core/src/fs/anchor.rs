//! A grant's directory as an open handle ("handles, not paths").
//!
//! An [`Anchor`] is the one way anything reaches a workspace grant after
//! `Workspace#open`: an `O_PATH` directory handle, the (device, inode) it had
//! when it was taken, the symlink-free absolute path it was reached by and its
//! logical name. It is taken once, by a walk that never follows a symlink, and
//! every later use (a bwrap `--bind-fd`, a Landlock rule, the broker's walks,
//! a narrower grant) starts from the handle, never from the path string.
//!
//! The path is kept only to tell whether the grant still *is* where it was
//! opened: [`Anchor::is_current`] reopens it refusing every symlink and
//! compares identities, so a grant renamed, replaced or swapped since `open`
//! is refused (the handle itself would still reach the moved directory).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{self as rfs, Mode};
use rustix::io::Errno;

use super::walk::{self, Failure, DIR_HANDLE};
use crate::error::kind::Kind;
use crate::error::show::{plain, ShowName};
use crate::grants::Identity;

/// A grant's pinned directory: handle, identity, route and name.
#[derive(Debug, Clone)]
pub struct Anchor {
    fd: Arc<OwnedFd>,
    dev: u64,
    ino: u64,
    /// The absolute path it was reached by, with no symlink in it.
    path: PathBuf,
    /// The path it was configured as (the workspace's lexical path), which
    /// grants built from the layout carry as their source.
    configured: PathBuf,
    /// `root` or the workspace path's name, for messages.
    name: String,
}

impl PartialEq for Anchor {
    fn eq(&self, other: &Anchor) -> bool {
        (self.dev, self.ino, &self.path, &self.configured)
            == (other.dev, other.ino, &other.path, &other.configured)
    }
}
impl Eq for Anchor {}

/// Why an anchor could not be taken.
#[derive(Debug)]
pub enum AnchorError {
    /// Creating a missing directory failed (Ruby: the matching `Errno`).
    Create(std::io::Error),
    /// A rule refused: a symlink on the route, not a directory, missing.
    Rule(Refusal),
}

/// A workspace directory that cannot be pinned (docs/spec.md §3.6): the
/// path's name and places are carried as values, shown by the binding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The configured root (as configured) cannot be opened.
    #[error("workspace root {} cannot be opened: {errno}", .root.display())]
    Root { root: PathBuf, errno: Errno },
    #[error("cannot open /: {0}")]
    Slash(Errno),
    /// An absolute path (by name) through a symlink: the `link` on its
    /// route, where it points (`" -> target"` or empty) and, when known,
    /// the real path to name instead.
    #[error("{}", self.worded(&plain))]
    AbsoluteThroughSymlink {
        name: String,
        path: PathBuf,
        link: PathBuf,
        target: String,
        real: Option<PathBuf>,
    },
    /// An absolute path (by name) that is missing or not a directory.
    #[error("{}", self.worded(&plain))]
    AbsoluteMissing(String),
    /// An absolute path (by name) the OS would not open.
    #[error("{}", self.worded(&plain))]
    AbsoluteUnopenable { name: String, errno: Errno },
    /// A relative path (by name) through a symlink at `at`.
    #[error("{}", self.worded(&plain))]
    ThroughSymlink {
        name: String,
        relative: PathBuf,
        at: PathBuf,
        target: String,
    },
    /// A relative path (by name) whose component `at` is missing.
    #[error("{}", self.worded(&plain))]
    Missing {
        name: String,
        relative: PathBuf,
        at: PathBuf,
    },
    /// A relative path (by name) whose component `at` is not a directory.
    #[error("{}", self.worded(&plain))]
    NotADirectory {
        name: String,
        relative: PathBuf,
        at: PathBuf,
    },
    /// A relative path (by name) the OS would not open.
    #[error("{}", self.worded(&plain))]
    Unopenable {
        name: String,
        relative: PathBuf,
        errno: Errno,
    },
    #[error("cannot reopen: {0}")]
    Reopen(Errno),
    /// The handle of a path (by name) cannot be read.
    #[error("cannot stat {name}: {errno}")]
    Stat { name: String, errno: Errno },
}

impl Refusal {
    /// The message with the path's name shown by `name`.
    pub fn worded(&self, name: ShowName) -> String {
        match self {
            Refusal::AbsoluteThroughSymlink {
                name: path_name,
                path,
                link,
                target,
                real,
            } => format!(
                "workspace path {} ({}) passes through the symlink {}{target}{}",
                name(path_name),
                path.display(),
                link.display(),
                shown_real(real)
            ),
            Refusal::AbsoluteMissing(path) => format!(
                "absolute workspace path {} must already exist (as a directory; it is never \
                 created)",
                name(path)
            ),
            Refusal::AbsoluteUnopenable { name: path, errno } => {
                format!("workspace path {} cannot be opened: {errno}", name(path))
            }
            Refusal::ThroughSymlink {
                name: path,
                relative,
                at,
                target,
            } => format!(
                "workspace path {} ({}) passes through the symlink {}{target}: a workspace path \
                 is never followed through a symlink; replace the link with a directory",
                name(path),
                relative.display(),
                at.display()
            ),
            Refusal::Missing {
                name: path,
                relative,
                at,
            } => format!(
                "workspace path {} ({}) does not exist: {} is missing",
                name(path),
                relative.display(),
                at.display()
            ),
            Refusal::NotADirectory {
                name: path,
                relative,
                at,
            } => format!(
                "workspace path {} ({}) is not a directory: {} is not one",
                name(path),
                relative.display(),
                at.display()
            ),
            Refusal::Unopenable {
                name: path,
                relative,
                errno,
            } => format!(
                "workspace path {} ({}) cannot be opened: {errno}",
                name(path),
                relative.display()
            ),
            other => other.to_string(),
        }
    }

    /// A missing absolute path is a bad argument; the rest a policy that
    /// names directories the workspace cannot stand for.
    pub fn kind(&self) -> Kind {
        match self {
            Refusal::AbsoluteMissing(_) => Kind::Argument,
            _ => Kind::Policy,
        }
    }
}

/// `"; name its real path REAL instead"`, when the real path is known.
pub fn shown_real(real: &Option<PathBuf>) -> String {
    real.as_ref()
        .map(|real| format!("; name its real path {} instead", real.display()))
        .unwrap_or_default()
}

impl Anchor {
    /// The workspace root: the user's configuration, so symlinks in the
    /// configured path are followed once (`realpath`), then the real path is
    /// opened refusing symlinks and pinned. Created first when missing.
    pub fn root(name: &str, configured: &Path) -> Result<Anchor, AnchorError> {
        std::fs::create_dir_all(configured).map_err(AnchorError::Create)?;
        let real = std::fs::canonicalize(configured).map_err(AnchorError::Create)?;
        let fd = walk::open_absolute_dir(walk::kernel_strategy(), &real).map_err(|errno| {
            AnchorError::Rule(Refusal::Root {
                root: configured.to_path_buf(),
                errno,
            })
        })?;
        Anchor::from_fd(fd, real, configured, name)
    }

    /// An absolute named path: opened with no symlink anywhere on its route.
    /// A system symlink (`/var/run`) is refused with the real path to name
    /// instead; a missing path or a file is refused too (it is never created).
    pub fn absolute(name: &str, path: &Path) -> Result<Anchor, AnchorError> {
        let path = crate::paths::clean(path);
        let root = rfs::openat(rfs::CWD, "/", walk::with_always(DIR_HANDLE), Mode::empty())
            .map_err(|errno| AnchorError::Rule(Refusal::Slash(errno)))?;
        let relative = path.strip_prefix("/").unwrap_or(&path).to_path_buf();
        let walked = walk_route(root.as_fd(), &relative, false).map_err(|stop| match stop {
            Stop::Link(at) => {
                let link = Path::new("/").join(&at);
                AnchorError::Rule(Refusal::AbsoluteThroughSymlink {
                    name: name.to_owned(),
                    path: path.clone(),
                    target: link_target(&link),
                    real: std::fs::canonicalize(&path).ok(),
                    link,
                })
            }
            Stop::Missing(_) | Stop::NotDirectory(_) => {
                AnchorError::Rule(Refusal::AbsoluteMissing(name.to_owned()))
            }
            Stop::Os(errno) => AnchorError::Rule(Refusal::AbsoluteUnopenable {
                name: name.to_owned(),
                errno,
            }),
            Stop::Create(error) => AnchorError::Create(error),
        })?;
        let fd = match walked {
            Some(fd) => fd,
            None => root,
        };
        Anchor::from_fd(fd, path.clone(), &path, name)
    }

    /// `relative` beneath this anchor, reached from its handle one component
    /// at a time and never through a symlink; with `create`, missing
    /// directories are made from their parent's handle (`mkdirat`) and
    /// opened the same way. `configured` is the path grants will name it by;
    /// `name` appears in messages (the logical path is `relative`).
    pub fn beneath(
        &self,
        name: &str,
        relative: &Path,
        configured: &Path,
        create: bool,
    ) -> Result<Anchor, AnchorError> {
        let walked = walk_route(self.fd.as_fd(), relative, create).map_err(|stop| match stop {
            Stop::Link(at) => AnchorError::Rule(Refusal::ThroughSymlink {
                name: name.to_owned(),
                relative: relative.to_path_buf(),
                target: link_target(&self.path.join(&at)),
                at,
            }),
            Stop::Missing(at) => AnchorError::Rule(Refusal::Missing {
                name: name.to_owned(),
                relative: relative.to_path_buf(),
                at,
            }),
            Stop::NotDirectory(at) => AnchorError::Rule(Refusal::NotADirectory {
                name: name.to_owned(),
                relative: relative.to_path_buf(),
                at,
            }),
            Stop::Os(errno) => AnchorError::Rule(Refusal::Unopenable {
                name: name.to_owned(),
                relative: relative.to_path_buf(),
                errno,
            }),
            Stop::Create(error) => AnchorError::Create(error),
        })?;
        let fd = match walked {
            Some(fd) => fd,
            None => rfs::openat(
                self.fd.as_fd(),
                ".",
                walk::with_always(DIR_HANDLE),
                Mode::empty(),
            )
            .map_err(|errno| AnchorError::Rule(Refusal::Reopen(errno)))?,
        };
        Anchor::from_fd(fd, self.path.join(relative), configured, name)
    }

    /// A grant source that no workspace anchor stands for (a duck-typed
    /// workspace, a gateway directory): its real path, pinned now.
    pub fn pin(source: &Path) -> Option<Anchor> {
        let real = std::fs::canonicalize(source).ok()?;
        let fd = walk::open_absolute_dir(walk::kernel_strategy(), &real).ok()?;
        Anchor::from_fd(fd, real, source, &source.to_string_lossy()).ok()
    }

    fn from_fd(
        fd: OwnedFd,
        path: PathBuf,
        configured: &Path,
        name: &str,
    ) -> Result<Anchor, AnchorError> {
        let stat = rfs::fstat(&fd).map_err(|errno| {
            AnchorError::Rule(Refusal::Stat {
                name: name.to_owned(),
                errno,
            })
        })?;
        #[allow(clippy::unnecessary_cast)]
        Ok(Anchor {
            fd: Arc::new(fd),
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            path,
            configured: crate::paths::clean(configured),
            name: name.to_owned(),
        })
    }

    /// The handle (an `O_PATH` directory descriptor).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The shared handle, to keep it open across a spawn.
    pub fn shared_fd(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.fd)
    }

    /// The symlink-free absolute path the handle was reached by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path grants built from the workspace layout name it by.
    pub fn configured(&self) -> &Path {
        &self.configured
    }

    /// `root` or the workspace path's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// (device, inode) when the handle was taken.
    pub fn id(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    /// The identity record of 3.6 (realpath = the symlink-free route).
    pub fn identity(&self) -> Identity {
        Identity {
            realpath: self.path.clone(),
            dev: self.dev,
            ino: self.ino,
        }
    }

    /// True iff the route still leads, with no symlink, to this very
    /// directory: false once it was renamed, replaced, swapped or removed.
    pub fn is_current(&self) -> bool {
        let Ok(fd) = walk::open_absolute_dir(walk::kernel_strategy(), &self.path) else {
            return false;
        };
        #[allow(clippy::unnecessary_cast)]
        rfs::fstat(&fd).is_ok_and(|stat| (stat.st_dev as u64, stat.st_ino as u64) == self.id())
    }

    /// True iff `path` names something that is or lies beneath this anchor's route.
    pub fn contains(&self, path: &Path) -> bool {
        crate::paths::is_within(path, &self.path)
    }

    /// `path` (at or beneath [`Anchor::path`]) as an anchor derived by walking
    /// from this handle, never by the path string; None when `path` is not
    /// beneath this anchor. Nothing is created.
    pub fn derive(&self, path: &Path) -> Option<Result<Anchor, AnchorError>> {
        let path = crate::paths::clean(path);
        let relative = crate::paths::remainder(&path, &self.path)?.to_path_buf();
        if relative.as_os_str().is_empty() {
            return Some(Ok(self.clone()));
        }
        Some(self.beneath(&self.name, &relative, &path, false))
    }
}

/// Where and why a walk stopped.
enum Stop {
    Link(PathBuf),
    Missing(PathBuf),
    NotDirectory(PathBuf),
    Os(Errno),
    Create(std::io::Error),
}

/// Opens `relative` beneath `dir` one plain component at a time (no `.`,
/// `..` or symlink is ever followed), creating missing ones with `create`.
/// None for an empty route (the caller reopens `dir`).
fn walk_route(dir: BorrowedFd<'_>, relative: &Path, create: bool) -> Result<Option<OwnedFd>, Stop> {
    if relative
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(Stop::Os(Errno::INVAL));
    }
    let parts = walk::components(relative);
    let mut current: Option<OwnedFd> = None;
    let mut route = PathBuf::new();
    for part in parts {
        route.push(part);
        let parent = current.as_ref().map_or(dir, |fd| fd.as_fd());
        let opened = match walk::open_component(parent, part, DIR_HANDLE, true) {
            Err(error) if create && error.failure == Failure::Missing => {
                match rfs::mkdirat(parent, part, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(Stop::Create(std::io::Error::from(errno))),
                }
                walk::open_component(parent, part, DIR_HANDLE, true)
            }
            other => other,
        };
        let fd = opened.map_err(|error| match error.failure {
            Failure::Symlink => Stop::Link(route.clone()),
            Failure::Missing => Stop::Missing(route.clone()),
            Failure::NotDirectory => Stop::NotDirectory(route.clone()),
            Failure::Os(errno) => Stop::Os(errno),
        })?;
        // O_PATH|O_NOFOLLOW may hand back the link itself: never accept one.
        let stat = rfs::fstat(&fd).map_err(Stop::Os)?;
        match rfs::FileType::from_raw_mode(stat.st_mode) {
            rfs::FileType::Directory => {}
            rfs::FileType::Symlink => return Err(Stop::Link(route)),
            _ => return Err(Stop::NotDirectory(route)),
        }
        current = Some(fd);
    }
    Ok(current)
}

/// ` -> TARGET` for a symlink at `link`, for messages.
fn link_target(link: &Path) -> String {
    std::fs::read_link(link)
        .map(|target| {
            format!(
                " -> {}",
                String::from_utf8_lossy(target.as_os_str().as_bytes())
            )
        })
        .unwrap_or_default()
}

/// The anchors of one open workspace (root first, then each named path),
/// and the grants derived from them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Anchors(Vec<Anchor>);

impl Anchors {
    pub fn new(anchors: Vec<Anchor>) -> Anchors {
        Anchors(anchors)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Anchor> {
        self.0.iter()
    }

    /// The anchor a grant with this `source` reaches its directory through:
    /// the one configured or opened at exactly `source`, else one derived by
    /// a walk from the deepest anchor whose route contains `source` (a
    /// narrowed scope, an execution overlay). None when no anchor covers it.
    pub fn for_source(&self, source: &Path) -> Option<Result<Anchor, AnchorError>> {
        let source = crate::paths::clean(source);
        if let Some(exact) = self
            .0
            .iter()
            .find(|a| a.configured == source || a.path == source)
        {
            return Some(Ok(exact.clone()));
        }
        self.0
            .iter()
            .filter(|a| a.contains(&source))
            .max_by_key(|a| a.path.as_os_str().len())
            .and_then(|a| a.derive(&source))
    }

    /// Appends `anchor` unless an equal one is already held.
    pub fn push(&mut self, anchor: Anchor) {
        if !self.0.contains(&anchor) {
            self.0.push(anchor);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The rule that refused, or a panic for a failure to create.
    fn refusal(error: AnchorError) -> Refusal {
        match error {
            AnchorError::Rule(refusal) => refusal,
            AnchorError::Create(error) => panic!("not a refusal: {error}"),
        }
    }

    fn root() -> (tempfile::TempDir, Anchor) {
        let dir = tempfile::tempdir().unwrap();
        let anchor = Anchor::root("root", dir.path()).unwrap();
        (dir, anchor)
    }

    #[test]
    fn a_named_path_is_created_one_component_at_a_time_and_pinned() {
        let (dir, root) = root();
        let out = root
            .beneath(
                "out",
                Path::new("build/out"),
                &dir.path().join("build/out"),
                true,
            )
            .unwrap();
        assert!(dir.path().join("build/out").is_dir());
        assert!(out.is_current());
        assert_eq!(out.path(), root.path().join("build/out"));
    }

    #[test]
    fn a_named_path_through_a_symlink_is_refused_naming_the_link() {
        let (dir, root) = root();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("build")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("build/out")).unwrap();
        let err = refusal(
            root.beneath("out", Path::new("build/out/x"), Path::new("/x"), true)
                .unwrap_err(),
        );
        assert_eq!(err.kind(), Kind::Policy, "{err:?}");
        assert!(
            matches!(&err, Refusal::ThroughSymlink { name, .. } if name == "out"),
            "{err:?}"
        );
        assert!(err.to_string().contains("symlink build/out"), "{err}");
        assert!(
            !outside.path().join("x").exists(),
            "nothing created outside"
        );
    }

    #[test]
    fn a_renamed_or_replaced_anchor_is_no_longer_current() {
        let (dir, root) = root();
        let build = root
            .beneath("b", Path::new("build"), &dir.path().join("build"), true)
            .unwrap();
        std::fs::rename(dir.path().join("build"), dir.path().join("build.old")).unwrap();
        assert!(!build.is_current(), "renamed");
        std::fs::create_dir(dir.path().join("build")).unwrap();
        assert!(!build.is_current(), "replaced by another directory");
        std::fs::remove_dir(dir.path().join("build")).unwrap();
        std::os::unix::fs::symlink("build.old", dir.path().join("build")).unwrap();
        assert!(!build.is_current(), "a symlink to the same directory");
    }

    #[test]
    fn an_absolute_path_through_a_symlink_is_refused_with_its_real_path() {
        let real = tempfile::tempdir().unwrap();
        let links = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(real.path(), links.path().join("run")).unwrap();
        let err = refusal(Anchor::absolute("run", &links.path().join("run")).unwrap_err());
        assert_eq!(err.kind(), Kind::Policy, "{err:?}");
        let real = std::fs::canonicalize(real.path()).unwrap();
        assert!(
            err.to_string().contains(&real.display().to_string()),
            "{err}"
        );
        assert!(Anchor::absolute("real", &real).unwrap().is_current());
    }

    #[test]
    fn a_grant_beneath_an_anchor_is_derived_by_walking_from_its_handle() {
        let (dir, root) = root();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/lib")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        let anchors = Anchors::new(vec![root.clone()]);
        let lib = anchors
            .for_source(&root.path().join("src/lib"))
            .unwrap()
            .unwrap();
        assert_eq!(lib.id(), {
            let m = std::fs::metadata(dir.path().join("src/lib")).unwrap();
            (
                std::os::unix::fs::MetadataExt::dev(&m),
                std::os::unix::fs::MetadataExt::ino(&m),
            )
        });
        assert!(anchors
            .for_source(&root.path().join("escape"))
            .unwrap()
            .is_err());
        assert!(anchors.for_source(outside.path()).is_none());
    }
}
