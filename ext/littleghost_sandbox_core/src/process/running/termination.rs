//! 17.12, the one termination protocol ([`Termination`]), and the
//! [`Owner`] that terminates everything a sandbox started (H.4). Every
//! caller goes through it: an execute that timed out or was interrupted, a
//! session's `terminate`/`close`, a session past its output bound or its
//! memory limit (in the background), and a closed sandbox.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::super::group::{
    descendants, group_alive, only_deaf_to_term, process_alive, signal_group, signal_process,
};
use super::super::{POLL_INTERVAL, TERMINATION_GRACE};
use super::{lock, Shared};

/// 17.12 for a group the caller is not waiting on (a session that passed its
/// output bound).
pub(super) async fn terminate_in_background(shared: Arc<Shared>) {
    let mut termination = Termination::begin(shared);
    while let TerminationStep::Wait(pause) = termination.step() {
        tokio::time::sleep(pause).await;
    }
}

/// A session's `timeout:`: once `lifetime` passes with the child still
/// alive, records that it timed out, runs 17.12 on its tree and then kills
/// whatever is left in its cgroup (a `setsid` daemon), as the CPU watcher
/// does. A child that ended (or was dropped) before is left alone.
pub(super) async fn expire(shared: Weak<Shared>, lifetime: Duration) {
    tokio::time::sleep(lifetime).await;
    let Some(shared) = shared.upgrade() else {
        return;
    };
    if shared.try_reap().is_some() && !group_alive(shared.pid) {
        return;
    }
    shared.timed_out.store(true, Ordering::SeqCst);
    let cgroup = shared.cgroup.clone();
    terminate_in_background(shared.clone()).await;
    if let Some(live) = cgroup.upgrade() {
        // Blocking (bounded) work off the runtime's workers.
        let _ = tokio::task::spawn_blocking(move || live.kill_all()).await;
    }
    // Waiters (a `wait` in another thread) hear about it.
    shared.notifier.notify();
}

/// 17.12, the one termination protocol: TERM to the child's group and to
/// every descendant and its group (see [`descendants`]), up to
/// [`TERMINATION_GRACE`] for them all to end, then KILL. The grace is for
/// processes that can act on TERM: once every one still alive is deaf to it
/// ([`only_deaf_to_term`]), KILL goes at once. Callers drive it
/// with [`step`](Self::step) and wait however suits them (a Ruby waiter, a
/// tokio timer, a plain sleep).
pub struct Termination {
    shared: Arc<Shared>,
    /// The child's group first.
    groups: Vec<i32>,
    /// Descendants found when it began (they may leave their group).
    members: Vec<i32>,
    grace_end: Instant,
    done: bool,
}

/// Waits (at most 1 s, on a loaded machine) until `pid` is stopped or gone. Linux reads its
/// state from `/proc`; elsewhere the stop is simply not waited for.
fn wait_until_stopped(pid: i32) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let give_up = Instant::now() + Duration::from_secs(1);
    while Instant::now() < give_up {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return;
        };
        match super::super::group::parse_stat(&stat) {
            Some(('T' | 't' | 'Z' | 'X' | 'x', _)) | None => return,
            Some(_) => std::thread::sleep(Duration::from_micros(200)),
        }
    }
}

/// What a [`Termination`] wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminationStep {
    /// Something still runs: check again after this pause (or on news).
    Wait(Duration),
    /// Every group ended, or KILL was sent.
    Done,
}

