//! What every backend's launch decides the same way, whatever confines it:
//! which platform a backend was told it runs on, whether the launch may
//! create subprocesses, and the workspace's variables as an environment
//! layer.

use std::path::{Path, PathBuf};

use crate::error::{argument, capability, Result};
use crate::process::validate_environment;

/// The operating system a backend was told it runs on (`platform:`, by
/// default the host's `RUBY_PLATFORM`), as the backends tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    MacOs,
    Linux,
    Other,
}

impl Platform {
    /// `darwin` anywhere in the name is macOS, `linux` is Linux.
    pub fn of(name: &str) -> Platform {
        if name.contains("darwin") {
            Platform::MacOs
        } else if name.contains("linux") {
            Platform::Linux
        } else {
            Platform::Other
        }
    }
}

/// Whether a launch may create subprocesses: as `requested`, or as the
/// scope allows when nothing was requested (no scope allows them); asking
/// for them where the scope forbids them is a CapabilityError.
pub fn subprocesses(scope_spawns: Option<bool>, requested: Option<bool>) -> Result<bool> {
    let spawns = scope_spawns.unwrap_or(true);
    match requested {
        None => Ok(spawns),
        Some(true) if !spawns => Err(capability(
            "sandbox scope does not allow subprocess creation",
        )),
        Some(allow) => Ok(allow),
    }
}

/// The workspace's variables (3.5) as the first environment layer of a
/// launch: each directory as text, which must be UTF-8 as any environment
/// value must.
pub fn workspace_layer(variables: Vec<(String, PathBuf)>) -> Result<Vec<(String, String)>> {
    let mut layer = Vec::with_capacity(variables.len());
    for (name, directory) in variables {
        let value = directory
            .into_os_string()
            .into_string()
            .map_err(|_| argument("environment values must be valid UTF-8"))?;
        layer.push((name, value));
    }
    validate_environment(&layer)?;
    Ok(layer)
}

/// A host path a launch passes as text (an argv entry, `TMPDIR`):
/// ArgumentError naming `what` when it is not UTF-8.
pub fn path_text(path: &Path, what: &str) -> Result<String> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| argument(format!("{what} must be valid UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn platforms_are_told_apart_by_name() {
        assert_eq!(Platform::of("arm64-darwin23"), Platform::MacOs);
        assert_eq!(Platform::of("x86_64-linux-gnu"), Platform::Linux);
        assert_eq!(Platform::of("x64-mingw-ucrt"), Platform::Other);
    }

    #[test]
    fn subprocesses_follow_the_request_then_the_scope() {
        assert_eq!(subprocesses(None, None), Ok(true));
        assert_eq!(subprocesses(Some(false), None), Ok(false));
        assert_eq!(subprocesses(Some(false), Some(false)), Ok(false));
        assert_eq!(subprocesses(Some(true), Some(false)), Ok(false));
        assert_eq!(subprocesses(None, Some(true)), Ok(true));
        assert!(matches!(
            subprocesses(Some(false), Some(true)),
            Err(Error::Capability(message)) if message.contains("subprocess creation")
        ));
    }

    #[test]
    fn the_workspace_layer_is_text() {
        let layer = workspace_layer(vec![
            ("LITTLE_GHOST_WORKSPACE_ROOT".into(), "/w".into()),
            ("LITTLE_GHOST_WORKSPACE_SOURCE".into(), "/w/src".into()),
        ])
        .unwrap();
        assert_eq!(
            layer[1],
            ("LITTLE_GHOST_WORKSPACE_SOURCE".into(), "/w/src".into())
        );
    }

    #[test]
    fn a_directory_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStringExt;
        let directory = PathBuf::from(std::ffi::OsString::from_vec(vec![b'/', 0xff]));
        assert_eq!(
            path_text(&directory, "TMPDIR"),
            Err(argument("TMPDIR must be valid UTF-8"))
        );
        let error = workspace_layer(vec![("LITTLE_GHOST_WORKSPACE_ROOT".into(), directory)]);
        assert_eq!(
            error,
            Err(argument("environment values must be valid UTF-8"))
        );
    }
}
