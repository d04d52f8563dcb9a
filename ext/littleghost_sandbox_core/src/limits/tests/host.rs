//! Limits hit for real on this host (cgroup v1 as root here and in CI), plus
//! the v2 launch paths over a fake tree. Host tests say why and return when
//! the host cannot enforce a limit (an unprivileged run).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::limits::cgroup::Layout;
use crate::limits::{probe, LaunchCgroup, LimitExceeded, ProcessLimits};
use crate::process::{CaptureMode, Launch, RunningProcess, SpawnError, POLL_INTERVAL};

const MIB: u64 = 1 << 20;

fn launch(script: &str) -> Launch {
    Launch {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Launch::default()
    }
}

/// Whether the host enforces what `limits` asks; says why not.
fn enforced(limits: &ProcessLimits) -> bool {
    match probe().refusal(limits) {
        None => true,
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

fn start(script: &str, limits: &ProcessLimits) -> RunningProcess {
    RunningProcess::start_limited(
        &launch(script),
        limits,
        CaptureMode::PerStream {
            limit: 1 << 20,
            stop_at_limit: false,
        },
        false,
        None,
    )
    .unwrap()
}

fn wait_finished(process: &RunningProcess, patience: Duration) {
    let deadline = Instant::now() + patience;
    while !process.finished() {
        assert!(Instant::now() < deadline, "child did not finish");
        process.notifier().wait(POLL_INTERVAL, None);
    }
}

/// The launch cgroups of this process left in any v1 hierarchy or the v2 parent.
fn leftover_cgroups() -> Vec<String> {
    let Ok(layout) = crate::limits::host_layout() else {
        return Vec::new();
    };
    let parents: Vec<std::path::PathBuf> = match layout {
        Layout::V2 { parent, .. } => vec![parent.clone()],
        Layout::V1 { .. } => crate::limits::cgroup::Controller::ALL
            .iter()
            .filter_map(|&c| layout.v1_home(c).map(Path::to_path_buf))
            .collect(),
    };
    let prefix = format!("littleghost-{}-", std::process::id());
    // Empty cgroups kept for the next ownership-only launch are not left
    // over: they go when the process exits.
    let pooled = crate::limits::launch::pooled_paths();
    parents
        .iter()
        .flat_map(|parent| std::fs::read_dir(parent).unwrap())
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            (name.starts_with(&prefix) && !pooled.contains(&entry.path()))
                .then(|| entry.path().display().to_string())
        })
        .collect()
}

#[test]
fn an_ownership_only_cgroup_is_reused_empty_and_never_more_than_the_pool_holds() {
    let limits = ProcessLimits {
        own_tree: true,
        ..ProcessLimits::default()
    };
    if !enforced(&limits) {
        return;
    }
    for _ in 0..50 {
        let process = start("sleep 0.01 & exit 0", &limits);
        wait_finished(&process, Duration::from_secs(10));
    }
    let pooled = crate::limits::launch::pooled_paths();
    assert!(pooled.len() <= 8 * 4, "{pooled:?}");
    assert!(
        !pooled.is_empty(),
        "an ended ownership-only launch keeps its cgroup for the next"
    );
    for dir in &pooled {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        assert!(
            procs.trim().is_empty(),
            "a pooled cgroup holds {procs} ({})",
            dir.display()
        );
    }
}

#[test]
fn memory_never_passes_the_limit_and_the_launch_says_so() {
    let limits = ProcessLimits {
        memory_bytes: Some(64 * MIB),
        ..ProcessLimits::default()
    };
    if !enforced(&limits) {
        return;
    }
    // Allocates and touches 16 MiB per step, printing its resident size.
    let script = r#"exec perl -e '$|=1; my @k; while (1) { push @k, "x" x (16<<20); open my $f, "<", "/proc/self/statm"; my @s = split / /, <$f>; print $s[1] * 4096, "\n" }'"#;
    let process = start(script, &limits);
    wait_finished(&process, Duration::from_secs(30));
    let (stdout, _) = process.take_output();
    let sizes: Vec<u64> = stdout.lines().filter_map(|l| l.parse().ok()).collect();
    assert!(sizes.len() >= 2, "{stdout}");
    assert!(sizes.iter().all(|&size| size <= 64 * MIB), "{sizes:?}");
    assert_eq!(process.exit().and_then(|e| e.signal()), Some(libc::SIGKILL));
    assert_eq!(
        process.limit_exceeded(),
        Some(LimitExceeded::Memory { bytes: 64 * MIB })
    );
}

