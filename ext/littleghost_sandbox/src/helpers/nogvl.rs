//! Running blocking work without the GVL. Filled in by the process layer.
