//! One launch plan (16.4, 16.5, 17.6, B.7, B.10, H.2): what every backend's
//! `execute_program`/`start_program` asks for first. The binding converts
//! Ruby values into a [`LaunchRequest`]; [`plan`] applies the rules (network
//! selection, mount paths, environment merge and opt-in, pinned grant
//! identities, the working directory, the seccomp filter) and returns the
//! [`LaunchPlan`] the backend wraps (bwrap argv, sandbox-exec, or nothing).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::backend::seccomp;
use crate::error::{argument, policy, tool, Result};
use crate::fs::anchor::{Anchor, Anchors};
use crate::grants::Grant;
use crate::policy::{EnvironmentPolicy, NetworkPolicy, Policy, Unenforceable};

#[cfg(test)]
pub(crate) mod fake_workspace;
pub mod prepare;
pub mod transparent;
pub mod trust_store;
pub use crate::scope::NetworkMode;
pub use transparent::{Forward, Transparent};

/// A policy grant changed between `open` and a launch (16.5 step 2).
pub const SOURCE_CHANGED: &str = "sandbox mount source changed after opening";
/// A policy grant's source is gone when it is pinned.
pub const SOURCE_UNAVAILABLE: &str = "sandbox mount source is unavailable";
/// A mount path the UTF-8 runner cannot carry.
pub const MOUNT_PATH_NOT_UTF8: &str = "sandbox mount path must be valid UTF-8";
/// The working directory does not exist (every backend's wording).
pub const CWD_NOT_AVAILABLE: &str = "Working directory is not available";
/// The `PATH` a launch gets when neither the host environment (17.6) nor a
/// layer of the 16.4 merge sets one (17.5): the system directories of the
/// isolated root, in the order Debian's login shells use.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Where the relay listens inside the sandbox's network namespace (G.5).
pub const RELAY_PROXY_URL: &str = "http://127.0.0.1:3128";

/// The handles of the policy grants, taken at `open` (16.5 step 2):
/// each grant source with the [`Anchor`] it is reached through from then on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins(Vec<(PathBuf, Anchor)>);

impl Pins {
    /// Pins every grant source with no workspace handles to start from
    /// (a duck-typed workspace): each source's real path, opened now.
    pub fn capture(grants: &[Grant]) -> Result<Pins> {
        Pins::capture_from(grants, None)
    }

    /// Pins every grant source through the open workspace's `anchors` (the
    /// one a source names, or one derived by a walk from the anchor that
    /// contains it); a source no anchor covers is pinned by its real path. A
    /// source that cannot be reached, or is no longer the directory its
    /// anchor holds, is a PolicyError.
    pub fn capture_from(grants: &[Grant], anchors: Option<&Anchors>) -> Result<Pins> {
        let mut pins = Vec::with_capacity(grants.len());
        for grant in grants {
            let anchor = match anchors.and_then(|a| a.for_source(&grant.source)) {
                Some(Ok(anchor)) => anchor,
                Some(Err(error)) => return Err(error.into()),
                None => Anchor::pin(&grant.source).ok_or_else(|| policy(SOURCE_UNAVAILABLE))?,
            };
            if !anchor.is_current() {
                let gone = std::fs::symlink_metadata(&grant.source).is_err();
                return Err(policy(if gone {
                    SOURCE_UNAVAILABLE
                } else {
                    SOURCE_CHANGED
                }));
            }
            pins.push((grant.source.clone(), anchor));
        }
        Ok(Pins(pins))
    }

    /// Every grant is pinned and its route still leads, with no symlink, to
    /// the pinned directory (not renamed, replaced or swapped since `open`).
    /// A grant no pin names (a `protect:` path created since `open`, which
    /// the policy now keeps read-only) must be reachable by a walk from the
    /// pinned grant containing it.
    pub fn verify(&self, grants: &[Grant]) -> Result<()> {
        for grant in grants {
            match self.anchor(&grant.source) {
                Some(anchor) if anchor.is_current() => {}
                Some(_) => return Err(policy(SOURCE_CHANGED)),
                None => {
                    self.anchor_for(&grant.source)
                        .map_err(|_| policy(SOURCE_CHANGED))?;
                }
            }
        }
        Ok(())
    }

