//! The CPU watcher: a task on the shared runtime that polls a launch
//! cgroup's CPU usage and, past `cpu_seconds`, records the reason, runs the
//! caller's termination (the one TERM/grace/KILL protocol of
//! [`crate::process::Termination`]) and then kills whatever is left in the
//! cgroup (descendants that left the process tree, such as a `setsid` daemon).

use std::future::Future;
use std::sync::Weak;
use std::time::Duration;

use super::LaunchCgroup;

/// How often the usage is read: the tree may overrun its CPU time by about
/// this much per busy CPU.
pub const CPU_POLL: Duration = Duration::from_millis(20);

/// Watches `cgroup` until it is dropped (the launch ended) or its tree used
/// more than its `cpu_seconds`; then records the reason, awaits `terminate`
/// and kills what is left. Returns at once without a CPU limit.
pub async fn watch_cpu(cgroup: Weak<LaunchCgroup>, terminate: impl Future<Output = ()>) {
    let Some(limit) = cgroup
        .upgrade()
        .and_then(|c| c.limits().cpu_seconds)
        .map(Duration::from_secs)
    else {
        return;
    };
    loop {
        tokio::time::sleep(CPU_POLL).await;
        let Some(live) = cgroup.upgrade() else {
            return;
        };
        if live.cpu_usage().is_some_and(|used| used > limit) {
            live.record_cpu_exceeded();
            drop(live);
            terminate.await;
            if let Some(live) = cgroup.upgrade() {
                // Blocking (bounded) work off the runtime's workers.
                let _ = tokio::task::spawn_blocking(move || live.kill_all()).await;
            }
            return;
        }
    }
}
