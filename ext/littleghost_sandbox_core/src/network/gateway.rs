//! Lifecycle of the built-in gateway: [`Gateway::start`] binds a Unix socket
//! in a fresh 0700 directory and serves it on the gem's tokio runtime
//! ([`crate::process::runtime`]); [`Gateway::stop`] (idempotent, also run on
//! drop) stops accepting, aborts every connection task and waits for them,
//! then removes the socket and the directory. Nothing is left behind.
//!
//! Every gateway directory of a user lies in one folder, [`base`]
//! (`/tmp/littleghost-gateways-<uid>`, or a private fallback when someone
//! else took that name: [`super::folder`]), which every Bubblewrap launch
//! masks wherever it shows it before binding its own gateway's directory,
//! so no child reaches another sandbox's socket (docs/security.md, "The
//! gem's own directories"). The directories are made, bound and removed through their
//! handles ([`OwnDirectory`]), never by resolving their paths again.
//!
//! A gateway also serves *views* ([`Gateway::open_view`]): an extra listener
//! with its own allowlist and secrets (a scope's narrowed network), sharing
//! the gateway's denial and egress logs and its descriptor and memory
//! budgets. Each view listens in its own 0700 subdirectory of the gateway's
//! directory, so a child given a view's directory cannot reach the
//! gateway's own socket (a read-only bind does not stop `connect` on a
//! socket beside it); `stop` stops the views first.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::allowlist::Allowlist;
use super::budget::{Budget, Pool};
use super::connection::Shared;
use super::denial::{Denial, DenialCallback, DenialReason, Denials};
use super::egress::{EgressCallback, EgressEvent, EgressLog};
pub use super::folder::{base, base_path};
use super::http::FIRST_ROOM;
use super::inspect::{Inspector, BUNDLE_NAME};
use super::memory::{self, Memory};
use super::proxy;
use super::resolve::{self, Resolver};
use super::secrets::Secrets;
use crate::error::{Error, Result};
use crate::fs::own::OwnDirectory;
use crate::grants::{Access, Grant};

/// The socket's file name inside the gateway's directory.
pub const SOCKET_NAME: &str = "proxy.sock";

/// How a gateway serves; [`GatewayConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct GatewayConfig {
    pub allowlist: Allowlist,
    /// Connections served at once (two descriptors each); beyond it, or
    /// beyond the descriptor budget of [`super::budget`], a client gets `503`.
    pub max_connections: usize,
    /// The process-wide descriptor pool (tests give a fixed one).
    pub pool: Arc<Pool>,
    /// Bytes the gateway may buffer across its connections
    /// ([`super::memory`]); a connection the budget has no room for gets `503`.
    pub memory_budget: usize,
    /// Largest request head (request line plus headers) accepted.
    pub max_header_bytes: usize,
    /// Time a client has to send its request head.
    pub handshake_timeout: Duration,
    /// Time to resolve and connect to the destination.
    pub connect_timeout: Duration,
    /// A tunnel, an exchange or a kept-alive connection waiting for its next
    /// request with no traffic either way for this long is closed.
    pub idle_timeout: Duration,
    /// Denials kept (oldest dropped first).
    pub denial_capacity: usize,
    pub on_denial: Option<DenialCallback>,
    /// Secrets whose stand-ins the gateway swaps in requests it reads.
    pub secrets: Secrets,
    /// Extra roots (PEM) the gateway trusts for its own TLS connections
    /// to inspected destinations, beside the system's.
    pub upstream_ca: Option<Vec<u8>>,
    /// Egress events kept (oldest dropped first).
    pub egress_capacity: usize,
    pub on_egress: Option<EgressCallback>,
    /// How destination names are resolved (the system's resolver by
    /// default; tests give their own).
    pub resolver: Resolver,
}

impl GatewayConfig {
    pub fn new(allowlist: Allowlist) -> GatewayConfig {
        GatewayConfig {
            allowlist,
            max_connections: 512,
            pool: Pool::process(),
            memory_budget: memory::DEFAULT_LIMIT,
            max_header_bytes: 32 * 1024,
            handshake_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            denial_capacity: 1000,
            on_denial: None,
            secrets: Secrets::default(),
            upstream_ca: None,
            egress_capacity: 1000,
            on_egress: None,
            resolver: resolve::system(),
        }
    }
}

/// One accept loop: how to stop it and how to learn it stopped.
struct Listening {
    shutdown: oneshot::Sender<()>,
    done: mpsc::Receiver<()>,
}

impl Listening {
    /// Stops the loop and waits (at most 30 s) for its connections to end.
    fn stop(self) -> Result<()> {
        let _ = self.shutdown.send(());
        if self.done.recv_timeout(Duration::from_secs(30)).is_err() {
            return Err(Error::Cleanup(
                "the network gateway did not stop within 30 seconds".into(),
            ));
        }
        Ok(())
    }
}

