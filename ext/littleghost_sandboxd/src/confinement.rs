//! What confines the daemon's work: the root's handle, the policy, the
//! backend Native chooses (Bubblewrap where user namespaces work, else
//! Landlock), the built-in gateway under an allowlist (its refusals
//! recorded with the other denials), the filesystem broker over the root's
//! handle, the launch limits, the children (all ended at shutdown) and the
//! denials.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::backend::effective::{self, Claims, Host};
use littleghost_sandbox_core::backend::landlock as ll;
use littleghost_sandbox_core::backend::launch_steps;
use littleghost_sandbox_core::backend::native::{native_choice, NativeChoice};
use littleghost_sandbox_core::backend::seccomp;
use littleghost_sandbox_core::denial::Denial;
use littleghost_sandbox_core::error::kind::Kind as ErrorKind;
use littleghost_sandbox_core::error::Error;
use littleghost_sandbox_core::fs::{Anchors, Broker};
use littleghost_sandbox_core::launch::prepare::{
    Kind, LaunchCall, LaunchError, Prepared, Refused, ScopeCall, WorkspaceView,
};
use littleghost_sandbox_core::launch::Pins;
use littleghost_sandbox_core::limits::plan::{self, Plan, Requested};
use littleghost_sandbox_core::network::{self, BuiltinGateway};
use littleghost_sandbox_core::policy::{Declaration, NetworkMode, Policy};
use littleghost_sandbox_core::process::running::Owner;
use littleghost_sandbox_core::workspace::{self, Layout, OpenError, PathEntry};

/// The platform the probes are asked about (the gem's spelling).
const PLATFORM: &str = "x86_64-linux";

/// The workspace of the daemon: its root and its `--path` named paths, each
/// held by the handle taken at start.
pub struct RootWorkspace {
    layout: Layout,
    anchors: Arc<Anchors>,
}

impl RootWorkspace {
    /// Opens `root` (created if missing; a symlink in the configured path
    /// is followed once, then the real directory is held by its handle) and
    /// each named path as `Workspace#open` does (docs/spec.md 3.6: a
    /// relative one created beneath the root from its handle, an absolute
    /// one opened refusing symlinks; two names for one directory refused).
    pub fn open(root: &Path, paths: &[(String, PathBuf)]) -> Result<RootWorkspace, Error> {
        let entries = paths
            .iter()
            .map(|(name, dir)| PathEntry {
                name: name.clone(),
                given: dir.clone().into_os_string(),
                expanded: littleghost_sandbox_core::paths::clean(&root.join(dir)),
            })
            .collect();
        let (layout, relative) = workspace::configure(root.to_path_buf(), entries)?;
        let (_, anchors) = layout.prepare(&relative).map_err(|error| match error {
            OpenError::Create { name, error } => Error::Dependency(format!(
                "littleghost-sandboxd could not create the workspace's {}: {error}",
                name.map_or("root".to_string(), |name| format!("path {name}"))
            )),
            OpenError::Rule(error) => error,
        })?;
        // Where each directory really is, as its handle was opened.
        let mut real = anchors.iter().map(|anchor| anchor.path().to_path_buf());
        let layout = Layout {
            root: real.next().unwrap_or_else(|| layout.root.clone()),
            paths: layout
                .paths
                .iter()
                .map(|(name, _)| name.clone())
                .zip(real)
                .collect(),
        };
        Ok(RootWorkspace {
            layout,
            anchors: Arc::new(anchors),
        })
    }

    /// The root's real path.
    pub fn root(&self) -> &Path {
        &self.layout.root
    }

    /// The host path of a logical path (`a/b`, relative to the root): the
    /// core's lexical resolution (3.3); the broker then walks it from the
    /// root's handle.
    pub fn resolve(&self, logical: &str) -> Result<PathBuf, Error> {
        Ok(self.layout.resolve(std::ffi::OsStr::new(logical))?)
    }
}

impl WorkspaceView<Error> for RootWorkspace {
    fn directory(&self, name: &str) -> Result<PathBuf, Error> {
        if name == workspace::ROOT_NAME {
            return Ok(self.layout.root.clone());
        }
        match self.layout.path(name) {
            Ok(path) => Ok(path.to_path_buf()),
            Err(_) => Err(Error::Policy(format!(
                "sandbox policy grants :{name}, which is not a workspace path (littleghost-sandboxd's \
                 workspace has :root and the names its --path flags give)"
            ))),
        }
    }

