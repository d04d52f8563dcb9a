//! Which isolated backend `Sandboxes::Native` uses on Linux (SPEC LL.2).
//! Plain decisions on probe results, so it is compiled (and tested) on every
//! platform; the probes themselves live with their backends.

use super::bubblewrap::Probe;
use super::effective::Backend;
use super::launch_steps::Platform;
use crate::error::Error;

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

/// Why Native cannot run here (SPEC §22, LL.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The caller configured Bubblewrap and its probe failed (the reason).
    #[error("{0}")]
    Bubblewrap(String),
    /// Neither Bubblewrap nor Landlock can run, each for its reason.
    #[error(
        "native sandboxing is unavailable: Bubblewrap: {bubblewrap}; Landlock: {landlock}. \
         Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
         kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap), \
         or run a kernel with Landlock ABI {abi} (Linux 6.12 or later)",
        abi = super::LANDLOCK_MINIMUM_ABI
    )]
    Both {
        bubblewrap: String,
        landlock: String,
    },
}

/// Native's choice from why each backend's probe says it cannot run here
/// (None: it can).
pub fn native_choice(
    bubblewrap: Option<String>,
    landlock: Option<String>,
    bubblewrap_configured: bool,
) -> std::result::Result<NativeChoice, Unavailable> {
    let Some(bubblewrap_reason) = bubblewrap else {
        return Ok(NativeChoice::Bubblewrap);
    };
    if bubblewrap_configured {
        return Err(Unavailable::Bubblewrap(bubblewrap_reason));
    }
    match landlock {
        None => Ok(NativeChoice::Landlock { bubblewrap_reason }),
        Some(landlock) => Err(Unavailable::Both {
            bubblewrap: bubblewrap_reason,
            landlock,
        }),
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
    choice: std::result::Result<NativeChoice, Unavailable>,
    bubblewrap_configured: bool,
) -> LinuxReport {
    match choice {
        Ok(NativeChoice::Bubblewrap) => LinuxReport::Bubblewrap,
        Ok(NativeChoice::Landlock { bubblewrap_reason }) => {
            LinuxReport::Landlock { bubblewrap_reason }
        }
        Err(_) if bubblewrap_configured => LinuxReport::Bubblewrap,
        Err(reason) => LinuxReport::Unavailable(reason.to_string()),
    }
}

/// The backend Native builds (LL.2) on `platform`: Seatbelt on macOS; on Linux Bubblewrap when the
/// caller gave an option only it understands (`configured`), else as
/// [`native_choice`] decides from both probes (DependencyError naming both
/// reasons); UnsupportedPlatformError anywhere else.
pub fn chosen(platform: &str, configured: bool) -> crate::Result<Backend> {
    match Platform::of(platform) {
        Platform::MacOs => Ok(Backend::Seatbelt),
        Platform::Other => Err(Error::UnsupportedPlatform(unavailable_on(platform))),
        Platform::Linux if configured => Ok(Backend::Bubblewrap),
        Platform::Linux => {
            let bubblewrap = super::bubblewrap::probe(platform, None).unavailable;
            match native_choice(bubblewrap, landlock_unavailable(platform), false) {
                Ok(NativeChoice::Bubblewrap) => Ok(Backend::Bubblewrap),
                Ok(NativeChoice::Landlock { .. }) => Ok(Backend::Landlock),
                Err(reason) => Err(Error::Dependency(reason.to_string())),
            }
        }
    }
}

/// What Native's probe reports on Linux, from Bubblewrap's probe (run
/// with the caller's options) and Landlock's.
pub fn linux_probe(platform: &str, configured: bool, bubblewrap: &Probe) -> LinuxReport {
    let landlock = landlock_unavailable(platform);
    let choice = native_choice(bubblewrap.unavailable.clone(), landlock, configured);
    linux_report(choice, configured)
}

/// Why the Landlock backend cannot run on `platform`, if it cannot.
pub fn landlock_unavailable(platform: &str) -> Option<String> {
    #[cfg(target_os = "linux")]
    return super::landlock::host::probe(platform).unavailable;
    #[cfg(not(target_os = "linux"))]
    return {
        let _ = platform;
        Some("Landlock is supported only on Linux".to_owned())
    };
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
        let bubblewrap = || Unavailable::Bubblewrap("no bwrap".into());
        assert_eq!(
            linux_report(Err(bubblewrap()), true),
            LinuxReport::Bubblewrap
        );
        assert_eq!(
            linux_report(Err(bubblewrap()), false),
            LinuxReport::Unavailable("no bwrap".into())
        );
        assert_eq!(
            unavailable_on("x86_64-freebsd"),
            "native sandboxing is unavailable on x86_64-freebsd"
        );
    }

    #[test]
    fn native_builds_seatbelt_on_macos_a_configured_bubblewrap_on_linux_and_nothing_elsewhere() {
        assert_eq!(chosen("arm64-darwin23", false), Ok(Backend::Seatbelt));
        assert_eq!(chosen("x86_64-linux", true), Ok(Backend::Bubblewrap));
        let elsewhere = chosen("x86_64-freebsd", false).unwrap_err();
        assert_eq!(elsewhere.kind(), crate::error::Kind::UnsupportedPlatform);
        assert_eq!(elsewhere.message(), unavailable_on("x86_64-freebsd"));
        assert_eq!(
            landlock_unavailable("arm64-darwin23").as_deref(),
            Some("Landlock is supported only on Linux")
        );
    }

    #[test]
    fn native_probe_on_linux_reports_a_configured_bubblewrap_even_when_it_cannot_run() {
        let missing = Probe {
            unavailable: Some("no bwrap here".into()),
            resolved: None,
        };
        assert_eq!(
            linux_probe("x86_64-linux", true, &missing),
            LinuxReport::Bubblewrap
        );
        let passed = Probe {
            unavailable: None,
            resolved: None,
        };
        assert_eq!(
            linux_probe("x86_64-linux", false, &passed),
            LinuxReport::Bubblewrap
        );
    }

    #[test]
    fn native_prefers_bubblewrap_then_landlock_and_names_both_reasons() {
        assert_eq!(
            native_choice(None, None, false),
            Ok(NativeChoice::Bubblewrap)
        );
        assert_eq!(
            native_choice(Some("no userns".into()), None, false),
            Ok(NativeChoice::Landlock {
                bubblewrap_reason: "no userns".into()
            })
        );
        assert_eq!(
            native_choice(Some("no bwrap".into()), None, true),
            Err(Unavailable::Bubblewrap("no bwrap".into()))
        );
        let both = native_choice(Some("no userns".into()), Some("ABI 4".into()), false);
        let both = both.unwrap_err().to_string();
        assert!(
            both.contains("Bubblewrap: no userns") && both.contains("Landlock: ABI 4"),
            "{both}"
        );
        assert!(both.contains("sysctl") && both.contains("ABI 6"), "{both}");
    }
}
