//! What each backend enforces, decided from the requested policy (SPEC 15.1,
//! 16.1, SB.2): the effective policy every Rust backend stores at
//! construction, and the features it claims for that policy. Plain data, so
//! the binding only converts.

use crate::error::Result;
use crate::policy::{
    Given, NetworkMode, NetworkPolicy, NetworkRequest, Policy, RootFilesystem, Unenforceable,
};

/// Which backend a policy is settled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Unrestricted,
    Bubblewrap,
    Landlock,
    Seatbelt,
}

/// A network rule of `mode` with nothing else set.
fn plain_network(mode: NetworkMode) -> NetworkPolicy {
    NetworkPolicy::new(NetworkRequest::mode(Given::named(mode.name())))
        .expect("a network of a mode alone is valid")
}

/// The effective policy of `backend` for `requested`:
/// - Unrestricted (15.1): files, runtime paths and environment as requested,
///   the root read-write and the network inherited; a requested network
///   other than `:inherit` cannot be enforced (CapabilityError).
/// - Bubblewrap, Seatbelt (16.1) and Landlock: the requested policy, a
///   missing network meaning `:none`. Landlock enforces `:allowlist` through
///   its supervisor's `connect` interception, where the kernel has it
///   (else CapabilityError naming what is missing).
pub fn effective_policy(backend: Backend, requested: &Policy) -> Result<Policy> {
    let mut policy = requested.clone();
    let mode = requested.network.as_ref().map(|network| network.mode);
    match backend {
        Backend::Unrestricted => {
            if let Some(mode) = mode.filter(|mode| *mode != NetworkMode::Inherit) {
                return Err(Unenforceable::Unrestricted(mode).into());
            }
            policy.root_filesystem = RootFilesystem::ReadWrite;
            policy.network = Some(plain_network(NetworkMode::Inherit));
        }
        Backend::Landlock if mode == Some(NetworkMode::Allowlist) => {
            if let Some(missing) = landlock_allowlist_unavailable() {
                return Err(Unenforceable::LandlockAllowlist { missing }.into());
            }
        }
        Backend::Bubblewrap | Backend::Landlock | Backend::Seatbelt => {
            if policy.network.is_none() {
                policy.network = Some(plain_network(NetworkMode::None));
            }
        }
    }
    Ok(policy)
}

/// Why Landlock cannot enforce `:allowlist` on this host, if it cannot.
fn landlock_allowlist_unavailable() -> Option<String> {
    #[cfg(target_os = "linux")]
    return super::landlock::allowlist_unavailable();
    #[cfg(not(target_os = "linux"))]
    return Some("Landlock is supported only on Linux".into());
}

/// What the host enforces, which some claims depend on.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// The launch limits here (L.3: `memory_limit`, `task_limit`, and
    /// `cpu_limit` or `process_cpu_limit`, see
    /// [`crate::limits::plan::enforced_features`]).
    pub limit_features: Vec<&'static str>,
    /// Launches can own their whole tree in a cgroup (L.2, Unrestricted).
    pub owns_tree: bool,
    /// The seccomp filter exists for this architecture (Bubblewrap).
    pub seccomp: bool,
    /// The kernel lets the Landlock supervisor make a child's connections
    /// (`:allowlist` under Landlock).
    pub connect_interception: bool,
}

/// What a backend claims to enforce: features, network modes, isolation name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub features: Vec<&'static str>,
    pub network_modes: &'static [&'static str],
    pub isolation: &'static str,
}

const FILES: [&str; 4] = [
    "filesystem_read",
    "filesystem_list",
    "filesystem_write",
    "filesystem_replace",
];
const PROCESSES: [&str; 2] = ["process_execute", "process_spawn"];

