//! The workspace path model (SPEC §3): lexical resolution of logical paths,
//! the inverse mapping, environment variable names (with the W17 checks) and
//! directory identities used to detect aliasing and swaps.
//!
//! Everything here is lexical except [`Layout::capture_identities`] and
//! [`Layout::validate`], which stat the configured directories. Expansion with
//! Ruby semantics (`File.expand_path`, `~`) happens in the binding, which hands
//! this module absolute, expanded paths.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::error::{argument, tool, Error, Result};
use crate::grants::Identity;
use crate::paths;

/// The scheme of a named-path reference: `workspace://NAME/REL`.
pub const SCHEME: &str = "workspace://";
/// The variable that always carries the workspace root.
pub const ROOT_VARIABLE: &str = "LITTLE_GHOST_WORKSPACE_ROOT";
/// The name the root has in identity records and messages.
pub const ROOT_NAME: &str = "root";

/// `LITTLE_GHOST_WORKSPACE_` + the upper-cased name with every character
/// outside `[A-Z0-9]` replaced by `_` (3.5).
pub fn variable_name(name: &str) -> String {
    let suffix: String = name
        .to_uppercase()
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("LITTLE_GHOST_WORKSPACE_{suffix}")
}

/// W17: a path named `root`, or two names that map to the same variable
/// (the root's included), would silently shadow each other.
pub fn check_path_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for name in names {
        if name == ROOT_NAME {
            return Err(argument(
                "workspace path :root is reserved for the workspace root; give the path another name",
            ));
        }
        let variable = variable_name(name);
        if variable == ROOT_VARIABLE {
            return Err(argument(format!(
                "workspace path :{name} maps to {ROOT_VARIABLE}, which is reserved for the workspace root; give it another name"
            )));
        }
        if let Some((_, other)) = seen.iter().find(|(v, _)| *v == variable) {
            return Err(argument(format!(
                "workspace paths :{other} and :{name} both map to {variable}; rename one of them"
            )));
        }
        seen.push((variable, name));
    }
    Ok(())
}

/// W17: rejects an environment entry the kernel would misread (an empty
/// name, `=` or NUL in the name, NUL in the value) before anything is spawned.
pub fn check_environment_entry(name: &OsStr, value: &OsStr) -> Result<()> {
    let name_bytes = name.as_bytes();
    if name_bytes.is_empty() {
        return Err(argument("environment variable names must not be empty"));
    }
    if name_bytes.contains(&b'=') || name_bytes.contains(&0) {
        return Err(argument(format!(
            "environment variable name {:?} must not contain '=' or a NUL byte",
            name.to_string_lossy()
        )));
    }
    if value.as_bytes().contains(&0) {
        return Err(argument(format!(
            "environment variable {} must not contain a NUL byte",
            name.to_string_lossy()
        )));
    }
    Ok(())
}

/// 3.1: a relative named path, already expanded against `root`, must be
/// `root` or lie beneath it.
pub fn check_relative_path(name: &str, root: &Path, expanded: &Path) -> Result<()> {
    if paths::is_within(&paths::clean(expanded), &paths::clean(root)) {
        Ok(())
    } else {
        Err(argument(format!(
            "relative workspace path :{name} must remain beneath the workspace root"
        )))
    }
}

/// A workspace's configured directories: absolute, expanded paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub root: PathBuf,
    /// Named paths in declaration order.
    pub paths: Vec<(String, PathBuf)>,
}

