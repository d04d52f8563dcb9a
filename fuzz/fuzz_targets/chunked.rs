//! The gateway's chunked-framing decoder: the first byte picks
//! how the rest arrives (1 to 7 bytes per read); fed whole or in pieces it
//! must give the same data and verdict, every step must stay inside its
//! input, and accepted framing lines hold no control byte but HTAB. The
//! check lives in the core (`network::http::check_chunked`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    littleghost_sandbox_core::network::fuzz_chunked(data);
});
