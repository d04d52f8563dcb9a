//! Ruby binding of littleghost-sandbox. Defines the `LittleGhost` module tree;
//! each Ruby class lives in one file under `ruby_api/` with its own `init`.

mod helpers;
mod ruby_api;

use magnus::{Error, Ruby};

#[magnus::init(name = "littleghost_sandbox")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    littleghost_sandbox_core::helper::load_beside_library();
    ruby_api::init(ruby)
}
