//! sandboxd's `process.v1.ProcessService` and the `littleghost.v1`
//! denial stream over gRPC. Status codes follow the reference server:
//! INVALID_ARGUMENT for a missing command, PERMISSION_DENIED for a working
//! directory outside the root, NOT_FOUND for an unknown process or program,
//! FAILED_PRECONDITION for a closed stdin or a process without a terminal.
//! A `Start` with a `pty` runs the program, confined alike, on a terminal of
//! its own: its output comes as stdout events.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use littleghost_sandbox_core::error::kind::Kind as ErrorKind;
use littleghost_sandbox_core::error::Error;
use littleghost_sandbox_core::launch::prepare::{Kind, ScopeCall, ShownFailure};
use littleghost_sandbox_core::process::capture::CaptureMode;
use littleghost_sandbox_core::process::error::SpawnError;
use littleghost_sandbox_core::process::running::RunningProcess;
use littleghost_sandbox_core::process::session::Session as CoreSession;
use littleghost_sandbox_core::process::terminal::WindowSize;
use littleghost_sandbox_proto::littleghost::v1 as lg;
use littleghost_sandbox_proto::process::v1 as pb;
use rustix::process::Signal;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::confinement::unix_ms;
use crate::programs::{Command, Failure, Program, ResizeError, StdinError};
use crate::scope;
use crate::Daemon;

/// How much output one StartResponse carries at most.
const CHUNK: usize = 64 * 1024;
/// How long the stream waits for news before it checks the client is still there.
const SLICE: Duration = Duration::from_millis(50);

/// The process service.
pub struct Processes(pub Arc<Daemon>);

/// The denial stream.
pub struct DenialStream(pub Arc<Daemon>);

/// Sets a flag when dropped: the request's future was dropped (the client
/// went away, or its deadline passed), so the program it runs must end.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The call's `x-littleghost-scope`, narrowed from the policy (None: the policy's own).
fn call_scope<T>(daemon: &Daemon, request: &Request<T>) -> Result<Option<ScopeCall>, Status> {
    let Some(text) = request.metadata().get(scope::HEADER) else {
        return Ok(None);
    };
    match scope::narrow(&daemon.confinement, text.as_bytes()) {
        Ok(scope) => Ok(Some(scope.launch)),
        Err(scope::Refused::Malformed(message)) => Err(Status::invalid_argument(message)),
        Err(scope::Refused::Rule(error)) => Err(match scope::widens(&error) {
            true => Status::permission_denied(error.to_string()),
            false => Status::invalid_argument(error.to_string()),
        }),
    }
}

fn command(config: Option<pb::ProcessConfig>) -> Result<Command, Status> {
    let config = config.unwrap_or_default();
    if config.command.is_empty() {
        return Err(Status::invalid_argument("command is required"));
    }
    let mut environment: Vec<(String, String)> = config.env_vars.into_iter().collect();
    environment.sort();
    Ok(Command {
        argv: config.command,
        environment,
        scope: None,
        cwd: config
            .cwd
            .filter(|cwd| !cwd.is_empty())
            .map(|cwd| PathBuf::from(cwd.trim_start_matches('/'))),
    })
}

/// A refused or failed launch as the status the reference server answers,
/// decided by the failure's type and the core error's kind, never its words.
fn failure_status(failure: Failure) -> Status {
    match failure {
        Failure::Refused(error) => refused_status(&error),
        Failure::WorkingDirectory {
            missing: false,
            error,
        } => Status::permission_denied(error.to_string()),
        Failure::WorkingDirectory {
            missing: true,
            error,
        } => Status::not_found(error.to_string()),
        Failure::Spawn(SpawnError::NotFound) => {
            Status::not_found("failed to start command: command or path not found")
        }
        Failure::Spawn(SpawnError::NotExecutable) => {
            Status::permission_denied("failed to start command: permission denied")
        }
        Failure::Spawn(SpawnError::WorkingDirectory(_)) => {
            Status::not_found("failed to start command: the working directory is not available")
        }
        Failure::Spawn(SpawnError::Refused(error)) => Status::permission_denied(error.to_string()),
        Failure::Spawn(other) => Status::internal(format!("failed to start command: {other:?}")),
        Failure::TimedOut => {
            Status::deadline_exceeded("the deadline passed; the command was ended")
        }
        Failure::Cancelled => Status::cancelled("the call was cancelled; the command was ended"),
    }
}

