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
//! thread, the memory reader) are held by the TypedData struct and marked.

use std::sync::{Mutex, OnceLock};

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
    scan_args::{get_kwargs, scan_args},
    typed_data::Obj,
    value::{Lazy, Opaque, ReprValue},
    DataTypeFunctions, Error, Exception, RClass, RHash, RString, Ruby, TypedData, Value,
};

use crate::helpers::constants;
use crate::helpers::errors::tool_error;
use crate::helpers::nogvl;
use crate::ruby_api::execution::{define_data_class, DataShape};
use crate::ruby_api::process_runner::{
    check_context, reap_leader, terminate_group, validate_timeout, Waiter,
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

/// Ruby objects a session holds: kept in Rust and marked for the GC (no
/// hidden instance variables).
#[derive(Default)]
struct RubyRefs {
    /// The first resource error (memory, output bound, supervisor failure).
    resource_error: Option<Opaque<Value>>,
    /// The memory monitor thread and the reader it calls (18.9).
    monitor: Option<Opaque<Value>>,
    memory_reader: Option<Opaque<Value>>,
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
    /// The limit kill's one denial was reported (by the memory monitor as
    /// it acted, or with the error): never a second.
    kill_reported: std::sync::atomic::AtomicBool,
    /// Only touched with the GVL held; the lock is never contended.
    refs: Mutex<RubyRefs>,
}

impl DataTypeFunctions for ProcessSession {
    fn mark(&self, marker: &Marker) {
        let refs = self
            .refs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for value in [refs.resource_error, refs.monitor, refs.memory_reader]
            .into_iter()
            .flatten()
        {
            marker.mark(value);
        }
    }
}

impl ProcessSession {
    fn refs(&self) -> std::sync::MutexGuard<'_, RubyRefs> {
        self.refs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// True for the one caller that reports the limit kill's denial.
    pub(super) fn claim_kill_report(&self) -> bool {
        !self
            .kill_reported
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// The recorded resource error, if any.
    fn resource_error(&self, ruby: &Ruby) -> Option<Value> {
        self.refs()
            .resource_error
            .map(|value| ruby.get_inner(value))
    }

    /// The monitor thread, if one was started.
    pub(super) fn monitor_thread(&self, ruby: &Ruby) -> Option<Value> {
        self.refs().monitor.map(|value| ruby.get_inner(value))
    }

    /// The memory reader given to the session, if any.
    pub(super) fn memory_reader(&self, ruby: &Ruby) -> Option<Value> {
        let reader = self.refs().memory_reader.map(|value| ruby.get_inner(value));
        reader.filter(|value| !value.is_nil())
    }

    /// Keeps the monitor thread and its reader reachable.
    pub(super) fn set_monitor(&self, thread: Value, reader: Value) {
        let mut refs = self.refs();
        refs.monitor = Some(thread.into());
        refs.memory_reader = Some(reader.into());
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

/// Raises a recorded resource error (memory, output bound), if any, or
/// ToolError once the sandbox's `close` terminated the session (H.4).
fn raise_resource_error(ruby: &Ruby, session: Session, state: &SessionState) -> Result<(), Error> {
    if let Some(recorded) = session.resource_error(ruby) {
        return Err(Error::from(Exception::try_convert(recorded)?));
    }
    let error = match state.resource_problem() {
        None => return Ok(()),
        // L.2, reached once: the recorded error answers every later call.
        Some(SessionError::Limit(exceeded)) => {
            limit_end_error(ruby, session, state, exceeded, Default::default())?
        }
        Some(SessionError::ClosedByOwner) => {
            return Err(session_error(ruby, SessionError::ClosedByOwner))
        }
        Some(SessionError::TimedOut(message)) => timed_out(ruby, state, message)?,
        Some(SessionError::OutputExceeded(bytes)) => {
            let exceeded = littleghost_sandbox_core::limits::LimitExceeded::Output { bytes };
            limit_end_error(ruby, session, state, exceeded, Default::default())?
        }
        Some(problem) => session_error(ruby, problem),
    };
    match record(ruby, session, &error) {
        Some(exception) => Err(Error::from(Exception::try_convert(exception)?)),
        None => Err(error),
    }
}

/// The session's `timeout:` passed: once the background termination has
/// ended its tree (finished here, so no output is still on its way), the
/// TimeoutError `execute_program` raises, carrying what the session wrote and
/// nobody read yet and how it ended. Not a denial, as for `execute_program`.
fn timed_out(ruby: &Ruby, state: &SessionState, message: String) -> Result<Error, Error> {
    let process = state.process();
    let mut waiter = Waiter::new(process);
    if process.alive() {
        terminate_group(ruby, &mut waiter, process)?;
    }
    state.settle_output(|slice| waiter.wait(ruby, slice))?;
    let unread = process.read_chunk(usize::MAX);
    let render = |bytes: &[u8]| littleghost_sandbox_core::process::capture::render(bytes, false);
    let exit = process.exit();
    let execution = crate::ruby_api::execution::Execution::wrap(
        ruby,
        &render(&unread.stdout),
        &render(&unread.stderr),
        exit.and_then(|exit| exit.code()),
        exit.and_then(|exit| exit.signal()),
    );
    Ok(crate::ruby_api::process_runner::timeout_error_message(
        ruby, message, execution,
    ))
}

/// A limit ended the session: memory (a cgroup's or the
/// sampled one, 18.9), CPU (a cgroup's or the per-process `RLIMIT_CPU`), or
/// its combined output bound (18.5). One outcome for all three, as for
/// `execute_program`: the tree is terminated (17.12) and the error is a
/// LimitError with the L.2 message carrying an Execution of the output no
/// `read` handed out (`taken`, what the read that passed an output bound
/// took, then what is left, up to the bound) and how the program ended; the
/// sandbox that started it records one denial for the kill (none if the
/// memory monitor already reported it). Returns the error to record; an
/// interrupt during the termination comes back as `Err`.
pub(super) fn limit_end_error(
    ruby: &Ruby,
    session: Session,
    state: &SessionState,
    exceeded: littleghost_sandbox_core::limits::LimitExceeded,
    taken: (Vec<u8>, Vec<u8>),
) -> Result<Error, Error> {
    let process = state.process();
    let mut waiter = Waiter::new(process);
    if process.alive() {
        terminate_group(ruby, &mut waiter, process)?;
    }
    reap_leader(ruby, &mut waiter, process);
    if !matches!(
        exceeded,
        littleghost_sandbox_core::limits::LimitExceeded::Output { .. }
    ) {
        // Output the program wrote before it was ended is still on its way
        // (past an output bound nothing more is pulled: nothing to wait for).
        state.settle_output(|slice| waiter.wait(ruby, slice))?;
    }
    let (mut stdout, mut stderr) = taken;
    let (rest_out, rest_err) = state.unread_output();
    stdout.extend_from_slice(&rest_out);
    stderr.extend_from_slice(&rest_err);
    let exit = process.exit();
    let execution = crate::ruby_api::execution::Execution::wrap(
        ruby,
        &String::from_utf8_lossy(&stdout),
        &String::from_utf8_lossy(&stderr),
        exit.and_then(|exit| exit.code()),
        exit.and_then(|exit| exit.signal()),
    );
    let denials = session
        .denials
        .get()
        .filter(|_| session.claim_kill_report());
    crate::ruby_api::process_runner::limit_kill(ruby, denials, exceeded, execution)
}

/// Stores the first resource error (later ones are dropped) and returns
/// that first one's exception object.
pub(super) fn record(ruby: &Ruby, session: Session, error: &Error) -> Option<Value> {
    let exception = exception_of(ruby, error)?;
    let first = *session
        .refs()
        .resource_error
        .get_or_insert_with(|| exception.into());
    Some(ruby.get_inner(first))
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

fn alive_checked(ruby: &Ruby, session: Session, state: &SessionState) -> Result<bool, Error> {
    raise_resource_error(ruby, session, state)?;
    Ok(state.process().alive())
}

/// True while the leader is unreaped or any member of its group lives; raises a recorded resource error first.
/// A session the sandbox's `close` ended (H.4) or whose `timeout:` passed is simply not alive:
/// `read` and `wait` say why.
fn alive(ruby: &Ruby, rb_self: Session) -> Result<bool, Error> {
    let state = rb_self.state(ruby)?;
    let ended_from_outside = matches!(
        state.resource_problem(),
        Some(SessionError::ClosedByOwner | SessionError::TimedOut(_))
    );
    if ended_from_outside && !recorded_other_than_timeout(ruby, rb_self) {
        return Ok(state.process().alive());
    }
    alive_checked(ruby, rb_self, state)
}

/// A resource error other than the session's own TimeoutError was recorded
/// (a memory limit that ended it first): `alive?` still raises that one.
fn recorded_other_than_timeout(ruby: &Ruby, session: Session) -> bool {
    let timeout = constants::class(ruby, "LittleGhost::Sandbox::TimeoutError");
    session
        .resource_error(ruby)
        .is_some_and(|recorded| match timeout {
            Ok(timeout) => !recorded.is_kind_of(timeout),
            Err(_) => true,
        })
}

fn status_of(ruby: &Ruby, state: &SessionState) -> Option<Obj<SessionStatus>> {
    let pid = state.process().pid();
    let exit = state.process().exit()?;
    Some(ruby.obj_wrap(SessionStatus(core_session::SessionStatus { pid, exit })))
}

/// The timeout as given, as `to_s` shows it (a caller's own object answers itself).
fn shown_timeout(value: Value) -> Result<String, Error> {
    if let Some(number) = magnus::Fixnum::from_value(value) {
        return Ok(number.to_i64().to_string());
    }
    if let Some(number) = magnus::Float::from_value(value) {
        return Ok(littleghost_sandbox_core::process::arguments::float_text(
            number.to_f64(),
        ));
    }
    if let Some(text) = RString::from_value(value) {
        return text.to_string();
    }
    value.funcall::<_, _, RString>("to_s", ())?.to_string()
}

/// Waits while the session is alive, calling `context.check!` about every 10 ms; terminates on timeout or error when `terminate` is true.
fn wait(
    ruby: &Ruby,
    rb_self: Session,
    args: &[Value],
) -> Result<Option<Obj<SessionStatus>>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kw = get_kwargs::<_, (), (Option<Value>, Option<Value>, Option<Value>), ()>(
        args.keywords,
        &[],
        &["timeout", "context", "terminate"],
    )?;
    let (timeout, context, terminate) = kw.optional;
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
            let problem = state.resource_problem();
            if matches!(
                problem,
                Some(SessionError::Limit(_) | SessionError::TimedOut(_))
            ) {
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
    if state.process().alive() {
        terminate_group(ruby, &mut waiter, state.process())?;
    }
    reap_leader(ruby, &mut waiter, state.process());
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
    state.stop_monitor();
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
    if session.resource_error(ruby).is_some() {
        return Ok(());
    }
    // Reaps a leader that already ended, so an RLIMIT_CPU kill shows.
    let _ = state.process().alive();
    let exceeded = match state.resource_problem() {
        Some(SessionError::Limit(exceeded)) => exceeded,
        Some(SessionError::OutputExceeded(bytes)) => {
            littleghost_sandbox_core::limits::LimitExceeded::Output { bytes }
        }
        _ => return Ok(()),
    };
    let error = limit_end_error(ruby, session, state, exceeded, Default::default())?;
    record(ruby, session, &error);
    Ok(())
}
