//! Looks up the gem's Ruby constants by their full name at call time, so a
//! constant reopened by the framework or overridden in Ruby is the one used.

use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawId, AsRawValue, FromRawValue},
    Error, RClass, RModule, Ruby, Value,
};

/// `LittleGhost::A::B` style lookup, e.g. `constant(ruby, "LittleGhost::Sandbox::Policy")`.
pub fn constant<T: magnus::TryConvert>(ruby: &Ruby, path: &str) -> Result<T, Error> {
    let mut current: Value = ruby.class_object().as_value();
    for part in path.split("::") {
        if RModule::from_value(current).is_none() && RClass::from_value(current).is_none() {
            return Err(Error::new(
                ruby.exception_type_error(),
                format!("{} is not a class/module", current.inspect()),
            ));
        }
        let (module, id) = (current.as_raw(), ruby.intern(part).as_raw());
        // SAFETY: rb_const_get_at is `const_get(part, false)`'s body (it still
        // triggers autoload); `protect` catches its NameError or TypeError and
        // `current` is live on this stack.
        let found = protect(|| unsafe { rb_sys::rb_const_get_at(module, id) })?;
        // SAFETY: `found` is the constant's value Ruby just returned.
        current = unsafe { Value::from_raw(found) };
    }
    T::try_convert(current)
}

/// A class of the gem by full name.
pub fn class(ruby: &Ruby, path: &str) -> Result<RClass, Error> {
    constant(ruby, path)
}
