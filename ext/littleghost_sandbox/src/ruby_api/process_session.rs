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

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use littleghost_sandbox_core::process::{
    self as core_process, capture::DEFAULT_OUTPUT_BYTES, group::GroupSignal as Signal,
    procfs::DefaultReader, running::session_failure_subject, write_stdin, CaptureMode, Launch,
    Owner, PollFlags, RunningProcess, SpawnOptions,
};
use magnus::{
    error::ErrorType,
    gc::Marker,
    method,
    prelude::*,
    scan_args::{get_kwargs, scan_args},
    typed_data::Obj,
    value::{Lazy, LazyId, Opaque, ReprValue},
    DataTypeFunctions, Error, Exception, Fixnum, Float, RClass, RHash, RObject, RString, Ruby,
    TypedData, Value,
};

use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::nogvl;
use crate::ruby_api::errors::{argument_error, core_result, tool_error};
use crate::ruby_api::execution::{define_data_class, DataShape};
use crate::ruby_api::process_runner::{
    check_context, positive_integer, reap_leader, terminate_group, validate_timeout, Waiter,
};

mod monitor;
mod status;

use monitor::{start_monitor, stop_monitor};
use status::SessionStatus;

/// Bytes taken from each stream per read pass (18.5).
const READ_PASS_BYTES: usize = 16 * 1024;

/// `ProcessSession::Chunk`, looked up once (forced in `init`, where it is defined).
static CHUNK_CLASS: Lazy<RClass> = Lazy::new(|ruby| {
    constants::class(ruby, "LittleGhost::Sandbox::ProcessSession::Chunk")
        .expect("ProcessSession::Chunk is defined at load")
});
static STDOUT_IVAR: LazyId = LazyId::new("@stdout");
static STDERR_IVAR: LazyId = LazyId::new("@stderr");
static EOF_IVAR: LazyId = LazyId::new("@eof");

/// A session launch as backends hand it over (18.1).
pub struct SessionRequest {
    pub argv: Vec<String>,
    pub environment: Vec<(String, String)>,
    pub inherit_environment: bool,
    pub chdir: Option<std::path::PathBuf>,
    pub output_bytes: u64,
    pub memory_bytes: Option<u64>,
    /// Any callable `(pid) -> bytes`; nil/None picks the platform reader.
    pub memory_reader: Option<Value>,
    pub cpu_seconds: Option<u64>,
    pub file_bytes: Option<u64>,
    pub spawn_options: SpawnOptions,
    /// The sandbox whose `close` terminates the session (H.4), if any.
    pub owner: Option<Owner>,
}

/// ProcessSession::Chunk: `stdout`, `stderr`, `eof`.
pub struct ChunkShape;

impl DataShape for ChunkShape {
    const MEMBERS: &'static [&'static str] = &["stdout", "stderr", "eof"];
    const OPTIONAL: &'static [&'static str] = &[];
    const EXTRAS: &'static [&'static str] = &[];
}

