//! SPEC H.2: nothing a filtered child writes may carry authority on the host.
//! Each test re-executes this binary with a fresh directory as its child mode;
//! the child installs the lenient filter (the planting rules hold for every
//! child), creates `file` there with a plain mode, makes the raw calls of one
//! behaviour and prints their outcomes, which the parent then checks along
//! with what the directory holds afterwards.

use super::*;
use std::ffi::CString;

/// The outcomes one child reports, as (name, "ok" or an errno name).
type Outcomes = Vec<(&'static str, String)>;

/// The directory a child probes and the means to name paths in it.
struct Probe {
    dir: String,
    /// `dir/file`, created by the child before any probe runs.
    file: CString,
}

impl Probe {
    fn path(&self, name: &str) -> CString {
        CString::new(format!("{}/{name}", self.dir)).unwrap()
    }
    fn dir(&self) -> CString {
        CString::new(self.dir.clone()).unwrap()
    }
}

const AT: i64 = libc::AT_FDCWD as i64;
const CREAT: i64 = libc::O_CREAT as i64 | libc::O_WRONLY as i64;

/// A C string's address as a raw syscall argument.
fn p(c: &CString) -> i64 {
    c.as_ptr() as i64
}

/// The outcome of one raw syscall with four arguments.
fn sys(nr: libc::c_long, args: [i64; 4]) -> String {
    // SAFETY: every pointer argument the probes pass is a live CString of
    // the caller; the calls only read it, and their results are reported,
    // never trusted.
    outcome(unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], 0i64, 0i64) })
}

/// In the child (whose mode is a directory): installs the lenient filter,
/// creates `file`, prints the outcomes of `probe`. In the parent: runs the
/// child `name` in a fresh directory, asserts the creation of `file` and
/// every `expected` outcome, then that nothing in the directory (nor the
/// directory itself) has a set-id bit and that it holds only plain files
/// and FIFOs.
fn check_planting(name: &str, probe: fn(&Probe) -> Outcomes, expected: &[(&str, &str)]) {
    if let Ok(dir) = std::env::var(CHILD_MODE) {
        if !dir.starts_with('/') {
            return;
        }
        // The lenient filter: the planting rules hold for every child.
        install_filter(false);
        let file = CString::new(format!("{dir}/file")).unwrap();
        let probe_dir = Probe { dir, file };
        let created = sys(libc::SYS_openat, [AT, p(&probe_dir.file), CREAT, 0o755]);
        println!("openat-plain: {created}");
        for (name, result) in probe(&probe_dir) {
            println!("{name}: {result}");
        }
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let out = run_child(name, dir.path().to_str().unwrap());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, result) in [("openat-plain", "ok")].iter().chain(expected) {
        assert!(
            stdout.contains(&format!("{name}: {result}\n")),
            "{name}: {result}\n{stdout}"
        );
    }
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let meta = entry.unwrap().metadata().unwrap();
        assert_eq!(meta.permissions().mode() & 0o6000, 0, "{meta:?}");
        assert!(meta.is_file() || meta.file_type().is_fifo(), "{meta:?}");
    }
    let meta = std::fs::metadata(dir.path()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o6000, 0);
}

#[test]
fn a_filtered_process_cannot_create_set_id_files() {
    fn probe(d: &Probe) -> Outcomes {
        #[allow(unused_mut)] // pushed to on x86_64 only
        let mut lines = vec![
            (
                "openat-suid",
                sys(libc::SYS_openat, [AT, p(&d.path("s1")), CREAT, 0o4755]),
            ),
            (
                "openat-sgid",
                sys(libc::SYS_openat, [AT, p(&d.path("s2")), CREAT, 0o2755]),
            ),
            (
                "openat-nocreat-suid",
                sys(
                    libc::SYS_openat,
                    [AT, p(&d.file), libc::O_RDONLY as i64, 0o4755],
                ),
            ),
            (
                "openat-tmpfile-suid",
                sys(
                    libc::SYS_openat,
                    [
                        AT,
                        p(&d.dir()),
                        libc::O_TMPFILE as i64 | libc::O_RDWR as i64,
                        0o4755,
                    ],
                ),
            ),
            (
                "openat2",
                sys(libc::SYS_openat2, [AT, p(&d.path("o2")), 0, 0]),
            ),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            lines.push((
                "open-suid",
                sys(libc::SYS_open, [p(&d.path("s3")), CREAT, 0o6755, 0]),
            ));
            lines.push((
                "creat-suid",
                sys(libc::SYS_creat, [p(&d.path("s4")), 0o4755, 0, 0]),
            ));
        }
        lines
    }
    #[allow(unused_mut)] // extended on x86_64 only
    let mut expected = vec![
        ("openat-suid", "EPERM"),
        ("openat-sgid", "EPERM"),
        ("openat-nocreat-suid", "ok"),
        ("openat-tmpfile-suid", "EPERM"),
        ("openat2", "ENOSYS"),
    ];
    #[cfg(target_arch = "x86_64")]
    expected.extend([("open-suid", "EPERM"), ("creat-suid", "EPERM")]);
    check_planting(
        "seccomp::tests::planting::a_filtered_process_cannot_create_set_id_files",
        probe,
        &expected,
    );
}

