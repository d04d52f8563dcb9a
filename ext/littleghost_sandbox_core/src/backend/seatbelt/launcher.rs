//! One Seatbelt launch (SB.5-SB.7): the one plan (16.4, 16.5, B.7) under
//! the launch's scope, then `sandbox-exec` with the profile of its grants.
//! What only the sandbox's owner holds (its opening, its own scope when the
//! call gives none, Ruby's own directories) comes through [`Sandbox`].

use std::path::{Path, PathBuf};

use super::host;
use crate::launch::prepare::{
    given, plan, subprocesses, working_directory, LaunchCall, LaunchError, Prepared, ScopeCall,
    WorkspaceView,
};
use crate::launch::LaunchRequest;
use crate::policy::Policy;

/// What the owner of a Seatbelt sandbox holds.
pub trait Sandbox<E> {
    /// SB.4 when the sandbox is not open yet; its private temporary directory.
    fn open(&self) -> Result<PathBuf, E>;
    /// The sandbox's own scope, for a call that gives none (a launch always has one).
    fn own_scope(&self) -> Result<ScopeCall, E>;
    /// SB.6: the runtime roots, Ruby's prefix and libdir among them.
    fn runtime_roots(&self) -> Result<Vec<PathBuf>, E>;
}

/// The Seatbelt launcher of one sandbox: its executable and its owner's side.
pub struct Launcher<'a, E> {
    pub executable: &'a Path,
    pub sandbox: &'a dyn Sandbox<E>,
}

impl<E> Launcher<'_, E> {
    /// The whole launch of `call` under `policy`, in the order its errors
    /// are promised. Subprocesses: as the call asks, else a run as the scope
    /// allows and a session not at all (SB.5).
    pub fn prepare(
        &self,
        policy: &Policy,
        view: &dyn WorkspaceView<E>,
        call: LaunchCall<E>,
    ) -> Result<Prepared, LaunchError<E>> {
        let argv = given(call.argv)?;
        let temp_dir = given(self.sandbox.open())?;
        let scope = match given(call.scope)? {
            Some(scope) => scope,
            None => given(self.sandbox.own_scope())?,
        };
        let allow = subprocesses(call.kind, false, Some(&scope), call.allow_subprocesses)?;
        let cwd = working_directory(view, given(call.cwd)?, true)?;
        let mut request = LaunchRequest::new(policy, call.inherit_environment, cwd);
        request.scope_network = scope.network;
        request.selected = Some(scope.grants);
        let mut plan = plan(request, view, call.environment)?;
        let sandbox = host::Sandbox {
            executable: self.executable,
            root_filesystem: policy.root_filesystem,
            runtime_roots: given(self.sandbox.runtime_roots())?,
            temp_dir: &temp_dir,
        };
        let argv = host::command(sandbox, &mut plan, allow, argv)?;
        Ok(Prepared::planned(argv, plan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::grants::{Access, Grant};
    use crate::launch::fake_workspace::{pwd_call, FakeWorkspace, Raised};
    use crate::launch::prepare::Kind;
    use std::cell::Cell;

    struct FakeSandbox {
        temp_dir: PathBuf,
        own_scope: ScopeCall,
        opened: Cell<u32>,
    }

    impl Sandbox<Raised> for FakeSandbox {
        fn open(&self) -> Result<PathBuf, Raised> {
            self.opened.set(self.opened.get() + 1);
            Ok(self.temp_dir.clone())
        }

        fn own_scope(&self) -> Result<ScopeCall, Raised> {
            Ok(self.own_scope.clone())
        }

        fn runtime_roots(&self) -> Result<Vec<PathBuf>, Raised> {
            Ok(vec!["/usr".into()])
        }
    }

    fn grant(path: &Path, access: Access) -> Grant {
        Grant {
            source: path.to_path_buf(),
            target: path.to_path_buf(),
            access,
            tools: true,
            protect_aliases: true,
        }
    }

    fn prepare(
        sandbox: &FakeSandbox,
        workspace: &FakeWorkspace,
        call: LaunchCall<Raised>,
    ) -> Result<Prepared, LaunchError<Raised>> {
        let launcher = Launcher {
            executable: Path::new("/usr/bin/sandbox-exec"),
            sandbox,
        };
        launcher.prepare(&Policy::default(), workspace, call)
    }

    fn sandbox(workspace: &FakeWorkspace) -> FakeSandbox {
        FakeSandbox {
            temp_dir: "/private/tmp/lg-seatbelt".into(),
            own_scope: ScopeCall {
                grants: vec![grant(&workspace.root, Access::ReadOnly)],
                spawns: true,
                ..ScopeCall::default()
            },
            opened: Cell::new(0),
        }
    }

    #[test]
    fn a_launch_runs_sandbox_exec_with_the_profile_of_the_sandboxs_own_scope() {
        let workspace = FakeWorkspace::new(&["src"], &[]);
        let sandbox = sandbox(&workspace);
        let prepared = prepare(&sandbox, &workspace, pwd_call(Kind::Run, Some("src"))).unwrap();
        let argv = &prepared.argv;
        assert_eq!(&argv[..2], ["/usr/bin/sandbox-exec", "-p"]);
        assert_eq!(&argv[3..], ["--", "pwd"]);
        let root = workspace.root.to_str().unwrap();
        assert!(
            argv[2].contains(root),
            "the profile names the scope's grant"
        );
        assert!(
            argv[2].contains("(allow process-fork)"),
            "a run follows the scope"
        );
        assert_eq!(prepared.chdir, Some(workspace.root.join("src")));
        let tmpdir = ("TMPDIR".to_string(), "/private/tmp/lg-seatbelt".to_string());
        assert!(prepared.environment.contains(&tmpdir));
        assert_eq!(sandbox.opened.get(), 1);
    }

    #[test]
    fn a_session_creates_no_subprocesses_unless_asked() {
        let workspace = FakeWorkspace::new(&[], &[]);
        let sandbox = sandbox(&workspace);
        let session = prepare(&sandbox, &workspace, pwd_call(Kind::Session, None)).unwrap();
        assert!(!session.argv[2].contains("(allow process-fork)"));
        let mut asked = pwd_call(Kind::Session, None);
        asked.allow_subprocesses = Some(true);
        let asked = prepare(&sandbox, &workspace, asked).unwrap();
        assert!(asked.argv[2].contains("(allow process-fork)"));
        // A scope that forbids them refuses the request.
        let mut forbidden = pwd_call(Kind::Run, None);
        forbidden.allow_subprocesses = Some(true);
        forbidden.scope = Ok(Some(ScopeCall::default()));
        let error = prepare(&sandbox, &workspace, forbidden).unwrap_err();
        assert!(matches!(error, LaunchError::Rule(Error::Capability(_))));
    }
}
