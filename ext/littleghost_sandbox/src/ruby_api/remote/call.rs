//! A remote call as Ruby waits for it: without the GVL, interruptible, and
//! its failure raised as the documented class (docs/design.md "The remote
//! provider"). Both the sandbox and its sessions wait this way.

use std::time::Duration;

use littleghost_sandbox_core::error::Error as CoreError;
use littleghost_sandbox_core::remote::{self, Pending};
use magnus::{Error, Ruby, Value};

use crate::helpers::errors;
use crate::helpers::nogvl;
use crate::ruby_api::process_runner::check_context;

/// How long one wait without the GVL lasts before interrupts are checked.
const SLICE: Duration = Duration::from_millis(20);

/// The Ruby exception of a failed remote call (docs/design.md "The remote provider").
pub(crate) fn raised(ruby: &Ruby, error: remote::Error) -> Error {
    errors::from_core(ruby, CoreError::Remote(error))
}

/// Waits for `pending` without the GVL, in slices; between them runs Ruby's
/// interrupts and `context.check!`. An exception from either drops the call.
pub(crate) fn wait<T: Send + 'static>(
    ruby: &Ruby,
    pending: Pending<T>,
    context: Option<Value>,
) -> Result<T, Error> {
    let wake = nogvl::Wake::new(-1);
    loop {
        let answer = nogvl::without_gvl(ruby, || pending.wait(SLICE), &wake)?;
        nogvl::check_interrupts(ruby)?;
        wake.reset();
        if let Some(Some(answer)) = answer {
            return answer.map_err(|error| raised(ruby, error));
        }
        check_context(context)?;
    }
}
