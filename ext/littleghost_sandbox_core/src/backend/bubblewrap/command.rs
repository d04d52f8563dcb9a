//! One Bubblewrap launch from the backend options (B.4) and the core launch
//! plan (16.5, B.10): the request the plan is decided from, the [`Launch`]
//! the bwrap options are a function of, and the host argv
//! `bwrap OPTIONS -- COMMAND`, the command run by the relay under
//! `:allowlist` (G.5, G.6).

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use super::{bubblewrap_args, launch_grants, scope_masks, HostProbe, Launch, Options};
use super::{NetworkMode, RootFilesystem};
use crate::error::{Error, Result};
use crate::fs::anchor::Anchor;
use crate::grants::Grant;
use crate::launch::transparent::Transparent;
use crate::launch::{self, relay_argv, Filter, Forward, LaunchPlan, LaunchRequest, Pins};
use crate::launch::{select_network, MOUNT_PATH_NOT_UTF8};
use crate::network::{folder, gateway};
use crate::policy::Policy;
use crate::process::hold::{Held, Hold, Pipes};
use crate::process::low_ports;
use crate::process::mount_check::{ExpectedMount, MountKind};
use crate::process::SpawnOptions;

/// A bind or mask destination beneath a writable bind is not a real
/// directory there (a symlink, a file, or missing) when a launch starts.
pub const DESTINATION_NOT_DIRECTORY: &str =
    "sandbox mount destination is not a real directory inside its writable parent mount";

/// What a launch under `:allowlist` takes from the open gateway.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Relay {
    /// A read-only descriptor of the relay helper's bytes
    /// ([`Options::relay_data`]), owned by the caller until the spawn: bwrap
    /// copies them to [`RELAY_PATH`] (mode 0555, read-only) and runs that.
    /// No host path of the helper is bound or looked up.
    pub data: RawFd,
    /// The gateway socket inside the sandbox (G.2 `proxy_mount_path`).
    pub socket: PathBuf,
    /// The gateway's `mounts`, bound read-only (G.6), as (source, target):
    /// another gateway's (G.4); the built-in one gives `handles`.
    pub binds: Vec<(PathBuf, PathBuf)>,
    /// Handles on the built-in gateway's own directory (or a view's, and
    /// the CA bundle), owned by the caller until the spawn, with the path
    /// each is bound at read-only, inside the masked gateway folder.
    pub handles: Vec<(RawFd, PathBuf)>,
    /// Handles on the host's trust directories
    /// ([`crate::launch::trust_store::TrustStore`]), owned by the caller until
    /// the spawn, with the in-sandbox path each is bound at.
    pub trust: Vec<(RawFd, PathBuf)>,
    /// The relay's transparent listeners ([`Options::transparent`]).
    pub forwards: Vec<Forward>,
    /// A descriptor holding the sandbox's `/etc/hosts` (owned by the caller
    /// until the spawn), bound read-only over it, when some name is served.
    pub hosts: Option<RawFd>,
    /// With a listener below port 1024: the pipes holding bwrap until the
    /// host lowered the sandbox's `ip_unprivileged_port_start`
    /// ([`Options::transparent`]); owned by the caller until the spawn.
    pub hold: Option<Hold>,
}

/// What [`Options::transparent`] prepares for one launch.
#[derive(Debug, Default)]
pub struct Served {
    /// The relay's listeners.
    pub forwards: Vec<Forward>,
    /// The sandbox's `/etc/hosts`, when some listener exists.
    pub hosts: Option<std::os::fd::OwnedFd>,
    /// When a listener is below port 1024: the pipes of the hold.
    pub pipes: Option<Pipes>,
}

/// Where the sandbox's own hosts file is bound.
pub const HOSTS_PATH: &str = "/etc/hosts";

/// Where the relay helper's copy is placed inside the sandbox: bwrap's own
/// fresh `/dev`, which no host file and no child can reach before the launch.
pub const RELAY_PATH: &str = "/dev/littleghost-sandbox-helper";

/// Where a launch would show a folder of this user's gateway directories
/// ([`folder::places`]: the host paths where one appears, found by device
/// and inode, a second path to `/tmp` included), each masked with an empty
/// tmpfs so a child reaches no gateway socket but the one bound for it. A
/// launch that shows no host `/tmp` (the default: `/tmp` is the sandbox's
/// own tmpfs) does not even make the folder (`gateway::base`).
fn gateway_masks(launch: &Launch) -> Result<Vec<PathBuf>> {
    // Made now if missing: beneath a read-only root a folder made later by a
    // gateway would appear unmasked, and bwrap cannot make a mount point there.
    if !masks_at(launch, &[gateway::base_path()])?.is_empty() {
        gateway::base()?;
    }
    masks_at(launch, &folder::places()?)
}

