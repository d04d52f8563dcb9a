//! Unrestricted on the host (SPEC §15): the workspace root it was built for
//! must still be the directory it opens (15.1).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{tool, Result};

mod launcher;
pub use launcher::Launcher;

/// A directory's (device, inode).
pub type Identity = (u64, u64);

/// The identity of the workspace root, or None when it does not exist.
pub fn root_identity(root: &Path) -> Option<Identity> {
    std::fs::metadata(root)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// 15.1 at `open`: the root must exist and be the directory first seen
/// (`recorded`, if any); returns the identity to keep.
pub fn check_root(recorded: Option<Identity>, current: Option<Identity>) -> Result<Identity> {
    match (recorded, current) {
        (None, Some(current)) => Ok(current),
        (Some(recorded), Some(current)) if recorded == current => Ok(current),
        _ => Err(tool("Workspace root changed after initialization")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_recorded_once_then_must_stay() {
        assert_eq!(check_root(None, Some((1, 2))), Ok((1, 2)));
        assert_eq!(check_root(Some((1, 2)), Some((1, 2))), Ok((1, 2)));
        let changed = tool("Workspace root changed after initialization");
        assert_eq!(check_root(Some((1, 2)), Some((1, 3))), Err(changed.clone()));
        assert_eq!(check_root(Some((1, 2)), None), Err(changed.clone()));
        assert_eq!(check_root(None, None), Err(changed));
    }

    #[test]
    fn a_missing_root_has_no_identity() {
        assert_eq!(root_identity(Path::new("/nonexistent/littleghost")), None);
        let tmp = std::env::temp_dir();
        assert!(root_identity(&tmp).is_some());
    }
}