    /// Where `source` is by the routes the pins were reached by at `open`:
    /// its own pin's, or the longest pinned source containing it with the
    /// rest joined lexically (never resolved now). None beneath no pin.
    pub fn route(&self, source: &Path) -> Option<PathBuf> {
        self.0
            .iter()
            .filter_map(|(pinned, anchor)| {
                let rest = crate::paths::remainder(source, pinned)?;
                Some((pinned.as_os_str().len(), anchor.path().join(rest)))
            })
            .max_by_key(|(length, _)| *length)
            .map(|(_, route)| crate::paths::clean(&route))
    }

    fn anchor(&self, source: &Path) -> Option<&Anchor> {
        self.0
            .iter()
            .find(|(pinned, _)| pinned == source)
            .map(|(_, anchor)| anchor)
    }

    /// The handle a launch grant with `source` is bound or granted through:
    /// a pinned one (checked current), or one derived by walking from the
    /// pinned anchor that contains it (a narrowed scope, an execution
    /// overlay). A source beneath no pin is refused: nothing is ever granted
    /// by a path string.
    pub fn anchor_for(&self, source: &Path) -> Result<Anchor> {
        let anchor = match self.anchor(source) {
            Some(anchor) => anchor.clone(),
            // Only a grant no pin names needs the containing anchor's walk.
            None => Anchors::new(self.0.iter().map(|(_, a)| a.clone()).collect())
                .for_source(source)
                .ok_or_else(|| policy(SOURCE_UNAVAILABLE))??,
        };
        if anchor.is_current() {
            Ok(anchor)
        } else {
            Err(policy(SOURCE_CHANGED))
        }
    }
}

/// How the backend treats a launch's subprocesses (H.2, H.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// No seccomp filter at all (Unrestricted, Seatbelt).
    Off,
    /// The launch filter of `seccomp.rs`; `deny_subprocesses` when the scope or the call forbids them.
    Seccomp {
        deny_subprocesses: bool,
        uid: Option<u32>,
        gid: Option<u32>,
    },
}

/// Everything one launch is decided from, already converted from Ruby.
#[derive(Debug, Clone)]
pub struct LaunchRequest<'a> {
    /// The effective policy's environment: its values come second in the
    /// merge (after the workspace's, before the call's), its `inherit` is the
    /// second opt-in.
    pub policy_environment: &'a EnvironmentPolicy,
    /// The call's `inherit_environment:` (the first opt-in).
    pub call_inherit: bool,
    /// The scope's network, when the launch has a scope that sets one.
    pub scope_network: Option<NetworkMode>,
    /// The effective policy's network (None: the backend's secure default, `:none`).
    pub policy_network: Option<&'a NetworkPolicy>,
    /// `effective_policy.process_grants(workspace)`.
    pub policy_grants: Vec<Grant>,
    /// The scope's grants, when the launch has a scope.
    pub selected: Option<Vec<Grant>>,
    /// Paths are carried by a UTF-8 argv and environment (bwrap).
    pub require_utf8_paths: bool,
    /// The pins taken at `open`; None when the backend does not pin.
    pub pins: Option<&'a Pins>,
    /// The resolved working directory (host path).
    pub cwd: PathBuf,
    /// Directories that are valid working directories without existing on the host (bwrap's tmpfs).
    pub fresh_directories: &'a [PathBuf],
    pub filter: Filter,
    /// The open gateway's `environment` when the backend has one (G.2);
    /// None refuses `:allowlist` (the backend cannot enforce it).
    pub gateway_environment: Option<Vec<(String, String)>>,
}