    fn directories(&self) -> Result<Vec<PathBuf>, Error> {
        let named = self.layout.paths.iter().map(|(_, path)| path.clone());
        Ok(std::iter::once(self.layout.root.clone())
            .chain(named)
            .collect())
    }

    fn environment(&self) -> Result<Vec<(String, String)>, Error> {
        launch_steps::workspace_layer(self.layout.environment())
    }

    fn resolve(&self, logical: &Path) -> Result<PathBuf, Refused<Error>> {
        match self.layout.resolve(logical.as_os_str()) {
            Ok(path) => Ok(path),
            Err(refused) if matches!(refused.kind(), ErrorKind::Argument | ErrorKind::Key) => {
                Err(Refused::Reason(refused.to_string()))
            }
            Err(other) => Err(Refused::Raised(other.into())),
        }
    }

    fn anchors(&self) -> Option<Arc<Anchors>> {
        Some(self.anchors.clone())
    }
}

/// The backend every launch goes through.
enum Backend {
    Bubblewrap { options: bw::Options, pins: Pins },
    Landlock(ll::Launcher),
}

/// The owner side of a Bubblewrap sandbox: opened at start, its gateway
/// under an allowlist, no command wrapper.
struct Opened<'a> {
    pins: &'a Pins,
    gateway: Option<&'a BuiltinGateway>,
}

impl bw::Sandbox<Error> for Opened<'_> {
    fn open(&self) -> Result<Pins, Error> {
        Ok(self.pins.clone())
    }

    fn gateway(&self) -> Option<Box<dyn bw::Gateway<Error> + '_>> {
        self.gateway
            .map(|gateway| Box::new(gateway) as Box<dyn bw::Gateway<Error>>)
    }

    fn wrap_command(&self, argv: Vec<String>) -> Result<Vec<String>, Error> {
        Ok(argv)
    }
}

/// Everything a request is confined by.
pub struct Confinement {
    pub workspace: RootWorkspace,
    pub policy: Policy,
    pub declaration: Declaration,
    backend: Backend,
    /// The built-in gateway every launch reaches under `network` allowlist
    /// (G.3), open from start to shutdown.
    gateway: Option<BuiltinGateway>,
    /// The broker of every file call, from the root's handle.
    pub broker: Broker,
    /// Every program started, so shutdown ends them all.
    pub owner: Owner,
    pub denials: Arc<Denials>,
}

impl Confinement {
    /// Opens `root` under `declaration`: Native's choice of backend, its
    /// `open` (the grants pinned through the root's handle), the broker.
    pub fn open(
        root: &Path,
        paths: &[(String, PathBuf)],
        declaration: Declaration,
    ) -> Result<Confinement, Error> {
        if !PROVIDERS.contains(&declaration.provider.as_str()) {
            return Err(Error::Policy(format!(
                "littleghost-sandboxd runs the native provider (or one of its backends, \
                 bubblewrap or landlock), got provider {:?}",
                declaration.provider
            )));
        }
        let policy = declaration.policy.clone();
        let gateway = BuiltinGateway::for_policy(&policy, declaration.allow_private_destinations)?;
        let workspace = RootWorkspace::open(root, paths)?;
        let backend = choose_backend(&declaration.provider, &policy, &workspace)?;
        let grants = policy.process_grants(|name| workspace.directory(name), |e| e)?;
        let (files, runtime): (Vec<_>, Vec<_>) = grants.into_iter().partition(|g| g.tools);
        let broker = Broker::anchored(
            files,
            runtime,
            declaration.limits.fs(),
            workspace.anchors().as_deref(),
        )?;
        let denials = Arc::new(Denials::default());
        if let Some(gateway) = &gateway {
            // Each 403 joins the daemon's denials (its streams).
            let recorded = denials.clone();
            let on_denial: network::DenialCallback =
                Arc::new(move |denial: &network::Denial| recorded.record(Denial::from(denial)));
            gateway.open(Some(on_denial))?;
        }
        Ok(Confinement {
            workspace,
            policy,
            declaration,
            backend,
            gateway,
            broker,
            owner: Owner::new(),
            denials,
        })
    }

