//! The gateway's response-head parser: whatever head it accepts
//! is relayed verbatim, so it must hold exactly the lines it parsed (no bare
//! CR or LF hiding another), no control byte but HTAB, a 1.0/1.1 version,
//! a three-digit status and one framing of the body. The check lives in the
//! core (`network::http::check_response_head`) so unit tests run it too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    littleghost_sandbox_core::network::fuzz_response_head(data);
});