struct Running {
    pid: rustix::process::Pid,
    main: Listening,
    /// The views' loops and their directories, in the order opened.
    views: Vec<(Listening, Arc<OwnDirectory>)>,
    /// What views clone (with their own rules) and share.
    shared: Arc<Shared>,
    budget: Arc<Budget>,
}

/// A listener of a running gateway serving narrowed rules (a scope's).
#[derive(Debug, Clone)]
pub struct GatewayView {
    directory: Arc<OwnDirectory>,
    socket_path: PathBuf,
    socket: Arc<OwnedFd>,
    /// The gateway's directory, holding the CA bundle the views share.
    gateway: Arc<OwnDirectory>,
    /// The gateway's CA bundle (the views share its CA), when it inspects.
    bundle: Option<PathBuf>,
}

impl GatewayView {
    /// The Unix socket a scope's relay connects to.
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The socket as a new handle (see [`Gateway::socket_handle`]).
    pub fn socket_handle(&self) -> Result<OwnedFd> {
        self.socket
            .try_clone()
            .map_err(|e| unreachable(&self.socket_path, e))
    }

    /// What a scope's launch mounts: the view's own directory, read-only
    /// at the same path (never the gateway's directory holding the others).
    pub fn mount(&self) -> Grant {
        read_only(self.directory.path())
    }

    /// Every read-only bind a scope's launch needs, as a handle and the
    /// path it is bound at: the view's directory, and the gateway's CA
    /// bundle file when it inspects (the bundle variables name that path).
    pub fn bind_handles(&self) -> Result<Vec<(OwnedFd, PathBuf)>> {
        let mut binds = vec![handle_of(&self.directory)?];
        if let Some(bundle) = &self.bundle {
            let fd = self
                .gateway
                .open_entry(BUNDLE_NAME)
                .map_err(|e| unreachable(bundle, e))?;
            binds.push((fd, bundle.clone()));
        }
        Ok(binds)
    }
}

/// A new handle on `directory`, with the path it is bound at.
fn handle_of(directory: &OwnDirectory) -> Result<(OwnedFd, PathBuf)> {
    let fd = directory
        .reopen()
        .map_err(|e| unreachable(directory.path(), e))?;
    Ok((fd, directory.path().to_path_buf()))
}

fn unreachable(path: &Path, error: std::io::Error) -> Error {
    Error::Dependency(format!(
        "the network gateway's {} cannot be reached: {error}",
        path.display()
    ))
}

/// A running gateway. Dropping it stops it.
pub struct Gateway {
    directory: Arc<OwnDirectory>,
    socket_path: PathBuf,
    /// The socket file, opened (`O_PATH`) when it was bound: see
    /// [`Gateway::socket_handle`].
    socket: Arc<OwnedFd>,
    /// The CA bundle a child trusts, when some destination is inspected.
    bundle: Option<PathBuf>,
    denials: Arc<Denials>,
    egress: Arc<EgressLog>,
    running: Mutex<Option<Running>>,
}

fn read_only(directory: &Path) -> Grant {
    Grant {
        source: directory.to_path_buf(),
        target: directory.to_path_buf(),
        access: Access::ReadOnly,
        tools: false,
        protect_aliases: false,
    }
}

/// Binds a non-blocking listener named [`SOCKET_NAME`] in `directory`,
/// reached through its handle (the caller removes the directory on failure),
/// and opens the socket file it made as a handle at once.
fn bind(directory: &OwnDirectory) -> Result<(std::os::unix::net::UnixListener, Arc<OwnedFd>)> {
    std::os::unix::net::UnixListener::bind(directory.through_handle(SOCKET_NAME))
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(|l| Ok((l, Arc::new(directory.open_entry(SOCKET_NAME)?))))
        .map_err(|e| {
            Error::Io(format!(
                "cannot listen on the gateway socket {}: {e}",
                directory.path().join(SOCKET_NAME).display()
            ))
        })
}

/// Serves `listener` on the runtime until shut down.
fn spawn_loop(
    runtime: &tokio::runtime::Handle,
    listener: std::os::unix::net::UnixListener,
    shared: Arc<Shared>,
    budget: Arc<Budget>,
) -> Listening {
    let (shutdown, shutdown_rx) = oneshot::channel();
    let (done_tx, done) = mpsc::channel();
    runtime.spawn(async move {
        // Inside the runtime: registering the listener needs its reactor.
        if let Ok(listener) = UnixListener::from_std(listener) {
            accept_loop(listener, shared, budget, shutdown_rx).await;
        }
        let _ = done_tx.send(());
    });
    Listening { shutdown, done }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("socket_path", &self.socket_path)
            .finish()
    }
}