impl Layout {
    /// The directory of a named path.
    pub fn path(&self, name: &str) -> Result<&Path> {
        self.paths
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_path())
            .ok_or_else(|| {
                Error::Key(format!(
                    "key not found: :{name} (no workspace path of that name)"
                ))
            })
    }

    /// Maps a logical path to a physical one, lexically (3.3).
    pub fn resolve(&self, reference: &OsStr) -> Result<PathBuf> {
        let bytes = reference.as_bytes();
        if bytes.contains(&0) {
            return Err(argument("Path contains a null byte"));
        }
        if bytes.starts_with(b"/") {
            return Err(argument(
                "workspace paths must be relative or use workspace://NAME/...",
            ));
        }
        let (base, relative) = match bytes.strip_prefix(SCHEME.as_bytes()) {
            Some(rest) => {
                let (name, relative) = match rest.iter().position(|b| *b == b'/') {
                    Some(slash) => (&rest[..slash], Some(&rest[slash + 1..])),
                    None => (rest, None),
                };
                if name.is_empty() {
                    return Err(argument(
                        "workspace path must name a configured path: workspace://NAME/...",
                    ));
                }
                let base = self.path(&String::from_utf8_lossy(name))?;
                match relative {
                    None => return Ok(paths::clean(base)),
                    Some(relative) => (base, relative),
                }
            }
            None => (self.root.as_path(), bytes),
        };
        beneath(base, relative)
    }

    /// `Workspace#resolve` (3.3): while the workspace is open (`recorded` are
    /// the identities `open` pinned), root and every path must still be what
    /// was pinned (3.7); then [`Layout::resolve`].
    pub fn resolve_checked(
        &self,
        recorded: Option<&[(String, Identity)]>,
        reference: &OsStr,
    ) -> Result<PathBuf> {
        if let Some(recorded) = recorded {
            self.validate(recorded)?;
        }
        self.resolve(reference)
    }

    /// The logical path of a physical one (3.4): the longest named path that
    /// contains it, else root-relative, else an error.
    pub fn reference(&self, physical: &Path) -> Result<OsString> {
        let physical = paths::clean(physical);
        let best = self
            .paths
            .iter()
            .filter(|(_, dir)| paths::is_within(&physical, dir))
            .max_by_key(|(_, dir)| dir.as_os_str().len());
        if let Some((name, dir)) = best {
            let mut out = format!("{SCHEME}{name}").into_bytes();
            let rest = paths::remainder(&physical, dir).unwrap_or(Path::new(""));
            if !rest.as_os_str().is_empty() {
                out.push(b'/');
                out.extend_from_slice(rest.as_os_str().as_bytes());
            }
            return Ok(OsString::from_vec(out));
        }
        match paths::remainder(&physical, &self.root) {
            Some(rest) if rest.as_os_str().is_empty() => Ok(OsString::from(".")),
            Some(rest) => Ok(rest.as_os_str().to_owned()),
            None => Err(argument("path is outside the workspace")),
        }
    }

    /// `LITTLE_GHOST_WORKSPACE_ROOT` then one variable per named path; a later
    /// entry with the same name replaces an earlier one (3.5).
    pub fn environment(&self) -> Vec<(String, PathBuf)> {
        let mut out: Vec<(String, PathBuf)> = vec![(ROOT_VARIABLE.to_owned(), self.root.clone())];
        for (name, dir) in &self.paths {
            let variable = variable_name(name);
            match out.iter_mut().find(|(v, _)| *v == variable) {
                Some(entry) => entry.1 = dir.clone(),
                None => out.push((variable, dir.clone())),
            }
        }
        out
    }

    /// Root first, then every named path: (name, directory).
    fn entries(&self) -> impl Iterator<Item = (&str, &Path)> {
        std::iter::once((ROOT_NAME, self.root.as_path()))
            .chain(self.paths.iter().map(|(n, p)| (n.as_str(), p.as_path())))
    }

    /// Records where root and every path really are, and refuses two entries
    /// that are the same directory (3.6 steps 5 and 6).
    pub fn capture_identities(&self) -> Result<Vec<(String, Identity)>> {
        let mut out: Vec<(String, Identity)> = Vec::new();
        for (name, dir) in self.entries() {
            let identity = Identity::capture(dir).ok_or_else(|| {
                argument(format!(
                    "workspace path :{name} is not an accessible directory"
                ))
            })?;
            if let Some((other, _)) = out
                .iter()
                .find(|(_, seen)| seen.dev == identity.dev && seen.ino == identity.ino)
            {
                return Err(argument(format!(
                    "workspace paths must not alias the same directory: {other}, {name}"
                )));
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
                return Err(tool(format!(
                    "workspace path changed after opening: {name}"
                )));
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

/// `relative` beneath `base`, lexically: not empty, no `..`, no `~`, cleaned.
fn beneath(base: &Path, relative: &[u8]) -> Result<PathBuf> {
    if relative.is_empty() {
        return Err(argument("workspace path must not be empty"));
    }
    if relative.split(|b| *b == b'/').any(|part| part == b"..") {
        return Err(argument("workspace path traversal is not allowed"));
    }
    // File.expand_path would send `~` to a home directory: never beneath base.
    if relative.starts_with(b"~") {
        return Err(argument("workspace path escapes its root"));
    }
    // The usual reference (`notes/a.md` beneath an expanded root) is already
    // clean: joining bytes gives what cleaning would, without splitting both
    // paths into components on every file operation.
    if is_clean_absolute(base.as_os_str().as_bytes()) && is_clean_relative(relative) {
        let mut joined = base.as_os_str().as_bytes().to_vec();
        if joined != b"/" {
            joined.push(b'/');
        }
        joined.extend_from_slice(relative);
        return Ok(PathBuf::from(OsString::from_vec(joined)));
    }
    let base = paths::clean(base);
    let joined = paths::clean(&base.join(OsStr::from_bytes(relative)));
    if !paths::is_within(&joined, &base) {
        return Err(argument("workspace path escapes its root"));
    }
    Ok(joined)
}

/// `/`, or an absolute path whose components are all plain names (no empty,
/// `.` or `..` component, no trailing slash): what `paths::clean` keeps as is.
fn is_clean_absolute(bytes: &[u8]) -> bool {
    match bytes {
        b"/" => true,
        [b'/', rest @ ..] => is_clean_relative(rest),
        _ => false,
    }
}

/// A non-empty relative path of plain names only.
fn is_clean_relative(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes
            .split(|b| *b == b'/')
            .all(|part| !part.is_empty() && part != b"." && part != b"..")
}

/// Issue 12: every grant of a policy (`files:` and `runtime_paths:`) names
/// `root` or one of the workspace's paths; checked when a sandbox is built so
/// a typo is a PolicyError that lists the names, not a KeyError at `open`.
pub fn check_grant_names<'a>(
    grants: impl IntoIterator<Item = (&'a str, &'a str)>,
    path_names: &[&str],
) -> Result<()> {
    for (category, name) in grants {
        if name != ROOT_NAME && !path_names.contains(&name) {
            let known: Vec<String> = std::iter::once(ROOT_NAME)
                .chain(path_names.iter().copied())
                .map(|n| format!(":{n}"))
                .collect();
            return Err(crate::error::policy(format!(
                "sandbox policy {category} grants :{name}, which is not a workspace path \
                 (workspace paths: {})",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            root: PathBuf::from("/w"),
            paths: vec![
                ("source".into(), PathBuf::from("/w/src")),
                ("deep".into(), PathBuf::from("/w/src/deep")),
                ("home".into(), PathBuf::from("/home/agent")),
            ],
        }
    }

    fn resolve(reference: &str) -> Result<PathBuf> {
        layout().resolve(OsStr::new(reference))
    }

    fn message(result: Result<PathBuf>) -> String {
        result.unwrap_err().message().to_owned()
    }

    #[test]
    fn workspace_resolve_relative_and_named() {
        assert_eq!(
            resolve("notes/a.md").unwrap(),
            PathBuf::from("/w/notes/a.md")
        );
        assert_eq!(resolve(".").unwrap(), PathBuf::from("/w"));
        assert_eq!(resolve("a//b/./c").unwrap(), PathBuf::from("/w/a/b/c"));
        assert_eq!(
            resolve("workspace://home").unwrap(),
            PathBuf::from("/home/agent")
        );
        assert_eq!(
            resolve("workspace://home/.x/y").unwrap(),
            PathBuf::from("/home/agent/.x/y")
        );
    }

    #[test]
    fn workspace_resolve_rejects_bad_references() {
        assert!(message(resolve("/etc/passwd")).contains("must be relative or use workspace://"));
        assert!(message(resolve("")).contains("must not be empty"));
        assert!(message(resolve("workspace://home/")).contains("must not be empty"));
        assert!(message(resolve("workspace:///x")).contains("must name a configured path"));
        assert!(message(resolve("a/../../etc")).contains("traversal is not allowed"));
        assert!(message(resolve("..")).contains("traversal is not allowed"));
        assert!(message(resolve("workspace://home/../w")).contains("traversal is not allowed"));
        assert!(message(resolve("~/x")).contains("escapes its root"));
        assert!(message(resolve("a\0b")).contains("null byte"));
        assert!(matches!(resolve("workspace://nope/x"), Err(Error::Key(_))));
        assert!(matches!(resolve("workspace://root"), Err(Error::Key(_))));
        assert!(matches!(resolve(".."), Err(Error::Argument(_))));
    }

    #[test]
    fn workspace_resolve_allows_dots_inside_names() {
        assert_eq!(resolve("..a/b..").unwrap(), PathBuf::from("/w/..a/b.."));
    }

    #[test]
    fn workspace_reference_prefers_the_longest_named_path() {
        let l = layout();
        assert_eq!(
            l.reference(Path::new("/w/src/deep/x")).unwrap(),
            "workspace://deep/x"
        );
        assert_eq!(
            l.reference(Path::new("/w/src/deep")).unwrap(),
            "workspace://deep"
        );
        assert_eq!(
            l.reference(Path::new("/w/src/a")).unwrap(),
            "workspace://source/a"
        );
        assert_eq!(
            l.reference(Path::new("/w/notes/a.md")).unwrap(),
            "notes/a.md"
        );
        assert_eq!(l.reference(Path::new("/w")).unwrap(), ".");
        assert_eq!(l.reference(Path::new("/w/srcx")).unwrap(), "srcx");
        let err = l.reference(Path::new("/etc")).unwrap_err();
        assert!(err.message().contains("outside the workspace"));
        assert!(matches!(err, Error::Argument(_)));
    }

    #[test]
    fn workspace_reference_inverts_resolve() {
        let l = layout();
        for reference in ["a/b", "workspace://deep/q", "workspace://home", "."] {
            let physical = l.resolve(OsStr::new(reference)).unwrap();
            assert_eq!(l.reference(&physical).unwrap(), reference);
        }
    }

    #[test]
    fn workspace_variable_names() {
        assert_eq!(variable_name("source"), "LITTLE_GHOST_WORKSPACE_SOURCE");
        assert_eq!(
            variable_name("foo-bar.2"),
            "LITTLE_GHOST_WORKSPACE_FOO_BAR_2"
        );
        assert_eq!(variable_name("é"), "LITTLE_GHOST_WORKSPACE__");
    }

    #[test]
    fn workspace_environment_lists_root_then_paths() {
        let env = layout().environment();
        assert_eq!(env[0], (ROOT_VARIABLE.to_owned(), PathBuf::from("/w")));
        assert_eq!(
            env[3],
            (
                "LITTLE_GHOST_WORKSPACE_HOME".to_owned(),
                PathBuf::from("/home/agent")
            )
        );
        assert_eq!(env.len(), 4);
    }

    #[test]
    fn workspace_w17_names_are_checked() {
        assert!(check_path_names(["source", "home"]).is_ok());
        let err = check_path_names(["root"]).unwrap_err();
        assert!(err.message().contains(":root is reserved"));
        let err = check_path_names(["ROOT"]).unwrap_err();
        assert!(err.message().contains("reserved"));
        let err = check_path_names(["foo-bar", "foo_bar"]).unwrap_err();
        assert!(err.message().contains(":foo-bar and :foo_bar"));
        assert!(matches!(err, Error::Argument(_)));
    }

    #[test]
    fn workspace_environment_entries_are_checked() {
        let ok = check_environment_entry(OsStr::new("A"), OsStr::new("b=c"));
        assert!(ok.is_ok());
        for bad in ["", "A=B", "A\0"] {
            assert!(
                check_environment_entry(OsStr::new(bad), OsStr::new("x")).is_err(),
                "{bad:?}"
            );
        }
        assert!(check_environment_entry(OsStr::new("A"), OsStr::new("x\0y")).is_err());
    }

    #[test]
    fn workspace_relative_paths_stay_beneath_root() {
        assert!(check_relative_path("c", Path::new("/w"), Path::new("/w/cache")).is_ok());
        assert!(check_relative_path("c", Path::new("/w"), Path::new("/w")).is_ok());
        let err = check_relative_path("c", Path::new("/w"), Path::new("/cache")).unwrap_err();
        assert!(err
            .message()
            .contains("relative workspace path :c must remain beneath"));
        assert!(check_relative_path("c", Path::new("/w"), Path::new("/wx")).is_err());
    }

    #[test]
    fn workspace_identities_detect_aliases_and_swaps() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::create_dir_all(root.join("b")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
        let aliased = Layout {
            root: root.clone(),
            paths: vec![
                ("a".into(), root.join("a")),
                ("l".into(), root.join("link")),
            ],
        };
        let err = aliased.capture_identities().unwrap_err();
        assert_eq!(
            err.message(),
            "workspace paths must not alias the same directory: a, l"
        );

        let clean = Layout {
            root: root.clone(),
            paths: vec![("a".into(), root.join("a")), ("b".into(), root.join("b"))],
        };
        let ids = clean.capture_identities().unwrap();
        assert_eq!(ids.len(), 3);
        clean.validate(&ids).unwrap();
        std::fs::rename(root.join("b"), root.join("b-old")).unwrap();
        std::fs::create_dir(root.join("b")).unwrap();
        let err = clean.validate(&ids).unwrap_err();
        assert_eq!(
            err,
            Error::Tool("workspace path changed after opening: b".into())
        );
        std::fs::remove_dir(root.join("b")).unwrap();
        let err = clean.validate(&ids).unwrap_err();
        assert!(err.message().contains(": b"));
    }

    #[test]
    fn workspace_validate_sees_a_directory_moved_behind_a_symlink() {
        // The path still leads to the very same directory (same dev and ino),
        // but through a symlink now, so its realpath changed (3.7).
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("parent/ws")).unwrap();
        let layout = Layout {
            root: base.join("parent/ws"),
            paths: vec![],
        };
        let ids = layout.capture_identities().unwrap();
        layout.validate(&ids).unwrap();
        std::fs::rename(base.join("parent"), base.join("moved")).unwrap();
        std::os::unix::fs::symlink(base.join("moved"), base.join("parent")).unwrap();
        let err = layout.validate(&ids).unwrap_err();
        assert_eq!(
            err,
            Error::Tool("workspace path changed after opening: root".into())
        );
    }

    #[test]
    fn workspace_validate_accepts_a_root_configured_through_a_symlink() {
        // Such a root is not its own realpath, so validation takes the full
        // realpath comparison; it passes until the target is swapped.
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        let layout = Layout {
            root: base.join("link"),
            paths: vec![],
        };
        let ids = layout.capture_identities().unwrap();
        assert_eq!(ids[0].1.realpath, base.join("real"));
        layout.validate(&ids).unwrap();
        std::fs::rename(base.join("real"), base.join("old")).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        let err = layout.validate(&ids).unwrap_err();
        assert!(err.message().ends_with(": root"));
    }

    #[test]
    fn workspace_resolve_joins_clean_references_like_cleaning_would() {
        let cases = [
            ("/", "a/b"),
            ("/w", "a"),
            ("/w", "a/b.c/d"),
            ("/w/x", "..a/b.."),
        ];
        for (root, reference) in cases {
            let layout = Layout {
                root: PathBuf::from(root),
                paths: vec![],
            };
            let expected = paths::clean(&Path::new(root).join(reference));
            assert_eq!(
                layout.resolve(OsStr::new(reference)).unwrap(),
                expected,
                "{root} {reference}"
            );
        }
        let unclean = Layout {
            root: PathBuf::from("/w//x/"),
            paths: vec![],
        };
        assert_eq!(
            unclean.resolve(OsStr::new("a//b/")).unwrap(),
            PathBuf::from("/w/x/a/b")
        );
    }

    #[test]
    fn workspace_root_alias_names_root() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout {
            root: dir.path().to_path_buf(),
            paths: vec![("here".into(), dir.path().to_path_buf())],
        };
        let err = layout.capture_identities().unwrap_err();
        assert!(err.message().ends_with(": root, here"));
    }
}

#[cfg(test)]
mod grant_name_tests {
    use super::*;

    #[test]
    fn a_grant_must_name_root_or_a_workspace_path() {
        check_grant_names([("files", "root"), ("runtime_paths", "home")], &["home"]).unwrap();
        let err = check_grant_names([("files", "docs")], &["source", "home"]).unwrap_err();
        assert!(matches!(err, Error::Policy(_)));
        assert_eq!(
            err.message(),
            "sandbox policy files grants :docs, which is not a workspace path \
             (workspace paths: :root, :source, :home)"
        );
    }
}
