//! Bubblewrap mechanism: the `bwrap` argv as one pure function of plain data
//! (SPEC B.8), the execution overlays it binds (16.5), the masks that keep a
//! scope's dropped grants out of reach (W12), the working-directory rule
//! (B.7), the functional probe's argv (B.2), and how bwrap's own exec failure
//! is read back as a shell-style exit status (17.4).
//!
//! Policy arrives as data; the only host facts needed (is this a directory,
//! where does this symlink point, what is this realpath) come through
//! [`HostProbe`], so every rule here is testable without touching the host.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::RawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{argument, policy, Result};
use crate::grants::{Access, Grant};
use crate::paths;

/// Where bwrap normally lives (B.1).
pub const DEFAULT_EXECUTABLE: &str = "/usr/bin/bwrap";
/// Host trees bound read-only under `:isolated` (B.1).
pub const RUNTIME_ROOTS: [&str; 1] = ["/usr"];
/// Merged-/usr compatibility entries: recreated as symlinks or bound (B.1, B.8 step 4b).
pub const COMPATIBILITY_ROOTS: [&str; 4] = ["/bin", "/sbin", "/lib", "/lib64"];
/// The message of B.7.
/// H.3: the size of every tmpfs a launch mounts, unless `tmpfs_size:` says otherwise.
pub const DEFAULT_TMPFS_SIZE: u64 = 256 * 1024 * 1024;
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
}

impl Launch {
    /// A launch with the backend defaults of B.4 for `grants`, rooted at `cwd`.
    pub fn new(root_filesystem: RootFilesystem, grants: Vec<Grant>, cwd: PathBuf) -> Launch {
        Launch {
            root_filesystem,
            grants,
            masks: Vec::new(),
            tmpfs: vec![PathBuf::from("/tmp"), PathBuf::from("/run")],
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
        }
    }
}

/// Sorts shortest target first, keeping the given order among equals.
fn sort_shortest_first(grants: &mut [Grant]) {
    grants.sort_by_key(|g| g.target.as_os_str().len());
}

/// 16.5 steps (4) and (5): the selected grants plus an execution overlay for
/// every policy-level read-only grant whose canonical root lies inside a
/// selected writable grant, re-added read-only at the matching target even
/// if the scope omitted it. On duplicate targets the read-only entry wins.
/// The result is ordered shortest target first.
pub fn launch_grants(
    selected: &[Grant],
    policy_grants: &[Grant],
    host: &dyn HostProbe,
) -> Vec<Grant> {
    let mut candidates: Vec<Grant> = selected.to_vec();
    for readonly in policy_grants.iter().filter(|g| !g.access.writable()) {
        let Some(inner) = host.realpath(&readonly.source) else {
            continue;
        };
        for writable in selected.iter().filter(|g| g.access.writable()) {
            let Some(outer) = host.realpath(&writable.source) else {
                continue;
            };
            let Some(relative) = paths::remainder(&inner, &outer) else {
                continue;
            };
            candidates.push(Grant {
                source: inner.clone(),
                target: writable.target.join(relative),
                access: Access::ReadOnly,
                tools: readonly.tools,
                protect_aliases: readonly.protect_aliases,
            });
        }
    }

    let mut result: Vec<Grant> = Vec::new();
    for grant in candidates {
        match result.iter_mut().find(|kept| kept.target == grant.target) {
            Some(kept) => {
                if kept.access.writable() && !grant.access.writable() {
                    *kept = grant;
                }
            }
            None => result.push(grant),
        }
    }
    sort_shortest_first(&mut result);
    result
}

/// W12: every policy grant that this launch did not select but that lies
/// physically inside a launch grant is masked (an empty read-only tmpfs at
/// the place it appears), so a process sees no more than its scope. With no
/// scope every policy grant is selected and nothing is masked.
pub fn scope_masks(
    policy_grants: &[Grant],
    launch: &[Grant],
    host: &dyn HostProbe,
) -> Vec<PathBuf> {
    let launched: Vec<(PathBuf, &Grant)> = launch
        .iter()
        .filter_map(|g| host.realpath(&g.source).map(|root| (root, g)))
        .collect();
    let mut masks: Vec<PathBuf> = Vec::new();
    for dropped in policy_grants {
        let Some(inner) = host.realpath(&dropped.source) else {
            continue;
        };
        if launched.iter().any(|(root, _)| *root == inner) {
            continue;
        }
        for (outer, grant) in &launched {
            match paths::remainder(&inner, outer) {
                Some(relative) if !relative.as_os_str().is_empty() => {
                    let target = grant.target.join(relative);
                    if !masks.contains(&target) {
                        masks.push(target);
                    }
                }
                _ => {}
            }
        }
    }
    masks.sort_by_key(|m| m.as_os_str().len());
    masks
}

/// B.7: the working directory must be reachable through this launch: the
/// deepest grant or mask covering it must be a grant, or else it must lie in
/// a tmpfs that holds no workspace path (so a workspace under `/tmp` that a
/// scope dropped is never a valid working directory).
pub fn validate_cwd(
    cwd: &Path,
    grants: &[Grant],
    masks: &[PathBuf],
    tmpfs: &[PathBuf],
    workspace_paths: &[PathBuf],
) -> Result<PathBuf> {
    if !cwd.is_absolute() {
        return Err(policy(CWD_OUTSIDE_SCOPE));
    }
    let cwd = paths::clean(cwd);
    let depth = |p: &Path| p.as_os_str().len();
    let grant_depth = grants
        .iter()
        .filter(|g| g.covers(&cwd))
        .map(|g| depth(&g.target))
        .max();
    let mask_depth = masks
        .iter()
        .filter(|m| cwd.starts_with(m))
        .map(|m| depth(m))
        .max();
    match (grant_depth, mask_depth) {
        (Some(g), Some(m)) if g > m => return Ok(cwd),
        (Some(_), None) => return Ok(cwd),
        (_, Some(_)) => return Err(policy(CWD_OUTSIDE_SCOPE)),
        (None, None) => {}
    }
    let in_clean_tmpfs = tmpfs.iter().any(|t| {
        cwd.starts_with(t)
            && !workspace_paths
                .iter()
                .any(|w| paths::clean(w).starts_with(t))
    });
    if in_clean_tmpfs {
        Ok(cwd)
    } else {
        Err(policy(CWD_OUTSIDE_SCOPE))
    }
}

