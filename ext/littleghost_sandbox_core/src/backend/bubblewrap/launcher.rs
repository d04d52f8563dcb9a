//! One Bubblewrap launch from the call alone (16.5, B.7, B.10, G.5, G.6):
//! the subprocess rule, the pins of `open`, the working directory, the plan,
//! the command wrapper, the relay under `:allowlist`, the grants bound from
//! their handles, and the host argv. What only the sandbox's owner holds
//! (its opening, its gateway, a command wrapper given as code) comes
//! through [`Sandbox`].

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use super::{args_plan, bubblewrap_args, ArgsRequest, NetworkMode, Options, RealHost, Relay};
use crate::error::{capability, Error};
use crate::launch::prepare::{
    given, plan, policy_grants, subprocesses, working_directory, Kept, LaunchCall, LaunchError,
    Prepared, ScopeCall, WorkspaceView,
};
use crate::launch::transparent::tunnelled_destinations;
use crate::launch::trust_store::TrustStore;
use crate::launch::Pins;
use crate::network::BuiltinGateway;
use crate::policy::{NetworkRules, Policy};
use crate::process::SpawnOptions;

/// Where a launch reaches an open gateway (G.2, G.6).
#[derive(Debug, Default)]
pub struct GatewayConnection {
    /// The gateway socket inside the sandbox (`proxy_mount_path`).
    pub socket: PathBuf,
    /// Another gateway's `mounts` (G.4), bound read-only by path as (source, target).
    pub binds: Vec<(PathBuf, PathBuf)>,
    /// The built-in gateway's directory (or a view's, and its CA bundle)
    /// as handles, with the path each is bound at read-only.
    pub handles: Vec<(OwnedFd, PathBuf)>,
    /// The built-in gateway's (or view's) socket file as a handle opened
    /// when it was bound: the Landlock supervisor connects through it.
    /// None for another gateway (G.4).
    pub socket_handle: Option<OwnedFd>,
}

/// An open gateway as a launch asks it (G.2).
pub trait Gateway<E> {
    /// Its `environment`, beneath the 16.4 merge (B.10 (2)).
    fn environment(&self) -> Result<Vec<(String, String)>, E>;
    /// `validate!`: it still runs and is what was opened.
    fn validate(&self) -> Result<(), E>;
    /// Where the launch reaches it.
    fn connection(&self) -> Result<GatewayConnection, E>;
    /// Where a launch under `rules`, narrower than the policy's, reaches a
    /// view of it serving only those; None when it serves no views.
    fn view(&self, rules: &NetworkRules) -> Result<Option<GatewayConnection>, E>;
}

/// A gateway borrowed is asked as the gateway itself.
impl<E, G: Gateway<E> + ?Sized> Gateway<E> for &G {
    fn environment(&self) -> Result<Vec<(String, String)>, E> {
        (**self).environment()
    }

    fn validate(&self) -> Result<(), E> {
        (**self).validate()
    }

    fn connection(&self) -> Result<GatewayConnection, E> {
        (**self).connection()
    }

    fn view(&self, rules: &NetworkRules) -> Result<Option<GatewayConnection>, E> {
        (**self).view(rules)
    }
}

/// The built-in gateway as every launch reaches it (G.2, G.5, G.6): its
/// directory and socket by the handles it opened when it bound them (never
/// a path resolved again), a narrowed scope through its view.
impl Gateway<Error> for BuiltinGateway {
    fn environment(&self) -> Result<Vec<(String, String)>, Error> {
        Ok(BuiltinGateway::environment(self))
    }

    fn validate(&self) -> Result<(), Error> {
        BuiltinGateway::validate(self)
    }

    fn connection(&self) -> Result<GatewayConnection, Error> {
        let running = self
            .running()
            .ok_or_else(|| Error::Dependency("the built-in network gateway is not open".into()))?;
        Ok(GatewayConnection {
            socket: running.socket_path().to_path_buf(),
            binds: Vec::new(),
            handles: running.bind_handles()?,
            socket_handle: Some(running.socket_handle()?),
        })
    }

    fn view(&self, rules: &NetworkRules) -> Result<Option<GatewayConnection>, Error> {
        let view = BuiltinGateway::view(self, rules)?;
        Ok(Some(GatewayConnection {
            socket: view.socket_path().to_path_buf(),
            binds: Vec::new(),
            handles: view.bind_handles()?,
            socket_handle: Some(view.socket_handle()?),
        }))
    }
}