    /// The backend's name (`bubblewrap` or `landlock`).
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Bubblewrap { .. } => "bubblewrap",
            Backend::Landlock(_) => "landlock",
        }
    }

    /// The one network mode its programs get (a call may narrow it to `none`).
    pub fn network_mode(&self) -> NetworkMode {
        self.policy
            .network
            .as_ref()
            .map_or(NetworkMode::None, |network| network.mode)
    }

    /// What the core claims the backend enforces under the policy on this
    /// host (the gem's `capabilities` of the same backend and policy).
    fn claims(&self) -> Claims {
        let enforcement = littleghost_sandbox_core::limits::probe();
        let (backend, owns_tree) = match self.backend {
            // A pid namespace whose init dies with bwrap owns the tree.
            Backend::Bubblewrap { .. } => (effective::Backend::Bubblewrap, true),
            Backend::Landlock(_) => (effective::Backend::Landlock, enforcement.tree.is_ok()),
        };
        let host = Host {
            limit_features: plan::enforced_features(enforcement),
            owns_tree,
            seccomp: seccomp::Arch::native().is_some(),
            connect_interception: backend == effective::Backend::Landlock
                && ll::allowlist_unavailable().is_none(),
        };
        effective::claims(backend, Some(&self.policy), &host)
    }

    /// What the daemon enforces, as `/v1/metadata` publishes it in
    /// `x-littleghost` (docs/spec.md RM.6): the backend; the features the
    /// core claims for it under this policy on this host, less
    /// `process_spawn_denial` (the protocol cannot ask for it), whose
    /// `memory_limit`, `task_limit` and `cpu_limit` (else
    /// `process_cpu_limit`) say which limits the kernel enforces for the
    /// whole tree; the one network mode; the policy's file grants by name
    /// and access; its `process_limits` as set.
    pub fn enforced(&self) -> serde_json::Value {
        let claims = self.claims();
        let features: Vec<&str> = claims
            .features
            .iter()
            .copied()
            .filter(|feature| *feature != "process_spawn_denial")
            .collect();
        let files: serde_json::Map<String, serde_json::Value> = self
            .policy
            .files
            .entries()
            .iter()
            .map(|(name, access)| (name.clone(), access.name().into()))
            .collect();
        let limits = &self.declaration.process_limits;
        serde_json::json!({
            "implementation": "littleghost-sandboxd",
            "version": env!("CARGO_PKG_VERSION"),
            "backend": self.backend_name(),
            "features": features,
            "network": self.network_mode().name(),
            "root_filesystem": self.policy.root_filesystem.name(),
            "files": files,
            "process_limits": {
                "memory_bytes": limits.memory_bytes,
                "tasks": limits.tasks,
                "cpu_seconds": limits.cpu_seconds,
            },
        })
    }

    /// One launch of `argv` prepared by the backend (16.4, 16.5, B.7), under
    /// the call's narrower `scope` when it has one; a refusal keeps the
    /// core's distinction of a refused or missing working directory.
    pub fn prepare(
        &self,
        kind: Kind,
        argv: Vec<String>,
        cwd: Option<PathBuf>,
        environment: Vec<(String, String)>,
        scope: Option<ScopeCall>,
    ) -> Result<Prepared, Box<LaunchError<Error>>> {
        let call = LaunchCall {
            kind,
            argv: Ok(argv),
            scope: Ok(scope),
            allow_subprocesses: None,
            cwd: Ok(cwd),
            inherit_environment: false,
            environment: Ok(environment),
        };
        match &self.backend {
            Backend::Bubblewrap { options, pins } => {
                let opened = Opened {
                    pins,
                    gateway: self.gateway.as_ref(),
                };
                let launcher = bw::Launcher {
                    options,
                    sandbox: &opened,
                };
                launcher.prepare(&self.policy, &self.workspace, call)
            }
            Backend::Landlock(launcher) => {
                let gateway = self.gateway.as_ref().map(|g| g as &dyn bw::Gateway<Error>);
                launcher.prepare(&self.policy, &self.workspace, call, gateway)
            }
        }
        .map_err(Box::new)
    }

    /// How the policy's `process_limits` are enforced here, each launch
    /// owning its process tree (its cgroup) wherever the host allows.
    pub fn limits_plan(&self) -> Result<Plan, Error> {
        let requested = Requested {
            own_tree_if_possible: true,
            ..self.declaration.process_limits
        };
        Ok(plan::plan(
            requested,
            littleghost_sandbox_core::limits::probe(),
        )?)
    }

    /// Ends every program still running (TERM, then KILL after the grace),
    /// then stops the gateway (its socket and directory removed) and closes
    /// the backend (Landlock removes its private TMPDIR).
    pub fn close(&self) -> usize {
        let ended = self.owner.terminate_all();
        if let Some(running) = self.gateway.as_ref().and_then(|g| g.running()) {
            if let Err(error) = running.stop() {
                eprintln!("littleghost-sandboxd: {error}");
            }
        }
        if let Backend::Landlock(launcher) = &self.backend {
            launcher.close();
        }
        ended
    }
}

