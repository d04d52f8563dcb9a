//! One Landlock launch (LL.1), planned from the shared launch plan: the
//! mounts as Landlock rules, W12 for a scope, the working directory, and the
//! helper's `supervise` argv.

use std::path::{Path, PathBuf};

use super::{cwd_allowed, expand, plan, refuse_unhidable, Grant, Network, Plan, RootMode};
use crate::error::{capability, tool, Result};
use crate::grants::{Access, Grant as Mount};
use crate::policy::RootFilesystem;

/// The Landlock root mode of a policy's root filesystem.
pub fn root_mode(root: RootFilesystem) -> RootMode {
    match root {
        RootFilesystem::Isolated => RootMode::Isolated,
        RootFilesystem::ReadOnly => RootMode::ReadOnly,
        RootFilesystem::ReadWrite => RootMode::ReadWrite,
    }
}

/// Mounts as Landlock rules (by physical path). A grant shown at another
/// path than its source cannot be expressed without a mount namespace:
/// CapabilityError.
pub fn rules_of(mounts: &[Mount]) -> Result<Vec<Grant>> {
    mounts
        .iter()
        .map(|mount| {
            if mount.source != mount.target {
                return Err(capability(format!(
                    "the landlock sandbox cannot show {} at {}: it has no mount namespace",
                    mount.source.display(),
                    mount.target.display()
                )));
            }
            Ok(Grant {
                path: mount.source.clone(),
                writable: mount.access == Access::ReadWrite,
            })
        })
        .collect()
}

/// What a Landlock sandbox holds between `open` and `close`.
#[derive(Debug, Clone, Copy)]
pub struct Sandbox<'a> {
    pub root: RootFilesystem,
    pub runtime_roots: &'a [PathBuf],
    pub tmpdir: &'a Path,
    /// The workspace root and named paths: a working directory on the way
    /// to a grant inside them is the child's starting point even when only
    /// the grants beneath it are readable.
    pub workspace_directories: &'a [PathBuf],
}

/// `open`'s dry run: every policy grant must be expressible exactly.
pub fn check(sandbox: Sandbox<'_>, grants: &[Mount]) -> Result<()> {
    let rules = rules_of(grants)?;
    let planned = plan(
        root_mode(sandbox.root),
        &rules,
        sandbox.runtime_roots,
        sandbox.tmpdir,
        Network::None,
        false,
    )?;
    expand(&planned.rules)?;
    Ok(())
}

/// The rules of one launch of `selected` (the scope's grants, or the
/// policy's): W12 when `scoped` (what the scope left out must stay out of
/// reach), and a working directory the rules reach.
pub fn launch_rules(
    sandbox: Sandbox<'_>,
    policy_grants: &[Mount],
    selected: &[Mount],
    scoped: bool,
    network: Network,
    deny_subprocesses: bool,
    cwd: &Path,
) -> Result<Plan> {
    let root = root_mode(sandbox.root);
    if scoped {
        refuse_unhidable(root, &rules_of(policy_grants)?, &rules_of(selected)?)?;
    }
    let planned = plan(
        root,
        &rules_of(selected)?,
        sandbox.runtime_roots,
        sandbox.tmpdir,
        network,
        deny_subprocesses,
    )?;
    // The common case (a cwd beneath a readable rule) first; a workspace
    // directory on the way to a grant only when it is not.
    let on_the_way = || {
        sandbox
            .workspace_directories
            .iter()
            .any(|w| cwd.starts_with(w))
            && planned.rules.iter().any(|rule| rule.path.starts_with(cwd))
    };
    if !cwd_allowed(&planned, cwd) && !on_the_way() {
        let root = sandbox.workspace_directories.first().map(PathBuf::as_path);
        return Err(tool(format!(
            "sandbox working directory is outside the selected scope: {}",
            crate::paths::shown_cwd(cwd, root)
        )));
    }
    Ok(planned)
}

/// `[helper, "supervise", *rules, "--", *command]`.
pub fn supervise_argv(helper: String, plan: &Plan, command: Vec<String>) -> Vec<String> {
    let mut argv = vec![helper, "supervise".into()];
    argv.extend(plan.to_args());
    argv.push("--".into());
    argv.extend(command);
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(source: &str, target: &str) -> Mount {
        Mount {
            source: source.into(),
            target: target.into(),
            access: Access::ReadWrite,
            tools: true,
            protect_aliases: false,
        }
    }

    #[test]
    fn a_moved_grant_cannot_be_expressed() {
        let error = rules_of(&[mount("/src", "/dst")]).unwrap_err();
        assert!(error.message().contains("no mount namespace"));
        let rules = rules_of(&[mount("/w", "/w")]).unwrap();
        assert_eq!(rules[0].path, PathBuf::from("/w"));
        assert!(rules[0].writable);
    }

    #[test]
    fn root_modes_follow_the_policy() {
        assert_eq!(root_mode(RootFilesystem::Isolated), RootMode::Isolated);
        assert_eq!(root_mode(RootFilesystem::ReadOnly), RootMode::ReadOnly);
        assert_eq!(root_mode(RootFilesystem::ReadWrite), RootMode::ReadWrite);
    }

    #[test]
    fn the_working_directory_must_be_reachable() {
        let tmp = std::env::temp_dir();
        let workspace = [PathBuf::from("/w")];
        let sandbox = Sandbox {
            root: RootFilesystem::Isolated,
            runtime_roots: &[],
            tmpdir: &tmp,
            workspace_directories: &workspace,
        };
        // Only /w/src is granted: the workspace root is still where the child starts.
        let only_src = [mount("/w/src", "/w/src")];
        let run = |cwd: &str| {
            launch_rules(
                sandbox,
                &only_src,
                &only_src,
                false,
                Network::None,
                false,
                Path::new(cwd),
            )
        };
        assert!(run("/w").is_ok());
        assert!(run("/w/src").is_ok());
        assert_eq!(
            run("/").unwrap_err(),
            crate::Error::Tool("sandbox working directory is outside the selected scope: /".into())
        );
        assert!(run("/w/other").is_err());
        let grants = [mount("/w", "/w")];
        let inside = launch_rules(
            sandbox,
            &grants,
            &grants,
            false,
            Network::None,
            false,
            Path::new("/w"),
        );
        assert!(inside.is_ok());
        let outside = launch_rules(
            sandbox,
            &grants,
            &grants,
            false,
            Network::None,
            false,
            Path::new("/elsewhere"),
        );
        assert_eq!(
            outside.unwrap_err().message(),
            "sandbox working directory is outside the selected scope: /elsewhere"
        );
    }

    #[test]
    fn the_helper_supervises_the_command() {
        let tmp = std::env::temp_dir();
        let planned = plan(RootMode::ReadOnly, &[], &[], &tmp, Network::None, false).unwrap();
        let argv = supervise_argv("/h".into(), &planned, vec!["echo".into(), "hi".into()]);
        assert_eq!(&argv[..2], ["/h", "supervise"]);
        assert_eq!(&argv[argv.len() - 3..], ["--", "echo", "hi"]);
    }
}
