//! Unit tests of scope narrowing: grants, network, capabilities and [`narrow`].

use super::*;
use crate::grants::Access;
use std::fs;
use std::path::{Path, PathBuf};

/// A workspace on disk: root with `source/` and `cache/` inside, plus an
/// absolute `home/` elsewhere. Paths are canonical so targets == sources.
struct Layout {
    _dir: tempfile::TempDir,
    root: PathBuf,
    source: PathBuf,
    cache: PathBuf,
    home: PathBuf,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let root = base.join("ws");
    let home = base.join("home");
    for d in [&root, &root.join("source"), &root.join("cache"), &home] {
        fs::create_dir_all(d).unwrap();
    }
    Layout {
        source: root.join("source"),
        cache: root.join("cache"),
        root,
        home,
        _dir: dir,
    }
}

pub(super) fn grant(dir: &Path, access: Access, tools: bool) -> Grant {
    Grant {
        source: dir.to_path_buf(),
        target: dir.to_path_buf(),
        access,
        tools,
        protect_aliases: true,
    }
}

use Access::{ReadOnly as RO, ReadWrite as RW};

/// files: {root: rw, source: ro}, runtime_paths: {cache: rw, home: rw}
fn policy_grants(l: &Layout) -> Vec<Grant> {
    vec![
        grant(&l.source, RO, true),
        grant(&l.cache, RW, false),
        grant(&l.root, RW, true),
        grant(&l.home, RW, false),
    ]
}

fn summary(grants: &[Grant]) -> Vec<(PathBuf, Access, bool)> {
    grants
        .iter()
        .map(|g| (g.target.clone(), g.access, g.tools))
        .collect()
}

#[test]
fn no_selection_keeps_parent_grants_sorted_longest_first() {
    let l = layout();
    let n = narrow_grants(&policy_grants(&l), &[], None, None).unwrap();
    assert_eq!(
        summary(&n.grants),
        vec![
            (l.source.clone(), RO, true),
            (l.cache.clone(), RW, false),
            (l.home.clone(), RW, false),
            (l.root.clone(), RW, true),
        ]
    );
    assert!(
        n.deny_markers.is_empty(),
        "kept runtime grants need no markers"
    );
}

#[test]
fn a_nil_category_keeps_that_visibility_and_an_empty_one_drops_it() {
    let l = layout();
    let parent = policy_grants(&l);
    let n = narrow_grants(&parent, &[], None, Some(&[])).unwrap();
    assert!(n.grants.iter().all(|g| g.tools));
    let n = narrow_grants(&parent, &[], Some(&[]), None).unwrap();
    assert!(n.grants.iter().all(|g| !g.tools));
}

#[test]
fn a_name_keeps_the_parent_access_and_may_narrow_it() {
    let l = layout();
    let parent = policy_grants(&l);
    let n = narrow_grants(
        &parent,
        &[],
        Some(&[Request::new(&l.root, None)]),
        Some(&[]),
    )
    .unwrap();
    // source stays read-only through the overlay of SC.6.
    assert_eq!(
        summary(&n.grants),
        vec![(l.source.clone(), RO, true), (l.root.clone(), RW, true)]
    );
    let n = narrow_grants(
        &parent,
        &[],
        Some(&[Request::new(&l.root, Some(RO))]),
        Some(&[]),
    )
    .unwrap();
    assert_eq!(summary(&n.grants), vec![(l.root.clone(), RO, true)]);
}

