//! Small helpers shared by the Ruby classes.

pub mod args;
pub mod constants;
pub mod convert;
pub mod event_hub;
pub mod events;
pub mod launch_args;
pub mod limit_keywords;
pub mod location;
pub mod nogvl;
pub mod probe;
pub mod registry;
pub mod scoped_files;
pub mod value_object;
