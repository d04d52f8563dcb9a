//! The backend options of B.4 as plain data: what the binding read from the
//! keywords, checked and completed with the defaults here ([`Options`]), and
//! the host checks that depend on them alone: the probe (B.2), the steps of
//! `open` before the gateway (B.5), and the relay helper (B.4 `relay:`).

use std::path::{Path, PathBuf};

use super::executable::{self, Resolved};
use super::{functional_probe, ProcMount, DEFAULT_EXECUTABLE, DEFAULT_TMPFS_SIZE, RUNTIME_ROOTS};
use crate::error::{Error, Result};
use crate::fs::anchor::Anchors;
use crate::grants::Grant;
use crate::helper;
use crate::launch::Pins;

/// A numeric keyword as given: its value when it is an Integer (None
/// otherwise, or when it does not fit), and how Ruby shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number {
    pub integer: Option<i128>,
    pub shown: String,
}

/// The keywords of B.4 as the binding read them; None is absent or nil.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keywords {
    /// `bubblewrap:`, through `String()`.
    pub executable: Option<PathBuf>,
    /// `platform:`, or the host's `RUBY_PLATFORM`.
    pub platform: String,
    pub proc_mount: Option<ProcMount>,
    /// Mount targets, already normalised as in 9.1.
    pub tmpfs: Option<Vec<PathBuf>>,
    pub masks: Option<Vec<PathBuf>>,
    /// Absolute host paths.
    pub runtime_roots: Option<Vec<PathBuf>>,
    pub uid: Option<Number>,
    pub gid: Option<Number>,
    pub tmpfs_size: Option<Number>,
    pub relay: Option<PathBuf>,
}

/// The backend options of B.4, checked, with the defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub executable: PathBuf,
    pub platform: String,
    pub proc_mount: ProcMount,
    pub tmpfs: Vec<PathBuf>,
    pub masks: Vec<PathBuf>,
    pub runtime_roots: Vec<PathBuf>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// Bytes each tmpfs may hold (H.3).
    pub tmpfs_size: u64,
    /// `relay:`: the relay helper; None means the gem's own.
    pub relay: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            executable: PathBuf::from(DEFAULT_EXECUTABLE),
            platform: String::new(),
            proc_mount: ProcMount::New,
            tmpfs: default_tmpfs(),
            masks: Vec::new(),
            runtime_roots: RUNTIME_ROOTS.iter().map(PathBuf::from).collect(),
            uid: None,
            gid: None,
            tmpfs_size: DEFAULT_TMPFS_SIZE,
            relay: None,
        }
    }
}

impl ProcMount {
    /// `proc: :new` or `proc: :none` by the symbol's name; None for any other.
    pub fn named(name: &str) -> Option<ProcMount> {
        match name {
            "new" => Some(ProcMount::New),
            "none" => Some(ProcMount::None),
            _ => None,
        }
    }
}

/// The directories a launch mounts a fresh tmpfs on unless `tmpfs:` says otherwise (B.4).
pub fn default_tmpfs() -> Vec<PathBuf> {
    vec![PathBuf::from("/tmp"), PathBuf::from("/run")]
}

impl TryFrom<Keywords> for Options {
    type Error = Error;

    /// Fills in the defaults and refuses a bad `uid:`, `gid:` or `tmpfs_size:` (PolicyError).
    fn try_from(keywords: Keywords) -> Result<Options> {
        let defaults = Options::default();
        Ok(Options {
            executable: keywords.executable.unwrap_or(defaults.executable),
            platform: keywords.platform,
            proc_mount: keywords.proc_mount.unwrap_or(defaults.proc_mount),
            tmpfs: keywords.tmpfs.unwrap_or(defaults.tmpfs),
            masks: keywords.masks.unwrap_or(defaults.masks),
            runtime_roots: keywords.runtime_roots.unwrap_or(defaults.runtime_roots),
            uid: id_option("uid", keywords.uid.as_ref())?,
            gid: id_option("gid", keywords.gid.as_ref())?,
            tmpfs_size: tmpfs_size_option(keywords.tmpfs_size.as_ref())?,
            relay: keywords.relay,
        })
    }
}

