//! `LittleGhost::Sandbox::ProcessRunner` (17.13): runs a host argv to
//! completion and returns an Execution. Every backend launches through
//! [`run`] (directly from Rust) or [`crate::ruby_api::process_session::start`].
//!
//! The waiting discipline it shares with ProcessSession lives in
//! [`waiter`], the supervision loop of a run in [`supervise`], and the
//! conversion of Ruby arguments in [`convert`].

mod convert;
mod start;
mod supervise;
mod waiter;

use std::path::PathBuf;

use littleghost_sandbox_core::process::{
    self as core_process, arguments, capture::DEFAULT_OUTPUT_BYTES, running::StartFailure,
    supervision::RunEnd, CaptureMode, Exit, Launch, Owner, RunningProcess, SpawnOptions,
};
use magnus::{
    function,
    prelude::*,
    scan_args::{get_kwargs, scan_args},
    value::{Lazy, ReprValue},
    Attr, Error, Exception, ExceptionClass, RClass, RHash, Ruby, Value,
};

use crate::helpers::constants;
use crate::helpers::convert as value_convert;
use crate::helpers::errors::{capability_error, core_result};
use crate::ruby_api::execution::Execution;
use littleghost_sandbox_core::denial::Denial;
use littleghost_sandbox_core::limits::{plan::Plan, LimitExceeded};
use littleghost_sandbox_core::process::procfs::DefaultReader;

use convert::with_errno_cause;
pub use convert::{
    errno_exception, error_with_cause, kernel_float, kernel_integer, positive_integer,
    validate_output_bytes, validate_timeout,
};
pub use start::start_interruptibly;
use supervise::{supervise, Streamer, Supervision};
pub use waiter::{reap_leader, terminate_group, Waiter};

/// A host argv to run to completion (17.13), as backends hand it over.
pub struct RunRequest {
    pub argv: Vec<String>,
    /// Seconds, already validated by [`validate_timeout`].
    pub timeout: f64,
    /// nil or an object answering `check!`.
    pub context: Option<Value>,
    pub max_output_bytes: u64,
    /// The explicit environment (later entries win).
    pub environment: Vec<(String, String)>,
    /// The caller already applied the double opt-in of 17.6.
    pub inherit_environment: bool,
    pub chdir: Option<PathBuf>,
    pub spawn_options: SpawnOptions,
    /// The sandbox whose `close` terminates the child (H.4), if any.
    pub owner: Option<Owner>,
    /// End the child (17.12) once a stream passes `max_output_bytes`,
    /// instead of dropping the excess until it exits or times out.
    pub kill_on_output_limit: bool,
    /// Whole-tree limits (L.1-L.3), planned by [`crate::ruby_api::launch_limits::for_call`].
    pub limits: Plan,
    /// Where an output-bound kill is reported as a denial.
    pub denials: Option<crate::ruby_api::denial::Reporter>,
}

/// `LittleGhost::Sandbox::TimeoutError`, defined in [`init`].
static TIMEOUT_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| {
    constants::class(ruby, "LittleGhost::Sandbox::TimeoutError")
        .ok()
        .and_then(|class| ExceptionClass::from_value(class.as_value()))
        .expect("LittleGhost::Sandbox::TimeoutError is defined at load")
});

/// `LittleGhost::Sandbox::LimitError`, defined in [`init`].
static LIMIT_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| {
    constants::class(ruby, "LittleGhost::Sandbox::LimitError")
        .ok()
        .and_then(|class| ExceptionClass::from_value(class.as_value()))
        .expect("LittleGhost::Sandbox::LimitError is defined at load")
});

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let runner = sandbox.define_module("ProcessRunner")?;
    runner.define_singleton_method("run", function!(ruby_run, -1))?;
    // A ToolError (same message as before) that carries the partial Execution.
    let tool = constants::class(ruby, "LittleGhost::ToolError")?;
    let timeout = sandbox.define_class("TimeoutError", tool)?;
    timeout.define_attr("execution", Attr::Read)?;
    let _ = ruby.get_inner(&TIMEOUT_ERROR);
    // A ToolError (the L.2 message) for a program a limit
    // ended, carrying what it wrote before (nil for a session: its output
    // is read from the session).
    let limit = sandbox.define_class("LimitError", tool)?;
    limit.define_attr("execution", Attr::Read)?;
    let _ = ruby.get_inner(&LIMIT_ERROR);
    Ok(())
}

