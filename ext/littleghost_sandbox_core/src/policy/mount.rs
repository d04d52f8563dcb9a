//! Mount (SPEC §9): the rules that turn a caller's access and target into a
//! [`Grant`](crate::grants::Grant). Narrowing is `Grant::narrow`.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::Given;
use crate::error::{policy, Result};
use crate::grants::Access;
use crate::paths;

/// `:read_only` or `:read_write`; PolicyError otherwise.
pub fn parse_access(given: &Given<'_>) -> Result<Access> {
    Ok(given
        .name()
        .and_then(Access::parse)
        .ok_or_else(|| super::Error::MountAccess {
            shown: given.shown(),
        })?)
}

/// An absolute, cleaned target path; PolicyError for a NUL byte, a relative path or a `..` component.
pub fn normalize_target(path: &Path) -> Result<PathBuf> {
    if path.as_os_str().as_bytes().contains(&0) {
        return Err(policy("mount target must not contain a NUL byte"));
    }
    if !path.is_absolute() {
        return Err(policy(format!(
            "mount target must be an absolute path, got {:?}",
            path.display().to_string()
        )));
    }
    if paths::has_parent_component(path) {
        return Err(policy(format!(
            "mount target must not contain '..', got {:?}",
            path.display().to_string()
        )));
    }
    Ok(paths::clean(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_absolute_clean_and_without_parent_components() {
        assert_eq!(
            normalize_target(Path::new("/srv//data/./x/")).unwrap(),
            PathBuf::from("/srv/data/x")
        );
        assert_eq!(
            normalize_target(Path::new("relative")).unwrap_err(),
            policy("mount target must be an absolute path, got \"relative\"")
        );
        assert!(normalize_target(Path::new("/a/../etc"))
            .unwrap_err()
            .message()
            .contains("'..'"));
        assert!(normalize_target(Path::new("/a\0b"))
            .unwrap_err()
            .message()
            .contains("NUL"));
    }

    #[test]
    fn access_names() {
        assert_eq!(
            parse_access(&Given::symbol("read_write")).unwrap(),
            Access::ReadWrite
        );
        assert_eq!(
            parse_access(&Given::symbol("execute")).unwrap_err(),
            crate::policy::Error::MountAccess {
                shown: ":execute".into()
            }
            .into()
        );
    }
}
