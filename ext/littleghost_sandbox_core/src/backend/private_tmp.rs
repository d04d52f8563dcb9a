//! The private temporary directory of the Landlock and Seatbelt sandboxes:
//! created at `open`, handed to each launch as `TMPDIR`.

use std::path::PathBuf;

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
