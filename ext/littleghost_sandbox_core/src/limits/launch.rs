//! One launch's cgroup: made before the child starts, limits written, usage
//! and OOM kills read while it runs, everything in it killed and the
//! directory removed when it is dropped (the launch ended).
//!
//! # Joining before exec
//!
//! The child must be inside the cgroup before it executes anything, and
//! children start from the one spawner thread with glibc `posix_spawn`
//! (`CLONE_VM | CLONE_VFORK`, fast in a big Ruby process). So:
//!
//! - **v1**: the spawner *thread* (writing `0`, "myself", to each
//!   hierarchy's `tasks` file: the one form of migration that skips the
//!   kernel's global threadgroup lock and its RCU grace period) enters the
//!   launch's cgroups just before the spawn and returns to its own right
//!   after ([`Joined`]). A child inherits the cgroups of the
//!   thread that cloned it, so it starts inside, on either start path, and
//!   `posix_spawn` stays usable. Spawns are serialised on that thread, so no
//!   other launch's child can inherit the wrong cgroup. v1 memory charges
//!   follow the address space's owner (the Ruby main thread), so Ruby's
//!   memory is never charged to the launch; `pids.max` is one higher while
//!   the thread is inside (the thread counts) and lowered when it leaves, so
//!   the tree itself never has more than `tasks`.
//! - **v2** refuses to move one thread of a process to another domain
//!   cgroup, so the launch takes the fork path, and the child is created
//!   inside the launch's cgroup by `clone3` with `CLONE_INTO_CGROUP` (Linux
//!   5.7). Where the kernel (or a container's seccomp profile) refuses that,
//!   it is a plain `fork` and the child writes `0` to the launch's
//!   `cgroup.procs` (an fd opened before the fork: async-signal-safe) as its
//!   first step, before anything else runs. The write is the slow way: a
//!   whole-process migration takes the kernel's global threadgroup lock,
//!   and its first writer after a quiet spell waits for an RCU grace period
//!   (7-25 ms measured here), which `CLONE_INTO_CGROUP` never does.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use super::cgroup::{remove_cgroup_dir, Controller, Layout};
use super::{LimitExceeded, ProcessLimits};

