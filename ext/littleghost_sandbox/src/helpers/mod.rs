//! Small helpers shared by the Ruby classes.

pub mod constants;
pub mod nogvl;
pub mod value_object;
