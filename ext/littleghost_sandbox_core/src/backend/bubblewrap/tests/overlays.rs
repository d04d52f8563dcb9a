use super::*;

#[test]
fn overlays_re_add_read_only_grants_beneath_a_selected_writable_grant() {
    let host = FakeHost::debian();
    let policy_grants = vec![
        rw("/w"),
        ro("/w/source"),
        runtime("/w/.cache", Access::ReadOnly),
    ];
    // The scope selected only the writable root.
    let launch = launch_grants(&[rw("/w")], &policy_grants, &host);
    let summary: Vec<(String, Access, bool)> = launch
        .iter()
        .map(|g| (g.target.display().to_string(), g.access, g.tools))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("/w".into(), Access::ReadWrite, true),
            ("/w/source".into(), Access::ReadOnly, true),
            ("/w/.cache".into(), Access::ReadOnly, false),
        ]
    );
}

#[test]
fn overlays_follow_physical_aliases_and_read_only_wins_duplicates() {
    // A named path outside the root whose realpath lies inside it.
    let host = FakeHost::debian().alias("/data/ref", "/w/vendor/ref");
    let policy_grants = vec![rw("/w"), ro("/data/ref")];
    let launch = launch_grants(&[rw("/w"), rw("/w/vendor/ref")], &policy_grants, &host);
    let at = launch
        .iter()
        .find(|g| g.target == Path::new("/w/vendor/ref"))
        .unwrap();
    assert_eq!(at.access, Access::ReadOnly);
    assert_eq!(at.source, PathBuf::from("/w/vendor/ref"));
    assert_eq!(
        launch
            .iter()
            .filter(|g| g.target == Path::new("/w/vendor/ref"))
            .count(),
        1
    );
}

#[test]
fn overlays_do_not_touch_read_only_parents_or_writable_children() {
    let host = FakeHost::debian();
    let policy_grants = vec![ro("/w"), rw("/w/out")];
    let launch = launch_grants(&policy_grants, &policy_grants, &host);
    assert_eq!(launch, vec![ro("/w"), rw("/w/out")]);
}

#[test]
fn scope_masks_hide_dropped_policy_grants_nested_in_selected_ones() {
    let host = FakeHost::debian();
    let policy_grants = vec![
        rw("/w"),
        runtime("/w/.secrets", Access::ReadWrite),
        rw("/w/cache"),
        rw("/elsewhere"),
    ];
    let selected = launch_grants(&[rw("/w"), rw("/w/cache")], &policy_grants, &host);
    assert_eq!(
        scope_masks(&policy_grants, &selected, &host),
        vec![PathBuf::from("/w/.secrets")]
    );
    // Without a scope everything is selected and nothing is masked.
    let all = launch_grants(&policy_grants, &policy_grants, &host);
    assert!(scope_masks(&policy_grants, &all, &host).is_empty());
}

#[test]
fn scope_masks_apply_at_the_physical_location_inside_the_selected_grant() {
    let host = FakeHost::debian().alias("/home/u/.cargo", "/w/tools/cargo");
    let policy_grants = vec![rw("/w"), runtime("/home/u/.cargo", Access::ReadWrite)];
    let selected = launch_grants(&[rw("/w")], &policy_grants, &host);
    assert_eq!(
        scope_masks(&policy_grants, &selected, &host),
        vec![PathBuf::from("/w/tools/cargo")]
    );
}
