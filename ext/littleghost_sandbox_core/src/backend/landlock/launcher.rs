//! The Landlock backend's own state and launch (LL.1): `open` checks the
//! host and every grant and makes the private TMPDIR; each launch runs the
//! one plan (16.4, 16.5, B.7), then the rules of `launch`, and hands the
//! helper's `supervise` command to the process runner.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use super::host::{self, GatewayReach};
use super::launch::Sandbox;
use crate::backend::bubblewrap::{narrowed_rules, Gateway};
use crate::error::{capability, tool};
use crate::fs::own::OwnDirectory;
use crate::launch::prepare::{
    given, plan, policy_grants, subprocesses, working_directory, Kept, LaunchCall, LaunchError,
    Prepared, WorkspaceView,
};
use crate::launch::trust_store;
use crate::launch::{LaunchRequest, NetworkMode, Pins};
use crate::network::BuiltinGateway;
use crate::policy::{NetworkRules, Policy};
use crate::process::SpawnOptions;

/// One Landlock sandbox: the platform it was told, its runtime roots, and
/// the private TMPDIR while open.
#[derive(Debug)]
pub struct Launcher {
    pub platform: String,
    pub runtime_roots: Vec<PathBuf>,
    tmpdir: Mutex<Option<Arc<OwnDirectory>>>,
}

impl Launcher {
    pub fn new(platform: String, runtime_roots: Vec<PathBuf>) -> Launcher {
        Launcher {
            platform,
            runtime_roots,
            tmpdir: Mutex::new(None),
        }
    }

    fn slot(&self) -> MutexGuard<'_, Option<Arc<OwnDirectory>>> {
        self.tmpdir
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The private TMPDIR while open.
    pub fn tmpdir(&self) -> Option<Arc<OwnDirectory>> {
        self.slot().clone()
    }

    /// `open`, idempotent: the platform, the helper, the kernel, that every
    /// grant can be enforced exactly, then the private TMPDIR. The workspace
    /// is asked with no lock held (it may be Ruby code calling back).
    pub fn open<E>(
        &self,
        policy: &Policy,
        view: &dyn WorkspaceView<E>,
    ) -> Result<(), LaunchError<E>> {
        if self.slot().is_some() {
            return Ok(());
        }
        host::require(&self.platform)?;
        let grants = policy_grants(policy, view)?;
        let tmpdir = host::prepare(
            policy.root_filesystem,
            &self.runtime_roots,
            &grants,
            &policy.protect,
        )?;
        // Another thread may have opened the sandbox meanwhile: keep its directory.
        let mut slot = self.slot();
        if slot.is_some() {
            let _ = tmpdir.remove();
        } else {
            *slot = Some(Arc::new(tmpdir));
        }
        Ok(())
    }

    /// Removes the private TMPDIR: the sandbox is no longer open.
    pub fn close(&self) {
        if let Some(tmpdir) = self.slot().take() {
            let _ = tmpdir.remove();
        }
    }

