use super::*;

fn bind(read_only: bool) -> ExpectedMount {
    ExpectedMount {
        path: "/work/a/src".into(),
        kind: MountKind::Bind { dev: 8, ino: 42 },
        read_only,
    }
}

fn mask() -> ExpectedMount {
    ExpectedMount {
        path: "/work/a/cache".into(),
        kind: MountKind::Tmpfs,
        read_only: true,
    }
}

/// The read-only bind of the grant whose handle is (8, 42), as bwrap makes it.
const BOUND: Observed = Observed {
    mount_root: true,
    dev: 8,
    ino: 42,
    tmpfs: false,
    read_only: true,
};

#[test]
fn the_grants_own_directory_mounted_read_only_where_asked_passes() {
    assert_eq!(judge(&bind(true), &BOUND), Ok(()));
    // A writable bind need not be read-only, and may be.
    let writable = Observed {
        read_only: false,
        ..BOUND
    };
    assert_eq!(judge(&bind(false), &writable), Ok(()));
    assert_eq!(judge(&bind(false), &BOUND), Ok(()));
}

#[test]
fn the_real_directory_with_nothing_mounted_on_it_is_refused() {
    // What the host sees when the bind landed on a symlink's target: the
    // very directory (same device and inode), but not a mount root.
    let bare = Observed {
        mount_root: false,
        read_only: false,
        ..BOUND
    };
    assert_eq!(judge(&bind(true), &bare), Err("nothing is mounted there"));
    let bare_tmpfs = Observed {
        mount_root: false,
        tmpfs: true,
        ..BOUND
    };
    assert_eq!(judge(&mask(), &bare_tmpfs), Err("nothing is mounted there"));
}

#[test]
fn another_directory_mounted_there_is_refused() {
    for (dev, ino) in [(8, 43), (9, 42)] {
        let other = Observed { dev, ino, ..BOUND };
        assert_eq!(
            judge(&bind(true), &other),
            Err("another directory is mounted there")
        );
    }
    // A tmpfs where the grant belongs is another directory too.
    let tmpfs = Observed {
        tmpfs: true,
        dev: 50,
        ino: 1,
        ..BOUND
    };
    assert!(judge(&bind(true), &tmpfs).is_err());
}

#[test]
fn a_writable_view_where_a_read_only_one_belongs_is_refused() {
    let writable = Observed {
        read_only: false,
        ..BOUND
    };
    assert_eq!(
        judge(&bind(true), &writable),
        Err("it is not read-only there")
    );
    let open_mask = Observed {
        tmpfs: true,
        read_only: false,
        ..BOUND
    };
    assert_eq!(judge(&mask(), &open_mask), Err("it is not read-only there"));
}

#[test]
fn a_mask_must_be_a_read_only_tmpfs_mount() {
    let masked = Observed {
        tmpfs: true,
        dev: 50,
        ino: 1,
        ..BOUND
    };
    assert_eq!(judge(&mask(), &masked), Ok(()));
    // A bind of some directory (not a tmpfs) where the mask belongs.
    assert_eq!(judge(&mask(), &BOUND), Err("no mask is mounted there"));
}

#[test]
fn only_a_read_on_the_block_descriptor_means_the_sandbox_is_set_up() {
    let read = format!(
        "{} 0x15 0x7ffc748b64d7 0x1 0x0 0x0 0x0 0x7ffc 0x7f90",
        libc::SYS_read
    );
    assert!(blocked_reading(&read, 21));
    assert!(!blocked_reading(&read, 20));
    let mount = format!("{} 0x15 0x0 0x0 0x0 0x0 0x0 0x7ffc 0x7f90", libc::SYS_mount);
    assert!(!blocked_reading(&mount, 21));
    assert!(!blocked_reading("running", 21));
    assert!(!blocked_reading("-1 0x0 0x0", 21));
    assert!(!blocked_reading("", 21));
}

#[test]
fn a_report_naming_our_own_mount_namespace_is_refused() {
    let report = Report {
        pid: std::process::id() as i32,
        net: None,
        mnt: None,
    };
    let refused = wait_until_held(report, 3, Duration::from_millis(10)).unwrap_err();
    assert_eq!(refused, CheckError::OtherNamespace);
}

#[test]
fn a_destination_reached_through_a_symlink_cannot_be_checked() {
    // Our own root: /proc is a mount root of a procfs.
    let report = Report {
        pid: std::process::id() as i32,
        net: None,
        mnt: None,
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::os::unix::fs::symlink("real", dir.path().join("link")).unwrap();
    let expected = |path: PathBuf| ExpectedMount {
        path,
        kind: MountKind::Tmpfs,
        read_only: false,
    };
    let through_link = verify(report, &[expected(dir.path().join("link"))]).unwrap_err();
    assert!(
        matches!(through_link, CheckError::Uncheckable { .. }),
        "{through_link}"
    );
    let plain = verify(report, &[expected(dir.path().join("real"))]).unwrap_err();
    assert!(
        matches!(plain, CheckError::Moved { why, .. } if why.contains("nothing is mounted there")),
        "{plain}"
    );
}
