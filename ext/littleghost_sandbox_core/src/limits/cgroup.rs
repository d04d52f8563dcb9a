//! The host's cgroup layout: which hierarchy this process may create launch
//! cgroups in, found from `/proc/self/cgroup` and `/proc/self/mountinfo`.
//!
//! - **v2**: the process's own cgroup when its `cgroup.subtree_control`
//!   enables `memory` and `pids` (or they can be enabled), else a delegated
//!   directory named by the backend option `cgroup:` or `LITTLEGHOST_CGROUP`.
//! - **v1** (hybrid hosts): the process's own cgroup in each of the
//!   writable `memory`, `pids`, `cpuacct` and `freezer` hierarchies.
//!
//! Whichever enforces more wins (v2 on a tie). The per-launch cgroup itself is
//! [`super::launch::LaunchCgroup`].

use std::io;
use std::path::{Path, PathBuf};

use super::Enforcement;

/// The v1 controllers a launch uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    Memory,
    Pids,
    Cpuacct,
    Freezer,
}

impl Controller {
    pub(crate) const ALL: [Controller; 4] = [
        Controller::Memory,
        Controller::Pids,
        Controller::Cpuacct,
        Controller::Freezer,
    ];

    fn name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpuacct => "cpuacct",
            Controller::Freezer => "freezer",
        }
    }
}

/// Why launch cgroups cannot enforce a limit (or any) here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// A file of `/proc` (or the cgroup tree) could not be read; `reason`
    /// is the OS's error in its words.
    #[error("cannot read {}: {reason}", .path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("no cgroup2 hierarchy is mounted")]
    NoV2Hierarchy,
    #[error("no cgroup v1 {controller} hierarchy is mounted")]
    NoV1Hierarchy { controller: &'static str },
    #[error("/proc/self/cgroup lists no {controller} cgroup")]
    NotListed { controller: &'static str },
    /// No child cgroup can be made in `dir`.
    #[error("cannot create a cgroup in {}: {reason}", .dir.display())]
    NotWritable { dir: PathBuf, reason: String },
    /// `subtree_control` (a v2 `cgroup.subtree_control`) leaves `controller` out.
    #[error("{} does not enable the {controller} controller", .subtree_control.display())]
    NotEnabled {
        subtree_control: PathBuf,
        controller: &'static str,
    },
    /// Every place tried failed, each for its own reason.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Everywhere(Vec<Unavailable>),
}

/// Where launch cgroups are created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// A v2 directory launch cgroups are made in, with the controllers its
    /// `cgroup.subtree_control` enables for them.
    V2 {
        parent: PathBuf,
        memory: bool,
        pids: bool,
    },
    /// This process's own cgroup in each writable v1 hierarchy (it is also
    /// where the spawner thread returns after a spawn); a missing one is
    /// `Err(why)`.
    V1 {
        memory: std::result::Result<PathBuf, Unavailable>,
        pids: std::result::Result<PathBuf, Unavailable>,
        cpuacct: std::result::Result<PathBuf, Unavailable>,
        freezer: std::result::Result<PathBuf, Unavailable>,
    },
}

impl Layout {
    /// What launches in this layout can enforce.
    pub fn enforcement(&self) -> Enforcement {
        match self {
            Layout::V2 {
                parent,
                memory,
                pids,
            } => {
                let missing = |controller: &'static str| {
                    Err(Unavailable::NotEnabled {
                        subtree_control: parent.join("cgroup.subtree_control"),
                        controller,
                    })
                };
                Enforcement {
                    memory: if *memory { Ok(()) } else { missing("memory") },
                    tasks: if *pids { Ok(()) } else { missing("pids") },
                    cpu: Ok(()),
                    tree: Ok(()),
                }
            }
            Layout::V1 {
                memory,
                pids,
                cpuacct,
                freezer,
            } => {
                let status =
                    |dir: &std::result::Result<PathBuf, Unavailable>| dir.clone().map(|_| ());
                Enforcement {
                    memory: status(memory),
                    tasks: status(pids),
                    cpu: status(cpuacct),
                    // Killing needs some hierarchy to list the tree in.
                    tree: status(pids)
                        .or_else(|_| status(memory))
                        .or_else(|_| status(freezer)),
                }
            }
        }
    }

    /// The own directory of a v1 controller, if writable.
    pub(crate) fn v1_home(&self, controller: Controller) -> Option<&Path> {
        let Layout::V1 {
            memory,
            pids,
            cpuacct,
            freezer,
        } = self
        else {
            return None;
        };
        let dir = match controller {
            Controller::Memory => memory,
            Controller::Pids => pids,
            Controller::Cpuacct => cpuacct,
            Controller::Freezer => freezer,
        };
        dir.as_ref().ok().map(PathBuf::as_path)
    }

    fn score(&self) -> usize {
        let e = self.enforcement();
        [e.memory, e.tasks, e.cpu, e.tree]
            .iter()
            .filter(|s| s.is_ok())
            .count()
    }
}

