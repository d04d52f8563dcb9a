//! How an entry name is shown to a caller (a model reading `list`, or
//! `Workspace#reference`) and read back.
//!
//! A name is shown as is unless that could mislead or could not be read
//! back; then it is shown **quoted**: a double-quoted string in which
//! `\\` is a backslash, `\"` a double quote, `\n`, `\r` and `\t` are LF,
//! CR and HTAB, and `\xNN` (two hex digits) is the byte NN. Every other
//! character stands for itself. The quoted form is used exactly when the
//! name
//! - is not valid UTF-8, or
//! - holds a control character (C0, DEL, C1) or U+2028/U+2029, or
//! - starts with `"` (so a plain name is never mistaken for a quoted one), or
//! - starts with `~` (a plain leading `~` means a home directory to
//!   `File.expand_path`, so workspace paths refuse it), or
//! - starts or ends with a space.
//!
//! When quoting, a byte that is not part of a printable UTF-8 character
//! (invalid UTF-8, a control character, U+2028/U+2029) is written `\xNN`.
//! A shown name therefore is one line, and [`parse_component`] gives back
//! the very bytes [`show`] was given.
//!
//! A path is read component by component: a component that starts with `"`
//! must be one whole quoted name (else [`MALFORMED`]); any other component
//! is taken literally. A quoted name may not decode to `/`, NUL, an empty
//! name, `.` or `..`.

use std::borrow::Cow;

/// The error for a component that starts with `"` but is not a quoted name.
pub const MALFORMED: &str = "malformed quoted name in workspace path (use \"...\" with \\\\, \\\", \\n, \\r, \\t or \\xNN escapes)";
/// The error for a quoted name that decodes to something no entry is named.
pub const NOT_A_NAME: &str =
    "a quoted name in a workspace path cannot be empty, '.', '..' or hold '/' or NUL";

/// Whether `c` must not appear unescaped in a shown name.
fn unprintable(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// Whether `name` is shown quoted (see the module documentation).
pub fn needs_quotes(name: &[u8]) -> bool {
    // The common case, printable ASCII, without decoding characters.
    if name.iter().all(|b| (0x20..0x7f).contains(b)) {
        return matches!(name.first(), Some(b'"' | b'~' | b' ')) || name.last() == Some(&b' ');
    }
    let Ok(text) = std::str::from_utf8(name) else {
        return true;
    };
    text.starts_with(['"', '~', ' ']) || text.ends_with(' ') || text.chars().any(unprintable)
}

/// The shown form of one entry name.
pub fn show(name: &[u8]) -> Cow<'_, str> {
    if !needs_quotes(name) {
        // needs_quotes checked it is UTF-8.
        return String::from_utf8_lossy(name);
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    let mut rest = name;
    while !rest.is_empty() {
        let (valid, invalid) = match std::str::from_utf8(rest) {
            Ok(text) => (text, rest.len()..rest.len()),
            Err(error) => {
                let end = error.valid_up_to();
                let bad = end..end + error.error_len().unwrap_or(rest.len() - end);
                (std::str::from_utf8(&rest[..end]).unwrap_or_default(), bad)
            }
        };
        for c in valid.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if unprintable(c) => {
                    let mut bytes = [0u8; 4];
                    for byte in c.encode_utf8(&mut bytes).bytes() {
                        out.push_str(&format!("\\x{byte:02X}"));
                    }
                }
                c => out.push(c),
            }
        }
        for byte in &rest[invalid.clone()] {
            out.push_str(&format!("\\x{byte:02X}"));
        }
        rest = &rest[invalid.end..];
    }
    out.push('"');
    Cow::Owned(out)
}

/// The name a shown component stands for: a quoted name decoded, anything
/// else as it is.
pub fn parse_component(component: &[u8]) -> Result<Cow<'_, [u8]>, &'static str> {
    let Some(inner) = component.strip_prefix(b"\"") else {
        return Ok(Cow::Borrowed(component));
    };
    let inner = inner.strip_suffix(b"\"").ok_or(MALFORMED)?;
    let mut out = Vec::with_capacity(inner.len());
    let mut bytes = inner.iter().copied();
    while let Some(byte) = bytes.next() {
        match byte {
            b'\\' => out.push(match bytes.next().ok_or(MALFORMED)? {
                b'\\' => b'\\',
                b'"' => b'"',
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'x' => {
                    let high = bytes.next().and_then(hex).ok_or(MALFORMED)?;
                    let low = bytes.next().and_then(hex).ok_or(MALFORMED)?;
                    high << 4 | low
                }
                _ => return Err(MALFORMED),
            }),
            b'"' => return Err(MALFORMED),
            byte if byte < 0x20 || byte == 0x7f => return Err(MALFORMED),
            byte => out.push(byte),
        }
    }
    if out.is_empty() || out == b"." || out == b".." || out.contains(&b'/') || out.contains(&0) {
        return Err(NOT_A_NAME);
    }
    Ok(Cow::Owned(out))
}

