//! `LittleGhost::Sandbox::ProcessRunner` (17.13): runs a host argv to
//! completion and returns an Execution. Every backend launches through
//! [`run`] (directly from Rust) or [`crate::ruby_api::process_session::start`].
//!
//! This file also holds the waiting discipline shared with ProcessSession
//! (0.7, 0.8, 17.12): [`Waiter`] waits in slices of at most 10 ms, either
//! without the GVL on the child's notification fd or, under a fiber
//! scheduler, through the scheduler's sleep so sibling fibers run; interrupts
//! and `context.check!` are handled between slices with the GVL held.

use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use littleghost_sandbox_core::process::{
    self as core_process, capture::DEFAULT_OUTPUT_BYTES, running::StartFailure, CaptureMode, Exit,
    Launch, Notifier, Owner, PollFlags, RunningProcess, SpawnOptions, TerminationStep,
};
use magnus::{
    block::Proc,
    function,
    prelude::*,
    scan_args::{get_kwargs, scan_args},
    value::{Lazy, ReprValue},
    Error, Exception, ExceptionClass, KwArgs, RClass, RHash, RString, Ruby, Symbol, Value,
};

use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::nogvl::{self, Wake};
use crate::ruby_api::errors::{argument_error, capability_error, core_result, tool_error};
use crate::ruby_api::execution::Execution;
use crate::ruby_api::launch_limits;
use littleghost_sandbox_core::denial::Denial;
use littleghost_sandbox_core::limits::{plan::Plan, LimitExceeded};
use littleghost_sandbox_core::process::procfs::DefaultReader;

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
    /// Whole-tree limits (L.1-L.3), planned by [`launch_limits::for_call`].
    pub limits: Plan,
    /// Where an output-bound kill is reported as a denial (issue 12 item 12).
    pub denials: Option<crate::ruby_api::denial::Reporter>,
}

/// `LittleGhost::Sandbox::TimeoutError`, defined in [`init`].
static TIMEOUT_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| {
    constants::class(ruby, "LittleGhost::Sandbox::TimeoutError")
        .ok()
        .and_then(|class| ExceptionClass::from_value(class.as_value()))
        .expect("LittleGhost::Sandbox::TimeoutError is defined at load")
});

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let runner = sandbox.define_module("ProcessRunner")?;
    runner.define_singleton_method("run", function!(ruby_run, -1))?;
    // A ToolError (same message as before) that carries the partial Execution.
    let tool = constants::class(ruby, "LittleGhost::ToolError")?;
    let timeout = sandbox.define_class("TimeoutError", tool)?;
    let _: Value = timeout.funcall("attr_reader", (ruby.to_symbol("execution"),))?;
    let _ = ruby.get_inner(&TIMEOUT_ERROR);
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
        argv: convert::argv(ruby, command)?,
        timeout: validate_timeout(ruby, timeout)?,
        context: context.filter(|value| !value.is_nil()),
        max_output_bytes: validate_output_bytes(
            ruby,
            max_output_bytes.unwrap_or_else(|| ruby.qnil().as_value()),
            DEFAULT_OUTPUT_BYTES,
        )?,
        environment: convert::environment(ruby, environment)?,
        inherit_environment: inherit_environment.is_some_and(|value| value.to_bool()),
        chdir: convert::expanded_path(ruby, chdir, "chdir")?,
        spawn_options: SpawnOptions::default(),
        owner: None,
        kill_on_output_limit: kill.is_some_and(|value| value.to_bool()),
        limits: Plan::default(),
        denials: None,
    };
    run(ruby, request)
}

/// 17.3: `Float(value)`, positive and finite; otherwise ArgumentError "timeout must be positive".
pub fn validate_timeout(ruby: &Ruby, value: Value) -> Result<f64, Error> {
    let seconds = ruby
        .module_kernel()
        .funcall::<_, _, f64>("Float", (value,))
        .map_err(|_| argument_error(ruby, "timeout must be positive"))?;
    if seconds > 0.0 && seconds.is_finite() {
        Ok(seconds)
    } else {
        Err(argument_error(ruby, "timeout must be positive"))
    }
}

/// 17.3: `max_output_bytes` through `Integer()` and positive; nil means `default`.
pub fn validate_output_bytes(ruby: &Ruby, value: Value, default: u64) -> Result<u64, Error> {
    if value.is_nil() {
        return Ok(default);
    }
    positive_integer(ruby, value, "max_output_bytes")
}