#[test]
fn a_scope_can_never_widen_its_parent() {
    let l = layout();
    let parent = policy_grants(&l);
    // read-only -> read-write
    let err = narrow_grants(
        &parent,
        &[],
        Some(&[Request::new(&l.source, Some(RW))]),
        None,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("read-only mount writable"),
        "{err}"
    );
    // runtime grant promoted to a file grant
    let err = narrow_grants(&parent, &[], Some(&[Request::new(&l.cache, None)]), None).unwrap_err();
    assert_eq!(err, crate::grants::Narrowing::OutsideParent);
    // file grant demoted to runtime-only
    let err =
        narrow_grants(&parent, &[], None, Some(&[Request::new(&l.source, None)])).unwrap_err();
    assert_eq!(err, crate::grants::Narrowing::OutsideParent);
    // a directory the parent never granted, even beneath a granted one
    let sub = l.root.join("sub");
    fs::create_dir(&sub).unwrap();
    let err = narrow_grants(&parent, &[], Some(&[Request::new(&sub, None)]), None).unwrap_err();
    assert_eq!(err, crate::grants::Narrowing::OutsideParent);
    // a nested scope cannot get back what its parent dropped
    let child = narrow_grants(
        &parent,
        &[],
        Some(&[Request::new(&l.source, None)]),
        Some(&[]),
    )
    .unwrap();
    let err = narrow_grants(
        &child.grants,
        &child.deny_markers,
        Some(&[Request::new(&l.root, None)]),
        None,
    )
    .unwrap_err();
    assert_eq!(err, crate::grants::Narrowing::OutsideParent);
    let err = narrow_grants(
        &child.grants,
        &child.deny_markers,
        None,
        Some(&[Request::new(&l.cache, None)]),
    )
    .unwrap_err();
    assert_eq!(err, crate::grants::Narrowing::OutsideParent);
}

#[test]
fn every_result_is_within_its_parent() {
    let l = layout();
    let parent = policy_grants(&l);
    let requests = [
        vec![],
        vec![Request::new(&l.root, None)],
        vec![Request::new(&l.source, None)],
        vec![
            Request::new(&l.root, Some(RO)),
            Request::new(&l.source, None),
        ],
    ];
    for files in &requests {
        for runtime in [
            None,
            Some(&[][..]),
            Some(&[Request::new(&l.home, Some(RO))][..]),
        ] {
            let n = narrow_grants(&parent, &[], Some(files), runtime).unwrap();
            for g in &n.grants {
                let origin = parent
                    .iter()
                    .find(|p| p.tools == g.tools && p.target == g.target)
                    .expect("every scope grant has a parent of the same visibility");
                assert!(!g.access.writable() || origin.access.writable());
            }
        }
    }
}

#[test]
fn duplicate_names_keep_the_more_restrictive_access() {
    let l = layout();
    let parent = policy_grants(&l);
    let files = [
        Request::new(&l.root, Some(RW)),
        Request::new(l.root.join("."), Some(RO)),
    ];
    let n = narrow_grants(&parent, &[], Some(&files), Some(&[])).unwrap();
    assert_eq!(summary(&n.grants), vec![(l.root.clone(), RO, true)]);
}

#[test]
fn read_only_overlays_follow_physical_aliases() {
    let l = layout();
    // `alias` is a second named path that physically is `source`.
    let alias = l.root.join("alias");
    std::os::unix::fs::symlink(&l.source, &alias).unwrap();
    let other = tempfile::tempdir().unwrap();
    let writable_alias = fs::canonicalize(other.path()).unwrap().join("w");
    std::os::unix::fs::symlink(&l.source, &writable_alias).unwrap();
    let parent = vec![
        grant(&l.source, RO, true),
        Grant {
            source: writable_alias.clone(),
            ..grant(&writable_alias, RW, true)
        },
        grant(&l.root, RO, true),
    ];
    let n = narrow_grants(
        &parent,
        &[],
        Some(&[Request::new(&writable_alias, None)]),
        None,
    )
    .unwrap();
    assert!(
        summary(&n.grants).contains(&(l.source.clone(), RO, true)),
        "the read-only original is kept beside its writable alias"
    );
    // The writable alias is re-derived with its realpath as source.
    let w = n
        .grants
        .iter()
        .find(|g| g.target == writable_alias)
        .unwrap();
    assert_eq!(w.source, l.source);
    // Without protect_aliases a file grant is not re-added through an alias.
    let mut unprotected = parent.clone();
    unprotected[0].protect_aliases = false;
    let n = narrow_grants(
        &unprotected,
        &[],
        Some(&[Request::new(&writable_alias, None)]),
        None,
    )
    .unwrap();
    assert!(!n.grants.iter().any(|g| g.target == l.source));
}

