//! One whole launch through [`Launcher::prepare`], from the call and a fake
//! workspace to the host argv: descriptor numbering, grants bound from
//! their handles, a scope's grants and masks, working-directory refusals,
//! the subprocess rule, and the relay under `:allowlist`.

use std::cell::Cell;

use super::*;
use crate::error::Error;
use crate::grants::Access;
use crate::launch::fake_workspace::{message, pwd_call, FakeWorkspace, Raised};
use crate::launch::prepare::{self, Kind, LaunchCall, LaunchError, Prepared, ScopeCall};
use crate::launch::Pins;
use crate::policy::{
    AllowRequest, Given, GrantTable, NetworkPolicy, NetworkRequest, NetworkRules, Policy,
};

/// The owner's side: counts its openings, wraps with a prefix, and has the gateway given.
struct FakeSandbox {
    pins: Pins,
    opened: Cell<u32>,
    gateway: Option<FakeGateway>,
    prefix: Vec<String>,
}

#[derive(Clone)]
struct FakeGateway {
    /// Whether it serves views of narrower rules (only the built-in one does).
    serves_views: bool,
}

impl Gateway<Raised> for FakeGateway {
    fn environment(&self) -> Result<Vec<(String, String)>, Raised> {
        Ok(vec![("GATEWAY".into(), "1".into())])
    }

    fn validate(&self) -> Result<(), Raised> {
        Ok(())
    }

    fn connection(&self) -> Result<GatewayConnection, Raised> {
        Ok(GatewayConnection {
            socket: "/gateway/proxy.sock".into(),
            binds: vec![("/gateway".into(), "/gateway".into())],
            handles: Vec::new(),
            socket_handle: None,
        })
    }

    fn view(&self, _rules: &NetworkRules) -> Result<Option<GatewayConnection>, Raised> {
        Ok(self.serves_views.then(|| GatewayConnection {
            socket: "/view/proxy.sock".into(),
            binds: vec![("/view".into(), "/view".into())],
            handles: Vec::new(),
            socket_handle: None,
        }))
    }
}

impl Sandbox<Raised> for FakeSandbox {
    fn open(&self) -> Result<Pins, Raised> {
        self.opened.set(self.opened.get() + 1);
        Ok(self.pins.clone())
    }

    fn gateway(&self) -> Option<Box<dyn Gateway<Raised> + '_>> {
        let gateway = self.gateway.clone()?;
        Some(Box::new(gateway))
    }

    fn wrap_command(&self, argv: Vec<String>) -> Result<Vec<String>, Raised> {
        Ok(self.prefix.iter().cloned().chain(argv).collect())
    }
}

fn options() -> Options {
    // Stands in for `open`'s resolution of a bwrap at /opt/bwrap.
    super::super::executable::remember(
        Path::new("/opt/bwrap"),
        Resolved {
            path: "/opt/bwrap".into(),
            version: MINIMUM_VERSION,
        },
    );
    Options {
        executable: "/opt/bwrap".into(),
        // A helper file root owns and nobody else may write stands in for the relay.
        relay: Some("/usr/bin/true".into()),
        ..Options::default()
    }
}

fn sandbox(policy: &Policy, workspace: &FakeWorkspace) -> FakeSandbox {
    let grants = prepare::policy_grants(policy, workspace).unwrap();
    FakeSandbox {
        pins: Pins::capture(&grants).unwrap(),
        opened: Cell::new(0),
        gateway: None,
        prefix: Vec::new(),
    }
}

fn prepare(
    policy: &Policy,
    workspace: &FakeWorkspace,
    sandbox: &FakeSandbox,
    call: LaunchCall<Raised>,
) -> Result<Prepared, LaunchError<Raised>> {
    let options = options();
    let launcher = Launcher {
        options: &options,
        sandbox,
    };
    launcher.prepare(policy, workspace, call)
}

/// The words following `option` each time it appears.
fn after(argv: &[String], option: &str, count: usize) -> Vec<Vec<String>> {
    argv.iter()
        .enumerate()
        .filter(|(_, word)| *word == option)
        .map(|(at, _)| argv[at + 1..=at + count].to_vec())
        .collect()
}

fn read_only(path: &Path) -> Grant {
    Grant {
        source: path.to_path_buf(),
        target: path.to_path_buf(),
        access: Access::ReadOnly,
        tools: true,
        protect_aliases: true,
    }
}

