//! agent-sandbox's own Python client (`k8s-agent-sandbox` and `grpcio` from
//! PyPI, which bin/setup installs into tmp/python) speaks to the daemon: its
//! filesystem client over REST and its generated stubs over gRPC.

mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::{Daemon, Options};

#[test]
fn the_agent_sandbox_python_client_reads_writes_and_runs() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = checkout.join("tmp/python/bin/python");
    assert!(
        python.exists(),
        "{} is missing: bin/setup installs k8s-agent-sandbox and grpcio there",
        python.display()
    );
    let daemon = Daemon::start(Options::default());
    let rest_port = daemon.rest.rsplit(':').next().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/agent_sandbox_client.py");
    // Unbuffered, so a script that hangs shows how far it got when it is killed.
    let mut child = std::process::Command::new(&python)
        .arg("-u")
        .arg(script)
        .arg(&daemon.grpc)
        .arg(rest_port)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Every call of the script has a 30 s deadline: far past it, it hangs.
    let deadline = Instant::now() + Duration::from_secs(120);
    let hung = loop {
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!hung, "the script hung for 120 s:\n{stdout}\n{stderr}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.ends_with("all checks passed\n"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(daemon.path("py/hello.txt")).unwrap(),
        "hello from python\n"
    );
}
