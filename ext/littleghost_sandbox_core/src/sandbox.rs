//! The rules of the `LittleGhost::Sandbox` base class (SPEC §10) that do not
//! depend on a backend: which grants a policy may name in a workspace,
//! whether it grants a tool-visible writable path (W13), and how
//! `scope` selects its options from a named profile or explicit keywords (10.8).

pub mod error;
pub mod profiles;
pub mod providers;

pub use error::{registered_list, Error};

use crate::error::Result;
use crate::grants::Access;
use crate::policy::Policy;

/// The options a scope profile (or `scope` itself) may set, in this order.
pub const PROFILE_KEYS: [&str; 4] = ["files", "runtime_paths", "capabilities", "network"];

/// Every grant of `policy` (files and runtime paths) names `root`
/// or one of the workspace's `path_names`; PolicyError listing them otherwise.
pub fn check_grant_names(policy: &Policy, path_names: &[&str]) -> Result<()> {
    let files = policy
        .files
        .entries()
        .iter()
        .map(|(n, _)| ("files", n.as_str()));
    let runtime = policy.runtime_paths.entries().iter();
    let runtime = runtime.map(|(n, _)| ("runtime_paths", n.as_str()));
    Ok(crate::workspace::check_grant_names(
        files.chain(runtime),
        path_names,
    )?)
}

/// W13 (15.2, 16.2): some tool-visible grant is writable; runtime-only grants
/// do not count, and nothing touches the disk.
pub fn has_writable_file_grant(policy: &Policy) -> bool {
    policy
        .files
        .entries()
        .iter()
        .any(|(_, access)| *access == Access::ReadWrite)
}

/// 10.8: a profile name and explicit options exclude each other.
pub fn check_scope_selection(profile_given: bool, explicit_given: bool) -> Result<()> {
    if profile_given && explicit_given {
        return Err(Error::ProfileWithExplicitOptions.into());
    }
    Ok(())
}

/// A profile name the sandbox was not given.
pub fn unknown_profile(name: &str) -> crate::Error {
    Error::UnknownProfile {
        name: name.to_string(),
    }
    .into()
}

/// A profile's options are among [`PROFILE_KEYS`]; PolicyError naming the others.
pub fn check_profile_keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let names: Vec<String> = keys
        .into_iter()
        .filter(|k| !PROFILE_KEYS.contains(k))
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    Err(Error::UnknownProfileOptions { names }.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::GrantTable;

    fn policy_with(files: &[(&str, Access)], runtime: &[(&str, Access)]) -> Policy {
        Policy {
            files: GrantTable::of(files),
            runtime_paths: GrantTable::of(runtime),
            ..Policy::default()
        }
    }

    #[test]
    fn grant_names_cover_files_and_runtime_paths() {
        let policy = policy_with(
            &[("root", Access::ReadOnly)],
            &[("home", Access::ReadWrite)],
        );
        check_grant_names(&policy, &["home"]).unwrap();
        let err = check_grant_names(&policy, &["source"]).unwrap_err();
        assert_eq!(err.kind(), crate::error::Kind::Policy);
        assert!(matches!(
            err,
            crate::Error::Workspace(crate::workspace::Error::UnknownGrant { category, name, .. })
                if category == "runtime_paths" && name == "home"
        ));
    }

    #[test]
    fn only_tool_visible_writable_grants_count() {
        assert!(!has_writable_file_grant(&Policy::default()));
        let runtime_only =
            policy_with(&[("root", Access::ReadOnly)], &[("tmp", Access::ReadWrite)]);
        assert!(!has_writable_file_grant(&runtime_only));
        let docs = policy_with(
            &[("root", Access::ReadOnly), ("docs", Access::ReadWrite)],
            &[],
        );
        assert!(has_writable_file_grant(&docs));
    }

    #[test]
    fn profile_and_explicit_options_exclude_each_other() {
        check_scope_selection(true, false).unwrap();
        check_scope_selection(false, true).unwrap();
        let err = check_scope_selection(true, true).unwrap_err();
        assert_eq!(err, Error::ProfileWithExplicitOptions.into());
        assert_eq!(err.kind(), crate::error::Kind::Argument);
    }

    #[test]
    fn profile_keys_are_checked() {
        check_profile_keys(["files", "network"]).unwrap();
        let err = check_profile_keys(["files", "bogus", "other"]).unwrap_err();
        assert_eq!(err.kind(), crate::error::Kind::Policy);
        assert_eq!(
            err,
            Error::UnknownProfileOptions {
                names: vec!["bogus".into(), "other".into()]
            }
            .into()
        );
        assert_eq!(
            unknown_profile("x").message(),
            "unknown sandbox scope profile: x"
        );
    }
}
