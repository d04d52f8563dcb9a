//! 18.9: the memory monitor of a session, a Ruby thread (so a Ruby
//! `memory_reader` runs with the GVL) that samples every 100 ms and, past
//! the limit, records the error and hands the group to the core's one
//! termination protocol ([`RunningProcess::terminate_detached`]).
//!
//! [`RunningProcess::terminate_detached`]: littleghost_sandbox_core::process::RunningProcess::terminate_detached

use std::sync::atomic::Ordering;

use littleghost_sandbox_core::process::{
    self as core_process, group::GroupSignal as Signal, procfs::DefaultReader,
};
use magnus::{
    error::ErrorType, prelude::*, value::ReprValue, Error, ExceptionClass, RString, Ruby, Value,
};

use super::{exception_of, record, Session};
use crate::helpers::constants;
use crate::helpers::nogvl;
use crate::ruby_api::denial::Reporter;
use crate::ruby_api::errors::{from_core, tool_error};
use crate::ruby_api::process_runner::error_with_cause;

/// Memory sampling period (18.9).
const SAMPLE_PERIOD: f64 = 0.1;
/// Consecutive reader failures that fail closed (18.9).
const FAILURE_LIMIT: u32 = 3;

pub(super) fn stop_monitor(ruby: &Ruby, session: Session) -> Result<(), Error> {
    let Some(thread) = session.monitor_thread(ruby) else {
        return Ok(());
    };
    if !thread.funcall::<_, _, bool>("alive?", ())? {
        return Ok(());
    }
    let current = ruby.thread_current();
    if thread.funcall::<_, _, bool>("equal?", (current,))? {
        return Ok(());
    }
    let _ = thread.funcall::<_, _, Value>("wakeup", ());
    let joined: Value = thread.funcall("join", (1.0,))?;
    if joined.is_nil() {
        let _: Value = thread.funcall("kill", ())?;
        let _: Value = thread.funcall("join", (1.0,))?;
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

/// 18.9: a Ruby thread samples every 100 ms while the session is alive.
pub(super) fn start_monitor(
    ruby: &Ruby,
    session: Session,
    reader: Option<Value>,
    default_reader: Option<DefaultReader>,
    (limit, denials): (u64, Option<Reporter>),
) -> Result<(), Error> {
    let body = ruby.proc_from_fn(move |ruby, args, _block| -> Result<Value, Error> {
        let session = Session::try_convert(args[0])?;
        let reader = Some(args[1]).filter(|value| !value.is_nil());
        match monitor(ruby, session, reader, default_reader, limit) {
            Ok(true) => {
                report_memory_kill(ruby, denials.as_ref(), limit)?;
                Ok(ruby.qnil().as_value())
            }
            Ok(false) => Ok(ruby.qnil().as_value()),
            // Thread#kill (from close) ends the thread normally.
            Err(error) if matches!(error.error_type(), ErrorType::Jump(_)) => Err(error),
            // Anything unexpected fails closed.
            Err(error) => {
                fail_closed(ruby, session, &error)?;
                Ok(ruby.qnil().as_value())
            }
        }
    });
    let reader_value = reader.unwrap_or_else(|| ruby.qnil().as_value());
    let thread: Value =
        ruby.class_thread()
            .funcall_with_block("new", (session, reader_value), body)?;
    let _: Value = thread.funcall("report_on_exception=", (false,))?;
    session.set_monitor(thread, reader_value);
    Ok(())
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
        if stopped() {
            return Ok(false);
        }
        let _: Value = ruby.module_kernel().funcall("sleep", (SAMPLE_PERIOD,))?;
    }
}

/// Records "Program memory supervisor failed (Class)" with the failure as
/// `cause` (its message stays out, 1.2) and SIGKILLs the group.
fn fail_closed(ruby: &Ruby, session: Session, error: &Error) -> Result<(), Error> {
    if let Some(state) = session.state.get() {
        state.process.signal_group(Signal::KILL);
    }
    let cause = exception_of(ruby, error).unwrap_or_else(|| ruby.qnil().as_value());
    let class_name: String = if cause.is_nil() {
        "unknown".to_string()
    } else {
        cause
            .class()
            .funcall::<_, _, Value>("name", ())?
            .funcall::<_, _, RString>("to_s", ())?
            .to_string()?
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
    let bytes: Value = match (reader, default_reader) {
        (Some(reader), _) => {
            let raw: Value = reader.funcall("call", (pid,))?;
            ruby.module_kernel().funcall("Integer", (raw,))?
        }
        (None, Some(default_reader)) => {
            let sampled = nogvl::blocking(ruby, || default_reader.sample(pid as u32))?;
            match sampled {
                Ok(bytes) => ruby.integer_from_u64(bytes).as_value(),
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
    bytes.funcall(">", (limit,))
}

/// DependencyError with the documented message and the OS error as `cause`.
fn sample_error(ruby: &Ruby, failure: &core_process::procfs::SampleError) -> Error {
    let build = || -> Result<Error, Error> {
        let class = constants::class(ruby, "LittleGhost::DependencyError")?;
        match failure.cause().and_then(|cause| cause.raw_os_error()) {
            Some(errno) => {
                let cause: Value = ruby
                    .exception_system_call_error()
                    .funcall("new", (ruby.qnil(), errno))?;
                error_with_cause(ruby, class, &failure.message(), cause)
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
