//! How a caller shows the names an error carries: a leaf, so the
//! mechanisms' own error enums word their messages without importing the
//! cross-mechanism error that carries them.

/// How the caller shows a name an error carries (a path's, a mode's, a
/// provider's): a message is worded once, here, and each caller shows the
/// names in it as its own language writes them.
pub type ShowName<'a> = &'a dyn Fn(&str) -> String;

/// A name shown as it is (what `Display` does).
pub fn plain(name: &str) -> String {
    name.to_owned()
}