/// How long [`LaunchCgroup::kill_all`] keeps trying before giving up.
const KILL_PATIENCE: Duration = Duration::from_secs(2);

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Empty cgroups of ended launches that only owned their tree (no limit to
/// reset), kept for the next such launch: a cgroup's mkdir and rmdir are
/// most of what a per-launch cgroup costs. Removed when
/// this process exits (`atexit`), by the process that made them.
/// Each entry names the process that pooled it: a forked child inherits a
/// copy of the pool and must never reuse its parent's cgroups.
static POOL: std::sync::Mutex<Vec<(i32, Dirs)>> = std::sync::Mutex::new(Vec::new());
/// At most this many empty cgroups wait in [`POOL`].
const POOL_SIZE: usize = 8;
/// The pid that registered [`drain_pool`] (0: not yet); a forked child
/// inherits the handler and must not remove its parent's cgroups.
static POOL_OWNER: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn drain_pool() {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    if POOL_OWNER.load(Ordering::SeqCst) != me {
        return;
    }
    if let Ok(mut pool) = POOL.lock() {
        for (_, dirs) in pool.drain(..).filter(|(owner, _)| *owner == me) {
            for dir in dirs.paths() {
                let _ = remove_cgroup_dir(dir);
            }
        }
    }
}

/// The directories waiting in [`POOL`] (for tests: they are not left over).
#[cfg(test)]
pub(crate) fn pooled_paths() -> Vec<PathBuf> {
    POOL.lock()
        .map(|pool| {
            pool.iter()
                .flat_map(|(_, dirs)| dirs.paths().into_iter().map(Path::to_path_buf))
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the empty `littleghost-PID-N` cgroups under `parent` whose
/// process is gone. `rmdir` refuses a cgroup that still holds a process, so
/// nothing alive is touched.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("littleghost-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if pid > 0 && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Whether a launch with `limits` wants its cgroup only to own its tree.
fn ownership_only(limits: &ProcessLimits) -> bool {
    limits.memory_bytes.is_none() && limits.tasks.is_none() && limits.cpu_seconds.is_none()
}

/// A pooled cgroup made under `layout`'s directories that still exists and
/// holds no process, if any. A pooled cgroup that holds one (something
/// moved into it after it was pooled) has it killed first; one that cannot
/// be emptied is never reused (docs/security.md, "Nothing survives close").
fn take_pooled(layout: &Layout) -> Option<Dirs> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    loop {
        let dirs = {
            let mut pool = POOL.lock().ok()?;
            let index = pool
                .iter()
                .position(|(owner, dirs)| *owner == me && dirs.made_under(layout))?;
            pool.swap_remove(index).1
        };
        if !dirs.paths().iter().all(|dir| dir.is_dir()) {
            for dir in dirs.paths() {
                let _ = remove_cgroup_dir(dir);
            }
            continue;
        }
        // Held as a launch's cgroup, so that its kill and removal apply.
        let mut held = LaunchCgroup {
            dirs,
            limits: ProcessLimits::default(),
            creator: rustix::process::getpid(),
            recorded: AtomicU8::new(0),
        };
        if !held.is_empty() {
            held.kill_all();
        }
        if held.is_empty() {
            return Some(held.take_dirs());
        }
        // Still not empty: removed where the kernel allows, never pooled
        // again, never handed to a launch.
        let _ = held.remove();
        drop(held.take_dirs());
    }
}

#[derive(Debug)]
enum Dirs {
    V2(PathBuf),
    /// (controller, the launch's directory, this process's own directory).
    V1(Vec<(Controller, PathBuf, PathBuf)>),
}

impl Dirs {
    fn paths(&self) -> Vec<&Path> {
        match self {
            Dirs::V2(dir) => vec![dir.as_path()],
            Dirs::V1(dirs) => dirs.iter().map(|(_, dir, _)| dir.as_path()).collect(),
        }
    }

    /// Whether no process is in any of these directories (a directory
    /// without `cgroup.procs`, gone or a fake tree's, holds none).
    fn hold_nothing(&self) -> bool {
        self.paths().iter().all(|dir| {
            std::fs::read_to_string(dir.join("cgroup.procs"))
                .map_or(true, |procs| procs.trim().is_empty())
        })
    }

    /// Whether these directories are the ones an ownership-only launch
    /// would make under `layout` (same parents, same hierarchies).
    fn made_under(&self, layout: &Layout) -> bool {
        match (self, layout) {
            (Dirs::V2(dir), Layout::V2 { parent, .. }) => dir.parent() == Some(parent.as_path()),
            (Dirs::V1(dirs), Layout::V1 { .. }) => {
                let wanted: Vec<Controller> = Controller::ALL
                    .into_iter()
                    .filter(|&c| v1_needed(layout, &ProcessLimits::default(), c))
                    .filter(|&c| layout.v1_home(c).is_some())
                    .collect();
                dirs.len() == wanted.len()
                    && dirs.iter().all(|(controller, _, home)| {
                        wanted.contains(controller)
                            && layout.v1_home(*controller) == Some(home.as_path())
                    })
            }
            _ => false,
        }
    }
}

/// Whether a launch with `limits` needs `controller`'s v1 hierarchy. Each
/// costs a mkdir, two thread moves and an rmdir per launch. A launch that
/// only owns its tree (every Landlock and Bubblewrap launch) needs one to
/// list it in: the freezer only makes `kill_all` atomic, and without it the
/// kill loop still ends (a process with SIGKILL pending cannot fork).
fn v1_needed(layout: &Layout, limits: &ProcessLimits, controller: Controller) -> bool {
    let listed = layout.v1_home(Controller::Pids).is_some();
    match controller {
        Controller::Memory => limits.memory_bytes.is_some() || !listed,
        Controller::Pids => true,
        Controller::Freezer => !ownership_only(limits) || !listed,
        Controller::Cpuacct => limits.cpu_seconds.is_some(),
    }
}

/// A cgroup made for one launch (see the module docs).
#[derive(Debug)]
pub struct LaunchCgroup {
    dirs: Dirs,
    limits: ProcessLimits,
    creator: rustix::process::Pid,
    /// 0 none, 1 CPU (set by the watcher); memory is read from the kernel.
    recorded: AtomicU8,
}

impl LaunchCgroup {
    /// Makes the cgroup (a unique name under `layout`) and writes `limits`.
    pub fn create(layout: &Layout, limits: &ProcessLimits) -> io::Result<LaunchCgroup> {
        let creator = rustix::process::getpid();
        if ownership_only(limits) {
            if let Some(dirs) = take_pooled(layout) {
                return Ok(LaunchCgroup {
                    dirs,
                    limits: limits.clone(),
                    creator,
                    recorded: AtomicU8::new(0),
                });
            }
        }
        let name = loop {
            let name = format!(
                "littleghost-{}-{}",
                creator.as_raw_nonzero(),
                SEQUENCE.fetch_add(1, Ordering::Relaxed)
            );
            let taken = match layout {
                Layout::V2 { parent, .. } => parent.join(&name).exists(),
                Layout::V1 { .. } => Controller::ALL
                    .iter()
                    .filter_map(|c| layout.v1_home(*c))
                    .any(|home| home.join(&name).exists()),
            };
            if !taken {
                break name;
            }
        };
        let mut cgroup = LaunchCgroup {
            dirs: match layout {
                Layout::V2 { parent, .. } => Dirs::V2(parent.join(&name)),
                Layout::V1 { .. } => Dirs::V1(Vec::new()),
            },
            limits: limits.clone(),
            creator,
            recorded: AtomicU8::new(0),
        };
        // Dropping a half-made cgroup removes what was made.
        match (&mut cgroup.dirs, layout) {
            (Dirs::V2(dir), _) => {
                std::fs::create_dir(&*dir)?;
                let dir = dir.clone();
                cgroup.write_v2_limits(&dir)?;
            }
            (Dirs::V1(dirs), layout) => {
                // Only the hierarchies this launch needs (see `v1_needed`).
                for controller in Controller::ALL
                    .into_iter()
                    .filter(|&c| v1_needed(layout, limits, c))
                {
                    if let Some(home) = layout.v1_home(controller) {
                        let dir = home.join(&name);
                        std::fs::create_dir(&dir)?;
                        dirs.push((controller, dir, home.to_path_buf()));
                    }
                }
                cgroup.write_v1_limits()?;
            }
        }
        Ok(cgroup)
    }

    fn write_v2_limits(&self, dir: &Path) -> io::Result<()> {
        if let Some(bytes) = self.limits.memory_bytes {
            write(&dir.join("memory.max"), bytes)?;
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                write(&swap, 0)?;
            }
        }
        if let Some(tasks) = self.limits.tasks {
            write(&dir.join("pids.max"), tasks)?;
        }
        Ok(())
    }

    fn write_v1_limits(&self) -> io::Result<()> {
        if let Some(bytes) = self.limits.memory_bytes {
            let dir = self.v1_dir(Controller::Memory).ok_or_else(missing)?;
            write(&dir.join("memory.limit_in_bytes"), bytes)?;
            // Memory plus swap equal to memory: no swap.
            let memsw = dir.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                write(&memsw, bytes)?;
            }
        }
        if let Some(tasks) = self.limits.tasks {
            let dir = self.v1_dir(Controller::Pids).ok_or_else(missing)?;
            // One more while the spawner thread is inside ([`Joined`]).
            write(&dir.join("pids.max"), tasks + 1)?;
        }
        if self.limits.cpu_seconds.is_some() && self.v1_dir(Controller::Cpuacct).is_none() {
            return Err(missing());
        }
        Ok(())
    }

    fn v1_dir(&self, controller: Controller) -> Option<&Path> {
        match &self.dirs {
            Dirs::V1(dirs) => dirs
                .iter()
                .find(|(c, _, _)| *c == controller)
                .map(|(_, dir, _)| dir.as_path()),
            Dirs::V2(_) => None,
        }
    }

    /// Its directories (tests).
    #[cfg(test)]
    pub(crate) fn dirs_for_tests(&self) -> Vec<PathBuf> {
        self.dirs
            .paths()
            .into_iter()
            .map(Path::to_path_buf)
            .collect()
    }

    /// The limits it was made with.
    pub fn limits(&self) -> &ProcessLimits {
        &self.limits
    }

    /// Whether a child joins by writing to [`procs_fd`](Self::procs_fd) after
    /// fork (v2) rather than through the spawner thread (v1).
    pub fn joins_in_child(&self) -> bool {
        matches!(self.dirs, Dirs::V2(_))
    }

    /// v2: `cgroup.procs` opened for the child's pre-exec `write("0")`.
    pub fn procs_fd(&self) -> io::Result<OwnedFd> {
        let Dirs::V2(dir) = &self.dirs else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))?;
        Ok(OwnedFd::from(file))
    }

    /// v2: the launch cgroup's directory, for `clone3(CLONE_INTO_CGROUP)`.
    pub fn dir_fd(&self) -> io::Result<OwnedFd> {
        let Dirs::V2(dir) = &self.dirs else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)?;
        Ok(OwnedFd::from(file))
    }

    /// v1: moves the calling thread into the launch's cgroups until the
    /// returned guard is dropped (call it on the spawner thread, right
    /// before the spawn). v2: nothing to do.
    ///
    /// The thread names itself `0` ("the writer") rather than by its TID:
    /// the kernel then moves just the calling thread without taking the
    /// global `cgroup_threadgroup_rwsem` for writing, whose first writer
    /// after a quiet spell waits for a whole RCU grace period (7-20 ms
    /// measured on a loaded 2-core host, against about 30 us for `0`).
    pub fn join_current_thread(&self) -> io::Result<Joined<'_>> {
        let mut joined = Joined {
            cgroup: self,
            thread: std::thread::current().id(),
            entered: Vec::new(),
            _same_thread: std::marker::PhantomData,
        };
        if let Dirs::V1(dirs) = &self.dirs {
            for (_, dir, home) in dirs {
                write(&dir.join("tasks"), CURRENT_THREAD)?;
                joined.entered.push(home.clone());
            }
        }
        Ok(joined)
    }

    /// CPU time the tree used so far (v1 `cpuacct.usage`, v2 `cpu.stat`).
    pub fn cpu_usage(&self) -> Option<Duration> {
        match &self.dirs {
            Dirs::V2(dir) => {
                let stat = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
                field(&stat, "usage_usec").map(Duration::from_micros)
            }
            Dirs::V1(_) => {
                let dir = self.v1_dir(Controller::Cpuacct)?;
                let text = std::fs::read_to_string(dir.join("cpuacct.usage")).ok()?;
                text.trim().parse().ok().map(Duration::from_nanos)
            }
        }
    }

    /// Whether the kernel OOM-killed something in the cgroup.
    pub fn oom_killed(&self) -> bool {
        let (file, key) = match &self.dirs {
            Dirs::V2(dir) => (dir.join("memory.events"), "oom_kill"),
            Dirs::V1(_) => match self.v1_dir(Controller::Memory) {
                Some(dir) => (dir.join("memory.oom_control"), "oom_kill"),
                None => return false,
            },
        };
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        match field(&text, key) {
            Some(kills) => kills > 0,
            // Kernels before 4.13 have no v1 oom_kill line.
            None => self
                .v1_dir(Controller::Memory)
                .and_then(|dir| std::fs::read_to_string(dir.join("memory.failcnt")).ok())
                .and_then(|text| text.trim().parse::<u64>().ok())
                .is_some_and(|count| count > 0),
        }
    }

    /// `tasks` if the kernel refused a new process in the
    /// tree at `pids.max` (`pids.events`' `max` count; v1 and v2 alike).
    /// Nothing is killed at that limit, so this is read when the run ends.
    pub fn tasks_refused(&self) -> Option<u64> {
        let tasks = self.limits.tasks?;
        let dir = match &self.dirs {
            Dirs::V2(dir) => dir.clone(),
            Dirs::V1(_) => self.v1_dir(Controller::Pids)?.to_path_buf(),
        };
        let text = std::fs::read_to_string(dir.join("pids.events")).ok()?;
        field(&text, "max")
            .filter(|refused| *refused > 0)
            .map(|_| tasks)
    }

    /// Records that the CPU watcher stopped the tree.
    pub(crate) fn record_cpu_exceeded(&self) {
        self.recorded.store(1, Ordering::SeqCst);
    }

    /// Which limit stopped the tree, if any.
    pub fn exceeded(&self) -> Option<LimitExceeded> {
        if let (1, Some(seconds)) = (
            self.recorded.load(Ordering::SeqCst),
            self.limits.cpu_seconds,
        ) {
            return Some(LimitExceeded::Cpu { seconds });
        }
        match self.limits.memory_bytes {
            Some(bytes) if self.oom_killed() => Some(LimitExceeded::Memory { bytes }),
            _ => None,
        }
    }

    /// The processes in the cgroup now.
    pub fn pids(&self) -> Vec<i32> {
        let dir = match &self.dirs {
            Dirs::V2(dir) => dir.as_path(),
            // pids is always made when it exists; memory stands in otherwise.
            Dirs::V1(_) => match self
                .v1_dir(Controller::Pids)
                .or_else(|| self.v1_dir(Controller::Memory))
            {
                Some(dir) => dir,
                None => return Vec::new(),
            },
        };
        std::fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    }

    /// Kills every process in the cgroup and waits (up to 2 s) until it is
    /// empty: v2 `cgroup.kill`, else freeze, SIGKILL each pid, thaw, repeat.
    /// Never signals this process (the spawner thread could be inside).
    pub fn kill_all(&self) {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let give_up = Instant::now() + KILL_PATIENCE;
        let mut pause = Duration::from_micros(200);
        loop {
            let pids: Vec<i32> = self.pids().into_iter().filter(|&p| p != me).collect();
            if pids.is_empty() || Instant::now() >= give_up {
                return;
            }
            let killed_by_kernel = match &self.dirs {
                Dirs::V2(dir) => write(&dir.join("cgroup.kill"), 1).is_ok(),
                Dirs::V1(_) => false,
            };
            if !killed_by_kernel {
                let frozen = !self.pids().contains(&me) && self.freeze(true);
                // Frozen, nothing in the tree can fork or exit: each pid
                // read now is a live member.
                for pid in self.pids().into_iter().filter(|&p| p != me) {
                    // SAFETY: kill(2) with a pid and a signal number.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                if frozen {
                    self.freeze(false);
                }
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }

    /// Freezes (or thaws) the tree; true if it froze (waits up to 100 ms
    /// for the kernel to report it).
    fn freeze(&self, frozen: bool) -> bool {
        let (file, value, state_file): (PathBuf, &str, PathBuf) = match &self.dirs {
            Dirs::V2(dir) => (
                dir.join("cgroup.freeze"),
                if frozen { "1" } else { "0" },
                dir.join("cgroup.events"),
            ),
            Dirs::V1(_) => match self.v1_dir(Controller::Freezer) {
                Some(dir) => (
                    dir.join("freezer.state"),
                    if frozen { "FROZEN" } else { "THAWED" },
                    dir.join("freezer.state"),
                ),
                None => return false,
            },
        };
        if std::fs::write(&file, value).is_err() || !frozen {
            return false;
        }
        let is_frozen = || {
            let text = std::fs::read_to_string(&state_file).unwrap_or_default();
            text.trim() == "FROZEN" || field(&text, "frozen") == Some(1)
        };
        let give_up = Instant::now() + Duration::from_millis(100);
        while !is_frozen() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_micros(100));
        }
        true
    }

    /// Removes the cgroup's directories (after [`kill_all`](Self::kill_all)).
    pub fn remove(&self) -> io::Result<()> {
        let dirs = self.dirs.paths();
        let mut result = Ok(());
        for dir in dirs {
            // A process just killed may take a moment to leave (EBUSY).
            let give_up = Instant::now() + KILL_PATIENCE;
            loop {
                match remove_cgroup_dir(dir) {
                    Ok(()) => break,
                    Err(error)
                        if error.raw_os_error() == Some(libc::EBUSY)
                            && Instant::now() < give_up =>
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(error) => {
                        result = Err(error);
                        break;
                    }
                }
            }
        }
        result
    }
}

