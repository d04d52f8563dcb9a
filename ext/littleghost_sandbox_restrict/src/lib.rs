//! What the helper executable (`littleghost_sandbox_helper`) needs, shared
//! with the core that prepares its arguments: the Landlock + seccomp
//! restriction its `supervise` mode applies to a child ([`landlock`],
//! [`seccomp`]) and the `--forward` format of its `relay` mode ([`relay`]).
//!
//! A crate of its own so that the helper depends on nothing it does not
//! use: every build path builds the helper separately (statically, with
//! `--target`), and through the core it would compile the core's async
//! runtime and TLS stack a second time. The core re-exports these modules
//! where they always lived (`backend::landlock`, `backend::seccomp`,
//! `launch::Forward`), so the rest of the core does not see the split.

pub mod error;
#[cfg(target_os = "linux")]
pub mod landlock;
pub mod relay;
pub mod seccomp;

pub use error::{Error, Result};
