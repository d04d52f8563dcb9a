//! Isolation backends: what differs between Unrestricted, Bubblewrap and Seatbelt.
//! Each file is one mechanism; policy arrives as plain data.

pub mod bubblewrap;
pub mod seatbelt;
pub mod seccomp;
