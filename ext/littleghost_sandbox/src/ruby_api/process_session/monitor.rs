//! 18.9: the memory monitor of a session, a Ruby thread made from Rust
//! (`rb_thread_create`, so a Ruby `memory_reader` runs with the GVL; the
//! only Ruby call it makes is into that reader) that samples every 100 ms and, past
//! the limit, records the error and hands the group to the core's one
//! termination protocol ([`RunningProcess::terminate_detached`]).
//!
//! [`RunningProcess::terminate_detached`]: littleghost_sandbox_core::process::RunningProcess::terminate_detached

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use littleghost_sandbox_core::limits::keywords::Given;
use littleghost_sandbox_core::process::{
    self as core_process, group::GroupSignal as Signal, procfs::DefaultReader,
};
use magnus::{
    error::ErrorType, rb_sys::AsRawValue, value::ReprValue, Error, ExceptionClass, Ruby, Thread,
    Value,
};

use super::{exception_of, record, Session};
use crate::helpers::constants;
use crate::helpers::nogvl;
use crate::ruby_api::denial::Reporter;
use crate::ruby_api::errors::{from_core, tool_error};
use crate::ruby_api::process_runner::{errno_exception, error_with_cause, kernel_integer};

/// Memory sampling period (18.9).
const SAMPLE_PERIOD: Duration = Duration::from_millis(100);
/// How often the monitor looks at its stop flag while it waits.
const STOP_CHECK: Duration = Duration::from_millis(10);
/// Consecutive reader failures that fail closed (18.9).
const FAILURE_LIMIT: u32 = 3;
/// The thread-local key under which a monitor thread holds its session: a
/// running thread is a GC root, so the session stays reachable while its
/// monitor runs.
const SESSION_KEY: &str = "__littleghost_monitored_session";

/// Stops the monitor of `session` (its stop flag is already set): waits up to
/// 1 s for it to finish, else kills it and waits up to 1 s more.
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
    let finished = |ruby: &Ruby| -> Result<bool, Error> {
        let give_up = Instant::now() + Duration::from_secs(1);
        while !state.monitor_done.load(Ordering::SeqCst) {
            if Instant::now() >= give_up {
                return Ok(false);
            }
            ruby.thread_sleep(Duration::from_millis(1))?;
        }
        Ok(true)
    };
    // Cuts short a `sleep` inside a caller's reader, as before.
    let _ = thread.wakeup();
    if !finished(ruby)? {
        thread.kill()?;
        finished(ruby)?;
    }
    Ok(())
}

/// A session ended at its memory limit is a denial of kind `:limit`,
/// reported from this monitor thread once the group is being terminated.
fn report_memory_kill(ruby: &Ruby, denials: Option<&Reporter>, limit: u64) -> Result<(), Error> {
    use littleghost_sandbox_core::denial::{Denial, Operation, Reason};
    let Some(reporter) = denials else {
        return Ok(());
    };
    let denial = Denial::new(
        Operation::Execute,
        reporter.program.as_str(),
        Reason::MemoryLimit,
        format!("Program memory exceeded {limit} bytes"),
    );
    crate::ruby_api::denial::report(ruby, &reporter.hub, denial)
}

/// Sets the session's `monitor_done` when the monitor ends, however it ends.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
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
    let _done = Done(&state.monitor_done);
    let reader = session.memory_reader(ruby);
    let jump = |error: Error| match error.error_type() {
        ErrorType::Jump(_) => Err(error),
        _ => Ok(()),
    };
    match monitor(ruby, session, reader, default_reader, limit) {
        Ok(true) => report_memory_kill(ruby, denials, limit).or_else(jump),
        Ok(false) => Ok(()),
        Err(error) if matches!(error.error_type(), ErrorType::Jump(_)) => Err(error),
        // Anything unexpected fails closed.
        Err(error) => fail_closed(ruby, session, &error).or_else(jump),
    }
}

fn monitor(
    ruby: &Ruby,
    session: Session,
    reader: Option<Value>,
    default_reader: Option<DefaultReader>,
    limit: u64,
) -> Result<bool, Error> {
    // true: the limit was passed and the group is being terminated.
    let state = session.state(ruby)?;
    let pid = state.process.pid();
    let mut failures = 0;
    let stopped = || state.monitor_stop.load(Ordering::SeqCst);
    loop {
        if stopped() || !state.process.alive() {
            return Ok(false);
        }
        match sample(ruby, pid, reader, default_reader, limit) {
            Ok(false) => failures = 0,
            Ok(true) => {
                let error = tool_error(ruby, format!("Program memory exceeded {limit} bytes"));
                if let Some(exception) = exception_of(ruby, &error) {
                    record(session, exception)?;
                }
                // The one protocol (17.12): TERM the group and every
                // descendant, grace, KILL; run by the core in the background.
                state.process.terminate_detached();
                return Ok(true);
            }
            Err(error) if matches!(error.error_type(), ErrorType::Jump(_)) => return Err(error),
            Err(error) => {
                failures += 1;
                if failures >= FAILURE_LIMIT {
                    return fail_closed(ruby, session, &error).map(|()| false);
                }
            }
        }
        let next = Instant::now() + SAMPLE_PERIOD;
        while Instant::now() < next {
            if stopped() {
                return Ok(false);
            }
            ruby.thread_sleep(STOP_CHECK)?;
        }
    }
}

/// Records "Program memory supervisor failed (Class)" with the failure as
/// `cause` (its message stays out, 1.2) and SIGKILLs the group.
fn fail_closed(ruby: &Ruby, session: Session, error: &Error) -> Result<(), Error> {
    if let Some(state) = session.state.get() {
        state.process.signal_group(Signal::KILL);
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
    if let Some(exception) = exception_of(ruby, &failure) {
        record(session, exception)?;
    }
    Ok(())
}

/// One sample: true if above `limit`. Errors are reader failures.
fn sample(
    ruby: &Ruby,
    pid: i32,
    reader: Option<Value>,
    default_reader: Option<DefaultReader>,
    limit: u64,
) -> Result<bool, Error> {
    let bytes: i128 = match (reader, default_reader) {
        (Some(reader), _) => {
            // The caller's reader, with `Integer()` on what it answers.
            let raw: Value = reader.funcall("call", (pid,))?;
            match kernel_integer(raw)? {
                Given::Integer(bytes) => bytes,
                Given::NotInteger => 0,
            }
        }
        (None, Some(default_reader)) => {
            let sampled = nogvl::blocking(ruby, || default_reader.sample(pid as u32))?;
            match sampled {
                Ok(bytes) => bytes.into(),
                Err(failure) => return Err(sample_error(ruby, &failure)),
            }
        }
        (None, None) => {
            return Err(from_core(
                ruby,
                littleghost_sandbox_core::Error::Dependency(
                    "process memory supervision has no reader".into(),
                ),
            ))
        }
    };
    Ok(bytes > i128::from(limit))
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
