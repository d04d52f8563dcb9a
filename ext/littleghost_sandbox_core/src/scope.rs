//! Scope narrowing (SPEC §13, SC.3–SC.10): the one place that decides which
//! grants, deny markers and network a scope gets from its parent. Every rule
//! here can only keep or remove authority; "a scope can never widen its
//! parent" is enforced by construction and re-checked through
//! [`Grant::narrow`].

use std::path::{Path, PathBuf};

use crate::error::{capability, Result};
use crate::grants::{Access, Grant, Identity};
use crate::paths;

/// One requested grant: the workspace directory a name stands for, and the
/// access asked for (`None` keeps the matching parent grant's access).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub target: PathBuf,
    pub access: Option<Access>,
}

impl Request {
    pub fn new(target: impl Into<PathBuf>, access: Option<Access>) -> Request {
        Request {
            target: target.into(),
            access,
        }
    }
}

/// The outcome of narrowing: the scope's grants (sorted longest target first)
/// and the runtime-only directories its broker must hide from tools (SC.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowed {
    pub grants: Vec<Grant>,
    pub deny_markers: Vec<Grant>,
}

const OUTSIDE_PARENT: &str = "sandbox scope cannot expose a path outside its parent";

/// Narrows `parent` grants to a scope (SC.3–SC.8).
///
/// `files` and `runtime` are the requested categories: `None` keeps every
/// parent grant of that visibility, `Some(&[])` drops them all. When both are
/// `None` the parent grants are kept as they are. `parent_markers` are the
/// parent scope's own deny markers, so a nested scope keeps hiding what its
/// parent hid.
pub fn narrow_grants(
    parent: &[Grant],
    parent_markers: &[Grant],
    files: Option<&[Request]>,
    runtime: Option<&[Request]>,
) -> Result<Narrowed> {
    let mut selected = select(parent, files, runtime)?;
    add_restrictive_overlays(parent, &mut selected);
    let mut grants = selected
        .iter()
        .map(|grant| rederive(parent, grant))
        .collect::<Result<Vec<Grant>>>()?;
    sort_longest_first(&mut grants);
    let deny_markers = deny_markers(parent, parent_markers, &grants);
    Ok(Narrowed {
        grants,
        deny_markers,
    })
}

/// SC.3–SC.5: picks the requested grants of each visibility.
fn select(
    parent: &[Grant],
    files: Option<&[Request]>,
    runtime: Option<&[Request]>,
) -> Result<Vec<Grant>> {
    if files.is_none() && runtime.is_none() {
        return Ok(parent.to_vec());
    }
    let mut selected = Vec::new();
    for (tools, requests) in [(true, files), (false, runtime)] {
        match requests {
            None => selected.extend(parent.iter().filter(|g| g.tools == tools).cloned()),
            Some(requests) => {
                for request in requests {
                    let grant = select_one(parent, tools, request)?;
                    merge_selected(&mut selected, grant);
                }
            }
        }
    }
    Ok(selected)
}

/// SC.4/SC.5: the parent grant of this visibility whose target is exactly the
/// requested directory, with access kept or narrowed.
fn select_one(parent: &[Grant], tools: bool, request: &Request) -> Result<Grant> {
    let target = paths::clean(&request.target);
    let matching = parent
        .iter()
        .find(|g| g.tools == tools && g.target == target)
        .ok_or_else(|| capability(OUTSIDE_PARENT))?;
    let access = request.access.unwrap_or(matching.access);
    if access.writable() && !matching.access.writable() {
        return Err(capability(
            "sandbox scope cannot make a read-only mount writable",
        ));
    }
    Ok(Grant {
        access,
        ..matching.clone()
    })
}

/// The same name requested twice keeps the more restrictive access.
fn merge_selected(selected: &mut Vec<Grant>, grant: Grant) {
    match selected
        .iter_mut()
        .find(|g| g.tools == grant.tools && g.target == grant.target)
    {
        Some(existing) => {
            if !grant.access.writable() {
                existing.access = Access::ReadOnly;
            }
        }
        None => selected.push(grant),
    }
}

