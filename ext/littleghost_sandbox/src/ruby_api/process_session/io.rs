//! A session's stdin and output (18.4, 18.5): `write`, `close_write`,
//! `read` and the chunk it returns.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use littleghost_sandbox_core::process::{
    self as core_process, arguments, deadline::Deadline, write_stdin, PollFlags,
};
use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    scan_args::{get_kwargs, scan_args},
    Error, Fixnum, Float, RHash, RString, Ruby, Value,
};

use super::{
    alive_checked, io_error, raise_resource_error, Session, SessionState, CHUNK_CLASS,
    READ_PASS_BYTES,
};
use crate::ruby_api::errors::{argument_error, tool_error};
use crate::ruby_api::execution::{frozen_text, DataObject};
use crate::ruby_api::process_runner::{kernel_float, terminate_group, Waiter};

/// `String(value)`: a String as it is, anything else through Ruby's own
/// conversion (`rb_String`: the caller's `to_str` or `to_s`).
fn kernel_string(value: Value) -> Result<RString, Error> {
    if let Some(text) = RString::from_value(value) {
        return Ok(text);
    }
    // SAFETY: GVL held, a live VALUE; a raise is caught by `protect`.
    let raw = protect(|| unsafe { rb_sys::rb_String(value.as_raw()) })?;
    // SAFETY: rb_String returned a live String.
    RString::try_convert(unsafe { Value::from_raw(raw) })
}

/// Releases the write flag when dropped.
struct WriteTurn<'a>(&'a AtomicBool);

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Writes `String(value)` to the child's stdin (unbuffered, so already flushed) and returns the byte count.
pub(super) fn write(ruby: &Ruby, rb_self: Session, value: Value) -> Result<usize, Error> {
    let state = rb_self.state(ruby)?;
    if state.closed.load(Ordering::SeqCst) {
        return Err(io_error(ruby, "process session is closed"));
    }
    if state.process.terminated_by_owner() {
        return Err(tool_error(ruby, crate::ruby_api::ownership::CLOSED_MESSAGE));
    }
    let text = kernel_string(value)?;
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
pub(super) fn close_write(ruby: &Ruby, rb_self: Session) -> Result<(), Error> {
    rb_self.state(ruby)?.process.close_stdin();
    Ok(())
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
        Some(value) => kernel_float(value)?,
    };
    // H.6: like `wait`, a timeout that can never pass (infinite, NaN) or is
    // negative is misuse, not a request to block forever or poll once.
    arguments::read_timeout_seconds(seconds).map_err(|message| argument_error(ruby, message))
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
fn new_chunk(ruby: &Ruby, stdout: &[u8], stderr: &[u8], eof: bool) -> Value {
    let values = vec![
        frozen_text(ruby, stdout, true),
        frozen_text(ruby, stderr, true),
        ruby.into_value(eof),
    ];
    DataObject::wrap(ruby, ruby.get_inner(&CHUNK_CLASS), values)
}

/// Collects output for up to `timeout` seconds (one pass for 0) and returns a Chunk; raises once the combined output bound is passed.
pub(super) fn read(ruby: &Ruby, rb_self: Session, args: &[Value]) -> Result<Value, Error> {
    let timeout = read_timeout(ruby, args)?;
    let state = rb_self.state(ruby)?;
    if state.closed.load(Ordering::SeqCst) {
        return Err(io_error(ruby, "process session is closed"));
    }
    raise_resource_error(ruby, rb_self, state)?;
    let deadline = Deadline::after_secs(timeout);
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
        let both = chunk.stdout_closed && chunk.stderr_closed;
        // Pipes close a moment before the leader becomes reapable; within
        // the timeout, give the exit a chance so `eof` reflects it.
        match deadline.slice() {
            Some(_) if both && !state.process.alive() => break true,
            Some(slice) => waiter.wait(ruby, slice)?,
            None => break both,
        }
    };
    let eof = both_closed && !alive_checked(ruby, rb_self, state)?;
    if stdout.is_empty() && stderr.is_empty() && !both_closed {
        // Callers poll `read(timeout: 0)` for a reply (a positive timeout
        // waits out its deadline, 18.5). Spinning without yielding keeps the
        // child off a busy CPU; an empty pass steps aside for a moment.
        core_process::yield_cpu();
    }
    Ok(new_chunk(ruby, &stdout, &stderr, eof))
}

/// Once the whole group is gone, EOF on the pipes is a moment away (unless a
/// process outside the group holds them): wait up to 100 ms for it, so that
/// `wait` followed by `read` sees everything the child wrote.
pub(super) fn settle_output(
    ruby: &Ruby,
    waiter: &mut Waiter,
    state: &SessionState,
) -> Result<(), Error> {
    let give_up = Deadline::after(Duration::from_millis(100));
    while !state.process.output_complete()
        && state.process.exit().is_some()
        && !state.process.group_alive()
    {
        match give_up.slice() {
            Some(slice) => waiter.wait(ruby, slice)?,
            None => break,
        }
    }
    Ok(())
}
