//! Checks on argv and environment, and finding the program to execute.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{argument, tool, Result};

use super::error::SpawnError;

/// PATH used when neither the child environment nor the parent sets one
/// (glibc's `execvp` default).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// 17.2: an argv must name an executable. NUL bytes cannot reach `execve`.
pub fn validate_argv(argv: &[String]) -> Result<()> {
    match argv.first() {
        None => return Err(tool("Command must contain an executable")),
        Some(first) if first.is_empty() => return Err(tool("Command must contain an executable")),
        Some(_) => {}
    }
    if argv.iter().any(|arg| arg.contains('\0')) {
        return Err(argument("command arguments must not contain NUL bytes"));
    }
    Ok(())
}

/// W17: names must be non-empty without `=` or NUL; values without NUL.
pub fn validate_environment(environment: &[(String, String)]) -> Result<()> {
    for (name, value) in environment {
        if name.is_empty() {
            return Err(argument("environment variable name must not be empty"));
        }
        if name.contains('=') || name.contains('\0') {
            return Err(argument(format!(
                "invalid environment variable name {:?}: it must not contain '=' or NUL",
                name.replace('\0', "\\0")
            )));
        }
        if value.contains('\0') {
            return Err(argument(format!(
                "environment variable {name} must not contain NUL bytes"
            )));
        }
    }
    Ok(())
}

/// What every launch checks before anything is spawned: its argv (17.2)
/// and its environment (W17).
pub fn validate_launch(argv: &[String], environment: &[(String, String)]) -> Result<()> {
    validate_argv(argv)?;
    validate_environment(environment)
}

/// The PATH the program is searched in (17.4): the child's if it sets one,
/// else the parent's.
fn search_path(environment: &[(String, String)]) -> OsString {
    if let Some((_, value)) = environment.iter().rev().find(|(name, _)| name == "PATH") {
        return OsString::from(value);
    }
    std::env::var_os("PATH").unwrap_or_else(|| OsString::from(DEFAULT_PATH))
}

/// What a candidate file is, as `execve` would see it.
enum Candidate {
    Executable,
    NotExecutable,
    Missing,
}

fn inspect(path: &Path) -> Candidate {
    match std::fs::metadata(path) {
        Err(_) => Candidate::Missing,
        Ok(meta) if meta.is_dir() => Candidate::NotExecutable,
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Candidate::NotExecutable,
        Ok(_) => match rustix::fs::access(path, rustix::fs::Access::EXEC_OK) {
            Ok(()) => Candidate::Executable,
            Err(_) => Candidate::NotExecutable,
        },
    }
}

/// Finds the file to execute for `argv0` (17.4), like `execvp` would in the
/// child: a name with `/` is used as given (relative to `chdir`), a bare name
/// is searched in PATH. Missing gives [`SpawnError::NotFound`] (exit 127),
/// present but not executable gives [`SpawnError::NotExecutable`] (exit 126).
pub(crate) fn resolve(
    argv0: &str,
    environment: &[(String, String)],
    chdir: Option<&Path>,
) -> std::result::Result<PathBuf, SpawnError> {
    let relative_to_child = |path: PathBuf| match chdir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    };
    if argv0.contains('/') {
        let path = relative_to_child(PathBuf::from(argv0));
        return match inspect(&path) {
            Candidate::Executable => Ok(path),
            Candidate::NotExecutable => Err(SpawnError::NotExecutable),
            Candidate::Missing => Err(SpawnError::NotFound),
        };
    }
    let mut denied = false;
    for dir in std::env::split_paths(&search_path(environment)) {
        // An empty PATH entry means the current directory, as in execvp.
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = relative_to_child(dir.join(argv0));
        match inspect(&candidate) {
            Candidate::Executable => return Ok(candidate),
            Candidate::NotExecutable => denied = true,
            Candidate::Missing => {}
        }
    }
    Err(if denied {
        SpawnError::NotExecutable
    } else {
        SpawnError::NotFound
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn argv_needs_an_executable() {
        assert_eq!(
            validate_argv(&[]).unwrap_err().message(),
            "Command must contain an executable"
        );
        assert!(validate_argv(&["".into(), "x".into()]).is_err());
        assert!(matches!(
            validate_argv(&["a\0b".into()]),
            Err(crate::Error::Argument(_))
        ));
        assert!(validate_argv(&["true".into()]).is_ok());
    }

    #[test]
    fn environment_names_and_values_are_checked() {
        for bad in [
            env(&[("", "x")]),
            env(&[("A=B", "x")]),
            env(&[("A\0", "x")]),
            env(&[("A", "x\0y")]),
        ] {
            assert!(
                matches!(validate_environment(&bad), Err(crate::Error::Argument(_))),
                "{bad:?}"
            );
        }
        assert!(validate_environment(&env(&[("A", "x=y"), ("B", "")])).is_ok());
    }

    #[test]
    fn a_launch_checks_its_argv_first_then_its_environment() {
        let bad_env = env(&[("", "x")]);
        let launch = validate_launch(&[], &bad_env).unwrap_err();
        assert_eq!(launch.message(), "Command must contain an executable");
        let argv = ["true".to_string()];
        assert!(matches!(
            validate_launch(&argv, &bad_env),
            Err(crate::Error::Argument(_))
        ));
        assert!(validate_launch(&argv, &env(&[("A", "x")])).is_ok());
    }

    #[test]
    fn bare_names_use_the_child_path_first() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("only-here");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = env(&[("PATH", dir.path().to_str().unwrap())]);
        assert_eq!(resolve("only-here", &path, None).unwrap(), tool);
        assert!(matches!(
            resolve("only-here", &[], None),
            Err(SpawnError::NotFound)
        ));
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            resolve("only-here", &path, None),
            Err(SpawnError::NotExecutable)
        ));
        assert!(matches!(
            resolve(tool.to_str().unwrap(), &[], None),
            Err(SpawnError::NotExecutable)
        ));
        assert!(matches!(
            resolve("/nonexistent/x", &[], None),
            Err(SpawnError::NotFound)
        ));
        assert!(matches!(
            resolve("/tmp", &[], None),
            Err(SpawnError::NotExecutable)
        ));
    }
}
