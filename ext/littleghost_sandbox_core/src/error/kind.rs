//! The documented classes of failure, apart from every error type: each
//! mechanism's enum names its class here without depending on the
//! cross-mechanism [`Error`](super::Error) that carries it.

/// Which documented class of failure an error is (docs/spec.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An expected per-operation failure, safe to show the model (`ToolError`).
    Tool,
    /// An invalid policy, limits or declaration (`PolicyError`).
    Policy,
    /// A control cannot be enforced, or a scope tries to widen (`CapabilityError`).
    Capability,
    /// A provider or dependency is missing or unusable (`DependencyError`).
    Dependency,
    /// The backend cannot run on this OS (`UnsupportedPlatformError`).
    UnsupportedPlatform,
    /// A managed resource failed to close (`CleanupError`).
    Cleanup,
    /// Direct API misuse (`ArgumentError`).
    Argument,
    /// An unknown workspace path name (`KeyError`).
    Key,
    /// A closed or broken process session stream (`IOError`).
    Io,
}
