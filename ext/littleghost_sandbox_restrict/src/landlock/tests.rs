//! The carving of rules (`carve`) and the helper's argument format.

use super::*;
use crate::Error;

#[test]
fn carving_grants_siblings_and_narrows_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["a/src/deep", "a/other", "b"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("a/file"), "x").unwrap();
    std::os::unix::fs::symlink(root.join("a/src"), root.join("a/link")).unwrap();
    let rules = vec![
        Rule {
            path: root.to_path_buf(),
            access: Access::Write,
        },
        Rule {
            path: root.join("a/src"),
            access: Access::Read,
        },
    ];
    let out = expand(&rules).unwrap();
    let described: Vec<(PathBuf, BitFlags<AccessFs>)> = out
        .iter()
        .map(|b| {
            let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&b.fd));
            (std::fs::read_link(link).unwrap(), b.access)
        })
        .collect();
    let access_of = |p: PathBuf| {
        described
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, a)| *a)
            .collect::<Vec<_>>()
    };
    let write = Access::Write.rights();
    let read = Access::Read.rights();
    assert_eq!(access_of(root.join("b")), vec![write]);
    assert_eq!(access_of(root.join("a/other")), vec![write]);
    assert_eq!(
        access_of(root.join("a/file")),
        vec![write & AccessFs::from_file(ABI_USED)]
    );
    // The directories along the path keep only what the read-only rule has.
    assert_eq!(access_of(root.join("a")), vec![read]);
    assert_eq!(access_of(root.to_path_buf()), vec![read]);
    // The read-only grant's own rule, and nothing writable at or beneath it.
    assert_eq!(access_of(root.join("a/src")), vec![read]);
    assert!(access_of(root.join("a/src/deep")).is_empty());
    // The symbolic link gets no rule.
    assert!(described.iter().all(|(p, _)| !p.ends_with("link")));
}

#[test]
fn a_rule_with_a_handle_is_built_from_the_descriptor_not_the_path() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let handle = carve::open_path(dir.path(), false).unwrap();
    let rules = [Rule {
        path: PathBuf::from("/nonexistent-landlock-handle-test"),
        access: Access::Read,
    }];
    // By path the rule grants nothing (the path does not exist)...
    assert!(expand(&rules).unwrap().is_empty());
    // ...through the handle it grants the handle's directory.
    let handles = [(rules[0].path.clone(), handle.as_raw_fd())];
    let out = carve::expand_with(&rules, &handles).unwrap();
    assert_eq!(out.len(), 1);
    let (a, b) = (
        rustix::fs::fstat(&out[0].fd).unwrap(),
        rustix::fs::fstat(&handle).unwrap(),
    );
    assert_eq!((a.st_dev, a.st_ino), (b.st_dev, b.st_ino));
}

#[test]
fn args_round_trip_and_malformed_args_are_refused() {
    let plan = Plan {
        rules: vec![
            Rule {
                path: PathBuf::from("/w"),
                access: Access::Write,
            },
            Rule {
                path: PathBuf::from("/proc"),
                access: Access::Hidden,
            },
        ],
        network: Network::Inherit,
        deny_subprocesses: true,
        deny_unix_sockets: true,
        own_proc: true,
        handles: vec![(PathBuf::from("/w"), 3)],
    };
    let mut args = plan.to_args();
    args.extend(["--".to_string(), "/bin/true".to_string()]);
    let (back, command) = Plan::from_args(&args).unwrap();
    assert_eq!(back, plan);
    assert_eq!(command, vec!["/bin/true".to_string()]);
    let refused = Plan::from_args(&["--read".into(), "rel".into(), "--".into(), "x".into()]);
    assert!(matches!(refused, Err(Error::Argument(_))), "{refused:?}");
    assert!(Plan::from_args(&["--network".into(), "none".into(), "--".into()]).is_err());
    assert!(Plan::from_args(&["--read".into(), "/x".into()]).is_err());
    let through = |words: &[&str]| {
        let mut args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        args.extend(["--".to_string(), "x".to_string()]);
        Plan::from_args(&args).map(|(plan, _)| plan.network)
    };
    assert_eq!(
        through(&["--network", "gateway", "7"]).unwrap(),
        Network::Gateway(7)
    );
    assert!(through(&["--network", "gateway", "/g/s.sock"]).is_err());
    assert!(through(&["--network", "gateway", "1"]).is_err());
    let gateway = Plan {
        network: Network::Gateway(7),
        ..plan
    };
    let mut args = gateway.to_args();
    args.extend(["--".to_string(), "x".to_string()]);
    assert_eq!(Plan::from_args(&args).unwrap().0, gateway);
}