impl Gateway {
    /// Creates the private directory, binds the socket and starts serving.
    /// When a rule asks for inspection it also makes the gateway's CA and
    /// writes the bundle a child trusts ([`Gateway::ca_bundle`]); a malformed
    /// `upstream_ca` is then a PolicyError.
    pub fn start(config: GatewayConfig) -> Result<Gateway> {
        let runtime = crate::process::runtime::handle()
            .map_err(|e| Error::Io(format!("cannot start the gateway runtime: {e}")))?;
        let inspector = if config.allowlist.rules().iter().any(|rule| rule.inspect) {
            let made = Inspector::new(config.upstream_ca.as_deref())
                .map_err(|why| Error::Policy(format!("network upstream_ca {why}")))?;
            Some(Arc::new(made))
        } else {
            None
        };
        let directory = Arc::new(private_directory()?);
        let socket_path = directory.path().join(SOCKET_NAME);
        let bundle = match &inspector {
            Some(inspector) => match write_bundle(&directory, inspector) {
                Ok(path) => Some(path),
                Err(e) => {
                    let _ = directory.remove();
                    return Err(e);
                }
            },
            None => None,
        };
        let (listener, socket) = match bind(&directory) {
            Ok(bound) => bound,
            Err(e) => {
                let _ = directory.remove();
                return Err(e);
            }
        };
        let denials = Arc::new(Denials::new(
            config.denial_capacity,
            config.on_denial.clone(),
        ));
        let egress = Arc::new(EgressLog::new(
            config.egress_capacity,
            config.on_egress.clone(),
        ));
        let shared = Arc::new(Shared {
            allowlist: config.allowlist,
            secrets: config.secrets,
            denials: denials.clone(),
            egress: egress.clone(),
            resolver: config.resolver,
            inspector,
            memory: Memory::new(config.memory_budget),
            max_header_bytes: config.max_header_bytes,
            handshake_timeout: config.handshake_timeout,
            connect_timeout: config.connect_timeout,
            idle_timeout: config.idle_timeout,
        });
        let budget = Budget::new(config.pool, config.max_connections);
        let main = spawn_loop(&runtime, listener, shared.clone(), budget.clone());
        Ok(Gateway {
            directory,
            socket_path,
            socket,
            bundle,
            denials,
            egress,
            running: Mutex::new(Some(Running {
                pid: rustix::process::getpid(),
                main,
                views: Vec::new(),
                shared,
                budget,
            })),
        })
    }

