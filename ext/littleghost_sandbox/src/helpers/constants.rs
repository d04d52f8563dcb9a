//! Looks up the gem's Ruby constants by their full name at call time, so a
//! constant reopened by the framework or overridden in Ruby is the one used.

use magnus::{prelude::*, Error, RClass, Ruby, Value};

/// `LittleGhost::A::B` style lookup, e.g. `constant(ruby, "LittleGhost::Sandbox::Policy")`.
pub fn constant<T: magnus::TryConvert>(ruby: &Ruby, path: &str) -> Result<T, Error> {
    let mut current: Value = ruby.class_object().as_value();
    for part in path.split("::") {
        // Modules and classes both answer const_get; going through Ruby keeps
        // reopened or autoloaded constants working.
        current = current.funcall("const_get", (part, false))?;
    }
    T::try_convert(current)
}

/// A class of the gem by full name.
pub fn class(ruby: &Ruby, path: &str) -> Result<RClass, Error> {
    constant(ruby, path)
}
