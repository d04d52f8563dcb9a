//! B.7 and W17: the working directory and environment a launch may use.

use std::path::{Path, PathBuf};

use super::CWD_OUTSIDE_SCOPE;
use crate::error::{argument, policy, Result};
use crate::grants::Grant;
use crate::paths;

/// B.7: the working directory must be reachable through this launch: the
/// deepest grant or mask covering it must be a grant, or else it must lie in
/// a tmpfs that holds no workspace path (so a workspace under `/tmp` that a
/// scope dropped is never a valid working directory).
pub fn validate_cwd(
    cwd: &Path,
    grants: &[Grant],
    masks: &[PathBuf],
    tmpfs: &[PathBuf],
    workspace_paths: &[PathBuf],
) -> Result<PathBuf> {
    if !cwd.is_absolute() {
        return Err(policy(CWD_OUTSIDE_SCOPE));
    }
    let cwd = paths::clean(cwd);
    let depth = |p: &Path| p.as_os_str().len();
    let grant_depth = grants
        .iter()
        .filter(|g| g.covers(&cwd))
        .map(|g| depth(&g.target))
        .max();
    let mask_depth = masks
        .iter()
        .filter(|m| cwd.starts_with(m))
        .map(|m| depth(m))
        .max();
    match (grant_depth, mask_depth) {
        (Some(g), Some(m)) if g > m => return Ok(cwd),
        (Some(_), None) => return Ok(cwd),
        (_, Some(_)) => return Err(policy(CWD_OUTSIDE_SCOPE)),
        (None, None) => {}
    }
    let in_clean_tmpfs = tmpfs.iter().any(|t| {
        cwd.starts_with(t)
            && !workspace_paths
                .iter()
                .any(|w| paths::clean(w).starts_with(t))
    });
    if in_clean_tmpfs {
        Ok(cwd)
    } else {
        Err(policy(CWD_OUTSIDE_SCOPE))
    }
}

/// W17: names and values that cannot be passed to a child are refused before
/// anything is spawned.
pub fn validate_environment(environment: &[(String, String)]) -> Result<()> {
    for (name, value) in environment {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(argument(format!(
                "environment variable name {name:?} must be non-empty and contain neither '=' nor NUL"
            )));
        }
        if value.contains('\0') {
            return Err(argument(format!(
                "environment variable {name} must not contain NUL"
            )));
        }
    }
    Ok(())
}
