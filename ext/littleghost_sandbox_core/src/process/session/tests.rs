//! Tests of [`Session`](super::Session): real children, no Ruby.
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::monitor::{Sample, Watched, FAILURE_LIMIT};
use super::*;
use crate::process::{Exit, Launch, POLL_INTERVAL};

fn session(argv: &[&str], output_bytes: u64) -> Session {
    let launch = Launch {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Launch::default()
    };
    Session::start(&launch, &ProcessLimits::default(), output_bytes, None).unwrap()
}

/// A wait as the binding's: on the notification fd, in slices.
fn nap(session: &Session) -> impl FnMut(Duration) -> Result<(), SessionError> + '_ {
    |slice| {
        session.process().notifier().wait(slice, None);
        Ok(())
    }
}

fn no_check() -> Result<(), SessionError> {
    Ok(())
}

fn wait_exit(session: &Session, seconds: f64) -> WaitEnd {
    let deadline = Deadline::after_secs(seconds);
    session
        .wait_for_exit(deadline, no_check, no_check, nap(session))
        .unwrap()
}

fn write(session: &Session, bytes: &[u8]) -> Result<usize, SessionError> {
    let wait = |_: Option<&OwnedFd>| -> Result<(), SessionError> {
        std::thread::sleep(Duration::from_millis(1));
        Ok(())
    };
    session.write(bytes, wait, |refusal| refusal)
}

#[test]
fn errors_say_what_users_see_and_which_are_io_errors() {
    assert!(SessionError::Closed.is_io());
    assert!(SessionError::Foreign.is_io());
    assert!(!SessionError::ClosedByOwner.is_io());
    assert_eq!(SessionError::ClosedByOwner.message(), CLOSED_BY_OWNER);
    assert_eq!(
        SessionError::StdinClosed.message(),
        "process session stdin is closed"
    );
    assert_eq!(
        timed_out_message("0.5"),
        "Program timed out after 0.5 seconds"
    );
}

#[test]
fn a_round_trip_writes_reads_and_reaches_eof() {
    let session = session(&["cat"], 1000);
    assert_eq!(write(&session, b"ping\n"), Ok(5));
    assert_eq!(write(&session, b""), Ok(0));
    session.process().close_stdin();
    assert_eq!(wait_exit(&session, 10.0), WaitEnd::Exited);
    session.settle_output(nap(&session)).unwrap();
    let output = session
        .read(Deadline::after_secs(1.0), nap(&session))
        .unwrap();
    assert_eq!(output.stdout, b"ping\n");
    assert!(output.stderr.is_empty());
    assert!(output.both_closed);
    assert_eq!(session.ending(), None);
}

#[test]
fn an_empty_read_of_a_live_child_is_not_closed() {
    let session = session(&["sleep", "5"], 1000);
    let output = session
        .read(Deadline::after_secs(0.0), nap(&session))
        .unwrap();
    assert_eq!(output, ReadOutput::default());
    session
        .process()
        .signal_group(rustix::process::Signal::KILL);
}

#[test]
fn writing_after_close_write_or_close_is_refused() {
    let session = session(&["cat"], 1000);
    session.process().close_stdin();
    assert_eq!(write(&session, b"x"), Err(SessionError::StdinClosed));
    assert!(session.begin_close());
    assert!(!session.begin_close(), "only the first close cleans up");
    assert!(session.is_closed());
    assert_eq!(session.check_open(), Err(SessionError::Closed));
    assert_eq!(write(&session, b"x"), Err(SessionError::Closed));
    session
        .process()
        .signal_group(rustix::process::Signal::KILL);
}

#[test]
fn a_write_to_an_exited_child_fails() {
    let session = session(&["true"], 1000);
    assert_eq!(wait_exit(&session, 10.0), WaitEnd::Exited);
    let big = vec![b'x'; 1 << 20];
    assert_eq!(write(&session, &big), Err(SessionError::ChildExited));
}

#[test]
fn a_wait_times_out_and_checks_end_it_early() {
    let session = session(&["sleep", "5"], 1000);
    let started = Instant::now();
    assert_eq!(wait_exit(&session, 0.05), WaitEnd::TimedOut);
    assert!(started.elapsed() >= Duration::from_millis(50));
    let refused = || Err(SessionError::ClosedByOwner);
    let ended = session.wait_for_exit(Deadline::never(), refused, no_check, nap(&session));
    assert_eq!(ended, Err(SessionError::ClosedByOwner));
    let ended = session.wait_for_exit(Deadline::never(), no_check, refused, nap(&session));
    assert_eq!(ended, Err(SessionError::ClosedByOwner));
    session
        .process()
        .signal_group(rustix::process::Signal::KILL);
}