struct SessionState {
    process: RunningProcess,
    /// The argv as given (for `inspect`).
    command: Vec<String>,
    output_bytes: u64,
    closed: AtomicBool,
    monitor_stop: AtomicBool,
    /// The write mutex of 18.4, taken without holding a lock across GVL releases.
    writing: AtomicBool,
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

fn io_error(ruby: &Ruby, message: &str) -> Error {
    Error::new(ruby.exception_io_error(), message.to_string())
}

impl ProcessSession {
    /// The running state; IOError if the session never started or belongs
    /// to the parent of a forked process.
    fn state(&self, ruby: &Ruby) -> Result<&SessionState, Error> {
        let state = self
            .state
            .get()
            .ok_or_else(|| io_error(ruby, "process session was not started"))?;
        if !state.process.owned_here() {
            return Err(io_error(
                ruby,
                "process session belongs to the process that started it",
            ));
        }
        Ok(state)
    }
}

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
fn initialize(ruby: &Ruby, rb_self: Session, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    type Optional = (
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
    );
    let kw = get_kwargs::<_, (Value,), Optional, ()>(
        args.keywords,
        &["command"],
        &[
            "environment",
            "inherit_environment",
            "chdir",
            "output_bytes",
            "memory_bytes",
            "memory_reader",
            "cpu_seconds",
            "file_bytes",
        ],
    )?;
    let (command,) = kw.required;
    let (
        environment,
        inherit_environment,
        chdir,
        output_bytes,
        memory_bytes,
        memory_reader,
        cpu_seconds,
        file_bytes,
    ) = kw.optional;
    let optional_positive = |value: Option<Value>, name: &str| -> Result<Option<u64>, Error> {
        match value.filter(|value| !value.is_nil()) {
            None => Ok(None),
            Some(value) => positive_integer(ruby, value, name).map(Some),
        }
    };
    let memory_reader = memory_reader.filter(|value| !value.is_nil());
    if let Some(reader) = memory_reader {
        if !reader.respond_to("call", false)? {
            return Err(argument_error(ruby, "memory_reader must respond to call"));
        }
    }
    let request = SessionRequest {
        argv: convert::argv(ruby, command)?,
        environment: convert::environment(ruby, environment)?,
        inherit_environment: inherit_environment.is_some_and(|value| value.to_bool()),
        chdir: convert::expanded_path(ruby, chdir, "chdir")?,
        output_bytes: match output_bytes {
            None => DEFAULT_OUTPUT_BYTES,
            Some(value) => positive_integer(ruby, value, "output_bytes")?,
        },
        memory_bytes: optional_positive(memory_bytes, "memory_bytes")?,
        memory_reader,
        cpu_seconds: optional_positive(cpu_seconds, "cpu_seconds")?,
        file_bytes: optional_positive(file_bytes, "file_bytes")?,
        spawn_options: SpawnOptions::default(),
        owner: None,
    };
    setup(ruby, rb_self, request)
}

fn setup(ruby: &Ruby, session: Session, request: SessionRequest) -> Result<(), Error> {
    core_result(ruby, core_process::validate_argv(&request.argv))?;
    core_result(
        ruby,
        core_process::validate_environment(&request.environment),
    )?;
    if session.state.get().is_some() {
        return Err(Error::new(
            ruby.exception_runtime_error(),
            "process session already started",
        ));
    }
    // 18.9: the reader is chosen before anything is spawned.
    let default_reader = match (request.memory_bytes, request.memory_reader) {
        (Some(_), None) => Some(core_result(ruby, DefaultReader::choose())?),
        _ => None,
    };
    let launch = Launch {
        argv: request.argv,
        environment: request.environment,
        inherit_environment: request.inherit_environment,
        chdir: request.chdir,
        cpu_seconds: request.cpu_seconds,
        file_bytes: request.file_bytes,
        spawn_options: request.spawn_options,
    };
    let mode = CaptureMode::Combined {
        limit: request.output_bytes,
    };
    let owner = request.owner.as_ref();
    let started = nogvl::blocking(ruby, || {
        RunningProcess::start_owned(&launch, mode, true, owner)
    })?;
    let process = match started {
        Ok(process) => process,
        Err(error) => {
            let subject = session_failure_subject(&error, &launch.argv[0]);
            let errno: Value = ruby
                .exception_system_call_error()
                .funcall("new", (subject, error.errno()))?;
            return Err(Error::from(Exception::try_convert(errno)?));
        }
    };
    let state = SessionState {
        process,
        command: launch.argv.clone(),
        output_bytes: request.output_bytes,
        closed: AtomicBool::new(false),
        monitor_stop: AtomicBool::new(false),
        writing: AtomicBool::new(false),
    };
    if session.state.set(state).is_err() {
        return Err(Error::new(
            ruby.exception_runtime_error(),
            "process session already started",
        ));
    }
    if let Some(limit) = request.memory_bytes {
        start_monitor(ruby, session, request.memory_reader, default_reader, limit)?;
    }
    Ok(())
}

/// The OS pid of the child, which is also its process group id.
fn pid(ruby: &Ruby, rb_self: Session) -> Result<i32, Error> {
    Ok(rb_self.state(ruby)?.process.pid())
}

/// `#<LittleGhost::Sandbox::ProcessSession pid=N alive=true command=["sh", "-c", ...]>`
/// (issue 12 item 8); never raises, so a failed session still inspects.
fn inspect(rb_self: Session) -> String {
    let class = "LittleGhost::Sandbox::ProcessSession";
    let Some(state) = rb_self.state.get() else {
        return format!("#<{class} not started>");
    };
    let closed = if state.closed.load(Ordering::SeqCst) {
        " closed"
    } else {
        ""
    };
    // A forked copy must not reap or signal the parent's child.
    let alive = state.process.owned_here() && state.process.alive();
    format!(
        "#<{class} pid={} alive={alive}{closed} command={:?}>",
        state.process.pid(),
        state.command
    )
}

/// Whether the session has been closed.
fn is_closed(rb_self: Session) -> bool {
    rb_self
        .state
        .get()
        .is_none_or(|state| state.closed.load(Ordering::SeqCst))
}

/// Raises a recorded resource error (memory, output bound), if any, or
/// ToolError once the sandbox's `close` terminated the session (H.4).
fn raise_resource_error(ruby: &Ruby, session: Session, state: &SessionState) -> Result<(), Error> {
    if let Some(recorded) = session.resource_error(ruby) {
        return Err(Error::from(Exception::try_convert(recorded)?));
    }
    if state.process.terminated_by_owner() {
        return Err(tool_error(ruby, crate::ruby_api::ownership::CLOSED_MESSAGE));
    }
    if state.process.overflowed() {
        let error = tool_error(
            ruby,
            format!("Program output exceeded {} bytes", state.output_bytes),
        );
        if let Some(exception) = exception_of(ruby, &error) {
            record(session, exception)?;
            return Err(Error::from(Exception::try_convert(exception)?));
        }
        return Err(error);
    }
    Ok(())
}

/// Stores the first resource error; later ones are dropped.
pub(super) fn record(session: Session, exception: Value) -> Result<(), Error> {
    session
        .refs()
        .resource_error
        .get_or_insert_with(|| exception.into());
    Ok(())
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
    Ok(state.process.alive())
}

/// True while the leader is unreaped or any member of its group lives; raises a recorded resource error first.
fn alive(ruby: &Ruby, rb_self: Session) -> Result<bool, Error> {
    let state = rb_self.state(ruby)?;
    alive_checked(ruby, rb_self, state)
}

/// Releases the write flag when dropped.
struct WriteTurn<'a>(&'a AtomicBool);

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Writes `String(value)` to the child's stdin (unbuffered, so already flushed) and returns the byte count.
fn write(ruby: &Ruby, rb_self: Session, value: Value) -> Result<usize, Error> {
    let state = rb_self.state(ruby)?;
    if state.closed.load(Ordering::SeqCst) {
        return Err(io_error(ruby, "process session is closed"));
    }
    if state.process.terminated_by_owner() {
        return Err(tool_error(ruby, crate::ruby_api::ownership::CLOSED_MESSAGE));
    }
    let text: RString = ruby.module_kernel().funcall("String", (value,))?;
    // SAFETY: copied before any other Ruby call.
    let bytes = unsafe { text.as_slice() }.to_vec();
    let mut waiter = Waiter::new(&state.process);
    while state
        .writing
        .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        waiter.wait(ruby, Duration::from_millis(1))?;
    }
    let _turn = WriteTurn(&state.writing);
    let mut written = 0;
    while written < bytes.len() {
        if state.closed.load(Ordering::SeqCst) {
            return Err(io_error(ruby, "process session is closed"));
        }
        let Some(stdin) = state.process.stdin() else {
            return Err(io_error(ruby, "process session stdin is closed"));
        };
        match write_stdin(&stdin, &bytes[written..]) {
            Ok(count) => written += count,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                waiter.wait_for(
                    ruby,
                    core_process::POLL_INTERVAL,
                    Some((stdin.as_fd(), PollFlags::OUT)),
                )?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(io_error(ruby, "sandboxed process has exited")),
        }
    }
    Ok(written)
}