    /// The whole launch of `call` under `policy` (opening the sandbox
    /// first), in the order its errors are promised:
    /// `[helper, "supervise", *rules, "--", *command]`, the grants and the
    /// TMPDIR reached through handles the helper inherits. Under
    /// `:allowlist`, `gateway` is the open sandbox's: its variables beneath
    /// the 16.4 merge (B.10 (2)), its socket the supervisor's only way out.
    pub fn prepare<E>(
        &self,
        policy: &Policy,
        view: &dyn WorkspaceView<E>,
        call: LaunchCall<E>,
        gateway: Option<&dyn Gateway<E>>,
    ) -> Result<Prepared, LaunchError<E>> {
        let argv = given(call.argv)?;
        self.open(policy, view)?;
        let scope = given(call.scope)?;
        let allow = subprocesses(call.kind, true, scope.as_ref(), call.allow_subprocesses)?;
        let cwd = working_directory(view, given(call.cwd)?, true)?;
        let mut request = LaunchRequest::new(policy, call.inherit_environment, cwd);
        request.scope_network = scope.as_ref().and_then(|scope| scope.network);
        request.selected = scope.as_ref().map(|scope| scope.grants.clone());
        request.policy_grants = policy_grants(policy, view)?;
        // The grants are reached through the workspace's handles.
        let anchors = view.anchors();
        let pins = Pins::capture_from(&request.policy_grants, anchors.as_deref())?;
        request.pins = Some(&pins);
        let narrowed = narrowed_rules(policy, scope.as_ref());
        if let Some(gateway) = gateway {
            let full = given(gateway.environment())?;
            // Through a view: only the scope's secrets' stand-ins.
            request.gateway_environment = Some(match narrowed {
                Some(rules) => BuiltinGateway::view_environment(rules, full),
                None => full,
            });
        }
        let mut plan = plan(request, view, call.environment)?;
        let reach = match gateway {
            Some(gateway) if plan.network == NetworkMode::Allowlist => {
                Some(reach(gateway, narrowed)?)
            }
            _ => None,
        };
        let tmpdir = self
            .tmpdir()
            .ok_or_else(|| tool("the landlock sandbox was closed during the launch"))?;
        let workspace_directories = given(view.directories())?;
        let sandbox = Sandbox {
            root: policy.root_filesystem,
            runtime_roots: &self.runtime_roots,
            tmpdir: tmpdir.path(),
            workspace_directories: &workspace_directories,
        };
        let program = argv.first().cloned().unwrap_or_default();
        let scoped = scope.is_some();
        let supervised = host::command(
            sandbox, &tmpdir, &mut plan, scoped, allow, argv, &pins, reach,
        )?;
        let mut prepared = Prepared::planned(supervised.argv, plan);
        prepared.program = program;
        prepared.spawn = SpawnOptions {
            inherited_fds: supervised
                .anchors
                .iter()
                .map(|a| a.fd().as_raw_fd())
                .chain([supervised.tmpdir.as_raw_fd()])
                .chain(supervised.gateway.as_ref().map(|fd| fd.as_raw_fd()))
                .collect(),
            executable_fd: Some(supervised.executable_fd),
            hold: None,
        };
        prepared.kept = Kept {
            descriptors: [supervised.tmpdir]
                .into_iter()
                .chain(supervised.gateway)
                .collect(),
            anchors: supervised.anchors,
        };
        Ok(prepared)
    }
}