impl Drop for LaunchCgroup {
    /// The launch ended: nothing it started survives it, and no directory is left.
    fn drop(&mut self) {
        if rustix::process::getpid() != self.creator {
            return; // a forked copy: the cgroup is the parent's
        }
        if self.dirs.paths().is_empty() {
            return; // pooled, or never made
        }
        self.kill_all();
        // Only an empty cgroup waits for the next launch (docs/security.md).
        if ownership_only(&self.limits) && self.is_empty() && self.pool() {
            return;
        }
        let _ = self.remove();
    }
}

impl LaunchCgroup {
    /// Whether no process is left in any of its hierarchies (not only the
    /// one [`pids`](Self::pids) lists).
    fn is_empty(&self) -> bool {
        self.dirs.hold_nothing()
    }

    /// Its directories, leaving none behind for `Drop` to kill or remove.
    fn take_dirs(&mut self) -> Dirs {
        std::mem::replace(&mut self.dirs, Dirs::V1(Vec::new()))
    }

    /// Hands the (empty) directories to [`POOL`] instead of removing them;
    /// false when the pool is full.
    fn pool(&mut self) -> bool {
        let Ok(mut pool) = POOL.lock() else {
            return false;
        };
        if pool.len() >= POOL_SIZE {
            return false;
        }
        let me = self.creator.as_raw_nonzero().get();
        if POOL_OWNER.swap(me, Ordering::SeqCst) != me {
            // SAFETY: registers a plain extern "C" function with no arguments.
            unsafe { libc::atexit(drain_pool) };
            // Once per process: what a process that died without running
            // its exit handlers (SIGKILL, `exit!`) left in the pool.
            for dir in self.dirs.paths() {
                if let Some(parent) = dir.parent() {
                    sweep_stale(parent);
                }
            }
        }
        pool.push((me, self.take_dirs()));
        true
    }
}

