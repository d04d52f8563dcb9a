//! 17.1: a String command is one argv element. A String with whitespace is
//! almost certainly a command line meant for a shell, which
//! `execute_program` never uses, so it is refused with advice.

use crate::error::{argument, Result};

/// The advice a String command line gets.
pub const ARGV_ADVICE: &str = "pass an argv Array, or use execute for shell syntax";

/// ArgumentError when the bytes of a String command contain whitespace
/// (Ruby's `/\s/`: space, `\t`, `\n`, `\v`, `\f`, `\r`).
pub fn check_string_command(bytes: &[u8]) -> Result<()> {
    let whitespace = |byte: &u8| matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    if bytes.iter().any(whitespace) {
        return Err(argument(format!(
            "a String command is one program name, not a command line: {ARGV_ADVICE}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_name_passes_and_a_command_line_is_refused() {
        assert!(check_string_command(b"ls").is_ok());
        assert!(check_string_command("/opt/\u{e9}t\u{e9}/bin/tool".as_bytes()).is_ok());
        for line in [
            &b"ls -l"[..],
            b"a\tb",
            b"a\nb",
            b"a\x0bb",
            b"a\x0cb",
            b"a\rb",
        ] {
            let err = check_string_command(line).unwrap_err();
            assert_eq!(
                err,
                argument(
                    "a String command is one program name, not a command line: \
                     pass an argv Array, or use execute for shell syntax"
                )
            );
        }
        // U+00A0 is not Ruby's /\s/.
        assert!(check_string_command("a\u{a0}b".as_bytes()).is_ok());
    }
}