/// SC.6: a read-only parent grant stays in force wherever a selected writable
/// grant would otherwise reach it, lexically or through a physical alias.
fn add_restrictive_overlays(parent: &[Grant], selected: &mut Vec<Grant>) {
    let writable: Vec<(Grant, Option<PathBuf>)> = selected
        .iter()
        .filter(|g| g.access.writable())
        .map(|g| (g.clone(), canonical(&g.source)))
        .collect();
    for read_only in parent.iter().filter(|g| !g.access.writable()) {
        let already = selected
            .iter()
            .any(|g| g.tools == read_only.tools && g.target == read_only.target);
        if already {
            continue;
        }
        let protects = read_only.protect_aliases || !read_only.tools;
        let read_only_root = canonical(&read_only.source);
        let reached = writable.iter().any(|(w, w_root)| {
            w.covers(&read_only.target)
                || (protects && physically_related(read_only_root.as_deref(), w_root.as_deref()))
        });
        if reached {
            selected.push(read_only.clone());
        }
    }
}

/// SC.7: re-derives `grant` from the parent grant of the same visibility with
/// the longest covering target; the result's source is the realpath.
fn rederive(parent: &[Grant], grant: &Grant) -> Result<Grant> {
    let origin = parent
        .iter()
        .filter(|p| p.tools == grant.tools && p.covers(&grant.target))
        .max_by_key(|p| p.target.as_os_str().len())
        .ok_or_else(|| capability(OUTSIDE_PARENT))?;
    let narrowed = origin.narrow(&grant.target, grant.access)?;
    let source = crate::grants::realpath(&grant.source)?;
    if source != narrowed.source {
        return Err(capability(format!(
            "sandbox scope mount {} must come from its parent",
            grant.target.display()
        )));
    }
    Ok(narrowed)
}

/// SC.8: every runtime-only directory of the parent (or hidden by the parent)
/// that a scope grant covers, lexically or physically, unless the scope keeps
/// it as a runtime grant anyway.
fn deny_markers(parent: &[Grant], parent_markers: &[Grant], grants: &[Grant]) -> Vec<Grant> {
    let mut markers: Vec<Grant> = Vec::new();
    let candidates = parent.iter().filter(|g| !g.tools).chain(parent_markers);
    for candidate in candidates {
        let kept = grants
            .iter()
            .any(|g| !g.tools && g.target == candidate.target);
        let duplicate = markers.iter().any(|m| m.target == candidate.target);
        if kept || duplicate {
            continue;
        }
        let root = canonical(&candidate.source);
        let covered = grants.iter().any(|g| {
            g.covers(&candidate.target)
                || root
                    .as_deref()
                    .is_some_and(|r| paths::is_within(r, &g.source))
        });
        if covered {
            markers.push(Grant {
                // A missing directory keeps its lexical source: the broker
                // decides what an absent marker means, we never drop it.
                source: root.unwrap_or_else(|| candidate.source.clone()),
                tools: false,
                ..candidate.clone()
            });
        }
    }
    sort_longest_first(&mut markers);
    markers
}

fn canonical(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// True iff one canonical root contains the other.
fn physically_related(a: Option<&Path>, b: Option<&Path>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => paths::is_within(a, b) || paths::is_within(b, a),
        _ => false,
    }
}

/// Longest target first; ties put tool-visible grants first, then order by path.
fn sort_longest_first(grants: &mut [Grant]) {
    grants.sort_by(|a, b| {
        b.target
            .as_os_str()
            .len()
            .cmp(&a.target.as_os_str().len())
            .then(b.tools.cmp(&a.tools))
            .then(a.target.cmp(&b.target))
    });
}

/// SC.16: the (realpath, dev, ino) of each grant root when the scope was built.
pub fn capture_identities(grants: &[Grant]) -> Result<Vec<Identity>> {
    grants
        .iter()
        .map(|g| {
            Identity::capture(&g.source)
                .ok_or_else(|| capability("sandbox scope mount source is unavailable"))
        })
        .collect()
}

/// SC.16: every grant root still is the directory captured at build time.
pub fn validate_identities(grants: &[Grant], identities: &[Identity]) -> Result<()> {
    let unchanged = grants.len() == identities.len()
        && grants
            .iter()
            .zip(identities)
            .all(|(g, id)| Identity::capture(&g.source).as_ref() == Some(id));
    if unchanged {
        Ok(())
    } else {
        Err(capability(
            "sandbox scope mount source changed after initialization",
        ))
    }
}