/// W17: names and values that cannot be passed to a child are refused before
/// anything is spawned.
pub fn validate_environment(environment: &[(String, String)]) -> Result<()> {
    for (name, value) in environment {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(argument(format!(
                "environment variable name {name:?} must be non-empty and contain neither '=' nor NUL"
            )));
        }
        if value.contains('\0') {
            return Err(argument(format!(
                "environment variable {name} must not contain NUL"
            )));
        }
    }
    Ok(())
}

/// Accumulates an argv of OS strings.
struct Argv {
    args: Vec<OsString>,
    tmpfs_size: u64,
}

impl Argv {
    /// A tmpfs at `path`, never larger than the launch's size (H.3).
    fn tmpfs(&mut self, path: &Path) {
        self.value("--size", self.tmpfs_size.to_string());
        self.path("--tmpfs", path);
    }
    fn flag(&mut self, flag: &str) {
        self.args.push(flag.into());
    }
    fn path(&mut self, flag: &str, path: &Path) {
        self.value(flag, path.as_os_str());
    }
    fn value(&mut self, flag: &str, value: impl AsRef<OsStr>) {
        self.args.push(flag.into());
        self.args.push(value.as_ref().to_owned());
    }
    fn two(&mut self, flag: &str, first: &OsStr, second: &OsStr) {
        self.args.push(flag.into());
        self.args.push(first.to_owned());
        self.args.push(second.to_owned());
    }
    fn bind(&mut self, grant: &Grant) {
        let flag = if grant.access.writable() {
            "--bind"
        } else {
            "--ro-bind"
        };
        self.two(flag, grant.source.as_os_str(), grant.target.as_os_str());
    }
}

/// True iff `path` lies strictly beneath `base`.
fn strictly_beneath(path: &Path, base: &Path) -> bool {
    path != base && path.starts_with(base)
}

/// B.8: the bwrap options (everything before `--`) for one launch, in the
/// documented emission order. The working directory is validated (B.7) and
/// the environment checked (W17); either failure returns an error and no argv.
pub fn bubblewrap_args(launch: &Launch, host: &dyn HostProbe) -> Result<Vec<OsString>> {
    validate_environment(&launch.environment)?;
    let mut grants = launch.grants.clone();
    sort_shortest_first(&mut grants);
    let mut masks: Vec<PathBuf> = Vec::new();
    for mask in &launch.masks {
        if !masks.contains(mask) {
            masks.push(mask.clone());
        }
    }
    masks.sort_by_key(|m| m.as_os_str().len());
    let cwd = validate_cwd(
        &launch.cwd,
        &grants,
        &masks,
        &launch.tmpfs,
        &launch.workspace_paths,
    )?;
    let isolated = launch.root_filesystem == RootFilesystem::Isolated;
    let mut argv = Argv {
        args: Vec::new(),
        tmpfs_size: launch.tmpfs_size,
    };

    // 1. Namespaces and privileges. `--disable-userns` (bwrap >= 0.8) stops
    // the child from creating nested user namespaces, which is where most
    // kernel attack surface reachable from an unprivileged sandbox lives.
    for flag in [
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--new-session",
        "--die-with-parent",
    ] {
        argv.flag(flag);
    }
    argv.value("--cap-drop", "ALL");

    // 2. The root.
    match launch.root_filesystem {
        RootFilesystem::Isolated => argv.tmpfs(Path::new("/")),
        RootFilesystem::ReadOnly => argv.two("--ro-bind", OsStr::new("/"), OsStr::new("/")),
        RootFilesystem::ReadWrite => argv.two("--bind", OsStr::new("/"), OsStr::new("/")),
    }

    // 3. Network: only :inherit keeps the host's namespace.
    if launch.network != NetworkMode::Inherit {
        argv.flag("--unshare-net");
    }

    // 4. Runtime and compatibility roots of an isolated root.
    if isolated {
        for root in &launch.runtime_roots {
            if host.is_dir(root) {
                argv.two("--ro-bind", root.as_os_str(), root.as_os_str());
            }
        }
        for root in &launch.compatibility_roots {
            match host.entry(root) {
                HostEntry::Symlink(target) => {
                    argv.two("--symlink", target.as_os_str(), root.as_os_str())
                }
                HostEntry::Directory => argv.two("--ro-bind", root.as_os_str(), root.as_os_str()),
                HostEntry::Other | HostEntry::Missing => {}
            }
        }
    }

    // 5. and 6. Devices and /proc. bwrap's /dev is a tmpfs it cannot size:
    // it turns read-only in step 12, and /dev/shm (a plain directory in it)
    // becomes a sized tmpfs of its own.
    argv.path("--dev", Path::new("/dev"));
    argv.tmpfs(Path::new("/dev/shm"));
    match &launch.proc_mount {
        ProcMount::New => {
            argv.path("--proc", Path::new("/proc"));
            // The child's uid 0 maps to the host's root when the caller is
            // root, and sysctl files check only the euid: without this a
            // sandboxed root could set host-global sysctls such as
            // kernel.core_pattern. bwrap skips its own cover of /proc/sys
            // because the directory itself is mode 0555. Sysctl handlers
            // read the caller's namespaces, so the host view shows the same
            // values.
            argv.two(
                "--ro-bind",
                OsStr::new("/proc/sys"),
                OsStr::new("/proc/sys"),
            );
        }
        ProcMount::None => {}
        ProcMount::Bind { source, access } => {
            let flag = if access.writable() {
                "--bind"
            } else {
                "--ro-bind"
            };
            argv.two(flag, source.as_os_str(), OsStr::new("/proc"));
        }
    }

    // 7. Scratch space.
    for tmpfs in &launch.tmpfs {
        argv.tmpfs(tmpfs);
    }

    // 8. Missing ancestors: all of them in an empty root, otherwise only
    // those a tmpfs just hid.
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let wanted = grants
        .iter()
        .map(|g| g.target.as_path())
        .chain(launch.tmpfs.iter().map(PathBuf::as_path))
        .chain(masks.iter().map(PathBuf::as_path))
        .chain(std::iter::once(cwd.as_path()));
    for path in wanted {
        let mut ancestors: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .filter(|a| *a != Path::new("/"))
            .collect();
        ancestors.reverse();
        for ancestor in ancestors {
            let missing = isolated || launch.tmpfs.iter().any(|t| strictly_beneath(ancestor, t));
            if missing && seen.insert(ancestor.to_path_buf()) {
                argv.path("--dir", ancestor);
            }
        }
    }

    // 9. Identity binds, shortest target first, except those a mask holds.
    let under_mask = |path: &Path| masks.iter().any(|m| strictly_beneath(path, m));
    for grant in grants.iter().filter(|g| !under_mask(&g.target)) {
        argv.bind(grant);
    }

    // 10. Masks. A grant selected beneath a mask is bound inside it before
    // the mask turns read-only, so masking a dropped parent never hides a
    // grant the launch kept.
    enum Layer<'a> {
        Bind(&'a Grant),
        Mask(&'a Path),
    }
    let mut layers: Vec<Layer> = grants
        .iter()
        .filter(|g| under_mask(&g.target))
        .map(Layer::Bind)
        .chain(masks.iter().map(|m| Layer::Mask(m.as_path())))
        .collect();
    let layer_target = |layer: &Layer| -> usize {
        match layer {
            Layer::Bind(g) => g.target.as_os_str().len(),
            Layer::Mask(m) => m.as_os_str().len(),
        }
    };
    layers.sort_by_key(|l| layer_target(l));
    let mut deferred: Vec<&Path> = Vec::new();
    for (index, layer) in layers.iter().enumerate() {
        match layer {
            Layer::Bind(grant) => argv.bind(grant),
            Layer::Mask(mask) => {
                argv.tmpfs(mask);
                let holds_later = layers[index + 1..].iter().any(|later| match later {
                    Layer::Bind(g) => strictly_beneath(&g.target, mask),
                    Layer::Mask(m) => strictly_beneath(m, mask),
                });
                if holds_later {
                    deferred.push(mask);
                } else {
                    argv.path("--remount-ro", mask);
                }
            }
        }
    }
    for mask in deferred.iter().rev() {
        argv.path("--remount-ro", mask);
    }

    // 10b. What the gateway and relay need, read-only, above everything else.
    for (source, target) in &launch.extra_ro_binds {
        argv.two("--ro-bind", source.as_os_str(), target.as_os_str());
    }

    // 11. and 12. Working directory, then freeze /dev (its mounts stay as
    // they are) and the empty root.
    argv.path("--chdir", &cwd);
    argv.path("--remount-ro", Path::new("/dev"));
    if isolated {
        argv.path("--remount-ro", Path::new("/"));
    }

    // 13. to 15. Environment and identity.
    if !launch.inherit_environment {
        argv.flag("--clearenv");
    }
    for (name, value) in &launch.environment {
        argv.two("--setenv", OsStr::new(name), OsStr::new(value));
    }
    if let Some(uid) = launch.uid {
        argv.value("--uid", uid.to_string());
    }
    if let Some(gid) = launch.gid {
        argv.value("--gid", gid.to_string());
    }

    // 16. The subprocess filter is read by bwrap and installed right before the child's execve.
    if let Some(fd) = launch.seccomp_fd {
        argv.value("--seccomp", fd.to_string());
    }
    Ok(argv.args)
}

/// B.2: the functional probe: can this bwrap create the namespaces we need?
pub fn probe_argv(executable: &Path) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![executable.as_os_str().to_owned()];
    // --disable-userns is probed too: every launch uses it.
    for part in [
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--new-session",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--",
        "/bin/true",
    ] {
        argv.push(part.into());
    }
    argv
}

