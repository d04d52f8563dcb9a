//! `LittleGhost::Sandboxes::Remote::Session`: a program started on the
//! daemon, with the methods of `ProcessSession` (docs/spec.md §18) that
//! sandboxd's protocol can carry: `write`, `close_write`, `read`, `wait`,
//! `terminate`, `close`. The core's `remote::Session` holds the stream;
//! this file converts.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use littleghost_sandbox_core::process::running::Exit;
use littleghost_sandbox_core::process::session::SessionStatus as CoreStatus;
use littleghost_sandbox_core::remote::{self, session::Signal};
use magnus::{
    method, prelude::*, scan_args::scan_args, typed_data::Obj, Error, RClass, RHash, Ruby, Value,
};

use crate::helpers::args::{keywords, kwargs};
use crate::helpers::{constants, nogvl};
use crate::ruby_api::process_runner::{check_context, kernel_float};
use crate::ruby_api::process_session::status::SessionStatus;
use crate::ruby_api::remote::call::{raised, wait as wait_call};

/// One slice of a wait without the GVL.
const SLICE: Duration = Duration::from_millis(20);
/// 17.12: how long `terminate` lets TERM work before KILL.
const GRACE: Duration = Duration::from_millis(500);

#[magnus::wrap(
    class = "LittleGhost::Sandboxes::Remote::Session",
    free_immediately,
    size
)]
pub struct Session {
    session: Arc<remote::Session>,
    closed: Cell<bool>,
}

