//! Lexical path helpers. Nothing here touches the filesystem.

use std::path::{Component, Path, PathBuf};

/// How a working directory is named in a refusal: beneath the
/// workspace `root`, as the logical path relative to it (`.` for the root),
/// so a model reads back what it can pass again and no host layout leaks;
/// elsewhere (a path inside the sandbox the caller named), as it is.
pub fn shown_cwd(cwd: &Path, root: Option<&Path>) -> String {
    if !cwd.is_absolute() {
        return cwd.display().to_string();
    }
    let cwd = clean(cwd);
    match root
        .map(clean)
        .and_then(|root| cwd.strip_prefix(&root).ok().map(Path::to_path_buf))
    {
        Some(relative) if relative.as_os_str().is_empty() => ".".into(),
        Some(relative) => relative.display().to_string(),
        None => cwd.display().to_string(),
    }
}

/// Cleans an absolute path lexically: drops `.` components and doubled
/// slashes and applies `..` against the preceding component (never above `/`),
/// as Ruby's `File.expand_path` does for an absolute input.
pub fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// True iff `path` is `base` or lies beneath it, comparing whole components.
pub fn is_within(path: &Path, base: &Path) -> bool {
    path.starts_with(base)
}

/// True iff any component of `path` is `..`.
pub fn has_parent_component(path: &Path) -> bool {
    path.components().any(|c| c == Component::ParentDir)
}

/// The part of `path` below `base`, or `None` when `path` is not within `base`.
pub fn remainder<'a>(path: &'a Path, base: &Path) -> Option<&'a Path> {
    path.strip_prefix(base).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_normalises_like_expand_path() {
        assert_eq!(clean(Path::new("/a//b/./c/")), PathBuf::from("/a/b/c"));
        assert_eq!(clean(Path::new("/a/b/../c")), PathBuf::from("/a/c"));
        assert_eq!(clean(Path::new("/../..")), PathBuf::from("/"));
    }

    #[test]
    fn within_compares_components_not_prefixes() {
        assert!(is_within(Path::new("/w/src/a"), Path::new("/w/src")));
        assert!(is_within(Path::new("/w/src"), Path::new("/w/src")));
        assert!(!is_within(Path::new("/w/src2"), Path::new("/w/src")));
    }

    #[test]
    fn a_working_directory_is_named_by_its_logical_path_beneath_the_root() {
        let root = Some(Path::new("/srv/ws"));
        assert_eq!(shown_cwd(Path::new("/srv/ws/a/b"), root), "a/b");
        assert_eq!(shown_cwd(Path::new("/srv/ws"), root), ".");
        assert_eq!(shown_cwd(Path::new("/srv/wsx"), root), "/srv/wsx");
        assert_eq!(shown_cwd(Path::new("/etc"), None), "/etc");
    }
}