/// The layout of this host for this process, or why there is none. `explicit`
/// is the backend's `cgroup:` option; `LITTLEGHOST_CGROUP` is used without it.
pub fn detect_host(explicit: Option<&Path>) -> std::result::Result<Layout, Unavailable> {
    let read = |path: &str| {
        std::fs::read_to_string(path).map_err(|error| Unavailable::Unreadable {
            path: PathBuf::from(path),
            reason: error.to_string(),
        })
    };
    let own = read("/proc/self/cgroup")?;
    let mounts = read("/proc/self/mountinfo")?;
    let from_env = std::env::var_os("LITTLEGHOST_CGROUP").map(PathBuf::from);
    detect(&own, &mounts, explicit.or(from_env.as_deref()))
}

/// Picks the layout from the text of `/proc/self/cgroup` and
/// `/proc/self/mountinfo` (paths in them are real paths; tests point them at
/// a fake tree). `delegated` is a v2 directory to use when the own cgroup
/// cannot have children.
pub fn detect(
    own: &str,
    mounts: &str,
    delegated: Option<&Path>,
) -> std::result::Result<Layout, Unavailable> {
    let mounts = parse_mounts(mounts);
    let v2 = detect_v2(own, &mounts, delegated);
    let v1 = detect_v1(own, &mounts);
    match (v2, v1) {
        (Ok(v2), Ok(v1)) => Ok(if v1.score() > v2.score() { v1 } else { v2 }),
        (Ok(layout), Err(_)) | (Err(_), Ok(layout)) => Ok(layout),
        (Err(v2), Err(v1)) => Err(Unavailable::Everywhere(vec![v2, v1])),
    }
}

/// A cgroup mount: its root inside the hierarchy, mount point, type and
/// super options.
struct Mount {
    root: String,
    point: PathBuf,
    v2: bool,
    options: Vec<String>,
}

fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let rest: Vec<&str> = after.split(' ').collect();
            let kind = *rest.first()?;
            if kind != "cgroup" && kind != "cgroup2" {
                return None;
            }
            Some(Mount {
                root: unescape(fields.get(3)?),
                point: PathBuf::from(unescape(fields.get(4)?)),
                v2: kind == "cgroup2",
                options: rest.get(2)?.split(',').map(String::from).collect(),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.by_ref().take(3).collect();
            if let Ok(byte) = u8::from_str_radix(&code, 8) {
                out.push(byte as char);
                continue;
            }
            out.push(c);
            out.push_str(&code);
        } else {
            out.push(c);
        }
    }
    out
}

/// The directory of cgroup `path` (from `/proc/self/cgroup`) under `mount`.
fn dir_in(mount: &Mount, path: &str) -> PathBuf {
    let relative = path
        .strip_prefix(mount.root.as_str())
        .unwrap_or(path)
        .trim_start_matches('/');
    mount.point.join(relative)
}

/// The path of this process's cgroup in the hierarchy `selector` picks
/// (`"0"` for v2's line, else the controller name).
fn own_path<'a>(own: &'a str, controller: Option<&str>) -> Option<&'a str> {
    own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = match controller {
            None => id == "0" && controllers.is_empty(),
            Some(name) => controllers.split(',').any(|c| c == name),
        };
        wanted.then_some(path)
    })
}

