//! A session's stdin and output (18.4, 18.5): `write`, `close_write`,
//! `read` and the chunk it returns.

use std::os::fd::AsFd;
use std::time::Duration;

use littleghost_sandbox_core::limits::LimitExceeded;
use littleghost_sandbox_core::process::{
    self as core_process, arguments, deadline::Deadline, ending::Ending, PollFlags,
};
use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    Error, RHash, RString, Ruby, Value,
};

use super::{end_session, raise_resource_error, session_error, Session, CHUNK_CLASS};
use crate::helpers::errors::argument_error;
use crate::ruby_api::execution::{frozen_text, DataObject};
use crate::ruby_api::process_runner::{kernel_float, keywords, Waiter};

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

/// Writes `String(value)` to the child's stdin (unbuffered, so already flushed) and returns the byte count.
pub(super) fn write(ruby: &Ruby, rb_self: Session, value: Value) -> Result<usize, Error> {
    let state = rb_self.state(ruby)?;
    let refused = |error| session_error(ruby, error);
    state.check_writable().map_err(refused)?;
    let text = kernel_string(value)?;
    // SAFETY: copied before any other Ruby call.
    let bytes = unsafe { text.as_slice() }.to_vec();
    let mut waiter = Waiter::new(state.process());
    let wait = |stdin: Option<&std::os::fd::OwnedFd>| match stdin {
        // Another thread's write holds the turn.
        None => waiter.wait(ruby, Duration::from_millis(1)),
        Some(stdin) => {
            let room = Some((stdin.as_fd(), PollFlags::OUT));
            waiter.wait_for(ruby, core_process::POLL_INTERVAL, room)
        }
    };
    state.write(&bytes, wait, refused)
}

/// Closes the child's stdin so it reads EOF; idempotent.
pub(super) fn close_write(ruby: &Ruby, rb_self: Session) -> Result<(), Error> {
    rb_self.state(ruby)?.process().close_stdin();
    Ok(())
}

/// `read(timeout: x)`, the polling call, without the general keyword
/// parser (it is on every poll of a round trip); None for anything else (no
/// keywords, a positional Hash, other keys), which the parser takes with its
/// usual errors.
fn polling_timeout(ruby: &Ruby, args: &[Value]) -> Option<Value> {
    let [hash] = args else { return None };
    // SAFETY: plain C API call with the GVL held, inside this method call.
    if unsafe { rb_sys::rb_keyword_given_p() } == 0 {
        return None;
    }
    let hash = RHash::from_value(*hash).filter(|hash| hash.len() == 1)?;
    hash.get(ruby.to_symbol("timeout"))
}

/// `Float(timeout)`, finite and ≥ 0 (ArgumentError otherwise); nil or absent means 0 (one pass).
fn read_timeout(ruby: &Ruby, args: &[Value]) -> Result<f64, Error> {
    let timeout = match polling_timeout(ruby, args) {
        Some(timeout) => Some(timeout),
        None => {
            let [timeout] = keywords(ruby, args, ["timeout"], 0)?;
            timeout
        }
    };
    let seconds = match timeout.filter(|value| !value.is_nil()) {
        None => 0.0,
        // `Float()`; Integers and Floats without a Ruby call (round trips poll with 0).
        // A value Float() refuses (a Complex, a BasicObject) is an invalid
        // timeout like a negative one: ArgumentError naming its class, not
        // RangeError or NoMethodError.
        // Anything else (an interrupt, a user's to_f raising) goes through.
        Some(value) => kernel_float(value).map_err(|error| {
            let refused = [
                ruby.exception_type_error(),
                ruby.exception_range_error(),
                ruby.exception_arg_error(),
                ruby.exception_no_method_error(),
            ];
            if !refused.iter().any(|class| error.is_kind_of(*class)) {
                return error;
            }
            let invalid = arguments::READ_TIMEOUT_INVALID;
            let class = crate::helpers::value_object::class_name(value);
            argument_error(ruby, format!("{invalid} (got {class})"))
        })?,
    };
    // H.6: like `wait`, a timeout that can never pass (infinite, NaN) or is
    // negative is misuse, not a request to block forever or poll once.
    arguments::read_timeout_seconds(seconds).map_err(|message| argument_error(ruby, message))
}

/// A frozen Chunk, as `Chunk.new(stdout:, stderr:, eof:)` would build it from
/// frozen Strings, without the Ruby dispatch and keyword parsing (this is on
/// every poll of a round trip).
fn new_chunk(ruby: &Ruby, stdout: &[u8], stderr: &[u8], eof: bool) -> Value {
    // Each value goes into the Array as it is made (see DataObject::wrap);
    // a push within capacity cannot fail.
    let values = ruby.ary_new_capa(3);
    let _ = values.push(frozen_text(ruby, stdout, true));
    let _ = values.push(frozen_text(ruby, stderr, true));
    let _ = values.push(ruby.into_value(eof));
    DataObject::wrap(ruby, ruby.get_inner(&CHUNK_CLASS), values)
}

/// Collects output for up to `timeout` seconds (one pass for 0) and returns a Chunk; raises once the combined output bound is passed.
pub(super) fn read(ruby: &Ruby, rb_self: Session, args: &[Value]) -> Result<Value, Error> {
    let timeout = read_timeout(ruby, args)?;
    let state = rb_self.state(ruby)?;
    state
        .check_open()
        .map_err(|error| session_error(ruby, error))?;
    raise_resource_error(ruby, rb_self, state)?;
    let mut waiter = Waiter::new(state.process());
    let deadline = Deadline::after_secs(timeout);
    let output = state.read(deadline, |slice| waiter.wait(ruby, slice))?;
    if output.past_bound {
        // 18.5: terminate, then raise the LimitError carrying what this
        // read took and what is left (the background already sent TERM).
        let ending = Ending::Limit(LimitExceeded::Output {
            bytes: state.output_bytes(),
        });
        let taken = (output.stdout, output.stderr);
        return Err(end_session(ruby, rb_self, state, ending, taken)?);
    }
    // Output read just as the `timeout:` ended the session is handed over
    // first (not eof): the next `read` raises the TimeoutError.
    let fresh = !(output.stdout.is_empty() && output.stderr.is_empty());
    if fresh && state.process().timed_out() {
        return Ok(new_chunk(ruby, &output.stdout, &output.stderr, false));
    }
    if output.both_closed {
        raise_resource_error(ruby, rb_self, state)?;
    }
    let eof = output.both_closed && !state.process().alive();
    Ok(new_chunk(ruby, &output.stdout, &output.stderr, eof))
}