/// The spawner thread inside a launch's v1 cgroups; dropping it moves the
/// thread home and lowers `pids.max` to the launch's `tasks`.
/// It is not `Send`: the thread that joined is the one that leaves, since
/// it names itself `0`.
pub struct Joined<'a> {
    cgroup: &'a LaunchCgroup,
    thread: std::thread::ThreadId,
    entered: Vec<PathBuf>,
    _same_thread: std::marker::PhantomData<*const ()>,
}

impl Drop for Joined<'_> {
    fn drop(&mut self) {
        debug_assert_eq!(self.thread, std::thread::current().id());
        for home in self.entered.drain(..) {
            let _ = write(&home.join("tasks"), CURRENT_THREAD);
        }
        if let (Some(tasks), Some(dir)) = (
            self.cgroup.limits.tasks,
            self.cgroup.v1_dir(Controller::Pids),
        ) {
            let _ = write(&dir.join("pids.max"), tasks);
        }
    }
}

/// What a v1 `tasks` file reads as "the thread writing this".
const CURRENT_THREAD: u64 = 0;

fn missing() -> io::Error {
    io::Error::from_raw_os_error(libc::ENODEV)
}

/// Writes a number to a cgroup file (one `write`, as the kernel wants).
fn write(path: &Path, value: u64) -> io::Result<()> {
    std::fs::write(path, value.to_string())
}