/// `uid:`/`gid:` must be integers ≥ 0 that fit an id.
fn id_option(name: &str, value: Option<&Number>) -> Result<Option<u32>> {
    let Some(value) = value else { return Ok(None) };
    match value.integer.and_then(|i| u32::try_from(i).ok()) {
        Some(id) => Ok(Some(id)),
        None => Err(Error::Policy(format!(
            "bubblewrap {name} must be an integer >= 0"
        ))),
    }
}

/// `tmpfs_size:` (H.3) must be a positive integer (bytes); absent means the default.
fn tmpfs_size_option(value: Option<&Number>) -> Result<u64> {
    let Some(value) = value else {
        return Ok(DEFAULT_TMPFS_SIZE);
    };
    match value.integer.and_then(|i| u64::try_from(i).ok()) {
        Some(size) if size > 0 => Ok(size),
        _ => Err(crate::policy::Error::NotAPositiveSize {
            what: "bubblewrap tmpfs_size",
            shown: value.shown.clone(),
        }
        .into()),
    }
}

/// B.2: why bwrap at `executable` (by default [`DEFAULT_EXECUTABLE`]) cannot
/// serve on `platform`, or None when it can (this runs the functional probe).
pub fn unavailable_reason(platform: &str, executable: Option<&Path>) -> Option<String> {
    probe(platform, executable).unavailable
}

/// What B.2 found: why bwrap cannot serve (None when it can), and the
/// resolved bwrap when it got that far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub unavailable: Option<String>,
    pub resolved: Option<Resolved>,
}

/// B.2: the platform, then bwrap resolved and checked ([`executable::resolve`]:
/// absolute path, owner, version >= 0.8.0), then the functional probe.
pub fn probe(platform: &str, executable: Option<&Path>) -> Probe {
    let executable = executable.unwrap_or(Path::new(DEFAULT_EXECUTABLE));
    if !platform.contains("linux") {
        return Probe {
            unavailable: Some("Bubblewrap is supported only on Linux".into()),
            resolved: None,
        };
    }
    match executable::resolve(executable) {
        Err(reason) => Probe {
            unavailable: Some(reason.to_string()),
            resolved: None,
        },
        Ok(resolved) => Probe {
            unavailable: functional_probe(&resolved.path)
                .err()
                .map(|e| e.to_string()),
            resolved: Some(resolved),
        },
    }
}

impl Options {
    /// B.5 steps 1-3: the platform, bwrap, and the relay helper when the
    /// policy's network is `:allowlist`.
    pub fn check_host(&self, allowlist: bool) -> Result<()> {
        if !self.platform.contains("linux") {
            return Err(Error::UnsupportedPlatform(
                "Bubblewrap sandboxing is supported only on Linux".into(),
            ));
        }
        self.bwrap()?;
        #[cfg(target_os = "linux")]
        if allowlist {
            self.relay_data()?;
        }
        Ok(())
    }

    /// B.5 steps 4-6: the grant sources (directories, or not there yet), the
    /// pins of `grants`, then the functional probe.
    pub fn pin(&self, grants: &[Grant], anchors: Option<&Anchors>) -> Result<Pins> {
        if grants
            .iter()
            .any(|g| g.source.exists() && !g.source.is_dir())
        {
            return Err(Error::Policy(
                "sandbox mount source is not a directory".into(),
            ));
        }
        let pins = Pins::capture_from(grants, anchors)?;
        functional_probe(&self.bwrap()?.path).map_err(|e| Error::Dependency(e.to_string()))?;
        Ok(pins)
    }

    /// bwrap resolved and checked, once per process (B.2); DependencyError
    /// with the reason otherwise.
    pub fn bwrap(&self) -> Result<Resolved> {
        executable::resolve(&self.executable)
            .map_err(|reason| Error::Dependency(reason.to_string()))
    }

    /// The relay helper's bytes for one launch (bwrap copies them into the
    /// sandbox, [`super::RELAY_PATH`]): a fresh read-only descriptor of the
    /// gem's sealed copy, or of `relay:` when given (B.4), opened without
    /// following a final symlink and held to the same rule as the gem's
    /// helper (root's or ours, writable by nobody else). Missing or refused:
    /// DependencyError naming its path (B.5 step 3).
    #[cfg(target_os = "linux")]
    pub fn relay_data(&self) -> Result<std::os::fd::OwnedFd> {
        let Some(path) = &self.relay else {
            return Ok(helper::sealed()?.reopen()?);
        };
        let (file, _) = helper::open_verified("the relay helper", path)?;
        Ok(file.into())
    }
}
