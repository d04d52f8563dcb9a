//! B.8: the bwrap options of one launch, step by step in emission order.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::overlays::sort_shortest_first;
use super::validate::{validate_cwd, validate_environment};
use super::{HostEntry, HostProbe, Launch, NetworkMode, ProcMount, RootFilesystem};
use crate::error::Result;
use crate::grants::Grant;

/// Accumulates an argv of OS strings.
struct Argv {
    args: Vec<OsString>,
    tmpfs_size: u64,
    /// Grant sources bound from an inherited descriptor.
    bind_fds: Vec<(PathBuf, std::os::fd::RawFd)>,
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
        let fd = self
            .bind_fds
            .iter()
            .find(|(source, _)| *source == grant.source)
            .map(|(_, fd)| *fd);
        let (flag, source): (&str, OsString) = match (fd, grant.access.writable()) {
            (Some(fd), true) => ("--bind-fd", fd.to_string().into()),
            (Some(fd), false) => ("--ro-bind-fd", fd.to_string().into()),
            (None, true) => ("--bind", grant.source.clone().into_os_string()),
            (None, false) => ("--ro-bind", grant.source.clone().into_os_string()),
        };
        self.two(flag, &source, grant.target.as_os_str());
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
        bind_fds: launch.bind_fds.clone(),
    };

    argv.namespaces();
    argv.root(launch.root_filesystem);
    // 3. Network: only :inherit keeps the host's namespace.
    if launch.network != NetworkMode::Inherit {
        argv.flag("--unshare-net");
    }
    if isolated {
        argv.runtime_roots(launch, host);
    }
    argv.devices_and_proc(&launch.proc_mount);

    // 7. Scratch space.
    for tmpfs in &launch.tmpfs {
        argv.tmpfs(tmpfs);
    }

    argv.missing_ancestors(launch, &grants, &masks, &cwd);
    argv.binds_and_masks(&grants, &masks);

    // 10a. The folder of every gateway directory, hidden wherever this
    // launch would show it, then only its own gateway's, from its handle.
    for mask in &launch.gateway_masks {
        argv.tmpfs(mask);
    }
    for (fd, target) in &launch.gateway_binds {
        argv.two(
            "--ro-bind-fd",
            OsStr::new(&fd.to_string()),
            target.as_os_str(),
        );
    }
    // Read-only once the binds are in: a mask must not give a read-only
    // root or grant a writable tmpfs.
    for mask in &launch.gateway_masks {
        argv.path("--remount-ro", mask);
    }
    // 10b. What the gateway and relay need, read-only, above everything else.
    for (source, target) in &launch.extra_ro_binds {
        argv.two("--ro-bind", source.as_os_str(), target.as_os_str());
    }
    if isolated {
        for (fd, target) in &launch.trust_binds {
            argv.two(
                "--ro-bind-fd",
                OsStr::new(&fd.to_string()),
                target.as_os_str(),
            );
        }
    }
    if let Some((fd, target)) = &launch.executable_data {
        argv.value("--perms", "0555");
        argv.two(
            "--ro-bind-data",
            OsStr::new(&fd.to_string()),
            target.as_os_str(),
        );
    }
    if let Some((fd, target)) = &launch.hosts_data {
        argv.value("--perms", "0444");
        argv.two(
            "--ro-bind-data",
            OsStr::new(&fd.to_string()),
            target.as_os_str(),
        );
    }

    // 11. and 12. Working directory, then freeze /dev (its mounts stay as
    // they are) and the empty root.
    argv.path("--chdir", &cwd);
    argv.path("--remount-ro", Path::new("/dev"));
    if isolated {
        argv.path("--remount-ro", Path::new("/"));
    }

    argv.environment_and_identity(launch);
    Ok(argv.args)
}

/// Bubblewrap's `--new-session` calls `setsid` in the sandbox, which leaves
/// the program without a controlling terminal. It guards a terminal the
/// program shares with its caller against `TIOCSTI`; a launch on a
/// terminal (`process::terminal`) of its own needs no such guard, so this removes it from the
/// flags that open a bwrap argv. Any other argv is left as it is.
pub fn keep_session(argv: &mut Vec<String>) {
    let at = argv
        .iter()
        .skip(1)
        .take_while(|arg| NAMESPACE_FLAGS.contains(&arg.as_str()))
        .position(|arg| arg == "--new-session");
    if let Some(at) = at {
        argv.remove(1 + at);
    }
}

/// The flags without a value bwrap's argv opens with (B.8 step 1), in order.
const NAMESPACE_FLAGS: &[&str] = &[
    "--unshare-user",
    "--disable-userns",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--new-session",
    "--die-with-parent",
];

/// One step of B.8's emission order each (the steps `bubblewrap_args` does
/// not write inline).
impl Argv {
    /// Step 1: Namespaces and privileges. `--disable-userns` (bwrap >= 0.8) stops
    /// the child from creating nested user namespaces, which is where most
    /// kernel attack surface reachable from an unprivileged sandbox lives.
    fn namespaces(&mut self) {
        for flag in NAMESPACE_FLAGS {
            self.flag(flag);
        }
        self.value("--cap-drop", "ALL");
    }

    /// Step 2: The root.
    fn root(&mut self, root_filesystem: RootFilesystem) {
        match root_filesystem {
            RootFilesystem::Isolated => self.tmpfs(Path::new("/")),
            RootFilesystem::ReadOnly => self.two("--ro-bind", OsStr::new("/"), OsStr::new("/")),
            RootFilesystem::ReadWrite => self.two("--bind", OsStr::new("/"), OsStr::new("/")),
        }
    }

