//! The launch of §15: on the host, with the plan's environment and working
//! directory; grants do not bind processes here, so no scope is read.

use crate::error::capability;
use crate::launch::prepare::{
    given, plan, working_directory, LaunchCall, LaunchError, Prepared, WorkspaceView,
};
use crate::launch::LaunchRequest;
use crate::policy::Policy;

/// Unrestricted's launcher: nothing of its own to keep.
#[derive(Debug, Clone, Copy, Default)]
pub struct Launcher;

impl Launcher {
    /// 15.6, 15.7: the host launch of `call`. `allow_subprocesses: false`
    /// cannot be enforced on the host: CapabilityError, before anything else.
    pub fn prepare<E>(
        &self,
        policy: &Policy,
        view: &dyn WorkspaceView<E>,
        call: LaunchCall<E>,
    ) -> Result<Prepared, LaunchError<E>> {
        if call.allow_subprocesses == Some(false) {
            return Err(
                capability("the unrestricted sandbox cannot prohibit subprocess creation").into(),
            );
        }
        let argv = given(call.argv)?;
        let cwd = working_directory(view, given(call.cwd)?, false)?;
        let request = LaunchRequest::new(policy, call.inherit_environment, cwd);
        let plan = plan(request, view, call.environment)?;
        Ok(Prepared::planned(argv, plan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::launch::fake_workspace::{message, pwd_call, FakeWorkspace, Raised};
    use crate::launch::prepare::{Kind, ScopeCall};

    #[test]
    fn a_launch_runs_on_the_host_in_the_resolved_directory_with_the_merged_environment() {
        let workspace = FakeWorkspace::new(&["src"], &[]);
        let prepared = Launcher
            .prepare(
                &Policy::default(),
                &workspace,
                pwd_call(Kind::Run, Some("src")),
            )
            .unwrap();
        assert_eq!(prepared.argv, ["pwd"]);
        assert_eq!(prepared.program, "pwd");
        assert_eq!(prepared.chdir, Some(workspace.root.join("src")));
        let names: Vec<&str> = prepared
            .environment
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(names, ["PATH", "LITTLE_GHOST_WORKSPACE_ROOT", "B"]);
        assert!(prepared.spawn.inherited_fds.is_empty() && prepared.exec_argv0.is_none());
        let root = Launcher
            .prepare(&Policy::default(), &workspace, pwd_call(Kind::Run, None))
            .unwrap();
        assert_eq!(root.chdir, Some(workspace.root.clone()));
    }

    #[test]
    fn working_directories_are_refused_naming_what_the_caller_wrote() {
        let workspace = FakeWorkspace::new(&[], &[]);
        let refused = |cwd: &str| {
            message(
                Launcher
                    .prepare(
                        &Policy::default(),
                        &workspace,
                        pwd_call(Kind::Run, Some(cwd)),
                    )
                    .unwrap_err(),
            )
        };
        assert_eq!(
            refused("missing/deeper"),
            "Working directory is not available: missing/deeper"
        );
        assert_eq!(
            refused("../x"),
            "workspace path traversal is not allowed: ../x"
        );
        // Not in a sandbox: an absolute path is a logical one, which 3.3 refuses.
        assert_eq!(
            refused("/tmp"),
            "workspace paths must be relative or use workspace://NAME/...: /tmp"
        );
        // The workspace's own error passes through unchanged.
        assert_eq!(refused("raise"), "the workspace raised");
    }

    #[test]
    fn subprocesses_cannot_be_prohibited_and_the_scope_is_not_read() {
        let workspace = FakeWorkspace::new(&[], &[]);
        let mut denied = pwd_call(Kind::Run, None);
        denied.allow_subprocesses = Some(false);
        denied.argv = Err(Raised("never read".into()));
        let error = Launcher
            .prepare(&Policy::default(), &workspace, denied)
            .unwrap_err();
        assert!(matches!(
            error,
            LaunchError::Rule(Error::Capability(m)) if m.contains("cannot prohibit subprocess")
        ));
        let mut scoped = pwd_call(Kind::Run, None);
        scoped.scope = Ok(Some(ScopeCall::default()));
        scoped.kind = Kind::Session;
        assert!(Launcher
            .prepare(&Policy::default(), &workspace, scoped)
            .is_ok());
    }

    #[test]
    fn conversion_errors_surface_in_the_order_of_the_steps() {
        let workspace = FakeWorkspace::new(&[], &[]);
        let mut bad = pwd_call(Kind::Run, Some("missing"));
        bad.environment = Err(Raised("bad environment".into()));
        // The working directory is decided before the environment is read.
        assert_eq!(
            message(
                Launcher
                    .prepare(&Policy::default(), &workspace, bad)
                    .unwrap_err()
            ),
            "Working directory is not available: missing"
        );
        let mut bad = pwd_call(Kind::Run, None);
        bad.argv = Err(Raised("bad argv".into()));
        bad.cwd = Err(Raised("bad cwd".into()));
        assert_eq!(
            message(
                Launcher
                    .prepare(&Policy::default(), &workspace, bad)
                    .unwrap_err()
            ),
            "bad argv"
        );
    }
}
