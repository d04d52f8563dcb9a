//! littleghost-sandboxd: an agent-sandbox runtime (sandboxd's gRPC process
//! service and filesystem REST API) whose every program runs confined by a
//! sandbox policy and whose every file call goes through the broker
//! (docs/design.md "littleghost-sandboxd", docs/security.md "The daemon").

mod args;
mod confinement;
mod grpc;
mod programs;
mod rest;
mod scope;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use littleghost_sandbox_core::grants::Access;
use littleghost_sandbox_core::policy::GrantTable;
use littleghost_sandbox_core::policy::{Declaration, Policy};
use littleghost_sandbox_proto::littleghost::v1::denial_service_server::DenialServiceServer;
use littleghost_sandbox_proto::process::v1::process_service_server::ProcessServiceServer;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::{Request, Status};

use args::Args;
use confinement::Confinement;
use programs::Sessions;

/// How long health answers 503 after the programs ended, before the daemon exits.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The token's header through agent-sandbox's sandbox-router, which checks
/// and removes `authorization` (its own token) before it proxies a request.
pub const ROUTED_AUTHORIZATION: &str = "x-littleghost-authorization";

/// What every request shares.
pub struct Daemon {
    pub confinement: Confinement,
    pub sessions: Sessions,
    pub started: Instant,
    /// `authorization: Bearer TOKEN`, when a token file was given.
    pub token: Option<String>,
    /// `--health-without-token`: `GET /v1/health` needs no token.
    pub health_without_token: bool,
    stopping: AtomicBool,
}

impl Daemon {
    /// SIGTERM arrived: health answers 503 and no program starts.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    pub fn refuse_when_stopping(&self) -> Result<(), Status> {
        match self.stopping() {
            true => Err(Status::unavailable("sandboxd is shutting down")),
            false => Ok(()),
        }
    }

    /// Whether a call carries the token: `header(name)` reads a header of
    /// the call. `authorization` is the one to send; [`ROUTED_AUTHORIZATION`]
    /// says the same where a proxy takes `authorization` for itself.
    pub fn authorized<'h>(&self, header: impl Fn(&str) -> Option<&'h [u8]>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let expected = format!("Bearer {token}");
        ["authorization", ROUTED_AUTHORIZATION].iter().any(|name| {
            header(name).is_some_and(|given| constant_time_equal(given, expected.as_bytes()))
        })
    }
}

/// Equal bytes, compared in time that does not depend on where they differ.
fn constant_time_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn main() {
    let args = match Args::parse(std::env::args_os().skip(1), |name| std::env::var(name).ok()) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    if let Err(message) = run(args) {
        eprintln!("littleghost-sandboxd: {message}");
        std::process::exit(1);
    }
}

/// The daemon's default: the root read-write, nothing else granted, no network.
fn base_policy() -> Policy {
    Policy {
        files: GrantTable::of(&[("root", Access::ReadWrite)]),
        ..Policy::default()
    }
}

fn declaration(args: &Args) -> Result<Declaration, String> {
    let text = match &args.policy {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read --policy {}: {error}", path.display()))?,
        None => "{}".to_string(),
    };
    Declaration::from_json(&text, base_policy()).map_err(|error| error.to_string())
}

fn token(args: &Args) -> Result<Option<String>, String> {
    let Some(path) = &args.token_file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read --token-file {}: {error}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() || token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!(
            "--token-file {} must hold the token on its first line (printable, no spaces)",
            path.display()
        ));
    }
    Ok(Some(token))
}

/// Resolves `address` and binds it; without a token only loopback addresses may be bound.
async fn bind(flag: &str, address: &str, token: bool) -> Result<TcpListener, String> {
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host(address)
        .await
        .map_err(|error| format!("{flag} {address}: {error}"))?
        .collect();
    let first = *resolved
        .first()
        .ok_or_else(|| format!("{flag} {address}: no address"))?;
    if !token && !resolved.iter().all(|a| a.ip().is_loopback()) {
        return Err(format!(
            "{flag} {address} is not a loopback address: give --token-file so that only callers \
             holding the token reach the sandbox"
        ));
    }
    TcpListener::bind(first)
        .await
        .map_err(|error| format!("{flag} {address}: {error}"))
}

