//! 16.5 and W12: which grants a launch binds (the execution overlays) and
//! which dropped policy grants it masks.

use std::path::PathBuf;

use super::HostProbe;
use crate::grants::{Access, Grant};
use crate::paths;

/// Sorts shortest target first, keeping the given order among equals.
pub(super) fn sort_shortest_first(grants: &mut [Grant]) {
    grants.sort_by_key(|g| g.target.as_os_str().len());
}

/// 16.5 steps (4) and (5): the selected grants plus an execution overlay for
/// every policy-level read-only grant whose canonical root lies inside a
/// selected writable grant, re-added read-only at the matching target even
/// if the scope omitted it. On duplicate targets the read-only entry wins.
/// The result is ordered shortest target first.
pub fn launch_grants(
    selected: &[Grant],
    policy_grants: &[Grant],
    host: &dyn HostProbe,
) -> Vec<Grant> {
    let mut candidates: Vec<Grant> = selected.to_vec();
    for readonly in policy_grants.iter().filter(|g| !g.access.writable()) {
        let Some(inner) = host.realpath(&readonly.source) else {
            continue;
        };
        for writable in selected.iter().filter(|g| g.access.writable()) {
            let Some(outer) = host.realpath(&writable.source) else {
                continue;
            };
            let Some(relative) = paths::remainder(&inner, &outer) else {
                continue;
            };
            candidates.push(Grant {
                source: inner.clone(),
                target: writable.target.join(relative),
                access: Access::ReadOnly,
                tools: readonly.tools,
                protect_aliases: readonly.protect_aliases,
            });
        }
    }

    let mut result: Vec<Grant> = Vec::new();
    for grant in candidates {
        match result.iter_mut().find(|kept| kept.target == grant.target) {
            Some(kept) => {
                if kept.access.writable() && !grant.access.writable() {
                    *kept = grant;
                }
            }
            None => result.push(grant),
        }
    }
    sort_shortest_first(&mut result);
    result
}

/// W12: every policy grant that this launch did not select but that lies
/// physically inside a launch grant is masked (an empty read-only tmpfs at
/// the place it appears), so a process sees no more than its scope. With no
/// scope every policy grant is selected and nothing is masked.
pub fn scope_masks(
    policy_grants: &[Grant],
    launch: &[Grant],
    host: &dyn HostProbe,
) -> Vec<PathBuf> {
    let launched: Vec<(PathBuf, &Grant)> = launch
        .iter()
        .filter_map(|g| host.realpath(&g.source).map(|root| (root, g)))
        .collect();
    let mut masks: Vec<PathBuf> = Vec::new();
    for dropped in policy_grants {
        let Some(inner) = host.realpath(&dropped.source) else {
            continue;
        };
        if launched.iter().any(|(root, _)| *root == inner) {
            continue;
        }
        for (outer, grant) in &launched {
            match paths::remainder(&inner, outer) {
                Some(relative) if !relative.as_os_str().is_empty() => {
                    let target = grant.target.join(relative);
                    if !masks.contains(&target) {
                        masks.push(target);
                    }
                }
                _ => {}
            }
        }
    }
    masks.sort_by_key(|m| m.as_os_str().len());
    masks
}