#[test]
fn tmpfs_pages_count_against_the_memory_limit() {
    let limits = ProcessLimits {
        memory_bytes: Some(64 * MIB),
        ..ProcessLimits::default()
    };
    if !enforced(&limits) || !Path::new("/dev/shm").is_dir() {
        return;
    }
    let file = format!("/dev/shm/littleghost-test-{}", std::process::id());
    let script = format!("dd if=/dev/zero of={file} bs=1M count=200 2>/dev/null");
    let process = start(&script, &limits);
    wait_finished(&process, Duration::from_secs(30));
    let written = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&file);
    assert!(written < 200 * MIB, "{written} bytes written");
    assert_eq!(
        process.limit_exceeded(),
        Some(LimitExceeded::Memory { bytes: 64 * MIB })
    );
}

#[test]
fn a_fork_loop_never_has_more_than_its_tasks_and_nothing_is_killed() {
    let limits = ProcessLimits {
        tasks: Some(16),
        ..ProcessLimits::default()
    };
    if !enforced(&limits) {
        return;
    }
    // Forks until refused; children live until the parent has reported.
    let script = r#"exec perl -e '$|=1; my $n = 0; for (1..40) { my $p = fork; if (!defined $p) { print "refused $!\n"; last } if ($p == 0) { sleep 2; exit 0 } $n++ } print "forked $n\n"; 1 while wait != -1'"#;
    let process = start(script, &limits);
    wait_finished(&process, Duration::from_secs(30));
    let (stdout, _) = process.take_output();
    // The perl parent plus 15 children is 16 tasks.
    assert!(stdout.contains("forked 15"), "{stdout}");
    assert!(
        stdout.contains("refused Resource temporarily unavailable"),
        "{stdout}"
    );
    assert_eq!(process.exit().and_then(|e| e.code()), Some(0));
    assert_eq!(process.limit_exceeded(), None);
}

#[test]
fn four_busy_children_share_one_cpu_budget() {
    let limits = ProcessLimits {
        cpu_seconds: Some(1),
        ..ProcessLimits::default()
    };
    if !enforced(&limits) {
        return;
    }
    let script = "for i in 1 2 3 4; do (while :; do :; done) & done; wait";
    let process = start(script, &limits);
    wait_finished(&process, Duration::from_secs(60));
    assert_eq!(
        process.limit_exceeded(),
        Some(LimitExceeded::Cpu { seconds: 1 })
    );
    let used = process.tree_cpu_time().unwrap();
    // Not four seconds: the watcher polls every 20 ms, TERM acts at once.
    assert!(
        used >= Duration::from_secs(1) && used < Duration::from_secs(3),
        "{used:?}"
    );
}

