//! Not yet implemented.

use magnus::{Error, RModule, Ruby};

pub fn init(_ruby: &Ruby, _little_ghost: RModule) -> Result<(), Error> {
    Ok(())
}