/// Closes the child's stdin so it reads EOF; idempotent.
fn close_write(ruby: &Ruby, rb_self: Session) -> Result<(), Error> {
    rb_self.state(ruby)?.process.close_stdin();
    Ok(())
}

fn binary(ruby: &Ruby, bytes: &[u8]) -> RString {
    let string = ruby.str_from_slice(bytes);
    string.freeze();
    string
}

/// `Float(timeout)`, finite and ≥ 0 (ArgumentError otherwise); nil or absent means 0 (one pass).
fn read_timeout(ruby: &Ruby, args: &[Value]) -> Result<f64, Error> {
    let timeout = match args {
        [] => None,
        // `read(timeout: x)`, the polling call, without the general keyword
        // parser; anything else (a positional Hash, other keys) goes through
        // it for the usual errors.
        // SAFETY: plain C API call with the GVL held, inside this method call.
        [hash] if unsafe { rb_sys::rb_keyword_given_p() } != 0 => match RHash::from_value(*hash) {
            Some(hash) if hash.len() == 1 => match hash.get(ruby.to_symbol("timeout")) {
                Some(value) => Some(value),
                None => parse_timeout_keyword(args)?,
            },
            _ => parse_timeout_keyword(args)?,
        },
        _ => parse_timeout_keyword(args)?,
    };
    let seconds = match timeout.filter(|value| !value.is_nil()) {
        None => 0.0,
        // What `Float()` returns for these, without a Ruby call (round trips poll with 0).
        Some(value) if Fixnum::from_value(value).is_some() => {
            Fixnum::from_value(value).map_or(0.0, |number| number.to_i64() as f64)
        }
        Some(value) if Float::from_value(value).is_some() => {
            Float::from_value(value).map_or(0.0, |number| number.to_f64())
        }
        Some(value) => ruby
            .module_kernel()
            .funcall::<_, _, f64>("Float", (value,))?,
    };
    // H.6: like `wait`, a timeout that can never pass (infinite, NaN) or is
    // negative is misuse, not a request to block forever or poll once.
    if seconds.is_finite() && seconds >= 0.0 {
        Ok(seconds)
    } else {
        Err(argument_error(
            ruby,
            "timeout must be a finite number of seconds, 0 or more",
        ))
    }
}