fn text(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

#[test]
fn the_filter_comes_first_then_each_grant_from_its_handle() {
    let workspace = FakeWorkspace::new(&["src"], &["out"]);
    let policy = Policy {
        files: GrantTable::of(&[("root", Access::ReadOnly), ("out", Access::ReadWrite)]),
        ..Policy::default()
    };
    let sandbox = sandbox(&policy, &workspace);
    let prepared = prepare(
        &policy,
        &workspace,
        &sandbox,
        pwd_call(Kind::Run, Some("src")),
    )
    .unwrap();
    let argv = &prepared.argv;
    assert_eq!(argv[0], "/opt/bwrap");
    assert_eq!(&argv[argv.len() - 2..], ["--", "pwd"]);
    // The seccomp program is the child's descriptor 3, the grants 4 and 5
    // in the order they are bound (shortest target first, then by name).
    assert_eq!(after(argv, "--seccomp", 1), [["3"]]);
    let root = text(&workspace.root);
    let out = text(&workspace.paths[0].1);
    assert_eq!(after(argv, "--bind-fd", 2), [vec!["4".to_string(), out]]);
    assert_eq!(
        after(argv, "--ro-bind-fd", 2),
        [vec!["5".to_string(), root.clone()]]
    );
    assert_eq!(prepared.spawn.inherited_fds.len(), 3);
    assert_eq!(prepared.kept.anchors.len(), 2);
    assert_eq!(prepared.kept.descriptors.len(), 1);
    assert_eq!(after(argv, "--chdir", 1), [vec![format!("{root}/src")]]);
    // The child's environment travels by --setenv, bwrap's own is empty.
    assert!(prepared.environment.is_empty() && prepared.chdir.is_none());
    assert_eq!(after(argv, "--setenv", 2).last().unwrap(), &["B", "2"]);
    assert_eq!(prepared.program, "pwd");
    assert_eq!(sandbox.opened.get(), 1);
}

#[test]
fn a_scope_binds_its_own_grants_and_masks_what_it_dropped_beneath_them() {
    let workspace = FakeWorkspace::new(&["src", "secret"], &[]);
    let policy = Policy::default();
    let sandbox = sandbox(&policy, &workspace);
    let mut scoped = pwd_call(Kind::Run, None);
    let src = workspace.root.join("src");
    scoped.scope = Ok(Some(ScopeCall {
        grants: vec![read_only(&src)],
        spawns: true,
        ..ScopeCall::default()
    }));
    let prepared = prepare(&policy, &workspace, &sandbox, scoped).unwrap();
    let binds = after(&prepared.argv, "--ro-bind-fd", 2);
    assert_eq!(binds, [vec!["4".to_string(), text(&src)]]);
    // The root is not the working directory: the scope dropped it.
    let mut outside = pwd_call(Kind::Run, Some("secret"));
    outside.scope = Ok(Some(ScopeCall {
        grants: vec![read_only(&src)],
        spawns: true,
        ..ScopeCall::default()
    }));
    let error = prepare(&policy, &workspace, &sandbox, outside).unwrap_err();
    assert_eq!(
        message(error),
        "sandbox working directory is outside the selected scope: secret"
    );
}

#[test]
fn working_directories_are_refused_naming_what_the_caller_wrote() {
    let workspace = FakeWorkspace::new(&[], &[]);
    let policy = Policy::default();
    let sandbox = sandbox(&policy, &workspace);
    let refused = |cwd: &str| {
        message(
            prepare(
                &policy,
                &workspace,
                &sandbox,
                pwd_call(Kind::Run, Some(cwd)),
            )
            .unwrap_err(),
        )
    };
    assert_eq!(
        refused("missing"),
        "Working directory is not available: missing"
    );
    assert_eq!(
        refused("../x"),
        "workspace path traversal is not allowed: ../x"
    );
    // In the sandbox an absolute path names a directory there, outside every grant.
    assert_eq!(
        refused("/etc/../etc"),
        "sandbox working directory is outside the selected scope: /etc"
    );
}

#[test]
fn the_subprocess_rule_is_decided_before_the_sandbox_opens() {
    let workspace = FakeWorkspace::new(&[], &[]);
    let policy = Policy::default();
    let sandbox = sandbox(&policy, &workspace);
    let mut forbidden = pwd_call(Kind::Run, None);
    forbidden.allow_subprocesses = Some(true);
    forbidden.scope = Ok(Some(ScopeCall::default()));
    let error = prepare(&policy, &workspace, &sandbox, forbidden).unwrap_err();
    assert!(matches!(
        error,
        LaunchError::Rule(Error::Capability(m)) if m.contains("subprocess creation")
    ));
    assert_eq!(sandbox.opened.get(), 0);
    // Nothing requested: a run follows the scope (here, under the filter
    // denying them); a session asks for them (H.6), which this scope refuses.
    let scope = ScopeCall {
        grants: prepare::policy_grants(&policy, &workspace).unwrap(),
        ..ScopeCall::default()
    };
    let mut run = pwd_call(Kind::Run, None);
    run.scope = Ok(Some(scope.clone()));
    assert!(prepare(&policy, &workspace, &sandbox, run).is_ok());
    let mut session = pwd_call(Kind::Run, None);
    session.kind = Kind::Session;
    session.scope = Ok(Some(scope));
    let error = prepare(&policy, &workspace, &sandbox, session).unwrap_err();
    assert!(matches!(error, LaunchError::Rule(Error::Capability(_))));
}

fn allowlist() -> Policy {
    let mut request = NetworkRequest::mode(Given::symbol("allowlist"));
    request.allow = vec![AllowRequest::Text("example.com:8443".into())];
    Policy {
        network: Some(NetworkPolicy::new(request).unwrap()),
        ..Policy::default()
    }
}

#[test]
fn an_allowlist_runs_the_command_under_the_relay_with_the_gateway_bound() {
    let workspace = FakeWorkspace::new(&[], &[]);
    let policy = allowlist();
    let mut sandbox = sandbox(&policy, &workspace);
    sandbox.gateway = Some(FakeGateway {
        serves_views: false,
    });
    sandbox.prefix = vec!["nice".into()];
    let prepared = prepare(&policy, &workspace, &sandbox, pwd_call(Kind::Run, None)).unwrap();
    let argv = &prepared.argv;
    let command = &argv[argv.iter().position(|w| w == "--").unwrap() + 1..];
    assert_eq!(
        &command[..4],
        [RELAY_PATH, "relay", "--socket", "/gateway/proxy.sock"]
    );
    assert_eq!(&command[command.len() - 3..], ["--", "nice", "pwd"]);
    assert!(
        after(argv, "--ro-bind", 2).contains(&vec!["/gateway".to_string(), "/gateway".to_string()])
    );
    // The relay's copy comes after the filter (3) and the root's handle (4);
    // the sandbox's hosts file naming the served destination after it.
    let data = after(argv, "--ro-bind-data", 2);
    assert_eq!(data[0], ["5", RELAY_PATH]);
    assert_eq!(data.last().unwrap()[1], "/etc/hosts");
    let setenv = after(argv, "--setenv", 2);
    assert!(setenv.contains(&vec!["GATEWAY".to_string(), "1".to_string()]));
    assert!(setenv.contains(&vec![
        "HTTPS_PROXY".to_string(),
        crate::launch::RELAY_PROXY_URL.to_string()
    ]));
    // bwrap executes the relay; its exec failure is read back as the caller's program.
    assert_eq!(prepared.exec_argv0.as_deref(), Some(RELAY_PATH.as_bytes()));
    assert_eq!(prepared.program, "pwd");
}

#[test]
fn a_narrowed_scope_needs_a_gateway_that_serves_views() {
    let workspace = FakeWorkspace::new(&[], &[]);
    let policy = allowlist();
    let mut sandbox = sandbox(&policy, &workspace);
    sandbox.gateway = Some(FakeGateway {
        serves_views: false,
    });
    let narrowed = || {
        let mut request = NetworkRequest::mode(Given::symbol("allowlist"));
        request.allow = vec![AllowRequest::Text("other.example:8443".into())];
        let network = NetworkPolicy::new(request).unwrap();
        let mut scoped = pwd_call(Kind::Run, None);
        scoped.scope = Ok(Some(ScopeCall {
            grants: prepare::policy_grants(&policy, &workspace).unwrap(),
            network: Some(NetworkMode::Allowlist),
            network_rules: Some(network.rules),
            spawns: true,
        }));
        scoped
    };
    let error = prepare(&policy, &workspace, &sandbox, narrowed()).unwrap_err();
    assert!(matches!(
        error,
        LaunchError::Rule(Error::Capability(m)) if m.contains("needs the built-in gateway")
    ));
    sandbox.gateway = Some(FakeGateway { serves_views: true });
    let prepared = prepare(&policy, &workspace, &sandbox, narrowed()).unwrap();
    assert!(prepared.argv.contains(&"/view/proxy.sock".to_string()));
}

#[test]
fn an_allowlist_without_a_gateway_is_refused() {
    let workspace = FakeWorkspace::new(&[], &[]);
    let policy = allowlist();
    let sandbox = sandbox(&policy, &workspace);
    let error = prepare(&policy, &workspace, &sandbox, pwd_call(Kind::Run, None)).unwrap_err();
    assert_eq!(
        message(error),
        crate::policy::Unenforceable::AllowlistWithoutGateway.to_string()
    );
}

#[test]
fn bwraps_own_exec_failure_reads_as_the_shells() {
    let workspace = FakeWorkspace::new(&[], &[]);
    let policy = Policy::default();
    let sandbox = sandbox(&policy, &workspace);
    let prepared = prepare(&policy, &workspace, &sandbox, pwd_call(Kind::Run, None)).unwrap();
    let stderr = b"bwrap: execvp pwd: No such file or directory\n";
    let shown = prepared.exec_failure(Some(1), b"", stderr).unwrap();
    assert_eq!(
        (shown.exit_code, shown.stderr.as_str()),
        (127, "pwd: command not found\n")
    );
    assert_eq!(prepared.exec_failure(Some(1), b"", b"other\n"), None);
}