#[test]
fn a_filtered_process_cannot_set_set_id_bits() {
    fn probe(d: &Probe) -> Outcomes {
        let file = &d.file;
        let mut lines = vec![
            (
                "fchmodat-plain",
                sys(libc::SYS_fchmodat, [AT, p(file), 0o700, 0]),
            ),
            (
                "fchmodat-suid",
                sys(libc::SYS_fchmodat, [AT, p(file), 0o4755, 0]),
            ),
            (
                "fchmodat-sgid",
                sys(libc::SYS_fchmodat, [AT, p(file), 0o2755, 0]),
            ),
            (
                "fchmodat-sgid-dir",
                sys(libc::SYS_fchmodat, [AT, p(&d.dir()), 0o2775, 0]),
            ),
            (
                "fchmodat2-suid",
                sys(libc::SYS_fchmodat2, [AT, p(file), 0o4755, 0]),
            ),
        ];
        // SAFETY: `file` is a live NUL-terminated path; the fd is only
        // passed to fchmod below and closes when the child exits.
        let fd = unsafe { libc::open(file.as_ptr(), libc::O_RDONLY) } as i64;
        lines.push(("fchmod-suid", sys(libc::SYS_fchmod, [fd, 0o4755, 0, 0])));
        #[cfg(target_arch = "x86_64")]
        {
            lines.push(("chmod-suid", sys(libc::SYS_chmod, [p(file), 0o4755, 0, 0])));
            lines.push(("chmod-plain", sys(libc::SYS_chmod, [p(file), 0o755, 0, 0])));
        }
        lines
    }
    let mut expected = vec![
        ("fchmodat-plain", "ok"),
        ("fchmodat-suid", "EPERM"),
        ("fchmodat-sgid", "EPERM"),
        ("fchmodat-sgid-dir", "EPERM"),
        ("fchmodat2-suid", "EPERM"),
        ("fchmod-suid", "EPERM"),
    ];
    #[cfg(target_arch = "x86_64")]
    expected.extend([("chmod-suid", "EPERM"), ("chmod-plain", "ok")]);
    check_planting(
        "seccomp::tests::planting::a_filtered_process_cannot_set_set_id_bits",
        probe,
        &expected,
    );
}

