//! Bubblewrap mechanism: the `bwrap` argv as one pure function of plain data
//! (SPEC B.8), the execution overlays it binds (16.5), the masks that keep a
//! scope's dropped grants out of reach (W12), the working-directory rule
//! (B.7), the functional probe's argv (B.2), and how bwrap's own exec failure
//! is read back as a shell-style exit status (17.4).
//!
//! Policy arrives as data; the only host facts needed (is this a directory,
//! where does this symlink point, what is this realpath) come through
//! [`HostProbe`], so every rule here is testable without touching the host.

mod args;
mod command;
mod exec_failure;
pub mod executable;
mod launcher;
mod options;
mod overlays;
mod probe;
mod validate;

#[cfg(test)]
mod tests;

pub use args::{bubblewrap_args, keep_session};
pub use command::{args_plan, ArgsRequest, HostArgv, Relay, Served, RELAY_PATH};
pub use exec_failure::{classify_exec_failure, ExecFailure};
pub use executable::{Resolved, Version, MINIMUM_VERSION};
pub(crate) use launcher::narrowed_rules;
pub use launcher::{Gateway, GatewayConnection, Launcher, Sandbox};
pub use options::{default_tmpfs, probe, unavailable_reason, Keywords, Number, Options, Probe};
pub use overlays::{launch_grants, scope_masks};
pub use probe::{functional_probe, is_executable_file, missing_reason, probe_argv, ProbeFailure};
pub use validate::{validate_cwd, validate_environment};

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use crate::grants::{Access, Grant};

/// Where bwrap normally lives (B.1).
pub const DEFAULT_EXECUTABLE: &str = "/usr/bin/bwrap";
/// Host trees bound read-only under `:isolated` (B.1).
pub const RUNTIME_ROOTS: [&str; 1] = ["/usr"];
/// Merged-/usr compatibility entries: recreated as symlinks or bound (B.1, B.8 step 4b).
pub const COMPATIBILITY_ROOTS: [&str; 4] = ["/bin", "/sbin", "/lib", "/lib64"];
/// H.3: the size of every tmpfs a launch mounts, unless `tmpfs_size:` says otherwise.
pub const DEFAULT_TMPFS_SIZE: u64 = 256 * 1024 * 1024;
/// The message of B.7.
pub const CWD_OUTSIDE_SCOPE: &str = "sandbox working directory is outside the selected scope";

/// `Policy#root_filesystem` (8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootFilesystem {
    Isolated,
    ReadOnly,
    ReadWrite,
}

impl RootFilesystem {
    /// Parses the Ruby symbol name.
    pub fn parse(name: &str) -> Option<RootFilesystem> {
        match name {
            "isolated" => Some(RootFilesystem::Isolated),
            "read_only" => Some(RootFilesystem::ReadOnly),
            "read_write" => Some(RootFilesystem::ReadWrite),
            _ => None,
        }
    }
}

/// The network mode a launch enforces (7.2): the same type the scope rules narrow.
pub use crate::scope::NetworkMode;

/// The `proc:` option of B.4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcMount {
    /// `--proc /proc`: a procfs of the sandbox's own PID namespace.
    New,
    /// No `/proc` at all.
    None,
    /// A host directory bound at `/proc`.
    Bind { source: PathBuf, access: Access },
}

/// What `lstat` says about a host path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEntry {
    Directory,
    /// A symlink and what `readlink` returned.
    Symlink(PathBuf),
    Other,
    Missing,
}

/// The few host facts the argv depends on; tests substitute a fake.
pub trait HostProbe {
    /// The entry itself, without following a final symlink.
    fn entry(&self, path: &Path) -> HostEntry;
    /// True iff `path` is a directory after following symlinks (Ruby's `File.directory?`).
    fn is_dir(&self, path: &Path) -> bool;
    /// `realpath(3)`, or `None` when the path is gone.
    fn realpath(&self, path: &Path) -> Option<PathBuf>;
}

/// The real host.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealHost;

