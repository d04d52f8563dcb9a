//! Unit tests of the Landlock plan, carving, choice and probe.

use super::*;

fn grant(path: &str, writable: bool) -> Grant {
    Grant {
        path: PathBuf::from(path),
        writable,
    }
}

#[test]
fn isolated_plan_names_runtime_devices_grants_and_tmpdir() {
    let plan = plan(
        RootMode::Isolated,
        &[grant("/w", true), grant("/v/src", false)],
        &[PathBuf::from("/usr")],
        Path::new("/tmp/t"),
        Network::None,
        false,
    )
    .unwrap();
    let find = |p: &str| {
        plan.rules
            .iter()
            .find(|r| r.path == Path::new(p))
            .map(|r| r.access)
    };
    assert_eq!(find("/usr"), Some(Access::Read));
    assert_eq!(find("/lib64"), Some(Access::Read));
    assert_eq!(find("/etc/ld.so.cache"), Some(Access::Read));
    assert_eq!(find("/etc"), None);
    assert_eq!(find("/dev/null"), Some(Access::Device));
    assert_eq!(find("/w"), Some(Access::Write));
    assert_eq!(find("/v/src"), Some(Access::Read));
    assert_eq!(find("/tmp/t"), Some(Access::Write));
    assert_eq!(find("/proc"), None);
    assert_eq!(find("/"), None);
}

#[test]
fn read_only_root_hides_proc_and_duplicate_rules_keep_the_weaker() {
    let plan = plan(
        RootMode::ReadOnly,
        &[grant("/w", true), grant("/w", false)],
        &[],
        Path::new("/tmp/t"),
        Network::Inherit,
        true,
    )
    .unwrap();
    let find = |p: &str| {
        plan.rules
            .iter()
            .find(|r| r.path == Path::new(p))
            .map(|r| r.access)
    };
    assert_eq!(find("/"), Some(Access::Read));
    assert_eq!(find("/proc"), Some(Access::Hidden));
    assert_eq!(find("/w"), Some(Access::Read));
}

#[test]
fn cwd_must_lie_in_a_readable_rule() {
    let plan = plan(
        RootMode::Isolated,
        &[grant("/w", true)],
        &[],
        Path::new("/t"),
        Network::None,
        false,
    )
    .unwrap();
    assert!(cwd_allowed(&plan, Path::new("/w/sub")));
    assert!(cwd_allowed(&plan, Path::new("/t")));
    assert!(!cwd_allowed(&plan, Path::new("/home")));
    assert!(!cwd_allowed(&plan, Path::new("/dev/null")));
}

#[test]
fn probe_reports_this_kernel() {
    let probe = probe();
    if let Some(abi) = probe.abi {
        assert_eq!(probe.unavailable.is_none(), abi >= MINIMUM_ABI);
    } else {
        assert!(probe.unavailable.is_some());
    }
}

#[test]
fn relative_paths_are_refused() {
    let err = plan(
        RootMode::Isolated,
        &[grant("w", true)],
        &[],
        Path::new("/t"),
        Network::None,
        false,
    );
    assert!(matches!(err, Err(crate::Error::Policy(_))));
}

#[test]
fn args_round_trip() {
    for root in [RootMode::ReadWrite, RootMode::Isolated] {
        let plan = plan(
            root,
            &[grant("/w/src", true)],
            &[],
            Path::new("/tmp/t"),
            Network::Inherit,
            true,
        )
        .unwrap();
        assert_eq!(plan.deny_unix_sockets, root == RootMode::Isolated);
        let mut args = plan.to_args();
        args.extend(["--".to_string(), "/bin/true".to_string()]);
        let (back, command) = Plan::from_args(&args).unwrap();
        assert_eq!(back, plan);
        assert_eq!(command, vec!["/bin/true".to_string()]);
    }
}

#[test]
fn a_scope_cannot_leave_out_a_grant_landlock_would_still_show() {
    let grant = |path: &str| Grant {
        path: PathBuf::from(path),
        writable: false,
    };
    let policy = [grant("/w"), grant("/w/secret"), grant("/elsewhere")];
    // Nested beneath a kept grant: reachable, refused.
    let error = refuse_unhidable(
        RootMode::Isolated,
        &policy,
        &[grant("/w"), grant("/elsewhere")],
    )
    .unwrap_err();
    assert!(error.to_string().contains("/w/secret"), "{error}");
    // Not beneath anything kept under :isolated: hidden by having no rule.
    assert!(refuse_unhidable(RootMode::Isolated, &policy, &[grant("/w/secret")]).is_ok());
    // A readable root shows everything: any left-out grant is refused.
    assert!(refuse_unhidable(RootMode::ReadOnly, &policy, &[grant("/w/secret")]).is_err());
    // Nothing left out: fine.
    assert!(refuse_unhidable(RootMode::ReadWrite, &policy, &policy).is_ok());
}