impl<'a> LaunchRequest<'a> {
    /// A request under `policy` with nothing backend-specific: no grants, no
    /// scope, no pins, no filter, no gateway (`:allowlist` refused).
    pub fn new(policy: &'a Policy, call_inherit: bool, cwd: PathBuf) -> LaunchRequest<'a> {
        LaunchRequest {
            policy_environment: &policy.environment,
            call_inherit,
            scope_network: None,
            policy_network: policy.network.as_ref(),
            policy_grants: Vec::new(),
            selected: None,
            require_utf8_paths: false,
            pins: None,
            cwd,
            fresh_directories: &[],
            filter: Filter::Off,
            gateway_environment: None,
        }
    }
}

/// What a backend wraps: the decided environment, network, grants and filter.
#[derive(Debug)]
pub struct LaunchPlan {
    /// The child's variables in merge order (16.4).
    pub environment: Vec<(String, String)>,
    /// The host environment is inherited (17.6: call and policy both opted in).
    pub inherit_environment: bool,
    pub network: NetworkMode,
    pub policy_grants: Vec<Grant>,
    /// The grants of this launch: the scope's, or the policy's.
    pub selected: Vec<Grant>,
    pub cwd: PathBuf,
    /// The seccomp program, when one applies; it must outlive the spawn.
    pub filter: Option<OwnedFd>,
}

/// The caller's environment layers, converted when the plan asks for them:
/// (workspace variables, call variables). A conversion error is the caller's.
pub type Layers = (Vec<(String, String)>, Vec<(String, String)>);

/// Applies the launch rules to `request` in the order the errors are
/// promised; `layers` converts the workspace and call environments (its
/// error type `E` is the caller's, `core_error` maps this module's into it).
pub fn plan<E>(
    request: LaunchRequest<'_>,
    layers: impl FnOnce() -> std::result::Result<Layers, E>,
    core_error: impl Fn(crate::Error) -> E,
) -> std::result::Result<LaunchPlan, E> {
    let network = select_network(request.scope_network, request.policy_network);
    let gateway = match (network, request.gateway_environment) {
        (NetworkMode::Allowlist, None) => {
            return Err(core_error(Unenforceable::AllowlistWithoutGateway.into()))
        }
        (NetworkMode::Allowlist, Some(gateway)) => {
            let allow = request
                .policy_network
                .map(|n| n.destinations())
                .unwrap_or_default();
            // The host's trust roots, beneath the gateway's: an inspecting
            // gateway's bundle (those roots plus its CA) replaces them.
            let trust = trust_store::environment();
            merge_environment(&[&proxy_environment(&allow), &trust, &gateway])
        }
        _ => Vec::new(),
    };
    if request.require_utf8_paths {
        let grants = request.policy_grants.iter();
        require_utf8_paths(grants.chain(request.selected.iter().flatten())).map_err(&core_error)?;
    }
    let (workspace, call) = layers()?;
    let policy = policy_values(request.policy_environment).map_err(&core_error)?;
    let inherit_environment =
        inherits_environment(request.call_inherit, request.policy_environment);
    // B.10 (2): the gateway's variables sit beneath the 16.4 merge, and the
    // default PATH (17.5) beneath everything: a caller's PATH always wins.
    let environment = merge_environment(&[&gateway, &workspace, &policy, &call]);
    let environment = with_default_path(environment, inherit_environment);
    let filter = launch_filter(request.filter).map_err(&core_error)?;
    if let Some(pins) = request.pins {
        pins.verify(&request.policy_grants).map_err(&core_error)?;
    }
    require_directory(&request.cwd, request.fresh_directories).map_err(&core_error)?;
    let selected = request
        .selected
        .unwrap_or_else(|| request.policy_grants.clone());
    Ok(LaunchPlan {
        environment,
        inherit_environment,
        network,
        policy_grants: request.policy_grants,
        selected,
        cwd: request.cwd,
        filter,
    })
}

/// The scope's network when it sets one, else the policy's, else `:none` (16.1).
pub fn select_network(scope: Option<NetworkMode>, policy: Option<&NetworkPolicy>) -> NetworkMode {
    scope
        .or_else(|| policy.and_then(|p| NetworkMode::parse(p.mode.name())))
        .unwrap_or(NetworkMode::None)
}

/// G.5: the child's proxy variables under `:allowlist` (the relay's
/// address); the gateway's, the workspace's, the policy's and the call's
/// values override them. `NO_PROXY` keeps the sandbox's own loopback direct
/// (`localhost,127.0.0.1`), except a loopback name the allowlist itself
/// names: `localhost:8080` allowed means the host's service, reached through
/// the gateway, so a client must not try the sandbox's empty loopback first.
pub fn proxy_environment(allow: &[String]) -> Vec<(String, String)> {
    let proxy = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .map(|name| (name.to_string(), RELAY_PROXY_URL.to_string()));
    // A host some entry names, or whose address an IP-network entry covers
    // ("127.0.0.0/8:*"), goes through the gateway.
    let allowed_host = |name: &str| {
        allow.iter().any(|entry| {
            entry.rsplit_once(':').is_some_and(|(host, _)| host == name)
                || crate::network::Pattern::parse(entry).is_ok_and(|pattern| {
                    let port = match pattern.port {
                        crate::network::PortPattern::Exact(port) => port,
                        crate::network::PortPattern::Any => 1,
                    };
                    crate::network::Destination::parse(&format!("{name}:{port}"), None)
                        .is_ok_and(|destination| pattern.matches(&destination))
                })
        })
    };
    let direct = ["localhost", "127.0.0.1"]
        .into_iter()
        .filter(|name| !allowed_host(name))
        .collect::<Vec<_>>()
        .join(",");
    let direct = ["NO_PROXY", "no_proxy"].map(|name| (name.to_string(), direct.clone()));
    // Node.js reads the proxy variables only when told to (22.21+, 24+);
    // older releases ignore this one.
    let node = ("NODE_USE_ENV_PROXY".to_string(), "1".to_string());
    proxy.into_iter().chain(direct).chain([node]).collect()
}

/// G.5: `command` run by the relay helper, which listens on the proxy
/// address inside the network namespace before it starts the command and
/// joins each connection to the gateway socket `socket` (an in-sandbox path).
/// Each of `forwards` ([`transparent`]) is one more listener whose
/// connections go through the gateway as `CONNECT` to its destination.
pub fn relay_argv(
    helper: &Path,
    socket: &Path,
    forwards: &[Forward],
    command: Vec<String>,
) -> Result<Vec<String>> {
    let text = |path: &Path| {
        path.to_str()
            .map(str::to_owned)
            .ok_or_else(|| policy(MOUNT_PATH_NOT_UTF8))
    };
    let mut argv = vec![
        text(helper)?,
        "relay".into(),
        "--socket".into(),
        text(socket)?,
    ];
    for forward in forwards {
        argv.push("--forward".into());
        argv.push(forward.argument());
    }
    argv.push("--".into());
    argv.extend(command);
    Ok(argv)
}

/// 16.4: workspace, then policy, then call; a later value replaces an earlier one in place.
pub fn merge_environment(layers: &[&[(String, String)]]) -> Vec<(String, String)> {
    let mut merged: Vec<(String, String)> = Vec::new();
    for (name, value) in layers.iter().flat_map(|layer| layer.iter()) {
        match merged.iter_mut().find(|(existing, _)| existing == name) {
            Some(slot) => slot.1 = value.clone(),
            None => merged.push((name.clone(), value.clone())),
        }
    }
    merged
}

/// 17.5: a child whose environment sets no `PATH` gets [`DEFAULT_PATH`], so
/// a program that runs others by name (`gem env`, a shell script) finds
/// them. An inherited host environment keeps its own `PATH` (17.6).
fn with_default_path(
    mut environment: Vec<(String, String)>,
    inherit_environment: bool,
) -> Vec<(String, String)> {
    let inherited = inherit_environment && std::env::var_os("PATH").is_some();
    if !inherited && !environment.iter().any(|(name, _)| name == "PATH") {
        environment.insert(0, ("PATH".to_string(), DEFAULT_PATH.to_string()));
    }
    environment
}

/// 17.6: the host environment is inherited only when the call **and** the policy opt in.
pub fn inherits_environment(call: bool, policy: &EnvironmentPolicy) -> bool {
    call && policy.inherit()
}

/// The policy's variables as text (the runner takes UTF-8).
pub fn policy_values(environment: &EnvironmentPolicy) -> Result<Vec<(String, String)>> {
    let text = |bytes: &[u8], what: &str| {
        String::from_utf8(bytes.to_vec())
            .map_err(|_| argument(format!("{what} must be valid UTF-8")))
    };
    environment
        .values()
        .iter()
        .map(|(name, value)| {
            Ok((
                text(name, "environment names")?,
                text(value, "environment values")?,
            ))
        })
        .collect()
}

/// Workspace paths become bind paths and environment values, and the runner
/// takes UTF-8: a path it cannot carry is refused as the mount problem it is.
fn require_utf8_paths<'a>(grants: impl Iterator<Item = &'a Grant>) -> Result<()> {
    let mut paths = grants.flat_map(|g| [&g.source, &g.target]);
    if paths.any(|p| p.to_str().is_none()) {
        return Err(policy(MOUNT_PATH_NOT_UTF8));
    }
    Ok(())
}