/// Runs `command` without a shell and returns its Execution, raising ToolError on timeout.
fn ruby_run(ruby: &Ruby, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kw = get_kwargs::<
        _,
        (Value, Value),
        (
            Option<Value>,
            Option<Value>,
            Option<Value>,
            Option<Value>,
            Option<Value>,
            Option<Value>,
        ),
        (),
    >(
        args.keywords,
        &["command", "timeout"],
        &[
            "context",
            "max_output_bytes",
            "environment",
            "inherit_environment",
            "chdir",
            "kill_on_output_limit",
        ],
    )?;
    let (command, timeout) = kw.required;
    let (context, max_output_bytes, environment, inherit_environment, chdir, kill) = kw.optional;
    let request = RunRequest {
        argv: value_convert::argv(ruby, command)?,
        timeout: validate_timeout(ruby, timeout)?,
        context: context.filter(|value| !value.is_nil()),
        max_output_bytes: validate_output_bytes(
            ruby,
            max_output_bytes.unwrap_or_else(|| ruby.qnil().as_value()),
            DEFAULT_OUTPUT_BYTES,
        )?,
        environment: value_convert::environment(ruby, environment)?,
        inherit_environment: inherit_environment.is_some_and(|value| value.to_bool()),
        chdir: value_convert::expanded_path(ruby, chdir, "chdir")?,
        spawn_options: SpawnOptions::default(),
        owner: None,
        kill_on_output_limit: kill.is_some_and(|value| value.to_bool()),
        limits: Plan::default(),
        denials: None,
    };
    run(ruby, request)
}

