//! Where the gem's helper executable (`littleghost-sandbox-helper`) is.
//!
//! It is installed next to the extension library, so the binding tells the
//! core that directory once, when the extension loads ([`set_directory`]).
//! Backends that need the helper ask [`path`] and refuse (DependencyError in
//! Ruby) when it is missing, never run without it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The helper's file name.
pub const EXECUTABLE: &str = "littleghost-sandbox-helper";

static DIRECTORY: OnceLock<PathBuf> = OnceLock::new();

/// Records the directory the extension was loaded from; later calls are ignored.
pub fn set_directory(directory: &Path) {
    let _ = DIRECTORY.set(directory.to_path_buf());
}

/// The helper's path when it is an executable file beside the extension.
pub fn path() -> Option<PathBuf> {
    let candidate = DIRECTORY.get()?.join(EXECUTABLE);
    rustix::fs::access(&candidate, rustix::fs::Access::EXEC_OK)
        .ok()
        .map(|()| candidate)
}

/// The reason [`path`] found nothing, for a DependencyError.
pub fn missing_reason() -> String {
    match DIRECTORY.get() {
        Some(directory) => format!(
            "the gem's helper executable is missing or not executable at {}",
            directory.join(EXECUTABLE).display()
        ),
        None => "the gem's helper executable location is unknown (the extension did not record it)"
            .into(),
    }
}
