//! Tests of [`RunningProcess`](super::RunningProcess): real children, no Ruby.
use super::super::group::process_alive;
use super::super::spawn::pid_of;
use super::super::POLL_INTERVAL;
use super::*;
use std::time::{Duration, Instant};

fn launch(argv: &[&str]) -> Launch {
    Launch {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Launch::default()
    }
}

fn wait_finished(process: &RunningProcess) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !process.finished() {
        assert!(
            Instant::now() < deadline,
            "child did not finish: complete {} exit {:?}",
            process.output_complete(),
            process.exit()
        );
        process.notifier().wait(POLL_INTERVAL, None);
    }
}

#[test]
fn captures_both_streams_and_the_exit_status() {
    let process = RunningProcess::start(
        &launch(&["sh", "-c", "printf out; printf err >&2; exit 3"]),
        CaptureMode::PerStream {
            limit: 100,
            stop_at_limit: false,
        },
        false,
    )
    .unwrap();
    wait_finished(&process);
    assert_eq!(
        process.take_output(),
        ("out".to_string(), "err".to_string())
    );
    assert_eq!(process.exit().unwrap().code(), Some(3));
}

#[test]
fn a_flood_is_drained_and_bounded() {
    let process = RunningProcess::start(
        &launch(&["head", "-c", "20000000", "/dev/zero"]),
        CaptureMode::PerStream {
            limit: 1000,
            stop_at_limit: false,
        },
        false,
    )
    .unwrap();
    wait_finished(&process);
    let (stdout, _) = process.take_output();
    assert_eq!(stdout.len(), 1000 + super::super::TRUNCATION_MARKER.len());
    assert_eq!(process.exit().unwrap().code(), Some(0));
}

#[test]
fn the_child_gets_only_the_explicit_environment_and_eof_on_stdin() {
    std::env::set_var("LITTLEGHOST_CORE_TEST_SECRET", "hunter2");
    let process = RunningProcess::start(
        &Launch {
            environment: vec![("ONLY".into(), "this".into())],
            ..launch(&["/usr/bin/env"])
        },
        CaptureMode::PerStream {
            limit: 10_000,
            stop_at_limit: false,
        },
        false,
    )
    .unwrap();
    wait_finished(&process);
    assert_eq!(process.take_output().0, "ONLY=this\n");

    let cat = RunningProcess::start(
        &launch(&["cat"]),
        CaptureMode::PerStream {
            limit: 10,
            stop_at_limit: false,
        },
        false,
    )
    .unwrap();
    wait_finished(&cat);
    assert_eq!(cat.exit().unwrap().code(), Some(0));
}

#[test]
fn the_child_leads_a_new_group_and_a_signal_death_has_no_code() {
    let process = RunningProcess::start(
        &launch(&["sleep", "30"]),
        CaptureMode::PerStream {
            limit: 10,
            stop_at_limit: false,
        },
        false,
    )
    .unwrap();
    let pgid = rustix::process::getpgid(Some(pid_of(process.pid()))).unwrap();
    assert_eq!(pgid.as_raw_nonzero().get(), process.pid());
    process.signal_group(Signal::KILL);
    wait_finished(&process);
    let exit = process.exit().unwrap();
    assert_eq!((exit.code(), exit.signal()), (None, Some(libc::SIGKILL)));
    assert!(!process.alive());
}

/// Reads a session's stdout with `read_chunk` until EOF, racing the drain task.
fn read_all_stdout(process: &RunningProcess, max_each: usize) -> Vec<u8> {
    // A guard against a hang, not a timing: the whole test suite shares a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut stdout = Vec::new();
    loop {
        let chunk = process.read_chunk(max_each);
        assert!(chunk.stdout.len() <= max_each);
        stdout.extend_from_slice(&chunk.stdout);
        if chunk.stdout_closed {
            return stdout;
        }
        assert!(Instant::now() < deadline, "no EOF on stdout");
    }
}

#[test]
fn direct_reads_and_the_drain_task_keep_the_bytes_in_order() {
    let expected: Vec<u8> = (1..=200_000)
        .map(|n| format!("{n}\n"))
        .collect::<String>()
        .into_bytes();
    for max_each in [7, 4096, 16 * 1024] {
        let process = RunningProcess::start(
            &launch(&["seq", "1", "200000"]),
            CaptureMode::Combined { limit: 10_000_000 },
            false,
        )
        .unwrap();
        let stdout = read_all_stdout(&process, max_each);
        assert!(stdout == expected, "bytes lost or reordered");
        wait_finished(&process);
    }
}

#[test]
fn a_child_is_still_drained_after_a_polling_reader_stops_reading() {
    // 200 polled round trips (the drain task steps back while a reader
    // polls), then 2 MB nobody reads: the child must still finish (W15).
    let script = "for i in $(seq 200); do read line; echo \"$line\"; done; \
                  sleep 0.2; head -c 2000000 /dev/zero";
    let process = RunningProcess::start(
        &launch(&["sh", "-c", script]),
        CaptureMode::Combined { limit: 10_000_000 },
        true,
    )
    .unwrap();
    let stdin = process.stdin().unwrap();
    for round in 0..200 {
        let line = format!("{round}\n");
        assert_eq!(write_stdin(&stdin, line.as_bytes()).unwrap(), line.len());
        let mut received = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !received.ends_with(line.as_bytes()) {
            received.extend(process.read_chunk(16 * 1024).stdout);
            assert!(Instant::now() < deadline, "no echo of round {round}");
        }
        assert_eq!(received, line.as_bytes());
    }
    wait_finished(&process);
    assert_eq!(process.exit().unwrap().code(), Some(0));
    assert_eq!(process.read_chunk(usize::MAX).stdout.len(), 2_000_000);
}