/// `Integer(value)` that must be positive; ArgumentError "NAME must be a positive Integer" otherwise.
pub fn positive_integer(ruby: &Ruby, value: Value, name: &str) -> Result<u64, Error> {
    let message = || argument_error(ruby, format!("{name} must be a positive Integer"));
    let integer: magnus::Integer = ruby
        .module_kernel()
        .funcall("Integer", (value,))
        .map_err(|_| message())?;
    if !integer.funcall::<_, _, bool>("positive?", ())? {
        return Err(message());
    }
    // Anything beyond u64 is as good as unlimited.
    Ok(integer.to_u64().unwrap_or(u64::MAX))
}

/// `context&.check!` on the calling thread with the GVL held (0.8).
pub fn check_context(context: Option<Value>) -> Result<(), Error> {
    match context {
        Some(context) if !context.is_nil() => {
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
pub fn run(ruby: &Ruby, request: RunRequest) -> Result<Value, Error> {
    core_result(ruby, core_process::validate_argv(&request.argv))?;
    core_result(
        ruby,
        core_process::validate_environment(&request.environment),
    )?;
    check_context(request.context)?;
    let launch = Launch {
        argv: request.argv,
        environment: request.environment,
        inherit_environment: request.inherit_environment,
        chdir: request.chdir,
        // L.3: per process where the tree's CPU time cannot be bounded.
        cpu_seconds: request.limits.rlimit_cpu_seconds,
        file_bytes: None,
        spawn_options: request.spawn_options,
    };
    // 18.9's reader, chosen before anything is spawned (L.3 fallback).
    let sampler = match request.limits.sampled_memory_bytes {
        Some(limit) => Some((core_result(ruby, DefaultReader::choose())?, limit)),
        None => None,
    };
    let mode = CaptureMode::PerStream {
        limit: usize::try_from(request.max_output_bytes).unwrap_or(usize::MAX),
        stop_at_limit: request.kill_on_output_limit,
    };
    let owner = request.owner.as_ref();
    let cgroup = &request.limits.cgroup;
    let started = nogvl::blocking(ruby, || {
        RunningProcess::start_limited(&launch, cgroup, mode, false, owner)
    })?;
    let process = match started {
        Ok(process) => process,
        Err(error) => return start_failure(ruby, StartFailure::of(&error, &launch.argv[0])),
    };
    let mut stream = ruby
        .block_proc()
        .ok()
        .map(|block| Streamer::new(ruby, block));
    if stream.is_some() {
        process.stream_output();
    }
    let supervised = supervise(
        ruby,
        &process,
        Supervision {
            timeout: request.timeout,
            context: request.context,
            sampler,
        },
        &mut stream,
    );
    let finish = |process: &RunningProcess, exit: Exit| {
        let (stdout, stderr) = process.take_output();
        execution(ruby, &stdout, &stderr, exit.code(), exit.signal())
    };
    match supervised {
        Ok(_) if process.limit_exceeded().is_some() => {
            let exceeded = process.limit_exceeded().expect("checked");
            if let Some(reporter) = &request.denials {
                reporter.report(ruby, Denial::limit_kill(&reporter.program, &exceeded))?;
            }
            Err(launch_limits::exceeded_error(ruby, exceeded))
        }
        Ok(exit) => {
            let execution = finish(&process, exit)?;
            if request.kill_on_output_limit && process.overflowed() {
                report_output_kill(ruby, request.denials.as_ref(), request.max_output_bytes)?;
            }
            Ok(execution)
        }
        Err(Supervised::MemorySampled(limit)) => {
            if let Some(reporter) = &request.denials {
                let exceeded = LimitExceeded::Memory { bytes: limit };
                reporter.report(ruby, Denial::limit_kill(&reporter.program, &exceeded))?;
            }
            Err(launch_limits::sampled_memory_error(ruby, limit))
        }
        Err(Supervised::TimedOut) => {
            let exit = process.exit().unwrap_or(Exit::Unknown);
            Err(timeout_error(
                ruby,
                request.timeout,
                finish(&process, exit)?,
            ))
        }
        Err(Supervised::Raised(error)) => Err(error),
    }
}

/// A run ended at its output bound (`kill_on_output_limit`) is a denial
/// of kind `:limit`; a timeout is not (it refuses nothing the program asked).
fn report_output_kill(
    ruby: &Ruby,
    reporter: Option<&crate::ruby_api::denial::Reporter>,
    max_output_bytes: u64,
) -> Result<(), Error> {
    use littleghost_sandbox_core::denial::{Operation, Reason};
    let Some(reporter) = reporter else {
        return Ok(());
    };
    let denial = Denial::new(
        Operation::Execute,
        reporter.program.as_str(),
        Reason::OutputLimit,
        format!("Program output exceeded {max_output_bytes} bytes"),
    );
    reporter.report(ruby, denial)
}

/// An Execution for a program that could not run (127/126), or the ToolError.
fn start_failure(ruby: &Ruby, failure: StartFailure) -> Result<Value, Error> {
    match failure {
        StartFailure::Exited { stderr, code } => execution(ruby, "", &stderr, Some(code), None),
        StartFailure::Refused { message, errno } => Err(with_errno_cause(ruby, message, errno)),
        StartFailure::Unenforceable { reason } => Err(capability_error(ruby, reason)),
    }
}

/// TimeoutError "Command timed out after SECONDS seconds" whose `execution`
/// holds what the child wrote before it was terminated.
fn timeout_error(ruby: &Ruby, timeout: f64, execution: Value) -> Error {
    let build = || -> Result<Error, Error> {
        let seconds: RString = ruby.float_from_f64(timeout).funcall("to_s", ())?;
        let message = format!("Command timed out after {} seconds", seconds.to_string()?);
        let error: Exception = ruby.get_inner(&TIMEOUT_ERROR).new_instance((message,))?;
        magnus::RObject::try_convert(error.as_value())?.ivar_set("@execution", execution)?;
        Ok(Error::from(error))
    };
    build().unwrap_or_else(|error| error)
}

/// Yields fresh output to the caller's block (issue 12 item 11).
struct Streamer {
    block: Proc,
    cursor: [usize; 2],
    names: [Symbol; 2],
}

impl Streamer {
    fn new(ruby: &Ruby, block: Proc) -> Self {
        Streamer {
            block,
            cursor: [0, 0],
            names: [ruby.to_symbol("stdout"), ruby.to_symbol("stderr")],
        }
    }

    /// Yields what arrived since the last call, stdout first.
    fn flush(&mut self, ruby: &Ruby, process: &RunningProcess) -> Result<(), Error> {
        let fresh = process.output_since(&mut self.cursor);
        for (name, bytes) in self.names.into_iter().zip(fresh) {
            if !bytes.is_empty() {
                let chunk = ruby.str_from_slice(&bytes);
                chunk.freeze();
                let _: Value = self.block.call((name, chunk))?;
            }
        }
        Ok(())
    }
}

/// A frozen Execution with frozen Strings and `error` nil.
fn execution(
    ruby: &Ruby,
    stdout: &str,
    stderr: &str,
    exit_code: Option<i32>,
    signal: Option<i32>,
) -> Result<Value, Error> {
    Ok(Execution::wrap(ruby, stdout, stderr, exit_code, signal))
}

/// ToolError "MESSAGE (Errno::EXXX)" whose `cause` is that Errno (1.2: no errno text).
fn with_errno_cause(ruby: &Ruby, message: &str, errno: i32) -> Error {
    let build = || -> Result<Error, Error> {
        let cause: Value = ruby
            .exception_system_call_error()
            .funcall("new", (ruby.qnil(), errno))?;
        let class_name: String = cause.class().funcall("name", ())?;
        let class = constants::class(ruby, "LittleGhost::ToolError")?;
        error_with_cause(ruby, class, &format!("{message} ({class_name})"), cause)
    };
    build().unwrap_or_else(|error| error)
}

/// An exception of `class` with `message` whose `cause` is `cause`, made by
/// raising it once (Ruby has no other way to set a cause).
pub fn error_with_cause(
    ruby: &Ruby,
    class: RClass,
    message: &str,
    cause: Value,
) -> Result<Error, Error> {
    let kwargs = ruby.hash_new();
    kwargs.aset(ruby.to_symbol("cause"), cause)?;
    match ruby
        .module_kernel()
        .funcall::<_, _, Value>("raise", (class, message, KwArgs(kwargs)))
    {
        Err(error) => Ok(error),
        Ok(_) => Err(Error::new(ruby.exception_runtime_error(), "raise returned")),
    }
}

/// Why [`supervise`] gave up on the child.
enum Supervised {
    /// The deadline passed; the group was terminated and the leader reaped.
    TimedOut,
    /// An exception (interrupt, `check!`, the block, a closed sandbox).
    Raised(Error),
    /// The sampled memory (L.3 fallback) passed this limit; the group was
    /// terminated.
    MemorySampled(u64),
}

/// What [`supervise`] watches besides the child's exit.
struct Supervision {
    timeout: f64,
    context: Option<Value>,
    /// The reader and limit of sampled memory (L.3), every [`SAMPLE_PERIOD`].
    sampler: Option<(DefaultReader, u64)>,
}

/// How often sampled memory is read (as 18.9).
const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// Whether the tree of `pid` uses more than `limit` bytes now (a failed
/// read counts as not over: the child may just have exited).
fn over_memory(ruby: &Ruby, pid: i32, (reader, limit): (DefaultReader, u64)) -> bool {
    let sampled = nogvl::blocking(ruby, || reader.sample(pid as u32));
    matches!(sampled, Ok(Ok(bytes)) if bytes > limit)
}

impl From<Error> for Supervised {
    fn from(error: Error) -> Self {
        Supervised::Raised(error)
    }
}

/// Waits until the child finished (17.8), polling `context` and streaming
/// output every slice; terminates the group on timeout (17.10) or on any
/// error (17.11).
fn supervise(
    ruby: &Ruby,
    process: &RunningProcess,
    Supervision {
        timeout,
        context,
        sampler,
    }: Supervision,
    stream: &mut Option<Streamer>,
) -> Result<Exit, Supervised> {
    let started = Instant::now();
    let mut next_sample = started;
    let deadline = Duration::try_from_secs_f64(timeout)
        .ok()
        .and_then(|limit| started.checked_add(limit));
    let mut waiter = Waiter::new(process);
    loop {
        if process.terminated_by_owner() {
            // The sandbox was closed (H.4): its `close` terminated the group.
            reap_leader(ruby, &mut waiter, process);
            let closed = crate::ruby_api::ownership::CLOSED_MESSAGE;
            return Err(tool_error(ruby, closed).into());
        }
        if process.finished() {
            // The call owns the whole group: members a finished leader left
            // behind (a backgrounded daemon that closed its output) are
            // terminated before returning, so nothing outlives the call.
            if process.group_alive() {
                terminate_group(ruby, &mut waiter, process)?;
            }
            if let Some(stream) = stream {
                stream.flush(ruby, process)?;
            }
            return Ok(process.exit().unwrap_or(Exit::Unknown));
        }
        let now = Instant::now();
        if let Some(sampler) = sampler.filter(|_| now >= next_sample) {
            next_sample = now + SAMPLE_PERIOD;
            if over_memory(ruby, process.pid(), sampler) {
                terminate_group(ruby, &mut waiter, process)?;
                return Err(Supervised::MemorySampled(sampler.1));
            }
        }
        let slice = match deadline {
            Some(deadline) if now >= deadline => {
                terminate_group(ruby, &mut waiter, process)?;
                return Err(Supervised::TimedOut);
            }
            Some(deadline) => core_process::POLL_INTERVAL.min(deadline - now),
            None => core_process::POLL_INTERVAL,
        };
        let waited = waiter
            .wait(ruby, slice)
            .and_then(|()| check_context(context))
            .and_then(|()| match stream {
                Some(stream) => stream.flush(ruby, process),
                None => Ok(()),
            });
        if let Err(error) = waited {
            // 17.11: clean up, then hand back the very same exception (or kill).
            let _ = terminate_group(ruby, &mut waiter, process);
            return Err(error.into());
        }
    }
}

/// 17.12 through the core's one protocol ([`core_process::Termination`]):
/// TERM the group, poll every 10 ms for up to 0.5 s, KILL if still alive,
/// reap the leader. The grace wait follows 0.7. A second interrupt that
/// raises (or kills) during the grace cuts it short (straight to KILL) and is
/// returned as `Err` after the cleanup finished; pending interrupts that do
/// not raise (SIGCHLD, a trap handler) run and the grace goes on.
pub fn terminate_group(
    ruby: &Ruby,
    waiter: &mut Waiter,
    process: &RunningProcess,
) -> Result<(), Error> {
    let mut interruption = None;
    let mut termination = process.begin_termination();
    while let TerminationStep::Wait(pause) = termination.step() {
        match waiter.pause(ruby, pause) {
            Pause::Slept => {}
            Pause::Interrupted(None) => {
                // Stopping the leader to list its descendants sends this
                // process SIGCHLD, which wakes the wait like an interrupt: run
                // what is pending; only an exception or a kill ends the grace.
                if let Err(error) = nogvl::check_interrupts(ruby) {
                    interruption = Some(error);
                    termination.kill();
                    break;
                }
                // Still pending (deferred by handle_interrupt): do not spin.
                std::thread::sleep(Duration::from_millis(1));
            }
            Pause::Interrupted(Some(error)) => {
                interruption = Some(error);
                termination.kill();
                break;
            }
        }
    }
    reap_leader(ruby, waiter, process);
    interruption.map_or(Ok(()), Err)
}

/// Waits (without the GVL, ignoring interrupts) until the leader is reaped.
/// After SIGKILL this takes microseconds; if the kernel keeps the process
/// longer, the background exit watcher still reaps it.
pub fn reap_leader(ruby: &Ruby, waiter: &mut Waiter, process: &RunningProcess) {
    let give_up = Instant::now() + Duration::from_secs(2);
    while process.try_reap().is_none() && Instant::now() < give_up {
        waiter.pause_quietly(ruby, core_process::POLL_INTERVAL);
    }
}

/// Outcome of a pause inside termination.
pub enum Pause {
    Slept,
    /// Ruby wants the thread back; under a scheduler, with the exception.
    Interrupted(Option<Error>),
}

/// Waits on one child's notification fd in short slices, the way 0.7 asks.
///
/// Under a fiber scheduler the wait is `Kernel#sleep` (the scheduler's
/// `kernel_sleep`), in slices growing from 1 ms to 10 ms, rather than
/// `IO#wait_readable` on the notification fd: async 1.30's `io_wait` rescues
/// every `Async::TimeoutError`, so a caller's `task.with_timeout` would be
/// swallowed by an IO wait, while a sleep lets it through.
pub struct Waiter<'a> {
    notifier: &'a Notifier,
    wake: Wake,
    scheduler_slice: Duration,
}

/// Whether a fiber scheduler is active for the current (non-blocking) fiber.
pub fn fiber_scheduler_active() -> bool {
    // SAFETY: plain C API call with the GVL held; nil means none (or a blocking fiber).
    !rb_sys::NIL_P(unsafe { rb_sys::rb_fiber_scheduler_current() })
}

impl<'a> Waiter<'a> {
    pub fn new(process: &'a RunningProcess) -> Self {
        let notifier = process.notifier();
        Waiter {
            notifier,
            wake: Wake::new(notifier.raw_write_fd()),
            scheduler_slice: Duration::from_millis(1),
        }
    }

    /// Sleeps through the fiber scheduler so sibling fibers run.
    fn scheduler_sleep(&mut self, ruby: &Ruby, slice: Duration) -> Result<(), Error> {
        let nap = self.scheduler_slice.min(slice);
        self.scheduler_slice = (self.scheduler_slice * 2).min(core_process::POLL_INTERVAL);
        let _: Value = ruby
            .module_kernel()
            .funcall("sleep", (nap.as_secs_f64(),))?;
        self.notifier.clear();
        Ok(())
    }

    /// Waits up to `slice` for news from the child (or for `extra` to become
    /// ready), then runs pending interrupts. Errors are interrupts, unchanged.
    pub fn wait_for(
        &mut self,
        ruby: &Ruby,
        slice: Duration,
        extra: Option<(BorrowedFd<'_>, PollFlags)>,
    ) -> Result<(), Error> {
        if fiber_scheduler_active() {
            // `extra` (stdin room) is simply retried after the nap.
            self.scheduler_sleep(ruby, slice)?;
        } else {
            self.wake.reset();
            let notifier = self.notifier;
            nogvl::without_gvl(ruby, || notifier.wait(slice, extra), &self.wake)?;
        }
        nogvl::check_interrupts(ruby)
    }

    /// [`wait_for`](Self::wait_for) on the notification fd alone.
    pub fn wait(&mut self, ruby: &Ruby, slice: Duration) -> Result<(), Error> {
        self.wait_for(ruby, slice, None)
    }

    /// A grace-period pause: wakes early on child news; reports an interrupt
    /// without running it (it stays pending for Ruby to raise later), except
    /// under a scheduler where the wait itself raises.
    pub fn pause(&mut self, ruby: &Ruby, slice: Duration) -> Pause {
        if fiber_scheduler_active() {
            return match self.scheduler_sleep(ruby, slice) {
                Ok(()) => Pause::Slept,
                Err(error) => Pause::Interrupted(Some(error)),
            };
        }
        self.pause_nogvl(ruby, slice)
    }

    /// A pause that leaves interrupts pending (used only while reaping after
    /// KILL, which takes microseconds).
    pub fn pause_quietly(&mut self, ruby: &Ruby, slice: Duration) {
        if let Pause::Interrupted(_) = self.pause_nogvl(ruby, slice) {
            // An interrupt is pending, so Ruby will not release the GVL; keep
            // the wait short instead of spinning.
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn pause_nogvl(&mut self, ruby: &Ruby, slice: Duration) -> Pause {
        self.wake.reset();
        let notifier = self.notifier;
        let ran = nogvl::without_gvl(ruby, || notifier.wait(slice, None), &self.wake);
        match ran {
            Ok(Some(())) if !self.wake.interrupted() => Pause::Slept,
            Ok(_) => Pause::Interrupted(None),
            Err(error) => Pause::Interrupted(Some(error)),
        }
    }
}
