//! One launch from the options and the core plan: the request, the bwrap
//! launch, the host argv (with the relay under `:allowlist`), and the plan
//! `bubblewrap_args` shows.

use super::*;
use crate::error::Error;
use crate::launch::{Filter, LaunchPlan, Pins};
use crate::policy::{EnvironmentPolicy, Policy, RootFilesystem as PolicyRoot};

fn plan(selected: Vec<Grant>, policy_grants: Vec<Grant>) -> LaunchPlan {
    LaunchPlan {
        environment: vec![("A".into(), "1".into())],
        inherit_environment: true,
        network: NetworkMode::Inherit,
        policy_grants,
        selected,
        cwd: "/w".into(),
        filter: None,
    }
}

fn configured() -> Options {
    // Stands in for `open`'s resolution of a bwrap at /opt/bwrap.
    super::super::executable::remember(
        Path::new("/opt/bwrap"),
        super::super::Resolved {
            path: "/opt/bwrap".into(),
            version: super::super::MINIMUM_VERSION,
        },
    );
    Options {
        executable: "/opt/bwrap".into(),
        masks: vec!["/w/masked".into()],
        tmpfs: vec!["/scratch".into()],
        proc_mount: ProcMount::None,
        runtime_roots: vec!["/opt/runtime".into()],
        uid: Some(1000),
        gid: Some(1001),
        tmpfs_size: 4096,
        ..Options::default()
    }
}

#[test]
fn the_request_carries_utf8_paths_pins_fresh_tmpfs_and_the_filter() {
    let options = configured();
    let policy = Policy::default();
    let pins = Pins::capture(&[]).unwrap();
    let request = options.request(&policy, true, "/w".into(), &pins, false);
    assert!(request.require_utf8_paths && request.call_inherit);
    assert!(request.pins.is_some());
    assert_eq!(request.fresh_directories, &[PathBuf::from("/scratch")][..]);
    let filter = Filter::Seccomp {
        deny_subprocesses: true,
        uid: Some(1000),
        gid: Some(1001),
    };
    assert_eq!(request.filter, filter);
    let allowed = options.request(&policy, false, "/w".into(), &pins, true);
    assert!(matches!(
        allowed.filter,
        Filter::Seccomp {
            deny_subprocesses: false,
            ..
        }
    ));
}

#[test]
fn the_launch_takes_the_options_the_plan_and_the_scope_masks() {
    let host = FakeHost::debian();
    let policy = Policy {
        root_filesystem: PolicyRoot::ReadOnly,
        ..Policy::default()
    };
    // The scope selected /w only: the policy's writable /w/notes is masked, after the configured mask.
    let plan = plan(vec![rw("/w")], vec![rw("/w"), rw("/w/notes")]);
    let launch = configured()
        .launch(&policy, &plan, vec!["/w".into()], (&Pins::default(), &host))
        .unwrap();
    assert_eq!(launch.root_filesystem, RootFilesystem::ReadOnly);
    assert_eq!(launch.grants, vec![rw("/w")]);
    let masks: Vec<PathBuf> = vec!["/w/masked".into(), "/w/notes".into()];
    assert_eq!(launch.masks, masks);
    assert_eq!(launch.tmpfs, vec![PathBuf::from("/scratch")]);
    assert_eq!(launch.proc_mount, ProcMount::None);
    assert_eq!(launch.runtime_roots, vec![PathBuf::from("/opt/runtime")]);
    assert_eq!(launch.workspace_paths, vec![PathBuf::from("/w")]);
    assert_eq!(launch.environment, plan.environment);
    assert!(launch.inherit_environment);
    assert_eq!(launch.network, NetworkMode::Inherit);
    assert_eq!((launch.uid, launch.gid), (Some(1000), Some(1001)));
    assert_eq!(launch.tmpfs_size, 4096);
    assert_eq!((launch.seccomp_fd, launch.extra_ro_binds.len()), (None, 0));
}

