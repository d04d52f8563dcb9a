//! The Landlock + seccomp backend's mechanism (SPEC LL.1): for hosts where
//! user namespaces are blocked, so Bubblewrap cannot start.
//!
//! The gem turns a policy into a [`Plan`] ([`plan`]): plain data, passed to
//! the helper executable as arguments ([`Plan::to_args`]). The helper's
//! `supervise` mode forks, and the child calls [`restrict`] and then execs
//! the command; the Ruby process is never restricted. [`probe`] says whether
//! this kernel can enforce a plan.
//!
//! Minimum Landlock ABI: 6 (Linux 6.12). Below 6 Landlock cannot scope
//! signals, so a child could signal the Ruby process and every other process
//! of the same user; seccomp cannot tell whose pid `kill` names. ABI 6 also
//! scopes abstract Unix sockets. ABI 4 (TCP bind/connect) and 3 (truncate)
//! come with it. Rules are written against ABI 6 exactly and enforced as a
//! hard requirement: a kernel that cannot enforce every right refuses, never
//! runs with less.
//!
//! What a restricted child gets:
//! - files: the plan's rules (see `carve` for a weaker rule nested inside a
//!   stronger one); everything else is denied: read, write, execute, list.
//! - `/proc`: never granted as a whole (other processes' command lines and
//!   open descriptor numbers would be listable); the child's own
//!   `/proc/<pid>` is (descendants do not get theirs). Landlock's ptrace hook
//!   refuses `environ`, `maps`, `mem` and descriptor targets of any process
//!   outside the domain, once capabilities are dropped (`CAP_SYS_PTRACE`
//!   bypasses it: measured on Linux 6.18 as root).
//! - capabilities: all dropped, bounding set included, `SECBIT_NOROOT`
//!   locked, before the ruleset is applied.
//! - signals and abstract Unix sockets: scoped to the domain (ABI 6).
//! - ptrace: Landlock refuses tracing any process outside the domain.
//! - network `:none`: every TCP bind and connect denied (ABI 4), and the
//!   seccomp filter refuses `socket` for every family (Unix included: below
//!   ABI 9 Landlock does not mediate `connect` to a pathname socket);
//!   `socketpair` stays. Under `:inherit` with an `:isolated` root,
//!   `socket(AF_UNIX)` is refused too: the host's pathname sockets
//!   (`/run/docker.sock`) are outside Bubblewrap's empty root and must be
//!   outside this one. Under `:inherit` with a `:read_only` or `:read_write`
//!   root they are reachable, as in Bubblewrap.
//! - the seccomp filter of the Bubblewrap backend (set-id, chown, xattr,
//!   keyring, io_uring, user-namespace rules; `allow_subprocesses: false`),
//!   plus the host-pid rules (`prlimit64`, `sched_set*`, `setpriority`,
//!   `ioprio_set` on the caller only; no `perf_event_open`): see `seccomp`.
//! - System V IPC and POSIX message queues: a new IPC namespace when the
//!   helper may make one (root, before capabilities are dropped), else
//!   refused by the filter. Either way the host's objects are out of reach
//!   and nothing the child creates outlives it.

mod carve;
pub mod launch;

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use landlock::{
    Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::seccomp;
use crate::error::{argument, capability, policy, Result};

pub use carve::expand;

/// The lowest Landlock ABI this backend runs on (see the module docs).
pub const MINIMUM_ABI: i32 = super::LANDLOCK_MINIMUM_ABI;
/// The ABI whose rights the rules are written against.
const ABI_USED: ABI = ABI::V6;

/// What the child may do beneath one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No rule: a path carved out of a stronger rule (for example `/proc`).
    Hidden,
    /// Read, list and execute.
    Read,
    /// Read and write an existing device node (`/dev/null`): no listing.
    Device,
    /// Everything, including create, remove, rename and execute.
    Write,
}

impl Access {
    /// The Landlock rights of this access.
    pub fn rights(self) -> BitFlags<AccessFs> {
        match self {
            Access::Hidden => BitFlags::empty(),
            Access::Read => AccessFs::from_read(ABI_USED),
            Access::Device => AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
            Access::Write => AccessFs::from_all(ABI_USED),
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Access::Hidden => "--hide",
            Access::Read => "--read",
            Access::Device => "--device",
            Access::Write => "--write",
        }
    }
}

/// One path and what is allowed beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub path: PathBuf,
    pub access: Access,
}

