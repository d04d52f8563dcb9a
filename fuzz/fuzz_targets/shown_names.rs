//! The shown form of entry names (issue 18, item 7): any name an entry can
//! have is shown on one line and parsed back to the same bytes; any text a
//! caller sends that parses as a quoted name is a name that shows and parses
//! back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use littleghost_sandbox_core::names::{parse_component, parse_relative, show, show_relative};

fuzz_target!(|data: &[u8]| {
    let is_name = !data.is_empty() && data != b"." && data != b".." && !data.contains(&b'/') && !data.contains(&0);
    if is_name {
        let shown = show(data);
        assert!(!shown.contains(['\n', '\r']), "{shown:?}");
        assert_eq!(&*parse_component(shown.as_bytes()).unwrap(), data, "{shown:?}");
    }
    if let Ok(name) = parse_component(data) {
        let again = show(&name);
        assert_eq!(parse_component(again.as_bytes()).unwrap(), name, "{again:?}");
    }
    // A path of names: shown component by component, read back whole.
    if !data.contains(&0) && !data.split(|b| *b == b'/').any(|p| p.is_empty() || p == b"." || p == b"..") {
        let shown = show_relative(data);
        assert!(!shown.contains(&b'\n'));
        assert_eq!(&*parse_relative(&shown).unwrap(), data);
    }
});
