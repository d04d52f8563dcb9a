//! One launch, prepared by the core alone: the call as plain data
//! ([`LaunchCall`]), the workspace as the core asks it ([`WorkspaceView`]),
//! the rules every backend applies the same way (the subprocess rule of
//! H.6, the working directory of B.7), and what the process runner is
//! handed ([`Prepared`]). Each backend's `Launcher` (`backend::*::launcher`)
//! runs the whole sequence of 16.4, 16.5 and its own wrap from these.
//!
//! What the caller converts may fail: each converted value arrives as the
//! conversion's `Result`, and its error is raised at the step that reads it,
//! so the order of errors (docs/spec.md §16.5, §17.3) is the same whether a
//! value is bad or a rule refuses it.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::bubblewrap::{classify_exec_failure, NetworkMode};
use crate::backend::launch_steps;
use crate::error::Error;
use crate::fs::anchor::{Anchor, Anchors};
use crate::grants::Grant;
use crate::launch::{LaunchPlan, CWD_NOT_AVAILABLE};
use crate::policy::{NetworkRules, Policy};
use crate::process::SpawnOptions;

/// Which launch method was called: H.6 gives them different defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `execute_program`: runs to completion.
    Run,
    /// `start_program`: a session.
    Session,
}

/// The scope a launch was given, converted.
#[derive(Debug, Clone, Default)]
pub struct ScopeCall {
    /// The scope's process grants (16.5 step 3).
    pub grants: Vec<Grant>,
    /// The scope's network, when it sets one.
    pub network: Option<NetworkMode>,
    /// The rules of the scope's allowlist, when its network is `:allowlist`.
    pub network_rules: Option<NetworkRules>,
    /// The scope allows `process_spawn`.
    pub spawns: bool,
}

/// One call of `execute_program` or `start_program`, converted. Each
/// `Result` is a conversion the caller made; its error is raised where the
/// sequence reads the value.
pub struct LaunchCall<E> {
    pub kind: Kind,
    pub argv: Result<Vec<String>, E>,
    /// The scope, when one was given (backends that confine processes read it).
    pub scope: Result<Option<ScopeCall>, E>,
    /// `allow_subprocesses:`; None: the default of H.6.
    pub allow_subprocesses: Option<bool>,
    /// `cwd:` as the caller wrote it; None: the workspace root (B.7).
    pub cwd: Result<Option<PathBuf>, E>,
    /// `inherit_environment:` (17.6, the call's opt-in).
    pub inherit_environment: bool,
    /// `environment:`, the last layer of 16.4.
    pub environment: Result<Vec<(String, String)>, E>,
}

/// Why the workspace refused to resolve a logical path.
#[derive(Debug)]
pub enum Refused<E> {
    /// A rule of 3.3 refused it; the reason does not name the path.
    Reason(String),
    /// The workspace raised an error of its own, passed on unchanged.
    Raised(E),
}

/// The workspace as a launch asks it (§3): its directories, its
/// variables, the resolution of a logical path and the handles `open` took.
pub trait WorkspaceView<E> {
    /// The directory `name` stands for (`root` or a path's name).
    fn directory(&self, name: &str) -> Result<PathBuf, E>;
    /// The root, then every named path.
    fn directories(&self) -> Result<Vec<PathBuf>, E>;
    /// `environment` (3.5) as the first layer of 16.4.
    fn environment(&self) -> Result<Vec<(String, String)>, E>;
    /// `resolve` (3.3) of a logical path.
    fn resolve(&self, logical: &Path) -> Result<PathBuf, Refused<E>>;
    /// The handles of the open workspace; None when it has none.
    fn anchors(&self) -> Option<Arc<Anchors>>;
}

/// Why a launch was refused.
#[derive(Debug)]
pub enum LaunchError<E> {
    /// A rule of the core refused it (the documented class of [`Error`]).
    Rule(Error),
    /// The workspace refused the working directory the caller wrote.
    CwdRefused { reason: String, cwd: PathBuf },
    /// The working directory the caller wrote does not exist.
    CwdMissing { cwd: PathBuf },
    /// The caller's conversion or view failed: passed on unchanged.
    Caller(E),
}

impl<E> LaunchError<E> {
    /// The error as the caller raises it: its own unchanged, every other
    /// one as the core error it is (a refused or missing working directory
    /// is a ToolError naming the path as the caller wrote it, never a host
    /// path, so a model can act on it).
    pub fn into_caller(self, core: impl FnOnce(Error) -> E) -> E {
        match self {
            LaunchError::Caller(error) => error,
            LaunchError::Rule(error) => core(error),
            LaunchError::CwdRefused { reason, cwd } if cwd.as_os_str().is_empty() => {
                core(Error::Tool(reason))
            }
            LaunchError::CwdRefused { reason, cwd } => {
                core(Error::Tool(format!("{reason}: {}", cwd.display())))
            }
            LaunchError::CwdMissing { cwd } => core(Error::Tool(format!(
                "{CWD_NOT_AVAILABLE}: {}",
                cwd.display()
            ))),
        }
    }
}

impl<E> From<Error> for LaunchError<E> {
    fn from(error: Error) -> Self {
        LaunchError::Rule(error)
    }
}

/// A conversion's value, or its error as the caller's.
pub fn given<T, E>(value: Result<T, E>) -> Result<T, LaunchError<E>> {
    value.map_err(LaunchError::Caller)
}

