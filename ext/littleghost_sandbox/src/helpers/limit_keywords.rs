//! The limit keywords of `execute_program`/`start_program` and of the backend
//! option `process_limits:` (docs/spec.md §25 L.1-L.3). Which names exist and
//! which values count is the core's (`policy::process_limits`); this file
//! words its refusals as the ArgumentError messages Ruby shows.

use littleghost_sandbox_core::policy::process_limits::{self as core, ProcessLimitError};
pub use littleghost_sandbox_core::policy::process_limits::{
    LimitEntry as Entry, LimitGiven as Given, PROCESS_LIMIT_KEYS as KEYS,
};

/// The message for a `process_limits:` option that is not a Hash.
pub const NOT_A_HASH: &str = "process_limits must be a Hash of memory_bytes:, tasks:, cpu_seconds:";

/// The ArgumentError message for a refused limit.
pub fn message(error: ProcessLimitError) -> String {
    match error {
        ProcessLimitError::NotPositive(name) => format!("{name} must be a positive Integer"),
        ProcessLimitError::Unknown { shown } => {
            format!("unknown process limit {shown} (known: memory_bytes, tasks, cpu_seconds)")
        }
    }
}

/// A positive count (see [`core::positive`]), else the ArgumentError message naming `name`.
pub fn positive(name: &str, given: Given) -> Result<u64, String> {
    core::positive(name, given).map_err(message)
}

pub use core::{process_limit_defaults as defaults, requested};