/// A terminal's size as the proto gives it: None (the kernel's 0 by 0) when
/// either is 0, as the reference server leaves it; a size no terminal has
/// is refused.
fn window_size(cols: u32, rows: u32) -> Result<Option<WindowSize>, Failure> {
    if cols == 0 || rows == 0 {
        return Ok(None);
    }
    match (u16::try_from(cols), u16::try_from(rows)) {
        (Ok(cols), Ok(rows)) => Ok(Some(WindowSize { cols, rows })),
        _ => Err(Failure::Refused(Error::Argument(format!(
            "a terminal of {cols} columns and {rows} rows is larger than 65535 by 65535"
        )))),
    }
}

/// A launch the core refused: a rule's refusal is PERMISSION_DENIED, a bad
/// argument INVALID_ARGUMENT, a control this host cannot enforce
/// FAILED_PRECONDITION; anything else is the daemon's fault.
fn refused_status(error: &Error) -> Status {
    let message = error.to_string();
    if error.refusal().is_some() {
        return Status::permission_denied(message);
    }
    match error.kind() {
        ErrorKind::Argument | ErrorKind::Key => Status::invalid_argument(message),
        ErrorKind::Capability => Status::failed_precondition(message),
        _ => Status::internal(message),
    }
}

/// The client's `grpc-timeout` (gRPC over HTTP/2: digits and a unit).
fn deadline<T>(request: &Request<T>) -> Option<Instant> {
    let value = request.metadata().get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    let amount: u64 = digits.parse().ok()?;
    let duration = match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    };
    Some(Instant::now() + duration)
}

type StartStream = Pin<Box<dyn Stream<Item = Result<pb::StartResponse, Status>> + Send>>;

fn event(event: pb::start_response::Event) -> Result<pb::StartResponse, Status> {
    Ok(pb::StartResponse { event: Some(event) })
}

/// The gRPC metadata by which a `Start` asks to be a run as `Execute` runs
/// one (a littleghost extension; the gem's `execute_program` with a block):
/// stdin closed, each stream bounded by the policy's `output_bytes`, bwrap's
/// own exec failure shown as the shell would (17.4), the output streamed as
/// it is printed. Without it, `Start` is the reference's session.
pub const RUN_METADATA: &str = "x-littleghost-run";

/// A run's capture: the first `output_bytes` of each stream (17.9).
fn run_capture(output_bytes: u64) -> CaptureMode {
    CaptureMode::PerStream {
        limit: usize::try_from(output_bytes).unwrap_or(usize::MAX),
        stop_at_limit: false,
    }
}

/// 17.4: the run's end shown as the shell would show bwrap's own exec failure, if it was one.
fn shown_failure(program: &Program) -> Option<ShownFailure> {
    let [stdout, stderr] = program.process.output_since(&mut [0, 0]);
    let code = program.process.exit().and_then(|e| e.code());
    program.prepared.exec_failure(code, &stdout, &stderr)
}

/// A session's output to the stream as it comes, until the program ended
/// and its output is read; whether the client left first.
fn stream_session(
    process: &RunningProcess,
    sender: &mpsc::Sender<Result<pb::StartResponse, Status>>,
) -> bool {
    let gone = |sent: Result<(), _>| sent.is_err();
    let mut client_left = false;
    while !client_left {
        let chunk = process.read_chunk(CHUNK);
        if !chunk.stdout.is_empty() {
            let out = pb::start_response::Event::Stdout(chunk.stdout);
            client_left |= gone(sender.blocking_send(event(out)));
        }
        if !chunk.stderr.is_empty() {
            let err = pb::start_response::Event::Stderr(chunk.stderr);
            client_left |= gone(sender.blocking_send(event(err)));
        }
        if chunk.stdout_closed && chunk.stderr_closed && process.try_reap().is_some() {
            break;
        }
        client_left |= sender.is_closed();
        process.notifier().wait(SLICE, None);
        process.notifier().clear();
    }
    client_left
}

/// A run's kept output to the stream as it is printed, until the program
/// ended and its output is read; whether the client left first. While the
/// output could still be bwrap's own exec failure (nothing on stdout,
/// stderr a beginning of its line), stderr is held back, so the stream
/// carries what `Execute` answers: the shell's words for it (17.4).
fn stream_run(program: &Program, sender: &mpsc::Sender<Result<pb::StartResponse, Status>>) -> bool {
    let process = &program.process;
    process.stream_output();
    let mut cursor = [0, 0];
    let mut held: Option<Vec<u8>> = program.prepared.exec_argv0.as_ref().map(|_| Vec::new());
    let send = |stream: usize, bytes: Vec<u8>| {
        let event = match stream {
            0 => pb::start_response::Event::Stdout(bytes),
            _ => pb::start_response::Event::Stderr(bytes),
        };
        sender
            .blocking_send(Ok(pb::StartResponse { event: Some(event) }))
            .is_err()
    };
    loop {
        let finished = process.finished();
        let [stdout, stderr] = process.output_since(&mut cursor);
        let mut client_left = false;
        if let Some(kept) = held.as_mut() {
            kept.extend_from_slice(&stderr);
            if !stdout.is_empty() || !could_be_exec_failure(program, kept) {
                let flushed = std::mem::take(kept);
                held = None;
                if !flushed.is_empty() {
                    client_left |= send(1, flushed);
                }
            }
        } else if !stderr.is_empty() {
            client_left |= send(1, stderr);
        }
        if !stdout.is_empty() {
            client_left |= send(0, stdout);
        }
        if finished {
            match (held, shown_failure(program)) {
                (Some(_), Some(failure)) => {
                    client_left |= send(1, failure.stderr.into_bytes());
                }
                (Some(kept), None) if !kept.is_empty() => client_left |= send(1, kept),
                _ => {}
            }
            return client_left;
        }
        if client_left || sender.is_closed() {
            return true;
        }
        process.notifier().wait(SLICE, None);
        process.notifier().clear();
    }
}

