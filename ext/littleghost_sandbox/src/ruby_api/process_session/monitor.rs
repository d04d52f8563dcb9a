//! 18.9: the memory monitor of a session, a Ruby thread made from Rust
//! (`rb_thread_create`, so a Ruby `memory_reader` runs with the GVL; the
//! only Ruby call it makes is into that reader) running the core's sampling
//! loop ([`Session::watch_memory`]); past the limit it marks the kill in the
//! core session (the next call builds the error, with the output), reports
//! the denial and hands the group to the core's one termination protocol
//! ([`RunningProcess::terminate_detached`]).
//!
//! [`Session::watch_memory`]: littleghost_sandbox_core::process::session::Session::watch_memory
//! [`RunningProcess::terminate_detached`]: littleghost_sandbox_core::process::RunningProcess::terminate_detached

use crate::helpers::limit_keywords::Given;
use littleghost_sandbox_core::process::session::monitor::{supervisor_failed, Sample, Watched};
use littleghost_sandbox_core::process::session::Session as State;
use littleghost_sandbox_core::process::{
    self as core_process, group::GroupSignal as Signal, procfs::DefaultReader,
};
use magnus::{error::ErrorType, rb_sys::AsRawValue, value::ReprValue, Error, Ruby, Thread, Value};

use super::{exception_of, record, Session};
use crate::helpers::constants;
use crate::helpers::errors::dependency_error;
use crate::helpers::nogvl;
use crate::ruby_api::process_runner::{errno_exception, error_with_cause, kernel_integer};

/// The thread-local keys under which a monitor thread holds its session and
/// the caller's reader (nil for the platform's): a running thread is a GC
/// root, so both stay reachable while the monitor runs.
const SESSION_KEY: &str = "__littleghost_monitored_session";
const READER_KEY: &str = "__littleghost_memory_reader";

/// Stops the monitor of `session`: sets its stop flag, waits up to 1 s for
/// it to finish, else kills it and waits up to 1 s more (the core's
/// [`STOP_WAIT`](littleghost_sandbox_core::process::session::monitor::STOP_WAIT)).
pub(super) fn stop_monitor(ruby: &Ruby, session: Session) -> Result<(), Error> {
    let Some(state) = session.state.get() else {
        return Ok(());
    };
    state.stop_monitor();
    let Some(thread) = session.monitor_thread(ruby).and_then(Thread::from_value) else {
        return Ok(());
    };
    if thread.as_raw() == ruby.thread_current().as_raw() {
        return Ok(());
    }
    let finished = |ruby: &Ruby| state.await_monitor(|nap| ruby.thread_sleep(nap));
    // Cuts short a `sleep` inside a caller's reader, as before.
    let _ = thread.wakeup();
    if !finished(ruby)? {
        thread.kill()?;
        finished(ruby)?;
    }
    Ok(())
}

/// 18.9: a Ruby thread (so a Ruby `memory_reader` runs with the GVL)
/// samples every 100 ms while the session is alive.
pub(super) fn start_monitor(
    ruby: &Ruby,
    session: Session,
    reader: Option<Value>,
    default_reader: Option<DefaultReader>,
    limit: u64,
) -> Result<(), Error> {
    let thread = ruby.thread_create_from_fn(move |ruby| run_monitor(ruby, default_reader, limit));
    // The new thread runs once this one releases the GVL: both are set by then.
    thread.local_aset(SESSION_KEY, session)?;
    thread.local_aset(READER_KEY, reader)?;
    let _ = session.monitor.set(thread.as_value().into());
    Ok(())
}

/// The monitor thread's body; only a Thread#kill (from `close`) leaves it
/// as an error, so nothing is ever reported on the thread.
fn run_monitor(
    ruby: &Ruby,
    default_reader: Option<DefaultReader>,
    limit: u64,
) -> Result<(), Error> {
    let session: Session = ruby.thread_current().local_aref(SESSION_KEY)?;
    let Some(state) = session.state.get() else {
        return Ok(());
    };
    let _done = state.monitor_run();
    let reader: Value = ruby.thread_current().local_aref(READER_KEY)?;
    let jump = |error: &Error| matches!(error.error_type(), ErrorType::Jump(_));
    let pid = state.process().pid();
    let sample = || match sample(ruby, pid, reader, default_reader) {
        Ok(bytes) => Ok(Sample::of(bytes, limit)),
        Err(error) if jump(&error) => Err(error),
        Err(error) => Ok(Sample::Failed(error)),
    };
    let watched = session
        .state(ruby)
        .and_then(|state| state.watch_memory(sample, |pause| ruby.thread_sleep(pause)));
    let ended = match watched {
        Ok(Watched::Ended) => Ok(()),
        Ok(Watched::Exceeded) => {
            // The session's next call (or its close) raises the LimitError
            // carrying the output no `read` took; the core terminates the
            // group (17.12) in the background. The denial now, as the kill
            // happens; the error does not repeat it.
            let ending = state.end_at_sampled_memory(limit);
            session.report_kill(ruby, state, &ending)
        }
        Err(error) if jump(&error) => return Err(error),
        // Anything unexpected fails closed.
        Ok(Watched::FailedClosed(error)) | Err(error) => fail_closed(ruby, session, state, &error),
    };
    ended.or_else(|error| if jump(&error) { Err(error) } else { Ok(()) })
}

/// Records the core's "Program memory supervisor failed (Class)" with the
/// failure as `cause` (its message stays out, 1.2) and SIGKILLs the group.
fn fail_closed(ruby: &Ruby, session: Session, state: &State, error: &Error) -> Result<(), Error> {
    state.process().signal_group(Signal::KILL);
    let cause = exception_of(ruby, error);
    let class_name = cause.map(crate::helpers::value_object::class_name_or_empty);
    let message = supervisor_failed(class_name.as_deref());
    let tool = constants::class(ruby, "LittleGhost::ToolError")?;
    let cause = cause.unwrap_or_else(|| ruby.qnil().as_value());
    let failure = error_with_cause(ruby, tool, &message, cause)?;
    record(ruby, session, state, None, failure);
    Ok(())
}

/// One sample of the tree's memory in bytes. Errors are reader failures.
fn sample(
    ruby: &Ruby,
    pid: i32,
    reader: Value,
    default_reader: Option<DefaultReader>,
) -> Result<i128, Error> {
    // The platform's reader, chosen at the start when the caller gave none.
    if let Some(default_reader) = default_reader {
        let sampled = nogvl::blocking(ruby, || default_reader.sample(pid as u32))?;
        return sampled
            .map(i128::from)
            .map_err(|failure| sample_error(ruby, &failure));
    }
    // The caller's reader, with `Integer()` on what it answers.
    let raw: Value = reader.funcall("call", (pid,))?;
    match kernel_integer(raw)? {
        Given::Integer(bytes) => Ok(bytes),
        Given::NotInteger => Ok(0),
    }
}

/// DependencyError with the documented message and the OS error as `cause`.
fn sample_error(ruby: &Ruby, failure: &core_process::procfs::SampleError) -> Error {
    let message = failure.message();
    let Some(errno) = failure.cause().and_then(|cause| cause.raw_os_error()) else {
        return dependency_error(ruby, message);
    };
    let build = || -> Result<Error, Error> {
        let class = constants::class(ruby, "LittleGhost::DependencyError")?;
        let cause = errno_exception(ruby, errno, None)?;
        error_with_cause(ruby, class, &message, cause.as_value())
    };
    build().unwrap_or_else(|error| error)
}