    /// Starts serving `allowlist` and `secrets` on a new socket in a fresh
    /// 0700 subdirectory, with this gateway's logs, limits and descriptor
    /// budget; it stops with the gateway. DependencyError when stopped.
    pub fn open_view(&self, allowlist: Allowlist, secrets: Secrets) -> Result<GatewayView> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let Some(running) = running.as_mut() else {
            return Err(Error::Dependency(
                "the built-in network gateway is not open".into(),
            ));
        };
        let runtime = crate::process::runtime::handle()
            .map_err(|e| Error::Io(format!("cannot start the gateway runtime: {e}")))?;
        let name = format!("view-{}", running.views.len() + 1);
        let directory = self.directory.child(&name).map_err(|e| {
            Error::Io(format!(
                "cannot create the network gateway view directory {}: {e}",
                self.directory.path().join(&name).display()
            ))
        })?;
        let directory = Arc::new(directory);
        let socket_path = directory.path().join(SOCKET_NAME);
        let (listener, socket) = match bind(&directory) {
            Ok(bound) => bound,
            Err(e) => {
                let _ = directory.remove();
                return Err(e);
            }
        };
        let shared = Arc::new(Shared {
            allowlist,
            secrets,
            ..(*running.shared).clone()
        });
        let loop_ = spawn_loop(&runtime, listener, shared, running.budget.clone());
        running.views.push((loop_, directory.clone()));
        Ok(GatewayView {
            directory,
            socket_path,
            socket,
            gateway: self.directory.clone(),
            bundle: self.bundle.clone(),
        })
    }

    /// The Unix socket clients connect to.
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The socket file as a new `O_PATH` handle, opened when it was bound:
    /// a supervisor connects through it (`/proc/self/fd/N`), so renaming
    /// or replacing the path later (a `:read_write` Landlock child can
    /// write the host's `/tmp`) cannot point it at another socket.
    pub fn socket_handle(&self) -> Result<OwnedFd> {
        self.socket
            .try_clone()
            .map_err(|e| unreachable(&self.socket_path, e))
    }

    /// The private directory holding the socket (bound read-only into a sandbox).
    pub fn directory(&self) -> &Path {
        self.directory.path()
    }

    /// What a launch binds read-only, as a handle and the path it is bound
    /// at: the gateway's directory (its socket and CA bundle).
    pub fn bind_handles(&self) -> Result<Vec<(OwnedFd, PathBuf)>> {
        Ok(vec![handle_of(&self.directory)?])
    }

    /// The CA bundle (system roots plus this gateway's CA, PEM) a child's
    /// TLS clients are pointed at, when some destination is inspected.
    pub fn ca_bundle(&self) -> Option<&Path> {
        self.bundle.as_deref()
    }

    /// What a sandbox mounts to reach it (G.6): the socket's private
    /// directory, read-only at the same path, process-only.
    pub fn mount(&self) -> Grant {
        read_only(self.directory.path())
    }

    /// The denials kept so far, oldest first.
    pub fn denials(&self) -> Vec<Denial> {
        self.denials.list()
    }

    /// The egress events kept so far, oldest first.
    pub fn egress(&self) -> Vec<EgressEvent> {
        self.egress.list()
    }

    /// Whether the gateway is still serving.
    pub fn is_running(&self) -> bool {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Stops accepting, closes every open connection, waits for the tasks to
    /// end, removes the socket and the directory. Idempotent. In a forked
    /// child (which has none of the parent's tasks) it only forgets them and
    /// leaves the parent's files alone.
    pub fn stop(&self) -> Result<()> {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(running) = running else {
            return Ok(());
        };
        if running.pid != rustix::process::getpid() {
            return Ok(());
        }
        // Every loop is told to stop even when one fails to (the first error is returned).
        // Removed through their handles (views first, then the gateway's
        // own directory with its socket and bundle), never by path.
        let mut removals = Vec::new();
        let mut stopped = Ok(());
        for (view, directory) in running.views {
            stopped = stopped.and(view.stop());
            removals.push(directory.remove());
        }
        stopped.and(running.main.stop())?;
        removals.push(self.directory.remove());
        if let Some(Err(e)) = removals.into_iter().find(|result| result.is_err()) {
            return Err(Error::Cleanup(format!(
                "cannot remove the network gateway's directory {}: {e}",
                self.directory.path().display()
            )));
        }
        Ok(())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Accepts until shut down. Each connection takes a descriptor from the
/// budget and its reader's floor from the memory budget, or is answered
/// `503` at once; a failing `accept` (EMFILE, ENFILE, ENOBUFS...) backs off
/// instead of spinning.
async fn accept_loop(
    listener: UnixListener,
    shared: Arc<Shared>,
    budget: Arc<Budget>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    let mut backoff = Duration::ZERO;
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    backoff = Duration::ZERO;
                    let Some(held) = budget.admit() else {
                        proxy::refuse_unread(stream, &shared, DenialReason::DescriptorBudget);
                        continue;
                    };
                    let Some(lease) = shared.memory.lease(FIRST_ROOM) else {
                        proxy::refuse_unread(stream, &shared, DenialReason::MemoryBudget);
                        continue;
                    };
                    let shared = shared.clone();
                    connections.spawn(proxy::serve(stream, shared, held, lease));
                }
                Err(_) => {
                    backoff = next_backoff(backoff);
                    tokio::select! {
                        _ = &mut shutdown => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                }
            }
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// 5 ms, doubling up to one second.
fn next_backoff(previous: Duration) -> Duration {
    (previous * 2).clamp(Duration::from_millis(5), Duration::from_secs(1))
}

/// Writes the bundle a child trusts into the gateway's directory, through
/// its handle (0644: the directory itself is 0700 and bound read-only into
/// the sandbox).
fn write_bundle(directory: &OwnDirectory, inspector: &Inspector) -> Result<PathBuf> {
    use std::io::Write;
    let path = directory.path().join(BUNDLE_NAME);
    directory
        .create_file(BUNDLE_NAME, 0o644)
        .and_then(|mut file| file.write_all(inspector.bundle().as_bytes()))
        .map_err(|e| {
            Error::Io(format!(
                "cannot write the gateway's CA bundle {}: {e}",
                path.display()
            ))
        })?;
    Ok(path)
}

/// A fresh directory only this user can enter, in [`base`].
fn private_directory() -> Result<OwnDirectory> {
    let folder = base()?;
    let handle = folder.reopen().map(Arc::new);
    handle
        .and_then(|handle| OwnDirectory::create(&handle, folder.path(), "littleghost-gateway-"))
        .map_err(|e| {
            Error::Io(format!(
                "cannot create the network gateway's directory under {}: {e}",
                folder.path().display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_accept_backs_off_up_to_a_second() {
        let mut delay = Duration::ZERO;
        let mut seen = Vec::new();
        for _ in 0..12 {
            delay = next_backoff(delay);
            seen.push(delay.as_millis());
        }
        assert_eq!(&seen[..4], [5, 10, 20, 40]);
        assert_eq!(*seen.last().unwrap(), 1000);
    }
}
