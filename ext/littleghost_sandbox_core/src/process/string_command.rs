//! 17.1: a command given as one text is one argv element. One with
//! whitespace is almost certainly a command line meant for a shell, which
//! `execute_program` never uses, so the caller refuses it with advice.

/// Whether the bytes of a command given as one text contain whitespace
/// (Ruby's `/\s/`: space, `\t`, `\n`, `\v`, `\f`, `\r`): a command line,
/// not a program name.
pub fn is_command_line(bytes: &[u8]) -> bool {
    let whitespace = |byte: &u8| matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    bytes.iter().any(whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_name_passes_and_a_command_line_is_refused() {
        assert!(!is_command_line(b"ls"));
        assert!(!is_command_line("/opt/\u{e9}t\u{e9}/bin/tool".as_bytes()));
        for line in [
            &b"ls -l"[..],
            b"a\tb",
            b"a\nb",
            b"a\x0bb",
            b"a\x0cb",
            b"a\rb",
        ] {
            assert!(is_command_line(line), "{line:?}");
        }
        // U+00A0 is not Ruby's /\s/.
        assert!(!is_command_line("a\u{a0}b".as_bytes()));
    }
}
