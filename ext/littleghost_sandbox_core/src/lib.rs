//! Core of littleghost-sandbox: policy model, grants and scope narrowing, the
//! filesystem broker, the process runner and the isolation backends.
//!
//! This crate knows nothing of Ruby. The binding crate converts Ruby values
//! into these types and maps [`Error`] onto the documented Ruby exceptions.

pub mod backend;
pub mod denial;
pub mod error;
pub mod fs;
pub mod grants;
pub mod helper;
pub mod launch;
pub mod limits;
pub mod names;
pub mod network;
pub mod paths;
pub mod policy;
pub mod process;
pub mod remote;
pub mod sandbox;
pub mod scope;
pub mod shown;
pub mod workspace;

pub use error::{Error, Result};
