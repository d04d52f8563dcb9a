//! Programs over gRPC (`process.v1.ProcessService`): `Execute` for a run,
//! `Start` for a session, `WriteStdin` and `SendSignal` for its input and
//! end. Each request carries the token and, from a scope, its narrowing
//! (`x-littleghost-scope`).

use std::time::Duration;

use littleghost_sandbox_proto::process::v1 as pb;
use pb::process_service_client::ProcessServiceClient;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

use super::endpoint::Endpoint;
use super::error::Error;

/// What to run: the argv, the environment given, the working directory
/// relative to the daemon's root.
#[derive(Debug, Clone, Default)]
pub struct Command {
    pub argv: Vec<String>,
    pub environment: Vec<(String, String)>,
    pub cwd: Option<String>,
}

impl Command {
    fn config(self) -> pb::ProcessConfig {
        pb::ProcessConfig {
            command: self.argv,
            env_vars: self.environment.into_iter().collect(),
            cwd: self.cwd,
        }
    }
}

/// The connection and what every request carries.
#[derive(Clone)]
pub struct Grpc {
    pub endpoint: Endpoint,
    pub channel: Channel,
    pub scope: Option<String>,
}

/// The metadata by which a `Start` asks littleghost-sandboxd for a run:
/// stdin closed, each stream bounded and bwrap's exec failure shown as
/// `Execute` does (a daemon without it starts a session).
const RUN_METADATA: &str = "x-littleghost-run";

/// How long a run may exceed its timeout on the wire before this side
/// stops waiting for the daemon to say so.
const WIRE_GRACE: Duration = Duration::from_secs(5);

impl Grpc {
    fn request<T>(&self, message: T) -> Result<tonic::Request<T>, Error> {
        let mut request = tonic::Request::new(message);
        let metadata = request.metadata_mut();
        if let Some(authorization) = self.endpoint.authorization() {
            let value = MetadataValue::try_from(authorization)
                .map_err(|error| Error::Endpoint(error.to_string()))?;
            metadata.insert("authorization", value);
        }
        if let Some(scope) = &self.scope {
            let value = MetadataValue::try_from(scope.as_str())
                .map_err(|error| Error::Endpoint(error.to_string()))?;
            metadata.insert(super::endpoint::SCOPE_HEADER, value);
        }
        Ok(request)
    }

    fn client(&self) -> ProcessServiceClient<Channel> {
        ProcessServiceClient::new(self.channel.clone())
    }

    fn failure(&self, status: tonic::Status) -> Error {
        Error::from_status(&self.endpoint.grpc, &status)
    }

    /// Runs `command` to its end, or ends it at `timeout` seconds (the
    /// request's deadline, which the daemon enforces by ending the program).
    pub async fn execute(
        &self,
        command: Command,
        timeout: f64,
    ) -> Result<pb::ExecuteResponse, Error> {
        let wait = Duration::from_secs_f64(timeout);
        let mut request = self.request(pb::ExecuteRequest {
            config: Some(command.config()),
        })?;
        request.set_timeout(wait);
        let mut client = self.client();
        match tokio::time::timeout(wait + WIRE_GRACE, client.execute(request)).await {
            Err(_) => Err(Error::timed_out(timeout)),
            // The daemon's answer at the deadline, or tonic's own when it
            // gives up first ("Timeout expired", CANCELLED).
            Ok(Err(status))
                if matches!(
                    status.code(),
                    tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
                ) =>
            {
                Err(Error::timed_out(timeout))
            }
            Ok(Err(status)) => Err(self.failure(status)),
            Ok(Ok(response)) => Ok(response.into_inner()),
        }
    }

    /// Starts `command` (as a run, when `run`: littleghost-sandboxd then
    /// launches and bounds it as `Execute` does); the stream's first event
    /// names its process.
    pub async fn start(
        &self,
        command: Command,
        run: bool,
    ) -> Result<(i32, tonic::Streaming<pb::StartResponse>), Error> {
        let mut request = self.request(pb::StartRequest {
            config: Some(command.config()),
            pty: None,
        })?;
        if run {
            request
                .metadata_mut()
                .insert(RUN_METADATA, MetadataValue::from_static("true"));
        }
        let mut stream = self
            .client()
            .start(request)
            .await
            .map_err(|status| self.failure(status))?
            .into_inner();
        match stream.message().await {
            Ok(Some(pb::StartResponse {
                event: Some(pb::start_response::Event::Init(init)),
            })) => Ok((init.process_id, stream)),
            Ok(_) => Err(Error::Protocol("Start did not begin with InitEvent".into())),
            Err(status) => Err(self.failure(status)),
        }
    }

    /// Bytes to the process's stdin, or (`None`) its end of file.
    pub async fn write_stdin(&self, process_id: i32, input: Option<Vec<u8>>) -> Result<(), Error> {
        let payload = match input {
            Some(bytes) => pb::write_stdin_request::Payload::Input(bytes),
            None => pb::write_stdin_request::Payload::Eof(()),
        };
        let request = self.request(pb::WriteStdinRequest {
            process_id,
            payload: Some(payload),
        })?;
        match self.client().write_stdin(request).await {
            Ok(_) => Ok(()),
            Err(status) if status.code() == tonic::Code::FailedPrecondition => Err(Error::Closed(
                format!("stdin is closed: {}", status.message()),
            )),
            Err(status) => Err(self.failure(status)),
        }
    }

    /// Signals the process's group.
    pub async fn signal(&self, process_id: i32, signal: pb::Signal) -> Result<(), Error> {
        let request = self.request(pb::SendSignalRequest {
            process_id,
            signal: signal.into(),
        })?;
        match self.client().send_signal(request).await {
            Ok(_) => Ok(()),
            // It ended already.
            Err(status) if status.code() == tonic::Code::NotFound => Ok(()),
            Err(status) => Err(self.failure(status)),
        }
    }
}