/// The masks `launch` needs for a folder appearing at `places` (host paths):
/// each place where the root shows the host (a `:read_only` or `:read_write`
/// root, no tmpfs or configured mask over it), beneath a runtime root, and
/// beneath each grant whose source holds it (at its place under the grant's
/// target), except inside a configured mask with no grant in it.
/// PolicyError for a grant inside a place, and for a writable grant holding a
/// place from above its parent: the child could rename the directories on
/// the way, and a later launch would mask an empty stand-in
/// (docs/security.md, "The gem's own directories").
pub(super) fn masks_at(launch: &Launch, places: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let (grants, configured) = (&launch.grants, &launch.masks);
    let isolated = launch.root_filesystem == RootFilesystem::Isolated;
    let mut masks = Vec::new();
    let mut add = |mask: PathBuf| {
        if !masks.contains(&mask) {
            masks.push(mask);
        }
    };
    for place in places {
        let parent = place.parent().unwrap_or(Path::new("/"));
        let shown_by_root = !isolated
            && !launch.tmpfs.iter().any(|tmpfs| place.starts_with(tmpfs))
            && !configured.iter().any(|mask| place.starts_with(mask));
        let runtime = launch
            .runtime_roots
            .iter()
            .chain(&launch.compatibility_roots);
        let shown_by_runtime = isolated && runtime.clone().any(|root| place.starts_with(root));
        if shown_by_root || shown_by_runtime {
            add(place.clone());
        }
        for grant in grants {
            if grant.source.starts_with(place) {
                return Err(crate::error::policy(format!(
                    "sandbox mount source {} lies in the folder of the network gateways' sockets",
                    grant.source.display()
                )));
            }
            let Ok(rest) = place.strip_prefix(&grant.source) else {
                continue;
            };
            if grant.access.writable() && grant.source != parent {
                return Err(crate::error::policy(format!(
                    "the writable grant {} holds the folder of the network gateways' sockets {}: \
                     grant a directory beneath it instead",
                    grant.source.display(),
                    place.display()
                )));
            }
            add(grant.target.join(rest));
        }
    }
    // A configured mask with no grant bound inside it already hides
    // everything beneath it (and, read-only, could not hold another mount).
    let hidden = |path: &Path| {
        configured.iter().any(|mask| {
            path.starts_with(mask)
                && !grants
                    .iter()
                    .any(|g| g.target != *mask && g.target.starts_with(mask))
        })
    };
    masks.retain(|mask| !hidden(mask));
    Ok(masks)
}

/// The host command of one launch.
#[derive(Debug)]
pub struct HostArgv {
    /// `bwrap`, its options, `--`, the command.
    pub argv: Vec<String>,
    /// Parent descriptors bwrap inherits, in order (the child sees them as
    /// 3, 4, ...): the filter, then the relay helper's bytes.
    pub inherited_fds: Vec<RawFd>,
    /// What bwrap executes inside (the command's first word, or the relay
    /// helper), so its exec failure can be read back (17.4).
    pub program: String,
    /// For the spawn: the launch is held until its port start is lowered
    /// and its nested mounts are checked ([`crate::process::hold`]).
    pub hold: Option<Held>,
    /// The pipes of that hold when this call made them (no relay hold to
    /// share): the caller keeps them open until the spawn returned.
    pub pipes: Option<Pipes>,
}

/// The host facts of [`Options::launch`], except that a grant source's real
/// path is its pin's route (or, beneath a pinned source, that route joined
/// with the rest, lexically); `realpath` only for a source no pin covers.
struct PinnedRoutes<'a> {
    pins: &'a Pins,
    host: &'a dyn HostProbe,
}

impl HostProbe for PinnedRoutes<'_> {
    fn entry(&self, path: &Path) -> super::HostEntry {
        self.host.entry(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.host.is_dir(path)
    }

    fn realpath(&self, path: &Path) -> Option<PathBuf> {
        self.pins.route(path).or_else(|| self.host.realpath(path))
    }
}

/// What `bubblewrap_args` was given; None takes the policy's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgsRequest {
    /// `mounts:`, the grants shown instead of the policy's.
    pub selected: Option<Vec<Grant>>,
    pub environment: Option<Vec<(String, String)>>,
    pub inherit_environment: Option<bool>,
    pub network: Option<NetworkMode>,
}

