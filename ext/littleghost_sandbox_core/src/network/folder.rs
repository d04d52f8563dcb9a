//! The folder of this user's gateway directories, and every place the host
//! shows it, so that a launch masks it wherever it would see it
//! (docs/security.md, "The gem's own directories").
//!
//! - **Which folder** ([`base`]): `/tmp/littleghost-gateways-<uid>`
//!   ([`base_path`]), made when missing. `/tmp` is shared: another local user
//!   may have made that name first (a directory of theirs, a symlink, a
//!   file), or it may let others in. Such a folder is never used: the process
//!   makes a fresh private one beside it under an unguessable name
//!   (`littleghost-gateways-<uid>-<16 hex digits>`, `mkdirat` mode 0700) and
//!   keeps using it.
//! - **Which folders a launch hides** ([`folders`]): the fixed one and every
//!   such fallback of this user's (a private directory this user owns), since
//!   another process of the user may have fallen back to one.
//! - **Where they appear** ([`places`]): by identity, not by name. The host
//!   may show `/tmp` under a second path (a bind mount of `/tmp`, or of a
//!   file system holding it, elsewhere): from `/proc/self/mountinfo`, each
//!   mount of the folder's file system whose root holds the folder shows it
//!   at the mount point joined with the rest of the folder's path inside that
//!   file system; a candidate counts when it is the folder's own device and
//!   inode (a mount on top hides it), and a mount whose root lies inside the
//!   folder shows part of it at its mount point.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};

use crate::error::{Error, Result};
use crate::fs::own::{self, OwnDirectory};

/// Where every user's folder is made: the one directory every Linux host has
/// for it.
const TMP: &str = "/tmp";

/// The fallback folder's name this process made, kept for its next gateways
/// and launches.
static FALLBACK: Mutex<Option<String>> = Mutex::new(None);

/// `littleghost-gateways-<uid>`.
fn fixed_name() -> String {
    format!(
        "littleghost-gateways-{}",
        rustix::process::geteuid().as_raw()
    )
}

/// Where the folder of this user's gateway directories is unless someone
/// else took the name: a fixed place (not `TMPDIR`), so every launch of
/// every process of the user finds it, and short enough for a socket path
/// inside the sandbox.
pub fn base_path() -> PathBuf {
    Path::new(TMP).join(fixed_name())
}

/// The folder of this user's gateway directories: [`base_path`], made when
/// missing; when that name is taken or unsafe (not a private directory of
/// this user's), the process's own fallback folder, made once. Never
/// removed: other processes of the user share the fixed one, and a fallback
/// holds this process's gateways until it exits.
pub fn base() -> Result<OwnDirectory> {
    let fixed = fixed_name();
    let unusable = |e: io::Error| {
        Error::Dependency(format!(
            "the folder of the network gateways' sockets cannot be made in {TMP}: {e}"
        ))
    };
    let (parent, real) = own::open_parent(Path::new(TMP)).map_err(unusable)?;
    let refused = match OwnDirectory::shared(&parent, &real, &fixed) {
        Ok(folder) => return Ok(folder),
        Err(error) => error,
    };
    let mut kept = FALLBACK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(name) = kept.as_deref() {
        if let Ok(folder) = OwnDirectory::existing(&parent, &real, name) {
            return Ok(folder);
        }
    }
    let folder = OwnDirectory::create(&parent, &real, &format!("{fixed}-")).map_err(|e| {
        Error::Dependency(format!(
            "the folder of the network gateways' sockets {} cannot be used ({refused}), \
             nor a private one made beside it: {e}",
            base_path().display()
        ))
    })?;
    *kept = folder
        .path()
        .file_name()
        .map(|name| name.to_string_lossy().into_owned());
    Ok(folder)
}

/// Every folder of this user's gateway directories in `/tmp` (the fixed one
/// and every fallback), each a private directory of this user's; none when
/// `/tmp` cannot be read.
pub fn folders() -> Vec<OwnDirectory> {
    let fixed = fixed_name();
    let prefix = format!("{fixed}-");
    let Ok((parent, real)) = own::open_parent(Path::new(TMP)) else {
        return Vec::new();
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(readable) = rfs::openat(&*parent, c".", flags, Mode::empty()) else {
        return Vec::new();
    };
    let Ok(entries) = rfs::Dir::read_from(&readable) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().to_str().ok()?.to_owned();
            (name == fixed || name.starts_with(&prefix)).then_some(name)
        })
        .filter_map(|name| OwnDirectory::existing(&parent, &real, &name).ok())
        .collect()
}

/// Every host path where one of [`folders`] appears, its own path first.
pub fn places() -> Result<Vec<PathBuf>> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| {
        Error::Dependency(format!(
            "cannot read /proc/self/mountinfo to find where the gateways' folder appears: {e}"
        ))
    })?;
    let mounts = parse_mounts(&mountinfo);
    let mut found = Vec::new();
    for folder in folders() {
        for candidate in appearances(&mounts, folder.path()) {
            let shows_it = match candidate {
                Appearance::Folder(ref path) => {
                    rfs::statat(rfs::CWD, path, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|stat| {
                        #[allow(clippy::unnecessary_cast)]
                        let id = (stat.st_dev as u64, stat.st_ino as u64);
                        id == folder.id()
                    })
                }
                Appearance::Inside(_) => true,
            };
            let path = candidate.path();
            if shows_it && !found.contains(&path) {
                found.push(path);
            }
        }
    }
    Ok(found)
}

