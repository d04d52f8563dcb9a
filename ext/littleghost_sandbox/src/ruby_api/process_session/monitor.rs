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

use littleghost_sandbox_core::limits::LimitExceeded;

use crate::helpers::limit_keywords::Given;
use littleghost_sandbox_core::process::session::monitor::{Sample, Watched};
use littleghost_sandbox_core::process::{
    self as core_process, group::GroupSignal as Signal, procfs::DefaultReader,
};
use magnus::{
    error::ErrorType, rb_sys::AsRawValue, value::ReprValue, Error, ExceptionClass, Ruby, Thread,
    Value,
};

use super::{exception_of, record, Session};
use crate::helpers::constants;
use crate::helpers::errors::from_core;
use crate::helpers::nogvl;
use crate::ruby_api::denial::Reporter;
use crate::ruby_api::process_runner::{errno_exception, error_with_cause, kernel_integer};
use littleghost_sandbox_core::denial::Denial;

/// The thread-local key under which a monitor thread holds its session: a
/// running thread is a GC root, so the session stays reachable while its
/// monitor runs.
const SESSION_KEY: &str = "__littleghost_monitored_session";

/// Stops the monitor of `session` (its stop flag is already set): waits up to
/// 1 s for it to finish, else kills it and waits up to 1 s more (the core's
/// [`STOP_WAIT`](littleghost_sandbox_core::process::session::monitor::STOP_WAIT)).
pub(super) fn stop_monitor(ruby: &Ruby, session: Session) -> Result<(), Error> {
    let Some(thread) = session.monitor_thread(ruby).and_then(Thread::from_value) else {
        return Ok(());
    };
    let Some(state) = session.state.get() else {
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
    (limit, denials): (u64, Option<Reporter>),
) -> Result<(), Error> {
    let thread = ruby.thread_create_from_fn(move |ruby| {
        run_monitor(ruby, default_reader, limit, denials.as_ref())
    });
    // The new thread runs once this one releases the GVL: both are set by then.
    thread.local_aset(SESSION_KEY, session)?;
    session.set_monitor(
        thread.as_value(),
        reader.unwrap_or_else(|| ruby.qnil().as_value()),
    );
    Ok(())
}

/// The monitor thread's body; only a Thread#kill (from `close`) leaves it
/// as an error, so nothing is ever reported on the thread.
fn run_monitor(
    ruby: &Ruby,
    default_reader: Option<DefaultReader>,
    limit: u64,
    denials: Option<&Reporter>,
) -> Result<(), Error> {
    let session: Session = ruby.thread_current().local_aref(SESSION_KEY)?;
    let Some(state) = session.state.get() else {
        return Ok(());
    };
    let _done = state.monitor_run();
    let reader = session.memory_reader(ruby);
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
            let exceeded = LimitExceeded::Memory { bytes: limit };
            // The session's next call (or its close) raises the LimitError
            // carrying the output no `read` took.
            state.memory_sampled_over(limit);
            // The one protocol (17.12): TERM the group and every
            // descendant, grace, KILL; run by the core in the background.
            state.process().terminate_detached();
            // The denial now, as the kill happens; the error does not repeat it.
            match denials.filter(|_| session.claim_kill_report()) {
                Some(reporter) => {
                    reporter.report(ruby, Denial::limit_kill(&reporter.program, &exceeded))
                }
                None => Ok(()),
            }
        }
        Err(error) if jump(&error) => return Err(error),
        // Anything unexpected fails closed.
        Ok(Watched::FailedClosed(error)) | Err(error) => fail_closed(ruby, session, &error),
    };
    ended.or_else(|error| if jump(&error) { Err(error) } else { Ok(()) })
}

/// Records "Program memory supervisor failed (Class)" with the failure as
/// `cause` (its message stays out, 1.2) and SIGKILLs the group.
fn fail_closed(ruby: &Ruby, session: Session, error: &Error) -> Result<(), Error> {
    if let Some(state) = session.state.get() {
        state.process().signal_group(Signal::KILL);
    }
    let cause = exception_of(ruby, error).unwrap_or_else(|| ruby.qnil().as_value());
    let class_name = if cause.is_nil() {
        "unknown".to_string()
    } else {
        crate::helpers::value_object::class_name_or_empty(cause)
    };
    let tool = constants::class(ruby, "LittleGhost::ToolError")?;
    let failure = error_with_cause(
        ruby,
        tool,
        &format!("Program memory supervisor failed ({class_name})"),
        cause,
    )?;
    record(ruby, session, &failure);
    Ok(())
}

/// One sample of the tree's memory in bytes. Errors are reader failures.
fn sample(
    ruby: &Ruby,
    pid: i32,
    reader: Option<Value>,
    default_reader: Option<DefaultReader>,
) -> Result<i128, Error> {
    match (reader, default_reader) {
        (Some(reader), _) => {
            // The caller's reader, with `Integer()` on what it answers.
            let raw: Value = reader.funcall("call", (pid,))?;
            match kernel_integer(raw)? {
                Given::Integer(bytes) => Ok(bytes),
                Given::NotInteger => Ok(0),
            }
        }
        (None, Some(default_reader)) => {
            let sampled = nogvl::blocking(ruby, || default_reader.sample(pid as u32))?;
            sampled
                .map(i128::from)
                .map_err(|failure| sample_error(ruby, &failure))
        }
        (None, None) => Err(from_core(
            ruby,
            littleghost_sandbox_core::Error::Dependency(
                "process memory supervision has no reader".into(),
            ),
        )),
    }
}

/// DependencyError with the documented message and the OS error as `cause`.
fn sample_error(ruby: &Ruby, failure: &core_process::procfs::SampleError) -> Error {
    let build = || -> Result<Error, Error> {
        let class = constants::class(ruby, "LittleGhost::DependencyError")?;
        match failure.cause().and_then(|cause| cause.raw_os_error()) {
            Some(errno) => {
                let cause = errno_exception(ruby, errno, None)?;
                error_with_cause(ruby, class, &failure.message(), cause.as_value())
            }
            None => Ok(Error::new(
                ExceptionClass::from_value(class.as_value())
                    .unwrap_or_else(|| ruby.exception_runtime_error()),
                failure.message(),
            )),
        }
    };
    build().unwrap_or_else(|error| error)
}
