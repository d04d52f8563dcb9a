//! The Landlock + seccomp backend's mechanism (SPEC LL.1): for hosts where
//! user namespaces are blocked, so Bubblewrap cannot start.
//!
//! The gem turns a policy into a [`Plan`] ([`plan`]): plain data, passed to
//! the helper executable as arguments ([`Plan::to_args`]). The helper's
//! `supervise` mode forks, and the child calls [`restrict`] and then execs
//! the command; the Ruby process is never restricted. [`probe`] says whether
//! this kernel can enforce a plan.
//!
//! [`Plan`], [`restrict`] and what a restricted child gets are in
//! `littleghost_sandbox_restrict::landlock` (the helper builds that crate
//! alone), re-exported here.
//!
//! Minimum Landlock ABI: 6 (Linux 6.12); why: see there.

pub mod host;
pub mod launch;
mod launcher;
pub mod nested;

pub use launcher::Launcher;
pub use nested::NestedReadOnly;

use std::path::{Path, PathBuf};

use landlock::AccessFs;

use super::seccomp;
use crate::error::{capability, policy, Result};

pub use littleghost_sandbox_restrict::landlock::{
    expand, restrict, Access, Network, Plan, Rule, PROXY_ADDRESS,
};

/// The lowest Landlock ABI this backend runs on (see the module docs).
pub const MINIMUM_ABI: i32 = super::LANDLOCK_MINIMUM_ABI;

/// The root mode of a policy's `files:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootMode {
    Isolated,
    ReadOnly,
    ReadWrite,
}

/// Read-only under `:isolated` besides the runtime roots: the compatibility
/// roots of the Bubblewrap backend (SPEC B.1).
pub const COMPATIBILITY_ROOTS: [&str; 4] = ["/bin", "/sbin", "/lib", "/lib64"];
/// Files a program reads to start, readable under `:isolated`: the dynamic
/// linker's cache (without it `ld.so` probes every library directory).
pub const STARTUP_FILES: [&str; 1] = ["/etc/ld.so.cache"];
/// Device nodes a program needs to start, readable and writable (not
/// listable) in every mode; Bubblewrap's `--dev` offers the same ones.
pub const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// A policy grant, by physical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub writable: bool,
}

/// W12 under Landlock: a scope that leaves out a policy grant must not let
/// its launch see it. Bubblewrap masks such a grant; Landlock rules only add
/// access, so when the left-out grant would still be reachable (beneath a
/// kept grant, or anywhere under a `:read_only`/`:read_write` root) the
/// launch is refused, naming the grant, rather than run with a wider view.
pub fn refuse_unhidable(root: RootMode, policy: &[Grant], selected: &[Grant]) -> Result<()> {
    for dropped in policy
        .iter()
        .filter(|grant| !selected.iter().any(|kept| kept.path == grant.path))
    {
        let beneath = selected
            .iter()
            .find(|kept| dropped.path.starts_with(&kept.path));
        let reachable = match root {
            RootMode::Isolated => beneath.is_some(),
            RootMode::ReadOnly | RootMode::ReadWrite => true,
        };
        if reachable {
            return Err(capability(format!(
                "the landlock sandbox cannot hide {} from a scope that leaves it out: Landlock rules only add \
                 access (use Bubblewrap, which masks it)",
                dropped.path.display()
            )));
        }
    }
    Ok(())
}

/// The plan for one launch: the root mode's rules, the grants, the runtime
/// roots (`:isolated` only) and the sandbox's private temporary directory
/// (writable). Two rules for one path keep the weaker (never a wider sandbox).
pub fn plan(
    root: RootMode,
    grants: &[Grant],
    runtime_roots: &[PathBuf],
    tmpdir: &Path,
    network: Network,
    deny_subprocesses: bool,
) -> Result<Plan> {
    let mut rules: Vec<Rule> = Vec::new();
    let mut add = |path: &Path, access: Access| -> Result<()> {
        if !path.is_absolute() {
            return Err(policy(format!(
                "landlock rule path must be absolute: {}",
                path.display()
            )));
        }
        match rules.iter_mut().find(|rule| rule.path == path) {
            Some(rule) if weaker(access, rule.access) => rule.access = access,
            Some(_) => {}
            None => rules.push(Rule {
                path: path.to_path_buf(),
                access,
            }),
        }
        Ok(())
    };
    match root {
        RootMode::Isolated => {
            for path in runtime_roots {
                add(path, Access::Read)?;
            }
            for path in COMPATIBILITY_ROOTS.iter().chain(&STARTUP_FILES) {
                add(Path::new(path), Access::Read)?;
            }
        }
        RootMode::ReadOnly => add(Path::new("/"), Access::Read)?,
        RootMode::ReadWrite => add(Path::new("/"), Access::Write)?,
    }
    if root != RootMode::Isolated {
        add(Path::new("/proc"), Access::Hidden)?;
    }
    for device in DEVICES {
        add(Path::new(device), Access::Device)?;
    }
    for grant in grants {
        let access = if grant.writable {
            Access::Write
        } else {
            Access::Read
        };
        add(&grant.path, access)?;
    }
    add(tmpdir, Access::Write)?;
    refuse_narrowed(root, grants)?;
    refuse_holding_gateways(grants)?;
    Ok(Plan {
        rules,
        network,
        deny_subprocesses,
        deny_unix_sockets: root == RootMode::Isolated,
        own_proc: true,
        handles: Vec::new(),
    })
}