/// Whether `stderr` is still a beginning of bwrap's own `execvp` failure line.
fn could_be_exec_failure(program: &Program, stderr: &[u8]) -> bool {
    let Some(argv0) = &program.prepared.exec_argv0 else {
        return false;
    };
    let prefix = [b"bwrap: execvp ".as_slice(), argv0, b": "].concat();
    let common = prefix.len().min(stderr.len());
    // The line ends with a short strerror; anything longer is the program's own.
    stderr[..common] == prefix[..common] && stderr.len() <= prefix.len() + 64
}

#[tonic::async_trait]
impl pb::process_service_server::ProcessService for Processes {
    type StartStream = StartStream;

    async fn start(
        &self,
        request: Request<pb::StartRequest>,
    ) -> Result<Response<Self::StartStream>, Status> {
        let scope = call_scope(&self.0, &request)?;
        let run = request
            .metadata()
            .get(RUN_METADATA)
            .is_some_and(|value| value == "true");
        let request = request.into_inner();
        let terminal = request
            .pty
            .map(|pty| window_size(pty.cols, pty.rows))
            .transpose()
            .map_err(failure_status)?;
        let command = Command {
            scope,
            ..command(request.config)?
        };
        let daemon = self.0.clone();
        daemon.refuse_when_stopping()?;
        let output_bytes = daemon.confinement.declaration.limits.output_bytes;
        // A run is launched and bounded as `Execute` launches it; a session
        // keeps its stdin open and one bound over both streams (§18).
        let (kind, mode, keep_stdin) = match run {
            true => (Kind::Run, run_capture(output_bytes), false),
            false => (Kind::Session, CoreSession::capture_mode(output_bytes), true),
        };
        let program = tokio::task::spawn_blocking({
            let daemon = daemon.clone();
            move || match terminal {
                Some(size) => Program::start_on_terminal(&daemon.confinement, command, mode, size),
                None => Program::start(&daemon.confinement, kind, command, mode, keep_stdin),
            }
        })
        .await
        .map_err(|error| Status::internal(error.to_string()))?
        .map_err(failure_status)?;
        let session = daemon.sessions.insert(program);
        let (sender, receiver) = mpsc::channel(16);
        tokio::task::spawn_blocking(move || {
            let process = &session.program.process;
            let pid = process.pid();
            let init = pb::start_response::Event::Init(pb::InitEvent { process_id: pid });
            let client_left = match sender.blocking_send(event(init)) {
                Err(_) => true,
                Ok(()) if run => stream_run(&session.program, &sender),
                Ok(()) => stream_session(process, &sender),
            };
            if client_left {
                session.program.end();
            }
            if let Some(denial) = session.program.limit_denial() {
                daemon.confinement.denials.record(denial);
            }
            let code = match run {
                true => shown_failure(&session.program)
                    .map_or(session.program.exit_code(), |f| f.exit_code),
                false => session.program.exit_code(),
            };
            let exit = pb::start_response::Event::Exit(pb::ExitEvent { exit_code: code });
            let _ = sender.blocking_send(event(exit));
            daemon.sessions.remove(pid);
        });
        let stream: StartStream = Box::pin(ReceiverStream::new(receiver));
        Ok(Response::new(stream))
    }

