//! A name-ish value as the caller gave it.

use std::fmt;

/// A value the caller passed where a name (a Symbol or String) is expected:
/// its name when it has one, and how to show it in an error message. The
/// message text is only produced when a rule refuses the value.
pub struct Given<'a> {
    name: Option<String>,
    show: Box<dyn Fn() -> String + 'a>,
}

impl<'a> Given<'a> {
    /// A value with `name` (None when it is not name-ish), shown by `show` in messages.
    pub fn new(name: Option<String>, show: impl Fn() -> String + 'a) -> Given<'a> {
        Given {
            name,
            show: Box::new(show),
        }
    }

    /// A name the core states itself (always valid, so never shown in a
    /// refusal), shown as it is.
    pub fn named(name: &str) -> Given<'static> {
        let shown = name.to_owned();
        Given::new(Some(name.to_owned()), move || shown.clone())
    }

    /// A name as a Ruby caller gives a Symbol, shown as `:name` (the tests
    /// stand in for that caller).
    #[cfg(test)]
    pub fn symbol(name: &str) -> Given<'static> {
        let shown = format!(":{name}");
        Given::new(Some(name.to_owned()), move || shown.clone())
    }

    /// A value with no name, shown as `shown`.
    pub fn other(shown: &str) -> Given<'static> {
        let shown = shown.to_owned();
        Given::new(None, move || shown.clone())
    }

    /// The name, when the value has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// How the value reads in a message (Ruby's `inspect`).
    pub fn shown(&self) -> String {
        (self.show)()
    }
}

impl fmt::Debug for Given<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Given").field("name", &self.name).finish()
    }
}
