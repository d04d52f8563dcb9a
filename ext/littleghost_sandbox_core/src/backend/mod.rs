//! Isolation backends: what differs between Unrestricted, Bubblewrap and Seatbelt.
