//! Not yet implemented.

use magnus::{Error, RClass, Ruby};

pub fn init(_ruby: &Ruby, _sandbox: RClass) -> Result<(), Error> {
    Ok(())
}