#[test]
fn a_configured_mask_the_scope_also_masks_is_listed_once() {
    let options = Options {
        masks: vec!["/w/notes".into()],
        ..Options::default()
    };
    let plan = plan(vec![rw("/w")], vec![rw("/w"), rw("/w/notes")]);
    let launch = options
        .launch(
            &Policy::default(),
            &plan,
            vec![],
            (&Pins::default(), &FakeHost::debian()),
        )
        .unwrap();
    assert_eq!(launch.masks, vec![PathBuf::from("/w/notes")]);
}

fn launch_of(options: &Options, network: NetworkMode) -> Launch {
    let mut plan = plan(vec![rw("/w")], vec![rw("/w")]);
    plan.network = network;
    options
        .launch(
            &Policy::default(),
            &plan,
            vec!["/w".into()],
            (&Pins::default(), &FakeHost::debian()),
        )
        .unwrap()
}

#[test]
fn the_host_argv_is_bwrap_its_options_then_the_command() {
    let options = configured();
    let launch = launch_of(&options, NetworkMode::None);
    // An isolated root shows no host /tmp: no gateway mask to add.
    let expected = strings(&bubblewrap_args(&launch, &FakeHost::debian()).unwrap());
    let command = vec!["/bin/echo".to_string(), "hi".into()];
    let host = options
        .host_argv(launch, command, None, (None, &[]), &FakeHost::debian())
        .unwrap();
    assert_eq!(host.program, "/bin/echo");
    assert_eq!(host.argv[0], "/opt/bwrap");
    assert_eq!(host.argv[1..=expected.len()], expected[..]);
    assert_eq!(host.argv[expected.len() + 1..], ["--", "/bin/echo", "hi"]);
    assert!(!has(&host.argv, &["--seccomp"]));
}

