//! The host's trust roots for a sandboxed TLS client (G.5): which host
//! directories hold them, the variables naming them, and read-only handles
//! on those directories for a root that does not have them (Bubblewrap's
//! isolated root has no `/etc`).
//!
//! Only certificate directories are bound, never `/etc/ssl` itself: its
//! `private/` holds the host's private keys, which a sandbox run as root
//! (owner of the directory) could otherwise read.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, Mode, OFlags};

/// Directories holding public trust roots, on the common layouts: Debian,
/// Ubuntu, Alpine and Arch (`/etc/ssl/certs`, whose hash links point into
/// `/usr/share/ca-certificates` or the next two), Arch's extracted bundles,
/// Fedora and RHEL (`/etc/pki/...`). Each is bound at its own path when the
/// host has it.
pub const DIRECTORIES: [&str; 4] = [
    "/etc/ssl/certs",
    "/etc/ca-certificates/extracted",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust/extracted",
];

/// The one-file bundle, first found wins: where OpenSSL, curl, Ruby, Python
/// and git look on Debian-like hosts, then on Fedora-like ones.
pub const BUNDLES: [&str; 2] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

/// The directory form (OpenSSL's hashed `CApath`).
pub const DIRECTORY_FORM: &str = "/etc/ssl/certs";

/// The variables naming the bundle file: OpenSSL (curl, Ruby, Python's
/// `ssl`), Python `requests`, curl, Node.js (added to its own roots) and git.
pub const BUNDLE_VARIABLES: [&str; 5] = crate::network::inspect::BUNDLE_VARIABLES;

/// The variables pointing a child's TLS clients at the host's trust roots
/// (`SSL_CERT_FILE` and the others of [`BUNDLE_VARIABLES`] at the bundle,
/// `SSL_CERT_DIR` at the directory form), for those the host has. An
/// inspecting gateway's own variables (its bundle of these roots plus the
/// sandbox CA) sit above these in the merge.
pub fn environment() -> Vec<(String, String)> {
    environment_at(Path::new("/"))
}

fn environment_at(host_root: &Path) -> Vec<(String, String)> {
    let on_host = |path: &str| host_root.join(path.trim_start_matches('/'));
    let mut environment = Vec::new();
    if let Some(bundle) = BUNDLES.iter().find(|b| on_host(b).is_file()) {
        for name in BUNDLE_VARIABLES {
            environment.push((name.to_string(), bundle.to_string()));
        }
    }
    if on_host(DIRECTORY_FORM).is_dir() {
        environment.push(("SSL_CERT_DIR".to_string(), DIRECTORY_FORM.to_string()));
    }
    environment
}

/// Read-only handles on the host's trust directories ([`DIRECTORIES`] that
/// exist), each with the in-sandbox path it is bound at. Opened per launch,
/// so a host's `update-ca-certificates` reaches the next program. The
/// directories are the host administrator's (root-owned, outside every
/// grant), so a symlinked one (`/etc/ssl/certs` -> `../pki/tls/certs`) is
/// followed.
#[derive(Debug, Default)]
pub struct TrustStore(Vec<(OwnedFd, PathBuf)>);

impl TrustStore {
    /// The host's trust directories, opened now; none found is an empty store.
    pub fn open() -> TrustStore {
        let mut opened = Vec::new();
        for directory in DIRECTORIES {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            if let Ok(fd) = rfs::open(directory, flags, Mode::empty()) {
                opened.push((fd, PathBuf::from(directory)));
            }
        }
        TrustStore(opened)
    }

    /// (descriptor, in-sandbox path) of each directory, in order.
    pub fn binds(&self) -> Vec<(RawFd, PathBuf)> {
        self.0
            .iter()
            .map(|(fd, path)| (fd.as_raw_fd(), path.clone()))
            .collect()
    }

    /// The handles, to hold until the spawn.
    pub fn into_fds(self) -> Vec<OwnedFd> {
        self.0.into_iter().map(|(fd, _)| fd).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_name_the_first_bundle_and_the_directory_form_the_host_has() {
        let host = tempfile::tempdir().unwrap();
        assert_eq!(environment_at(host.path()), Vec::new());
        std::fs::create_dir_all(host.path().join("etc/pki/tls/certs")).unwrap();
        std::fs::write(host.path().join("etc/pki/tls/certs/ca-bundle.crt"), "pem").unwrap();
        let fedora = environment_at(host.path());
        assert_eq!(fedora.len(), 5);
        assert!(fedora
            .iter()
            .all(|(_, value)| value == "/etc/pki/tls/certs/ca-bundle.crt"));
        std::fs::create_dir_all(host.path().join("etc/ssl/certs")).unwrap();
        std::fs::write(host.path().join("etc/ssl/certs/ca-certificates.crt"), "pem").unwrap();
        let debian = environment_at(host.path());
        assert!(debian.contains(&(
            "SSL_CERT_FILE".to_string(),
            "/etc/ssl/certs/ca-certificates.crt".to_string()
        )));
        assert!(debian.contains(&("SSL_CERT_DIR".to_string(), "/etc/ssl/certs".to_string())));
    }

    #[test]
    fn only_certificate_directories_are_opened_never_etc_ssl_itself() {
        let store = TrustStore::open();
        for (_, path) in store.binds() {
            assert!(DIRECTORIES.contains(&path.to_str().unwrap()), "{path:?}");
            assert_ne!(path, Path::new("/etc/ssl"));
        }
    }
}