/// H.6: whether the launch may create subprocesses. A session asks for
/// them as the call says, else as the backend's `session_default` (SB.5:
/// Seatbelt's is no); a run follows the call, else the scope. Asking for
/// them where the scope forbids them is a CapabilityError.
pub fn subprocesses(
    kind: Kind,
    session_default: bool,
    scope: Option<&ScopeCall>,
    requested: Option<bool>,
) -> Result<bool, Error> {
    let requested = match kind {
        Kind::Session => Some(requested.unwrap_or(session_default)),
        Kind::Run => requested,
    };
    launch_steps::subprocesses(scope.map(|scope| scope.spawns), requested)
}

/// SC.14: the sandbox and a scope handed to it each must allow
/// `process_execute` (a Ruby subclass may withdraw it).
pub fn require_execute(sandbox_allows: bool, scope_allows: bool) -> Result<(), Error> {
    if sandbox_allows && scope_allows {
        Ok(())
    } else {
        Err(Error::Tool(
            "Sandbox scope does not allow process execute".into(),
        ))
    }
}

/// The working directory of a launch (B.7): None is the workspace root; a
/// relative path resolves logically, as does an absolute one unless
/// `in_sandbox` (then it names a path inside the sandbox, cleaned).
pub fn working_directory<E>(
    view: &dyn WorkspaceView<E>,
    cwd: Option<PathBuf>,
    in_sandbox: bool,
) -> Result<PathBuf, LaunchError<E>> {
    let Some(cwd) = cwd else {
        return given(view.directory(crate::workspace::ROOT_NAME));
    };
    if in_sandbox && cwd.is_absolute() {
        return Ok(crate::paths::clean(&cwd));
    }
    let resolved = match view.resolve(&cwd) {
        Ok(resolved) => resolved,
        Err(Refused::Reason(reason)) => return Err(LaunchError::CwdRefused { reason, cwd }),
        Err(Refused::Raised(error)) => return Err(LaunchError::Caller(error)),
    };
    if !resolved.is_dir() {
        return Err(LaunchError::CwdMissing { cwd });
    }
    Ok(resolved)
}

/// The policy's process grants over the workspace's directories.
pub fn policy_grants<E>(
    policy: &Policy,
    view: &dyn WorkspaceView<E>,
) -> Result<Vec<Grant>, LaunchError<E>> {
    policy.process_grants(
        |name| view.directory(name).map_err(LaunchError::Caller),
        LaunchError::Rule,
    )
}

/// The plan of 16.4 and 16.5 with the workspace's and the call's layers.
pub fn plan<E>(
    request: crate::launch::LaunchRequest<'_>,
    view: &dyn WorkspaceView<E>,
    environment: Result<Vec<(String, String)>, E>,
) -> Result<LaunchPlan, LaunchError<E>> {
    crate::launch::plan(
        request,
        || Ok((given(view.environment())?, given(environment)?)),
        LaunchError::Rule,
    )
}

/// What must stay open until the child has started: descriptors it
/// inherits and the handles its grants are reached through.
#[derive(Debug, Default)]
pub struct Kept {
    pub descriptors: Vec<OwnedFd>,
    pub anchors: Vec<Anchor>,
}

/// A launch ready for the process runner.
#[derive(Debug)]
pub struct Prepared {
    /// The host argv (the backend's wrapper first, if any).
    pub argv: Vec<String>,
    /// The explicit environment of the process started.
    pub environment: Vec<(String, String)>,
    /// The host environment is inherited too (17.6).
    pub inherit_environment: bool,
    pub chdir: Option<PathBuf>,
    pub spawn: SpawnOptions,
    /// The program as the caller named it (denial events name it, never a wrapper).
    pub program: String,
    /// bwrap's argv[0] as it executes it, when bwrap runs the command:
    /// its own exec failure is read back as the shell's (17.4).
    pub exec_argv0: Option<Vec<u8>>,
    /// Open until the child started; dropped with the Prepared.
    pub kept: Kept,
}

/// How a launch's exit is shown instead (17.4): exit status and stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownFailure {
    pub exit_code: i32,
    pub stderr: String,
}

impl Prepared {
    /// A host launch of `argv` with the plan's environment and directory.
    pub fn planned(argv: Vec<String>, plan: LaunchPlan) -> Prepared {
        Prepared {
            program: argv.first().cloned().unwrap_or_default(),
            argv,
            environment: plan.environment,
            inherit_environment: plan.inherit_environment,
            chdir: Some(plan.cwd),
            spawn: SpawnOptions::default(),
            exec_argv0: None,
            kept: Kept::default(),
        }
    }

    /// What the process runner starts (17.1): the host argv, environment
    /// and directory, taken out of the preparation, which keeps what must
    /// stay open and how an exec failure is read back.
    pub fn take_launch(&mut self) -> crate::process::Launch {
        crate::process::Launch {
            argv: std::mem::take(&mut self.argv),
            environment: std::mem::take(&mut self.environment),
            inherit_environment: self.inherit_environment,
            chdir: self.chdir.take(),
            cpu_rlimit: None,
            file_bytes: None,
            spawn_options: std::mem::take(&mut self.spawn),
        }
    }

    /// 17.4: bwrap's own exec failure of the command shown as exit 127 or
    /// 126 with a shell-style message; None for any other outcome.
    pub fn exec_failure(
        &self,
        exit_code: Option<i32>,
        stdout: &[u8],
        stderr: &[u8],
    ) -> Option<ShownFailure> {
        let exec_argv0 = self.exec_argv0.as_ref()?;
        let failure = classify_exec_failure(exit_code, stdout, stderr, exec_argv0)?;
        Some(ShownFailure {
            exit_code: failure.exit_code(),
            stderr: failure.message(&self.program),
        })
    }
}
