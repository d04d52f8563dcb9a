//! B.7 and W17: the working directory and environment a launch may use.

use std::path::{Path, PathBuf};

use super::CWD_OUTSIDE_SCOPE;
use crate::error::{argument, tool, Error, Result};
use crate::grants::Grant;
use crate::paths;

/// B.7: the working directory must be reachable through this launch: the
/// deepest grant or mask covering it must be a grant, or it must be a
/// workspace directory on the way to a grant (the workspace root when only
/// `src` is granted: bwrap makes it, holding only the granted paths), or else
/// it must lie in a tmpfs that holds no workspace path (so a workspace under
/// `/tmp` that a scope dropped is never a valid working directory). A
/// refusal is a ToolError naming the directory: a caller's `cwd:` may come
/// from a model.
pub fn validate_cwd(
    cwd: &Path,
    grants: &[Grant],
    masks: &[PathBuf],
    tmpfs: &[PathBuf],
    workspace_paths: &[PathBuf],
) -> Result<PathBuf> {
    let root = workspace_paths.first().map(PathBuf::as_path);
    let outside = |cwd: &Path| -> Error {
        tool(format!(
            "{CWD_OUTSIDE_SCOPE}: {}",
            paths::shown_cwd(cwd, root)
        ))
    };
    if !cwd.is_absolute() {
        return Err(outside(cwd));
    }
    let cwd = paths::clean(cwd);
    if on_the_way_to_a_grant(&cwd, grants, workspace_paths) {
        return Ok(cwd);
    }
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
        (_, Some(_)) => return Err(outside(&cwd)),
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
        Err(outside(&cwd))
    }
}

/// A workspace directory (the root or a named path, or beneath one) that a
/// grant lies beneath: the child sees it, holding only what is granted.
pub fn on_the_way_to_a_grant(cwd: &Path, grants: &[Grant], workspace_paths: &[PathBuf]) -> bool {
    workspace_paths
        .iter()
        .any(|w| cwd.starts_with(paths::clean(w)))
        && grants.iter().any(|g| g.target.starts_with(cwd))
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
