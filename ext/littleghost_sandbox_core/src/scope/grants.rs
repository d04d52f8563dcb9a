//! Grant narrowing (SPEC §13, SC.3–SC.8): which grants and deny markers a
//! scope gets from its parent. Every rule here can only keep or remove
//! authority; "a scope can never widen its parent" is enforced by
//! construction and re-checked through [`Grant::narrow`].

use std::path::{Path, PathBuf};

use crate::grants::{Access, Grant, Narrowing, Result};
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
        .ok_or(Narrowing::OutsideParent)?;
    let access = request.access.unwrap_or(matching.access);
    if access.writable() && !matching.access.writable() {
        return Err(Narrowing::Writable);
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
        .ok_or(Narrowing::OutsideParent)?;
    let narrowed = origin.narrow(&grant.target, grant.access)?;
    let source = crate::grants::realpath(&grant.source)?;
    if source != narrowed.source {
        return Err(Narrowing::ForeignSource(grant.target.clone()));
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
