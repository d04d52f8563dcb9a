//! A remote call as Ruby waits for it: without the GVL, interruptible, and
//! its failure raised as the documented class (docs/design.md "The remote
//! provider"). Both the sandbox and its sessions wait this way.

use std::time::Duration;

use littleghost_sandbox_core::error::Error as CoreError;
use littleghost_sandbox_core::remote::{self, Execution, Pending, Progress, StreamedRun};
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

/// Follows `run` to its end as [`wait`] waits (without the GVL, in slices,
/// interruptible), handing each stream's output to `printed` with the GVL
/// held as it arrives (`0` stdout, `1` stderr). An exception from Ruby or
/// `printed` drops the run, and the daemon ends its program.
pub(crate) fn follow(
    ruby: &Ruby,
    mut run: StreamedRun,
    context: Option<Value>,
    mut printed: impl FnMut(usize, Vec<u8>) -> Result<(), Error>,
) -> Result<Execution, Error> {
    let wake = nogvl::Wake::new(-1);
    loop {
        let progress = nogvl::without_gvl(ruby, || run.next(SLICE), &wake)?;
        nogvl::check_interrupts(ruby)?;
        wake.reset();
        match progress {
            Some(Progress::Ended(ended)) => return ended.map_err(|error| raised(ruby, error)),
            Some(Progress::Printed { stdout, stderr }) => {
                for (stream, bytes) in [(0, stdout), (1, stderr)] {
                    if !bytes.is_empty() {
                        printed(stream, bytes)?;
                    }
                }
            }
            Some(Progress::Waiting) | None => {}
        }
        check_context(context)?;
    }
}
