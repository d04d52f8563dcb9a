//! Small helpers shared by the Ruby classes.

pub mod args;
pub mod constants;
pub mod convert;
pub mod errors;
pub mod event_hub;
pub mod events;
pub mod limit_keywords;
pub mod nogvl;
pub mod record;
pub mod registry;
pub mod value_object;
