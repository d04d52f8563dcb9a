//! What bwrap reports on `--info-fd` about the sandbox it set up: read by
//! the hold ([`super::hold`]) and used by what it prepares or checks
//! ([`super::low_ports`], [`super::mount_check`]).

/// What bwrap's `--info-fd` reports that matters here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// The sandbox's first process, as the host's pid namespace numbers it.
    pub pid: i32,
    /// The inode of its network namespace, when bwrap could read it.
    pub net: Option<u64>,
    /// The inode of its mount namespace, when bwrap could read it.
    pub mnt: Option<u64>,
}

/// Parses bwrap's `--info-fd` JSON object (`{"child-pid": N,
/// "net-namespace": M, ...}`) once it is complete (its closing brace has
/// arrived); None before that, or when it has no positive `child-pid`.
pub fn parse_report(text: &[u8]) -> Option<Report> {
    let text = std::str::from_utf8(text).ok()?;
    let end = text.find('}')?;
    let object = &text[..end];
    let number = |key: &str| -> Option<u64> {
        let quoted = format!("\"{key}\"");
        let rest = &object[object.find(&quoted)? + quoted.len()..];
        let rest = rest.trim_start().strip_prefix(':')?.trim_start();
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        rest[..digits].parse().ok()
    };
    let pid = i32::try_from(number("child-pid")?)
        .ok()
        .filter(|pid| *pid > 0)?;
    Some(Report {
        pid,
        net: number("net-namespace"),
        mnt: number("mnt-namespace"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_read_once_its_object_is_complete() {
        let full = b"{\n    \"child-pid\": 27871,\n    \"mnt-namespace\": 4026532181,\n    \"net-namespace\": 4026532183,\n    \"pid-namespace\": 4026532182\n}\n";
        assert_eq!(
            parse_report(full),
            Some(Report {
                pid: 27871,
                net: Some(4026532183),
                mnt: Some(4026532181),
            })
        );
        // Not yet complete: wait for more.
        assert_eq!(parse_report(&full[..40]), None);
        // Older bwrap, or namespace ids it could not read: the pid alone.
        assert_eq!(
            parse_report(b"{\n    \"child-pid\": 12\n}\n"),
            Some(Report {
                pid: 12,
                net: None,
                mnt: None
            })
        );
        // Nothing usable.
        assert_eq!(parse_report(b"{}"), None);
        assert_eq!(parse_report(b"{\"child-pid\": 0}"), None);
        assert_eq!(parse_report(b"{\"child-pid\": -5}"), None);
        assert_eq!(parse_report(b"{\"child-pid\": 99999999999}"), None);
        assert_eq!(parse_report(b"\xff{\"child-pid\": 1}"), None);
    }
}
