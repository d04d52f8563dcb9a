//! Seatbelt on the host (SPEC SB.1–SB.7): whether it can run here, what
//! `open` checks, the runtime roots of SB.6 and the `sandbox-exec` command
//! of a planned launch. The profile text itself is `seatbelt::profile`.

use std::path::{Path, PathBuf};

use crate::backend::bubblewrap::RootFilesystem;
use crate::backend::launch_steps::{path_text as text, Platform};
use crate::backend::{private_tmp, seatbelt};
use crate::error::{capability, Error, Result};
use crate::launch::{LaunchPlan, NetworkMode};
use crate::policy::{self, Policy};

/// Why Seatbelt cannot run: it needs macOS and the executable.
pub fn requires_macos(executable: &Path) -> String {
    format!(
        "Seatbelt sandboxing requires macOS and {}",
        executable.display()
    )
}

/// The probe's answer (SB.1): None when the platform is macOS and the
/// executable exists, else why not.
pub fn unavailable(platform: &str, executable: &Path) -> Option<String> {
    let usable = Platform::of(platform) == Platform::MacOs && executable.exists();
    (!usable).then(|| requires_macos(executable))
}

/// SB.4's checks before anything is created: the platform, the executable
/// and a network Seatbelt can enforce.
pub fn open_check(platform: &str, executable: &Path, policy: &Policy) -> Result<()> {
    if Platform::of(platform) != Platform::MacOs {
        return Err(Error::UnsupportedPlatform(requires_macos(executable)));
    }
    if !executable.exists() {
        return Err(Error::Dependency(format!(
            "Seatbelt executable is missing: {}",
            executable.display()
        )));
    }
    let network = policy.network.as_ref().map(|network| network.mode);
    if network == Some(policy::NetworkMode::Allowlist) {
        return Err(capability(
            "Seatbelt does not implement allowlisted network egress",
        ));
    }
    Ok(())
}

/// SB.6 runtime roots: the system trees, then `extra` (Ruby's prefix and
/// libdir) and Homebrew's gmp, each in realpath and expanded form, once.
pub fn runtime_roots(extra: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = seatbelt::RUNTIME_ROOTS.iter().map(PathBuf::from).collect();
    roots.extend(extra);
    roots.push("/opt/homebrew/opt/gmp".into());
    roots.push("/usr/local/opt/gmp".into());
    let mut out: Vec<PathBuf> = Vec::new();
    for root in roots {
        if let Ok(real) = std::fs::canonicalize(&root) {
            if !out.contains(&real) {
                out.push(real);
            }
        }
        if !out.contains(&root) {
            out.push(root);
        }
    }
    out
}

/// What an open Seatbelt sandbox contributes to a launch.
pub struct Sandbox<'a> {
    pub executable: &'a Path,
    pub root_filesystem: policy::RootFilesystem,
    pub runtime_roots: Vec<PathBuf>,
    /// The private temporary directory `open` created.
    pub temp_dir: &'a Path,
}

/// SB.5–SB.6: `[sandbox-exec, -p, profile, --, *command]` for a planned
/// launch of the plan's selected grants; the private temporary directory
/// becomes the plan's `TMPDIR`.
pub fn command(
    sandbox: Sandbox<'_>,
    plan: &mut LaunchPlan,
    allow_subprocesses: bool,
    command: Vec<String>,
) -> Result<Vec<String>> {
    let root_filesystem = RootFilesystem::parse(sandbox.root_filesystem.name())
        .ok_or_else(|| crate::error::policy("unsupported root_filesystem"))?;
    let profile = seatbelt::profile(&seatbelt::Profile {
        root_filesystem,
        grants: plan.selected.clone(),
        runtime_roots: sandbox.runtime_roots,
        temp_dir: sandbox.temp_dir.to_path_buf(),
        allow_subprocesses,
        network_inherit: plan.network == NetworkMode::Inherit,
    });
    let temp = text(sandbox.temp_dir, "Seatbelt temporary directory")?;
    let executable = text(sandbox.executable, "Seatbelt executable path")?;
    let mut argv = vec![executable, "-p".into(), profile, "--".into()];
    argv.extend(command);
    plan.environment = private_tmp::with_tmpdir(std::mem::take(&mut plan.environment), temp);
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(environment: Vec<(String, String)>) -> LaunchPlan {
        LaunchPlan {
            environment,
            inherit_environment: false,
            network: NetworkMode::None,
            policy_grants: Vec::new(),
            selected: Vec::new(),
            cwd: "/w".into(),
            filter: None,
        }
    }

    #[test]
    fn seatbelt_runs_only_on_macos_with_its_executable() {
        let present = Path::new("/");
        assert_eq!(unavailable("arm64-darwin23", present), None);
        let missing = Path::new("/nonexistent/sandbox-exec");
        assert_eq!(
            unavailable("arm64-darwin23", missing).as_deref(),
            Some("Seatbelt sandboxing requires macOS and /nonexistent/sandbox-exec")
        );
        assert!(unavailable("x86_64-linux", present).is_some());
    }

    #[test]
    fn open_checks_platform_then_executable_then_network() {
        let policy = Policy::default();
        let linux = open_check("x86_64-linux", Path::new("/"), &policy);
        assert!(matches!(linux, Err(Error::UnsupportedPlatform(_))));
        let missing = open_check("arm64-darwin23", Path::new("/nonexistent/x"), &policy);
        assert_eq!(
            missing,
            Err(Error::Dependency(
                "Seatbelt executable is missing: /nonexistent/x".into()
            ))
        );
        assert_eq!(
            open_check("arm64-darwin23", Path::new("/"), &policy),
            Ok(())
        );
    }

    #[test]
    fn runtime_roots_keep_both_forms_once() {
        let dir = std::env::temp_dir().join(format!("lg-sb-roots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let roots = runtime_roots([link.clone(), link.clone()]);
        let real = std::fs::canonicalize(&dir).unwrap();
        assert_eq!(roots.iter().filter(|r| **r == link).count(), 1);
        assert_eq!(roots.iter().filter(|r| **r == real).count(), 1);
        assert!(roots.contains(&PathBuf::from("/opt/homebrew/opt/gmp")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_command_wraps_the_argv_and_sets_tmpdir() {
        let mut plan = plan(vec![
            ("TMPDIR".into(), "/old".into()),
            ("A".into(), "1".into()),
        ]);
        let sandbox = Sandbox {
            executable: Path::new("/usr/bin/sandbox-exec"),
            root_filesystem: policy::RootFilesystem::ReadOnly,
            runtime_roots: Vec::new(),
            temp_dir: Path::new("/tmp/sb"),
        };
        let argv = command(sandbox, &mut plan, false, vec!["ls".into()]).unwrap();
        assert_eq!(argv[0], "/usr/bin/sandbox-exec");
        assert_eq!(argv[1], "-p");
        assert!(argv[2].contains("(deny default)") && argv[2].contains("(allow file-read*)"));
        assert_eq!(&argv[3..], ["--", "ls"]);
        assert_eq!(
            plan.environment,
            [
                ("A".into(), "1".into()),
                ("TMPDIR".into(), "/tmp/sb".into())
            ]
        );
    }
}
