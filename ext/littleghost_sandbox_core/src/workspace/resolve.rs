//! Lexical resolution (3.3, 3.4): logical paths to physical ones and back.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::{Error, Layout, Result, SCHEME};
use crate::denial::Reason;
use crate::error::{refused, tool, Kind};
use crate::grants::Identity;
use crate::{names, paths};

impl Layout {
    /// Maps a logical path to a physical one, lexically (3.3). A component
    /// in the quoted form of [`crate::names`] stands for the name it shows.
    pub fn resolve(&self, reference: &OsStr) -> Result<PathBuf> {
        let bytes = reference.as_bytes();
        if bytes.contains(&0) {
            return Err(Error::NulByte);
        }
        if bytes.starts_with(b"/") {
            return Err(Error::Absolute);
        }
        let (base, relative) = match bytes.strip_prefix(SCHEME.as_bytes()) {
            Some(rest) => {
                let (name, relative) = match rest.iter().position(|b| *b == b'/') {
                    Some(slash) => (&rest[..slash], Some(&rest[slash + 1..])),
                    None => (rest, None),
                };
                if name.is_empty() {
                    return Err(Error::Unnamed);
                }
                // `workspace://root/...` names the root: `root` is
                // reserved, so no configured path can take the name.
                let name = String::from_utf8_lossy(name);
                let base = if name == super::ROOT_NAME {
                    self.root.as_path()
                } else {
                    self.path(&name)?
                };
                match relative {
                    None => return Ok(paths::clean(base)),
                    // `workspace://root//etc` would join an absolute part,
                    // which replaces the base: the part after the name is
                    // relative like every other reference (3.3).
                    Some(relative) if relative.starts_with(b"/") => {
                        return Err(Error::AbsoluteAfterName)
                    }
                    Some(relative) => (base, relative),
                }
            }
            None => (self.root.as_path(), bytes),
        };
        beneath(base, &unquote(relative)?)
    }

    /// `Workspace#resolve` (3.3): while the workspace is open (`recorded` are
    /// the identities `open` pinned), root and every path must still be what
    /// was pinned (3.7); then [`Layout::resolve`].
    pub fn resolve_checked(
        &self,
        recorded: Option<&[(String, Identity)]>,
        reference: &OsStr,
    ) -> Result<PathBuf> {
        if let Some(recorded) = recorded {
            self.validate(recorded)?;
        }
        self.resolve(reference)
    }

    /// The logical path of a physical one (3.4): the longest named path that
    /// contains it, else root-relative, else an error.
    pub fn reference(&self, physical: &Path) -> Result<OsString> {
        let physical = paths::clean(physical);
        let best = self
            .paths
            .iter()
            .filter(|(_, dir)| paths::is_within(&physical, dir))
            .max_by_key(|(_, dir)| dir.as_os_str().len());
        if let Some((name, dir)) = best {
            let mut out = format!("{SCHEME}{name}").into_bytes();
            let rest = paths::remainder(&physical, dir).unwrap_or(Path::new(""));
            if !rest.as_os_str().is_empty() {
                out.push(b'/');
                out.extend_from_slice(&names::show_relative(rest.as_os_str().as_bytes()));
            }
            return Ok(OsString::from_vec(out));
        }
        match paths::remainder(&physical, &self.root) {
            Some(rest) if rest.as_os_str().is_empty() => Ok(OsString::from(".")),
            Some(rest) => Ok(OsString::from_vec(
                names::show_relative(rest.as_os_str().as_bytes()).into_owned(),
            )),
            None => Err(Error::Outside),
        }
    }
}

/// `relative` with its quoted components decoded. A
/// quoted name is literal: one starting with `~` gets a `./` so the `~` rule
/// of [`beneath`] (which models `File.expand_path`) does not apply to it.
fn unquote(relative: &[u8]) -> Result<Cow<'_, [u8]>> {
    let decoded = names::parse_relative(relative).map_err(Error::Quoted)?;
    if decoded.starts_with(b"~") && !relative.starts_with(b"~") {
        return Ok(Cow::Owned([&b"./"[..], &decoded].concat()));
    }
    Ok(decoded)
}