/// The claims of `backend` (B.3, 15.3, SB.2, LL.1), for its effective
/// `policy` or, without one, for the backend as such (its probe):
/// - Unrestricted: writes only with a writable tool-visible grant; tree
///   ownership where the host gives it; `:inherit` only.
/// - Bubblewrap: tree ownership; subprocess denial where seccomp exists.
/// - Landlock: subprocess denial; tree ownership where the host gives each
///   launch a cgroup (the helper's subreaper alone dies with the helper).
/// - Seatbelt: subprocess denial; no `process_spawn` under an isolated root;
///   no cgroup limits (`cpu_seconds` is per process).
pub fn claims(backend: Backend, policy: Option<&Policy>, host: &Host) -> Claims {
    let mut features: Vec<&'static str> = Vec::new();
    let (network_modes, isolation): (&'static [&'static str], _) = match backend {
        Backend::Unrestricted => {
            features.extend(FILES[..2].iter().chain(&PROCESSES));
            if policy.is_some_and(has_writable_file_grant) {
                features.extend(&FILES[2..]);
            }
            if host.owns_tree {
                features.push("process_tree_ownership");
            }
            (&["inherit"], "none")
        }
        Backend::Bubblewrap => {
            features.extend(FILES.iter().chain(&PROCESSES));
            features.push("process_tree_ownership");
            (&["inherit", "none", "allowlist"], "namespace")
        }
        Backend::Landlock => {
            features.extend(FILES.iter().chain(&PROCESSES));
            // The helper's subreaper ends the tree, but a supervisor killed
            // from outside (SIGKILL, the OOM killer) leaves a `setsid`
            // grandchild behind: only the launch's cgroup holds then.
            if host.owns_tree {
                features.push("process_tree_ownership");
            }
            features.push("process_spawn_denial");
            if host.connect_interception {
                (&["inherit", "none", "allowlist"], "landlock")
            } else {
                (&["inherit", "none"], "landlock")
            }
        }
        Backend::Seatbelt => {
            let isolated = policy.is_some_and(|p| p.root_filesystem == RootFilesystem::Isolated);
            features.extend(FILES.iter().chain(&PROCESSES));
            features.retain(|feature| !(isolated && *feature == "process_spawn"));
            features.push("process_spawn_denial");
            (&["inherit", "none"], "seatbelt")
        }
    };
    if backend == Backend::Seatbelt {
        // No cgroups on macOS: `cpu_seconds` is the per-process RLIMIT_CPU.
        features.push(crate::limits::plan::PROCESS_CPU_LIMIT);
    } else {
        features.extend(&host.limit_features);
    }
    if backend == Backend::Bubblewrap && host.seccomp {
        features.push("process_spawn_denial");
    }
    Claims {
        features,
        network_modes,
        isolation,
    }
}

