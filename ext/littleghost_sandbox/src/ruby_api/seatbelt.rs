//! `LittleGhost::Sandboxes::Seatbelt` (not yet implemented beyond its definition).

use magnus::{prelude::*, Error, RModule, Ruby};

use crate::helpers::constants;

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    sandboxes.define_class("Seatbelt", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    Ok(())
}
