//! The gRPC interface of littleghost-sandboxd, shared by the daemon (its
//! servers) and the core's remote client: agent-sandbox's `process.v1`
//! (sandboxd's process service, unchanged on the wire) and `littleghost.v1`,
//! the daemon's denial stream.
//!
//! The Rust in `src/generated/` is generated from `proto/` and committed, so
//! a build needs neither `protoc` nor a generator; `tests/generated.rs`
//! fails when it no longer matches `proto/` and rewrites it with
//! `LITTLEGHOST_REGENERATE_PROTO=1`.

/// sandboxd's process service (`process.v1`).
pub mod process {
    pub mod v1 {
        #![allow(clippy::all, missing_docs)]
        include!("generated/process.v1.rs");
    }
}

/// littleghost-sandboxd's own services (`littleghost.v1`).
pub mod littleghost {
    pub mod v1 {
        #![allow(clippy::all, missing_docs)]
        include!("generated/littleghost.v1.rs");
    }
}