fn detect_v2(
    own: &str,
    mounts: &[Mount],
    delegated: Option<&Path>,
) -> std::result::Result<Layout, Unavailable> {
    let mount = mounts
        .iter()
        .find(|m| m.v2)
        .ok_or(Unavailable::NoV2Hierarchy)?;
    let mut candidates = Vec::new();
    if let Some(path) = own_path(own, None) {
        candidates.push(dir_in(mount, path));
    }
    candidates.extend(delegated.map(Path::to_path_buf));
    let mut reasons = Vec::new();
    let mut best: Option<Layout> = None;
    for parent in candidates {
        match v2_candidate(&parent) {
            Ok(layout) => {
                if best.as_ref().is_none_or(|b| layout.score() > b.score()) {
                    best = Some(layout);
                }
            }
            Err(reason) => reasons.push(reason),
        }
    }
    best.ok_or_else(|| match reasons.len() {
        1 => reasons.remove(0),
        _ => Unavailable::Everywhere(reasons),
    })
}

/// A v2 directory we may create children in, with the controllers they get.
fn v2_candidate(parent: &Path) -> std::result::Result<Layout, Unavailable> {
    writable_dir(parent)?;
    let control = parent.join("cgroup.subtree_control");
    let enabled = |text: &str, name: &str| {
        text.split_whitespace()
            .any(|c| c.trim_start_matches('+') == name)
    };
    let mut current =
        std::fs::read_to_string(&control).map_err(|error| Unavailable::Unreadable {
            path: control.clone(),
            reason: error.to_string(),
        })?;
    let available = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    for name in ["memory", "pids"] {
        if !enabled(&current, name) && enabled(&available, name) {
            // Fails (EBUSY) when processes live in `parent` itself.
            let _ = std::fs::write(&control, format!("+{name}"));
        }
    }
    current = std::fs::read_to_string(&control).unwrap_or(current);
    Ok(Layout::V2 {
        parent: parent.to_path_buf(),
        memory: enabled(&current, "memory"),
        pids: enabled(&current, "pids"),
    })
}

fn detect_v1(own: &str, mounts: &[Mount]) -> std::result::Result<Layout, Unavailable> {
    let dir = |controller: Controller| -> std::result::Result<PathBuf, Unavailable> {
        let name = controller.name();
        let mount = mounts
            .iter()
            .find(|m| !m.v2 && m.options.iter().any(|o| o == name))
            .ok_or(Unavailable::NoV1Hierarchy { controller: name })?;
        let path = own_path(own, Some(name)).ok_or(Unavailable::NotListed { controller: name })?;
        let dir = dir_in(mount, path);
        writable_dir(&dir)?;
        Ok(dir)
    };
    let [memory, pids, cpuacct, freezer] = Controller::ALL.map(dir);
    if memory.is_err() && pids.is_err() && cpuacct.is_err() {
        let reasons = [&memory, &pids, &cpuacct]
            .iter()
            .filter_map(|r| r.as_ref().err().cloned())
            .collect::<Vec<_>>();
        return Err(Unavailable::Everywhere(reasons));
    }
    Ok(Layout::V1 {
        memory,
        pids,
        cpuacct,
        freezer,
    })
}

/// Whether a child cgroup can be made in `dir` (made and removed at once).
fn writable_dir(dir: &Path) -> std::result::Result<(), Unavailable> {
    let probe = dir.join(format!(
        "littleghost-probe-{}",
        rustix::process::getpid().as_raw_nonzero()
    ));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = remove_cgroup_dir(&probe);
            Ok(())
        }
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(Unavailable::NotWritable {
            dir: dir.to_path_buf(),
            reason: error.to_string(),
        }),
    }
}

/// Removes a cgroup directory. The kernel's own files go with `rmdir`; a fake
/// tree (tests) holds plain files, removed first.
pub(crate) fn remove_cgroup_dir(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) if error.raw_os_error() == Some(libc::ENOTEMPTY) && !is_cgroupfs(dir) => {
            std::fs::remove_dir_all(dir)
        }
        Err(error) => Err(error),
    }
}

