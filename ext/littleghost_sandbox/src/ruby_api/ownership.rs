//! What a sandbox owns between `open` and `close` (H.4): every child its
//! `execute_program` and `start_program` (and its scopes', which delegate to
//! it) started. The registry is the core's [`Owner`], held in the
//! sandbox's own struct. `close` terminates what is still running; the block
//! forms of `open` close whatever happens in the block.

use littleghost_sandbox_core::process::Owner;
use magnus::{prelude::*, Error, Ruby, Value};

use crate::helpers::nogvl;
use crate::ruby_api::sandbox::state::{self, SandboxObj};

/// The registry of `sandbox`.
pub fn owner(ruby: &Ruby, sandbox: SandboxObj) -> Result<Owner, Error> {
    state::borrow(sandbox.as_value())
        .map(|sandbox| sandbox.owner().clone())
        .ok_or_else(|| crate::helpers::errors::type_error(ruby, "not a LittleGhost::Sandbox"))
}

/// `close`'s part: terminates (TERM, grace, KILL) every child `sandbox`
/// started that is still running, and returns once they ended. Runs without
/// the GVL, so another thread's `execute_program` sees its child end and
/// raises ToolError [`CLOSED_BY_OWNER`](littleghost_sandbox_core::process::session::CLOSED_BY_OWNER).
pub fn terminate_children(ruby: &Ruby, sandbox: SandboxObj) -> Result<(), Error> {
    let Some(sandbox) = state::borrow(sandbox.as_value()) else {
        return Ok(());
    };
    sandbox.set_opened(false);
    let owner = sandbox.owner().clone();
    let background = owner.clone();
    if let Err(error) = nogvl::blocking(ruby, move || background.terminate_all()) {
        // Interrupted before it started: still terminate, holding the GVL.
        owner.terminate_all();
        return Err(error);
    }
    Ok(())
}

/// H.4's block form of `open`, called after `opened` (self) was opened:
/// without a block, returns it; with one, yields it, closes it whatever the
/// block did (`ensure`) and returns the block's value. When both the block
/// and `close` raise, the block's exception wins.
pub fn yield_and_close(ruby: &Ruby, opened: Value) -> Result<Value, Error> {
    if let Some(sandbox) = state::borrow(opened) {
        sandbox.set_opened(true);
    }
    if !ruby.block_given() {
        return Ok(opened);
    }
    let result = ruby.yield_value::<_, Value>(opened);
    let closed = opened.funcall::<_, _, Value>("close", ());
    match (result, closed) {
        (Ok(value), Ok(_)) => Ok(value),
        (Err(error), _) => Err(error),
        (Ok(_), Err(error)) => Err(error),
    }
}
