//! `LittleGhost::Sandbox::ProcessSession` (§18): a long-lived child with
//! stdin, bounded combined output, optional rlimits and memory supervision;
//! plus `ProcessSession::Chunk` (18.11, Data-like) and
//! `ProcessSession::Status` (what `wait`/`terminate` return, shaped like
//! `Process::Status`).
//!
//! Output is drained in the background into a buffer bounded by
//! `output_bytes` (combined), so a child that nobody reads from never blocks
//! on a full pipe (W15); passing the bound terminates the group and is
//! reported by the next `alive?`, `read` or `wait`, like a memory error.
//!
//! Ruby values the session needs (the recorded resource error, the monitor
//! thread, which holds the memory reader) are held by the TypedData struct
//! and marked. Which error ends the session, its wording and its one denial
//! are the core's (`process::ending`, `process::session`).

use std::sync::OnceLock;

use littleghost_sandbox_core::limits::LimitExceeded;
use littleghost_sandbox_core::process::ending::Ending;
use littleghost_sandbox_core::process::session::{
    self as core_session, Session as SessionState, SessionError, WaitEnd,
};
use littleghost_sandbox_core::process::{
    deadline::Deadline, group::GroupSignal as Signal, Owner, SpawnOptions,
};
use magnus::{
    error::ErrorType,
    gc::Marker,
    method,
    prelude::*,
    typed_data::Obj,
    value::{Lazy, Opaque, ReprValue},
    DataTypeFunctions, Error, Exception, RClass, RString, Ruby, TypedData, Value,
};

use crate::helpers::constants;
use crate::helpers::errors::tool_error;
use crate::helpers::nogvl;
use crate::ruby_api::execution::{define_data_class, DataShape, Execution};
use crate::ruby_api::process_runner::{
    check_context, ending_error, keywords, terminate_group, validate_timeout, Waiter,
};
use littleghost_sandbox_core::limits::plan::Plan;

mod io;
mod monitor;
mod start;
pub(crate) mod status;

use io::{close_write, read, write};
use monitor::stop_monitor;
use start::initialize;
pub use start::start;
use status::SessionStatus;

/// `ProcessSession::Chunk`, looked up once (forced in `init`, where it is defined).
static CHUNK_CLASS: Lazy<RClass> = Lazy::new(|ruby| {
    constants::class(ruby, "LittleGhost::Sandbox::ProcessSession::Chunk")
        .expect("ProcessSession::Chunk is defined at load")
});

/// A session launch as backends hand it over (18.1).
pub struct SessionRequest {
    pub argv: Vec<String>,
    /// The caller's own argv when `argv` wraps it (bwrap, the supervisor):
    /// what `inspect` shows.
    pub shown_command: Option<Vec<String>>,
    pub environment: Vec<(String, String)>,
    pub inherit_environment: bool,
    pub chdir: Option<std::path::PathBuf>,
    pub output_bytes: u64,
    /// `timeout:`: the session's whole life in seconds (None: unbounded).
    pub timeout: Option<f64>,
    /// Whole-tree limits (L.1-L.3) and their fallbacks: sampled memory
    /// (18.9) and the per-process `RLIMIT_CPU`.
    pub limits: Plan,
    /// Any callable `(pid) -> bytes` for sampled memory; nil/None picks the
    /// platform reader.
    pub memory_reader: Option<Value>,
    pub file_bytes: Option<u64>,
    pub spawn_options: SpawnOptions,
    /// The sandbox whose `close` terminates the session (H.4), if any.
    pub owner: Option<Owner>,
    /// Where a limit kill is reported as a denial.
    pub denials: Option<crate::ruby_api::denial::Reporter>,
}

/// ProcessSession::Chunk: `stdout`, `stderr`, `eof`.
pub struct ChunkShape;

impl DataShape for ChunkShape {
    const MEMBERS: &'static [&'static str] = &["stdout", "stderr", "eof"];
    const OPTIONAL: &'static [&'static str] = &[];
    const EXTRAS: &'static [&'static str] = &[];
}

#[derive(Default, TypedData)]
#[magnus(
    class = "LittleGhost::Sandbox::ProcessSession",
    free_immediately,
    size,
    mark
)]
pub struct ProcessSession {
    state: OnceLock<SessionState>,
    /// Where a limit kill is reported as a denial.
    denials: OnceLock<crate::ruby_api::denial::Reporter>,
    /// Ruby objects the session holds, set once each and marked for the GC
    /// (no hidden instance variables): the first resource error (a limit,
    /// the timeout, the memory supervisor's failure), and the memory
    /// monitor thread (18.9), which holds the reader it calls.
    resource_error: OnceLock<Opaque<Value>>,
    monitor: OnceLock<Opaque<Value>>,
}