/// The providers the daemon runs: Native, or one of its two backends by name.
const PROVIDERS: [&str; 3] = ["native", "bubblewrap", "landlock"];

/// Native's choice on Linux (LL.2), or the backend `provider` names (a
/// DependencyError when the host cannot run it), and that backend's `open`.
fn choose_backend(
    provider: &str,
    policy: &Policy,
    workspace: &RootWorkspace,
) -> Result<Backend, Error> {
    let unavailable = |name: &str, reason: String| Error::Dependency(format!("{name}: {reason}"));
    let choice = match provider {
        "bubblewrap" => match bw::probe(PLATFORM, None).unavailable {
            None => NativeChoice::Bubblewrap,
            Some(reason) => return Err(unavailable("bubblewrap", reason)),
        },
        "landlock" => match ll::host::probe(PLATFORM).unavailable {
            None => NativeChoice::Landlock {
                bubblewrap_reason: String::new(),
            },
            Some(reason) => return Err(unavailable("landlock", reason)),
        },
        _ => {
            let bubblewrap = bw::probe(PLATFORM, None).unavailable;
            let landlock = ll::host::probe(PLATFORM).unavailable;
            let choice = native_choice(bubblewrap, landlock, false);
            choice.map_err(|reason| Error::Dependency(reason.to_string()))?
        }
    };
    match choice {
        NativeChoice::Bubblewrap => {
            let options = bw::Options {
                platform: PLATFORM.into(),
                ..bw::Options::default()
            };
            options.check_host(false)?;
            let grants = policy.process_grants(|name| workspace.directory(name), |e| e)?;
            let pins = options.pin(&grants, workspace.anchors().as_deref())?;
            Ok(Backend::Bubblewrap { options, pins })
        }
        NativeChoice::Landlock { .. } => {
            let runtime_roots = bw::RUNTIME_ROOTS.iter().map(PathBuf::from).collect();
            let launcher = ll::Launcher::new(PLATFORM.into(), runtime_roots);
            launcher
                .open(policy, workspace)
                .map_err(|error| error.into_caller(|core| core))?;
            Ok(Backend::Landlock(launcher))
        }
    }
}

/// The denials recorded, in order, and the watchers waiting for new ones.
#[derive(Default)]
pub struct Denials {
    state: Mutex<DenialState>,
}

#[derive(Default)]
struct DenialState {
    recorded: Vec<Denial>,
    watchers: Vec<tokio::sync::mpsc::UnboundedSender<Denial>>,
}

/// How many denials are kept for a watcher that asks for the past ones.
const KEPT_DENIALS: usize = 1000;

impl Denials {
    /// Records `denial` and hands it to every watcher.
    pub fn record(&self, denial: Denial) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state
            .watchers
            .retain(|watcher| watcher.send(denial.clone()).is_ok());
        state.recorded.push(denial);
        if state.recorded.len() > KEPT_DENIALS {
            state.recorded.remove(0);
        }
    }

    /// A stream of the denials from now on, after those already recorded when `replay`.
    pub fn watch(&self, replay: bool) -> tokio::sync::mpsc::UnboundedReceiver<Denial> {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if replay {
            for denial in &state.recorded {
                let _ = sender.send(denial.clone());
            }
        }
        state.watchers.push(sender);
        receiver
    }

    /// Ends every watcher's stream (shutdown).
    pub fn close(&self) {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .watchers
            .clear();
    }
}

/// A denial as one JSON object (the REST stream's line; the gRPC message's fields).
pub fn denial_json(denial: &Denial) -> serde_json::Value {
    serde_json::json!({
        "kind": denial.kind.name(),
        "operation": denial.operation.name(),
        "target": denial.target,
        "reason": denial.reason.name(),
        "message": denial.message,
        "time_unix_ms": unix_ms(denial.at),
    })
}

/// Milliseconds since the Unix epoch.
pub fn unix_ms(at: std::time::SystemTime) -> i64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