#[test]
fn a_filter_is_read_from_the_first_inherited_descriptor() {
    let options = configured();
    let launch = launch_of(&options, NetworkMode::None);
    let host = options
        .host_argv(
            launch,
            vec!["true".into()],
            None,
            (Some(9), &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    assert!(has(&host.argv, &["--seccomp", "3"]));
    assert_eq!(host.inherited_fds, [9]);
}

/// The executed argv of `launch` with `relay`.
fn executed(
    options: &Options,
    launch: Launch,
    relay: Option<Relay>,
) -> crate::error::Result<Vec<String>> {
    let command = vec!["true".to_string()];
    let handles: Vec<std::os::fd::RawFd> = (0..launch.bind_fds.len() as i32).collect();
    options
        .host_argv(
            launch,
            command,
            relay,
            (None, &handles),
            &FakeHost::debian(),
        )
        .map(|host| host.argv)
}

#[test]
fn a_root_showing_the_host_tmp_masks_the_gateway_folder_then_binds_only_its_own_gateway() {
    let options = configured();
    let base = crate::network::gateway::base_path();
    let base = base.to_str().unwrap();
    let own = format!("{base}/littleghost-gateway-1");
    let relay = || Relay {
        data: 11,
        socket: format!("{own}/proxy.sock").into(),
        handles: vec![(12, own.clone().into())],
        ..Relay::default()
    };
    let read_only_root = |network| {
        let mut launch = launch_of(&options, network);
        launch.root_filesystem = RootFilesystem::ReadOnly;
        launch
    };
    // The isolated root (and a root whose /tmp is a tmpfs) shows no host
    // /tmp: nothing to mask, and the own gateway is bound on the tmpfs.
    for network in [NetworkMode::None, NetworkMode::Inherit] {
        let argv = executed(&options, launch_of(&options, network), None).unwrap();
        assert!(
            !argv.iter().any(|a| a.starts_with(base)),
            "{network:?} {argv:?}"
        );
    }
    let argv = executed(
        &options,
        launch_of(&options, NetworkMode::Allowlist),
        Some(relay()),
    )
    .unwrap();
    assert!(!has(&argv, &["--tmpfs", base]), "{argv:?}");
    assert!(
        argv.windows(3)
            .any(|w| w[0] == "--ro-bind-fd" && w[2] == own),
        "{argv:?}"
    );
    // A read-only root shows the host's /tmp: masked, read-only, in every mode.
    for network in [NetworkMode::None, NetworkMode::Inherit] {
        let argv = executed(&options, read_only_root(network), None).unwrap();
        assert!(has(&argv, &["--tmpfs", base]), "{network:?} {argv:?}");
        assert!(has(&argv, &["--remount-ro", base]), "{network:?} {argv:?}");
    }
    let argv = executed(
        &options,
        read_only_root(NetworkMode::Allowlist),
        Some(relay()),
    )
    .unwrap();
    let mask = argv
        .windows(2)
        .position(|w| w == ["--tmpfs", base])
        .unwrap();
    let grant = argv
        .iter()
        .position(|a| a == "--bind-fd" || a == "--bind")
        .unwrap();
    let bind = argv
        .windows(3)
        .position(|w| w[0] == "--ro-bind-fd" && w[2] == own)
        .expect("its own gateway directory, bound from a descriptor");
    let read_only = argv
        .windows(2)
        .position(|w| w == ["--remount-ro", base])
        .unwrap();
    assert!(grant < mask && mask < bind && bind < read_only, "{argv:?}");
    // Nothing else of the folder is bound (the relay's socket is its own).
    let options_end = argv.iter().position(|a| a == "--").unwrap();
    let inside: Vec<&String> = argv[..options_end]
        .iter()
        .filter(|a| a.starts_with(base))
        .collect();
    assert_eq!(inside, [base, own.as_str(), base], "{argv:?}");
}

#[test]
fn the_gateway_folder_is_masked_wherever_a_grant_shows_it_and_never_granted() {
    let options = configured();
    let base = crate::network::gateway::base_path();
    let with = |grant: Grant| {
        let mut launch = launch_of(&options, NetworkMode::None);
        launch.grants.push(grant);
        launch.bind_fds.clear();
        executed(&options, launch, None)
    };
    let shown_elsewhere = Grant {
        target: "/scratch/host-tmp".into(),
        ..ro("/tmp")
    };
    let argv = with(shown_elsewhere).unwrap();
    let moved = Path::new("/scratch/host-tmp").join(base.file_name().unwrap());
    assert!(
        has(&argv, &["--tmpfs", moved.to_str().unwrap()]),
        "{argv:?}"
    );
    // A writable /tmp is a mount point in the child's view, as is the mask.
    assert!(with(rw("/tmp")).is_ok());
    // A configured mask of /tmp already hides it: no tmpfs inside the read-only one.
    let mut masked = launch_of(&options, NetworkMode::None);
    masked.masks.push("/tmp".into());
    let argv = executed(&options, masked, None).unwrap();
    assert!(
        !argv.iter().any(|a| a.starts_with(base.to_str().unwrap())),
        "{argv:?}"
    );
    for refused in [rw("/"), ro(base.to_str().unwrap())] {
        let error = with(refused.clone()).unwrap_err();
        assert!(
            matches!(&error, Error::Policy(m) if m.contains("network gateways' sockets")),
            "{refused:?}: {error:?}"
        );
    }
}

#[test]
fn the_gateway_folder_is_masked_at_every_place_the_host_shows_it() {
    // The host shows the folder at /tmp/lg and, through a bind mount of
    // /tmp at /srv/x, at /srv/x/lg.
    let options = configured();
    let places = [PathBuf::from("/tmp/lg"), PathBuf::from("/srv/x/lg")];
    let with = |root, grants: Vec<Grant>| {
        let mut launch = launch_of(&options, NetworkMode::None);
        launch.root_filesystem = root;
        launch.grants = grants;
        super::super::command::masks_at(&launch, &places)
    };
    let masks = with(RootFilesystem::ReadOnly, vec![]).unwrap();
    assert_eq!(masks, places);
    let granted = Grant {
        target: "/work/srv".into(),
        ..ro("/srv")
    };
    let masks = with(RootFilesystem::Isolated, vec![granted]).unwrap();
    assert_eq!(masks, [PathBuf::from("/work/srv/x/lg")]);
    assert!(with(RootFilesystem::Isolated, vec![rw("/srv/x")]).is_ok());
    for refused in [rw("/srv"), ro("/srv/x/lg/one")] {
        let error = with(RootFilesystem::Isolated, vec![refused.clone()]).unwrap_err();
        assert!(
            matches!(&error, Error::Policy(m) if m.contains("network gateways' sockets")),
            "{refused:?}: {error:?}"
        );
    }
    let mut elsewhere = launch_of(&options, NetworkMode::None);
    elsewhere.runtime_roots = vec!["/srv".into()];
    let masks = super::super::command::masks_at(&elsewhere, &places).unwrap();
    assert_eq!(masks, [PathBuf::from("/srv/x/lg")]);
}

#[test]
fn under_allowlist_the_relay_runs_the_command_from_a_copy_bwrap_makes_from_a_descriptor() {
    let options = configured();
    let launch = launch_of(&options, NetworkMode::Allowlist);
    let relay = Relay {
        data: 11,
        socket: "/run/gw/socket".into(),
        binds: vec![("/host/gw".into(), "/run/gw".into())],
        ..Relay::default()
    };
    let command = vec!["curl".to_string()];
    let host = options
        .host_argv(
            launch,
            command,
            Some(relay),
            (Some(9), &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    assert_eq!(host.program, RELAY_PATH);
    let tail = [
        "--",
        RELAY_PATH,
        "relay",
        "--socket",
        "/run/gw/socket",
        "--",
        "curl",
    ];
    assert!(host.argv.ends_with(&tail.map(String::from)));
    assert!(has(&host.argv, &["--ro-bind", "/host/gw", "/run/gw"]));
    // The filter is bwrap's fd 3, the helper's bytes its fd 4; no host path of the helper appears.
    assert_eq!(host.inherited_fds, [9, 11]);
    assert!(has(&host.argv, &["--seccomp", "3"]));
    assert!(has(
        &host.argv,
        &["--perms", "0555", "--ro-bind-data", "4", RELAY_PATH]
    ));
    let without_filter = options
        .host_argv(
            launch_of(&options, NetworkMode::Allowlist),
            vec!["curl".into()],
            Some(Relay {
                data: 11,
                socket: "/run/gw/socket".into(),
                binds: Vec::new(),
                ..Relay::default()
            }),
            (None, &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    assert!(has(
        &without_filter.argv,
        &["--ro-bind-data", "3", RELAY_PATH]
    ));
}

#[test]
fn transparent_listeners_go_to_the_relay_and_the_hosts_file_is_bound_over_the_hosts() {
    let options = configured();
    let forwards = vec![
        crate::launch::Forward::parse("127.80.0.1:8443=api.test:8443").unwrap(),
        crate::launch::Forward::parse("127.0.0.1:8080=localhost:8080").unwrap(),
    ];
    let relay = Relay {
        data: 11,
        socket: "/run/gw/socket".into(),
        forwards,
        hosts: Some(12),
        ..Relay::default()
    };
    let host = options
        .host_argv(
            launch_of(&options, NetworkMode::Allowlist),
            vec!["node".into()],
            Some(relay),
            (None, &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    assert_eq!(host.inherited_fds, [11, 12]);
    assert!(has(
        &host.argv,
        &["--perms", "0444", "--ro-bind-data", "4", "/etc/hosts"]
    ));
    // Every port at 1024 or more: bwrap is not held.
    assert!(!host.argv.iter().any(|word| word == "--block-fd"));
    assert_eq!(host.hold, None);
    let tail = [
        "--forward",
        "127.80.0.1:8443=api.test:8443",
        "--forward",
        "127.0.0.1:8080=localhost:8080",
        "--",
        "node",
    ];
    assert!(host.argv.ends_with(&tail.map(String::from)));
    // No listener, no hosts file.
    let relay = Relay {
        data: 11,
        socket: "/run/gw/socket".into(),
        ..Relay::default()
    };
    let host = options
        .host_argv(
            launch_of(&options, NetworkMode::Allowlist),
            vec!["node".into()],
            Some(relay),
            (None, &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    assert!(!host.argv.iter().any(|word| word == "/etc/hosts"));
}

#[test]
fn a_listener_below_1024_holds_bwrap_until_the_spawner_released_it() {
    use crate::process::hold::{Held, Hold};
    let options = configured();
    let spawner = Held {
        info: 20,
        release: 23,
        block: -1,
        port_start: Some(443),
        mounts: Vec::new(),
    };
    let relay = Relay {
        data: 11,
        socket: "/run/gw/socket".into(),
        forwards: vec![crate::launch::Forward::parse("127.80.0.1:443=api.test:443").unwrap()],
        hosts: Some(12),
        hold: Some(Hold {
            info: 21,
            block: 22,
            spawner: spawner.clone(),
        }),
        ..Relay::default()
    };
    let host = options
        .host_argv(
            launch_of(&options, NetworkMode::Allowlist),
            vec!["node".into()],
            Some(relay),
            (None, &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    // bwrap inherits its ends of the pipes; the spawner keeps the others.
    assert_eq!(host.inherited_fds, [11, 12, 21, 22]);
    assert!(has(&host.argv, &["--info-fd", "5", "--block-fd", "6"]));
    // The spawner waits for bwrap's read of its fd 6; nothing to check here.
    let expected = Held {
        block: 6,
        ..spawner
    };
    assert_eq!(host.hold, Some(expected));
    assert!(host.pipes.is_none());
    // The served plan asks for the hold only with a port below 1024.
    let served = options
        .transparent(&[("api.test".into(), 443), ("api.test".into(), 8443)])
        .unwrap();
    assert_eq!(
        served.pipes.map(|p| p.hold().spawner.port_start),
        Some(Some(443))
    );
    let served = options.transparent(&[("api.test".into(), 8443)]).unwrap();
    assert!(served.pipes.is_none() && served.hosts.is_some());
}

#[test]
fn allowlist_without_an_open_gateway_is_refused() {
    let options = configured();
    let launch = launch_of(&options, NetworkMode::Allowlist);
    let refused = options.host_argv(
        launch,
        vec!["curl".into()],
        None,
        (None, &[]),
        &FakeHost::debian(),
    );
    let expected = Error::Dependency("the network gateway is not open".into());
    assert_eq!(refused.unwrap_err(), expected);
}

#[test]
fn a_non_utf8_executable_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let options = Options {
        executable: PathBuf::from(std::ffi::OsStr::from_bytes(b"/opt/bw\xffrap")),
        ..Options::default()
    };
    let launch = launch_of(&options, NetworkMode::None);
    let refused = options.host_argv(
        launch,
        vec!["true".into()],
        None,
        (None, &[]),
        &FakeHost::debian(),
    );
    let message = "bubblewrap executable path must be valid UTF-8";
    assert_eq!(refused.unwrap_err(), Error::Argument(message.into()));
}

#[test]
fn bubblewrap_args_shows_the_policy_unless_given_values() {
    let environment = EnvironmentPolicy::new(true, [(b"P".to_vec(), b"v".to_vec())]);
    let policy = Policy {
        environment,
        ..Policy::default()
    };
    let pins = Pins::capture(&[]).unwrap();
    let shown = args_plan(&policy, vec![], &pins, "/w".into(), ArgsRequest::default()).unwrap();
    assert_eq!(shown.environment, vec![("P".to_string(), "v".to_string())]);
    assert!(shown.inherit_environment);
    assert_eq!(shown.network, NetworkMode::None);
    assert!(shown.selected.is_empty() && shown.filter.is_none());
    let given = ArgsRequest {
        selected: Some(vec![ro("/elsewhere")]),
        environment: Some(vec![]),
        inherit_environment: Some(false),
        network: Some(NetworkMode::Inherit),
    };
    let shown = args_plan(&policy, vec![], &pins, "/w".into(), given).unwrap();
    assert!(shown.environment.is_empty() && !shown.inherit_environment);
    assert_eq!(shown.network, NetworkMode::Inherit);
    assert_eq!(shown.selected, vec![ro("/elsewhere")]);
    assert_eq!(shown.cwd, PathBuf::from("/w"));
}

#[test]
fn bubblewrap_args_refuses_a_grant_that_is_not_the_pinned_directory() {
    let dir = tempfile::tempdir().unwrap();
    let grant = rw(dir.path().to_str().unwrap());
    let pins = Pins::capture(&[]).unwrap();
    let policy = Policy::default();
    let refused = args_plan(
        &policy,
        vec![grant.clone()],
        &pins,
        "/w".into(),
        ArgsRequest::default(),
    );
    assert!(matches!(refused, Err(Error::Policy(_))));
    let pins = Pins::capture(std::slice::from_ref(&grant)).unwrap();
    let shown = args_plan(
        &policy,
        vec![grant.clone()],
        &pins,
        "/w".into(),
        ArgsRequest::default(),
    );
    assert_eq!(shown.unwrap().selected, vec![grant]);
}

#[cfg(target_os = "linux")]
#[test]
fn a_launch_binds_every_grant_from_its_handle_after_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("build/out")).unwrap();
    let outer = rw(root.to_str().unwrap());
    let inner = ro(root.join("build/out").to_str().unwrap());
    let grants = vec![outer.clone(), inner.clone()];
    let pins = Pins::capture(&grants).unwrap();
    let options = configured();
    let mut launch = Launch::new(RootFilesystem::Isolated, grants, root.clone());
    let anchors = options.bind_from(&mut launch, &pins, true).unwrap();
    assert_eq!(anchors.len(), 2);
    let argv = bubblewrap_args(&launch, &FakeHost::debian()).unwrap();
    let text: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
    let root_text = root.to_str().unwrap().to_owned();
    let out_text = root.join("build/out").to_str().unwrap().to_owned();
    assert!(
        text.windows(3)
            .any(|w| w == ["--bind-fd", "4", root_text.as_str()]),
        "{text:?}"
    );
    assert!(
        text.windows(3)
            .any(|w| w == ["--ro-bind-fd", "5", out_text.as_str()]),
        "{text:?}"
    );
    // No grant is bound by its path (runtime roots such as /usr still are).
    let by_path = text
        .windows(2)
        .any(|w| (w[0] == "--bind" || w[0] == "--ro-bind") && w[1].starts_with(root_text.as_str()));
    assert!(!by_path, "{text:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_destination_beneath_a_writable_bind_must_be_a_real_directory_there() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("build/out")).unwrap();
    let outer = rw(root.to_str().unwrap());
    let inner = ro(root.join("build/out").to_str().unwrap());
    let grants = vec![outer, inner];
    let pins = Pins::capture(&grants).unwrap();
    // The inner grant moves away and a link takes its place: the pinned
    // handle is no longer current, so the launch is refused before any bind.
    std::fs::rename(root.join("build"), root.join("build.old")).unwrap();
    std::fs::create_dir(root.join("build")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("build/out")).unwrap();
    let mut launch = Launch::new(RootFilesystem::Isolated, grants.clone(), root.clone());
    let refused = configured()
        .bind_from(&mut launch, &pins, false)
        .unwrap_err();
    assert_eq!(refused, Error::Policy(crate::launch::SOURCE_CHANGED.into()));
    // A mask planted through a link beneath the writable root is refused too.
    let mut launch = Launch::new(
        RootFilesystem::Isolated,
        vec![grants[0].clone()],
        root.clone(),
    );
    launch.masks = vec![root.join("build/out")];
    let refused = configured()
        .bind_from(&mut launch, &pins, false)
        .unwrap_err();
    assert!(
        refused.message().contains("not a real directory"),
        "{refused:?}"
    );
}

#[test]
fn only_a_launch_with_a_mount_nested_beneath_a_writable_bind_is_held_to_check_it() {
    use crate::process::mount_check::{ExpectedMount, MountKind};
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("a/src")).unwrap();
    std::fs::create_dir_all(root.join("a/cache")).unwrap();
    let (outer, inner) = (
        rw(root.to_str().unwrap()),
        ro(root.join("a/src").to_str().unwrap()),
    );
    let pins = Pins::capture(&[outer.clone(), inner.clone()]).unwrap();
    let options = configured();
    let argv_of = |mut launch: Launch| {
        let anchors = options.bind_from(&mut launch, &pins, false).unwrap();
        let handles: Vec<i32> = anchors.iter().map(|a| a.fd().as_raw_fd()).collect();
        let checked = launch.checked_mounts.clone();
        let host = options
            .host_argv(
                launch,
                vec!["true".into()],
                None,
                (None, &handles),
                &FakeHost::debian(),
            )
            .unwrap();
        (checked, host)
    };
    use std::os::fd::AsRawFd;
    // A read-only grant and a mask inside the writable root: both checked.
    let mut launch = Launch::new(
        RootFilesystem::Isolated,
        vec![outer.clone(), inner],
        root.clone(),
    );
    launch.masks = vec![root.join("a/cache")];
    let (checked, host) = argv_of(launch);
    let src = std::fs::metadata(root.join("a/src")).unwrap();
    assert_eq!(
        checked,
        [
            ExpectedMount {
                path: root.join("a/src"),
                kind: MountKind::Bind {
                    dev: src.dev(),
                    ino: src.ino()
                },
                read_only: true,
            },
            ExpectedMount {
                path: root.join("a/cache"),
                kind: MountKind::Tmpfs,
                read_only: true,
            },
        ]
    );
    // bwrap's ends of the hold's pipes come after the two handles.
    assert!(has(&host.argv, &["--info-fd", "5", "--block-fd", "6"]));
    let held = host.hold.expect("held");
    assert_eq!(
        (held.block, held.mounts, held.port_start),
        (6, checked, None)
    );
    assert!(host.pipes.is_some());
    // The writable root alone: nothing nested, bwrap runs unheld.
    let (checked, host) = argv_of(Launch::new(
        RootFilesystem::Isolated,
        vec![outer.clone()],
        root.clone(),
    ));
    assert!(checked.is_empty());
    assert!(host.hold.is_none() && host.pipes.is_none());
    assert!(!host.argv.iter().any(|word| word == "--block-fd"));
    // Under :read_write the root itself is a writable bind: the grant is nested.
    let (checked, _) = argv_of(Launch::new(
        RootFilesystem::ReadWrite,
        vec![outer],
        root.clone(),
    ));
    assert_eq!(checked.len(), 1);
    assert_eq!(checked[0].path, root);
}

#[test]
fn under_allowlist_an_isolated_root_gets_the_trust_directories_from_their_handles() {
    let options = configured();
    let relay = || Relay {
        data: 11,
        socket: "/run/gw/socket".into(),
        trust: vec![(12, "/etc/ssl/certs".into())],
        ..Relay::default()
    };
    let host = options
        .host_argv(
            launch_of(&options, NetworkMode::Allowlist),
            vec!["curl".into()],
            Some(relay()),
            (None, &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    // The helper's bytes are bwrap's fd 3, the trust directory its fd 4.
    assert_eq!(host.inherited_fds, [11, 12]);
    assert!(has(&host.argv, &["--ro-bind-fd", "4", "/etc/ssl/certs"]));
    assert!(!host.argv.iter().any(|a| a == "/etc/ssl"));
    // A root that shows the host's own /etc needs no bind.
    let mut host_root = launch_of(&options, NetworkMode::Allowlist);
    host_root.root_filesystem = RootFilesystem::ReadOnly;
    let shown = options
        .host_argv(
            host_root,
            vec!["curl".into()],
            Some(relay()),
            (None, &[]),
            &FakeHost::debian(),
        )
        .unwrap();
    assert!(!shown.argv.iter().any(|a| a == "/etc/ssl/certs"));
}
