//! The gateway's request parser: whatever head it
//! accepts, the request it forwards has no control byte but its CRLF line
//! ends, exactly one `Host` (its own), no `Proxy-Authorization`, and a
//! three-part request line. The check itself lives in the core
//! (`network::proxy::check_request_head`) so unit tests run it too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    littleghost_sandbox_core::network::fuzz_request_head(data);
});