/// The value of `key` in a `key value` per line file.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// A fake v1 layout with only a `pids` hierarchy, at `root/pids`.
    fn fake_v1(root: &Path) -> Layout {
        let pids = root.join("pids");
        std::fs::create_dir(&pids).unwrap();
        let none = || Err(super::super::Unavailable::NoV1Hierarchy { controller: "x" });
        Layout::V1 {
            memory: none(),
            pids: Ok(pids),
            cpuacct: none(),
            freezer: none(),
        }
    }

    fn ownership_only() -> ProcessLimits {
        ProcessLimits {
            own_tree: true,
            ..ProcessLimits::default()
        }
    }

    #[test]
    fn a_pooled_cgroup_that_cannot_be_emptied_is_never_reused() {
        let root = tempfile::tempdir().unwrap();
        let layout = fake_v1(root.path());
        let first = LaunchCgroup::create(&layout, &ownership_only()).unwrap();
        let dirs = first.dirs_for_tests();
        drop(first);
        assert!(pooled_paths().contains(&dirs[0]), "{dirs:?} was not pooled");
        // A process shows up in the pooled cgroup; a fake `cgroup.procs`
        // keeps listing it after it is killed, as a cgroup that cannot be
        // emptied would.
        let mut lodger = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap();
        std::fs::write(dirs[0].join("cgroup.procs"), format!("{}\n", lodger.id())).unwrap();
        let next = LaunchCgroup::create(&layout, &ownership_only()).unwrap();
        let reused = next.dirs_for_tests() == dirs;
        // Killed (and so waitable) before `create` returned, or still running.
        let killed = lodger.try_wait().unwrap();
        if killed.is_none() {
            let _ = lodger.kill();
            let _ = lodger.wait();
        }
        assert!(!reused, "a launch was handed a cgroup holding a process");
        assert!(
            !pooled_paths().contains(&dirs[0]),
            "it went back to the pool"
        );
        assert_eq!(
            killed.and_then(|status| status.signal()),
            Some(libc::SIGKILL),
            "what was in it was killed"
        );
    }
}