#[test]
fn a_direct_read_past_the_combined_bound_terminates_the_group() {
    let process = RunningProcess::start(
        &launch(&["sh", "-c", "while :; do echo flood; done"]),
        CaptureMode::Combined { limit: 1000 },
        false,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut kept = 0;
    while !process.overflowed() {
        kept += process.read_chunk(16 * 1024).stdout.len();
        assert!(Instant::now() < deadline, "bound never passed");
    }
    assert!(kept <= 1000);
    wait_finished(&process);
    assert_eq!(process.exit().unwrap().signal(), Some(libc::SIGTERM));
}

#[test]
fn closing_output_closes_the_pipes_so_a_writer_gets_sigpipe() {
    let process = RunningProcess::start(
        &launch(&[
            "sh",
            "-c",
            "sleep 0.3; while :; do echo more || exit 7; done",
        ]),
        CaptureMode::Combined { limit: 1 << 40 },
        false,
    )
    .unwrap();
    process.read_chunk(16);
    process.close_output();
    wait_finished_exit(&process);
    let exit = process.exit().unwrap();
    assert!(
        exit.signal() == Some(libc::SIGPIPE) || exit.code() == Some(7),
        "{exit:?}"
    );
}

fn wait_finished_exit(process: &RunningProcess) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while process.try_reap().is_none() {
        assert!(Instant::now() < deadline, "child did not exit");
        process.notifier().wait(POLL_INTERVAL, None);
    }
}

#[test]
fn an_owner_terminates_every_live_child_and_marks_it() {
    let owner = Owner::new();
    let start = |argv: &[&str]| {
        RunningProcess::start_owned(
            &launch(argv),
            CaptureMode::Combined { limit: 100 },
            true,
            Some(&owner),
        )
        .unwrap()
    };
    let sleeper = start(&["sleep", "30"]);
    // Ignores TERM: only the KILL after the grace ends it.
    let stubborn = start(&[
        "sh",
        "-c",
        "trap '' TERM; echo ready; while :; do sleep 1; done",
    ]);
    let finished = start(&["true"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stubborn.read_chunk(100).stdout.starts_with(b"ready") {
        assert!(Instant::now() < deadline, "stubborn child never started");
    }
    wait_finished(&finished);
    let dropped = start(&["sleep", "30"]);
    drop(dropped);
    assert_eq!(owner.terminate_all(), 2);
    for process in [&sleeper, &stubborn] {
        assert!(process.terminated_by_owner());
        assert!(!process.alive());
    }
    assert!(!finished.terminated_by_owner());
    assert_eq!(sleeper.exit().unwrap().signal(), Some(libc::SIGTERM));
    assert_eq!(stubborn.exit().unwrap().signal(), Some(libc::SIGKILL));
    // Nothing left to terminate.
    assert_eq!(owner.terminate_all(), 0);
}

#[test]
fn missing_and_non_executable_programs_are_told_apart() {
    let missing = RunningProcess::start(
        &launch(&["no-such-program-x"]),
        CaptureMode::PerStream {
            limit: 1,
            stop_at_limit: false,
        },
        false,
    );
    assert!(matches!(missing, Err(SpawnError::NotFound)));
    let denied = RunningProcess::start(
        &launch(&["/etc/hostname"]),
        CaptureMode::PerStream {
            limit: 1,
            stop_at_limit: false,
        },
        false,
    );
    assert!(matches!(denied, Err(SpawnError::NotExecutable)));
}

#[test]
fn stop_at_limit_terminates_a_flood_at_the_cap() {
    let process = RunningProcess::start(
        &launch(&["sh", "-c", "yes; sleep 60"]),
        CaptureMode::PerStream {
            limit: 10,
            stop_at_limit: true,
        },
        false,
    )
    .unwrap();
    wait_finished(&process);
    assert!(process.overflowed());
    assert_eq!(process.exit().and_then(Exit::signal), Some(libc::SIGTERM));
    let (stdout, _) = process.take_output();
    assert_eq!(stdout, "y\ny\ny\ny\ny\n\n[output truncated]");
}

#[test]
fn output_since_streams_each_byte_once_in_order() {
    let process = RunningProcess::start(
        &launch(&["sh", "-c", "printf ab; printf cd >&2; printf ef"]),
        CaptureMode::PerStream {
            limit: 100,
            stop_at_limit: false,
        },
        false,
    )
    .unwrap();
    process.stream_output();
    let mut cursor = [0, 0];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    while !process.finished() {
        let [o, e] = process.output_since(&mut cursor);
        out.extend(o);
        err.extend(e);
        process.notifier().wait(POLL_INTERVAL, None);
    }
    let [o, e] = process.output_since(&mut cursor);
    out.extend(o);
    err.extend(e);
    assert_eq!((out.as_slice(), err.as_slice()), (&b"abef"[..], &b"cd"[..]));
    assert_eq!(process.take_output(), ("abef".into(), "cd".into()));
}

#[test]
fn terminate_detached_ends_a_descendant_that_left_the_group() {
    let process = RunningProcess::start(
        &launch(&["sh", "-c", "setsid sleep 60 & echo $!; wait"]),
        CaptureMode::Combined { limit: 1000 },
        false,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut text = Vec::new();
    while !text.ends_with(b"\n") {
        assert!(Instant::now() < deadline, "no pid from the child");
        text.extend(process.read_chunk(64).stdout);
        process.notifier().wait(POLL_INTERVAL, None);
    }
    let escaped: i32 = String::from_utf8(text).unwrap().trim().parse().unwrap();
    assert!(process_alive(escaped));
    process.terminate_detached();
    while process_alive(escaped) || process.alive() {
        assert!(Instant::now() < deadline, "the descendant survived");
        std::thread::sleep(POLL_INTERVAL);
    }
}
