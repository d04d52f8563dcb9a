//! sandboxd's `process.v1.ProcessService` and the `littleghost.v1`
//! denial stream over gRPC. Status codes follow the reference server:
//! INVALID_ARGUMENT for a missing command, PERMISSION_DENIED for a working
//! directory outside the root, NOT_FOUND for an unknown process or program,
//! FAILED_PRECONDITION for a closed stdin or a process without a terminal.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use littleghost_sandbox_core::error::kind::Kind as ErrorKind;
use littleghost_sandbox_core::error::Error;
use littleghost_sandbox_core::launch::prepare::{Kind, ScopeCall};
use littleghost_sandbox_core::process::capture::CaptureMode;
use littleghost_sandbox_core::process::error::SpawnError;
use littleghost_sandbox_core::process::session::Session as CoreSession;
use littleghost_sandbox_proto::littleghost::v1 as lg;
use littleghost_sandbox_proto::process::v1 as pb;
use rustix::process::Signal;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::confinement::unix_ms;
use crate::programs::{Command, Failure, Program, StdinError};
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

#[tonic::async_trait]
impl pb::process_service_server::ProcessService for Processes {
    type StartStream = StartStream;

    async fn start(
        &self,
        request: Request<pb::StartRequest>,
    ) -> Result<Response<Self::StartStream>, Status> {
        let scope = call_scope(&self.0, &request)?;
        let request = request.into_inner();
        if request.pty.is_some() {
            return Err(Status::unimplemented(
                "littleghost-sandboxd does not give programs a terminal (pty)",
            ));
        }
        let command = Command {
            scope,
            ..command(request.config)?
        };
        let daemon = self.0.clone();
        daemon.refuse_when_stopping()?;
        let output_bytes = daemon.confinement.declaration.limits.output_bytes;
        let program = tokio::task::spawn_blocking({
            let daemon = daemon.clone();
            move || {
                Program::start(
                    &daemon.confinement,
                    Kind::Session,
                    command,
                    CoreSession::capture_mode(output_bytes),
                    true,
                )
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
            let gone = |sent: Result<(), _>| sent.is_err();
            let init = pb::start_response::Event::Init(pb::InitEvent { process_id: pid });
            let mut client_left = gone(sender.blocking_send(event(init)));
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
            if client_left {
                session.program.end();
            }
            if let Some(denial) = session.program.limit_denial() {
                daemon.confinement.denials.record(denial);
            }
            let code = session.program.exit_code();
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
        let output_bytes = usize::try_from(daemon.confinement.declaration.limits.output_bytes)
            .unwrap_or(usize::MAX);
        tokio::task::spawn_blocking(move || {
            let mode = CaptureMode::PerStream {
                limit: output_bytes,
                stop_at_limit: false,
            };
            let program = Program::start(&daemon.confinement, Kind::Run, command, mode, false)?;
            let waited = program.wait(deadline, &cancelled);
            if let Some(denial) = program.limit_denial() {
                daemon.confinement.denials.record(denial);
            }
            waited?;
            let [stdout, stderr] = program.process.output_since(&mut [0, 0]);
            let exit_code = program.exit_code();
            let shown = program.prepared.exec_failure(
                program.process.exit().and_then(|e| e.code()),
                &stdout,
                &stderr,
            );
            Ok(match shown {
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
            Some(pb::write_stdin_request::Payload::Eof(())) => {
                session.close_stdin();
                Ok(())
            }
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
        let id = request.into_inner().process_id;
        if self.0.sessions.get(id).is_none() {
            return Err(Status::not_found(format!("process {id} not found")));
        }
        Err(Status::failed_precondition(format!(
            "failed to resize TTY: process {id} has no terminal"
        )))
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