/// The `timeout:` keyword of `read`, through magnus's keyword parser.
fn parse_timeout_keyword(args: &[Value]) -> Result<Option<Value>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kw = get_kwargs::<_, (), (Option<Value>,), ()>(args.keywords, &[], &["timeout"])?;
    Ok(kw.optional.0)
}

/// A frozen Chunk, as `Chunk.new(stdout:, stderr:, eof:)` would build it from
/// frozen Strings, without the Ruby dispatch and keyword parsing (this is on
/// every poll of a round trip).
fn new_chunk(ruby: &Ruby, stdout: &[u8], stderr: &[u8], eof: bool) -> Result<Value, Error> {
    let chunk = RObject::try_convert(ruby.get_inner(&CHUNK_CLASS).obj_alloc()?)?;
    chunk.ivar_set(*STDOUT_IVAR, binary(ruby, stdout))?;
    chunk.ivar_set(*STDERR_IVAR, binary(ruby, stderr))?;
    chunk.ivar_set(*EOF_IVAR, eof)?;
    chunk.freeze();
    Ok(chunk.as_value())
}

/// Collects output for up to `timeout` seconds (one pass for 0) and returns a Chunk; raises once the combined output bound is passed.
fn read(ruby: &Ruby, rb_self: Session, args: &[Value]) -> Result<Value, Error> {
    let timeout = read_timeout(ruby, args)?;
    let state = rb_self.state(ruby)?;
    if state.closed.load(Ordering::SeqCst) {
        return Err(io_error(ruby, "process session is closed"));
    }
    raise_resource_error(ruby, rb_self, state)?;
    let deadline = Duration::try_from_secs_f64(timeout)
        .ok()
        .and_then(|limit| Instant::now().checked_add(limit));
    let mut waiter = Waiter::new(&state.process);
    state.process.try_reap();
    settle_output(ruby, &mut waiter, state)?;
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let both_closed = loop {
        let chunk = state.process.read_chunk(READ_PASS_BYTES);
        stdout.extend_from_slice(&chunk.stdout);
        stderr.extend_from_slice(&chunk.stderr);
        if state.process.overflowed() {
            // 18.5: terminate, then raise (the background already sent TERM).
            terminate_group(ruby, &mut waiter, &state.process)?;
            raise_resource_error(ruby, rb_self, state)?;
        }
        let now = Instant::now();
        if chunk.stdout_closed && chunk.stderr_closed {
            // Pipes close a moment before the leader becomes reapable; within
            // the timeout, give the exit a chance so `eof` reflects it.
            match deadline {
                Some(deadline) if now < deadline && state.process.alive() => {
                    waiter.wait(ruby, core_process::POLL_INTERVAL.min(deadline - now))?;
                    continue;
                }
                _ => break true,
            }
        }
        match deadline {
            Some(deadline) if now < deadline => {
                waiter.wait(ruby, core_process::POLL_INTERVAL.min(deadline - now))?
            }
            Some(_) => break false,
            None => waiter.wait(ruby, core_process::POLL_INTERVAL)?,
        }
    };
    let eof = both_closed && !alive_checked(ruby, rb_self, state)?;
    if stdout.is_empty() && stderr.is_empty() && !both_closed {
        // Callers poll `read(timeout: 0)` for a reply (a positive timeout
        // waits out its deadline, 18.5). Spinning without yielding keeps the
        // child off a busy CPU; an empty pass steps aside for a moment.
        core_process::yield_cpu();
    }
    new_chunk(ruby, &stdout, &stderr, eof)
}

