//! The rules for the numeric arguments of a run or a session (17.3, 18.5,
//! H.6) and how their values show in messages; the binding converts the Ruby
//! value (`Float()`, `Integer()`) and maps an `Err` to ArgumentError.

/// 17.3: the message for a run or `wait` timeout that is not positive.
pub const TIMEOUT_NOT_POSITIVE: &str = "timeout must be positive";
/// H.6: the message for a `read` timeout that is negative or never passes.
pub const READ_TIMEOUT_INVALID: &str = "timeout must be a finite number of seconds, 0 or more";

/// 17.3: a run's (or `wait`'s) timeout must be positive and finite.
pub fn timeout_seconds(seconds: f64) -> Result<f64, &'static str> {
    if seconds > 0.0 && seconds.is_finite() {
        Ok(seconds)
    } else {
        Err(TIMEOUT_NOT_POSITIVE)
    }
}

/// H.6: `read(timeout:)` is finite and 0 or more (0 is one pass); a timeout
/// that can never pass is misuse, not a request to block forever.
pub fn read_timeout_seconds(seconds: f64) -> Result<f64, &'static str> {
    if seconds.is_finite() && seconds >= 0.0 {
        Ok(seconds)
    } else {
        Err(READ_TIMEOUT_INVALID)
    }
}

/// "Command timed out after SECONDS seconds" (17.10), SECONDS as Ruby shows the Float.
pub fn run_timed_out(seconds: f64) -> String {
    format!("Command timed out after {} seconds", float_text(seconds))
}

/// `value.to_s` of a Ruby Float: the shortest digits that read back as the
/// same value, `1.0` rather than `1`, and exponent form (`1.0e+20`,
/// `1.0e-05`) outside 0.0001 ..< 1e16.
pub fn float_text(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // `{:e}` gives the shortest round-trip digits: "-1.25e-5", "1e20", "0e0".
    let formatted = format!("{value:e}");
    let (mantissa, exponent) = formatted.split_once('e').unwrap_or((&formatted, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // The decimal point sits after `point` digits.
    let point = exponent + 1;
    let count = digits.len() as i32;
    let body = if value == 0.0 {
        "0.0".to_string()
    } else if point > 0 && point < 16 {
        if count <= point {
            format!("{digits}{}.0", "0".repeat((point - count) as usize))
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            format!("{whole}.{fraction}")
        }
    } else if point <= 0 && point > -4 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        let exponent = point - 1;
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!("{first}.{rest}e{exponent_sign}{:02}", exponent.abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_show_as_ruby_shows_them() {
        for (value, shown) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (2.25, "2.25"),
            (0.05, "0.05"),
            (0.0001, "0.0001"),
            (0.00001, "1.0e-05"),
            (1.5e-7, "1.5e-07"),
            (123456.0, "123456.0"),
            (1e15, "1.0e+15"),
            (1e14, "100000000000000.0"),
            (123456789012345.0, "123456789012345.0"),
            (1234567890123456.0, "1.234567890123456e+15"),
            (0.00012, "0.00012"),
            (1e16, "1.0e+16"),
            (1.25e20, "1.25e+20"),
            (1e100, "1.0e+100"),
            (-3.5, "-3.5"),
            (0.0, "0.0"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(float_text(value), shown, "{value}");
        }
    }

    #[test]
    fn timeouts_must_be_positive_and_finite() {
        assert_eq!(timeout_seconds(0.5), Ok(0.5));
        for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert_eq!(timeout_seconds(bad), Err(TIMEOUT_NOT_POSITIVE));
        }
    }

    #[test]
    fn read_timeouts_may_be_zero_but_must_pass() {
        assert_eq!(read_timeout_seconds(0.0), Ok(0.0));
        for bad in [-0.1, f64::INFINITY, f64::NAN] {
            assert_eq!(read_timeout_seconds(bad), Err(READ_TIMEOUT_INVALID));
        }
    }

    #[test]
    fn the_timeout_message_shows_the_float() {
        assert_eq!(run_timed_out(2.0), "Command timed out after 2.0 seconds");
    }
}
