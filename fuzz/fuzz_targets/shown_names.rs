//! The shown form of entry names: any name an entry can
//! have is shown on one line and parsed back to the same bytes; any text a
//! caller sends that parses as a quoted name is a name that shows and parses
//! back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use littleghost_sandbox_core::names::{parse_component, parse_relative, show, show_relative};

/// What an entry can be named: not empty, `.` or `..`, no `/` or NUL.
fn is_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

fuzz_target!(|data: &[u8]| {
    if is_name(data) {
        let shown = show(data);
        assert!(!shown.contains(['\n', '\r']), "{shown:?}");
        assert_eq!(&*parse_component(shown.as_bytes()).unwrap(), data, "{shown:?}");
    }
    // (A plain component is taken literally; the workspace refuses NUL later.)
    if let Some(name) = parse_component(data).ok().filter(|name| is_name(name)) {
        let again = show(&name);
        assert_eq!(&*parse_component(again.as_bytes()).unwrap(), &*name, "{again:?}");
    }
    // A path of names: shown component by component, read back whole.
    if !data.contains(&0) && !data.split(|b| *b == b'/').any(|p| p.is_empty() || p == b"." || p == b"..") {
        let shown = show_relative(data);
        assert!(!shown.contains(&b'\n'));
        assert_eq!(&*parse_relative(&shown).unwrap(), data);
    }
});
