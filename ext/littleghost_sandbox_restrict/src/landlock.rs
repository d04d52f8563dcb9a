//! The child's side of the Landlock backend (SPEC LL.1): a [`Plan`] travels
//! to the helper as arguments ([`Plan::to_args`], [`Plan::from_args`]); the
//! helper's `supervise` mode forks, and the child calls [`restrict`] and then
//! execs the command. The core decides what goes into a plan
//! (`littleghost_sandbox_core::backend::landlock::plan`) and whether this
//! kernel can enforce one (`probe` there).
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
//! - network `:allowlist` ([`Network::Gateway`]): every TCP bind and
//!   connect denied (ABI 4), so no connection of the child's own reaches
//!   anything; the filter sends `connect` to the supervisor, which makes the
//!   one connection allowed (to the sandbox's gateway) itself and puts its
//!   socket in place of the child's, and refuses every non-TCP socket (see
//!   `seccomp`). [`restrict`] returns the filter's listener for the
//!   supervisor.
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

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use landlock::{
    Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use crate::error::{argument, capability, Result};
use crate::seccomp;

pub use carve::expand;

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

/// Where the child's connections may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// `:none`: TCP denied, `socket` refused.
    None,
    /// `:inherit`: the host's network.
    Inherit,
    /// `:allowlist`: only through the supervisor, to the gateway listening
    /// on this Unix socket file, a descriptor the helper inherited (`O_PATH`,
    /// opened when the gateway bound it; the supervisor connects through
    /// `/proc/self/fd/N`, so no path is resolved again). The child cannot
    /// connect anywhere itself and does not inherit the descriptor.
    Gateway(RawFd),
}

/// The address the child's proxy variables name under `:allowlist`: the
/// supervisor joins a `connect` to it to the gateway (the same address as
/// the Bubblewrap relay's, so the variables are the same).
pub const PROXY_ADDRESS: std::net::SocketAddrV4 =
    std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 3128);

/// Everything the helper needs to restrict one child; no policy decisions
/// are left to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub rules: Vec<Rule>,
    pub network: Network,
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
        match &self.network {
            Network::None => args.push("none".into()),
            Network::Inherit => args.push("inherit".into()),
            Network::Gateway(socket) => {
                args.push("gateway".into());
                args.push(socket.to_string());
            }
        }
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
            network: Network::None,
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
                    plan.network =
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
                    network =
                        Some(match rest.next().map(String::as_str) {
                            Some("none") => Network::None,
                            Some("inherit") => Network::Inherit,
                            Some("gateway") => match rest.next().and_then(|fd| fd.parse().ok()) {
                                Some(fd) if fd > 2 => Network::Gateway(fd),
                                _ => return Err(argument(
                                    "supervise: --network gateway needs the socket's descriptor",
                                )),
                            },
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
/// Under [`Network::Gateway`] returns the listener of the filter's `connect`
/// notifications, which the supervisor must hold (until then, and without
/// it, every `connect` fails).
pub fn restrict(plan: &Plan) -> Result<Option<std::os::fd::OwnedFd>> {
    let own_ipc = own_ipc_namespace();
    drop_capabilities()?;
    let failed = |e: landlock::RulesetError| capability(format!("landlock: {e}"));
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI_USED))
        .and_then(|r| r.scope(Scope::from_all(ABI_USED)))
        .map_err(failed)?;
    if plan.network != Network::Inherit {
        // Handled with no port rule: every TCP bind and connect is denied
        // (under `:allowlist` the supervisor connects, never the child).
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
    // The command must not inherit the grants' handles, nor the gateway's.
    let gateway = match plan.network {
        Network::Gateway(fd) => Some(fd),
        Network::None | Network::Inherit => None,
    };
    for fd in plan.handles.iter().map(|(_, fd)| fd).chain(&gateway) {
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
    match plan.network {
        Network::None => filter = filter.with_sockets_denied(),
        Network::Gateway(_) => {
            return seccomp::install_with_listener(&filter.with_connect_intercepted()).map(Some)
        }
        Network::Inherit if plan.deny_unix_sockets => filter = filter.with_unix_sockets_denied(),
        Network::Inherit => {}
    }
    seccomp::install(&filter).map(|()| None)
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

#[cfg(test)]
mod tests;