    async fn execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let deadline = deadline(&request);
        let scope = call_scope(&self.0, &request)?;
        let command = Command {
            scope,
            ..command(request.into_inner().config)?
        };
        let daemon = self.0.clone();
        daemon.refuse_when_stopping()?;
        let cancelled = Arc::new(AtomicBool::new(false));
        let _cancel = CancelOnDrop(cancelled.clone());
        tokio::task::spawn_blocking(move || {
            let mode = run_capture(daemon.confinement.declaration.limits.output_bytes);
            let program = Program::start(&daemon.confinement, Kind::Run, command, mode, false)?;
            let waited = program.wait(deadline, &cancelled);
            if let Some(denial) = program.limit_denial() {
                daemon.confinement.denials.record(denial);
            }
            waited?;
            let [stdout, stderr] = program.process.output_since(&mut [0, 0]);
            let exit_code = program.exit_code();
            Ok(match shown_failure(&program) {
                Some(failure) => pb::ExecuteResponse {
                    exit_code: failure.exit_code,
                    stdout: Vec::new(),
                    stderr: failure.stderr.into_bytes(),
                },
                None => pb::ExecuteResponse {
                    exit_code,
                    stdout,
                    stderr,
                },
            })
        })
        .await
        .map_err(|error| Status::internal(error.to_string()))?
        .map(Response::new)
        .map_err(failure_status)
    }

    async fn write_stdin(
        &self,
        request: Request<pb::WriteStdinRequest>,
    ) -> Result<Response<pb::WriteStdinResponse>, Status> {
        let request = request.into_inner();
        let id = request.process_id;
        let session = self
            .0
            .sessions
            .get(id)
            .ok_or_else(|| Status::not_found(format!("process {id} not found")))?;
        let written = tokio::task::spawn_blocking(move || match request.payload {
            Some(pb::write_stdin_request::Payload::Input(bytes)) => session.write(&bytes),
            Some(pb::write_stdin_request::Payload::Eof(())) => session.close_stdin(),
            None => Ok(()),
        })
        .await
        .map_err(|error| Status::internal(error.to_string()))?;
        match written {
            Ok(()) => Ok(Response::new(pb::WriteStdinResponse {})),
            Err(StdinError::Closed) => Err(Status::failed_precondition(format!(
                "process {id} has no stdin"
            ))),
            Err(StdinError::Io(error)) => {
                Err(Status::internal(format!("failed to write stdin: {error}")))
            }
        }
    }

    async fn send_signal(
        &self,
        request: Request<pb::SendSignalRequest>,
    ) -> Result<Response<pb::SendSignalResponse>, Status> {
        let request = request.into_inner();
        let id = request.process_id;
        let session = self
            .0
            .sessions
            .get(id)
            .ok_or_else(|| Status::not_found(format!("process {id} not found")))?;
        let signal = match pb::Signal::try_from(request.signal) {
            Ok(pb::Signal::Sigint) => Signal::INT,
            Ok(pb::Signal::Sigkill) => Signal::KILL,
            Ok(pb::Signal::Sigterm) => Signal::TERM,
            _ => {
                return Err(Status::invalid_argument(format!(
                    "unsupported or unspecified signal: {}",
                    request.signal
                )))
            }
        };
        session.signal(signal);
        Ok(Response::new(pb::SendSignalResponse {}))
    }

    async fn resize_tty(
        &self,
        request: Request<pb::ResizeTtyRequest>,
    ) -> Result<Response<pb::ResizeTtyResponse>, Status> {
        let request = request.into_inner();
        let id = request.process_id;
        let session = self
            .0
            .sessions
            .get(id)
            .ok_or_else(|| Status::not_found(format!("process {id} not found")))?;
        let size = window_size(request.cols, request.rows)
            .map_err(failure_status)?
            .ok_or_else(|| Status::invalid_argument("cols and rows must be positive"))?;
        match session.resize(size) {
            Ok(()) => Ok(Response::new(pb::ResizeTtyResponse {})),
            Err(ResizeError::NoTerminal) => Err(Status::failed_precondition(format!(
                "failed to resize TTY: process {id} has no terminal"
            ))),
            Err(ResizeError::Io(error)) => {
                Err(Status::internal(format!("failed to resize TTY: {error}")))
            }
        }
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<lg::Denial, Status>> + Send>>;

#[tonic::async_trait]
impl lg::denial_service_server::DenialService for DenialStream {
    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<lg::WatchDenialsRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let mut denials = self
            .0
            .confinement
            .denials
            .watch(request.into_inner().replay);
        let (sender, receiver) = mpsc::channel(16);
        tokio::spawn(async move {
            while let Some(denial) = denials.recv().await {
                let message = lg::Denial {
                    kind: denial.kind.name().into(),
                    operation: denial.operation.name().into(),
                    target: denial.target.clone(),
                    message: denial.message.clone(),
                    time_unix_ms: unix_ms(denial.at),
                    reason: denial.reason.name().into(),
                };
                if sender.send(Ok(message)).await.is_err() {
                    break;
                }
            }
        });
        let stream: WatchStream = Box::pin(ReceiverStream::new(receiver));
        Ok(Response::new(stream))
    }
}