impl DataTypeFunctions for ProcessSession {
    fn mark(&self, marker: &Marker) {
        for value in [self.resource_error.get(), self.monitor.get()]
            .into_iter()
            .flatten()
        {
            marker.mark(*value);
        }
    }
}

impl ProcessSession {
    /// The recorded resource error, if any.
    fn recorded(&self, ruby: &Ruby) -> Option<Error> {
        let recorded = ruby.get_inner(*self.resource_error.get()?);
        Exception::from_value(recorded).map(Error::from)
    }

    /// Reports the kill of `ending` as a denial where the launch has a
    /// reporter, once per session (the core decides which call does).
    pub(super) fn report_kill(
        &self,
        ruby: &Ruby,
        state: &SessionState,
        ending: &Ending,
    ) -> Result<(), Error> {
        let Some(reporter) = self.denials.get() else {
            return Ok(());
        };
        match state.kill_denial(ending, &reporter.program) {
            Some(denial) => reporter.report(ruby, denial),
            None => Ok(()),
        }
    }

    /// The monitor thread, if one was started.
    pub(super) fn monitor_thread(&self, ruby: &Ruby) -> Option<Value> {
        self.monitor.get().map(|value| ruby.get_inner(*value))
    }
}

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("ProcessSession", ruby.class_object())?;
    class.define_alloc_func::<ProcessSession>();
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("pid", method!(pid, 0))?;
    class.define_method("alive?", method!(alive, 0))?;
    class.define_method("write", method!(write, 1))?;
    class.define_method("close_write", method!(close_write, 0))?;
    class.define_method("read", method!(read, -1))?;
    class.define_method("wait", method!(wait, -1))?;
    class.define_method("terminate", method!(terminate, 0))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("closed?", method!(is_closed, 0))?;
    class.define_method("inspect", method!(inspect, 0))?;

    let chunk = class.define_class("Chunk", ruby.class_object())?;
    define_data_class!(ruby, chunk, ChunkShape);
    let _ = ruby.get_inner(&CHUNK_CLASS);

    let status = class.define_class("Status", ruby.class_object())?;
    status.undef_default_alloc_func();
    status.define_method("pid", method!(SessionStatus::pid, 0))?;
    status.define_method("to_i", method!(SessionStatus::to_i, 0))?;
    status.define_method("exitstatus", method!(SessionStatus::exitstatus, 0))?;
    status.define_method("success?", method!(SessionStatus::success, 0))?;
    status.define_method("exited?", method!(SessionStatus::exited, 0))?;
    status.define_method("signaled?", method!(SessionStatus::signaled, 0))?;
    status.define_method("termsig", method!(SessionStatus::termsig, 0))?;
    status.define_method("stopped?", method!(SessionStatus::stopped, 0))?;
    status.define_method("inspect", method!(SessionStatus::inspect, 0))?;
    status.define_method("to_s", method!(SessionStatus::inspect, 0))?;
    status.define_method("==", method!(SessionStatus::equal, 1))?;
    Ok(())
}

/// `Obj<ProcessSession>` with helpers.
type Session = Obj<ProcessSession>;

/// The IOError or ToolError for a refusal of the core's.
fn session_error(ruby: &Ruby, error: SessionError) -> Error {
    if error.is_io() {
        Error::new(ruby.exception_io_error(), error.message())
    } else {
        tool_error(ruby, error.message())
    }
}

impl ProcessSession {
    /// The running state; IOError if the session never started or belongs
    /// to the parent of a forked process.
    fn state(&self, ruby: &Ruby) -> Result<&SessionState, Error> {
        let state = self.state.get().ok_or(SessionError::NotStarted);
        state
            .and_then(SessionState::owned)
            .map_err(|error| session_error(ruby, error))
    }
}

/// The OS pid of the child, which is also its process group id.
fn pid(ruby: &Ruby, rb_self: Session) -> Result<i32, Error> {
    Ok(rb_self.state(ruby)?.process().pid())
}

/// `#<LittleGhost::Sandbox::ProcessSession pid=N alive=true command=["sh", "-c", ...]>`;
/// never raises, so a failed session still inspects.
fn inspect(rb_self: Session) -> String {
    let class = "LittleGhost::Sandbox::ProcessSession";
    match rb_self.state.get() {
        None => format!("#<{class} not started>"),
        Some(state) => format!("#<{class} {}>", state.describe()),
    }
}

/// Whether the session has been closed.
fn is_closed(rb_self: Session) -> bool {
    rb_self.state.get().is_none_or(SessionState::is_closed)
}