/// What the owner of a Bubblewrap sandbox holds.
pub trait Sandbox<E> {
    /// B.5 when the sandbox is not open yet; the pins its `open` took.
    fn open(&self) -> Result<Pins, E>;
    /// The gateway the open sandbox enforces its allowlist through, if any.
    fn gateway(&self) -> Option<Box<dyn Gateway<E> + '_>>;
    /// `argv` after the `command_wrapper:` of B.4, if any.
    fn wrap_command(&self, argv: Vec<String>) -> Result<Vec<String>, E>;
}

/// The Bubblewrap launcher of one sandbox: its options and its owner's side.
pub struct Launcher<'a, E> {
    pub options: &'a Options,
    pub sandbox: &'a dyn Sandbox<E>,
}

impl<E> Launcher<'_, E> {
    /// The whole launch of `call` under `policy`, in the order its errors
    /// are promised.
    pub fn prepare(
        &self,
        policy: &Policy,
        view: &dyn WorkspaceView<E>,
        call: LaunchCall<E>,
    ) -> Result<Prepared, LaunchError<E>> {
        let argv = given(call.argv)?;
        let scope = given(call.scope)?;
        let allow = subprocesses(call.kind, true, scope.as_ref(), call.allow_subprocesses)?;
        let pins = given(self.sandbox.open())?;
        let grants = policy_grants(policy, view)?;
        let cwd = working_directory(view, given(call.cwd)?, true)?;
        let options = self.options;
        let mut request = options.request(policy, call.inherit_environment, cwd, &pins, allow);
        request.scope_network = scope.as_ref().and_then(|scope| scope.network);
        request.selected = scope.as_ref().map(|scope| scope.grants.clone());
        request.policy_grants = grants;
        let gateway = self.sandbox.gateway();
        let narrowed = narrowed_rules(policy, scope.as_ref());
        let environment = match &gateway {
            Some(gateway) => Some(given(gateway.environment())?),
            None => None,
        };
        // Through a view: only the scope's secrets' stand-ins.
        request.gateway_environment = match narrowed {
            Some(rules) => environment.map(|full| BuiltinGateway::view_environment(rules, full)),
            None => environment,
        };
        let mut plan = plan(request, view, call.environment)?;
        let filter = plan.filter.take();
        let program = argv.first().cloned().unwrap_or_default();
        let command = given(self.sandbox.wrap_command(argv))?;
        let (relay, mut kept) = match gateway {
            // B.10 (4), G.5, G.6: the relay runs the command under
            // `:allowlist`; a narrowed scope's through its own view.
            Some(gateway) if plan.network == NetworkMode::Allowlist => {
                let (relay, kept) = self.relay(gateway.as_ref(), policy, narrowed)?;
                (Some(relay), kept)
            }
            _ => (None, Vec::new()),
        };
        let workspace_paths = given(view.directories())?;
        let mut launch = options.launch(policy, &plan, workspace_paths, (&pins, &RealHost))?;
        let anchors = options.bind_from(&mut launch, &pins, filter.is_some())?;
        let handles: Vec<RawFd> = anchors.iter().map(|a| a.fd().as_raw_fd()).collect();
        let filter_fd = filter.as_ref().map(|fd| fd.as_raw_fd());
        let wrapped =
            options.host_argv(launch, command, relay, (filter_fd, &handles), &RealHost)?;
        // bwrap sees the filter first, then the grants' handles, then the relay's copies.
        kept.splice(0..0, filter);
        kept.extend(wrapped.pipes.into_iter().flat_map(|pipes| pipes.into_fds()));
        Ok(Prepared {
            argv: wrapped.argv,
            // bwrap gets the host environment only when inheriting (B.6);
            // the child's comes by --setenv.
            environment: Vec::new(),
            inherit_environment: plan.inherit_environment,
            chdir: None,
            spawn: SpawnOptions {
                inherited_fds: wrapped.inherited_fds,
                executable_fd: None,
                hold: wrapped.hold,
            },
            program,
            exec_argv0: Some(wrapped.program.into_bytes()),
            kept: Kept {
                descriptors: kept,
                anchors,
            },
        })
    }

    /// G.5, G.6: validate the gateway, reach it (a narrowed scope through a
    /// view, which only the built-in gateway serves: another cannot enforce
    /// the narrower rules, so the launch fails closed), and prepare the relay
    /// helper, its transparent listeners and the host's trust directories.
    /// The descriptors returned must stay open until the launch started.
    fn relay(
        &self,
        gateway: &dyn Gateway<E>,
        policy: &Policy,
        narrowed: Option<&NetworkRules>,
    ) -> Result<(Relay, Vec<OwnedFd>), LaunchError<E>> {
        // A scope's narrowed rules, else the (enforced) policy's allowlist.
        let own = policy.network.as_ref();
        let own = own.filter(|n| n.mode == NetworkMode::Allowlist);
        let rules = narrowed.or(own.map(|n| &n.rules));
        let destinations = rules.map_or_else(Vec::new, tunnelled_destinations);
        given(gateway.validate())?;
        let connection = match narrowed {
            Some(rules) => given(gateway.view(rules))?.ok_or_else(|| {
                capability(
                    "a scope's narrowed allowlist needs the built-in gateway (only it serves narrowed views)",
                )
            })?,
            None => given(gateway.connection())?,
        };
        let data = self.options.relay_data()?;
        let served = self.options.transparent(&destinations)?;
        let trust = TrustStore::open();
        let relay = Relay {
            data: data.as_raw_fd(),
            trust: trust.binds(),
            socket: connection.socket,
            binds: connection.binds,
            handles: connection
                .handles
                .iter()
                .map(|(fd, target)| (fd.as_raw_fd(), target.clone()))
                .collect(),
            forwards: served.forwards,
            hosts: served.hosts.as_ref().map(|fd| fd.as_raw_fd()),
            hold: served.pipes.as_ref().map(|pipes| pipes.hold()),
        };
        let pipes = served.pipes.into_iter().flat_map(|pipes| pipes.into_fds());
        let kept = [data]
            .into_iter()
            .chain(connection.handles.into_iter().map(|(fd, _)| fd))
            .chain(served.hosts)
            .chain(pipes)
            .chain(trust.into_fds())
            .collect();
        Ok((relay, kept))
    }
}

