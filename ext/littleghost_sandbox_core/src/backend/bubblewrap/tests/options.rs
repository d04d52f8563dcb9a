//! The backend options of B.4: defaults, the checks of `uid:`, `gid:` and
//! `tmpfs_size:`, and the host checks of the probe and `open`.

use super::*;
use crate::error::{Error, Kind};
use std::os::unix::fs::PermissionsExt;

fn number(integer: i128) -> Option<Number> {
    Some(Number {
        integer: Some(integer),
        shown: integer.to_string(),
    })
}

fn not_integer(shown: &str) -> Option<Number> {
    Some(Number {
        integer: None,
        shown: shown.into(),
    })
}

fn options(keywords: Keywords) -> crate::Result<Options> {
    Options::try_from(keywords)
}

#[test]
fn absent_keywords_take_the_documented_defaults() {
    let options = options(Keywords::default()).unwrap();
    assert_eq!(options, Options::default());
    assert_eq!(options.executable, PathBuf::from("/usr/bin/bwrap"));
    assert_eq!(options.tmpfs, vec![PathBuf::from("/tmp"), "/run".into()]);
    assert_eq!(options.runtime_roots, vec![PathBuf::from("/usr")]);
    assert_eq!(options.proc_mount, ProcMount::New);
    assert_eq!(options.tmpfs_size, 256 * 1024 * 1024);
    assert!(options.masks.is_empty());
    assert_eq!(
        (options.uid, options.gid, options.relay),
        (None, None, None)
    );
}

#[test]
fn given_keywords_replace_the_defaults() {
    let options = options(Keywords {
        executable: Some("/opt/bwrap".into()),
        platform: "x86_64-linux".into(),
        proc_mount: Some(ProcMount::None),
        tmpfs: Some(vec!["/scratch".into()]),
        masks: Some(vec!["/w/secret".into()]),
        runtime_roots: Some(vec![]),
        uid: number(1000),
        gid: number(0),
        tmpfs_size: number(4096),
        relay: Some("/opt/relay".into()),
    })
    .unwrap();
    assert_eq!(options.executable, PathBuf::from("/opt/bwrap"));
    assert_eq!(options.platform, "x86_64-linux");
    assert_eq!(options.proc_mount, ProcMount::None);
    assert_eq!(options.tmpfs, vec![PathBuf::from("/scratch")]);
    assert_eq!(options.masks, vec![PathBuf::from("/w/secret")]);
    assert!(options.runtime_roots.is_empty());
    assert_eq!((options.uid, options.gid), (Some(1000), Some(0)));
    assert_eq!(options.tmpfs_size, 4096);
    assert_eq!(options.relay, Some(PathBuf::from("/opt/relay")));
}

#[test]
fn ids_must_be_integers_that_fit() {
    for (uid, gid) in [
        (number(-1), None),
        (None, number(-1)),
        (not_integer("\"1000\""), None),
        (number(i128::from(u32::MAX) + 1), None),
    ] {
        let name = if uid.is_some() { "uid" } else { "gid" };
        let error = options(Keywords {
            uid,
            gid,
            ..Keywords::default()
        })
        .unwrap_err();
        assert_eq!(
            error,
            policy(format!("bubblewrap {name} must be an integer >= 0"))
        );
    }
    let largest = options(Keywords {
        uid: number(i128::from(u32::MAX)),
        ..Keywords::default()
    });
    assert_eq!(largest.unwrap().uid, Some(u32::MAX));
}