/// The plan `bubblewrap_args` shows, once the policy's grants are checked
/// against `pins`: exactly the given values, else the policy's; no workspace
/// layer, no double opt-in (the launch methods add those).
pub fn args_plan(
    policy: &Policy,
    policy_grants: Vec<Grant>,
    pins: &Pins,
    cwd: PathBuf,
    given: ArgsRequest,
) -> Result<LaunchPlan> {
    let environment = match given.environment {
        Some(values) => values,
        None => launch::policy_values(&policy.environment)?,
    };
    pins.verify(&policy_grants)?;
    Ok(LaunchPlan {
        environment,
        inherit_environment: given
            .inherit_environment
            .unwrap_or_else(|| policy.environment.inherit()),
        network: given
            .network
            .unwrap_or_else(|| select_network(None, policy.network.as_ref())),
        selected: given.selected.unwrap_or_else(|| policy_grants.clone()),
        policy_grants,
        cwd,
        filter: None,
    })
}

impl Options {
    /// The relay's transparent listeners for the exact allowlist
    /// `destinations` ([`Transparent::plan`]), with a descriptor holding
    /// the sandbox's `/etc/hosts` (the host's own file, after lines naming
    /// the served hosts, with a `localhost` line) when the relay serves
    /// anything, and the pipes that hold the launch until the sandbox's
    /// `ip_unprivileged_port_start` is lowered when one listens below 1024.
    /// Where the sysctl cannot be written at all (a read-only `/proc/sys`, as
    /// in most containers) ports below 1024 are left to the proxy path.
    pub fn transparent(&self, destinations: &[(String, u16)]) -> Result<Served> {
        let mut plan = Transparent::plan(destinations);
        if plan.unprivileged_port_start().is_some() && !low_ports::can_lower() {
            plan = Transparent::plan_serving(destinations, false);
        }
        // With any listener the sandbox gets a hosts file, so `localhost`
        // resolves even where the root it sees has no /etc/hosts.
        if plan.forwards.is_empty() {
            return Ok(Served::default());
        }
        let host_file = std::fs::read_to_string(HOSTS_PATH).unwrap_or_default();
        let text = plan.hosts_file(&host_file);
        let failed =
            |e: std::io::Error| Error::Dependency(format!("cannot prepare {HOSTS_PATH}: {e}"));
        let memfd = rustix::fs::memfd_create("littleghost-hosts", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| failed(e.into()))?;
        let mut file = std::fs::File::from(memfd);
        use std::io::{Seek, Write};
        file.write_all(text.as_bytes()).map_err(failed)?;
        file.rewind().map_err(failed)?;
        let pipes = plan
            .unprivileged_port_start()
            .map(|start| Pipes::new(Some(start)))
            .transpose()
            .map_err(|e| Error::Dependency(format!("cannot prepare the relay's low ports: {e}")))?;
        Ok(Served {
            forwards: plan.forwards,
            hosts: Some(file.into()),
            pipes,
        })
    }