#[test]
fn output_past_the_bound_ends_a_read_and_the_session() {
    let session = session(&["head", "-c", "100000", "/dev/zero"], 1000);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !session.process().overflowed() {
        assert!(Instant::now() < deadline, "never overflowed");
        session.process().notifier().wait(POLL_INTERVAL, None);
    }
    let read = session
        .read(Deadline::after_secs(0.0), nap(&session))
        .unwrap();
    assert!(read.past_bound);
    assert_eq!(
        session.ending(),
        Some(Ending::Limit(LimitExceeded::Output { bytes: 1000 }))
    );
    // What the program wrote up to the bound is kept for the error: the
    // read's share plus what no read took, 1000 zero bytes at most.
    let outcome = session.outcome((read.stdout, read.stderr));
    let kept = outcome.stdout.len();
    assert!(kept > 0 && kept <= 1000, "{kept} bytes kept");
    assert!(outcome.stdout.bytes().all(|b| b == 0));
    assert!(outcome.stderr.is_empty());
}

#[test]
fn describe_shows_pid_liveness_closing_and_the_command() {
    let session = session(&["sleep", "5"], 1000);
    let pid = session.process().pid();
    assert_eq!(
        session.describe(),
        format!("pid={pid} alive=true command=[\"sleep\", \"5\"]")
    );
    session
        .process()
        .signal_group(rustix::process::Signal::KILL);
    assert_eq!(wait_exit(&session, 10.0), WaitEnd::Exited);
    session.begin_close();
    assert_eq!(
        session.describe(),
        format!("pid={pid} alive=false closed command=[\"sleep\", \"5\"]")
    );
    assert!(session.owned().is_ok());
}

#[test]
fn the_memory_monitor_reports_a_sample_over_the_limit() {
    let session = session(&["sleep", "5"], 1000);
    let sleep = |slice| -> Result<(), ()> {
        std::thread::sleep(slice);
        Ok(())
    };
    let mut samples = vec![Sample::Over, Sample::Under].into_iter();
    let over = session.watch_memory(|| Ok(samples.next_back().unwrap()), sleep);
    assert_eq!(over, Ok(Watched::<()>::Exceeded));
    session
        .process()
        .signal_group(rustix::process::Signal::KILL);
}

#[test]
fn the_memory_monitor_fails_closed_after_consecutive_failures_only() {
    let session = session(&["sleep", "5"], 1000);
    let sleep = |slice| -> Result<(), ()> {
        std::thread::sleep(slice);
        Ok(())
    };
    let mut calls = 0;
    let failing = session.watch_memory(
        || {
            calls += 1;
            // 1 fails, 2 succeeds (the count starts over), 3.. fail.
            Ok(if calls == 2 {
                Sample::Under
            } else {
                Sample::Failed(calls)
            })
        },
        sleep,
    );
    assert_eq!(failing, Ok(Watched::FailedClosed(FAILURE_LIMIT as i32 + 2)));
    let raised = session.watch_memory(|| Err::<Sample<()>, _>(()), sleep);
    assert_eq!(raised, Err(()));
    session.stop_monitor();
    assert!(session.monitor_stopped());
    let stopped = session.watch_memory(|| Ok(Sample::<()>::Over), sleep);
    assert_eq!(stopped, Ok(Watched::Ended));
    // The failure's kind is named, never its message (1.2).
    assert_eq!(
        super::monitor::supervisor_failed(Some("IOError")),
        "Program memory supervisor failed (IOError)"
    );
    assert_eq!(
        super::monitor::supervisor_failed(None),
        "Program memory supervisor failed (unknown)"
    );
    assert!(!session.monitor_finished());
    let started = Instant::now();
    let nap = |pause| -> Result<(), ()> {
        std::thread::sleep(pause);
        Ok(())
    };
    assert_eq!(session.await_monitor(nap), Ok(false));
    assert!(started.elapsed() >= super::monitor::STOP_WAIT);
    drop(session.monitor_run());
    assert!(session.monitor_finished());
    assert_eq!(session.await_monitor(|_| Err(())), Ok(true));
    session
        .process()
        .signal_group(rustix::process::Signal::KILL);
}