    /// Step 4: Runtime and compatibility roots of an isolated root.
    fn runtime_roots(&mut self, launch: &Launch, host: &dyn HostProbe) {
        for root in &launch.runtime_roots {
            if host.is_dir(root) {
                self.two("--ro-bind", root.as_os_str(), root.as_os_str());
            }
        }
        for root in &launch.compatibility_roots {
            match host.entry(root) {
                HostEntry::Symlink(target) => {
                    self.two("--symlink", target.as_os_str(), root.as_os_str())
                }
                HostEntry::Directory => self.two("--ro-bind", root.as_os_str(), root.as_os_str()),
                HostEntry::Other | HostEntry::Missing => {}
            }
        }
    }

    /// Steps 5 and 6: Devices and /proc. bwrap's /dev is a tmpfs it cannot size:
    /// it turns read-only in step 12, and /dev/shm (a plain directory in it)
    /// becomes a sized tmpfs of its own.
    fn devices_and_proc(&mut self, proc_mount: &ProcMount) {
        self.path("--dev", Path::new("/dev"));
        self.tmpfs(Path::new("/dev/shm"));
        match proc_mount {
            ProcMount::New => {
                self.path("--proc", Path::new("/proc"));
                // The child's uid 0 maps to the host's root when the caller is
                // root, and sysctl files check only the euid: without this a
                // sandboxed root could set host-global sysctls such as
                // kernel.core_pattern. bwrap skips its own cover of /proc/sys
                // because the directory itself is mode 0555. Sysctl handlers
                // read the caller's namespaces, so the host view shows the same
                // values.
                self.two(
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
                self.two(flag, source.as_os_str(), OsStr::new("/proc"));
            }
        }
    }

    /// Step 8: Missing ancestors: all of them in an empty root, otherwise only
    /// those a tmpfs just hid.
    fn missing_ancestors(
        &mut self,
        launch: &Launch,
        grants: &[Grant],
        masks: &[PathBuf],
        cwd: &Path,
    ) {
        let isolated = launch.root_filesystem == RootFilesystem::Isolated;
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let wanted = grants
            .iter()
            .map(|g| g.target.as_path())
            .chain(launch.tmpfs.iter().map(PathBuf::as_path))
            .chain(masks.iter().map(PathBuf::as_path))
            .chain(std::iter::once(cwd));
        for path in wanted {
            let mut ancestors: Vec<&Path> = path
                .ancestors()
                .skip(1)
                .filter(|a| *a != Path::new("/"))
                .collect();
            ancestors.reverse();
            for ancestor in ancestors {
                let missing =
                    isolated || launch.tmpfs.iter().any(|t| strictly_beneath(ancestor, t));
                if missing && seen.insert(ancestor.to_path_buf()) {
                    self.path("--dir", ancestor);
                }
            }
        }
    }

    /// Steps 9 and 10: The grants' identity binds, then the masks.
    fn binds_and_masks(&mut self, grants: &[Grant], masks: &[PathBuf]) {
        // 9. Identity binds, shortest target first, except those a mask holds.
        let under_mask = |path: &Path| masks.iter().any(|m| strictly_beneath(path, m));
        for grant in grants.iter().filter(|g| !under_mask(&g.target)) {
            self.bind(grant);
        }
        let held: Vec<&Grant> = grants.iter().filter(|g| under_mask(&g.target)).collect();
        self.masks(&held, masks);
    }

    /// Step 10: Masks. A grant selected beneath a mask is bound inside it before
    /// the mask turns read-only, so masking a dropped parent never hides a
    /// grant the launch kept.
    fn masks(&mut self, held: &[&Grant], masks: &[PathBuf]) {
        enum Layer<'a> {
            Bind(&'a Grant),
            Mask(&'a Path),
        }
        let mut layers: Vec<Layer> = held
            .iter()
            .map(|g| Layer::Bind(g))
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
                Layer::Bind(grant) => self.bind(grant),
                Layer::Mask(mask) => {
                    self.tmpfs(mask);
                    let holds_later = layers[index + 1..].iter().any(|later| match later {
                        Layer::Bind(g) => strictly_beneath(&g.target, mask),
                        Layer::Mask(m) => strictly_beneath(m, mask),
                    });
                    if holds_later {
                        deferred.push(mask);
                    } else {
                        self.path("--remount-ro", mask);
                    }
                }
            }
        }
        for mask in deferred.iter().rev() {
            self.path("--remount-ro", mask);
        }
    }

    /// Steps 13 to 15: Environment and identity, then step 16: the subprocess filter,
    /// which bwrap reads and installs right before the child's execve, and
    /// the hold of a launch whose relay listens below port 1024.
    fn environment_and_identity(&mut self, launch: &Launch) {
        if !launch.inherit_environment {
            self.flag("--clearenv");
        }
        for (name, value) in &launch.environment {
            self.two("--setenv", OsStr::new(name), OsStr::new(value));
        }
        if let Some(uid) = launch.uid {
            self.value("--uid", uid.to_string());
        }
        if let Some(gid) = launch.gid {
            self.value("--gid", gid.to_string());
        }
        if let Some(fd) = launch.seccomp_fd {
            self.value("--seccomp", fd.to_string());
        }
        if let Some((info, block)) = launch.hold_fds {
            self.value("--info-fd", info.to_string());
            self.value("--block-fd", block.to_string());
        }
    }
}
