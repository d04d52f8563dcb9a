//! A read-only grant nested in something writable, which Landlock cannot
//! enforce: a leaf, so the core's error can carry it without a circle.

use std::path::PathBuf;

use crate::error::show::{plain, ShowName};

/// A read-only grant inside something writable, which Landlock cannot
/// enforce (see `refuse_narrowed` in this folder's `mod.rs`): CapabilityError.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.worded(&plain))]
pub struct NestedReadOnly {
    pub inner: PathBuf,
    /// The writable grant around it; None: the read-write root filesystem.
    pub outer: Option<PathBuf>,
}

impl NestedReadOnly {
    /// The refusal with the access names shown by `name`.
    pub fn worded(&self, name: ShowName) -> String {
        let (read_only, read_write) = (name("read_only"), name("read_write"));
        let outer = match &self.outer {
            Some(outer) => format!("the writable grant {}", outer.display()),
            None => format!("the {read_write} root filesystem"),
        };
        let inner = self.inner.display();
        format!(
            "the landlock sandbox cannot enforce the {read_only} grant {inner} inside {outer}: a Landlock \
             rule holds for everything beneath its directory, so the directories above {inner} could not \
             stay writable (create, remove or rename entries in them) while it stays read-only. Grant \
             the outer directory {read_only} and its writable subdirectories {read_write} one by one \
             (for example files: {{root: {read_only}, source: {read_only}, out: {read_write}}}), or use \
             Bubblewrap, which mounts the read-only grant over the writable one"
        )
    }
}