#[test]
fn a_filtered_process_cannot_plant_devices() {
    fn probe(d: &Probe) -> Outcomes {
        #[allow(unused_mut)] // pushed to on x86_64 only
        let mut lines = vec![
            (
                "mknodat-fifo",
                sys(
                    libc::SYS_mknodat,
                    [AT, p(&d.path("fifo")), (libc::S_IFIFO | 0o644) as i64, 0],
                ),
            ),
            (
                "mknodat-char",
                sys(
                    libc::SYS_mknodat,
                    [
                        AT,
                        p(&d.path("null")),
                        (libc::S_IFCHR | 0o666) as i64,
                        libc::makedev(1, 3) as i64,
                    ],
                ),
            ),
            (
                "mknodat-block",
                sys(
                    libc::SYS_mknodat,
                    [
                        AT,
                        p(&d.path("blk")),
                        (libc::S_IFBLK | 0o666) as i64,
                        libc::makedev(7, 0) as i64,
                    ],
                ),
            ),
            (
                "mknodat-suid",
                sys(
                    libc::SYS_mknodat,
                    [AT, p(&d.path("reg")), (libc::S_IFREG | 0o4755) as i64, 0],
                ),
            ),
        ];
        #[cfg(target_arch = "x86_64")]
        lines.push((
            "mknod-char",
            sys(
                libc::SYS_mknod,
                [
                    p(&d.path("null2")),
                    (libc::S_IFCHR | 0o666) as i64,
                    libc::makedev(1, 3) as i64,
                    0,
                ],
            ),
        ));
        lines
    }
    #[allow(unused_mut)] // extended on x86_64 only
    let mut expected = vec![
        ("mknodat-fifo", "ok"),
        ("mknodat-char", "EPERM"),
        ("mknodat-block", "EPERM"),
        ("mknodat-suid", "EPERM"),
    ];
    #[cfg(target_arch = "x86_64")]
    expected.push(("mknod-char", "EPERM"));
    check_planting(
        "seccomp::tests::planting::a_filtered_process_cannot_plant_devices",
        probe,
        &expected,
    );
}

#[test]
fn a_filtered_process_cannot_hand_files_to_foreign_owners() {
    fn probe(d: &Probe) -> Outcomes {
        let file = &d.file;
        // SAFETY: getuid and getgid take nothing and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid() as i64, libc::getgid() as i64) };
        let mut lines = vec![
            (
                "fchownat-own",
                sys(libc::SYS_fchownat, [AT, p(file), uid, gid]),
            ),
            (
                "fchownat-unchanged",
                sys(libc::SYS_fchownat, [AT, p(file), -1, -1]),
            ),
            (
                "fchownat-other-uid",
                sys(libc::SYS_fchownat, [AT, p(file), 4242, -1]),
            ),
            (
                "fchownat-other-gid",
                sys(libc::SYS_fchownat, [AT, p(file), -1, 4242]),
            ),
        ];
        // SAFETY: `file` is a live NUL-terminated path; the fd is only
        // passed to fchown below and closes when the child exits.
        let fd = unsafe { libc::open(file.as_ptr(), libc::O_RDONLY) } as i64;
        lines.push(("fchown-other", sys(libc::SYS_fchown, [fd, 4242, 4242, 0])));
        #[cfg(target_arch = "x86_64")]
        {
            lines.push(("chown-other", sys(libc::SYS_chown, [p(file), 4242, -1, 0])));
            lines.push((
                "lchown-other",
                sys(libc::SYS_lchown, [p(file), -1, 4242, 0]),
            ));
        }
        lines
    }
    let mut expected = vec![
        ("fchownat-own", "ok"),
        ("fchownat-unchanged", "ok"),
        ("fchownat-other-uid", "EPERM"),
        ("fchownat-other-gid", "EPERM"),
        ("fchown-other", "EPERM"),
    ];
    #[cfg(target_arch = "x86_64")]
    expected.extend([("chown-other", "EPERM"), ("lchown-other", "EPERM")]);
    check_planting(
        "seccomp::tests::planting::a_filtered_process_cannot_hand_files_to_foreign_owners",
        probe,
        &expected,
    );
}

#[test]
fn a_filtered_process_cannot_set_xattrs_or_use_io_uring() {
    fn probe(d: &Probe) -> Outcomes {
        let setxattr = |name: &std::ffi::CStr| {
            // SAFETY: the path, name and one-byte value are live C strings.
            outcome(unsafe {
                libc::setxattr(d.file.as_ptr(), name.as_ptr(), c"x".as_ptr().cast(), 1, 0)
            } as i64)
        };
        vec![
            ("setxattr-user", setxattr(c"user.lg")),
            ("setxattr-trusted", setxattr(c"trusted.lg")),
            (
                "io_uring_setup",
                sys(libc::SYS_io_uring_setup, [8, 0, 0, 0]),
            ),
        ]
    }
    check_planting(
        "seccomp::tests::planting::a_filtered_process_cannot_set_xattrs_or_use_io_uring",
        probe,
        &[
            ("setxattr-user", "EOPNOTSUPP"),
            ("setxattr-trusted", "EOPNOTSUPP"),
            ("io_uring_setup", "EPERM"),
        ],
    );
}