#[test]
fn runtime_paths_under_a_selected_grant_become_deny_markers() {
    let l = layout();
    let parent = policy_grants(&l);
    let n = narrow_grants(
        &parent,
        &[],
        Some(&[Request::new(&l.root, None)]),
        Some(&[]),
    )
    .unwrap();
    assert_eq!(summary(&n.deny_markers), vec![(l.cache.clone(), RW, false)]);
    assert!(
        n.grants.iter().all(|g| g.tools),
        "markers are never process grants"
    );
    // `home` lies outside every selected grant: no marker.
    // A nested scope keeps hiding it.
    let nested = narrow_grants(
        &n.grants,
        &n.deny_markers,
        Some(&[Request::new(&l.root, Some(RO))]),
        None,
    )
    .unwrap();
    assert_eq!(
        summary(&nested.deny_markers),
        vec![(l.cache.clone(), RW, false)]
    );
    // A scope holding only `source` does not cover `cache`.
    let n = narrow_grants(
        &parent,
        &[],
        Some(&[Request::new(&l.source, None)]),
        Some(&[]),
    )
    .unwrap();
    assert!(n.deny_markers.is_empty());
}

#[test]
fn a_runtime_path_aliased_into_a_file_grant_is_hidden() {
    let l = layout();
    let link = l.home.join("ws-cache");
    std::os::unix::fs::symlink(&l.cache, &link).unwrap();
    let parent = vec![
        grant(&l.root, RW, true),
        Grant {
            source: link.clone(),
            ..grant(&link, RW, false)
        },
    ];
    let n = narrow_grants(&parent, &[], None, Some(&[])).unwrap();
    assert_eq!(n.deny_markers.len(), 1);
    assert_eq!(
        n.deny_markers[0].source, l.cache,
        "physical coverage uses the realpath"
    );
}

#[test]
fn missing_sources_are_unavailable() {
    let l = layout();
    let parent = policy_grants(&l);
    fs::remove_dir(&l.cache).unwrap();
    let err = narrow_grants(&parent, &[], None, None).unwrap_err();
    assert!(err
        .to_string()
        .contains("sandbox scope mount source is unavailable"));
}

#[test]
fn identities_detect_a_replaced_root() {
    let l = layout();
    let n = narrow_grants(&policy_grants(&l), &[], None, None).unwrap();
    let ids = capture_identities(&n.grants).unwrap();
    assert!(validate_identities(&n.grants, &ids).is_ok());
    fs::rename(&l.source, l.root.join("old")).unwrap();
    fs::create_dir(&l.source).unwrap();
    let err = validate_identities(&n.grants, &ids).unwrap_err();
    assert_eq!(
        err.message(),
        "sandbox scope mount source changed after initialization"
    );
    fs::remove_dir(&l.source).unwrap();
    assert!(
        validate_identities(&n.grants, &ids).is_err(),
        "a missing root is a change"
    );
}

#[test]
fn network_narrowing_table() {
    use NetworkChoice::{Parent as P, Requested as R};
    use NetworkMode::*;
    let all = [Inherit, None, Allowlist];
    let same = NetworkRequest::Parent;
    let req = |mode| NetworkRequest::Mode {
        mode,
        same_as_parent: false,
    };
    let equal_allowlist = NetworkRequest::Mode {
        mode: Allowlist,
        same_as_parent: true,
    };
    let ok =
        |parent, request| narrow_network(parent, request, &all).map_err(|e| e.message().to_owned());
    let widen = Err("sandbox scope cannot widen network access".to_owned());

    // parent nil
    assert_eq!(ok(Option::None, same), Ok((P, Option::None)));
    for request in [req(None), req(Inherit), equal_allowlist, req(Allowlist)] {
        assert_eq!(ok(Option::None, request), widen);
    }
    // parent :inherit
    assert_eq!(ok(Some(Inherit), same), Ok((P, Some(Inherit))));
    assert_eq!(ok(Some(Inherit), req(None)), Ok((R, Some(None))));
    assert_eq!(ok(Some(Inherit), req(Inherit)), Ok((R, Some(Inherit))));
    assert_eq!(ok(Some(Inherit), equal_allowlist), widen);
    assert_eq!(ok(Some(Inherit), req(Allowlist)), widen);
    // parent :none
    assert_eq!(ok(Some(None), same), Ok((P, Some(None))));
    assert_eq!(ok(Some(None), req(None)), Ok((R, Some(None))));
    assert_eq!(ok(Some(None), req(Inherit)), widen);
    assert_eq!(ok(Some(None), equal_allowlist), widen);
    assert_eq!(ok(Some(None), req(Allowlist)), widen);
    // parent :allowlist
    assert_eq!(ok(Some(Allowlist), same), Ok((P, Some(Allowlist))));
    assert_eq!(ok(Some(Allowlist), req(None)), Ok((R, Some(None))));
    assert_eq!(ok(Some(Allowlist), req(Inherit)), widen);
    assert_eq!(
        ok(Some(Allowlist), equal_allowlist),
        Ok((P, Some(Allowlist)))
    );
    assert_eq!(ok(Some(Allowlist), req(Allowlist)), widen);
}

