//! The one conversion of argv, environment and paths from Ruby (H.6), used by
//! every backend, ProcessRunner and ProcessSession, so that a value one
//! backend accepts is accepted, or refused with the same exception, by all.
//!
//! The rules:
//! - argv elements and environment names and values are UTF-8 text (the
//!   process core carries them as text). A UTF-8, US-ASCII or binary
//!   (ASCII-8BIT) String is taken as its bytes, so a binary String holding
//!   valid UTF-8 is the same argument as its UTF-8 twin; a String in another
//!   encoding is transcoded to UTF-8. Bytes that are not valid UTF-8 raise
//!   ArgumentError "... must be valid UTF-8", never EncodingError. A NUL byte
//!   raises ArgumentError (the core's wording), an empty argv ToolError (17.2).
//! - A path is taken as its bytes, as Ruby's own `File.open` does on Unix,
//!   whatever ASCII-compatible encoding tags it (UTF-8, US-ASCII, binary,
//!   ISO-8859-1, ...); any bytes are accepted except where a backend must
//!   pass the path as text (the bwrap command line), which says so. A String
//!   in an encoding that is not ASCII-compatible (UTF-16, UTF-32) raises
//!   ArgumentError naming the encoding ([`checked_path`], the one rule):
//!   its bytes are not the path it shows. A path argument must be a String,
//!   or an object answering `to_path` with a String (Pathname); anything
//!   else raises TypeError. Symbols, Integers, Arrays and nil are not paths.
//! - A platform name (`platform:`) is text: `String(value)`, valid UTF-8
//!   (or transcodable to it), else ArgumentError ([`platform`]).
//! - A String command is one argv element (17.1). If it contains whitespace it
//!   is almost certainly a command line meant for a shell, which
//!   `execute_program` never uses: ArgumentError "pass an argv Array, or use
//!   execute for shell syntax".

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use littleghost_sandbox_core::process as core_process;
use magnus::rb_sys::{protect, AsRawValue, FromRawValue};
use magnus::{encoding::EncodingCapable, prelude::*, Error, RArray, RHash, RString, Ruby, Value};

use crate::helpers::errors;
use crate::helpers::value_object as vo;

/// A copy of a String's bytes, whatever its encoding.
pub fn bytes(string: RString) -> Vec<u8> {
    // SAFETY: the bytes are copied before any other Ruby call can run.
    unsafe { string.as_slice() }.to_vec()
}

/// A String as UTF-8 text. A UTF-8, US-ASCII or binary String is taken as
/// its bytes; a String in another encoding (ISO-8859-1, Shift_JIS, UTF-16)
/// is transcoded to UTF-8, as its characters mean. Bytes that are not valid
/// UTF-8, or that cannot be transcoded, raise ArgumentError "`what` must be
/// valid UTF-8".
pub fn text(ruby: &Ruby, string: RString, what: &str) -> Result<String, Error> {
    let invalid = || errors::argument_error(ruby, format!("{what} must be valid UTF-8"));
    let index = string.enc_get();
    let raw = if index == ruby.utf8_encindex()
        || index == ruby.usascii_encindex()
        || index == ruby.ascii8bit_encindex()
    {
        bytes(string)
    } else {
        // rb_str_conv_enc returns the String unchanged when it cannot convert.
        let converted = string.conv_enc(ruby.utf8_encoding())?;
        if converted.enc_get() != ruby.utf8_encindex() {
            return Err(invalid());
        }
        bytes(converted)
    };
    String::from_utf8(raw).map_err(|_| invalid())
}

/// A String's bytes as text for messages and display only (invalid bytes become U+FFFD).
pub fn lossy(string: RString) -> String {
    String::from_utf8_lossy(&bytes(string)).into_owned()
}