/// A writable grant holding the folder of the network gateways' sockets
/// (`/tmp/littleghost-gateways-<uid>`, `/tmp` or above it, or wherever else
/// the host shows the folder: [`crate::network::folder::places`]) would let
/// the child rename that folder and leave an empty stand-in, which a later
/// Bubblewrap launch would mask while the real one, sockets and all, stood
/// in view under another name. Bubblewrap's own children cannot do this (the
/// folder is a mount point there, which cannot be renamed); a Landlock child
/// sees the host's folder itself (docs/security.md, "The gem's own
/// directories").
fn refuse_holding_gateways(grants: &[Grant]) -> Result<()> {
    let mut places = crate::network::folder::places()?;
    places.push(crate::network::folder::base_path());
    let held = |grant: &&Grant| places.iter().find(|place| place.starts_with(&grant.path));
    match grants
        .iter()
        .filter(|grant| grant.writable)
        .find_map(|grant| held(&grant).map(|place| (grant, place)))
    {
        Some((grant, place)) => Err(policy(format!(
            "the writable grant {} holds the folder of the network gateways' sockets {}: grant a directory \
             beneath it instead",
            grant.path.display(),
            place.display()
        ))),
        None => Ok(()),
    }
}

/// A read-only grant inside a writable one (or inside a `:read_write` root
/// filesystem) cannot be enforced as the policy states it: a Landlock right
/// on a directory holds for its whole hierarchy, and creating, removing or
/// renaming an entry is checked against the rules of every directory from
/// the entry's parent up. So the writable directory cannot keep the right to
/// create entries in itself (or in a directory between it and the read-only
/// grant) without handing the same right to the read-only grant. Carving
/// (see `carve`) would silently take those rights away from the writable
/// directory while `effective_policy` still calls it writable:
/// CapabilityError instead, naming both and what to do.
fn refuse_narrowed(root: RootMode, grants: &[Grant]) -> Result<()> {
    for inner in grants.iter().filter(|grant| !grant.writable) {
        let outer = grants.iter().find(|outer| {
            outer.writable && outer.path != inner.path && inner.path.starts_with(&outer.path)
        });
        if outer.is_some() || root == RootMode::ReadWrite {
            return Err(NestedReadOnly {
                inner: inner.path.clone(),
                outer: outer.map(|outer| outer.path.clone()),
            }
            .into());
        }
    }
    Ok(())
}

/// Whether `a` grants less than `b` somewhere.
fn weaker(a: Access, b: Access) -> bool {
    !(b.rights() & !a.rights()).is_empty()
}

/// What [`probe`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The kernel's Landlock ABI, if Landlock is enabled.
    pub abi: Option<i32>,
    /// None when a plan can be enforced; else why not.
    pub unavailable: Option<String>,
}

/// The running kernel's Landlock ABI and whether this backend can use it.
pub fn probe() -> Probe {
    if seccomp::Arch::native().is_none() {
        return Probe {
            abi: None,
            unavailable: Some(format!(
                "the landlock sandbox has no seccomp filter for {}",
                std::env::consts::ARCH
            )),
        };
    }
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute and size
    // 0 only returns the ABI version (or -1 with errno); nothing is written.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if version < 0 {
        let errno = std::io::Error::last_os_error();
        let why = match errno.raw_os_error() {
            Some(libc::EOPNOTSUPP) => "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)".to_string(),
            Some(libc::ENOSYS) => "this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)".to_string(),
            _ => format!("Landlock is unavailable: {errno}"),
        };
        return Probe {
            abi: None,
            unavailable: Some(why),
        };
    }
    let abi = i32::try_from(version).unwrap_or(i32::MAX);
    let unavailable = (abi < MINIMUM_ABI).then(|| {
        format!(
            "Landlock ABI {abi} is too old: the landlock sandbox needs ABI {MINIMUM_ABI} (Linux 6.12) to keep the child from signalling other processes"
        )
    });
    Probe {
        abi: Some(abi),
        unavailable,
    }
}

/// Why this kernel cannot enforce network `:allowlist` under this backend,
/// if it cannot. The backend's minimum (Landlock ABI 6, Linux 6.12) implies
/// ABI 4's TCP rules, `SECCOMP_ADDFD_FLAG_SETFD` (5.14) and
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` (5.19); what a kernel
/// configuration or a container's seccomp profile can still take away is
/// the user notification itself, which is asked here.
pub fn allowlist_unavailable() -> Option<String> {
    if let Some(abi) = probe().abi.filter(|abi| *abi < 4) {
        return Some(format!(
            "Landlock ABI {abi} has no TCP connect rules (ABI 4, Linux 6.7)"
        ));
    }
    let action: u32 = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: GET_ACTION_AVAIL reads one u32 and writes nothing.
    let available = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    } == 0;
    (!available).then(|| {
        format!(
            "seccomp user notification is unavailable here ({}): the landlock sandbox needs it to make a \
             child's connections itself",
            std::io::Error::last_os_error()
        )
    })
}

/// Whether a launch's working directory lies beneath a rule the child can
/// read (a grant or the private TMPDIR); else the child would start in a
/// directory it cannot use.
pub fn cwd_allowed(plan: &Plan, cwd: &Path) -> bool {
    let mut best: Option<&Rule> = None;
    for rule in &plan.rules {
        if cwd.starts_with(&rule.path)
            && best.is_none_or(|b| rule.path.components().count() > b.path.components().count())
        {
            best = Some(rule);
        }
    }
    best.is_some_and(|rule| rule.access.rights().contains(AccessFs::ReadDir))
}

#[cfg(test)]
mod tests;
