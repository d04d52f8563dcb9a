//! Isolation backends: what differs between Unrestricted, Bubblewrap, Landlock and Seatbelt.
//! Each file is one mechanism; policy arrives as plain data.

pub mod bubblewrap;
pub mod landlock;
pub mod seatbelt;
pub mod seccomp;