#[test]
fn the_memory_monitor_ends_with_the_session() {
    let session = session(&["true"], 1000);
    assert_eq!(wait_exit(&session, 10.0), WaitEnd::Exited);
    let ended = session.watch_memory(|| Ok(Sample::<()>::Over), |_| Ok::<(), ()>(()));
    assert_eq!(ended, Ok(Watched::Ended));
    assert_eq!(Sample::<()>::of(65, 64), Sample::Over);
    assert_eq!(Sample::<()>::of(-1, 64), Sample::Under);
}

#[test]
fn a_status_describes_and_compares_like_process_status() {
    let exited = SessionStatus {
        pid: 7,
        exit: Exit::Status(3 << 8),
    };
    assert_eq!(exited.describe(), "pid 7 exit 3");
    assert_eq!(exited.success(), Some(false));
    assert!(exited.equals_raw(3 << 8));
    assert!(!exited.equals_raw(3));
    let killed = SessionStatus {
        pid: 7,
        exit: Exit::Status(9),
    };
    assert_eq!(killed.describe(), "pid 7 signal 9");
    assert_eq!(killed.success(), None);
    let unknown = SessionStatus {
        pid: 7,
        exit: Exit::Unknown,
    };
    assert_eq!(unknown.describe(), "pid 7 status unknown");
    assert!(!unknown.equals_raw(0));
}

#[test]
fn a_session_past_its_timeout_loses_its_whole_tree_and_says_it_timed_out() {
    // A child that would outlive the timeout, with a grandchild of its own.
    let mut session = session(&["sh", "-c", "sleep 60 & echo started; wait"], 1024);
    session.expire_after(0.3);
    assert_eq!(wait_exit(&session, 30.0), WaitEnd::Exited);
    assert!(session.process().timed_out());
    assert!(!session.process().group_alive());
    assert_eq!(session.ending(), Some(Ending::TimedOut(0.3)));
}

#[test]
fn a_session_that_ends_before_its_timeout_did_not_time_out() {
    let mut session = session(&["true"], 1024);
    session.expire_after(0.2);
    assert_eq!(wait_exit(&session, 30.0), WaitEnd::Exited);
    std::thread::sleep(Duration::from_millis(400));
    assert!(!session.process().timed_out());
    assert_eq!(session.ending(), None);
}

#[test]
fn a_sampled_memory_kill_ends_the_session_first_seen_counting() {
    let session = session(&["head", "-c", "100000", "/dev/zero"], 1000);
    assert_eq!(wait_exit(&session, 30.0), WaitEnd::Exited);
    // Output passed its bound too, but the monitor's kill came first.
    let memory = Ending::Limit(LimitExceeded::Memory { bytes: 64 });
    assert_eq!(session.end_at_sampled_memory(64), memory);
    session.end_at_sampled_memory(128);
    assert_eq!(session.ending(), Some(memory));
}

#[test]
fn a_limit_kill_is_one_denial_whoever_reports_it() {
    let session = session(&["sleep", "5"], 1000);
    assert_eq!(session.kill_denial(&Ending::TimedOut(1.0), "app"), None);
    let memory = session.end_at_sampled_memory(64);
    let denial = session.kill_denial(&memory, "app").unwrap();
    assert_eq!(denial.message, "Program memory exceeded 64 bytes");
    assert_eq!(session.kill_denial(&memory, "app"), None);
}

/// A session of a sandbox that was closed (H.4).
fn closed_by_owner() -> Session {
    let owner = Owner::new();
    let launch = Launch {
        argv: vec!["sleep".into(), "5".into()],
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Launch::default()
    };
    let session = Session::start(&launch, &ProcessLimits::default(), 1000, Some(&owner)).unwrap();
    owner.terminate_all();
    session
}

#[test]
fn a_session_ended_from_outside_stays_quiet_unless_another_error_was_recorded() {
    let session = closed_by_owner();
    assert_eq!(session.check_writable(), Err(SessionError::ClosedByOwner));
    assert_eq!(session.ending(), Some(Ending::ClosedByOwner));
    assert!(session.ended_from_outside() && !session.recorded());
    session.record(Some(Ending::TimedOut(1.0)));
    assert!(session.ended_from_outside() && session.recorded());
    // The memory supervisor's failure (or a limit) recorded first speaks.
    let session = closed_by_owner();
    session.record(None);
    assert!(!session.ended_from_outside());
    assert!(!self::session(&["sleep", "5"], 1000).ended_from_outside());
}