impl Options {
    /// B.5 steps 1-6: the host (bwrap; the relay helper under
    /// `:allowlist`), then the policy's grants pinned from the workspace's
    /// handles, then the functional probe.
    pub fn open<E>(
        &self,
        policy: &Policy,
        view: &dyn WorkspaceView<E>,
        allowlist: bool,
    ) -> Result<Pins, LaunchError<E>> {
        self.check_host(allowlist)?;
        let grants = policy_grants(policy, view)?;
        Ok(self.pin(&grants, view.anchors().as_deref())?)
    }

    /// `bubblewrap_args` (B.8): the bwrap options (before `--`) that
    /// `given` shows under `policy`, through the pins of `open` (`pins`,
    /// else taken now from the workspace's handles, and returned for the
    /// sandbox to keep); works before `open`. `cwd` as in a launch (B.7).
    pub fn shown_args<E>(
        &self,
        policy: &Policy,
        view: &dyn WorkspaceView<E>,
        pins: Option<Pins>,
        cwd: Result<Option<PathBuf>, E>,
        request: ArgsRequest,
    ) -> Result<(Vec<OsString>, Pins), LaunchError<E>> {
        let grants = policy_grants(policy, view)?;
        let pins = match pins {
            Some(pins) => pins,
            None => Pins::capture_from(&grants, view.anchors().as_deref())?,
        };
        let cwd = working_directory(view, given(cwd)?, true)?;
        let plan = args_plan(policy, grants, &pins, cwd, request)?;
        let workspace_paths = given(view.directories())?;
        let launch = self.launch(policy, &plan, workspace_paths, (&pins, &RealHost))?;
        Ok((bubblewrap_args(&launch, &RealHost)?, pins))
    }
}

/// The rules of a scope whose allowlist is narrower than the policy's (it
/// launches through a view of the gateway), or None.
pub(crate) fn narrowed_rules<'a>(
    policy: &Policy,
    scope: Option<&'a ScopeCall>,
) -> Option<&'a NetworkRules> {
    let rules = scope?.network_rules.as_ref()?;
    let own = policy.network.as_ref().map(|n| &n.rules);
    (own != Some(rules)).then_some(rules)
}