fn run(args: Args) -> Result<(), String> {
    if let Some(directory) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|p| p.to_path_buf()))
    {
        // The helper sits beside the daemon (lib/, the image's /usr/local/bin).
        littleghost_sandbox_core::helper::load(&directory);
    }
    let declaration = declaration(&args)?;
    let token = token(&args)?;
    let confinement = Confinement::open(&args.root, &args.paths, declaration)
        .map_err(|error| error.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(serve(args, token, confinement))
}

async fn serve(args: Args, token: Option<String>, confinement: Confinement) -> Result<(), String> {
    let grpc = bind("--grpc", &args.grpc, token.is_some()).await?;
    let rest = bind("--rest", &args.rest, token.is_some()).await?;
    let daemon = Arc::new(Daemon {
        confinement,
        sessions: Sessions::default(),
        started: Instant::now(),
        token,
        health_without_token: args.health_without_token,
        stopping: AtomicBool::new(false),
    });
    let grpc_address = grpc.local_addr().map_err(|e| e.to_string())?;
    let rest_address = rest.local_addr().map_err(|e| e.to_string())?;
    println!("littleghost-sandboxd listening grpc={grpc_address} rest={rest_address}");
    use std::io::Write;
    let _ = std::io::stdout().flush();

    let (stop, stopped) = watch::channel(false);
    let grpc_task = tokio::spawn(serve_grpc(daemon.clone(), grpc, stopped.clone()));
    let rest_task = tokio::spawn(serve_rest(daemon.clone(), rest, stopped));

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|error| error.to_string())?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    // Drain: health answers 503, nothing new starts, every program gets
    // TERM then KILL (17.12), then the servers stop.
    daemon.stopping.store(true, Ordering::Relaxed);
    let ending = daemon.clone();
    let _ = tokio::task::spawn_blocking(move || ending.confinement.close()).await;
    // Load balancers and Kubernetes read health to stop sending calls: it
    // keeps answering 503 a moment before the listeners close.
    tokio::time::sleep(DRAIN).await;
    daemon.confinement.denials.close();
    let _ = stop.send(true);
    let _ = grpc_task.await;
    rest_task.abort();
    Ok(())
}

async fn serve_grpc(
    daemon: Arc<Daemon>,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
) {
    let check = {
        let daemon = daemon.clone();
        move |request: Request<()>| {
            let metadata = request.metadata();
            if daemon.authorized(|name| metadata.get(name).map(|v| v.as_bytes())) {
                Ok(request)
            } else {
                Err(Status::unauthenticated("a valid bearer token is required"))
            }
        }
    };
    let processes =
        ProcessServiceServer::with_interceptor(grpc::Processes(daemon.clone()), check.clone());
    let denials = DenialServiceServer::with_interceptor(grpc::DenialStream(daemon), check);
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let shutdown = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let _ = tonic::transport::Server::builder()
        .add_service(processes)
        .add_service(denials)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
}

async fn serve_rest(
    daemon: Arc<Daemon>,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.wait_for(|stop| *stop) => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let daemon = daemon.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let daemon = daemon.clone();
                async move {
                    let headers = request.headers();
                    let authorized =
                        daemon.authorized(|name| headers.get(name).map(|v| v.as_bytes()));
                    if !authorized
                        && daemon.health_without_token
                        && rest::answers_without_token(&request)
                    {
                        return Ok(rest::health(&daemon, false));
                    }
                    if !authorized {
                        let mut response = rest::unauthorized();
                        response.headers_mut().insert(
                            "www-authenticate",
                            hyper::header::HeaderValue::from_static("Bearer"),
                        );
                        return Ok::<_, std::convert::Infallible>(response);
                    }
                    Ok(rest::handle(daemon, request).await)
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