/// One mount of `/proc/self/mountinfo`: its file system (`major:minor`),
/// the directory of that file system it shows, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    device: String,
    root: PathBuf,
    point: PathBuf,
}

/// Where a mount may show the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Appearance {
    /// The folder itself would be at this path (checked by identity).
    Folder(PathBuf),
    /// A mount point showing a directory inside the folder.
    Inside(PathBuf),
}

impl Appearance {
    fn path(&self) -> PathBuf {
        match self {
            Appearance::Folder(path) | Appearance::Inside(path) => path.clone(),
        }
    }
}

fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let device = fields.nth(2)?.to_owned();
            let root = unescape(fields.next()?);
            let point = unescape(fields.next()?);
            Some(Mount {
                device,
                root,
                point,
            })
        })
        .collect()
}

/// A mountinfo path: space, tab, newline and backslash come as `\ooo`.
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|digits| bytes[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)));
        match octal {
            Some(digits) => {
                let value = digits
                    .iter()
                    .fold(0u32, |value, d| value * 8 + u32::from(d - b'0'));
                out.push(value as u8);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsStr::from_bytes(&out))
}

/// The paths where `path` (a real path of the host) may appear: the mount
/// holding it (the longest mount point above it, the last mounted of equal
/// ones) says which file system it is on and where inside it; every mount of
/// that file system whose root holds that place shows it beneath its mount
/// point, and one whose root lies inside it shows part of it.
fn appearances(mounts: &[Mount], path: &Path) -> Vec<Appearance> {
    let Some(home) = mounts
        .iter()
        .filter(|mount| path.starts_with(&mount.point))
        .max_by_key(|mount| mount.point.components().count())
    else {
        return vec![Appearance::Folder(path.to_owned())];
    };
    let rest = path.strip_prefix(&home.point).unwrap_or(Path::new(""));
    let inside = joined(&home.root, rest);
    let mut found = Vec::new();
    for mount in mounts.iter().filter(|mount| mount.device == home.device) {
        let appearance = match inside.strip_prefix(&mount.root) {
            Ok(rest) => Appearance::Folder(joined(&mount.point, rest)),
            Err(_) if mount.root.starts_with(&inside) => Appearance::Inside(mount.point.clone()),
            Err(_) => continue,
        };
        if !found.contains(&appearance) {
            found.push(appearance);
        }
    }
    found
}

/// `base` joined with `rest`, without a trailing slash for an empty `rest`.
fn joined(base: &Path, rest: &Path) -> PathBuf {
    if rest.as_os_str().is_empty() {
        base.to_owned()
    } else {
        base.join(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
23 22 0:5 / /proc rw - proc proc rw
30 22 8:1 /tmp /srv/host\\040tmp rw,relatime - ext4 /dev/sda1 rw
31 22 8:1 / /mnt/root ro,relatime - ext4 /dev/sda1 rw
32 22 8:1 /tmp/littleghost-gateways-0/littleghost-gateway-1 /run/one rw - ext4 /dev/sda1 rw
33 22 8:1 /home /home rw - ext4 /dev/sda1 rw
34 22 0:40 / /var/tmp rw - tmpfs tmpfs rw
";

    #[test]
    fn the_folder_appears_under_every_mount_of_its_file_system_that_holds_it() {
        let mounts = parse_mounts(MOUNTINFO);
        assert_eq!(mounts[2].point, Path::new("/srv/host tmp"));
        let found = appearances(&mounts, Path::new("/tmp/littleghost-gateways-0"));
        assert_eq!(
            found,
            [
                Appearance::Folder("/tmp/littleghost-gateways-0".into()),
                Appearance::Folder("/srv/host tmp/littleghost-gateways-0".into()),
                Appearance::Folder("/mnt/root/tmp/littleghost-gateways-0".into()),
                Appearance::Inside("/run/one".into()),
            ]
        );
    }

    #[test]
    fn a_folder_on_a_file_system_of_its_own_mount_is_found_through_its_root() {
        let text = format!(
            "{MOUNTINFO}40 22 0:41 / /tmp rw - tmpfs tmpfs rw\n41 22 0:41 / /srv/x rw - tmpfs tmpfs rw\n"
        );
        let found = appearances(
            &parse_mounts(&text),
            Path::new("/tmp/littleghost-gateways-0"),
        );
        assert_eq!(
            found,
            [
                Appearance::Folder("/tmp/littleghost-gateways-0".into()),
                Appearance::Folder("/srv/x/littleghost-gateways-0".into()),
            ]
        );
    }

    #[test]
    fn the_folder_itself_is_found_where_this_process_sees_it() {
        let folder = base().unwrap();
        let found = places().unwrap();
        assert!(found.contains(&folder.path().to_path_buf()), "{found:?}");
    }
}
