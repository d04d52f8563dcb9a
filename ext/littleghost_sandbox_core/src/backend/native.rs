//! Which isolated backend `Sandboxes::Native` uses on Linux (SPEC LL.2).
//! Plain decisions on probe results, so it is compiled (and tested) on every
//! platform; the probes themselves live with their backends.

/// Which backend Native uses on Linux (SPEC LL.2): Bubblewrap when its probe
/// passed, else Landlock when its probe passed (and the caller did not
/// configure Bubblewrap explicitly), else an error naming both reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NativeChoice {
    Bubblewrap,
    Landlock { bubblewrap_reason: String },
}

/// Options only Bubblewrap understands. A caller who gives one configured
/// Bubblewrap, so Native never falls back to Landlock (whose sandbox would
/// ignore them) and reports Bubblewrap's own failure instead.
pub const BUBBLEWRAP_OPTIONS: [&str; 11] = [
    "bubblewrap",
    "executable",
    "proc",
    "tmpfs",
    "masks",
    "uid",
    "gid",
    "tmpfs_size",
    "relay",
    "gateway_options",
    "command_wrapper",
];

pub fn native_choice(
    bubblewrap: std::result::Result<(), String>,
    landlock: std::result::Result<(), String>,
    bubblewrap_configured: bool,
) -> std::result::Result<NativeChoice, String> {
    let bubblewrap_reason = match bubblewrap {
        Ok(()) => return Ok(NativeChoice::Bubblewrap),
        Err(reason) => reason,
    };
    if bubblewrap_configured {
        return Err(bubblewrap_reason);
    }
    match landlock {
        Ok(()) => Ok(NativeChoice::Landlock { bubblewrap_reason }),
        Err(landlock_reason) => Err(format!(
            "native sandboxing is unavailable: Bubblewrap: {bubblewrap_reason}; Landlock: {landlock_reason}. \
             Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
             kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap), \
             or run a kernel with Landlock ABI {} (Linux 6.12 or later)",
            super::LANDLOCK_MINIMUM_ABI
        )),
    }
}

/// Why Native cannot run on a platform that is neither macOS nor Linux.
pub fn unavailable_on(platform: &str) -> String {
    format!("native sandboxing is unavailable on {platform}")
}

/// What Native's probe reports on Linux (SPEC LL.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinuxReport {
    /// Bubblewrap's own probe: it passed, or the caller configured it (then
    /// its failure is the answer).
    Bubblewrap,
    /// Landlock's probe, with why Bubblewrap was passed over.
    Landlock { bubblewrap_reason: String },
    /// Unavailable, naming both reasons.
    Unavailable(String),
}

/// The report of a [`native_choice`].
pub fn linux_report(
    choice: std::result::Result<NativeChoice, String>,
    bubblewrap_configured: bool,
) -> LinuxReport {
    match choice {
        Ok(NativeChoice::Bubblewrap) => LinuxReport::Bubblewrap,
        Ok(NativeChoice::Landlock { bubblewrap_reason }) => {
            LinuxReport::Landlock { bubblewrap_reason }
        }
        Err(_) if bubblewrap_configured => LinuxReport::Bubblewrap,
        Err(reason) => LinuxReport::Unavailable(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_reports_the_choice_or_a_configured_bubblewrap() {
        assert_eq!(
            linux_report(Ok(NativeChoice::Bubblewrap), false),
            LinuxReport::Bubblewrap
        );
        let landlock = NativeChoice::Landlock {
            bubblewrap_reason: "no userns".into(),
        };
        assert_eq!(
            linux_report(Ok(landlock), false),
            LinuxReport::Landlock {
                bubblewrap_reason: "no userns".into()
            }
        );
        assert_eq!(
            linux_report(Err("no bwrap".into()), true),
            LinuxReport::Bubblewrap
        );
        assert_eq!(
            linux_report(Err("both".into()), false),
            LinuxReport::Unavailable("both".into())
        );
        assert_eq!(
            unavailable_on("x86_64-freebsd"),
            "native sandboxing is unavailable on x86_64-freebsd"
        );
    }

    #[test]
    fn native_prefers_bubblewrap_then_landlock_and_names_both_reasons() {
        assert_eq!(
            native_choice(Ok(()), Ok(()), false),
            Ok(NativeChoice::Bubblewrap)
        );
        assert_eq!(
            native_choice(Err("no userns".into()), Ok(()), false),
            Ok(NativeChoice::Landlock {
                bubblewrap_reason: "no userns".into()
            })
        );
        assert_eq!(
            native_choice(Err("no bwrap".into()), Ok(()), true),
            Err("no bwrap".into())
        );
        let both = native_choice(Err("no userns".into()), Err("ABI 4".into()), false).unwrap_err();
        assert!(
            both.contains("Bubblewrap: no userns") && both.contains("Landlock: ABI 4"),
            "{both}"
        );
        assert!(both.contains("sysctl") && both.contains("ABI 6"), "{both}");
    }
}