/// `context&.check!` on the calling thread with the GVL held (0.8). A context
/// that does not respond to `check!` (2.1) is misuse: TypeError naming its
/// class, not NoMethodError.
pub fn check_context(context: Option<Value>) -> Result<(), Error> {
    match context {
        Some(context) if !context.is_nil() => {
            crate::helpers::value_object::require_duck(context, "context", &["check!"])?;
            context.funcall::<_, _, Value>("check!", ()).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// Runs `request` to completion (17.2–17.12) and returns an Execution.
///
/// When the calling native method was given a block, each chunk of output is
/// yielded as it arrives (`:stdout` or `:stderr`, a frozen binary String) in
/// the caller's thread, between waits that release the GVL; the Execution is
/// still returned. On timeout the raised TimeoutError (a ToolError) carries
/// the Execution of what was captured before the group was terminated.
pub fn run(ruby: &Ruby, mut request: RunRequest) -> Result<Value, Error> {
    let (argv, environment) = (&request.argv, &request.environment);
    core_result(ruby, core_process::validate_launch(argv, environment))?;
    check_context(request.context)?;
    // 18.9's reader, chosen before anything is spawned (L.3 fallback).
    let sampler = match request.limits.sampled_memory_bytes {
        Some(limit) => Some((core_result(ruby, DefaultReader::choose())?, limit)),
        None => None,
    };
    let launch = launch_of(&mut request);
    let mode = CaptureMode::PerStream {
        limit: usize::try_from(request.max_output_bytes).unwrap_or(usize::MAX),
        stop_at_limit: request.kill_on_output_limit,
    };
    let (owner, cgroup) = (request.owner.as_ref(), &request.limits.cgroup);
    let started = start_interruptibly(ruby, &launch, cgroup, mode, false, owner)?;
    let process = match started {
        Ok(process) => process,
        Err(error) => return start_failure(ruby, StartFailure::of(&error, &launch.argv[0])),
    };
    // block_given? first: `block_proc` without a block raises (and rescues)
    // an ArgumentError, and raising runs pending interrupts, so a Thread#raise
    // would be swallowed with it.
    let mut stream = match ruby.block_given() {
        true => Some(Streamer::new(ruby, ruby.block_proc()?)),
        false => None,
    };
    if stream.is_some() {
        process.stream_output();
    }
    let supervision = Supervision {
        timeout: request.timeout,
        context: request.context,
        sampler,
    };
    let ended = supervise(ruby, &process, supervision, &mut stream)?;
    outcome(ruby, &request, &process, ended)
}

/// The core's launch, taken out of `request` (argv and environment validated).
fn launch_of(request: &mut RunRequest) -> Launch {
    Launch {
        argv: std::mem::take(&mut request.argv),
        environment: std::mem::take(&mut request.environment),
        inherit_environment: request.inherit_environment,
        chdir: request.chdir.take(),
        // L.3: per process where the tree's CPU time cannot be bounded.
        cpu_rlimit: request.limits.cpu_rlimit(),
        file_bytes: None,
        spawn_options: std::mem::take(&mut request.spawn_options),
    }
}

/// The Execution of a supervised run, or the error its end calls for
/// (a closed sandbox, a limit, a timeout carrying the partial Execution).
fn outcome(
    ruby: &Ruby,
    request: &RunRequest,
    process: &RunningProcess,
    ended: RunEnd,
) -> Result<Value, Error> {
    let finish = || {
        let exit = process.exit().unwrap_or(Exit::Unknown);
        let (stdout, stderr) = process.take_output();
        Execution::wrap(ruby, &stdout, &stderr, exit.code(), exit.signal())
    };
    let exceeded = match ended {
        RunEnd::ClosedByOwner => {
            let closed = crate::ruby_api::ownership::CLOSED_MESSAGE;
            return Err(crate::helpers::errors::tool_error(ruby, closed));
        }
        RunEnd::TimedOut => return Err(timeout_error(ruby, request.timeout, finish())),
        RunEnd::MemorySampled(bytes) => LimitExceeded::Memory { bytes },
        RunEnd::Finished { .. } => match process.limit_exceeded().or_else(|| {
            // L.3's per-process RLIMIT_CPU kills by signal: the same CPU limit.
            let end = process.exit().map(Exit::program_end).unwrap_or_default();
            request.limits.rlimit_kill(end)
        }) {
            Some(exceeded) => exceeded,
            None => {
                let execution = finish();
                if let Some(reporter) = &request.denials {
                    // A run ended at its output bound is a denial of kind `:limit`.
                    if request.kill_on_output_limit && process.overflowed() {
                        let bytes = request.max_output_bytes;
                        reporter.report(ruby, Denial::output_kill(&reporter.program, bytes))?;
                    }
                    // So is a process the kernel refused at `tasks` (nothing
                    // was killed: the program's own exit stands).
                    if let Some(tasks) = process.tasks_refused() {
                        reporter.report(ruby, Denial::tasks_refused(&reporter.program, tasks))?;
                    }
                }
                return Ok(execution);
            }
        },
    };
    let execution = finish();
    Err(limit_kill(
        ruby,
        request.denials.as_ref(),
        exceeded,
        execution,
    )?)
}

/// A run or session a limit ended (L.2): reported as a denial where the
/// launch has a reporter; returns the LimitError to raise (a ToolError with
/// the L.2 message), carrying `execution` (the run's output so far).
pub fn limit_kill(
    ruby: &Ruby,
    denials: Option<&crate::ruby_api::denial::Reporter>,
    exceeded: LimitExceeded,
    execution: Value,
) -> Result<Error, Error> {
    if let Some(reporter) = denials {
        reporter.report(ruby, Denial::limit_kill(&reporter.program, &exceeded))?;
    }
    Ok(limit_error(ruby, exceeded, execution))
}

/// The LimitError of `exceeded` carrying `execution`.
pub fn limit_error(ruby: &Ruby, exceeded: LimitExceeded, execution: Value) -> Error {
    with_execution(ruby, &LIMIT_ERROR, exceeded.message(), execution)
}

/// An exception of `class` (TimeoutError, LimitError) with `message` whose
/// `execution` is `execution`. An exception is an ordinary Ruby object made
/// by Exception's allocator (it must stay a ToolError for existing rescues),
/// so the Execution is its one instance variable, read by the `attr_reader`
/// defined in [`init`].
fn with_execution(
    ruby: &Ruby,
    class: &'static Lazy<ExceptionClass>,
    message: String,
    execution: Value,
) -> Error {
    let build = || -> Result<Error, Error> {
        let error: Exception = ruby.get_inner(class).new_instance((message,))?;
        magnus::RObject::try_convert(error.as_value())?.ivar_set("@execution", execution)?;
        Ok(Error::from(error))
    };
    build().unwrap_or_else(|error| error)
}

/// An Execution for a program that could not run (127/126), or the ToolError.
fn start_failure(ruby: &Ruby, failure: StartFailure) -> Result<Value, Error> {
    match failure {
        StartFailure::Exited { stderr, code } => {
            Ok(Execution::wrap(ruby, "", &stderr, Some(code), None))
        }
        StartFailure::Refused { message, errno } => Err(with_errno_cause(ruby, message, errno)),
        StartFailure::Unenforceable { reason } => Err(capability_error(ruby, reason)),
        StartFailure::Checked(error) => Err(crate::helpers::errors::from_core(ruby, error)),
    }
}

/// TimeoutError with `message` whose `execution` is `execution` (a
/// session's `timeout:`, worded as [`timeout_error`] words it).
pub fn timeout_error_message(ruby: &Ruby, message: String, execution: Value) -> Error {
    with_execution(ruby, &TIMEOUT_ERROR, message, execution)
}

/// TimeoutError "Command timed out after SECONDS seconds" whose `execution`
/// holds what the child wrote before it was terminated.
fn timeout_error(ruby: &Ruby, timeout: f64, execution: Value) -> Error {
    with_execution(
        ruby,
        &TIMEOUT_ERROR,
        arguments::run_timed_out(timeout),
        execution,
    )
}
