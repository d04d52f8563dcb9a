//! What a sandbox owns between `open` and `close` (H.4): every child its
//! `execute_program` and `start_program` (and its scopes', which delegate to
//! it) started. The registry is the core's [`Owner`]; the sandbox object
//! holds it in a hidden instance variable (no `@`, so Ruby code never sees
//! it). `close` terminates what is still running; the block forms of `open`
//! close whatever happens in the block.

use littleghost_sandbox_core::process::Owner;
use magnus::{prelude::*, typed_data::Obj, value::LazyId, Error, RClass, RObject, Ruby, Value};

use crate::helpers::nogvl;

/// The message a child's next operation raises (ToolError) once `close`
/// terminated it.
pub const CLOSED_MESSAGE: &str = "Program was terminated because the sandbox was closed";

static OWNER: LazyId = LazyId::new("__littleghost_process_owner");

#[magnus::wrap(class = "LittleGhost::Sandbox::ProcessOwner", free_immediately, size)]
struct ProcessOwner(Owner);

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("ProcessOwner", ruby.class_object())?;
    class.undef_default_alloc_func();
    Ok(())
}

/// The registry of `sandbox`, created on first use.
pub fn owner(ruby: &Ruby, sandbox: RObject) -> Result<Owner, Error> {
    if let Some(existing) = sandbox.ivar_get::<_, Option<Obj<ProcessOwner>>>(*OWNER)? {
        return Ok(existing.0.clone());
    }
    let owner = Owner::new();
    let wrapped = ruby.obj_wrap(ProcessOwner(owner.clone()));
    sandbox.ivar_set(*OWNER, wrapped)?;
    Ok(owner)
}

/// `close`'s part: terminates (TERM, grace, KILL) every child `sandbox`
/// started that is still running, and returns once they ended. Runs without
/// the GVL, so another thread's `execute_program` sees its child end and
/// raises ToolError [`CLOSED_MESSAGE`].
pub fn terminate_children(ruby: &Ruby, sandbox: RObject) -> Result<(), Error> {
    let Some(existing) = sandbox.ivar_get::<_, Option<Obj<ProcessOwner>>>(*OWNER)? else {
        return Ok(());
    };
    let owner = existing.0.clone();
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