/// `value.to_s`, which must return a String (TypeError otherwise).
fn to_s(ruby: &Ruby, value: Value) -> Result<RString, Error> {
    if let Some(string) = RString::from_value(value) {
        return Ok(string);
    }
    if !vo::responds(value, "to_s") {
        // A BasicObject: TypeError, not NoMethodError.
        return Err(errors::type_error(
            ruby,
            format!("can't convert {} to String", vo::class_name(value)),
        ));
    }
    let converted: Value = value.funcall("to_s", ())?;
    RString::from_value(converted).ok_or_else(|| {
        errors::type_error(
            ruby,
            format!(
                "can't convert {} to String (to_s gives {})",
                vo::class_name(value),
                vo::class_name(converted)
            ),
        )
    })
}

/// The advice a String command line gets (17.1).
const ARGV_ADVICE: &str = "pass an argv Array, or use execute for shell syntax";

/// 17.1, 17.2, H.6: `Array(command).map(&:to_s)` as UTF-8 text. A String
/// command with whitespace raises ArgumentError with [`ARGV_ADVICE`]; an empty
/// argv or argv[0] ToolError "Command must contain an executable"; a NUL
/// byte ArgumentError.
pub fn argv(ruby: &Ruby, command: Value) -> Result<Vec<String>, Error> {
    if let Some(line) = RString::from_value(command) {
        if core_process::is_command_line(&bytes(line)) {
            return Err(errors::argument_error(
                ruby,
                format!("a String command is one program name, not a command line: {ARGV_ADVICE}"),
            ));
        }
    }
    let array = RArray::try_convert(vo::kernel(ruby, "Array", command)?)?;
    let mut argv = Vec::with_capacity(array.len());
    for item in array.into_iter() {
        argv.push(text(ruby, to_s(ruby, item)?, "command arguments")?);
    }
    errors::core_result(ruby, core_process::validate_argv(&argv))?;
    Ok(argv)
}

/// An `environment:` value (nil, or anything `Kernel#Hash` takes) as UTF-8
/// (name, value) pairs, each converted with `to_s`; names must be non-empty
/// without `=` or NUL, values without NUL (ArgumentError).
pub fn environment(
    ruby: &Ruby,
    environment: Option<Value>,
) -> Result<Vec<(String, String)>, Error> {
    let Some(environment) = environment.filter(|value| !value.is_nil()) else {
        return Ok(Vec::new());
    };
    let hash = RHash::try_convert(vo::kernel(ruby, "Hash", environment)?)?;
    let mut pairs = Vec::with_capacity(hash.len());
    hash.foreach(|name: Value, value: Value| {
        pairs.push((
            text(ruby, to_s(ruby, name)?, "environment names")?,
            text(ruby, to_s(ruby, value)?, "environment values")?,
        ));
        Ok(magnus::r_hash::ForEach::Continue)
    })?;
    errors::core_result(ruby, core_process::validate_environment(&pairs))?;
    Ok(pairs)
}

/// The one rule for a path a caller gives as a String (H.6): its
/// bytes are the path whatever ASCII-compatible encoding tags it, as
/// `File.open` takes them on Unix. In an encoding that is not
/// ASCII-compatible (UTF-16, UTF-32, and dummies such as UTF-7) every ASCII
/// character carries NUL bytes, so the bytes are not the path the String
/// shows: ArgumentError "`what` must be in an ASCII-compatible encoding such
/// as UTF-8 (got String in UTF-16LE)", rather than a NUL-byte ToolError or
/// Encoding::CompatibilityError from deep inside.
pub fn checked_path(ruby: &Ruby, string: RString, what: &str) -> Result<RString, Error> {
    let index = string.enc_get();
    if index == ruby.utf8_encindex()
        || index == ruby.usascii_encindex()
        || index == ruby.ascii8bit_encindex()
    {
        return Ok(string);
    }
    let encoding: Value = string.funcall("encoding", ())?;
    if encoding.funcall::<_, _, bool>("ascii_compatible?", ())? {
        return Ok(string);
    }
    let name: String = encoding.funcall("to_s", ())?;
    Err(errors::argument_error(
        ruby,
        format!(
            "{what} must be in an ASCII-compatible encoding such as UTF-8 (got String in {name})"
        ),
    ))
}

