//! Programs on a terminal (`Start` with a `pty`): they see one as stdin and
//! stdout and as their controlling terminal, sized as asked and resized by
//! `ResizeTTY`, read what `WriteStdin` typed, and are confined exactly as
//! piped programs are, under both backends.

mod support;

use std::net::TcpListener;

use littleghost_sandbox_proto::process::v1::process_service_client::ProcessServiceClient;
use littleghost_sandbox_proto::process::v1::start_response::Event;
use littleghost_sandbox_proto::process::v1::write_stdin_request::Payload;
use littleghost_sandbox_proto::process::v1::{
    ExitEvent, Pty, ResizeTtyRequest, SendSignalRequest, StartRequest, StartResponse,
    WriteStdinRequest,
};
use support::{config, eventually, process_with, Daemon, Options};
use tonic::transport::Channel;
use tonic::{Code, Streaming};

fn daemon(provider: &str) -> Daemon {
    Daemon::start(Options {
        policy: Some(&format!(r#"{{"provider": "{provider}"}}"#)),
        ..Options::default()
    })
}

/// Starts `argv` on a terminal of `cols` by `rows`: its id and its events.
async fn start_on_terminal(
    daemon: &Daemon,
    client: &mut ProcessServiceClient<Channel>,
    argv: &[&str],
    (cols, rows): (u32, u32),
) -> (i32, Streaming<StartResponse>) {
    let request = daemon.request(StartRequest {
        config: Some(config(argv)),
        pty: Some(Pty { cols, rows }),
    });
    let mut stream = client.start(request).await.unwrap().into_inner();
    let Some(Event::Init(init)) = stream.message().await.unwrap().unwrap().event else {
        panic!("the first event is not InitEvent");
    };
    (init.process_id, stream)
}

/// Reads events until the output holds `wanted` (true) or the program
/// exited (false, with its exit).
async fn read_until(
    stream: &mut Streaming<StartResponse>,
    output: &mut String,
    wanted: &str,
) -> Option<ExitEvent> {
    while !output.contains(wanted) {
        let event = stream
            .message()
            .await
            .unwrap()
            .expect("an ExitEvent ends the stream");
        match event.event.unwrap() {
            Event::Stdout(bytes) => output.push_str(&String::from_utf8_lossy(&bytes)),
            Event::Stderr(bytes) => panic!("stderr on a terminal: {bytes:?}"),
            Event::Exit(exit) => return Some(exit),
            Event::Init(_) => panic!("a second InitEvent"),
        }
    }
    None
}

async fn type_in(
    daemon: &Daemon,
    client: &mut ProcessServiceClient<Channel>,
    id: i32,
    payload: Payload,
) {
    let write = daemon.request(WriteStdinRequest {
        process_id: id,
        payload: Some(payload),
    });
    client.write_stdin(write).await.unwrap();
}

/// What the program reports of its terminal and its confinement, one fact
/// a line; `PORT` is a listener on the host's loopback.
const LOOK_AROUND: &str = r#"
test -t 0 && test -t 1 && echo tty:yes
set -- $(cat /proc/$$/stat); test "$7" != 0 && echo ctty:yes
ls -l /proc/$$/fd/ | grep -q ptmx || echo master:absent
echo size:$(stty size)
read line; echo got:$line
echo size:$(stty size)
cat /etc/shadow >/dev/null 2>&1 || echo shadow:refused
(echo hi > /dev/tcp/127.0.0.1/PORT) 2>/dev/null || echo network:refused
cat >/dev/null; echo eof:read
"#;

async fn a_program_on_a_terminal_is_sized_resized_typed_to_and_confined(provider: &str) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let daemon = daemon(provider);
    let mut client = daemon.processes().await;
    let script = LOOK_AROUND.replace("PORT", &port);
    let (id, mut stream) =
        start_on_terminal(&daemon, &mut client, &["bash", "-c", &script], (91, 17)).await;
    let mut output = String::new();
    let exit = read_until(&mut stream, &mut output, "size:17 91\r\n").await;
    assert!(exit.is_none(), "{output:?} {exit:?}");
    let resize = daemon.request(ResizeTtyRequest {
        process_id: id,
        cols: 120,
        rows: 40,
    });
    client.resize_tty(resize).await.unwrap();
    type_in(
        &daemon,
        &mut client,
        id,
        Payload::Input(b"hello\n".to_vec()),
    )
    .await;
    let exit = read_until(&mut stream, &mut output, "network:").await;
    assert!(exit.is_none(), "{output:?} {exit:?}");
    type_in(&daemon, &mut client, id, Payload::Eof(())).await;
    let exit = read_until(&mut stream, &mut output, "no such line").await;
    for fact in [
        "tty:yes",
        "ctty:yes",
        "master:absent",
        "size:17 91",
        "got:hello",
        "size:40 120",
        "shadow:refused",
        "network:refused",
        "eof:read",
    ] {
        assert!(
            output.contains(&format!("{fact}\r\n")),
            "{fact}: {output:?}"
        );
    }
    assert_eq!(exit.map(|exit| exit.exit_code), Some(0), "{output:?}");
    assert!(
        listener.accept().is_err(),
        "the sandbox reached the host's loopback"
    );
    // Ended: its id is gone, as for a piped program.
    let late = daemon.request(ResizeTtyRequest {
        process_id: id,
        cols: 80,
        rows: 24,
    });
    assert_eq!(
        client.resize_tty(late).await.unwrap_err().code(),
        Code::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_on_a_terminal_under_bubblewrap() {
    a_program_on_a_terminal_is_sized_resized_typed_to_and_confined("bubblewrap").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_on_a_terminal_under_landlock() {
    a_program_on_a_terminal_is_sized_resized_typed_to_and_confined("landlock").await;
}

/// Ctrl-C typed on the terminal interrupts the program (the terminal
/// controls its session: without that the byte would only be read), and
/// SendSignal ends it as it ends a piped one.
/// `marker` tells this call's sleeps from those of tests running beside it.
async fn interrupted_and_signalled(provider: &str, marker: char) {
    let daemon = daemon(provider);
    let mut client = daemon.processes().await;
    let (interrupted, signalled) = (format!("31.4161{marker}"), format!("31.4162{marker}"));
    let script = format!("echo ready; exec sleep {interrupted}");
    let (id, mut stream) =
        start_on_terminal(&daemon, &mut client, &["sh", "-c", &script], (80, 24)).await;
    let mut output = String::new();
    assert!(read_until(&mut stream, &mut output, "ready\r\n")
        .await
        .is_none());
    type_in(&daemon, &mut client, id, Payload::Input(vec![3])).await;
    let exit = read_until(&mut stream, &mut output, "no such line").await;
    let code = exit.map(|exit| exit.exit_code);
    assert!(code.is_some_and(|code| code != 0), "{code:?} {output:?}");

    let script = format!("echo ready; exec sleep {signalled}");
    let (id, mut stream) =
        start_on_terminal(&daemon, &mut client, &["sh", "-c", &script], (80, 24)).await;
    let mut output = String::new();
    assert!(read_until(&mut stream, &mut output, "ready\r\n")
        .await
        .is_none());
    let signal = daemon.request(SendSignalRequest {
        process_id: id,
        signal: 15,
    });
    client.send_signal(signal).await.unwrap();
    let exit = read_until(&mut stream, &mut output, "no such line").await;
    assert_eq!(exit.map(|exit| exit.exit_code), Some(128 + 15));
    assert!(
        eventually(|| !process_with(&interrupted) && !process_with(&signalled)),
        "a program outlived its end"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_and_send_signal_under_bubblewrap() {
    interrupted_and_signalled("bubblewrap", '1').await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_and_send_signal_under_landlock() {
    interrupted_and_signalled("landlock", '2').await;
}

#[tokio::test(flavor = "multi_thread")]
async fn resize_tty_answers_as_sandboxd_does() {
    let daemon = Daemon::start(Options::default());
    let mut client = daemon.processes().await;
    let unknown = daemon.request(ResizeTtyRequest {
        process_id: 999_999,
        cols: 80,
        rows: 24,
    });
    assert_eq!(
        client.resize_tty(unknown).await.unwrap_err().code(),
        Code::NotFound
    );
    let piped = daemon.request(StartRequest {
        config: Some(config(&["sleep", "31.4163"])),
        pty: None,
    });
    let mut stream = client.start(piped).await.unwrap().into_inner();
    let Some(Event::Init(init)) = stream.message().await.unwrap().unwrap().event else {
        panic!("the first event is not InitEvent");
    };
    let no_terminal = daemon.request(ResizeTtyRequest {
        process_id: init.process_id,
        cols: 80,
        rows: 24,
    });
    assert_eq!(
        client.resize_tty(no_terminal).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    let (id, _stream) =
        start_on_terminal(&daemon, &mut client, &["sleep", "31.4164"], (80, 24)).await;
    let too_large = daemon.request(ResizeTtyRequest {
        process_id: id,
        cols: 70_000,
        rows: 24,
    });
    assert_eq!(
        client.resize_tty(too_large).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    let too_large = daemon.request(StartRequest {
        config: Some(config(&["true"])),
        pty: Some(Pty {
            cols: 80,
            rows: 70_000,
        }),
    });
    assert_eq!(
        client
            .start(too_large)
            .await
            .err()
            .map(|status| status.code()),
        Some(Code::InvalidArgument)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_a_program_on_a_terminal() {
    let mut daemon = Daemon::start(Options::default());
    let mut client = daemon.processes().await;
    let script = "trap '' TERM HUP; echo ready; exec sleep 31.4165";
    let (_, mut stream) =
        start_on_terminal(&daemon, &mut client, &["sh", "-c", script], (80, 24)).await;
    let mut output = String::new();
    assert!(read_until(&mut stream, &mut output, "ready\r\n")
        .await
        .is_none());
    // "ready" comes before the shell execs the marked program.
    assert!(eventually(|| process_with("31.4165")));
    daemon.terminate();
    assert!(
        eventually(|| !process_with("31.4165")),
        "the program survived SIGTERM"
    );
    assert!(daemon.wait().success());
}