fn hex(digit: u8) -> Option<u8> {
    (digit as char).to_digit(16).map(|value| value as u8)
}

/// A relative path whose components may be shown names, with each quoted
/// one decoded. Plain components are kept byte for byte.
pub fn parse_relative(path: &[u8]) -> Result<Cow<'_, [u8]>, &'static str> {
    if !path
        .split(|b| *b == b'/')
        .any(|part| part.starts_with(b"\""))
    {
        return Ok(Cow::Borrowed(path));
    }
    let mut out = Vec::with_capacity(path.len());
    for (index, part) in path.split(|b| *b == b'/').enumerate() {
        if index > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(&parse_component(part)?);
    }
    Ok(Cow::Owned(out))
}

/// Every component of a relative path in its shown form, joined with `/`.
pub fn show_relative(path: &[u8]) -> Cow<'_, [u8]> {
    if !path.split(|b| *b == b'/').any(needs_quotes) {
        return Cow::Borrowed(path);
    }
    let shown: Vec<String> = path
        .split(|b| *b == b'/')
        .map(|part| show(part).into_owned())
        .collect();
    Cow::Owned(shown.join("/").into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(name: &[u8]) -> String {
        let shown = show(name).into_owned();
        assert!(!shown.contains(['\n', '\r']), "{shown:?} is one line");
        assert_eq!(
            parse_component(shown.as_bytes()).unwrap(),
            name,
            "{shown:?}"
        );
        shown
    }

    #[test]
    fn ordinary_names_are_shown_as_they_are() {
        for name in [
            "notes.md",
            "a b.txt",
            "é.md",
            "~",
            "x~",
            "a\"b",
            "back\\slash",
            "日本",
        ] {
            if name == "~" {
                continue;
            }
            assert_eq!(round_trip(name.as_bytes()), name);
        }
    }

    #[test]
    fn misleading_or_unreadable_names_are_quoted() {
        assert_eq!(
            round_trip(b"notes.md\nINSTRUCTIONS.md"),
            r#""notes.md\nINSTRUCTIONS.md""#
        );
        assert_eq!(round_trip(b"caf\xe9"), r#""caf\xE9""#);
        assert_eq!(round_trip(b"~notes.md"), r#""~notes.md""#);
        assert_eq!(round_trip(b"~"), r#""~""#);
        assert_eq!(round_trip(b"\"quoted\""), r#""\"quoted\"""#);
        assert_eq!(round_trip(b"\"open"), r#""\"open""#);
        assert_eq!(round_trip(b"tab\there\r"), r#""tab\there\r""#);
        assert_eq!(round_trip(b"a\\b\x7f"), r#""a\\b\x7F""#);
        assert_eq!(round_trip(" lead".as_bytes()), r#"" lead""#);
        assert_eq!(round_trip("trail ".as_bytes()), r#""trail ""#);
        assert_eq!(
            round_trip("line\u{2028}sep".as_bytes()),
            r#""line\xE2\x80\xA8sep""#
        );
        assert_eq!(round_trip("nel\u{85}".as_bytes()), r#""nel\xC2\x85""#);
    }

    #[test]
    fn a_quoted_component_must_be_well_formed() {
        for bad in [
            &b"\""[..],
            b"\"abc",
            b"\"a\"b\"",
            b"\"\\q\"",
            b"\"\\x4\"",
            b"\"\\xZZ\"",
            b"\"\\\"",
            b"\"a\nb\"",
        ] {
            assert_eq!(parse_component(bad), Err(MALFORMED), "{bad:?}");
        }
        for bad in [
            &b"\"\""[..],
            b"\".\"",
            b"\"..\"",
            b"\"a\\x2Fb\"",
            b"\"\\x00\"",
        ] {
            assert_eq!(parse_component(bad), Err(NOT_A_NAME), "{bad:?}");
        }
        assert_eq!(parse_component(b"\"\\x41\\x6a\"").unwrap(), &b"Aj"[..]);
        assert_eq!(parse_component(b"plain\"").unwrap(), &b"plain\""[..]);
    }

    #[test]
    fn paths_are_read_and_shown_component_by_component() {
        assert_eq!(
            parse_relative(br#"dir/"a\nb"/c"#).unwrap(),
            &b"dir/a\nb/c"[..]
        );
        assert_eq!(parse_relative(b"dir/plain").unwrap(), &b"dir/plain"[..]);
        assert!(
            parse_relative(br#"dir/"a/b""#).is_err(),
            "a raw / splits the quotes"
        );
        assert_eq!(show_relative(b"dir/a\nb/~c"), &br#"dir/"a\nb"/"~c""#[..]);
        assert_eq!(show_relative(b"dir/x~"), &b"dir/x~"[..]);
    }
}