// `f_type` and the magic numbers have platform-dependent integer types.
#[allow(clippy::unnecessary_cast)]
fn is_cgroupfs(dir: &Path) -> bool {
    rustix::fs::statfs(dir).is_ok_and(|fs| {
        let kind = fs.f_type as i64;
        kind == libc::CGROUP_SUPER_MAGIC as i64 || kind == libc::CGROUP2_SUPER_MAGIC as i64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake v2 tree: `root/mine` with the given controllers available and enabled.
    fn fake_v2(root: &Path, available: &str, enabled: &str) -> (String, String) {
        let mine = root.join("mine");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::write(mine.join("cgroup.controllers"), available).unwrap();
        std::fs::write(mine.join("cgroup.subtree_control"), enabled).unwrap();
        let mounts = format!(
            "30 25 0:26 / {} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
            root.display()
        );
        ("0::/mine\n".to_string(), mounts)
    }

    #[test]
    fn v2_uses_the_own_cgroup_when_it_enables_memory_and_pids() {
        let root = tempfile::tempdir().unwrap();
        let (own, mounts) = fake_v2(root.path(), "cpu memory pids", "memory pids");
        let layout = detect(&own, &mounts, None).unwrap();
        assert_eq!(
            layout,
            Layout::V2 {
                parent: root.path().join("mine"),
                memory: true,
                pids: true
            }
        );
        let enforcement = layout.enforcement();
        assert!(enforcement.memory.is_ok() && enforcement.tasks.is_ok());
    }

    #[test]
    fn v2_enables_available_controllers_and_names_the_missing_one() {
        let root = tempfile::tempdir().unwrap();
        let (own, mounts) = fake_v2(root.path(), "memory", "");
        let layout = detect(&own, &mounts, None).unwrap();
        // The fake file takes the write the kernel would have accepted.
        assert!(matches!(
            layout,
            Layout::V2 {
                memory: true,
                pids: false,
                ..
            }
        ));
        let refusal = layout.enforcement().tasks.unwrap_err();
        assert_eq!(
            refusal,
            Unavailable::NotEnabled {
                subtree_control: root.path().join("mine/cgroup.subtree_control"),
                controller: "pids"
            }
        );
    }

    #[test]
    fn v2_prefers_the_delegated_directory_when_it_enforces_more() {
        let root = tempfile::tempdir().unwrap();
        let (own, mounts) = fake_v2(root.path(), "", "");
        let delegated = root.path().join("delegated");
        std::fs::create_dir(&delegated).unwrap();
        std::fs::write(delegated.join("cgroup.controllers"), "memory pids").unwrap();
        std::fs::write(delegated.join("cgroup.subtree_control"), "memory pids").unwrap();
        let layout = detect(&own, &mounts, Some(&delegated)).unwrap();
        assert!(matches!(&layout, Layout::V2 { parent, .. } if *parent == delegated));
    }

    #[test]
    fn no_writable_hierarchy_says_which_path_failed() {
        let own = "0::/\n4:memory:/x\n";
        let mounts = "30 25 0:26 / /nonexistent/unified rw - cgroup2 cgroup2 rw\n\
                      31 25 0:27 / /nonexistent/memory rw - cgroup cgroup rw,memory\n";
        let reason = detect(own, mounts, None).unwrap_err().to_string();
        assert!(reason.contains("/nonexistent/unified"), "{reason}");
        assert!(reason.contains("/nonexistent/memory/x"), "{reason}");
    }

    #[test]
    fn mount_roots_and_escapes_are_honoured() {
        let mounts = parse_mounts(
            "31 25 0:27 /outer /sys/fs/cgroup/cpu\\054cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
        );
        assert_eq!(mounts.len(), 1);
        assert_eq!(
            dir_in(&mounts[0], "/outer/inner"),
            PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/inner")
        );
        assert_eq!(own_path("2:cpu,cpuacct:/a\n", Some("cpuacct")), Some("/a"));
    }
}