#[test]
fn a_setsid_daemon_dies_with_its_launch() {
    let limits = ProcessLimits {
        own_tree: true,
        ..ProcessLimits::default()
    };
    if !enforced(&limits) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon");
    let script = format!(
        "setsid sh -c 'echo $$ > {}.tmp; mv {0}.tmp {0}; exec sleep 100' </dev/null >/dev/null 2>&1 &",
        pidfile.display()
    );
    let process = start(&script, &limits);
    wait_finished(&process, Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pidfile.exists() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(POLL_INTERVAL);
    }
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = format!("/proc/{pid}/stat");
    assert!(alive(&stat), "the daemon should outlive its leader");
    drop(process);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(&stat) {
        assert!(Instant::now() < deadline, "the daemon survived its launch");
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Running (not gone, not a zombie waiting for init).
fn alive(stat: &str) -> bool {
    std::fs::read_to_string(stat)
        .ok()
        .and_then(|text| {
            text.rsplit_once(") ")
                .map(|(_, rest)| rest.starts_with(['Z', 'X']))
        })
        .is_some_and(|dead| !dead)
}

#[test]
fn no_cgroup_is_left_after_a_thousand_launches() {
    let limits = ProcessLimits {
        memory_bytes: Some(256 * MIB),
        own_tree: true,
        ..ProcessLimits::default()
    };
    if !enforced(&limits) {
        return;
    }
    for _ in 0..1000 {
        let process = start("exit 0", &limits);
        wait_finished(&process, Duration::from_secs(10));
    }
    // Other tests of this process may still hold theirs for a moment.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !leftover_cgroups().is_empty() {
        assert!(Instant::now() < deadline, "left: {:?}", leftover_cgroups());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The v2 join (a pre-exec write to `cgroup.procs` on the fork path),
/// `cpu.stat` and `cgroup.kill` on a real cgroup2 mount: this host's
/// `/sys/fs/cgroup/unified` has no controllers, which these do not need.
#[test]
fn v2_children_join_before_exec_and_are_killed_with_the_cgroup() {
    let unified = Path::new("/sys/fs/cgroup/unified");
    let layout = Layout::V2 {
        parent: unified.to_path_buf(),
        memory: false,
        pids: false,
    };
    let limits = ProcessLimits {
        own_tree: true,
        cpu_seconds: Some(100),
        ..ProcessLimits::default()
    };
    let cgroup = match LaunchCgroup::create(&layout, &limits) {
        Ok(cgroup) => cgroup,
        Err(error) => {
            eprintln!(
                "skipped: no writable cgroup2 at {}: {error}",
                unified.display()
            );
            return;
        }
    };
    assert!(cgroup.joins_in_child());
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon");
    // The leader reports its own cgroup, then leaves a daemon behind.
    let script = format!(
        "cat /proc/self/cgroup; setsid sh -c 'echo $$ > {0}.tmp; mv {0}.tmp {0}; exec sleep 100' </dev/null >/dev/null 2>&1 &",
        pidfile.display()
    );
    let mut spawned =
        crate::process::spawn::spawn_in(&launch(&script), Some(cgroup), false).unwrap();
    let cgroup = spawned.cgroup.take().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut std::fs::File::from(spawned.stdout), &mut stdout).unwrap();
    let mut status = 0;
    // SAFETY: waiting for our own child into a local.
    unsafe { libc::waitpid(spawned.pid, &mut status, 0) };
    let line = stdout
        .lines()
        .find(|l| l.starts_with("0::"))
        .unwrap()
        .to_string();
    assert!(line.starts_with("0::/littleghost-"), "{stdout}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pidfile.exists() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(POLL_INTERVAL);
    }
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The `mv` that published the pid file may not have exited yet.
    let deadline = Instant::now() + Duration::from_secs(10);
    while cgroup.pids() != vec![pid] && Instant::now() < deadline {
        std::thread::sleep(POLL_INTERVAL);
    }
    assert_eq!(cgroup.pids(), vec![pid]);
    assert!(cgroup.cpu_usage().is_some());
    let path = unified.join(line.trim_start_matches("0::/"));
    drop(cgroup);
    let stat = format!("/proc/{pid}/stat");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(&stat) {
        assert!(Instant::now() < deadline, "the daemon survived its cgroup");
        std::thread::sleep(POLL_INTERVAL);
    }
    assert!(!path.exists());
}

#[test]
fn an_unenforceable_limit_starts_nothing() {
    let limits = ProcessLimits {
        tasks: Some(4),
        cgroup_dir: Some("/nonexistent/delegated".into()),
        ..ProcessLimits::default()
    };
    let marker = tempfile::tempdir().unwrap();
    let touched = marker.path().join("ran");
    let script = format!("touch {}", touched.display());
    let started = crate::process::spawn::spawn_limited(&launch(&script), &limits, false);
    // This host's own layout may still enforce tasks (v1); the explicit
    // directory only adds a v2 candidate, so only a host without one refuses.
    match started {
        Err(SpawnError::Unenforceable(why)) => {
            assert!(!why.is_empty());
            std::thread::sleep(Duration::from_millis(100));
            assert!(!touched.exists());
        }
        Ok(spawned) => assert!(spawned.cgroup.is_some()),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn v2_launch_cgroups_write_limits_read_usage_and_go_away() {
    let root = tempfile::tempdir().unwrap();
    let layout = Layout::V2 {
        parent: root.path().to_path_buf(),
        memory: true,
        pids: true,
    };
    let limits = ProcessLimits {
        memory_bytes: Some(64 * MIB),
        tasks: Some(16),
        cpu_seconds: Some(1),
        ..ProcessLimits::default()
    };
    let cgroup = LaunchCgroup::create(&layout, &limits).unwrap();
    assert!(cgroup.joins_in_child());
    let dirs: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
    assert_eq!(dirs.len(), 1);
    let dir = dirs[0].as_ref().unwrap().path();
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(read("memory.max"), (64 * MIB).to_string());
    assert_eq!(read("pids.max"), "16");
    // No memory.swap.max in this tree: not written.
    assert!(!dir.join("memory.swap.max").exists());

    std::fs::write(dir.join("cgroup.procs"), "").unwrap();
    assert!(cgroup.procs_fd().is_ok());
    std::fs::write(dir.join("cpu.stat"), "usage_usec 1500000\nuser_usec 1\n").unwrap();
    assert_eq!(cgroup.cpu_usage(), Some(Duration::from_millis(1500)));
    assert_eq!(cgroup.exceeded(), None);
    std::fs::write(
        dir.join("memory.events"),
        "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
    )
    .unwrap();
    assert_eq!(
        cgroup.exceeded(),
        Some(LimitExceeded::Memory { bytes: 64 * MIB })
    );
    cgroup.record_cpu_exceeded();
    assert_eq!(cgroup.exceeded(), Some(LimitExceeded::Cpu { seconds: 1 }));
    drop(cgroup);
    assert!(!dir.exists());
}

/// `cargo test -p littleghost_sandbox_core --release -- --ignored --nocapture spawn_cost`
#[test]
#[ignore]
fn spawn_cost_with_and_without_limits() {
    let limits = ProcessLimits {
        memory_bytes: Some(256 * MIB),
        tasks: Some(64),
        cpu_seconds: Some(10),
        own_tree: true,
        ..ProcessLimits::default()
    };
    let truth = Launch {
        argv: vec!["/bin/true".into()],
        ..Launch::default()
    };
    let run = |limits: &ProcessLimits| {
        let rounds = 300;
        let began = Instant::now();
        for _ in 0..rounds {
            let process = RunningProcess::start_limited(
                &truth,
                limits,
                CaptureMode::PerStream {
                    limit: 1024,
                    stop_at_limit: false,
                },
                false,
                None,
            )
            .unwrap();
            wait_finished(&process, Duration::from_secs(10));
        }
        began.elapsed() / rounds
    };
    let _warm = run(&ProcessLimits::default());
    let without = run(&ProcessLimits::default());
    let with = run(&limits);
    eprintln!(
        "/bin/true: {without:?} without limits, {with:?} with (+{:?})",
        with.saturating_sub(without)
    );
}

/// v1: the spawner thread moves itself (`0` in `tasks`) into the launch's
/// cgroups and back. The child must start inside, and no thread of this
/// process may stay inside afterwards (its later children, and Ruby's own
/// memory, would be charged to a launch that is gone).
#[test]
fn a_v1_child_starts_inside_its_cgroup_and_no_host_thread_stays_behind() {
    let limits = ProcessLimits {
        own_tree: true,
        ..ProcessLimits::default()
    };
    if !enforced(&limits) {
        return;
    }
    if !matches!(crate::limits::host_layout(), Ok(Layout::V1 { .. })) {
        eprintln!("skipped: launch cgroups are not v1 here");
        return;
    }
    for _ in 0..3 {
        let process = start("cat /proc/self/cgroup", &limits);
        wait_finished(&process, Duration::from_secs(10));
        let (stdout, _) = process.take_output();
        let pids = stdout
            .lines()
            .find(|line| line.split(':').nth(1) == Some("pids"))
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(pids.contains("/littleghost-"), "{stdout}");
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let own = std::fs::read_to_string(task.path().join("cgroup")).unwrap_or_default();
            assert!(
                !own.contains("littleghost-"),
                "thread {:?} stayed in a launch cgroup: {own}",
                task.file_name()
            );
        }
    }
}

/// The v2 launch cgroup of this test's writable cgroup2 hierarchy, or None
/// (says why) where there is none.
fn unified_launch_cgroup() -> Option<LaunchCgroup> {
    let unified = Path::new("/sys/fs/cgroup/unified");
    let layout = Layout::V2 {
        parent: unified.to_path_buf(),
        memory: false,
        pids: false,
    };
    let limits = ProcessLimits {
        own_tree: true,
        cpu_seconds: Some(100),
        ..ProcessLimits::default()
    };
    match LaunchCgroup::create(&layout, &limits) {
        Ok(cgroup) => Some(cgroup),
        Err(error) => {
            eprintln!(
                "skipped: no writable cgroup2 at {}: {error}",
                unified.display()
            );
            None
        }
    }
}

/// The v2 cgroup line of a child launched into `cgroup`, and whether it was
/// cloned straight into it.
fn v2_child_cgroup(cgroup: LaunchCgroup, refuse_clone3: bool) -> (String, String, Option<bool>) {
    let expected = match &cgroup.dirs_for_tests()[..] {
        [dir] => format!("0::/{}", dir.file_name().unwrap().to_string_lossy()),
        other => panic!("{other:?}"),
    };
    crate::process::spawn::REFUSE_CLONE3.with(|refuse| refuse.set(refuse_clone3));
    crate::process::spawn::LAST_JOIN.with(|last| last.set(None));
    let spawned =
        crate::process::spawn::spawn_in(&launch("cat /proc/self/cgroup"), Some(cgroup), false);
    crate::process::spawn::REFUSE_CLONE3.with(|refuse| refuse.set(false));
    let spawned = spawned.unwrap();
    let joined = crate::process::spawn::LAST_JOIN.with(|last| last.get());
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut std::fs::File::from(spawned.stdout), &mut stdout).unwrap();
    let mut status = 0;
    // SAFETY: waiting for our own child into a local.
    unsafe { libc::waitpid(spawned.pid, &mut status, 0) };
    let line = stdout
        .lines()
        .find(|l| l.starts_with("0::"))
        .unwrap_or_else(|| panic!("{stdout}"))
        .to_string();
    (line, expected, joined)
}

/// A v2 child is created inside its launch cgroup (`CLONE_INTO_CGROUP`: no
/// migration, so no wait for the kernel's global threadgroup lock), and
/// where the kernel refuses that it still joins before exec.
#[test]
fn a_v2_child_is_cloned_into_its_cgroup_or_joins_it_before_exec() {
    let Some(cgroup) = unified_launch_cgroup() else {
        return;
    };
    let (line, expected, joined) = v2_child_cgroup(cgroup, false);
    assert_eq!(line, expected);
    assert_eq!(joined, Some(true), "cloned with CLONE_INTO_CGROUP");

    let Some(cgroup) = unified_launch_cgroup() else {
        return;
    };
    let (line, expected, joined) = v2_child_cgroup(cgroup, true);
    assert_eq!(line, expected);
    assert_eq!(joined, Some(false), "the cgroup.procs fallback");
}