/// Everything the helper needs to restrict one child; no policy decisions
/// are left to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub rules: Vec<Rule>,
    /// Network `:none` (TCP denied, `socket` refused); false is `:inherit`.
    pub network_none: bool,
    pub deny_subprocesses: bool,
    /// `socket(AF_UNIX)` refused even under `:inherit` (root `:isolated`:
    /// Landlock below ABI 9 cannot keep the host's pathname sockets out).
    pub deny_unix_sockets: bool,
    /// Grant the child's own `/proc/<pid>` (read).
    pub own_proc: bool,
    /// Rule paths whose directory the helper inherited as a
    /// descriptor (the grant's handle): the rule is built from it, never by
    /// opening the path (`--handle FD PATH`).
    pub handles: Vec<(PathBuf, RawFd)>,
}

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
    network_none: bool,
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
    Ok(Plan {
        rules,
        network_none,
        deny_subprocesses,
        deny_unix_sockets: root == RootMode::Isolated,
        own_proc: true,
        handles: Vec::new(),
    })
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
        let outer = grants
            .iter()
            .find(|outer| {
                outer.writable && outer.path != inner.path && inner.path.starts_with(&outer.path)
            })
            .map(|outer| format!("the writable grant {}", outer.path.display()))
            .or_else(|| {
                (root == RootMode::ReadWrite).then(|| "the :read_write root filesystem".to_string())
            });
        if let Some(outer) = outer {
            return Err(capability(format!(
                "the landlock sandbox cannot enforce the :read_only grant {} inside {outer}: a Landlock \
                 rule holds for everything beneath its directory, so the directories above {} could not \
                 stay writable (create, remove or rename entries in them) while it stays read-only. Grant \
                 the outer directory :read_only and its writable subdirectories :read_write one by one \
                 (for example files: {{root: :read_only, source: :read_only, out: :read_write}}), or use \
                 Bubblewrap, which mounts the read-only grant over the writable one",
                inner.path.display(),
                inner.path.display()
            )));
        }
    }
    Ok(())
}

/// Whether `a` grants less than `b` somewhere.
fn weaker(a: Access, b: Access) -> bool {
    !(b.rights() & !a.rights()).is_empty()
}

impl Plan {
    /// The plan as the helper's arguments (before `--` and the command).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (path, fd) in &self.handles {
            args.push("--handle".into());
            args.push(fd.to_string());
            args.push(path.to_string_lossy().into_owned());
        }
        for rule in &self.rules {
            args.push(rule.access.flag().to_string());
            args.push(rule.path.to_string_lossy().into_owned());
        }
        args.push("--network".into());
        args.push(if self.network_none { "none" } else { "inherit" }.into());
        if self.deny_subprocesses {
            args.push("--deny-subprocesses".into());
        }
        if self.deny_unix_sockets {
            args.push("--deny-unix-sockets".into());
        }
        if self.own_proc {
            args.push("--own-proc".into());
        }
        args
    }

    /// Parses [`Plan::to_args`] followed by `--` and the command; returns the
    /// plan and the command (never empty).
    pub fn from_args(args: &[String]) -> Result<(Plan, Vec<String>)> {
        let mut plan = Plan {
            rules: Vec::new(),
            network_none: true,
            deny_subprocesses: false,
            deny_unix_sockets: false,
            own_proc: false,
            handles: Vec::new(),
        };
        let mut rest = args.iter();
        let mut network = None;
        while let Some(arg) = rest.next() {
            let access = match arg.as_str() {
                "--" => {
                    let command: Vec<String> = rest.cloned().collect();
                    if command.is_empty() {
                        return Err(argument("supervise: no command after --"));
                    }
                    plan.network_none =
                        network.ok_or_else(|| argument("supervise: --network is required"))?;
                    return Ok((plan, command));
                }
                "--deny-subprocesses" => {
                    plan.deny_subprocesses = true;
                    continue;
                }
                "--handle" => {
                    let fd = rest.next().and_then(|fd| fd.parse::<RawFd>().ok());
                    let path = rest.next().filter(|p| Path::new(p).is_absolute());
                    match (fd, path) {
                        (Some(fd), Some(path)) if fd > 2 => {
                            plan.handles.push((PathBuf::from(path), fd))
                        }
                        _ => {
                            return Err(argument(
                                "supervise: --handle needs FD and an absolute path",
                            ))
                        }
                    }
                    continue;
                }
                "--own-proc" => {
                    plan.own_proc = true;
                    continue;
                }
                "--deny-unix-sockets" => {
                    plan.deny_unix_sockets = true;
                    continue;
                }
                "--network" => {
                    network = Some(match rest.next().map(String::as_str) {
                        Some("none") => true,
                        Some("inherit") => false,
                        other => {
                            return Err(argument(format!("supervise: bad --network {other:?}")))
                        }
                    });
                    continue;
                }
                "--hide" => Access::Hidden,
                "--read" => Access::Read,
                "--device" => Access::Device,
                "--write" => Access::Write,
                other => return Err(argument(format!("supervise: unknown option {other:?}"))),
            };
            let path = rest
                .next()
                .ok_or_else(|| argument(format!("supervise: {arg} needs a path")))?;
            if !Path::new(path).is_absolute() {
                return Err(argument(format!("supervise: {arg} needs an absolute path")));
            }
            plan.rules.push(Rule {
                path: PathBuf::from(path),
                access,
            });
        }
        Err(argument("supervise: missing -- before the command"))
    }
}