impl HostProbe for RealHost {
    fn entry(&self, path: &Path) -> HostEntry {
        match std::fs::symlink_metadata(path) {
            Err(_) => HostEntry::Missing,
            Ok(meta) if meta.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(target) => HostEntry::Symlink(target),
                Err(_) => HostEntry::Missing,
            },
            Ok(meta) if meta.is_dir() => HostEntry::Directory,
            Ok(_) => HostEntry::Other,
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn realpath(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

/// Everything one launch's bwrap argv depends on.
#[derive(Debug, Clone)]
pub struct Launch {
    pub root_filesystem: RootFilesystem,
    /// The grants of this launch, already completed by [`launch_grants`].
    pub grants: Vec<Grant>,
    /// Configured masks (B.4) plus the scope masks of [`scope_masks`].
    pub masks: Vec<PathBuf>,
    pub tmpfs: Vec<PathBuf>,
    pub proc_mount: ProcMount,
    pub runtime_roots: Vec<PathBuf>,
    pub compatibility_roots: Vec<PathBuf>,
    /// In-sandbox absolute working directory (already resolved, see B.7).
    pub cwd: PathBuf,
    /// Workspace root and named paths: a tmpfs holding one is not a valid cwd (B.7).
    pub workspace_paths: Vec<PathBuf>,
    /// The child's variables in merge order (16.4).
    pub environment: Vec<(String, String)>,
    pub inherit_environment: bool,
    pub network: NetworkMode,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// A file descriptor holding the filter of `seccomp.rs`, kept open across bwrap's exec.
    pub seccomp_fd: Option<RawFd>,
    /// Bytes each tmpfs may hold (H.3): tmpfs pages are host memory.
    pub tmpfs_size: u64,
    /// Read-only binds (source, target) beyond the grants (G.5, G.6: the
    /// relay helper, the gateway's socket directory), emitted after the
    /// tmpfs mounts and masks so neither hides them; bwrap creates their
    /// parents.
    pub extra_ro_binds: Vec<(PathBuf, PathBuf)>,
    /// Where the launch would show the folder of every sandbox's gateway
    /// directory: an empty tmpfs each, after the grants and masks, so no
    /// child reaches another gateway's socket (docs/security.md).
    pub gateway_masks: Vec<PathBuf>,
    /// The built-in gateway's own directory (or a view's, and its CA
    /// bundle) as a descriptor bwrap inherits and the in-sandbox path it is
    /// bound at, read-only from the handle, after those masks.
    pub gateway_binds: Vec<(RawFd, PathBuf)>,
    /// The host's trust directories under `:allowlist` (descriptor as bwrap
    /// sees it, in-sandbox path), bound read-only from their handles with
    /// the binds above, in an isolated root only (another root has them).
    pub trust_binds: Vec<(RawFd, PathBuf)>,
    /// An executable copied in from a descriptor bwrap inherits (its number
    /// in bwrap) to an in-sandbox path: `--perms 0555 --ro-bind-data FD
    /// PATH`, emitted with the binds above (the relay helper).
    pub executable_data: Option<(RawFd, PathBuf)>,
    /// A file copied in read-only from a descriptor bwrap inherits
    /// (the sandbox's `/etc/hosts` naming the relay's transparent
    /// listeners), emitted after the binds above so it covers the host's.
    pub hosts_data: Option<(RawFd, PathBuf)>,
    /// `--info-fd` and `--block-fd` (descriptors as bwrap sees them): the
    /// sandbox waits, after every setup step and before anything of the
    /// launch runs, until the host has lowered its network namespace's
    /// `ip_unprivileged_port_start` and checked its nested mounts
    /// ([`crate::process::hold`]).
    pub hold_fds: Option<(RawFd, RawFd)>,
    /// The descriptor (as bwrap sees it) each grant source is bound
    /// from (`--bind-fd`/`--ro-bind-fd`); a grant not listed is bound by its
    /// path (only in the argv `bubblewrap_args` shows, never in a launch).
    pub bind_fds: Vec<(PathBuf, RawFd)>,
    /// The mounts nested beneath a writable bind (the root under
    /// `:read_write`, or a writable grant), which a concurrent session could
    /// move while bwrap resolves them: checked from the host before the
    /// launch goes on ([`Options::bind_from`] fills it in).
    pub checked_mounts: Vec<crate::process::mount_check::ExpectedMount>,
}

impl Launch {
    /// A launch with the backend defaults of B.4 for `grants`, rooted at `cwd`.
    pub fn new(root_filesystem: RootFilesystem, grants: Vec<Grant>, cwd: PathBuf) -> Launch {
        Launch {
            root_filesystem,
            grants,
            masks: Vec::new(),
            tmpfs: default_tmpfs(),
            proc_mount: ProcMount::New,
            runtime_roots: RUNTIME_ROOTS.iter().map(PathBuf::from).collect(),
            compatibility_roots: COMPATIBILITY_ROOTS.iter().map(PathBuf::from).collect(),
            cwd,
            workspace_paths: Vec::new(),
            environment: Vec::new(),
            inherit_environment: false,
            network: NetworkMode::None,
            uid: None,
            gid: None,
            seccomp_fd: None,
            tmpfs_size: DEFAULT_TMPFS_SIZE,
            extra_ro_binds: Vec::new(),
            gateway_masks: Vec::new(),
            gateway_binds: Vec::new(),
            trust_binds: Vec::new(),
            executable_data: None,
            hosts_data: None,
            hold_fds: None,
            bind_fds: Vec::new(),
            checked_mounts: Vec::new(),
        }
    }
}
