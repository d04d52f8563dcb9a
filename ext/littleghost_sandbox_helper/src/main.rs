//! `littleghost-sandbox-helper`: the one executable the gem ships beside its
//! extension, for work that must happen in a separate process around a child
//! (inside its namespaces, or between the gem and the child's `execve`).
//!
//! Usage: `littleghost-sandbox-helper MODE [ARGS...]`. Each mode is one
//! module with a `main(args) -> ExitCode`; the modes and their contracts are
//! documented in their modules. The extension finds this file next to itself
//! (`littleghost_sandbox_core::helper`).

use std::process::ExitCode;

#[cfg(target_os = "linux")]
mod relay;
#[cfg(target_os = "linux")]
mod supervise;

/// A mode's entry point: its arguments after the mode name, its exit status.
type Mode = fn(Vec<String>) -> ExitCode;

/// Modes, by name; an unknown mode is a usage error.
#[cfg(target_os = "linux")]
const MODES: &[(&str, Mode)] = &[("relay", relay::main), ("supervise", supervise::main)];
#[cfg(not(target_os = "linux"))]
const MODES: &[(&str, Mode)] = &[];

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    match MODES.iter().find(|(name, _)| *name == mode) {
        Some((_, run)) => run(args.collect()),
        None => {
            let names: Vec<&str> = MODES.iter().map(|(name, _)| *name).collect();
            eprintln!(
                "littleghost-sandbox-helper: unknown mode {mode:?} (modes: {})",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            );
            ExitCode::from(2)
        }
    }
}