#[test]
fn the_result_mode_must_be_enforceable_by_the_parent() {
    use NetworkMode::*;
    let err = narrow_network(
        Some(Inherit),
        NetworkRequest::Mode {
            mode: None,
            same_as_parent: false,
        },
        &[Inherit],
    )
    .unwrap_err();
    assert_eq!(
        err,
        crate::Error::NetworkNarrowing(NetworkNarrowing::Unsupported(None))
    );
    assert_eq!(err.kind(), crate::error::Kind::Capability);
    assert!(narrow_network(Some(Inherit), NetworkRequest::Parent, &[Inherit]).is_ok());
    assert!(narrow_network(Option::None, NetworkRequest::Parent, &[]).is_ok());
}

pub(super) fn limits() -> FsLimits {
    FsLimits {
        read_bytes: 1000,
        write_bytes: 1000,
        list_entries: 100,
    }
}

pub(super) fn caps(features: &[&str], modes: &[NetworkMode]) -> Capabilities {
    Capabilities::of(features, modes, "namespace")
}

#[test]
fn capabilities_only_lose_features() {
    use NetworkMode::*;
    let parent = caps(&["filesystem_read", "filesystem_write"], &[Inherit, None]);
    assert_eq!(
        narrow_capabilities(&parent, &CapabilityRequest::Parent),
        parent
    );
    let asked =
        CapabilityRequest::Features(vec!["filesystem_write".into(), "process_execute".into()]);
    let narrowed = narrow_capabilities(&parent, &asked);
    assert_eq!(narrowed.features, vec!["filesystem_write".to_owned()]);
    assert_eq!(narrowed.network_modes, vec![Inherit, None]);
    assert_eq!(narrowed.isolation, "namespace");
    let asked = CapabilityRequest::Intersect {
        features: vec!["filesystem_read".into(), "process_execute".into()],
        network_modes: vec!["none".into(), "allowlist".into()],
    };
    assert_eq!(
        narrow_capabilities(&parent, &asked),
        caps(&["filesystem_read"], &[None])
    );
    let theirs = caps(&["filesystem_write", "process_execute"], &[None, Allowlist]);
    let asked = CapabilityRequest::intersecting(&theirs);
    assert_eq!(
        narrow_capabilities(&parent, &asked),
        caps(&["filesystem_write"], &[None])
    );
}

#[test]
fn narrow_builds_the_whole_scope_and_never_widens() {
    use NetworkMode::*;
    let l = layout();
    let grants = policy_grants(&l);
    let capabilities = caps(&["filesystem_read", "filesystem_write"], &[Inherit, None]);
    let parent = Parent {
        grants: &grants,
        deny_markers: &[],
        capabilities: &capabilities,
        network: Some(Inherit),
    };
    let request = ScopeRequest {
        files: Some(vec![Request::new(&l.root, Some(RO))]),
        runtime_paths: Some(vec![]),
        capabilities: CapabilityRequest::Features(vec!["filesystem_read".into()]),
        network: NetworkRequest::Mode {
            mode: None,
            same_as_parent: false,
        },
    };
    let scoped = narrow(parent, &request, limits(), Option::None).unwrap();
    assert_eq!(summary(&scoped.grants), vec![(l.root.clone(), RO, true)]);
    assert_eq!(
        summary(&scoped.deny_markers),
        vec![(l.cache.clone(), RW, false)]
    );
    assert_eq!(scoped.capabilities, caps(&["filesystem_read"], &[None]));
    assert_eq!(scoped.network, NetworkChoice::Requested);
    assert_eq!(scoped.identities.len(), 1);
    assert!(!scoped
        .broker
        .allows(crate::fs::FsOperation::Write, &l.root.join("x")));

    // The default request keeps everything the parent has.
    let all = narrow(parent, &ScopeRequest::default(), limits(), Option::None).unwrap();
    assert_eq!(all.grants.len(), grants.len());
    // ... except network modes other than the one the scope has (SC.10b).
    assert_eq!(all.capabilities.features, capabilities.features);
    assert_eq!(all.capabilities.network_modes, vec![Inherit]);
    assert_eq!(all.network, NetworkChoice::Parent);

    // Widening anything fails as a whole.
    let widen = ScopeRequest {
        files: Some(vec![Request::new(&l.source, Some(RW))]),
        ..ScopeRequest::default()
    };
    let err = narrow(parent, &widen, limits(), Option::None)
        .err()
        .unwrap();
    assert!(err.message().contains("read-only mount writable"), "{err}");
    let widen = ScopeRequest {
        network: NetworkRequest::Mode {
            mode: Allowlist,
            same_as_parent: false,
        },
        ..ScopeRequest::default()
    };
    let err = narrow(parent, &widen, limits(), Option::None)
        .err()
        .unwrap();
    assert_eq!(err.message(), "sandbox scope cannot widen network access");
}

