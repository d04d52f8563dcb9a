//! Starting a session (18.1): from Rust for the backends' `start_program`,
//! or through the private `ProcessSession.new` keywords.

use littleghost_sandbox_core::limits::plan::Plan;
use littleghost_sandbox_core::process::{
    self as core_process, capture::DEFAULT_OUTPUT_BYTES, procfs::DefaultReader,
    running::session_failure_subject, session::Session as SessionState, Launch, SpawnError,
    SpawnOptions,
};
use magnus::{value::ReprValue, Error, Ruby, Value};

use super::monitor::start_monitor;
use super::{ProcessSession, Session, SessionRequest};
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::errors::{argument_error, core_result};
use crate::ruby_api::process_runner::{
    errno_exception, keywords, positive_integer, start_interruptibly,
};

/// Starts a session from Rust (backends' `start_program`). The caller has
/// already called `context&.check!` (2.4; see `process_runner::check_context`).
#[allow(dead_code)] // called by the backends' start_program
pub fn start(ruby: &Ruby, request: SessionRequest) -> Result<Value, Error> {
    let class = constants::class(ruby, "LittleGhost::Sandbox::ProcessSession")?;
    let session: Session = ruby.obj_wrap_as(ProcessSession::default(), class);
    setup(ruby, session, request)?;
    Ok(session.as_value())
}

/// Spawns `command` in a new process group with pipes, limits and optional memory supervision (18.1).
pub(super) fn initialize(ruby: &Ruby, rb_self: Session, args: &[Value]) -> Result<(), Error> {
    let names = [
        "command",
        "environment",
        "inherit_environment",
        "chdir",
        "output_bytes",
        "memory_bytes",
        "memory_reader",
        "cpu_seconds",
        "file_bytes",
    ];
    let [command, environment, inherit, chdir, output, memory, reader, cpu, file] =
        keywords(ruby, args, names, 1)?;
    let optional_positive = |value: Option<Value>, name: &str| -> Result<Option<u64>, Error> {
        match value.filter(|value| !value.is_nil()) {
            None => Ok(None),
            Some(value) => positive_integer(ruby, value, name).map(Some),
        }
    };
    let memory_reader = reader.filter(|value| !value.is_nil());
    if let Some(reader) = memory_reader {
        if !reader.respond_to("call", false)? {
            return Err(argument_error(ruby, "memory_reader must respond to call"));
        }
    }
    let request = SessionRequest {
        argv: convert::argv(ruby, command.unwrap_or_else(|| ruby.qnil().as_value()))?,
        shown_command: None,
        environment: convert::environment(ruby, environment)?,
        inherit_environment: inherit.is_some_and(|value| value.to_bool()),
        chdir: convert::expanded_path(ruby, chdir, "chdir")?,
        output_bytes: match output {
            None => DEFAULT_OUTPUT_BYTES,
            Some(value) => positive_integer(ruby, value, "output_bytes")?,
        },
        timeout: None,
        // This private constructor keeps 18.9's sampled memory and
        // per-process CPU rlimit; backends pass whole-tree limits.
        limits: Plan {
            sampled_memory_bytes: optional_positive(memory, "memory_bytes")?,
            rlimit_cpu_seconds: optional_positive(cpu, "cpu_seconds")?,
            ..Plan::default()
        },
        memory_reader,
        file_bytes: optional_positive(file, "file_bytes")?,
        spawn_options: SpawnOptions::default(),
        owner: None,
        denials: None,
    };
    setup(ruby, rb_self, request)
}

fn setup(ruby: &Ruby, session: Session, request: SessionRequest) -> Result<(), Error> {
    let (argv, environment) = (&request.argv, &request.environment);
    core_result(ruby, core_process::validate_launch(argv, environment))?;
    let started_before = || {
        let message = "process session already started";
        Err(Error::new(ruby.exception_runtime_error(), message))
    };
    if session.state.get().is_some() {
        return started_before();
    }
    // 18.9: the reader is chosen before anything is spawned.
    let sampled = request.limits.sampled_memory_bytes;
    let sampled = sampled.filter(|_| request.memory_reader.is_none());
    let default_reader =
        core_result(ruby, DefaultReader::sampling(sampled))?.map(|(reader, _)| reader);
    let launch = Launch {
        argv: request.argv,
        environment: request.environment,
        inherit_environment: request.inherit_environment,
        chdir: request.chdir,
        cpu_rlimit: request.limits.cpu_rlimit(),
        file_bytes: request.file_bytes,
        spawn_options: request.spawn_options,
    };
    let (owner, cgroup) = (request.owner.as_ref(), &request.limits.cgroup);
    let output_bytes = request.output_bytes;
    let mode = SessionState::capture_mode(output_bytes);
    let started = start_interruptibly(ruby, &launch, cgroup, mode, true, owner)?;
    let state = match started {
        Ok(process) => SessionState::new(process, launch.argv.clone(), output_bytes),
        Err(SpawnError::Unenforceable(reason)) => {
            return Err(crate::helpers::errors::capability_error(ruby, reason))
        }
        Err(SpawnError::Refused(error)) => {
            return Err(crate::helpers::errors::from_core(ruby, error))
        }
        Err(error) => {
            let subject = session_failure_subject(&error, &launch.argv[0]);
            let errno = errno_exception(ruby, error.errno(), Some(subject))?;
            return Err(Error::from(errno));
        }
    };
    let state = state.launched_as(request.shown_command, &request.limits, request.timeout);
    if session.state.set(state).is_err() {
        // Another thread's `initialize` won while this one spawned.
        return started_before();
    }
    if let Some(reporter) = &request.denials {
        let _ = session.denials.set(reporter.clone());
    }
    if let Some(limit) = request.limits.sampled_memory_bytes {
        start_monitor(ruby, session, request.memory_reader, default_reader, limit)?;
    }
    Ok(())
}