/// The one rule of W13 lives with the sandbox's rules.
pub use crate::sandbox::has_writable_file_grant;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Access;
    use crate::policy::GrantTable;

    fn with_network(mode: Option<NetworkMode>) -> Policy {
        Policy {
            network: mode.map(plain_network),
            ..Policy::default()
        }
    }

    #[test]
    fn namespace_backends_default_the_network_to_none() {
        for backend in [Backend::Bubblewrap, Backend::Landlock, Backend::Seatbelt] {
            let effective = effective_policy(backend, &with_network(None)).unwrap();
            assert_eq!(effective.network.unwrap().mode, NetworkMode::None);
            let kept = effective_policy(backend, &with_network(Some(NetworkMode::Inherit)));
            assert_eq!(kept.unwrap().network.unwrap().mode, NetworkMode::Inherit);
        }
    }

    #[test]
    fn landlock_keeps_an_allowlist_where_the_kernel_can_intercept_connect() {
        let mut requested = with_network(None);
        let mut allowlist = NetworkRequest::mode(Given::symbol("allowlist"));
        allowlist.allow = vec![crate::policy::AllowRequest::Text("example.com".into())];
        requested.network = Some(NetworkPolicy::new(allowlist).unwrap());
        let landlock = effective_policy(Backend::Landlock, &requested);
        match landlock_allowlist_unavailable() {
            None => assert_eq!(
                landlock.unwrap().network.unwrap().mode,
                NetworkMode::Allowlist
            ),
            Some(missing) => assert!(landlock.unwrap_err().message().contains(&missing)),
        }
        assert!(effective_policy(Backend::Bubblewrap, &requested).is_ok());
    }

    #[test]
    fn unrestricted_inherits_the_network_and_writes_the_root() {
        let requested = Policy {
            files: GrantTable::of(&[("root", Access::ReadWrite)]),
            ..with_network(None)
        };
        let effective = effective_policy(Backend::Unrestricted, &requested).unwrap();
        assert_eq!(effective.root_filesystem, RootFilesystem::ReadWrite);
        assert_eq!(effective.network.unwrap().mode, NetworkMode::Inherit);
        assert_eq!(effective.files, requested.files);
        let refused = effective_policy(
            Backend::Unrestricted,
            &with_network(Some(NetworkMode::None)),
        );
        assert_eq!(
            refused.unwrap_err(),
            Unenforceable::Unrestricted(NetworkMode::None).into()
        );
    }

    #[test]
    fn seatbelt_drops_spawn_under_an_isolated_root() {
        let host = Host::default();
        let isolated = Policy {
            root_filesystem: RootFilesystem::Isolated,
            ..Policy::default()
        };
        let claims = claims(Backend::Seatbelt, Some(&isolated), &host);
        assert!(!claims.features.contains(&"process_spawn"));
        assert!(claims.features.contains(&"process_spawn_denial"));
        let probe = super::claims(Backend::Seatbelt, None, &host);
        assert!(probe.features.contains(&"process_spawn"));
        assert!(probe.features.contains(&"process_cpu_limit"));
        assert!(!probe.features.contains(&"cpu_limit"));
        assert_eq!(probe.isolation, "seatbelt");
    }

    #[test]
    fn unrestricted_claims_writes_only_for_a_writable_grant() {
        let host = Host {
            limit_features: vec!["memory_limit"],
            owns_tree: true,
            seccomp: true,
            connect_interception: false,
        };
        let read_only = claims(Backend::Unrestricted, Some(&Policy::default()), &host);
        assert_eq!(
            read_only.features,
            [
                "filesystem_read",
                "filesystem_list",
                "process_execute",
                "process_spawn",
                "process_tree_ownership",
                "memory_limit"
            ]
        );
        let writable = Policy {
            files: GrantTable::of(&[("root", Access::ReadWrite)]),
            ..Policy::default()
        };
        let claims = claims(Backend::Unrestricted, Some(&writable), &host);
        assert!(claims.features.contains(&"filesystem_write"));
        assert_eq!(claims.network_modes, ["inherit"]);
    }

    #[test]
    fn bubblewrap_claims_spawn_denial_only_with_seccomp() {
        let mut host = Host::default();
        let without = claims(Backend::Bubblewrap, None, &host);
        assert!(!without.features.contains(&"process_spawn_denial"));
        host.seccomp = true;
        let with = claims(Backend::Bubblewrap, None, &host);
        assert_eq!(with.features.last(), Some(&"process_spawn_denial"));
        assert_eq!(with.network_modes, ["inherit", "none", "allowlist"]);
        let landlock = claims(Backend::Landlock, None, &host);
        assert_eq!(landlock.isolation, "landlock");
        assert_eq!(landlock.network_modes, ["inherit", "none"]);
        host.connect_interception = true;
        let landlock = claims(Backend::Landlock, None, &host);
        assert_eq!(landlock.network_modes, ["inherit", "none", "allowlist"]);
    }

    #[test]
    fn landlock_claims_tree_ownership_only_with_a_launch_cgroup() {
        // Without a cgroup the helper's subreaper is the only owner, and a
        // supervisor killed from outside leaves a `setsid` grandchild.
        let mut host = Host::default();
        let without = claims(Backend::Landlock, None, &host);
        assert!(!without.features.contains(&"process_tree_ownership"));
        assert!(without.features.contains(&"process_spawn_denial"));
        host.owns_tree = true;
        let with = claims(Backend::Landlock, None, &host);
        assert!(with.features.contains(&"process_tree_ownership"));
    }

    #[test]
    fn only_tool_visible_grants_make_a_policy_writable() {
        let mut policy = Policy {
            runtime_paths: GrantTable::of(&[("cache", Access::ReadWrite)]),
            ..Policy::default()
        };
        assert!(!has_writable_file_grant(&policy));
        policy.files = GrantTable::of(&[("root", Access::ReadWrite)]);
        assert!(has_writable_file_grant(&policy));
    }
}