#[test]
fn tmpfs_size_must_be_a_positive_integer_and_shows_what_was_given() {
    for (given, shown) in [
        (number(0), "0"),
        (number(-5), "-5"),
        (not_integer("\"8M\""), "\"8M\""),
        (not_integer("1.5"), "1.5"),
        (number(i128::from(u64::MAX) + 1), "18446744073709551616"),
    ] {
        let error = options(Keywords {
            tmpfs_size: given,
            ..Keywords::default()
        })
        .unwrap_err();
        let misshapen = crate::policy::Error::NotAPositiveSize {
            what: "bubblewrap tmpfs_size",
            shown: shown.to_owned(),
        };
        assert_eq!(error, misshapen.into());
        assert_eq!(error.kind(), Kind::Policy);
        let message =
            format!("bubblewrap tmpfs_size must be a positive integer (bytes), got {shown}");
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn the_probe_names_the_platform_then_the_missing_executable() {
    let missing = Path::new("/nonexistent/bwrap");
    assert_eq!(
        unavailable_reason("arm64-darwin23", Some(missing)).as_deref(),
        Some("Bubblewrap is supported only on Linux")
    );
    assert_eq!(
        unavailable_reason("x86_64-linux", Some(missing)),
        Some(missing_reason(missing))
    );
}

fn on_linux(executable: &Path) -> Options {
    Options {
        executable: executable.into(),
        platform: "x86_64-linux-gnu".into(),
        ..Options::default()
    }
}

/// An executable script in `dir`.
fn script(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A bwrap that reports 0.8.0 and fails everything else (the functional probe).
fn fake_bwrap(dir: &Path) -> PathBuf {
    let path = script(dir, "bwrap");
    let text = "#!/bin/sh\n[ \"$1\" = --version ] && echo 'bubblewrap 0.8.0' && exit 0\nexit 1\n";
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn open_checks_the_platform_then_bwrap_then_the_relay_helper() {
    let dir = tempfile::tempdir().unwrap();
    let bwrap = fake_bwrap(dir.path());
    let mut options = Options {
        platform: "arm64-darwin23".into(),
        ..on_linux(&bwrap)
    };
    let unsupported =
        Error::UnsupportedPlatform("Bubblewrap sandboxing is supported only on Linux".into());
    assert_eq!(options.check_host(false), Err(unsupported));
    options.platform = "x86_64-linux".into();
    options.executable = dir.path().join("missing");
    let missing = Error::Dependency(missing_reason(&options.executable));
    assert_eq!(options.check_host(false), Err(missing));
    options.executable = bwrap;
    options.relay = Some(dir.path().join("relay"));
    assert_eq!(options.check_host(false), Ok(()));
    let message = format!(
        "the relay helper is missing or not executable at {} (",
        dir.path().join("relay").display()
    );
    let refused = options.check_host(true).unwrap_err();
    assert_eq!(refused.kind(), Kind::Dependency);
    assert!(refused.to_string().starts_with(&message), "{refused}");
}

#[test]
fn a_configured_relay_helper_must_be_an_executable_file_only_its_owner_can_change() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let relay = script(dir.path(), "relay");
    let mut options = Options {
        relay: Some(relay.clone()),
        ..Options::default()
    };
    let mut bytes = Vec::new();
    std::fs::File::from(options.relay_data().unwrap())
        .read_to_end(&mut bytes)
        .unwrap();
    assert_eq!(bytes, std::fs::read(&relay).unwrap());
    std::fs::set_permissions(&relay, std::fs::Permissions::from_mode(0o775)).unwrap();
    let refused = options.relay_data().unwrap_err();
    assert!(refused
        .message()
        .contains("writable by its group or others"));
    std::fs::set_permissions(&relay, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(options.relay_data().unwrap_err().kind(), Kind::Dependency);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&relay, &link).unwrap();
    options.relay = Some(link);
    assert!(options
        .relay_data()
        .unwrap_err()
        .message()
        .contains("is a symlink"));
    options.relay = Some(dir.path().to_path_buf());
    assert_eq!(options.relay_data().unwrap_err().kind(), Kind::Dependency);
}

#[test]
fn pinning_refuses_a_file_source_then_a_missing_one_before_probing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let options = on_linux(Path::new("/nonexistent/bwrap"));
    let not_directory = policy("sandbox mount source is not a directory");
    assert_eq!(
        options.pin(
            &[rw(dir.path().to_str().unwrap()), rw(file.to_str().unwrap())],
            None
        ),
        Err(not_directory)
    );
    let gone = dir.path().join("gone");
    assert!(matches!(
        options.pin(&[rw(gone.to_str().unwrap())], None),
        Err(Error::Policy(_))
    ));
}

#[test]
fn pinning_ends_with_the_functional_probe() {
    let dir = tempfile::tempdir().unwrap();
    let failing = fake_bwrap(dir.path());
    let options = on_linux(&failing);
    let result = options.pin(&[rw(dir.path().to_str().unwrap())], None);
    let failed = Error::Dependency(super::super::ProbeFailure::from_stderr(b"").to_string());
    assert_eq!(result.map(|_| ()), Err(failed));
}

#[test]
fn proc_names_new_or_none() {
    assert_eq!(ProcMount::named("new"), Some(ProcMount::New));
    assert_eq!(ProcMount::named("none"), Some(ProcMount::None));
    assert_eq!(ProcMount::named("host"), None);
}
