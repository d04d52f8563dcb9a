//! Landlock on the host (SPEC LL.1): whether it can run here, what `open`
//! checks and prepares, and the helper's `supervise` command of a planned
//! launch. The rules themselves are `landlock::launch`.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use super::{self as ll, launch::Sandbox};
use crate::backend::launch_steps::{path_text as text, Platform};
use crate::backend::private_tmp;
use crate::error::{policy, Error, Result};
use crate::fs::anchor::Anchor;
use crate::fs::own::OwnDirectory;
use crate::grants::Grant;
use crate::helper;
use crate::launch::{LaunchPlan, NetworkMode, Pins};
use crate::process::SpawnOptions;

/// Why Landlock is only for Linux.
pub const LINUX_ONLY: &str = "Landlock is supported only on Linux";

/// What the probe found: the kernel's Landlock ABI (None without Landlock)
/// and, when the backend cannot run here, why not.
pub fn probe(platform: &str) -> ll::Probe {
    if Platform::of(platform) != Platform::Linux {
        return ll::Probe {
            abi: None,
            unavailable: Some(LINUX_ONLY.into()),
        };
    }
    if let Some(reason) = helper::unavailable_reason() {
        return ll::Probe {
            abi: None,
            unavailable: Some(reason),
        };
    }
    ll::probe()
}

/// `open`'s first checks: the platform, then the helper and the kernel.
pub fn require(platform: &str) -> Result<()> {
    if Platform::of(platform) != Platform::Linux {
        return Err(Error::UnsupportedPlatform(
            "Landlock sandboxing is supported only on Linux".into(),
        ));
    }
    match probe(platform).unavailable {
        Some(reason) => Err(Error::Dependency(reason)),
        None => Ok(()),
    }
}

/// The rest of `open`: every policy grant a directory and expressible
/// exactly (a dry run of the carving); returns the private TMPDIR it
/// created (outside every writable grant, held by its handle), which is
/// removed again when a grant is refused.
pub fn prepare(
    root: crate::policy::RootFilesystem,
    runtime_roots: &[PathBuf],
    grants: &[Grant],
    protect: &crate::policy::ProtectList,
) -> Result<OwnDirectory> {
    if grants.iter().any(|grant| !grant.source.is_dir()) {
        return Err(policy("sandbox mount source is not a directory"));
    }
    refuse_protected(grants, protect)?;
    let tmpdir = private_tmp::own_private_directory("littleghost-landlock-", grants)?;
    let sandbox = Sandbox {
        root,
        runtime_roots,
        tmpdir: tmpdir.path(),
        workspace_directories: &[],
    };
    if let Err(error) = ll::launch::check(sandbox, grants) {
        let _ = tmpdir.remove();
        return Err(error);
    }
    Ok(tmpdir)
}

/// A `protect:` path that exists inside a writable grant cannot stay
/// read-only under Landlock (a rule holds for its whole hierarchy; see
/// `refuse_narrowed`), and a change to it would run on the host (a git
/// hook): CapabilityError at `open`, naming the path and the ways out.
fn refuse_protected(grants: &[Grant], protect: &crate::policy::ProtectList) -> Result<()> {
    for inner in grants.iter().filter(|g| !g.access.writable()) {
        let outer = grants.iter().filter(|g| g.access.writable()).find(|outer| {
            crate::paths::remainder(&inner.target, &outer.target)
                .is_some_and(|rest| protect.entries().iter().any(|entry| entry == rest))
        });
        if let Some(outer) = outer {
            return Err(crate::error::capability(format!(
                "the landlock sandbox cannot keep the protected path {} read-only inside the writable \
                 grant {}: a Landlock rule holds for everything beneath its directory. Pass protect: [] \
                 to let programs write it, grant the root :read_only with writable named subpaths \
                 (files: {{root: :read_only, out: :read_write}}), or use Bubblewrap, which mounts it \
                 read-only",
                inner.target.display(),
                outer.target.display()
            )));
        }
    }
    Ok(())
}

/// How a launch under `:allowlist` reaches its gateway: the socket the
/// supervisor connects through (a handle opened when the gateway bound it)
/// and the directories the child must read to trust the gateway (its CA
/// bundle's, the host's trust roots).
#[derive(Debug)]
pub struct GatewayReach {
    pub socket: OwnedFd,
    pub readable: Vec<PathBuf>,
}

/// The supervisor's command line and the descriptor to execute it from.
#[derive(Debug)]
pub struct Supervised {
    /// `[helper, "supervise", *rules, "--", *command]`; `argv[0]` only names
    /// the helper's file, it is never looked up.
    pub argv: Vec<String>,
    /// The sealed copy of the helper ([`helper::Sealed::fd`]), which the
    /// process runner executes instead of `argv[0]`.
    pub executable_fd: std::os::fd::RawFd,
    /// The grants' handles, inherited by the helper as 3, 4, ... in this order.
    pub anchors: Vec<Anchor>,
    /// The private TMPDIR's handle, inherited right after the anchors: its
    /// rule is built from it, never from its path.
    pub tmpdir: OwnedFd,
    /// Under `:allowlist`, the gateway's socket, inherited after the TMPDIR.
    pub gateway: Option<OwnedFd>,
}

