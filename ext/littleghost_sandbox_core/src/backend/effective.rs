//! What each backend enforces, decided from the requested policy (SPEC 15.1,
//! 16.1, SB.2): the effective policy every Rust backend stores at
//! construction, and the features it claims for that policy. Plain data, so
//! the binding only converts.

use crate::error::{capability, Result};
use crate::policy::{Given, NetworkMode, NetworkPolicy, NetworkRequest, Policy, RootFilesystem};

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
    NetworkPolicy::new(NetworkRequest::mode(Given::symbol(mode.name())))
        .expect("a network of a mode alone is valid")
}

/// The effective policy of `backend` for `requested`:
/// - Unrestricted (15.1): files, runtime paths and environment as requested,
///   the root read-write and the network inherited; a requested network
///   other than `:inherit` cannot be enforced (CapabilityError).
/// - Bubblewrap, Seatbelt (16.1) and Landlock: the requested policy, a
///   missing network meaning `:none`. Landlock confines TCP by port only, so
///   it refuses `:allowlist` (CapabilityError).
pub fn effective_policy(backend: Backend, requested: &Policy) -> Result<Policy> {
    let mut policy = requested.clone();
    let mode = requested.network.as_ref().map(|network| network.mode);
    match backend {
        Backend::Unrestricted => {
            if let Some(mode) = mode.filter(|mode| *mode != NetworkMode::Inherit) {
                return Err(capability(format!(
                    "the unrestricted sandbox cannot enforce network mode :{}",
                    mode.name()
                )));
            }
            policy.root_filesystem = RootFilesystem::ReadWrite;
            policy.network = Some(plain_network(NetworkMode::Inherit));
        }
        Backend::Landlock if mode == Some(NetworkMode::Allowlist) => {
            return Err(capability(
                "the landlock sandbox cannot enforce network mode :allowlist: Landlock confines TCP by port only, not by destination",
            ));
        }
        Backend::Bubblewrap | Backend::Landlock | Backend::Seatbelt => {
            if policy.network.is_none() {
                policy.network = Some(plain_network(NetworkMode::None));
            }
        }
    }
    Ok(policy)
}

/// SB.2: Seatbelt's features for a policy (`process_spawn` goes under an isolated root).
pub fn seatbelt_features<'a>(features: &[&'a str], policy: &Policy) -> Vec<&'a str> {
    let isolated = policy.root_filesystem == RootFilesystem::Isolated;
    features
        .iter()
        .copied()
        .filter(|feature| !(isolated && *feature == "process_spawn"))
        .collect()
}

/// Whether some tool-visible grant is writable (W13, 15.2, 16.2): runtime-only
/// grants do not count.
pub fn has_writable_file_grant(policy: &Policy) -> bool {
    policy
        .files
        .entries()
        .iter()
        .any(|(_, access)| access.writable())
}

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
    fn landlock_refuses_an_allowlist() {
        let mut requested = with_network(None);
        let mut allowlist = NetworkRequest::mode(Given::symbol("allowlist"));
        allowlist.allow = vec!["example.com".into()];
        requested.network = Some(NetworkPolicy::new(allowlist).unwrap());
        let error = effective_policy(Backend::Landlock, &requested).unwrap_err();
        assert!(error.message().contains("port only"));
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
            refused.unwrap_err().message(),
            "the unrestricted sandbox cannot enforce network mode :none"
        );
    }

    #[test]
    fn seatbelt_drops_spawn_under_an_isolated_root() {
        let features = ["process_execute", "process_spawn"];
        let isolated = Policy {
            root_filesystem: RootFilesystem::Isolated,
            ..Policy::default()
        };
        assert_eq!(seatbelt_features(&features, &isolated), ["process_execute"]);
        let shared = Policy {
            root_filesystem: RootFilesystem::ReadOnly,
            ..Policy::default()
        };
        assert_eq!(seatbelt_features(&features, &shared), features);
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