pub fn init(ruby: &Ruby, remote: RClass) -> Result<(), Error> {
    let class = remote.define_class("Session", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_method("pid", method!(|s: &Session| s.session.pid, 0))?;
    class.define_method("alive?", method!(|s: &Session| !s.session.ended(), 0))?;
    class.define_method("write", method!(write, 1))?;
    class.define_method("close_write", method!(close_write, 0))?;
    class.define_method("read", method!(read, -1))?;
    class.define_method("wait", method!(wait, -1))?;
    class.define_method("terminate", method!(terminate, 0))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method(
        "closed?",
        method!(|s: &Session| s.closed.get() || s.session.closed(), 0),
    )?;
    class.define_method("inspect", method!(inspect, 0))?;
    Ok(())
}

/// The Ruby object of a started session.
pub fn wrap(ruby: &Ruby, session: Arc<remote::Session>) -> Value {
    ruby.obj_wrap(Session {
        session,
        closed: Cell::new(false),
    })
    .as_value()
}

fn open(ruby: &Ruby, rb_self: &Session) -> Result<(), Error> {
    if rb_self.closed.get() || rb_self.session.closed() {
        return Err(Error::new(ruby.exception_io_error(), "session is closed"));
    }
    Ok(())
}

/// Writes `value.to_s` to the program's stdin; returns its byte size.
fn write(ruby: &Ruby, rb_self: &Session, value: Value) -> Result<usize, Error> {
    open(ruby, rb_self)?;
    let text: magnus::RString = value.funcall("to_s", ())?;
    let bytes = crate::helpers::convert::bytes(text);
    let length = bytes.len();
    wait_call(ruby, rb_self.session.write(bytes), None)?;
    Ok(length)
}

/// Closes the program's stdin (it reads end of file); nil.
fn close_write(ruby: &Ruby, rb_self: &Session) -> Result<(), Error> {
    open(ruby, rb_self)?;
    wait_call(ruby, rb_self.session.close_write(), None)
}

/// Waits without the GVL until `done` or `limit`, in slices, checking interrupts and `context`.
fn waiting<T>(
    ruby: &Ruby,
    limit: Option<Duration>,
    context: Option<Value>,
    mut step: impl FnMut(Duration) -> Option<T>,
) -> Result<Option<T>, Error> {
    let started = Instant::now();
    let wake = nogvl::Wake::new(-1);
    loop {
        let left = limit.map(|limit| limit.saturating_sub(started.elapsed()));
        let slice = left.map_or(SLICE, |left| left.min(SLICE));
        let got = nogvl::without_gvl(ruby, || step(slice), &wake)?;
        nogvl::check_interrupts(ruby)?;
        wake.reset();
        if let Some(Some(value)) = got {
            return Ok(Some(value));
        }
        if left.is_some_and(|left| left.is_zero()) {
            return Ok(None);
        }
        check_context(context)?;
    }
}

/// `read(timeout: 0)` → ProcessSession::Chunk of what arrived within the timeout.
fn read(ruby: &Ruby, rb_self: &Session, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let values = keywords(ruby, args.keywords, &[], &["timeout"])?;
    let seconds = match values[0].filter(|v| !v.is_nil()) {
        Some(value) => {
            let seconds = kernel_float(value)?;
            littleghost_sandbox_core::process::arguments::read_timeout_seconds(seconds)
                .map_err(|message| crate::helpers::errors::argument_error(ruby, message))?
        }
        None => 0.0,
    };
    let session = &rb_self.session;
    let chunk = waiting(
        ruby,
        Some(Duration::from_secs_f64(seconds)),
        None,
        |slice| {
            let chunk = session.read(slice);
            let something = !chunk.stdout.is_empty() || !chunk.stderr.is_empty() || chunk.eof;
            something.then_some(chunk)
        },
    )?
    .unwrap_or_default();
    let text = |bytes: &[u8]| ruby.str_new(&String::from_utf8_lossy(bytes)).as_value();
    let options = kwargs(
        ruby,
        &[
            ("stdout", text(&chunk.stdout)),
            ("stderr", text(&chunk.stderr)),
            ("eof", magnus::IntoValue::into_value_with(chunk.eof, ruby)),
        ],
    )?;
    let class = constants::class(ruby, "LittleGhost::Sandbox::ProcessSession::Chunk")?;
    class.funcall("new", (magnus::KwArgs(options),))
}

/// A Status of the daemon's exit code (the status, or 128 + the signal, as the daemon reports it).
fn status(ruby: &Ruby, rb_self: &Session, code: i32) -> Obj<SessionStatus> {
    ruby.obj_wrap(SessionStatus(CoreStatus {
        pid: rb_self.session.pid,
        exit: Exit::Status((code & 0xff) << 8),
    }))
}

fn ended(
    ruby: &Ruby,
    rb_self: &Session,
    end: Result<i32, remote::Error>,
) -> Result<Obj<SessionStatus>, Error> {
    end.map(|code| status(ruby, rb_self, code))
        .map_err(|error| raised(ruby, error))
}

/// `wait(timeout: nil, context: nil, terminate: false)` → Status, or nil
/// when the timeout passed first (after terminating it, with `terminate: true`).
fn wait(
    ruby: &Ruby,
    rb_self: &Session,
    args: &[Value],
) -> Result<Option<Obj<SessionStatus>>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let values = keywords(
        ruby,
        args.keywords,
        &[],
        &["timeout", "context", "terminate"],
    )?;
    let limit = match values[0].filter(|v| !v.is_nil()) {
        Some(value) => Some(Duration::from_secs_f64(
            crate::ruby_api::process_runner::validate_timeout(ruby, value)?,
        )),
        None => None,
    };
    let context = values[1];
    let session = &rb_self.session;
    match waiting(ruby, limit, context, |slice| session.wait(slice))? {
        Some(end) => ended(ruby, rb_self, end).map(Some),
        None if values[2].is_some_and(|v| v.to_bool()) => terminate(ruby, rb_self).map(Some),
        None => Ok(None),
    }
}

/// 17.12 over the protocol: TERM to the group, KILL after the grace; the Status.
fn terminate(ruby: &Ruby, rb_self: &Session) -> Result<Obj<SessionStatus>, Error> {
    let session = &rb_self.session;
    if let Some(end) = session.wait(Duration::ZERO) {
        return ended(ruby, rb_self, end);
    }
    wait_call(ruby, session.signal(Signal::Terminate), None)?;
    if let Some(end) = waiting(ruby, Some(GRACE), None, |slice| session.wait(slice))? {
        return ended(ruby, rb_self, end);
    }
    wait_call(ruby, session.signal(Signal::Kill), None)?;
    let end = waiting(ruby, None, None, |slice| session.wait(slice))?.expect("no limit");
    ended(ruby, rb_self, end)
}

/// Ends the session: the stream is dropped and the daemon ends the program; nil.
fn close(rb_self: &Session) {
    rb_self.closed.set(true);
    rb_self.session.end();
}

fn inspect(rb_self: &Session) -> String {
    let state = if rb_self.closed.get() {
        "closed"
    } else if rb_self.session.ended() {
        "ended"
    } else {
        "running"
    };
    format!(
        "#<LittleGhost::Sandboxes::Remote::Session pid={} {state}>",
        rb_self.session.pid
    )
}