/// `[helper, "supervise", *rules, "--", *command]` for a planned launch
/// (W12 when `scoped`), run from the helper's sealed copy; the private
/// TMPDIR becomes the plan's `TMPDIR`. Every grant's rule is built
/// from its handle (from `pins`, checked current, or derived by a walk from
/// the pinned grant containing it), which the helper inherits as 3, 4, ...
/// in the order of [`Supervised::anchors`]; the private TMPDIR's rule from
/// `tmpdir` (its handle), inherited after them; under `:allowlist` the
/// gateway's socket after that (`gateway`, required then).
#[allow(clippy::too_many_arguments)]
pub fn command(
    sandbox: Sandbox<'_>,
    tmpdir: &OwnDirectory,
    plan: &mut LaunchPlan,
    scoped: bool,
    allow_subprocesses: bool,
    command: Vec<String>,
    pins: &Pins,
    gateway: Option<GatewayReach>,
) -> Result<Supervised> {
    let gateway_fd = SpawnOptions::child_fd(plan.selected.len() + 1);
    let (network, gateway) = match (plan.network, gateway) {
        (NetworkMode::None, _) => (ll::Network::None, None),
        (NetworkMode::Inherit, _) => (ll::Network::Inherit, None),
        (NetworkMode::Allowlist, Some(reach)) => (ll::Network::Gateway(gateway_fd), Some(reach)),
        (NetworkMode::Allowlist, None) => {
            return Err(crate::policy::Unenforceable::AllowlistWithoutGateway.into())
        }
    };
    let mut rules = ll::launch::launch_rules(
        sandbox,
        &plan.policy_grants,
        &plan.selected,
        scoped,
        network,
        !allow_subprocesses,
        &plan.cwd,
    )?;
    if let Some(reach) = &gateway {
        readable_beside(&mut rules, sandbox.root, &reach.readable);
    }
    let mut anchors: Vec<Anchor> = Vec::new();
    for grant in &plan.selected {
        let anchor = pins.anchor_for(&grant.source)?;
        rules
            .handles
            .push((grant.source.clone(), SpawnOptions::child_fd(anchors.len())));
        anchors.push(anchor);
    }
    let tmpdir_handle = tmpdir.reopen().map_err(|e| {
        policy(format!(
            "landlock: the private TMPDIR cannot be reopened: {e}"
        ))
    })?;
    rules.handles.push((
        sandbox.tmpdir.to_path_buf(),
        SpawnOptions::child_fd(anchors.len()),
    ));
    let sealed = helper::sealed()?;
    let executable_fd = sealed.fd()?;
    let helper = text(sealed.source(), "helper path")?;
    let shown = text(sandbox.tmpdir, "TMPDIR")?;
    plan.environment = private_tmp::with_tmpdir(std::mem::take(&mut plan.environment), shown);
    Ok(Supervised {
        argv: ll::launch::supervise_argv(helper, &rules, command),
        executable_fd,
        anchors,
        tmpdir: tmpdir_handle,
        gateway: gateway.map(|reach| reach.socket),
    })
}

/// Under an `:isolated` root, read rules for `paths` no rule reaches yet
/// (the gateway's CA bundle, the host's trust roots); every other root
/// already reads them. Never nested beneath another rule, so no carving
/// narrows what a grant gives.
fn readable_beside(rules: &mut ll::Plan, root: crate::policy::RootFilesystem, paths: &[PathBuf]) {
    if root != crate::policy::RootFilesystem::Isolated {
        return;
    }
    for path in paths {
        if !rules.rules.iter().any(|rule| path.starts_with(&rule.path)) {
            rules.rules.push(ll::Rule {
                path: path.clone(),
                access: ll::Access::Read,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Access;
    use crate::policy::RootFilesystem;

    #[test]
    fn landlock_is_for_linux_only() {
        let probe = probe("arm64-darwin23");
        assert_eq!(probe.abi, None);
        assert_eq!(probe.unavailable.as_deref(), Some(LINUX_ONLY));
        assert!(matches!(
            require("arm64-darwin23"),
            Err(Error::UnsupportedPlatform(message)) if message.contains("only on Linux")
        ));
    }

    #[test]
    fn a_grant_that_is_not_a_directory_is_refused_before_anything_is_created() {
        let file = std::env::temp_dir().join(format!("lg-ll-host-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let grant = Grant {
            source: file.clone(),
            target: file.clone(),
            access: Access::ReadOnly,
            tools: true,
            protect_aliases: false,
        };
        let refused = prepare(RootFilesystem::ReadOnly, &[], &[grant], &Default::default());
        assert_eq!(
            refused.unwrap_err(),
            policy("sandbox mount source is not a directory")
        );
        std::fs::remove_file(&file).unwrap();
    }
}