/// Restricts the calling process (single-threaded, about to exec): the
/// plan's Landlock domain with `no_new_privs`, then the seccomp filter.
/// Anything short of full enforcement is an error, never a weaker sandbox.
pub fn restrict(plan: &Plan) -> Result<()> {
    let own_ipc = own_ipc_namespace();
    drop_capabilities()?;
    let failed = |e: landlock::RulesetError| capability(format!("landlock: {e}"));
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI_USED))
        .and_then(|r| r.scope(Scope::from_all(ABI_USED)))
        .map_err(failed)?;
    if plan.network_none {
        // Handled with no port rule: every TCP bind and connect is denied.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_USED))
            .map_err(failed)?;
    }
    let mut created = ruleset.create().map_err(failed)?;
    for beneath in carve::expand_with(&plan.rules, &plan.handles)? {
        created = created
            .add_rule(PathBeneath::new(beneath.fd, beneath.access))
            .map_err(failed)?;
    }
    if plan.own_proc {
        let own = carve::open_path(Path::new("/proc/self"), true)
            .map_err(|e| capability(format!("landlock: cannot open /proc/self: {e}")))?;
        created = created
            .add_rule(PathBeneath::new(own, Access::Read.rights()))
            .map_err(failed)?;
    }
    // The command must not inherit the grants' handles.
    for (_, fd) in &plan.handles {
        // SAFETY: the helper inherited `fd` for this plan and keeps it open.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) };
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)
            .map_err(|e| capability(format!("landlock: handle {e}")))?;
    }
    let status = created.restrict_self().map_err(failed)?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(capability(
            "landlock: the kernel did not fully enforce the ruleset",
        ));
    }
    let mut filter =
        seccomp::Filter::for_launch(plan.deny_subprocesses, None, None).with_host_pids();
    if !own_ipc {
        filter = filter.with_ipc_denied();
    }
    if plan.network_none {
        filter = filter.with_sockets_denied();
    } else if plan.deny_unix_sockets {
        filter = filter.with_unix_sockets_denied();
    }
    seccomp::install(&filter)
}

/// Moves the calling process into a new IPC namespace, while it still holds
/// `CAP_SYS_ADMIN` (root, or root of an enclosing user namespace): its
/// System V IPC objects and POSIX message queues are then its own, the
/// host's are out of reach, and all of them go when its last process exits.
/// False where that is not allowed (not root): the filter then refuses them.
fn own_ipc_namespace() -> bool {
    // SAFETY: unshare with a flag only; affects this process alone.
    unsafe { libc::unshare(libc::CLONE_NEWIPC) == 0 }
}

/// Drops every capability for good, so a child of a gem running as root
/// holds no authority Landlock does not mediate (`reboot`, module loading,
/// raw I/O, `CAP_SYS_PTRACE`, which also lets it read other processes'
/// `/proc/<pid>/environ` and `maps` despite Landlock). Bubblewrap's
/// `--cap-drop ALL` does the same. With `SECBIT_NOROOT` locked, executing
/// anything as uid 0 grants nothing back; `no_new_privs` (set by
/// `restrict_self`) covers set-user-ID and file capabilities.
fn drop_capabilities() -> Result<()> {
    use rustix::thread::{self as thread, CapabilitySet, CapabilitySets};
    let failed = |what: &str, e: rustix::io::Errno| {
        capability(format!("cannot drop capabilities ({what}): {e}"))
    };
    let root = rustix::process::geteuid().is_root() || rustix::process::getuid().is_root();
    thread::clear_ambient_capability_set().map_err(|e| failed("ambient", e))?;
    if root {
        // SECBIT_NOROOT | _LOCKED | KEEP_CAPS_LOCKED | NO_CAP_AMBIENT_RAISE | _LOCKED.
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, 0xE3, 0, 0, 0) } != 0 {
            return Err(failed(
                "securebits",
                rustix::io::Errno::from_io_error(&std::io::Error::last_os_error())
                    .unwrap_or(rustix::io::Errno::PERM),
            ));
        }
        for cap in 0..64 {
            // SAFETY: prctl with integer arguments only.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
                break; // EINVAL: past the last capability this kernel knows
            }
        }
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_CAPBSET_READ, 0, 0, 0, 0) } != 0 {
            return Err(capability(
                "cannot drop capabilities: the bounding set kept them",
            ));
        }
    }
    let none = CapabilitySet::empty();
    thread::set_capabilities(
        None,
        CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )
    .map_err(|e| failed("capset", e))?;
    let left = thread::capabilities(None).map_err(|e| failed("capget", e))?;
    if !(left.effective | left.permitted | left.inheritable).is_empty() {
        return Err(capability("cannot drop capabilities: some remain"));
    }
    Ok(())
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