/// `relative` beneath `base`, lexically: not empty, no `..`, no `~`, cleaned.
fn beneath(base: &Path, relative: &[u8]) -> Result<PathBuf> {
    if relative.is_empty() {
        return Err(Error::Empty);
    }
    if relative.split(|b| *b == b'/').any(|part| part == b"..") {
        return Err(Error::Traversal);
    }
    // File.expand_path would send `~` to a home directory: never beneath base.
    if relative.starts_with(b"~") {
        return Err(Error::Escapes);
    }
    // The usual reference (`notes/a.md` beneath an expanded root) is already
    // clean: joining bytes gives what cleaning would, without splitting both
    // paths into components on every file operation.
    if is_clean_absolute(base.as_os_str().as_bytes()) && is_clean_relative(relative) {
        let mut joined = base.as_os_str().as_bytes().to_vec();
        if joined != b"/" {
            joined.push(b'/');
        }
        joined.extend_from_slice(relative);
        return Ok(PathBuf::from(OsString::from_vec(joined)));
    }
    let base = paths::clean(base);
    let joined = paths::clean(&base.join(OsStr::from_bytes(relative)));
    if !paths::is_within(&joined, &base) {
        return Err(Error::Escapes);
    }
    Ok(joined)
}

/// `/`, or an absolute path whose components are all plain names (no empty,
/// `.` or `..` component, no trailing slash): what `paths::clean` keeps as is.
fn is_clean_absolute(bytes: &[u8]) -> bool {
    match bytes {
        b"/" => true,
        [b'/', rest @ ..] => is_clean_relative(rest),
        _ => false,
    }
}

/// A non-empty relative path of plain names only.
fn is_clean_relative(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes
            .split(|b| *b == b'/')
            .all(|part| !part.is_empty() && part != b"." && part != b"..")
}

/// What a file tool (`read`, `list`, `write`, `replace`)
/// raises when the workspace would not resolve `reference`. The message is
/// the workspace's (SC.12: an ArgumentError or KeyError becomes a ToolError
/// with the same message); a reference that tries to leave the workspace is
/// an [`Error::Refused`], so the caller records one denial for it, exactly as
/// for the broker's refusals:
///
/// - an unknown workspace name (`workspace://nope/x`, a `KeyError`), an
///   empty name (`workspace:///x`) or an absolute path: `:outside_scope`;
/// - a `..` component or a leading `~`: `:escapes_scope`.
///
/// A reference that names nothing (empty, or with a NUL byte) is malformed,
/// not refused: a plain ToolError. The reference is classified, never the
/// message, so a duck-typed workspace's own `resolve` errors classify the
/// same way. Errors of another kind than `Argument` and `Key` are returned
/// unchanged.
pub fn refused_reference(reference: &[u8], error: crate::Error) -> crate::Error {
    let kind = error.kind();
    if !matches!(kind, Kind::Argument | Kind::Key) {
        return error;
    }
    let message = error.message();
    if reference.contains(&0) {
        return tool(message);
    }
    if kind == Kind::Key {
        return refused(Reason::OutsideScope, message);
    }
    let relative = match reference.strip_prefix(SCHEME.as_bytes()) {
        Some(rest) => match rest.iter().position(|b| *b == b'/') {
            Some(0) => return refused(Reason::OutsideScope, message),
            Some(slash) => &rest[slash + 1..],
            None if rest.is_empty() => return refused(Reason::OutsideScope, message),
            None => rest,
        },
        None if reference.starts_with(b"/") => return refused(Reason::OutsideScope, message),
        None => reference,
    };
    if relative.is_empty() {
        return tool(message);
    }
    // Whatever else the workspace refused of a non-empty reference (`..`,
    // `~`, a path that cleans to outside its base) is an escape.
    refused(Reason::EscapesScope, message)
}