/// B.7: the working directory exists, or is one of the fresh (tmpfs) directories.
pub fn require_directory(cwd: &Path, fresh: &[PathBuf]) -> Result<()> {
    if cwd.is_dir() || fresh.iter().any(|f| f == cwd) {
        Ok(())
    } else {
        Err(tool(CWD_NOT_AVAILABLE))
    }
}

/// H.2: every bwrap child runs under one filter. Where no filter exists for
/// this architecture only a promised subprocess denial is refused.
fn launch_filter(filter: Filter) -> Result<Option<OwnedFd>> {
    let Filter::Seccomp {
        deny_subprocesses,
        uid,
        gid,
    } = filter
    else {
        return Ok(None);
    };
    let rules = seccomp::Filter::for_launch(deny_subprocesses, uid, gid);
    match seccomp::filter_fd(&rules) {
        Ok(fd) => Ok(Some(fd)),
        Err(_) if !deny_subprocesses => Ok(None),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::grants::Access;
    use crate::policy::{Given, NetworkRequest};

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn grant(path: &Path) -> Grant {
        Grant {
            source: path.to_path_buf(),
            target: path.to_path_buf(),
            access: Access::ReadOnly,
            tools: true,
            protect_aliases: true,
        }
    }

    fn request<'a>(environment: &'a EnvironmentPolicy, cwd: &Path) -> LaunchRequest<'a> {
        LaunchRequest {
            policy_environment: environment,
            call_inherit: false,
            scope_network: None,
            policy_network: None,
            policy_grants: vec![grant(cwd)],
            selected: None,
            require_utf8_paths: true,
            pins: None,
            cwd: cwd.to_path_buf(),
            fresh_directories: &[],
            filter: Filter::Off,
            gateway_environment: None,
        }
    }

    /// The plan with the test's workspace and call layers.
    fn plan(request: LaunchRequest<'_>) -> Result<LaunchPlan> {
        let layers = || {
            Ok((
                pairs(&[("LITTLE_GHOST_WORKSPACE_ROOT", "/w"), ("A", "w")]),
                pairs(&[("B", "call")]),
            ))
        };
        super::plan(request, layers, |e| e)
    }

    fn policy_environment(inherit: bool) -> EnvironmentPolicy {
        EnvironmentPolicy::new(
            inherit,
            [
                (b"A".to_vec(), b"policy".to_vec()),
                (b"B".to_vec(), b"policy".to_vec()),
            ],
        )
    }

    #[test]
    fn merges_workspace_policy_then_call_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let environment = policy_environment(false);
        let plan = plan(request(&environment, dir.path())).unwrap();
        assert_eq!(
            plan.environment,
            pairs(&[
                ("PATH", DEFAULT_PATH),
                ("LITTLE_GHOST_WORKSPACE_ROOT", "/w"),
                ("A", "policy"),
                ("B", "call")
            ])
        );
    }

    #[test]
    fn the_default_path_yields_to_a_layer_and_to_an_inherited_host_path() {
        let set = |layer: Vec<(String, String)>| {
            with_default_path(merge_environment(&[&pairs(&[("A", "1")]), &layer]), false)
        };
        assert_eq!(
            set(Vec::new()),
            pairs(&[("PATH", DEFAULT_PATH), ("A", "1")])
        );
        assert_eq!(
            set(pairs(&[("PATH", "/opt/bin")])),
            pairs(&[("A", "1"), ("PATH", "/opt/bin")])
        );
        // The test process has a PATH: inheriting it adds nothing.
        assert!(std::env::var_os("PATH").is_some());
        assert_eq!(with_default_path(Vec::new(), true), Vec::new());
    }

    #[test]
    fn inherits_only_when_call_and_policy_opt_in() {
        let dir = tempfile::tempdir().unwrap();
        for (call, policy, expected) in [
            (false, false, false),
            (true, false, false),
            (false, true, false),
            (true, true, true),
        ] {
            let environment = policy_environment(policy);
            let mut request = request(&environment, dir.path());
            request.call_inherit = call;
            assert_eq!(plan(request).unwrap().inherit_environment, expected);
        }
    }

    #[test]
    fn network_is_the_scopes_then_the_policys_then_none() {
        let inherit = NetworkPolicy::new(NetworkRequest::mode(Given::symbol("inherit"))).unwrap();
        assert_eq!(select_network(None, None), NetworkMode::None);
        assert_eq!(select_network(None, Some(&inherit)), NetworkMode::Inherit);
        assert_eq!(
            select_network(Some(NetworkMode::None), Some(&inherit)),
            NetworkMode::None
        );
    }

    #[test]
    fn allowlist_needs_a_gateway_whose_variables_sit_beneath() {
        let dir = tempfile::tempdir().unwrap();
        let environment = policy_environment(false);
        let mut request = request(&environment, dir.path());
        request.scope_network = Some(NetworkMode::Allowlist);
        assert_eq!(
            plan(request.clone()).unwrap_err(),
            Unenforceable::AllowlistWithoutGateway.into()
        );
        request.gateway_environment = Some(pairs(&[("NO_PROXY", "gw"), ("A", "gw")]));
        let planned = plan(request.clone()).unwrap();
        let value = |name: &str| {
            planned
                .environment
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(value("HTTPS_PROXY").as_deref(), Some(RELAY_PROXY_URL));
        assert_eq!(value("all_proxy").as_deref(), Some(RELAY_PROXY_URL));
        assert_eq!(value("no_proxy").as_deref(), Some("localhost,127.0.0.1"));
        assert_eq!(value("NO_PROXY").as_deref(), Some("gw"));
        assert_eq!(value("NODE_USE_ENV_PROXY").as_deref(), Some("1"));
        assert_eq!(value("A").as_deref(), Some("policy"));
        // A loopback name the allowlist names is the host's service: not direct.
        let allow = ["localhost:8080".to_string()];
        let direct = |vars: Vec<(String, String)>| {
            vars.into_iter()
                .find(|(n, _)| n == "no_proxy")
                .map(|(_, v)| v)
        };
        assert_eq!(
            direct(proxy_environment(&allow)).as_deref(),
            Some("127.0.0.1")
        );
        let both = ["localhost:1".to_string(), "127.0.0.1:2".to_string()];
        assert_eq!(direct(proxy_environment(&both)).as_deref(), Some(""));
        // An IP network covering 127.0.0.1 sends it through the gateway too (any port, or the entry's).
        let network = ["127.0.0.0/8:*".to_string()];
        assert_eq!(
            direct(proxy_environment(&network)).as_deref(),
            Some("localhost")
        );
        let port = ["127.0.0.0/8:8080".to_string()];
        assert_eq!(
            direct(proxy_environment(&port)).as_deref(),
            Some("localhost")
        );
        let other = ["10.0.0.0/8:*".to_string(), "*.localhost:1".to_string()];
        assert_eq!(
            direct(proxy_environment(&other)).as_deref(),
            Some("localhost,127.0.0.1")
        );
        // Narrowed to :none, the gateway adds nothing.
        request.scope_network = Some(NetworkMode::None);
        let planned = plan(request).unwrap();
        assert!(!planned.environment.iter().any(|(n, _)| n == "HTTP_PROXY"));
    }

    #[test]
    fn the_relay_wraps_the_command() {
        let argv = relay_argv(
            Path::new("/h/helper"),
            Path::new("/tmp/g/proxy.sock"),
            &[],
            vec!["/bin/true".into()],
        )
        .unwrap();
        assert_eq!(
            argv,
            [
                "/h/helper",
                "relay",
                "--socket",
                "/tmp/g/proxy.sock",
                "--",
                "/bin/true"
            ]
        );
        let forward = Forward::parse("127.80.0.1:443=example.com:443").unwrap();
        let argv = relay_argv(
            Path::new("/h/helper"),
            Path::new("/s"),
            &[forward],
            vec!["/bin/true".into()],
        )
        .unwrap();
        assert_eq!(
            argv[4..],
            [
                "--forward",
                "127.80.0.1:443=example.com:443",
                "--",
                "/bin/true"
            ]
        );
    }

    #[test]
    fn refuses_a_mount_path_that_is_not_utf8() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let environment = policy_environment(false);
        let mut request = request(&environment, dir.path());
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/\xff"));
        request.selected = Some(vec![grant(&odd)]);
        assert_eq!(
            plan(request).unwrap_err(),
            Error::Policy(MOUNT_PATH_NOT_UTF8.into())
        );
    }

    #[test]
    fn a_missing_working_directory_is_a_tool_error_unless_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let environment = policy_environment(false);
        let mut request = request(&environment, dir.path());
        request.cwd = missing.clone();
        assert_eq!(
            plan(request.clone()).unwrap_err(),
            Error::Tool(CWD_NOT_AVAILABLE.into())
        );
        let fresh = [missing];
        request.fresh_directories = &fresh;
        assert!(plan(request).is_ok());
    }

    #[test]
    fn pins_detect_a_swapped_source() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("src");
        std::fs::create_dir(&source).unwrap();
        let grants = vec![grant(&source)];
        let pins = Pins::capture(&grants).unwrap();
        assert!(pins.verify(&grants).is_ok());
        std::fs::rename(&source, dir.path().join("old")).unwrap();
        std::fs::create_dir(&source).unwrap();
        assert_eq!(
            pins.verify(&grants).unwrap_err(),
            Error::Policy(SOURCE_CHANGED.into())
        );
        let environment = policy_environment(false);
        let mut request = request(&environment, dir.path());
        request.policy_grants = grants;
        request.pins = Some(&pins);
        assert_eq!(
            plan(request).unwrap_err(),
            Error::Policy(SOURCE_CHANGED.into())
        );
        assert_eq!(
            Pins::capture(&[grant(&dir.path().join("gone"))]).unwrap_err(),
            Error::Policy(SOURCE_UNAVAILABLE.into())
        );
    }

    #[test]
    fn the_seccomp_filter_is_chosen_per_launch() {
        let dir = tempfile::tempdir().unwrap();
        let environment = policy_environment(false);
        assert!(plan(request(&environment, dir.path()))
            .unwrap()
            .filter
            .is_none());
        let mut request = request(&environment, dir.path());
        request.filter = Filter::Seccomp {
            deny_subprocesses: true,
            uid: None,
            gid: None,
        };
        let planned = plan(request);
        if seccomp::Arch::native().is_some() {
            assert!(planned.unwrap().filter.is_some());
        } else {
            assert!(planned.is_err());
        }
    }

    #[test]
    fn a_plain_request_takes_the_policy_and_nothing_else() {
        let policy = Policy::default();
        let request = LaunchRequest::new(&policy, true, PathBuf::from("/w"));
        assert!(request.call_inherit);
        assert!(request.policy_network.is_none());
        assert!(request.selected.is_none() && request.pins.is_none());
        assert_eq!(request.filter, Filter::Off);
        assert!(request.gateway_environment.is_none());
    }
}
