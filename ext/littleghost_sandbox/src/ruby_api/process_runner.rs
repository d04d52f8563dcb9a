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
    self as core_process, capture::DEFAULT_OUTPUT_BYTES, ending::Ending, running::StartFailure,
    supervision::RunEnd, CaptureMode, Launch, Owner, RunningProcess, SpawnOptions,
};
use magnus::{function, prelude::*, value::ReprValue, Attr, Error, Exception, RClass, Ruby, Value};

use crate::helpers::constants;
use crate::helpers::convert as value_convert;
use crate::helpers::errors::{capability_error, core_result, tool_error};
use crate::ruby_api::execution::Execution;
use littleghost_sandbox_core::limits::plan::Plan;
use littleghost_sandbox_core::process::procfs::DefaultReader;

use convert::with_errno_cause;
pub use convert::{
    errno_exception, error_with_cause, kernel_float, kernel_integer, keywords, positive_integer,
    validate_output_bytes, validate_timeout,
};
pub use start::start_interruptibly;
use supervise::{supervise, Streamer};
pub use waiter::{terminate_group, Waiter};

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

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let runner = sandbox.define_module("ProcessRunner")?;
    runner.define_singleton_method("run", function!(ruby_run, -1))?;
    // ToolErrors (so existing rescues hold) carrying the Execution of what
    // the program wrote before its timeout (17.10) or a limit (L.2) ended it.
    let tool = constants::class(ruby, "LittleGhost::ToolError")?;
    for name in ["TimeoutError", "LimitError"] {
        let class = sandbox.define_class(name, tool)?;
        class.define_attr("execution", Attr::Read)?;
    }
    Ok(())
}

/// Runs `command` without a shell and returns its Execution, raising ToolError on timeout.
fn ruby_run(ruby: &Ruby, args: &[Value]) -> Result<Value, Error> {
    let names = [
        "command",
        "timeout",
        "context",
        "max_output_bytes",
        "environment",
        "inherit_environment",
        "chdir",
        "kill_on_output_limit",
    ];
    let [command, timeout, context, max_output_bytes, environment, inherit, chdir, kill] =
        keywords(ruby, args, names, 2)?;
    let nil = ruby.qnil().as_value();
    let request = RunRequest {
        argv: value_convert::argv(ruby, command.unwrap_or(nil))?,
        timeout: validate_timeout(ruby, timeout.unwrap_or(nil))?,
        context: context.filter(|value| !value.is_nil()),
        max_output_bytes: validate_output_bytes(
            ruby,
            max_output_bytes.unwrap_or(nil),
            DEFAULT_OUTPUT_BYTES,
        )?,
        environment: value_convert::environment(ruby, environment)?,
        inherit_environment: inherit.is_some_and(|value| value.to_bool()),
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
    let sampler = DefaultReader::sampling(request.limits.sampled_memory_bytes);
    let sampler = core_result(ruby, sampler)?;
    let launch = Launch {
        argv: std::mem::take(&mut request.argv),
        environment: std::mem::take(&mut request.environment),
        inherit_environment: request.inherit_environment,
        chdir: request.chdir.take(),
        // L.3: per process where the tree's CPU time cannot be bounded.
        cpu_rlimit: request.limits.cpu_rlimit(),
        file_bytes: None,
        spawn_options: std::mem::take(&mut request.spawn_options),
    };
    let mode = CaptureMode::per_stream(request.max_output_bytes, request.kill_on_output_limit);
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
    let (timeout, context) = (request.timeout, request.context);
    let ended = supervise(ruby, &process, timeout, context, sampler, &mut stream)?;
    outcome(ruby, &request, &process, ended)
}

/// The Execution of a supervised run, or the error its end calls for
/// (a closed sandbox, a limit, a timeout carrying the partial Execution);
/// a limit kill, an output-bound kill and a refused process are reported
/// as denials first.
fn outcome(
    ruby: &Ruby,
    request: &RunRequest,
    process: &RunningProcess,
    ended: RunEnd,
) -> Result<Value, Error> {
    let ending = process.ending(ended, request.timeout, &request.limits);
    let execution = Execution::of(ruby, &process.outcome());
    if let Some(reporter) = &request.denials {
        let output_kill = request
            .kill_on_output_limit
            .then_some(request.max_output_bytes);
        for denial in process.run_denials(ending.as_ref(), &reporter.program, output_kill) {
            reporter.report(ruby, denial)?;
        }
    }
    match ending {
        Some(ending) => Err(ending_error(ruby, &ending, execution)),
        None => Ok(execution),
    }
}

/// The error a run or a session that ended as `ending` raises: ToolError
/// for a closed sandbox (H.4); TimeoutError or LimitError (ToolErrors, the
/// message of 17.10 or L.2) carrying `execution`, what the program wrote
/// before it was ended and how it ended.
pub fn ending_error(ruby: &Ruby, ending: &Ending, execution: Value) -> Error {
    let class = match ending {
        Ending::ClosedByOwner => return tool_error(ruby, ending.message()),
        Ending::TimedOut(_) => "LittleGhost::Sandbox::TimeoutError",
        Ending::Limit(_) => "LittleGhost::Sandbox::LimitError",
    };
    // An exception is an ordinary Ruby object made by Exception's allocator
    // (it must stay a ToolError for existing rescues), so the Execution is
    // its one instance variable, read by the `attr_reader` of [`init`].
    let build = || -> Result<Error, Error> {
        let error = constants::class(ruby, class)?.new_instance((ending.message(),))?;
        magnus::RObject::try_convert(error)?.ivar_set("@execution", execution)?;
        Ok(Error::from(Exception::try_convert(error)?))
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
