//! Lexical path helpers. Nothing here touches the filesystem.

use std::path::{Component, Path, PathBuf};

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
}
