//! The client of littleghost-sandboxd: the gem's `remote` provider drives a
//! daemon over sandboxd's wire protocol (docs/design.md "The remote
//! provider"): files over the REST API (`/v1/files/{path}`), programs over
//! gRPC (`process.v1.ProcessService`), denials from the daemon's JSON-lines
//! stream (`/v1/x-littleghost/denials`) and what it enforces from
//! `/v1/metadata`. Every call runs on the core's tokio runtime
//! ([`crate::process::runtime`]); callers get a [`Pending`] they wait on in
//! slices, so a binding can let its threads run and give up a call at once.

pub mod client;
pub mod connection;
pub mod endpoint;
pub mod error;
mod files;
mod http;
pub mod launch;
pub mod pending;
mod programs;
pub mod run;
pub mod session;
mod stream;

pub use client::{Client, Enforced, Metadata};
pub use connection::Connection;
pub use endpoint::Endpoint;
pub use error::Error;
pub use launch::Launch;
pub use pending::Pending;
pub use run::{Execution, Progress, StreamedRun};
pub use session::Session;
pub use stream::Watch;