/// Raises the error that ended the session, if any (see [`end_session`]).
fn raise_resource_error(ruby: &Ruby, session: Session, state: &SessionState) -> Result<(), Error> {
    if let Some(recorded) = session.recorded(ruby) {
        return Err(recorded);
    }
    match state.ending() {
        None => Ok(()),
        Some(ending) => Err(end_session(
            ruby,
            session,
            state,
            ending,
            Default::default(),
        )?),
    }
}

/// The error that ends the session as `ending` (the core decides which and
/// words it), raised by every later call: the recorded one if any; ToolError
/// once the sandbox's `close` terminated it (H.4); otherwise, once the tree
/// is terminated (17.12) and output on its way has arrived, the TimeoutError
/// of its `timeout:` or the LimitError of a limit (memory, CPU, the combined
/// output bound, as for `execute_program`), carrying an Execution of the
/// output no `read` handed out (`taken`, what the read that passed an
/// output bound took, then what is left) and how it ended. A limit's kill
/// is reported as one denial (none if the memory monitor already did). An
/// interrupt during the termination comes back as `Err`.
pub(super) fn end_session(
    ruby: &Ruby,
    session: Session,
    state: &SessionState,
    ending: Ending,
    taken: (Vec<u8>, Vec<u8>),
) -> Result<Error, Error> {
    if let Some(recorded) = session.recorded(ruby) {
        return Ok(recorded);
    }
    if ending == Ending::ClosedByOwner {
        return Ok(ending_error(ruby, &ending, ruby.qnil().as_value()));
    }
    let process = state.process();
    let mut waiter = Waiter::new(process);
    // Terminating reaps the leader; a session no longer alive was reaped.
    if process.alive() {
        terminate_group(ruby, &mut waiter, process)?;
    }
    if ending.output_pending() {
        state.settle_output(|slice| waiter.wait(ruby, slice))?;
    }
    let execution = Execution::of(ruby, &state.outcome(taken));
    session.report_kill(ruby, state, &ending)?;
    let error = ending_error(ruby, &ending, execution);
    Ok(record(ruby, session, state, Some(ending), error))
}

/// Stores `error` as the session's first resource error (with its ending
/// in the core; None for a failure that is none), unless one was recorded
/// before; returns the first one.
pub(super) fn record(
    ruby: &Ruby,
    session: Session,
    state: &SessionState,
    ending: Option<Ending>,
    error: Error,
) -> Error {
    let Some(exception) = exception_of(ruby, &error) else {
        return error;
    };
    if session.resource_error.set(exception.into()).is_ok() {
        state.record(ending);
    }
    session.recorded(ruby).unwrap_or(error)
}

/// The exception object behind an error (instantiating Rust-made ones).
pub(super) fn exception_of(ruby: &Ruby, error: &Error) -> Option<Value> {
    match error.error_type() {
        ErrorType::Jump(_) => None,
        ErrorType::Exception(exception) => Some(exception.as_value()),
        ErrorType::Error(class, message) => class
            .new_instance((ruby.str_new(message),))
            .ok()
            .map(|exception| exception.as_value()),
    }
}

/// True while the leader is unreaped or any member of its group lives; raises a recorded resource error first.
/// A session the sandbox's `close` ended (H.4) or whose `timeout:` passed is simply not alive:
/// `read` and `wait` say why.
fn alive(ruby: &Ruby, rb_self: Session) -> Result<bool, Error> {
    let state = rb_self.state(ruby)?;
    if !state.ended_from_outside() {
        raise_resource_error(ruby, rb_self, state)?;
    }
    Ok(state.process().alive())
}

fn status_of(ruby: &Ruby, state: &SessionState) -> Option<Obj<SessionStatus>> {
    let pid = state.process().pid();
    let exit = state.process().exit()?;
    Some(ruby.obj_wrap(SessionStatus(core_session::SessionStatus { pid, exit })))
}

/// The timeout as given, as `to_s` shows it: a number as `inspect` shows
/// it, a String as it is, a caller's own object (a Rational) answers itself.
fn shown_timeout(value: Value) -> Result<String, Error> {
    if let Some(text) = RString::from_value(value) {
        return text.to_string();
    }
    match crate::ruby_api::execution::show_plain(value)? {
        Some(shown) => Ok(shown),
        None => value.funcall::<_, _, RString>("to_s", ())?.to_string(),
    }
}

