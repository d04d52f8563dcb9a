//! Directory identities (3.6, 3.7): where root and every path really are
//! when the workspace opens, and whether they still are.

use std::path::Path;

use crate::fs::anchor::{Anchor, AnchorError, Anchors};
use crate::paths;

use super::{Error, Result};
use super::{Layout, ROOT_NAME};
use crate::grants::Identity;

/// Why `open` could not prepare the workspace's directories.
#[derive(Debug)]
pub enum OpenError {
    /// Creating the directory of the path named `name` (`None`: the root)
    /// failed: Ruby raises the matching `Errno`.
    Create {
        name: Option<String>,
        error: std::io::Error,
    },
    /// A rule refused (an absolute path missing, two entries aliased).
    Rule(crate::Error),
}

impl OpenError {
    /// What [`OpenError::Create`] could not create, the path's name shown by `show`.
    pub fn not_created(name: Option<&str>, show: crate::error::show::ShowName) -> String {
        match name {
            None => "could not create the workspace root".to_owned(),
            Some(name) => format!("could not create workspace path {}", show(name)),
        }
    }
}

impl Layout {
    /// Steps 3–6 of `open` (3.6): pins the root (created when
    /// missing; symlinks the user configured in its path are followed once),
    /// then reaches every `relative` path from the root's handle with no
    /// symlink on its route, creating missing directories one component at a
    /// time, and opens every absolute path refusing symlinks (it must exist).
    /// Returns the identity records and the handles, which stand for the
    /// workspace's grants until `close`.
    pub fn prepare(
        &self,
        relative: &[String],
    ) -> std::result::Result<(Vec<(String, Identity)>, Anchors), OpenError> {
        let failed = |name: Option<&str>| {
            let name = name.map(str::to_owned);
            move |error: AnchorError| match error {
                AnchorError::Create(error) => OpenError::Create { name, error },
                AnchorError::Rule(refusal) => OpenError::Rule(refusal.into()),
            }
        };
        let root = Anchor::root(ROOT_NAME, &self.root).map_err(failed(None))?;
        let mut anchors = vec![root.clone()];
        for (name, dir) in &self.paths {
            let anchor = if relative.contains(name) {
                let below = paths::remainder(&paths::clean(dir), &paths::clean(&self.root))
                    .unwrap_or(Path::new(""))
                    .to_path_buf();
                root.beneath(name, &below, dir, true)
                    .map_err(failed(Some(name)))?
            } else {
                Anchor::absolute(name, dir).map_err(failed(Some(name)))?
            };
            anchors.push(anchor);
        }
        let mut out: Vec<(String, Identity)> = Vec::new();
        for anchor in &anchors {
            let name = anchor.name();
            if let Some((other, _)) = out
                .iter()
                .find(|(_, seen)| (seen.dev, seen.ino) == anchor.id())
            {
                return Err(OpenError::Rule(
                    Error::Aliased(other.clone(), name.to_owned()).into(),
                ));
            }
            out.push((name.to_owned(), anchor.identity()));
        }
        Ok((out, Anchors::new(anchors)))
    }

    /// Records where root and every path really are, and refuses two entries
    /// that are the same directory (3.6 steps 5 and 6).
    pub fn capture_identities(&self) -> Result<Vec<(String, Identity)>> {
        let mut out: Vec<(String, Identity)> = Vec::new();
        for (name, dir) in self.entries() {
            let identity =
                Identity::capture(dir).ok_or_else(|| Error::Inaccessible(name.to_owned()))?;
            if let Some((other, _)) = out
                .iter()
                .find(|(_, seen)| seen.dev == identity.dev && seen.ino == identity.ino)
            {
                return Err(Error::Aliased(other.clone(), name.to_owned()));
            }
            out.push((name.to_owned(), identity));
        }
        Ok(out)
    }

    /// Re-checks every recorded identity (3.7).
    pub fn validate(&self, recorded: &[(String, Identity)]) -> Result<()> {
        for (name, identity) in recorded {
            let dir = if name == ROOT_NAME {
                Some(self.root.as_path())
            } else {
                self.path(name).ok()
            };
            let unchanged = dir.is_some_and(|dir| {
                still_pinned(dir, identity) || Identity::capture(dir).as_ref() == Some(identity)
            });
            if !unchanged {
                return Err(Error::Moved(name.clone()));
            }
        }
        Ok(())
    }
}

/// A cheaper proof of `Identity::capture(dir) == Some(identity)`, used on
/// every `resolve` (3.3). When `dir` is literally its recorded realpath, an
/// open that refuses symlinks in every component succeeds only if `dir` has
/// no symlink component now, so its realpath is still `dir` itself (it is
/// absolute and clean, being a realpath); `fstat` of that very handle then
/// gives (dev, ino) with no window between the two checks. One open, fstat and
/// close replace `realpath(3)`'s readlink per component plus a stat. `false`
/// means "not proven": the caller falls back to the full comparison, so the
/// answer is always exactly the full comparison's.
fn still_pinned(dir: &Path, identity: &Identity) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{self as rfs, Mode, OFlags, ResolveFlags};
        if dir != identity.realpath {
            return false;
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let Ok(handle) = rfs::openat2(rfs::CWD, dir, flags, Mode::empty(), resolve) else {
            return false; // ENOSYS on old kernels, or a symlink: not proven
        };
        #[allow(clippy::unnecessary_cast)]
        rfs::fstat(&handle).is_ok_and(|stat| {
            (stat.st_dev as u64, stat.st_ino as u64) == (identity.dev, identity.ino)
        })
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (dir, identity);
        false
    }
}
