//! Isolation backends: what differs between Unrestricted, Bubblewrap, Landlock and Seatbelt.
//! Each file is one mechanism; policy arrives as plain data.

pub mod bubblewrap;
pub mod effective;
#[cfg(target_os = "linux")]
pub mod landlock;
pub mod launch_steps;
pub mod native;
pub mod private_tmp;
pub mod seatbelt;
pub mod unrestricted;

pub use littleghost_sandbox_restrict::seccomp;

/// The lowest Landlock ABI the Landlock backend runs on (why: `landlock`'s
/// module docs); here so Native's choice can name it on every platform.
pub const LANDLOCK_MINIMUM_ABI: i32 = 6;