/// Once the whole group is gone, EOF on the pipes is a moment away (unless a
/// process outside the group holds them): wait up to 100 ms for it, so that
/// `wait` followed by `read` sees everything the child wrote.
fn settle_output(ruby: &Ruby, waiter: &mut Waiter, state: &SessionState) -> Result<(), Error> {
    let give_up = Instant::now() + Duration::from_millis(100);
    while !state.process.output_complete()
        && state.process.exit().is_some()
        && !state.process.group_alive()
    {
        let now = Instant::now();
        if now >= give_up {
            break;
        }
        waiter.wait(ruby, core_process::POLL_INTERVAL.min(give_up - now))?;
    }
    Ok(())
}

fn status_of(ruby: &Ruby, state: &SessionState) -> Option<Obj<SessionStatus>> {
    state.process.exit().map(|exit| {
        ruby.obj_wrap(SessionStatus {
            pid: state.process.pid(),
            exit,
        })
    })
}

enum Step {
    Exited,
    TimedOut,
    Waiting,
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
        None => None,
        Some(value) => {
            let seconds = validate_timeout(ruby, value)?;
            Duration::try_from_secs_f64(seconds)
                .ok()
                .and_then(|limit| Instant::now().checked_add(limit))
        }
    };
    let mut waiter = Waiter::new(&state.process);
    loop {
        let step = (|| -> Result<Step, Error> {
            if !alive_checked(ruby, rb_self, state)? {
                return Ok(Step::Exited);
            }
            check_context(context)?;
            let now = Instant::now();
            match deadline {
                Some(deadline) if now >= deadline => Ok(Step::TimedOut),
                Some(deadline) => {
                    waiter.wait(ruby, core_process::POLL_INTERVAL.min(deadline - now))?;
                    Ok(Step::Waiting)
                }
                None => {
                    waiter.wait(ruby, core_process::POLL_INTERVAL)?;
                    Ok(Step::Waiting)
                }
            }
        })();
        match step {
            Ok(Step::Waiting) => {}
            Ok(Step::Exited) => {
                settle_output(ruby, &mut waiter, state)?;
                return Ok(status_of(ruby, state));
            }
            Ok(Step::TimedOut) => {
                if terminate {
                    terminate_group(ruby, &mut waiter, &state.process)?;
                }
                let shown: RString =
                    timeout.map_or(Ok(ruby.str_new("")), |value| value.funcall("to_s", ()))?;
                return Err(tool_error(
                    ruby,
                    format!("Program timed out after {} seconds", shown.to_string()?),
                ));
            }
            Err(error) => {
                if terminate {
                    let _ = terminate_group(ruby, &mut waiter, &state.process);
                }
                return Err(error);
            }
        }
    }
}

/// Terminates the group (TERM, 0.5 s grace, KILL) if alive, reaps the leader and returns its status.
fn terminate(ruby: &Ruby, rb_self: Session) -> Result<Option<Obj<SessionStatus>>, Error> {
    let Some(state) = rb_self.state.get() else {
        return Ok(None);
    };
    let state = if state.process.owned_here() {
        state
    } else {
        return Ok(None);
    };
    let mut waiter = Waiter::new(&state.process);
    if state.process.alive() {
        terminate_group(ruby, &mut waiter, &state.process)?;
    }
    reap_leader(ruby, &mut waiter, &state.process);
    Ok(status_of(ruby, state))
}

/// Terminates if alive, stops the memory monitor and closes every pipe; idempotent, returns nil.
fn close(ruby: &Ruby, rb_self: Session) -> Result<(), Error> {
    let Some(state) = rb_self.state.get() else {
        return Ok(());
    };
    if !state.process.owned_here() || state.closed.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let mut waiter = Waiter::new(&state.process);
    let mut interruption = None;
    if state.process.alive() {
        if let Err(error) = terminate_group(ruby, &mut waiter, &state.process) {
            state.process.signal_group(Signal::KILL);
            let io_or_tool = error.is_kind_of(ruby.exception_io_error())
                || constants::class(ruby, "LittleGhost::ToolError")
                    .is_ok_and(|tool| error.is_kind_of(tool));
            if !io_or_tool {
                interruption = Some(error);
            }
        }
    }
    state.monitor_stop.store(true, Ordering::SeqCst);
    if let Err(error) = stop_monitor(ruby, rb_self) {
        state.process.signal_group(Signal::KILL);
        interruption.get_or_insert(error);
    }
    state.process.close_stdin();
    state.process.close_output();
    interruption.map_or(Ok(()), Err)
}