#[test]
fn narrow_checks_the_roots_against_the_workspace_pins() {
    let l = layout();
    let grants = vec![grant(&l.root, RW, true)];
    let capabilities = caps(&["filesystem_read"], &[]);
    let parent = Parent {
        grants: &grants,
        deny_markers: &[],
        capabilities: &capabilities,
        network: Option::None,
    };
    let pinned = Identity::capture(&l.root).unwrap();
    let pins = vec![("root".to_owned(), pinned.clone())];
    assert!(narrow(parent, &ScopeRequest::default(), limits(), Some(&pins)).is_ok());
    let stale = Identity {
        ino: pinned.ino + 1,
        ..pinned
    };
    let pins = vec![("root".to_owned(), stale)];
    let err = narrow(parent, &ScopeRequest::default(), limits(), Some(&pins))
        .err()
        .unwrap();
    assert_eq!(err.message(), "workspace path changed after opening: root");
}

#[test]
fn a_parent_hands_on_its_grants_capabilities_and_markers() {
    use crate::policy::GrantTable;
    let l = layout();
    let policy = Policy {
        files: GrantTable::of(&[("root", RW), ("source", RO)]),
        runtime_paths: GrantTable::of(&[("home", RW)]),
        ..Policy::default()
    };
    let capabilities = caps(&["filesystem_read"], &[NetworkMode::Inherit]);
    let directory = |name: &str| -> std::result::Result<PathBuf, Error> {
        Ok(match name {
            "root" => l.root.clone(),
            "source" => l.source.clone(),
            _ => l.home.clone(),
        })
    };
    let sandbox = Inherited::of_sandbox(&policy, &capabilities, directory, |e| e).unwrap();
    let mut grants = summary(&sandbox.grants);
    grants.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expected = vec![
        (l.source.clone(), RO, true),
        (l.root.clone(), RW, true),
        (l.home.clone(), RW, false),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(grants, expected);
    assert!(sandbox.deny_markers.is_empty());
    assert_eq!(sandbox.capabilities, capabilities);

    let request = ScopeRequest {
        files: Some(vec![Request::new(&l.root, Some(RO))]),
        runtime_paths: Some(vec![Request::new(&l.home, None)]),
        ..ScopeRequest::default()
    };
    let parent = sandbox.parent(Some(NetworkMode::Inherit));
    let scoped = narrow(parent, &request, limits(), Option::None).unwrap();
    let enclosing = Inherited::of_scope(&scoped);
    assert_eq!(enclosing.grants, scoped.grants);
    assert_eq!(enclosing.deny_markers, scoped.deny_markers);
    assert_eq!(enclosing.capabilities, scoped.capabilities);
    assert_eq!(enclosing.parent(None).network, None);

    let unknown = |_: &str| Err(Error::Argument("no such directory".into()));
    let refused = Inherited::of_sandbox(&policy, &capabilities, unknown, |e| e).unwrap_err();
    assert_eq!(refused.message(), "no such directory");
}
