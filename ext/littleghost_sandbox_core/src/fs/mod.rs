//! Filesystem broker over capability handles.