/// B.2: the reason for a missing executable, with what to do about it.
pub fn missing_reason(executable: &Path) -> String {
    format!(
        "Bubblewrap is not installed at {} (install it with `apt-get install bubblewrap`, or pass bubblewrap: PATH)",
        executable.display()
    )
}

/// B.2: the reason for a failed functional probe: bwrap's first stderr line,
/// or a generic phrase, followed by the usual remedy.
pub fn probe_failure_reason(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let first = text.lines().map(str::trim).find(|line| !line.is_empty());
    format!(
        "Bubblewrap is installed but unavailable: {} (enable unprivileged user namespaces: \
         sysctl -w kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, \
         or allow bwrap in the AppArmor/SELinux policy)",
        first.unwrap_or("the namespace probe failed")
    )
}

/// True iff `path` is a regular file this process may execute.
pub fn is_executable_file(path: &Path) -> bool {
    path.is_file() && rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

/// A probed executable's path and file identity: device, inode, mtime.
type ProbeKey = (PathBuf, u64, u64, i64);

/// Executables whose functional probe passed, keyed by path and file
/// identity, so a replaced binary is probed again (W18).
static PROBED: Mutex<Option<HashSet<ProbeKey>>> = Mutex::new(None);

fn probe_key(executable: &Path) -> Option<ProbeKey> {
    let meta = std::fs::metadata(executable).ok()?;
    Some((
        executable.to_path_buf(),
        meta.dev(),
        meta.ino(),
        meta.mtime(),
    ))
}

/// B.2 and B.5 step 6: runs the functional probe (5 s, 16 KiB of stderr)
/// unless it already passed for this executable in this process, and
/// returns the failure reason otherwise. The probe takes milliseconds; the
/// bound only guards against a wedged kernel.
pub fn functional_probe(executable: &Path) -> std::result::Result<(), String> {
    let key = probe_key(executable);
    let cached = |key: &ProbeKey| {
        PROBED
            .lock()
            .map(|set| set.as_ref().is_some_and(|s| s.contains(key)))
            .unwrap_or(false)
    };
    if key.as_ref().is_some_and(cached) {
        return Ok(());
    }
    let argv = probe_argv(executable);
    let spawned = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = spawned else {
        return Err(probe_failure_reason(b""));
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let mut stderr = Vec::new();
    if let Some(pipe) = child.stderr.take() {
        let _ = pipe.take(16 * 1024).read_to_end(&mut stderr);
    }
    match status {
        Some(status) if status.success() => {
            if let (Some(key), Ok(mut set)) = (key, PROBED.lock()) {
                set.get_or_insert_with(HashSet::new).insert(key);
            }
            Ok(())
        }
        _ => Err(probe_failure_reason(&stderr)),
    }
}

/// Why bwrap could not start the program (17.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecFailure {
    /// No such program inside the sandbox: exit 127.
    NotFound,
    /// The program exists but cannot be executed: exit 126.
    NotExecutable,
}

impl ExecFailure {
    /// The shell-style exit status.
    pub fn exit_code(self) -> i32 {
        match self {
            ExecFailure::NotFound => 127,
            ExecFailure::NotExecutable => 126,
        }
    }

    /// The stderr the caller sees, naming the program as the caller wrote it.
    pub fn message(self, argv0: &str) -> String {
        match self {
            ExecFailure::NotFound => format!("{argv0}: command not found\n"),
            ExecFailure::NotExecutable => format!("{argv0}: permission denied\n"),
        }
    }
}

/// Reads bwrap's own `execvp` failure. bwrap reports it as exit 1 with
/// exactly `bwrap: execvp ARGV0: STRERROR\n` on stderr and nothing on stdout
/// (its environment is empty, so the C locale's wording applies). Anything
/// else is the program's own result and is left alone.
pub fn classify_exec_failure(
    exit_code: Option<i32>,
    stdout: &[u8],
    stderr: &[u8],
    exec_argv0: &[u8],
) -> Option<ExecFailure> {
    if exit_code != Some(1) || !stdout.is_empty() {
        return None;
    }
    let prefix = [b"bwrap: execvp ".as_slice(), exec_argv0, b": "].concat();
    let reason = stderr
        .strip_prefix(prefix.as_slice())?
        .strip_suffix(b"\n")?;
    match reason {
        b"No such file or directory" | b"Not a directory" => Some(ExecFailure::NotFound),
        b"Permission denied" | b"Exec format error" | b"Operation not permitted" => {
            Some(ExecFailure::NotExecutable)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A host described by a table: directories, symlinks and realpaths.
    #[derive(Default)]
    struct FakeHost {
        entries: HashMap<PathBuf, HostEntry>,
        realpaths: HashMap<PathBuf, PathBuf>,
    }

    impl FakeHost {
        /// Debian 12: merged /usr with relative compatibility symlinks.
        fn debian() -> FakeHost {
            let mut host = FakeHost::default();
            host.entries.insert("/usr".into(), HostEntry::Directory);
            for (link, target) in [
                ("/bin", "usr/bin"),
                ("/sbin", "usr/sbin"),
                ("/lib", "usr/lib"),
                ("/lib64", "usr/lib64"),
            ] {
                host.entries
                    .insert(link.into(), HostEntry::Symlink(target.into()));
            }
            host
        }
        fn alias(mut self, path: &str, real: &str) -> FakeHost {
            self.realpaths.insert(path.into(), real.into());
            self
        }
    }

    impl HostProbe for FakeHost {
        fn entry(&self, path: &Path) -> HostEntry {
            self.entries
                .get(path)
                .cloned()
                .unwrap_or(HostEntry::Missing)
        }
        fn is_dir(&self, path: &Path) -> bool {
            matches!(self.entries.get(path), Some(HostEntry::Directory))
        }
        fn realpath(&self, path: &Path) -> Option<PathBuf> {
            Some(
                self.realpaths
                    .get(path)
                    .cloned()
                    .unwrap_or_else(|| path.to_path_buf()),
            )
        }
    }

    fn grant(path: &str, access: Access, tools: bool) -> Grant {
        Grant {
            source: path.into(),
            target: path.into(),
            access,
            tools,
            protect_aliases: true,
        }
    }
    fn rw(path: &str) -> Grant {
        grant(path, Access::ReadWrite, true)
    }
    fn ro(path: &str) -> Grant {
        grant(path, Access::ReadOnly, true)
    }
    fn runtime(path: &str, access: Access) -> Grant {
        grant(path, access, false)
    }

    fn strings(argv: &[OsString]) -> Vec<String> {
        argv.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }
    fn args(launch: &Launch, host: &FakeHost) -> Vec<String> {
        strings(&bubblewrap_args(launch, host).unwrap())
    }
    /// True iff `needle` occurs as a contiguous run in `haystack`.
    fn has(haystack: &[String], needle: &[&str]) -> bool {
        haystack
            .windows(needle.len())
            .any(|w| w.iter().zip(needle).all(|(a, b)| a == b))
    }
    fn position(haystack: &[String], needle: &[&str]) -> usize {
        haystack
            .windows(needle.len())
            .position(|w| w.iter().zip(needle).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{needle:?} not in {haystack:?}"))
    }

    fn isolated_workspace() -> Launch {
        Launch::new(RootFilesystem::Isolated, vec![rw("/w")], "/w".into())
    }

    #[test]
    fn isolated_root_emits_the_documented_order_exactly() {
        let mut launch = isolated_workspace();
        launch.grants = vec![ro("/w/skills"), rw("/w")];
        launch.environment = vec![("LITTLE_GHOST_WORKSPACE_ROOT".into(), "/w".into())];
        let argv = args(&launch, &FakeHost::debian());
        let expected: Vec<&str> = vec![
            "--unshare-user",
            "--disable-userns",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--new-session",
            "--die-with-parent",
            "--cap-drop",
            "ALL",
            "--size",
            "268435456",
            "--tmpfs",
            "/",
            "--unshare-net",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--dev",
            "/dev",
            "--size",
            "268435456",
            "--tmpfs",
            "/dev/shm",
            "--proc",
            "/proc",
            "--ro-bind",
            "/proc/sys",
            "/proc/sys",
            "--size",
            "268435456",
            "--tmpfs",
            "/tmp",
            "--size",
            "268435456",
            "--tmpfs",
            "/run",
            "--dir",
            "/w",
            "--bind",
            "/w",
            "/w",
            "--ro-bind",
            "/w/skills",
            "/w/skills",
            "--chdir",
            "/w",
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--clearenv",
            "--setenv",
            "LITTLE_GHOST_WORKSPACE_ROOT",
            "/w",
        ];
        assert_eq!(argv, expected);
    }

    #[test]
    fn read_only_root_binds_the_host_read_only_without_runtime_roots() {
        let launch = Launch::new(RootFilesystem::ReadOnly, vec![rw("/w")], "/w".into());
        let argv = args(&launch, &FakeHost::debian());
        assert_eq!(
            &argv[10..15],
            &["--ro-bind", "/", "/", "--unshare-net", "--dev"]
        );
        assert!(!has(&argv, &["--ro-bind", "/usr", "/usr"]));
        assert!(!argv.iter().any(|a| a == "--symlink"));
        assert!(!has(&argv, &["--remount-ro", "/"]));
        // /w is visible through the host root: no --dir for it.
        assert!(!has(&argv, &["--dir", "/w"]));
    }

    #[test]
    fn read_write_root_binds_the_host_writable() {
        let launch = Launch::new(RootFilesystem::ReadWrite, vec![rw("/w")], "/w".into());
        let argv = args(&launch, &FakeHost::debian());
        assert_eq!(&argv[10..13], &["--bind", "/", "/"]);
        assert!(!has(&argv, &["--remount-ro", "/"]));
    }

    #[test]
    fn only_inherit_keeps_the_host_network() {
        for (mode, unshared) in [
            (NetworkMode::None, true),
            (NetworkMode::Allowlist, true),
            (NetworkMode::Inherit, false),
        ] {
            let mut launch = isolated_workspace();
            launch.network = mode;
            let argv = args(&launch, &FakeHost::debian());
            assert_eq!(
                argv.iter().any(|a| a == "--unshare-net"),
                unshared,
                "{mode:?}"
            );
        }
    }

    #[test]
    fn relay_binds_come_after_tmpfs_and_masks() {
        let mut launch = isolated_workspace();
        launch.masks = vec![PathBuf::from("/tmp")];
        let directory = PathBuf::from("/tmp/littleghost-gateway-1");
        launch.extra_ro_binds = vec![(directory.clone(), directory)];
        let argv = args(&launch, &FakeHost::debian());
        let bind = argv
            .windows(3)
            .position(|w| {
                w == [
                    "--ro-bind",
                    "/tmp/littleghost-gateway-1",
                    "/tmp/littleghost-gateway-1",
                ]
            })
            .expect("the gateway directory is bound");
        let last_tmpfs = argv.iter().rposition(|a| a == "--tmpfs").unwrap();
        assert!(bind > last_tmpfs, "{argv:?}");
        assert!(bind < argv.iter().position(|a| a == "--chdir").unwrap());
    }

    #[test]
    fn namespaces_session_and_capabilities_always_come_first() {
        for root in [
            RootFilesystem::Isolated,
            RootFilesystem::ReadOnly,
            RootFilesystem::ReadWrite,
        ] {
            let launch = Launch::new(root, vec![rw("/w")], "/w".into());
            let argv = args(&launch, &FakeHost::debian());
            assert_eq!(
                &argv[..10],
                &[
                    "--unshare-user",
                    "--disable-userns",
                    "--unshare-pid",
                    "--unshare-ipc",
                    "--unshare-uts",
                    "--unshare-cgroup-try",
                    "--new-session",
                    "--die-with-parent",
                    "--cap-drop",
                    "ALL"
                ]
            );
            assert!(has(&argv, &["--dev", "/dev"]));
        }
    }

    #[test]
    fn upstream_example_dirs_beneath_a_tmpfs_under_read_only() {
        let launch = Launch::new(
            RootFilesystem::ReadOnly,
            vec![rw("/tmp/tenant/runs/123")],
            "/tmp/tenant/runs/123".into(),
        );
        let argv = args(&launch, &FakeHost::debian());
        let dirs: Vec<&String> = argv
            .windows(2)
            .filter(|w| w[0] == "--dir")
            .map(|w| &w[1])
            .collect();
        assert_eq!(dirs, vec!["/tmp/tenant", "/tmp/tenant/runs"]);
        assert!(position(&argv, &["--tmpfs", "/tmp"]) < position(&argv, &["--dir", "/tmp/tenant"]));
        assert!(
            position(&argv, &["--dir", "/tmp/tenant/runs"])
                < position(
                    &argv,
                    &["--bind", "/tmp/tenant/runs/123", "/tmp/tenant/runs/123"]
                )
        );
    }

    #[test]
    fn isolated_dirs_cover_every_proper_ancestor_once() {
        let mut launch = Launch::new(
            RootFilesystem::Isolated,
            vec![rw("/srv/w"), ro("/srv/w/a/b")],
            "/srv/w".into(),
        );
        launch.masks = vec!["/srv/w/c".into()];
        let argv = args(&launch, &FakeHost::debian());
        let dirs: Vec<&String> = argv
            .windows(2)
            .filter(|w| w[0] == "--dir")
            .map(|w| &w[1])
            .collect();
        assert_eq!(dirs, vec!["/srv", "/srv/w", "/srv/w/a"]);
    }

    #[test]
    fn upstream_examples_identity_binds() {
        let launch = Launch::new(
            RootFilesystem::Isolated,
            vec![ro("/w/skills"), rw("/w")],
            "/w".into(),
        );
        let argv = args(&launch, &FakeHost::debian());
        assert!(has(&argv, &["--bind", "/w", "/w"]));
        assert!(has(&argv, &["--ro-bind", "/w/skills", "/w/skills"]));
        assert!(
            position(&argv, &["--bind", "/w", "/w"])
                < position(&argv, &["--ro-bind", "/w/skills", "/w/skills"])
        );
    }

    #[test]
    fn proc_modes() {
        let host = FakeHost::debian();
        let mut launch = isolated_workspace();
        launch.proc_mount = ProcMount::None;
        assert!(!args(&launch, &host).iter().any(|a| a == "/proc"));
        launch.proc_mount = ProcMount::Bind {
            source: "/srv/proc".into(),
            access: Access::ReadOnly,
        };
        assert!(has(
            &args(&launch, &host),
            &["--ro-bind", "/srv/proc", "/proc"]
        ));
        launch.proc_mount = ProcMount::Bind {
            source: "/srv/proc".into(),
            access: Access::ReadWrite,
        };
        assert!(has(
            &args(&launch, &host),
            &["--bind", "/srv/proc", "/proc"]
        ));
        launch.proc_mount = ProcMount::New;
        let argv = args(&launch, &host);
        assert!(position(&argv, &["--dev", "/dev"]) + 6 == position(&argv, &["--proc", "/proc"]));
        // The fresh /proc's sysctls are frozen right after it is mounted.
        assert_eq!(
            position(&argv, &["--proc", "/proc"]) + 2,
            position(&argv, &["--ro-bind", "/proc/sys", "/proc/sys"])
        );
    }

    #[test]
    fn tmpfs_list_is_emitted_in_order_and_can_be_empty() {
        let host = FakeHost::debian();
        let mut launch = isolated_workspace();
        launch.tmpfs = vec!["/scratch".into()];
        let argv = args(&launch, &host);
        assert!(has(&argv, &["--tmpfs", "/scratch"]));
        assert!(!has(&argv, &["--tmpfs", "/tmp"]));
        launch.tmpfs.clear();
        assert_eq!(
            args(&launch, &host)
                .iter()
                .filter(|a| *a == "--tmpfs")
                .count(),
            2
        ); // only the root and /dev/shm
    }

    #[test]
    fn every_tmpfs_gets_the_launch_size_and_dev_turns_read_only() {
        let host = FakeHost::debian();
        for root in [
            RootFilesystem::Isolated,
            RootFilesystem::ReadOnly,
            RootFilesystem::ReadWrite,
        ] {
            let mut launch = Launch::new(root, vec![rw("/w")], "/w".into());
            launch.masks = vec!["/w/.git".into()];
            launch.tmpfs_size = 8 * 1024 * 1024;
            let argv = args(&launch, &host);
            let tmpfs: Vec<usize> = (0..argv.len()).filter(|&i| argv[i] == "--tmpfs").collect();
            let expected = if root == RootFilesystem::Isolated {
                5
            } else {
                4
            };
            assert_eq!(tmpfs.len(), expected, "{root:?}: {argv:?}");
            for i in tmpfs {
                assert_eq!(argv[i - 2..i], ["--size", "8388608"], "{root:?}: {argv:?}");
            }
            assert!(has(&argv, &["--size", "8388608", "--tmpfs", "/dev/shm"]));
            // /dev freezes after everything mounted into it.
            assert!(position(&argv, &["--remount-ro", "/dev"]) > position(&argv, &["--chdir"]));
        }
        assert_eq!(
            Launch::new(RootFilesystem::Isolated, vec![], "/".into()).tmpfs_size,
            DEFAULT_TMPFS_SIZE
        );
        assert_eq!(DEFAULT_TMPFS_SIZE, 256 * 1024 * 1024);
    }

    #[test]
    fn compatibility_roots_follow_the_host() {
        let mut host = FakeHost::debian();
        host.entries.insert("/bin".into(), HostEntry::Directory);
        host.entries.remove(Path::new("/lib64"));
        host.entries.insert("/sbin".into(), HostEntry::Other);
        let argv = args(&isolated_workspace(), &host);
        assert!(has(&argv, &["--ro-bind", "/bin", "/bin"]));
        assert!(has(&argv, &["--symlink", "usr/lib", "/lib"]));
        assert!(!argv.iter().any(|a| a == "/lib64" || a == "/sbin"));
        // A runtime root that is not a directory is skipped.
        host.entries.remove(Path::new("/usr"));
        assert!(!args(&isolated_workspace(), &host)
            .iter()
            .any(|a| a == "/usr"));
    }

    #[test]
    fn masks_become_read_only_tmpfs_after_the_binds() {
        let mut launch = isolated_workspace();
        launch.masks = vec!["/w/.git".into()];
        let argv = args(&launch, &FakeHost::debian());
        let bind = position(&argv, &["--bind", "/w", "/w"]);
        let mask = position(&argv, &["--tmpfs", "/w/.git", "--remount-ro", "/w/.git"]);
        assert!(bind < mask && mask < position(&argv, &["--chdir", "/w"]));
    }

    #[test]
    fn a_grant_kept_beneath_a_mask_is_bound_before_the_mask_turns_read_only() {
        let mut launch = Launch::new(
            RootFilesystem::Isolated,
            vec![rw("/w"), ro("/w/a/b")],
            "/w".into(),
        );
        launch.masks = vec!["/w/a".into()];
        let argv = args(&launch, &FakeHost::debian());
        let tmpfs = position(&argv, &["--tmpfs", "/w/a"]);
        let bind = position(&argv, &["--ro-bind", "/w/a/b", "/w/a/b"]);
        let remount = position(&argv, &["--remount-ro", "/w/a"]);
        assert!(position(&argv, &["--bind", "/w", "/w"]) < tmpfs && tmpfs < bind && bind < remount);
    }

    #[test]
    fn environment_inherit_uid_gid_and_seccomp() {
        let host = FakeHost::debian();
        let mut launch = isolated_workspace();
        launch.environment = vec![("A".into(), "1".into()), ("B".into(), "two words".into())];
        launch.inherit_environment = true;
        launch.uid = Some(1000);
        launch.gid = Some(0);
        launch.seccomp_fd = Some(7);
        let argv = args(&launch, &host);
        assert!(!argv.iter().any(|a| a == "--clearenv"));
        let tail: Vec<&str> = argv[position(&argv, &["--setenv", "A"])..]
            .iter()
            .map(String::as_str)
            .collect();
        assert_eq!(
            tail,
            vec![
                "--setenv",
                "A",
                "1",
                "--setenv",
                "B",
                "two words",
                "--uid",
                "1000",
                "--gid",
                "0",
                "--seccomp",
                "7"
            ]
        );
        launch.inherit_environment = false;
        let argv = args(&launch, &host);
        assert_eq!(
            position(&argv, &["--clearenv"]) + 1,
            position(&argv, &["--setenv", "A"])
        );
    }

    #[test]
    fn bad_environment_names_are_refused_before_any_argv() {
        for (name, value) in [("", "x"), ("A=B", "x"), ("A\0", "x"), ("A", "x\0y")] {
            let mut launch = isolated_workspace();
            launch.environment = vec![(name.into(), value.into())];
            let err = bubblewrap_args(&launch, &FakeHost::debian()).unwrap_err();
            assert!(matches!(err, crate::Error::Argument(_)), "{name:?}");
        }
    }

    #[test]
    fn cwd_must_lie_in_a_selected_grant_or_a_workspace_free_tmpfs() {
        let grants = vec![rw("/w"), ro("/w/src")];
        let tmpfs = vec![PathBuf::from("/tmp"), PathBuf::from("/run")];
        let ws = vec![PathBuf::from("/w"), PathBuf::from("/w/src")];
        assert_eq!(
            validate_cwd(Path::new("/w/src/x"), &grants, &[], &tmpfs, &ws).unwrap(),
            PathBuf::from("/w/src/x")
        );
        assert_eq!(
            validate_cwd(Path::new("/w/./a/../b"), &grants, &[], &tmpfs, &ws).unwrap(),
            PathBuf::from("/w/b")
        );
        assert!(validate_cwd(Path::new("/tmp/scratch"), &grants, &[], &tmpfs, &ws).is_ok());
        for outside in ["/etc", "/w2", "relative"] {
            let err = validate_cwd(Path::new(outside), &grants, &[], &tmpfs, &ws).unwrap_err();
            assert_eq!(err, policy(CWD_OUTSIDE_SCOPE), "{outside}");
        }
        // A workspace under /tmp that the scope dropped is never a working directory.
        let ws_in_tmp = vec![PathBuf::from("/tmp/ws")];
        assert!(validate_cwd(Path::new("/tmp/ws"), &[], &[], &tmpfs, &ws_in_tmp).is_err());
        assert!(validate_cwd(Path::new("/tmp/other"), &[], &[], &tmpfs, &ws_in_tmp).is_err());
        // A masked directory is not a working directory, but a grant kept beneath it is.
        let masks = vec![PathBuf::from("/w/cache")];
        assert!(validate_cwd(Path::new("/w/cache/x"), &grants, &masks, &tmpfs, &ws).is_err());
        let kept = vec![rw("/w"), ro("/w/cache/keep")];
        assert!(validate_cwd(Path::new("/w/cache/keep"), &kept, &masks, &tmpfs, &ws).is_ok());
    }

    #[test]
    fn argv_refuses_a_cwd_outside_the_launch() {
        let mut launch = isolated_workspace();
        launch.cwd = "/etc".into();
        assert_eq!(
            bubblewrap_args(&launch, &FakeHost::debian()).unwrap_err(),
            policy(CWD_OUTSIDE_SCOPE)
        );
    }

    #[test]
    fn overlays_re_add_read_only_grants_beneath_a_selected_writable_grant() {
        let host = FakeHost::debian();
        let policy_grants = vec![
            rw("/w"),
            ro("/w/source"),
            runtime("/w/.cache", Access::ReadOnly),
        ];
        // The scope selected only the writable root.
        let launch = launch_grants(&[rw("/w")], &policy_grants, &host);
        let summary: Vec<(String, Access, bool)> = launch
            .iter()
            .map(|g| (g.target.display().to_string(), g.access, g.tools))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("/w".into(), Access::ReadWrite, true),
                ("/w/source".into(), Access::ReadOnly, true),
                ("/w/.cache".into(), Access::ReadOnly, false),
            ]
        );
    }

    #[test]
    fn overlays_follow_physical_aliases_and_read_only_wins_duplicates() {
        // A named path outside the root whose realpath lies inside it.
        let host = FakeHost::debian().alias("/data/ref", "/w/vendor/ref");
        let policy_grants = vec![rw("/w"), ro("/data/ref")];
        let launch = launch_grants(&[rw("/w"), rw("/w/vendor/ref")], &policy_grants, &host);
        let at = launch
            .iter()
            .find(|g| g.target == Path::new("/w/vendor/ref"))
            .unwrap();
        assert_eq!(at.access, Access::ReadOnly);
        assert_eq!(at.source, PathBuf::from("/w/vendor/ref"));
        assert_eq!(
            launch
                .iter()
                .filter(|g| g.target == Path::new("/w/vendor/ref"))
                .count(),
            1
        );
    }

    #[test]
    fn overlays_do_not_touch_read_only_parents_or_writable_children() {
        let host = FakeHost::debian();
        let policy_grants = vec![ro("/w"), rw("/w/out")];
        let launch = launch_grants(&policy_grants, &policy_grants, &host);
        assert_eq!(launch, vec![ro("/w"), rw("/w/out")]);
    }

    #[test]
    fn scope_masks_hide_dropped_policy_grants_nested_in_selected_ones() {
        let host = FakeHost::debian();
        let policy_grants = vec![
            rw("/w"),
            runtime("/w/.secrets", Access::ReadWrite),
            rw("/w/cache"),
            rw("/elsewhere"),
        ];
        let selected = launch_grants(&[rw("/w"), rw("/w/cache")], &policy_grants, &host);
        assert_eq!(
            scope_masks(&policy_grants, &selected, &host),
            vec![PathBuf::from("/w/.secrets")]
        );
        // Without a scope everything is selected and nothing is masked.
        let all = launch_grants(&policy_grants, &policy_grants, &host);
        assert!(scope_masks(&policy_grants, &all, &host).is_empty());
    }

    #[test]
    fn scope_masks_apply_at_the_physical_location_inside_the_selected_grant() {
        let host = FakeHost::debian().alias("/home/u/.cargo", "/w/tools/cargo");
        let policy_grants = vec![rw("/w"), runtime("/home/u/.cargo", Access::ReadWrite)];
        let selected = launch_grants(&[rw("/w")], &policy_grants, &host);
        assert_eq!(
            scope_masks(&policy_grants, &selected, &host),
            vec![PathBuf::from("/w/tools/cargo")]
        );
    }

    #[test]
    fn probe_argv_is_the_functional_check_of_b2() {
        assert_eq!(
            strings(&probe_argv(Path::new("/usr/bin/bwrap"))),
            vec![
                "/usr/bin/bwrap",
                "--unshare-user",
                "--disable-userns",
                "--unshare-pid",
                "--new-session",
                "--die-with-parent",
                "--ro-bind",
                "/",
                "/",
                "--",
                "/bin/true"
            ]
        );
    }

    #[test]
    fn the_functional_probe_passes_here_and_fails_for_a_non_bwrap() {
        require_bwrap();
        assert_eq!(functional_probe(Path::new(DEFAULT_EXECUTABLE)), Ok(()));
        // /bin/false "probes" unsuccessfully: the reason names the generic failure.
        let reason = functional_probe(Path::new("/bin/false")).unwrap_err();
        assert!(
            reason.contains("installed but unavailable: the namespace probe failed"),
            "{reason}"
        );
        assert!(is_executable_file(Path::new(DEFAULT_EXECUTABLE)));
        assert!(!is_executable_file(Path::new("/nonexistent/bwrap")));
        assert!(!is_executable_file(Path::new("/usr")));
    }

    #[test]
    fn probe_reasons_say_what_to_do() {
        let missing = missing_reason(Path::new("/nonexistent/bwrap"));
        assert!(missing.starts_with("Bubblewrap is not installed at /nonexistent/bwrap"));
        assert!(missing.contains("apt-get install bubblewrap"));
        let failed =
            probe_failure_reason(b"\nbwrap: No permissions to creating new namespace\nmore\n");
        assert!(failed.starts_with("Bubblewrap is installed but unavailable: bwrap: No permissions to creating new namespace ("));
        assert!(failed.contains("user namespaces"));
        assert!(probe_failure_reason(b"").contains("unavailable: the namespace probe failed"));
    }

    #[test]
    fn exec_failures_are_read_as_shell_statuses() {
        let missing = b"bwrap: execvp nope: No such file or directory\n";
        assert_eq!(
            classify_exec_failure(Some(1), b"", missing, b"nope"),
            Some(ExecFailure::NotFound)
        );
        let denied = b"bwrap: execvp /w/x.sh: Permission denied\n";
        assert_eq!(
            classify_exec_failure(Some(1), b"", denied, b"/w/x.sh"),
            Some(ExecFailure::NotExecutable)
        );
        assert_eq!(ExecFailure::NotFound.exit_code(), 127);
        assert_eq!(
            ExecFailure::NotFound.message("nope"),
            "nope: command not found\n"
        );
        assert_eq!(ExecFailure::NotExecutable.exit_code(), 126);
        assert_eq!(
            ExecFailure::NotExecutable.message("x"),
            "x: permission denied\n"
        );
        // The program's own output is never reinterpreted.
        assert_eq!(
            classify_exec_failure(Some(1), b"out", missing, b"nope"),
            None
        );
        assert_eq!(classify_exec_failure(Some(2), b"", missing, b"nope"), None);
        assert_eq!(classify_exec_failure(Some(1), b"", missing, b"other"), None);
        assert_eq!(
            classify_exec_failure(
                Some(1),
                b"",
                b"prefix\nbwrap: execvp nope: No such file or directory\n",
                b"nope"
            ),
            None
        );
        assert_eq!(classify_exec_failure(None, b"", missing, b"nope"), None);
    }

    /// Fails the test (never passes it silently) where bwrap is missing: these
    /// tests are the only proof that the argv works with the real binary.
    fn require_bwrap() {
        assert!(
            Path::new(DEFAULT_EXECUTABLE).exists(),
            "this test runs the real bwrap, which is not installed at {DEFAULT_EXECUTABLE} \
             (run bin/setup, or `apt-get install bubblewrap`)"
        );
    }

    /// Runs the real bwrap with `argv` and returns (exit code, stdout, stderr).
    fn run_bwrap(
        options: &[OsString],
        command: &[&str],
        keep_fd: Option<RawFd>,
    ) -> (Option<i32>, String, String) {
        use std::os::unix::process::CommandExt;
        require_bwrap();
        let mut cmd = std::process::Command::new(DEFAULT_EXECUTABLE);
        cmd.args(options).arg("--").args(command).env_clear();
        if let Some(fd) = keep_fd {
            // Keep only this fd across bwrap's exec.
            // SAFETY: the closure runs between fork and exec and only calls
            // fcntl, which is async-signal-safe; it allocates nothing and
            // touches no lock.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn real_bwrap_keeps_host_sysctls_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let launch = Launch::new(
            RootFilesystem::Isolated,
            vec![rw(root.to_str().unwrap())],
            root.clone(),
        );
        let options = bubblewrap_args(&launch, &RealHost).unwrap();
        // Writes the current value back: harmless if the bind were missing.
        let script = "v=$(cat /proc/sys/fs/lease-break-time); echo $v > /proc/sys/fs/lease-break-time && echo wrote; echo $v";
        let (_, stdout, stderr) = run_bwrap(&options, &["/bin/sh", "-c", script], None);
        let host = std::fs::read_to_string("/proc/sys/fs/lease-break-time").unwrap();
        assert_eq!(stdout, host, "{stderr}");
        assert!(stderr.contains("Read-only file system"), "{stderr}");
    }

    #[test]
    fn real_bwrap_accepts_the_argv_and_enforces_masks_and_the_filter() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("hidden/kept")).unwrap();
        std::fs::write(root.join("hidden/secret"), "s").unwrap();
        std::fs::write(root.join("hidden/kept/file"), "k").unwrap();
        let workspace = root.to_str().unwrap();
        let mut launch = Launch::new(
            RootFilesystem::Isolated,
            vec![rw(workspace), ro(&format!("{workspace}/hidden/kept"))],
            root.clone(),
        );
        launch.masks = vec![root.join("hidden")];
        launch.workspace_paths = vec![root.clone()];
        let filter = crate::backend::seccomp::filter_fd(
            &crate::backend::seccomp::Filter::for_launch(true, None, None),
        )
        .unwrap();
        launch.seccomp_fd = Some(filter.as_raw_fd());
        let options = bubblewrap_args(&launch, &RealHost).unwrap();
        // Builtins only until the last line: under the filter the shell cannot fork.
        let script =
            "echo hidden/*; read line < hidden/kept/file; echo $line; /bin/true; echo spawned";
        let (code, stdout, stderr) =
            run_bwrap(&options, &["/bin/sh", "-c", script], launch.seccomp_fd);
        assert_eq!(stdout, "hidden/kept\nk\n", "{stderr}");
        assert!(stderr.contains("Cannot fork"), "{stderr}");
        assert_ne!(code, Some(0));
    }

    #[test]
    fn real_bwrap_exec_failures_match_the_classifier() {
        let launch = Launch::new(RootFilesystem::Isolated, vec![ro("/usr")], "/usr".into());
        let options = bubblewrap_args(&launch, &RealHost).unwrap();
        let (code, stdout, stderr) = run_bwrap(&options, &["no-such-program"], None);
        assert_eq!(
            classify_exec_failure(
                code,
                stdout.as_bytes(),
                stderr.as_bytes(),
                b"no-such-program"
            ),
            Some(ExecFailure::NotFound),
            "{code:?} {stderr}"
        );
        let (code, stdout, stderr) = run_bwrap(&options, &["/usr/share"], None);
        assert_eq!(
            classify_exec_failure(code, stdout.as_bytes(), stderr.as_bytes(), b"/usr/share"),
            Some(ExecFailure::NotExecutable),
            "{code:?} {stderr}"
        );
    }
}
