//! The private temporary directory of the Landlock and Seatbelt sandboxes:
//! created at `open`, handed to each launch as `TMPDIR`.

use std::path::{Path, PathBuf};

use crate::error::{capability, Result};
use crate::fs::own::{self, OwnDirectory};
use crate::grants::Grant;

/// Landlock's private directory: made by handle ([`OwnDirectory`]) beneath
/// the host's `TMPDIR`, or beneath `/tmp` when `TMPDIR` lies inside a
/// writable grant, where a child could rename, replace or fill what the
/// sandbox keeps for itself (docs/security.md, "The gem's own
/// directories"). CapabilityError when `/tmp` does too.
pub fn own_private_directory(prefix: &str, grants: &[Grant]) -> Result<OwnDirectory> {
    let configured = std::env::temp_dir();
    let mut refused = Vec::new();
    for candidate in [configured.as_path(), Path::new("/tmp")] {
        let (parent, real) = own::open_parent(candidate).map_err(|e| {
            capability(format!(
                "landlock: cannot open the temporary directory {}: {e}",
                candidate.display()
            ))
        })?;
        if let Some(grant) = writable_grant_holding(grants, &real) {
            refused.push(format!("{} (inside {})", real.display(), grant.display()));
            continue;
        }
        return OwnDirectory::create(&parent, &real, prefix).map_err(|e| {
            capability(format!(
                "landlock: cannot create the private TMPDIR under {}: {e}",
                real.display()
            ))
        });
    }
    Err(capability(format!(
        "landlock: every temporary directory lies inside a writable grant ({}): the sandbox's \
         private TMPDIR must stay out of the child's reach; set TMPDIR to a directory outside the grants",
        refused.join(", ")
    )))
}

/// The writable grant `path` lies in (at or beneath its source or target).
fn writable_grant_holding<'a>(grants: &'a [Grant], path: &Path) -> Option<&'a Path> {
    grants
        .iter()
        .filter(|grant| grant.access.writable())
        .flat_map(|grant| [grant.source.as_path(), grant.target.as_path()])
        .find(|root| path.starts_with(root))
}

/// `environment` with `TMPDIR` set to the sandbox's private directory
/// (Landlock, Seatbelt): any earlier value is dropped.
pub fn with_tmpdir(
    mut environment: Vec<(String, String)>,
    tmpdir: String,
) -> Vec<(String, String)> {
    environment.retain(|(name, _)| name != "TMPDIR");
    environment.push(("TMPDIR".into(), tmpdir));
    environment
}

/// A new directory only its owner may enter, under the system's temporary
/// directory (`TMPDIR`), named `PREFIX<pid>-<time>-<attempt>` (Seatbelt's
/// private temporary directory, SB.4).
pub fn private_directory(prefix: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let mut attempt = 0;
    loop {
        let path = base.join(format!("{prefix}{}-{nanos}-{attempt}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1
            }
            result => return result.map(|()| path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_tmpdir_replaces_any_other() {
        let environment = vec![
            ("TMPDIR".to_string(), "/tmp".to_string()),
            ("A".to_string(), "1".to_string()),
        ];
        let merged = with_tmpdir(environment, "/private".into());
        assert_eq!(
            merged,
            [
                ("A".to_string(), "1".to_string()),
                ("TMPDIR".to_string(), "/private".to_string())
            ]
        );
    }

    #[test]
    fn a_tmpdir_inside_a_writable_grant_gives_way_to_tmp() {
        use crate::grants::Access;
        let grant = |path: &Path, access| Grant {
            source: path.to_path_buf(),
            target: path.to_path_buf(),
            access,
            tools: true,
            protect_aliases: false,
        };
        let (_, real) = own::open_parent(&std::env::temp_dir()).unwrap();
        let read_only = [grant(&real, Access::ReadOnly)];
        let made = own_private_directory("lg-test-", &read_only).unwrap();
        assert_eq!(made.path().parent(), Some(real.as_path()));
        made.remove().unwrap();
        if real != Path::new("/tmp") {
            let writable = [grant(&real, Access::ReadWrite)];
            let made = own_private_directory("lg-test-", &writable).unwrap();
            assert_eq!(made.path().parent(), Some(Path::new("/tmp")));
            made.remove().unwrap();
        }
        let everything = [grant(Path::new("/"), Access::ReadWrite)];
        let refused = own_private_directory("lg-test-", &everything).unwrap_err();
        assert!(refused
            .message()
            .contains("set TMPDIR to a directory outside the grants"));
    }

    #[test]
    fn a_private_directory_is_new_and_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let first = private_directory("lg-test-").unwrap();
        let second = private_directory("lg-test-").unwrap();
        assert_ne!(first, second);
        let mode = std::fs::metadata(&first).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::remove_dir(first).unwrap();
        std::fs::remove_dir(second).unwrap();
    }
}
