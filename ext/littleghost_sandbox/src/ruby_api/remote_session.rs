//! `LittleGhost::Sandboxes::Remote::Session`: a program started on the
//! daemon, with the methods of `ProcessSession` (docs/spec.md §18) that
//! sandboxd's protocol can carry: `write`, `close_write`, `read`, `wait`,
//! `terminate`, `close`. The core's `remote::Session` holds the stream;
//! this file converts.

use std::sync::Arc;
use std::time::Duration;

use littleghost_sandbox_core::process::arguments::read_timeout_seconds;
use littleghost_sandbox_core::remote;
use magnus::{method, prelude::*, typed_data::Obj, Error, RClass, RString, Ruby, Value};

use crate::helpers::args::{keywords_only, kwargs, optional};
use crate::helpers::{constants, convert, errors};
use crate::ruby_api::process_runner::{kernel_float, validate_timeout};
use crate::ruby_api::process_session::status::SessionStatus;
use crate::ruby_api::remote::call::wait as wait_call;

#[magnus::wrap(
    class = "LittleGhost::Sandboxes::Remote::Session",
    free_immediately,
    size
)]
pub struct Session(Arc<remote::Session>);

pub fn init(ruby: &Ruby, remote: RClass) -> Result<(), Error> {
    let class = remote.define_class("Session", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_method("pid", method!(|s: &Session| s.0.pid, 0))?;
    class.define_method("alive?", method!(|s: &Session| !s.0.ended(), 0))?;
    class.define_method("write", method!(write, 1))?;
    class.define_method("close_write", method!(close_write, 0))?;
    class.define_method("read", method!(read, -1))?;
    class.define_method("wait", method!(wait, -1))?;
    class.define_method("terminate", method!(terminate, 0))?;
    class.define_method("close", method!(|s: &Session| s.0.end(), 0))?;
    class.define_method("closed?", method!(|s: &Session| s.0.closed(), 0))?;
    class.define_method("inspect", method!(inspect, 0))?;
    Ok(())
}

/// The Ruby object of a started session.
pub fn wrap(ruby: &Ruby, session: Arc<remote::Session>) -> Value {
    ruby.obj_wrap(Session(session)).as_value()
}

/// Writes `value.to_s` to the program's stdin; returns its byte size.
fn write(ruby: &Ruby, rb_self: &Session, value: Value) -> Result<usize, Error> {
    let bytes = convert::bytes(value.funcall::<_, _, RString>("to_s", ())?);
    let length = bytes.len();
    wait_call(ruby, rb_self.0.write(bytes), None)?;
    Ok(length)
}

/// Closes the program's stdin (it reads end of file); nil.
fn close_write(ruby: &Ruby, rb_self: &Session) -> Result<(), Error> {
    wait_call(ruby, rb_self.0.close_write(), None)
}

/// `read(timeout: 0)` → ProcessSession::Chunk of what arrived within the timeout.
fn read(ruby: &Ruby, rb_self: &Session, args: &[Value]) -> Result<Value, Error> {
    let [timeout] = optional(ruby, keywords_only(args)?, ["timeout"])?;
    let seconds = timeout
        .filter(|v| !v.is_nil())
        .map(kernel_float)
        .transpose()?;
    let seconds = read_timeout_seconds(seconds.unwrap_or(0.0));
    let limit = Duration::from_secs_f64(seconds.map_err(|m| errors::argument_error(ruby, m))?);
    let chunk = wait_call(ruby, rb_self.0.read_within(limit), None)?;
    let text = |bytes: &[u8]| ruby.str_new(&String::from_utf8_lossy(bytes)).as_value();
    let options = kwargs(
        ruby,
        &[
            ("stdout", text(&chunk.stdout)),
            ("stderr", text(&chunk.stderr)),
            ("eof", ruby.into_value(chunk.eof)),
        ],
    )?;
    let class = constants::class(ruby, "LittleGhost::Sandbox::ProcessSession::Chunk")?;
    class.funcall("new", (magnus::KwArgs(options),))
}

/// `wait(timeout: nil, context: nil, terminate: false)` → Status, or nil
/// when the timeout passed first (after terminating it, with `terminate: true`).
fn wait(
    ruby: &Ruby,
    rb_self: &Session,
    args: &[Value],
) -> Result<Option<Obj<SessionStatus>>, Error> {
    let options = ["timeout", "context", "terminate"];
    let [timeout, context, terminating] = optional(ruby, keywords_only(args)?, options)?;
    let limit = match timeout.filter(|v| !v.is_nil()) {
        Some(value) => Some(Duration::from_secs_f64(validate_timeout(ruby, value)?)),
        None => None,
    };
    match wait_call(ruby, rb_self.0.exit_within(limit), context)? {
        Some(status) => Ok(Some(ruby.obj_wrap(SessionStatus(status)))),
        None if terminating.is_some_and(|v| v.to_bool()) => terminate(ruby, rb_self).map(Some),
        None => Ok(None),
    }
}

/// 17.12 over the protocol: TERM to the group, KILL after the grace; the Status.
fn terminate(ruby: &Ruby, rb_self: &Session) -> Result<Obj<SessionStatus>, Error> {
    let status = wait_call(ruby, rb_self.0.terminate(), None)?;
    Ok(ruby.obj_wrap(SessionStatus(status)))
}

fn inspect(rb_self: &Session) -> String {
    let (pid, state) = (rb_self.0.pid, rb_self.0.state());
    format!("#<LittleGhost::Sandboxes::Remote::Session pid={pid} {state}>")
}