    /// The core launch request of a Bubblewrap launch: UTF-8 paths (they
    /// travel in bwrap's argv), the pins of `open`, the tmpfs directories as
    /// fresh working directories, and the seccomp filter (H.2, H.6).
    pub fn request<'a>(
        &'a self,
        policy: &'a Policy,
        call_inherit: bool,
        cwd: PathBuf,
        pins: &'a Pins,
        allow_subprocesses: bool,
    ) -> LaunchRequest<'a> {
        let mut request = LaunchRequest::new(policy, call_inherit, cwd);
        request.require_utf8_paths = true;
        request.pins = Some(pins);
        request.fresh_directories = &self.tmpfs;
        request.filter = Filter::Seccomp {
            deny_subprocesses: !allow_subprocesses,
            uid: self.uid,
            gid: self.gid,
        };
        request
    }

    /// The bwrap launch of `plan` under `policy`: the plan's grants with
    /// their execution overlays, the configured masks plus the scope's,
    /// these options, and the workspace paths (a tmpfs holding one is not a
    /// valid cwd, B.7). Where a grant's directory is, for overlays and
    /// masks, is the route its pin was reached by at `open`, never a
    /// `realpath` taken now: beneath a writable grant a concurrent session
    /// can make a path lead elsewhere for a moment ([`PinnedRoutes`]).
    pub fn launch(
        &self,
        policy: &Policy,
        plan: &LaunchPlan,
        workspace_paths: Vec<PathBuf>,
        (pins, host): (&Pins, &dyn HostProbe),
    ) -> Result<Launch> {
        let routed = PinnedRoutes { pins, host };
        let host: &dyn HostProbe = &routed;
        let root_filesystem = RootFilesystem::parse(policy.root_filesystem.name())
            .ok_or_else(|| Error::Policy("unsupported root_filesystem".into()))?;
        let grants = launch_grants(&plan.selected, &plan.policy_grants, host);
        let mut launch = Launch::new(root_filesystem, grants, plan.cwd.clone());
        launch.masks = self.masks.clone();
        for mask in scope_masks(&plan.policy_grants, &launch.grants, host) {
            if !launch.masks.contains(&mask) {
                launch.masks.push(mask);
            }
        }
        launch.tmpfs = self.tmpfs.clone();
        launch.runtime_roots = self.runtime_roots.clone();
        launch.proc_mount = self.proc_mount.clone();
        launch.workspace_paths = workspace_paths;
        launch.environment = plan.environment.clone();
        launch.inherit_environment = plan.inherit_environment;
        launch.network = plan.network;
        launch.uid = self.uid;
        launch.gid = self.gid;
        launch.tmpfs_size = self.tmpfs_size;
        Ok(launch)
    }

    /// Binds every grant of `launch` from its handle. Each grant's
    /// [`Anchor`] comes from `pins` (checked current, or derived by a walk
    /// from the pinned grant containing it); bwrap inherits them, after the
    /// seccomp filter when there is one, and binds with `--bind-fd` /
    /// `--ro-bind-fd`. A destination (bind or mask) beneath a writable bind
    /// must be a real directory, reached from that bind's handle with no
    /// symlink, or the launch is refused: bwrap resolves destinations inside
    /// the new root, where a child could have planted a link. Because a
    /// concurrent session can still exchange a directory on that path after
    /// this check, every such destination also becomes one of
    /// `launch.checked_mounts`, which the held launch checks from the host
    /// once bwrap has mounted it ([`crate::process::mount_check`]). Returns
    /// the anchors in the order bwrap inherits them.
    pub fn bind_from(&self, launch: &mut Launch, pins: &Pins, filter: bool) -> Result<Vec<Anchor>> {
        let mut anchors: Vec<Anchor> = Vec::new();
        let mut bound: Vec<(&Grant, Anchor)> = Vec::new();
        let mut bind_fds = Vec::new();
        for grant in &launch.grants {
            let anchor = pins.anchor_for(&grant.source)?;
            let fd = SpawnOptions::child_fd(usize::from(filter) + anchors.len());
            bind_fds.push((grant.source.clone(), fd));
            anchors.push(anchor.clone());
            bound.push((grant, anchor));
        }
        let destinations = launch
            .grants
            .iter()
            .map(|g| g.target.clone())
            .chain(launch.masks.iter().cloned());
        for destination in destinations {
            for (outer, anchor) in bound.iter().filter(|(g, _)| g.access.writable()) {
                let Some(relative) = crate::paths::remainder(&destination, &outer.target) else {
                    continue;
                };
                if relative.as_os_str().is_empty() {
                    continue;
                }
                let inside = anchor.path().join(relative);
                if !matches!(anchor.derive(&inside), Some(Ok(_))) {
                    return Err(Error::Policy(format!(
                        "{DESTINATION_NOT_DIRECTORY}: {} (beneath the writable mount {})",
                        destination.display(),
                        outer.target.display()
                    )));
                }
            }
        }
        let mut checked = Vec::new();
        let writable_root = launch.root_filesystem == RootFilesystem::ReadWrite;
        let nested = |path: &Path| {
            (writable_root && path != Path::new("/"))
                || bound.iter().any(|(outer, _)| {
                    outer.access.writable()
                        && path != outer.target
                        && path.starts_with(&outer.target)
                })
        };
        for (grant, anchor) in bound.iter().filter(|(g, _)| nested(&g.target)) {
            let (dev, ino) = anchor.id();
            checked.push(ExpectedMount {
                path: grant.target.clone(),
                kind: MountKind::Bind { dev, ino },
                read_only: !grant.access.writable(),
            });
        }
        for mask in launch.masks.iter().filter(|m| nested(m)) {
            let covered = |e: &ExpectedMount| e.path == *mask;
            if !checked.iter().any(covered) {
                checked.push(ExpectedMount {
                    path: mask.clone(),
                    kind: MountKind::Tmpfs,
                    read_only: true,
                });
            }
        }
        launch.bind_fds = bind_fds;
        launch.checked_mounts = checked;
        Ok(anchors)
    }

    /// B.8 and B.10 (4): the host argv running `command` in `launch`; with a
    /// `filter` (a parent descriptor), bwrap reads it from the child's first
    /// inherited descriptor; the grants' `handles` (parent descriptors, in
    /// [`Options::bind_from`]'s order, which numbered them right after the
    /// filter) come next; with a `relay` (required under `:allowlist`) the
    /// relay helper's copy, inherited last, runs the command and the
    /// gateway's mounts are bound read-only. Every word must be UTF-8: a
    /// lossy one would bind or mask a different path.
    pub fn host_argv(
        &self,
        mut launch: Launch,
        mut command: Vec<String>,
        relay: Option<Relay>,
        (filter, handles): (Option<RawFd>, &[RawFd]),
        host: &dyn HostProbe,
    ) -> Result<HostArgv> {
        let mut inherited_fds = Vec::new();
        let mut hold = None;
        if let Some(fd) = filter {
            launch.seccomp_fd = Some(SpawnOptions::child_fd(inherited_fds.len()));
            inherited_fds.push(fd);
        }
        if handles.len() != launch.bind_fds.len() {
            return Err(Error::Argument(
                "every bound grant needs exactly one handle".into(),
            ));
        }
        inherited_fds.extend_from_slice(handles);
        launch.gateway_masks = gateway_masks(&launch)?;
        match relay {
            Some(relay) => {
                for (fd, target) in relay.handles {
                    let data = SpawnOptions::child_fd(inherited_fds.len());
                    launch.gateway_binds.push((data, target));
                    inherited_fds.push(fd);
                }
                command = relay_argv(
                    Path::new(RELAY_PATH),
                    &relay.socket,
                    &relay.forwards,
                    command,
                )?;
                launch.extra_ro_binds = relay.binds;
                let data = SpawnOptions::child_fd(inherited_fds.len());
                launch.executable_data = Some((data, PathBuf::from(RELAY_PATH)));
                inherited_fds.push(relay.data);
                for (fd, target) in relay.trust {
                    let data = SpawnOptions::child_fd(inherited_fds.len());
                    launch.trust_binds.push((data, target));
                    inherited_fds.push(fd);
                }
                if let Some(hosts) = relay.hosts {
                    let data = SpawnOptions::child_fd(inherited_fds.len());
                    launch.hosts_data = Some((data, PathBuf::from(HOSTS_PATH)));
                    inherited_fds.push(hosts);
                }
                hold = relay.hold;
            }
            None if launch.network == NetworkMode::Allowlist => {
                return Err(Error::Dependency("the network gateway is not open".into()))
            }
            None => {}
        }
        // Held to lower its ports (the relay's pipes), or to check its
        // nested mounts (pipes of its own); otherwise bwrap runs unheld.
        let mut pipes = None;
        if hold.is_none() && !launch.checked_mounts.is_empty() {
            let made = Pipes::new(None).map_err(|e| {
                Error::Dependency(format!(
                    "cannot prepare the check of the sandbox's mounts: {e}"
                ))
            })?;
            hold = Some(made.hold());
            pipes = Some(made);
        }
        let held = hold.map(|hold| {
            let info = SpawnOptions::child_fd(inherited_fds.len());
            inherited_fds.push(hold.info);
            let block = SpawnOptions::child_fd(inherited_fds.len());
            inherited_fds.push(hold.block);
            launch.hold_fds = Some((info, block));
            Held {
                block,
                mounts: launch.checked_mounts.clone(),
                ..hold.spawner
            }
        });
        let options = bubblewrap_args(&launch, host)?;
        let not_utf8 = || Error::Argument("bubblewrap executable path must be valid UTF-8".into());
        self.executable.to_str().ok_or_else(not_utf8)?;
        // The absolute path `open` resolved and checked (B.2); never looked up again.
        let resolved = super::executable::resolved(&self.executable).ok_or_else(|| {
            Error::Dependency(format!(
                "Bubblewrap at {} has not been checked in this process (open the sandbox first)",
                self.executable.display()
            ))
        })?;
        let executable = resolved.path.to_str().ok_or_else(not_utf8)?;
        let mut argv = vec![executable.to_owned()];
        // The runner takes UTF-8 argv; a lossy conversion would bind or mask a
        // different path (a mask on a renamed twin leaves the real one visible).
        for option in options {
            let option = option
                .into_string()
                .map_err(|_| Error::Policy(MOUNT_PATH_NOT_UTF8.into()))?;
            argv.push(option);
        }
        argv.push("--".into());
        let program = command.first().cloned().unwrap_or_default();
        argv.extend(command);
        Ok(HostArgv {
            argv,
            inherited_fds,
            program,
            hold: held,
            pipes,
        })
    }
}