/// A network mode (SPEC §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkMode {
    Inherit,
    None,
    Allowlist,
}

impl NetworkMode {
    /// Parses the Ruby symbol name.
    pub fn parse(name: &str) -> Option<NetworkMode> {
        match name {
            "inherit" => Some(NetworkMode::Inherit),
            "none" => Some(NetworkMode::None),
            "allowlist" => Some(NetworkMode::Allowlist),
            _ => None,
        }
    }

    /// The Ruby symbol name.
    pub fn name(self) -> &'static str {
        match self {
            NetworkMode::Inherit => "inherit",
            NetworkMode::None => "none",
            NetworkMode::Allowlist => "allowlist",
        }
    }
}

/// What a scope asks for: `nil`/`true` mean "the parent's network"; `false`
/// arrives here as `Mode(None)`. `same_as_parent` is the NetworkPolicy `==`
/// comparison with the parent, which only matters for allowlists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkRequest {
    Parent,
    Mode {
        mode: NetworkMode,
        same_as_parent: bool,
    },
}

/// Which network object the scope keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkChoice {
    /// The parent's network policy (possibly nil).
    Parent,
    /// The requested, coerced network policy.
    Requested,
}

/// SC.10/SC.10b: the network a scope may have. Returns the choice and the
/// resulting mode (`None` when the result is the parent's nil network).
/// `supported` are the parent capabilities' network modes.
pub fn narrow_network(
    parent: Option<NetworkMode>,
    request: NetworkRequest,
    supported: &[NetworkMode],
) -> Result<(NetworkChoice, Option<NetworkMode>)> {
    use NetworkMode as M;
    let widen = || capability("sandbox scope cannot widen network access");
    let (choice, mode) = match request {
        NetworkRequest::Parent => (NetworkChoice::Parent, parent),
        NetworkRequest::Mode {
            mode,
            same_as_parent,
        } => match (parent, mode) {
            (Option::None, _) => return Err(widen()),
            (Some(_), M::None) => (NetworkChoice::Requested, Some(M::None)),
            (Some(M::Inherit), M::Inherit) => (NetworkChoice::Requested, Some(M::Inherit)),
            (Some(M::Allowlist), M::Allowlist) if same_as_parent => {
                (NetworkChoice::Parent, Some(M::Allowlist))
            }
            _ => return Err(widen()),
        },
    };
    if let Some(mode) = mode {
        if !supported.contains(&mode) {
            return Err(capability(format!(
                "sandbox backend cannot enforce scoped network mode :{}",
                mode.name()
            )));
        }
    }
    Ok((choice, mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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

    fn grant(dir: &Path, access: Access, tools: bool) -> Grant {
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
        assert!(err.message().contains("read-only mount writable"), "{err}");
        // runtime grant promoted to a file grant
        let err =
            narrow_grants(&parent, &[], Some(&[Request::new(&l.cache, None)]), None).unwrap_err();
        assert_eq!(err.message(), OUTSIDE_PARENT);
        // file grant demoted to runtime-only
        let err =
            narrow_grants(&parent, &[], None, Some(&[Request::new(&l.source, None)])).unwrap_err();
        assert_eq!(err.message(), OUTSIDE_PARENT);
        // a directory the parent never granted, even beneath a granted one
        let sub = l.root.join("sub");
        fs::create_dir(&sub).unwrap();
        let err = narrow_grants(&parent, &[], Some(&[Request::new(&sub, None)]), None).unwrap_err();
        assert_eq!(err.message(), OUTSIDE_PARENT);
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
        assert_eq!(err.message(), OUTSIDE_PARENT);
        let err = narrow_grants(
            &child.grants,
            &child.deny_markers,
            None,
            Some(&[Request::new(&l.cache, None)]),
        )
        .unwrap_err();
        assert_eq!(err.message(), OUTSIDE_PARENT);
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
            .message()
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
        let ok = |parent, request| {
            narrow_network(parent, request, &all).map_err(|e| e.message().to_owned())
        };
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
            err.message(),
            "sandbox backend cannot enforce scoped network mode :none"
        );
        assert!(narrow_network(Some(Inherit), NetworkRequest::Parent, &[Inherit]).is_ok());
        assert!(narrow_network(Option::None, NetworkRequest::Parent, &[]).is_ok());
    }
}