/// G.5, G.6 under Landlock: the gateway validated, and reached (a narrowed
/// scope through a view, which only the built-in gateway serves) through
/// the socket handle the built-in gateway opened when it bound it. Another
/// gateway (G.4) is reached by a path a Landlock child could have replaced
/// (it writes the host's file system), so it is refused. The child reads
/// the gateway's directories (its CA bundle) and the host's trust roots.
fn reach<E>(
    gateway: &dyn Gateway<E>,
    narrowed: Option<&NetworkRules>,
) -> Result<GatewayReach, LaunchError<E>> {
    given(gateway.validate())?;
    let connection = match narrowed {
        Some(rules) => given(gateway.view(rules))?.ok_or_else(|| {
            capability(
                "a scope's narrowed allowlist needs the built-in gateway (only it serves narrowed views)",
            )
        })?,
        None => given(gateway.connection())?,
    };
    let socket = connection.socket_handle.ok_or_else(|| {
        capability(
            "the landlock sandbox enforces :allowlist only through the built-in network gateway (provider \
             :builtin): it reaches the gateway's socket by the handle the gateway opened, never by a path",
        )
    })?;
    let gateway_directories = connection.handles.iter().map(|(_, path)| {
        if path.is_dir() {
            path.clone()
        } else {
            path.parent().map_or_else(|| path.clone(), PathBuf::from)
        }
    });
    let trust = trust_store::DIRECTORIES
        .iter()
        .map(PathBuf::from)
        .filter(|path| path.is_dir());
    Ok(GatewayReach {
        socket,
        readable: gateway_directories.chain(trust).collect(),
    })
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::grants::Access;
    use crate::launch::fake_workspace::{message, pwd_call, FakeWorkspace};
    use crate::launch::prepare::{Kind, ScopeCall};
    use crate::policy::GrantTable;

    /// A Landlock launcher on this host, or None where Landlock cannot run
    /// (its refusal is the probe's, tested with the probe): the sealed helper
    /// is a copy of `true` the test owns.
    fn launcher() -> Option<Launcher> {
        static HELPER: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        let folder = HELPER.get_or_init(|| {
            let folder = tempfile::tempdir().unwrap();
            let helper = folder.path().join(crate::helper::EXECUTABLE);
            std::fs::copy("/bin/true", &helper).unwrap();
            folder
        });
        crate::helper::load(folder.path());
        let platform = "x86_64-linux".to_string();
        if host::probe(&platform).unavailable.is_some() {
            return None;
        }
        Some(Launcher::new(platform, vec!["/usr".into()]))
    }

    fn policy() -> Policy {
        Policy {
            files: GrantTable::of(&[("root", Access::ReadOnly), ("out", Access::ReadWrite)]),
            ..Policy::default()
        }
    }

    fn after(argv: &[String], option: &str) -> Vec<Vec<String>> {
        argv.iter()
            .enumerate()
            .filter(|(_, word)| *word == option)
            .map(|(at, _)| argv[at + 1..at + 3].to_vec())
            .collect()
    }

    #[test]
    fn a_launch_opens_the_sandbox_and_runs_the_supervisor_with_each_grant_by_handle() {
        let Some(launcher) = launcher() else { return };
        let workspace = FakeWorkspace::new(&["src"], &["out"]);
        let prepared = launcher
            .prepare(
                &policy(),
                &workspace,
                pwd_call(Kind::Run, Some("src")),
                None,
            )
            .unwrap();
        let tmpdir = launcher.tmpdir().expect("the launch opened the sandbox");
        let helper = crate::helper::sealed().unwrap().source().to_str().unwrap();
        assert_eq!(&prepared.argv[..2], [helper, "supervise"]);
        assert_eq!(&prepared.argv[prepared.argv.len() - 2..], ["--", "pwd"]);
        // The grants are the child's descriptors 3 and 4 in the policy's order, the TMPDIR 5.
        let text = |path: &std::path::Path| path.to_str().unwrap().to_string();
        let handles = after(&prepared.argv, "--handle");
        assert_eq!(
            handles,
            [
                vec!["3".to_string(), text(&workspace.root)],
                vec!["4".to_string(), text(&workspace.paths[0].1)],
                vec!["5".to_string(), text(tmpdir.path())],
            ]
        );
        assert_eq!(prepared.spawn.inherited_fds.len(), 3);
        assert!(prepared.spawn.executable_fd.is_some());
        assert_eq!(prepared.chdir, Some(workspace.root.join("src")));
        assert!(prepared
            .environment
            .contains(&("TMPDIR".to_string(), text(tmpdir.path()))));
        assert_eq!(prepared.program, "pwd");
        assert!(prepared.exec_argv0.is_none());
        launcher.close();
        assert!(launcher.tmpdir().is_none() && !tmpdir.path().exists());
    }

    #[test]
    fn working_directories_are_refused_naming_what_the_caller_wrote() {
        let Some(launcher) = launcher() else { return };
        let workspace = FakeWorkspace::new(&[], &["out"]);
        let refused = |cwd: &str| {
            message(
                launcher
                    .prepare(&policy(), &workspace, pwd_call(Kind::Run, Some(cwd)), None)
                    .unwrap_err(),
            )
        };
        assert_eq!(
            refused("missing"),
            "Working directory is not available: missing"
        );
        assert_eq!(
            refused("../x"),
            "workspace path traversal is not allowed: ../x"
        );
        assert_eq!(
            refused("/etc"),
            "sandbox working directory is outside the selected scope: /etc"
        );
    }

    #[test]
    fn a_session_asks_for_subprocesses_a_scope_may_refuse() {
        let Some(launcher) = launcher() else { return };
        let workspace = FakeWorkspace::new(&[], &["out"]);
        let mut session = pwd_call(Kind::Run, None);
        session.kind = Kind::Session;
        session.scope = Ok(Some(ScopeCall::default()));
        let error = launcher
            .prepare(&policy(), &workspace, session, None)
            .unwrap_err();
        assert!(matches!(
            error,
            LaunchError::Rule(Error::Capability(m)) if m.contains("subprocess creation")
        ));
        let mut denied = pwd_call(Kind::Run, None);
        denied.allow_subprocesses = Some(false);
        let prepared = launcher
            .prepare(&policy(), &workspace, denied, None)
            .unwrap();
        assert!(prepared.argv.contains(&"--deny-subprocesses".to_string()));
    }
}