impl Termination {
    pub(super) fn begin(shared: Arc<Shared>) -> Termination {
        // Stopped, the leader cannot start another session while its
        // descendants are listed (a bwrap setting up its sandbox would).
        signal_group(shared.pid, Signal::STOP);
        wait_until_stopped(shared.pid);
        let mut groups = vec![shared.pid];
        let mut members = Vec::new();
        for (pid, group) in descendants(shared.pid) {
            members.push(pid);
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        for &group in &groups {
            signal_group(group, Signal::TERM);
        }
        for &pid in &members {
            signal_process(pid, Signal::TERM);
        }
        // TERM is pending; CONT lets it act.
        signal_group(shared.pid, Signal::CONT);
        Termination {
            shared,
            groups,
            members,
            grace_end: Instant::now() + TERMINATION_GRACE,
            done: false,
        }
    }

    /// Reaps the leader if it exited; Done once no group is alive, or after
    /// sending KILL when the grace is over.
    pub fn step(&mut self) -> TerminationStep {
        if self.done {
            return TerminationStep::Done;
        }
        if !self.lingers() {
            self.done = true;
            return TerminationStep::Done;
        }
        let now = Instant::now();
        // What is left cannot act on TERM (bwrap's sandbox
        // process still setting up its namespace, a program ignoring TERM):
        // the grace would only delay the KILL that ends it.
        if now >= self.grace_end || only_deaf_to_term(&self.groups, &self.members) {
            self.kill();
            return TerminationStep::Done;
        }
        TerminationStep::Wait(POLL_INTERVAL.min(self.grace_end - now))
    }

    /// The leader is unreaped or a group still has a live member.
    fn lingers(&self) -> bool {
        self.shared.try_reap().is_none()
            || self.groups.iter().any(|&group| group_alive(group))
            || self.members.iter().any(|&pid| process_alive(pid))
    }

    /// Cuts the grace short: KILL every group now.
    pub fn kill(&mut self) {
        for &group in &self.groups {
            signal_group(group, Signal::KILL);
        }
        for &pid in &self.members {
            signal_process(pid, Signal::KILL);
        }
        self.done = true;
    }
}

/// The children a sandbox started, so that closing it terminates every one
/// still running (H.4). Holds weak references: a child whose handle was
/// dropped has already been killed by that drop.
#[derive(Clone, Default)]
pub struct Owner {
    children: Arc<Mutex<Vec<Weak<Shared>>>>,
    /// Launches handed to the spawner and not adopted yet: a child exists
    /// (and can be seen in /proc) a moment before it is adopted, so
    /// [`Owner::terminate_all`] waits for these first.
    launching: Arc<(Mutex<usize>, Condvar)>,
}

/// One launch on its way to [`Owner::adopt`]; dropped once adopted (or
/// abandoned before anything was spawned).
pub struct Launching(Arc<(Mutex<usize>, Condvar)>);

impl Drop for Launching {
    fn drop(&mut self) {
        let (count, changed) = &*self.0;
        *lock(count) -= 1;
        changed.notify_all();
    }
}

/// How long `terminate_all` waits for launches in flight to be adopted
/// (a spawn takes milliseconds; this only bounds a wedged spawner).
const LAUNCH_SETTLE: Duration = Duration::from_secs(5);

impl Owner {
    pub fn new() -> Owner {
        Owner::default()
    }

    /// Counts a launch in flight until the returned guard is dropped.
    pub(in crate::process) fn launching(&self) -> Launching {
        *lock(&self.launching.0) += 1;
        Launching(self.launching.clone())
    }

    /// Waits (up to [`LAUNCH_SETTLE`]) until no launch is in flight.
    fn settle_launches(&self) {
        let (count, changed) = &*self.launching;
        let deadline = Instant::now() + LAUNCH_SETTLE;
        let mut in_flight = lock(count);
        while *in_flight > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            in_flight = match changed.wait_timeout(in_flight, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    pub(super) fn adopt(&self, shared: &Arc<Shared>) {
        let mut children = lock(&self.children);
        children.retain(|child| child.strong_count() > 0);
        children.push(Arc::downgrade(shared));
    }

    /// Terminates every child still alive (17.12, all at once), marks each as
    /// [`terminated_by_owner`](RunningProcess::terminated_by_owner) first, and
    /// returns once they all ended (or were sent KILL). Then every child's
    /// cgroup is killed, also the cgroup of one whose leader had already
    /// ended (a supervisor SIGKILLed from outside): nothing it started
    /// survives (docs/security.md, "Nothing survives `close`"). Blocks for
    /// up to [`TERMINATION_GRACE`] plus a moment: call it without the GVL.
    /// Returns how many were terminated.
    pub fn terminate_all(&self) -> usize {
        // A child spawned but not adopted yet is already running: wait for it.
        self.settle_launches();
        let me = rustix::process::getpid();
        let children: Vec<Arc<Shared>> = std::mem::take(&mut *lock(&self.children))
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|child| child.parent == me)
            .collect();
        let mut terminations = Vec::new();
        let mut ended = Vec::new();
        for child in children {
            if child.try_reap().is_some() && !group_alive(child.pid) {
                // Its leader is gone (a Landlock supervisor SIGKILLed from
                // outside), but what it started may live on outside its
                // group: its cgroup is still ended below.
                ended.push(child);
                continue;
            }
            child.terminated_by_owner.store(true, Ordering::SeqCst);
            terminations.push(Termination::begin(child));
        }
        let count = terminations.len();
        loop {
            let mut pause = None::<Duration>;
            for termination in &mut terminations {
                if let TerminationStep::Wait(wait) = termination.step() {
                    pause = Some(pause.map_or(wait, |p| p.min(wait)));
                }
            }
            match pause {
                Some(pause) => std::thread::sleep(pause),
                None => break,
            }
        }
        // After KILL the kernel takes a moment: return once they are gone.
        let give_up = Instant::now() + Duration::from_secs(2);
        while Instant::now() < give_up && terminations.iter().any(Termination::lingers) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Descendants that left the tree (a setsid daemon) go with their
        // cgroup, whether or not the leader was still running.
        let every_child = terminations
            .iter()
            .map(|termination| &termination.shared)
            .chain(&ended);
        for child in every_child {
            if let Some(cgroup) = child.cgroup.upgrade() {
                cgroup.kill_all();
            }
        }
        // Waiters (a session call, an execute in another thread) hear about it.
        for termination in &terminations {
            termination.shared.notifier.notify();
        }
        count
    }
}