#[test]
fn grant_handles_travel_to_the_helper_as_descriptors() {
    let mut planned = plan(
        RootMode::Isolated,
        &[grant("/w", true)],
        &[],
        Path::new("/tmp/t"),
        Network::None,
        false,
    )
    .unwrap();
    planned.handles = vec![(PathBuf::from("/w"), 3)];
    let mut args = planned.to_args();
    assert_eq!(&args[..3], ["--handle", "3", "/w"]);
    args.extend(["--".into(), "true".into()]);
    let (back, _) = Plan::from_args(&args).unwrap();
    assert_eq!(back, planned);
    for bad in [
        ["--handle", "2", "/w"],
        ["--handle", "x", "/w"],
        ["--handle", "3", "w"],
    ] {
        let mut args: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
        args.extend([
            "--network".into(),
            "none".into(),
            "--".into(),
            "true".into(),
        ]);
        assert!(Plan::from_args(&args).is_err(), "{bad:?}");
    }
}

#[test]
fn a_read_only_grant_inside_a_writable_one_is_refused_naming_both() {
    // Landlock rights on a directory hold for everything beneath it: /w
    // cannot keep the right to create entries in itself while /w/src (whose
    // parent chain passes /w) has none. Carving would silently drop /w's
    // own create/remove/rename rights, so the plan is refused instead.
    for root in [RootMode::Isolated, RootMode::ReadOnly] {
        let refused = plan(
            root,
            &[grant("/w", true), grant("/w/src", false)],
            &[],
            Path::new("/tmp/t"),
            Network::None,
            false,
        )
        .unwrap_err();
        assert_eq!(refused.kind(), crate::error::Kind::Capability);
        let message = refused.message();
        assert!(
            message.contains("the read_only grant /w/src inside the writable grant /w"),
            "{message}"
        );
        let worded = refused.worded(&|name| format!(":{name}"));
        assert!(worded.contains("the :read_only grant /w/src"), "{worded}");
    }
    // A read-only grant under a :read_write root filesystem: the same.
    let refused = plan(
        RootMode::ReadWrite,
        &[grant("/w/src", false)],
        &[],
        Path::new("/tmp/t"),
        Network::None,
        false,
    )
    .unwrap_err();
    assert!(
        refused
            .message()
            .contains("inside the read_write root filesystem"),
        "{}",
        refused.message()
    );
    // Expressible: writable inside read-only, siblings, the same access.
    for grants in [
        vec![grant("/w", false), grant("/w/out", true)],
        vec![grant("/w/a", true), grant("/w/b", false)],
        vec![grant("/w", true), grant("/w/out", true)],
        vec![grant("/w", false), grant("/w/src", false)],
    ] {
        assert!(plan(
            RootMode::Isolated,
            &grants,
            &[],
            Path::new("/tmp/t"),
            Network::None,
            false
        )
        .is_ok());
    }
}

#[test]
fn a_writable_grant_holding_the_gateways_folder_is_refused() {
    // A child could rename the folder and leave a stand-in for the masks of
    // later Bubblewrap launches; read-only, or a directory beneath /tmp, is fine.
    for path in ["/tmp", "/"] {
        let refused = plan(
            RootMode::Isolated,
            &[grant(path, true)],
            &[],
            Path::new("/var/tmp/t"),
            Network::None,
            false,
        )
        .unwrap_err();
        assert!(matches!(refused, crate::Error::Policy(_)), "{refused:?}");
        assert!(
            refused
                .message()
                .contains("holds the folder of the network gateways' sockets"),
            "{refused:?}"
        );
    }
    for grants in [[grant("/tmp", false)], [grant("/tmp/work", true)]] {
        assert!(plan(
            RootMode::Isolated,
            &grants,
            &[],
            Path::new("/var/tmp/t"),
            Network::None,
            false
        )
        .is_ok());
    }
}
