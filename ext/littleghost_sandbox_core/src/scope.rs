//! See the module docs once implemented.