/// Waits while the session is alive, calling `context.check!` about every 10 ms; terminates on timeout or error when `terminate` is true.
fn wait(
    ruby: &Ruby,
    rb_self: Session,
    args: &[Value],
) -> Result<Option<Obj<SessionStatus>>, Error> {
    let [timeout, context, terminate] =
        keywords(ruby, args, ["timeout", "context", "terminate"], 0)?;
    let timeout = timeout.filter(|value| !value.is_nil());
    let context = context.filter(|value| !value.is_nil());
    let terminate = terminate.is_none_or(|value| value.to_bool());
    let state = rb_self.state(ruby)?;
    let deadline = match timeout {
        None => Deadline::never(),
        Some(value) => Deadline::after_secs(validate_timeout(ruby, value)?),
    };
    let mut waiter = Waiter::new(state.process());
    let ended = state.wait_for_exit(
        deadline,
        || raise_resource_error(ruby, rb_self, state),
        || check_context(context),
        |slice| waiter.wait(ruby, slice),
    );
    match ended {
        Ok(WaitEnd::Exited) => {
            state.settle_output(|slice| waiter.wait(ruby, slice))?;
            // A limit that ended the program as it exited (the per-process
            // RLIMIT_CPU kills by signal) raises as the
            // cgroup's does, rather than reading as an ordinary exit.
            // So does a `timeout:` whose termination ended it just now.
            // (An output bound passed meanwhile is the next call's to raise.)
            let raises = match state.ending() {
                Some(Ending::TimedOut(_)) => true,
                Some(Ending::Limit(exceeded)) => !matches!(exceeded, LimitExceeded::Output { .. }),
                _ => false,
            };
            if raises {
                raise_resource_error(ruby, rb_self, state)?;
            }
            Ok(status_of(ruby, state))
        }
        Ok(WaitEnd::TimedOut) => {
            if terminate {
                terminate_group(ruby, &mut waiter, state.process())?;
            }
            let shown = timeout.map_or(Ok(String::new()), shown_timeout)?;
            Err(tool_error(ruby, core_session::timed_out_message(&shown)))
        }
        Err(error) => {
            if terminate {
                let _ = terminate_group(ruby, &mut waiter, state.process());
            }
            Err(error)
        }
    }
}

/// Terminates the group (TERM, 0.5 s grace, KILL) if alive, reaps the leader and returns its status.
fn terminate(ruby: &Ruby, rb_self: Session) -> Result<Option<Obj<SessionStatus>>, Error> {
    let Some(state) = rb_self.state.get().and_then(|state| state.owned().ok()) else {
        return Ok(None);
    };
    let mut waiter = Waiter::new(state.process());
    // Terminating reaps the leader; a session no longer alive was reaped.
    if state.process().alive() {
        terminate_group(ruby, &mut waiter, state.process())?;
    }
    Ok(status_of(ruby, state))
}

/// Terminates if alive, stops the memory monitor and closes every pipe; idempotent, returns nil.
fn close(ruby: &Ruby, rb_self: Session) -> Result<(), Error> {
    let Some(state) = rb_self.state.get().filter(|state| state.begin_close()) else {
        return Ok(());
    };
    let process = state.process();
    // A limit that ended the session and that no call reported yet is
    // reported now, before this close's own termination could read as one
    // (a SIGKILL is also how RLIMIT_CPU kills): one denial per kill.
    let mut interruption = record_unreported_kill(ruby, rb_self, state).err();
    let mut waiter = Waiter::new(process);
    if process.alive() {
        if let Err(error) = terminate_group(ruby, &mut waiter, process) {
            process.signal_group(Signal::KILL);
            let io_or_tool = error.is_kind_of(ruby.exception_io_error())
                || constants::class(ruby, "LittleGhost::ToolError")
                    .is_ok_and(|tool| error.is_kind_of(tool));
            if !io_or_tool {
                interruption = Some(error);
            }
        }
    }
    if let Err(error) = stop_monitor(ruby, rb_self) {
        process.signal_group(Signal::KILL);
        interruption.get_or_insert(error);
    }
    process.close_stdin();
    process.close_output();
    // L.2: nothing the session started outlives its close.
    nogvl::blocking(ruby, || process.release_tree())?;
    interruption.map_or(Ok(()), Err)
}

/// For `close`: a limit ended the session (memory, CPU, output bound) and no
/// call raised its error yet: the error is recorded (carrying the output no
/// `read` took) and its denial reported, as the next call would have.
fn record_unreported_kill(
    ruby: &Ruby,
    session: Session,
    state: &SessionState,
) -> Result<(), Error> {
    // Reaps a leader that already ended, so an RLIMIT_CPU kill shows.
    let _ = state.process().alive();
    match state.ending() {
        Some(ending @ Ending::Limit(_)) => {
            end_session(ruby, session, state, ending, (vec![], vec![])).map(drop)
        }
        _ => Ok(()),
    }
}