/// `File.expand_path(path, base)` (Ruby semantics, including `~` and `to_path`).
/// A String in an encoding that is not ASCII-compatible (UTF-16, UTF-32)
/// raises ArgumentError naming it, not Encoding::CompatibilityError.
pub fn expand_path(ruby: &Ruby, path: Value, base: Option<Value>) -> Result<RString, Error> {
    for value in std::iter::once(path).chain(base) {
        if let Some(string) = RString::from_value(value) {
            checked_path(ruby, string, "path")?;
        }
    }
    let (path, base) = (
        path.as_raw(),
        base.unwrap_or_else(|| ruby.qnil().as_value()).as_raw(),
    );
    // SAFETY: rb_file_expand_path is File.expand_path's body; `protect`
    // catches its raise, and both VALUEs are live on this stack.
    let out = protect(|| unsafe { rb_sys::rb_file_expand_path(path, base) })?;
    // SAFETY: `out` is the String Ruby just returned.
    RString::try_convert(unsafe { Value::from_raw(out) })
}

/// A path argument as a String: a String itself, or `value.to_path` when it
/// answers that (Pathname) and gives a String, held to [`checked_path`].
/// Anything else raises TypeError "`what` must be a String (got CLASS)".
pub fn path_string(ruby: &Ruby, value: Value, what: &str) -> Result<RString, Error> {
    if let Some(string) = RString::from_value(value) {
        return checked_path(ruby, string, what);
    }
    if value.respond_to("to_path", false)? {
        let path: Value = value.funcall("to_path", ())?;
        if let Some(string) = RString::from_value(path) {
            return checked_path(ruby, string, what);
        }
    }
    Err(errors::type_error(
        ruby,
        format!(
            "{what} must be a String or respond to to_path (got {})",
            vo::class_name(value)
        ),
    ))
}

/// A String the binding already holds (a resolved path, an instance
/// variable) as a host path, byte for byte.
pub fn path_of(string: RString) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes(string)))
}

/// A value that must already be a String (an internal path) as a host path;
/// TypeError otherwise.
pub fn string_path(value: Value) -> Result<PathBuf, Error> {
    Ok(path_of(RString::try_convert(value)?))
}

/// A frozen Ruby String holding `path`'s bytes, tagged UTF-8 when they are
/// valid UTF-8 and binary otherwise.
pub fn path_to_ruby(ruby: &Ruby, path: &Path) -> RString {
    let bytes = path.as_os_str().as_bytes();
    let string = match std::str::from_utf8(bytes) {
        Ok(text) => ruby.str_new(text),
        Err(_) => ruby.str_from_slice(bytes),
    };
    string.freeze();
    string
}

/// The `platform:` option (a value `platform_or_host` settled) as text:
/// `String(value)` under [`text`]'s rule, so a name that is not valid UTF-8
/// raises ArgumentError "platform must be valid UTF-8", and a
/// value `String()` refuses raises TypeError naming its class.
pub fn platform(ruby: &Ruby, value: Value) -> Result<String, Error> {
    if RString::from_value(value).is_none() && !vo::responds(value, "to_s") {
        return Err(errors::type_error(
            ruby,
            format!("platform must be a String (got {})", vo::class_name(value)),
        ));
    }
    let string = RString::try_convert(vo::kernel(ruby, "String", value)?)?;
    text(ruby, string, "platform")
}

/// A `chdir:` value (nil means none) expanded like `File.expand_path`; see [`path_string`].
pub fn expanded_path(
    ruby: &Ruby,
    value: Option<Value>,
    what: &str,
) -> Result<Option<PathBuf>, Error> {
    let Some(value) = value.filter(|value| !value.is_nil()) else {
        return Ok(None);
    };
    let string = path_string(ruby, value, what)?;
    Ok(Some(path_of(expand_path(ruby, string.as_value(), None)?)))
}
