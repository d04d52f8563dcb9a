//! One daemon, reached at its [`Endpoint`]: every operation of the remote
//! provider as a [`Pending`] call on the core's runtime. A client narrowed
//! by scopes sends their narrowings, combined, with every call
//! (`x-littleghost-scope`; the daemon only ever narrows).

use std::sync::Arc;

use tokio::runtime::Handle;
use tonic::transport::Channel;

use super::endpoint::Endpoint;
use super::error::Error;
use super::files::{self, Target};
use super::http;
use super::pending::Pending;
pub use super::programs::Command;
use super::programs::Grpc;
use super::run::{Execution, StreamedRun};
use super::session::Session;
use super::stream::{self, Watch};
use crate::denial::Denial;
use crate::policy::network_requests::Declared;
use crate::policy::Capabilities;

/// `/v1/metadata`: the reference's `env`, and what littleghost-sandboxd
/// publishes it enforces (`x-littleghost`; None from a daemon that does not).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub env: Vec<(String, String)>,
    pub published: Option<Enforced>,
}

impl Metadata {
    /// 14.11's replace needs littleghost-sandboxd's atomic one: a read and a
    /// write from here would lose a writer between them in silence, so a
    /// daemon without it (agent-sandbox's reference sandboxd) refuses.
    pub fn require_atomic_replace(&self) -> Result<(), Error> {
        match self.get("SANDBOXD_IMPLEMENTATION") {
            Some("littleghost-sandboxd") => Ok(()),
            _ => Err(Error::Unsupported(
                "replace needs littleghost-sandboxd's atomic replace; this daemon has none (read \
                 and write instead, knowing a write between them is lost)"
                    .into(),
            )),
        }
    }

    /// The value of `name`, if the daemon gave it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// `/v1/metadata`'s JSON read: `env`'s string values, and `x-littleghost`
    /// when present (a malformed one is the daemon's fault).
    pub fn from_json(value: &serde_json::Value) -> Result<Metadata, Error> {
        let env = value
            .get("env")
            .and_then(|env| env.as_object())
            .map(|env| {
                env.iter()
                    .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let published = match value.get("x-littleghost") {
            None => None,
            Some(published) => Some(Enforced::from_json(published).ok_or_else(|| {
                Error::Protocol(format!(
                    "a malformed x-littleghost in /v1/metadata: {published}"
                ))
            })?),
        };
        Ok(Metadata { env, published })
    }
}

/// What a daemon says it enforces (`Capabilities`, docs/spec.md §4, RM.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforced {
    pub features: Vec<String>,
    /// The one network mode its programs get.
    pub network: String,
    /// Its backend's name (`bubblewrap`, `landlock`), `none` for a daemon
    /// that does not say (agent-sandbox's reference sandboxd confines nothing).
    pub isolation: String,
    /// The policy's file grants, name and access (`read_only`,
    /// `read_write`); None when the daemon does not say.
    pub files: Option<Vec<(String, String)>>,
}

impl Enforced {
    /// The report a caller shows (docs/spec.md §4): these features, the one
    /// network mode, the isolation, validated as any report is.
    pub fn capabilities(&self) -> crate::error::Result<Capabilities> {
        let features: Vec<&str> = self.features.iter().map(String::as_str).collect();
        Capabilities::named(&features, &[self.network.as_str()], &self.isolation)
    }

    /// `x-littleghost` read: `backend`, `features`, `network`, `files`.
    fn from_json(value: &serde_json::Value) -> Option<Enforced> {
        let text = |key: &str| Some(value.get(key)?.as_str()?.to_string());
        let features = value
            .get("features")?
            .as_array()?
            .iter()
            .map(|feature| Some(feature.as_str()?.to_string()))
            .collect::<Option<Vec<_>>>()?;
        let files = value
            .get("files")?
            .as_object()?
            .iter()
            .map(|(name, access)| Some((name.clone(), access.as_str()?.to_string())))
            .collect::<Option<Vec<_>>>()?;
        Some(Enforced {
            features,
            network: text("network")?,
            isolation: text("backend")?,
            files: Some(files),
        })
    }

    /// SC.11 for the daemon, under `narrowings`: writes are a feature and
    /// some grant the narrowings keep is read-write (each name at the
    /// narrowest access of the chain). Without published grants, the
    /// feature alone.
    pub fn writable(&self, narrowings: &[Narrowing]) -> bool {
        if !self.features.iter().any(|f| f == "filesystem_write") {
            return false;
        }
        let Some(files) = &self.files else {
            return true;
        };
        let combined = Narrowing::combined(narrowings);
        let kept = |name: &str| match combined.get("files") {
            None => true,
            Some(narrowed) => narrowed.get(name).and_then(|a| a.as_str()) == Some("read_write"),
        };
        files
            .iter()
            .any(|(name, access)| access == "read_write" && kept(name))
    }
}

impl Metadata {
    /// What the daemon enforces: what it published, else (a reference
    /// sandboxd, or an older littleghost-sandboxd) inferred from `env`: the
    /// file features and `process_execute`, plus `process_spawn` and
    /// `process_tree_ownership` where `LITTLEGHOST_BACKEND` names a backend;
    /// a daemon without it is taken to confine nothing, with the network
    /// inherited.
    pub fn enforced(&self) -> Enforced {
        if let Some(published) = &self.published {
            return published.clone();
        }
        let ours = self.get("LITTLEGHOST_BACKEND").is_some();
        let mut features = vec![
            "filesystem_read",
            "filesystem_list",
            "filesystem_write",
            "process_execute",
        ];
        // A `replace` is refused where the daemon has no atomic one (RM.3).
        if self.require_atomic_replace().is_ok() {
            features.push("filesystem_replace");
        }
        if ours {
            // Each launch owns its process tree (a cgroup, or the helper's supervision).
            features.extend(["process_spawn", "process_tree_ownership"]);
        }
        let default_network = if ours { "none" } else { "inherit" };
        Enforced {
            features: features.into_iter().map(str::to_string).collect(),
            network: self
                .get("LITTLEGHOST_NETWORK")
                .unwrap_or(default_network)
                .to_string(),
            isolation: self
                .get("LITTLEGHOST_BACKEND")
                .unwrap_or("none")
                .to_string(),
            files: None,
        }
    }
}

/// One narrowing of a scope, as the daemon reads it: grants by workspace
/// name (`"root"` is the daemon's root) and access, the network mode kept.
/// `None` keeps the parent's. The capabilities a scope keeps stay on the
/// caller's side (the scope checks them before it sends a call).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowing {
    pub files: Option<Vec<(String, String)>>,
    pub network: Option<String>,
}

impl Narrowing {
    /// A scope's chain of narrowings, outermost first, read through the
    /// caller's conversions: each a table of `files` (grant name => access)
    /// and `network` (a mode); any other key is the caller's (`capabilities`).
    /// A narrowing or `files` that is no table is refused with `misshapen`,
    /// never taken for no narrowing at all.
    pub fn chain<D: Declared>(
        narrowings: &D,
        misshapen: impl Fn(Error) -> D::Error,
    ) -> Result<Vec<Narrowing>, D::Error> {
        let refused = |what: &str| misshapen(Error::Narrowing(format!("{what} must be a table")));
        let mut chain = Vec::new();
        for given in narrowings.items()? {
            let Some(pairs) = given.named_pairs()? else {
                return Err(refused("a remote scope's narrowing"));
            };
            let mut narrowing = Narrowing::default();
            for (key, value) in pairs {
                match key.as_str() {
                    "files" => {
                        let Some(grants) = value.pairs()? else {
                            return Err(refused("a remote scope's files"));
                        };
                        let grants = grants
                            .iter()
                            .map(|(name, access)| Ok((name.text()?, access.text()?)));
                        narrowing.files = Some(grants.collect::<Result<_, _>>()?);
                    }
                    "network" => narrowing.network = Some(value.text()?),
                    _ => {}
                }
            }
            chain.push(narrowing);
        }
        Ok(chain)
    }

    /// The one scope the daemon reads (`{"files": {...}, "network": "..."}`)
    /// for a chain of narrowings, outermost first: each name keeps the
    /// narrowest access any of them gives it, a name a later narrowing leaves
    /// out is gone, and `none` anywhere means no network. The capabilities
    /// stay on this side (the scope checks them before it sends a call).
    pub fn combined(chain: &[Narrowing]) -> serde_json::Value {
        let mut files: Option<Vec<(String, String)>> = None;
        let mut network: Option<String> = None;
        for narrowing in chain {
            if let Some(given) = &narrowing.files {
                files = Some(match files {
                    None => given.clone(),
                    Some(kept) => given
                        .iter()
                        .filter_map(|(name, access)| {
                            let (_, before) = kept.iter().find(|(known, _)| known == name)?;
                            let narrowest = if before == "read_only" {
                                before
                            } else {
                                access
                            };
                            Some((name.clone(), narrowest.clone()))
                        })
                        .collect(),
                });
            }
            if let Some(mode) = &narrowing.network {
                if network.as_deref() != Some("none") {
                    network = Some(mode.clone());
                }
            }
        }
        let mut object = serde_json::Map::new();
        if let Some(files) = files {
            let grants = files
                .into_iter()
                .map(|(name, access)| (name, serde_json::Value::from(access)))
                .collect();
            object.insert("files".into(), serde_json::Value::Object(grants));
        }
        if let Some(network) = network {
            object.insert("network".into(), network.into());
        }
        serde_json::Value::Object(object)
    }
}

/// A connection to one daemon (cheap to clone: clones share it).
#[derive(Clone)]
pub struct Client {
    runtime: Handle,
    grpc: Grpc,
    narrowings: Arc<Vec<Narrowing>>,
}

impl Client {
    /// A client of the daemon at `endpoint`; connects on first use.
    pub fn new(endpoint: Endpoint) -> Result<Client, Error> {
        let runtime = crate::process::runtime::handle().map_err(|error| Error::Unreachable {
            address: endpoint.grpc.clone(),
            detail: format!("the runtime could not start: {error}"),
        })?;
        let uri = format!("http://{}", endpoint.grpc);
        let channel = {
            let _entered = runtime.enter();
            tonic::transport::Endpoint::from_shared(uri)
                .map_err(|error| Error::Endpoint(format!("remote endpoint grpc: {error}")))?
                .tcp_nodelay(true)
                .connect_lazy()
        };
        Ok(Client {
            runtime,
            grpc: Grpc {
                endpoint,
                channel: channel as Channel,
                scope: None,
            },
            narrowings: Arc::new(Vec::new()),
        })
    }

    /// The same daemon, every call narrowed by `chain` too (outermost first).
    pub fn narrowed(&self, chain: Vec<Narrowing>) -> Client {
        let narrowings = [&self.narrowings[..], &chain].concat();
        let header = Narrowing::combined(&narrowings);
        Client {
            runtime: self.runtime.clone(),
            grpc: Grpc {
                scope: Some(header.to_string()),
                ..self.grpc.clone()
            },
            narrowings: Arc::new(narrowings),
        }
    }

    /// The narrowings this client sends, outermost first.
    pub fn narrowings(&self) -> &[Narrowing] {
        &self.narrowings
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.grpc.endpoint
    }

    fn file_call<T: Send + 'static>(
        &self,
        logical: String,
        call: impl for<'a> FnOnce(
                Target<'a>,
            ) -> std::pin::Pin<
                Box<dyn std::future::Future<Output = Result<T, Error>> + Send + 'a>,
            > + Send
            + 'static,
    ) -> Pending<T> {
        let grpc = self.grpc.clone();
        Pending::spawn(&self.runtime, async move {
            let target = Target {
                endpoint: &grpc.endpoint,
                scope: grpc.scope.as_deref(),
                logical: &logical,
            };
            call(target).await
        })
    }

    /// docs/spec.md 14.8.
    pub fn read(&self, logical: String) -> Pending<String> {
        self.file_call(logical, |target| Box::pin(files::read(target)))
    }

    /// docs/spec.md 14.9.
    pub fn list(&self, logical: String) -> Pending<String> {
        self.file_call(logical, |target| Box::pin(files::list(target)))
    }

    /// docs/spec.md 14.10.
    pub fn write(&self, logical: String, content: Vec<u8>) -> Pending<String> {
        self.file_call(logical, move |target| {
            Box::pin(files::write(target, content))
        })
    }

    /// docs/spec.md 14.11.
    pub fn replace(&self, logical: String, old: Vec<u8>, new: Vec<u8>) -> Pending<String> {
        self.file_call(logical, move |target| {
            Box::pin(async move { files::replace(target, &old, &new).await })
        })
    }

    /// Runs `command` to its end within `timeout` seconds.
    pub fn execute(&self, command: Command, timeout: f64) -> Pending<Execution> {
        let grpc = self.grpc.clone();
        Pending::spawn(&self.runtime, async move {
            let response = grpc.execute(command, timeout).await?;
            Ok(Execution {
                exit_code: response.exit_code,
                stdout: response.stdout,
                stderr: response.stderr,
            })
        })
    }

    /// Starts `command` as a session.
    pub fn start(&self, command: Command) -> Pending<Session> {
        let grpc = self.grpc.clone();
        let runtime = self.runtime.clone();
        Pending::spawn(&self.runtime, async move {
            let (pid, stream) = grpc.start(command, false).await?;
            Ok(Session::begin(&runtime, grpc, pid, stream))
        })
    }

    /// Starts `command` as a run within `timeout` seconds whose output is
    /// handed on as it is printed, each stream within `bound` bytes.
    pub fn run_streamed(&self, command: Command, timeout: f64, bound: u64) -> Pending<StreamedRun> {
        let bound = usize::try_from(bound).unwrap_or(usize::MAX);
        let grpc = self.grpc.clone();
        let runtime = self.runtime.clone();
        let started = std::time::Instant::now();
        Pending::spawn(&self.runtime, async move {
            let (pid, stream) = grpc.start(command, true).await?;
            let session = Session::begin(&runtime, grpc.clone(), pid, stream);
            // A run's stdin is closed (17.7); littleghost-sandboxd closed it
            // already, a daemon without the extension needs to be told. A
            // refusal means the program ended already; a broken connection
            // is the stream's to report.
            let _ = grpc.write_stdin(pid, None).await;
            Ok(StreamedRun::new(session, timeout, started, bound))
        })
    }

    /// `/v1/metadata`.
    pub fn metadata(&self) -> Pending<Metadata> {
        Pending::spawn(&self.runtime, fetch_metadata(self.grpc.endpoint.clone()))
    }

    /// Runs `call` on this client's runtime.
    pub(super) fn spawn<T: Send + 'static>(
        &self,
        call: impl std::future::Future<Output = Result<T, Error>> + Send + 'static,
    ) -> Pending<T> {
        Pending::spawn(&self.runtime, call)
    }

    /// Whether the daemon's broker lets the canonical `feature` past on
    /// `logical` under this client's narrowings (docs/spec.md SC.13, 14.12;
    /// `GET /v1/x-littleghost/allows/{path}`). An absolute or `workspace://`
    /// path is refused before anything is sent, as for a file call.
    pub fn allows(&self, feature: String, logical: String) -> Pending<bool> {
        let grpc = self.grpc.clone();
        Pending::spawn(&self.runtime, async move {
            files::relative(&logical)?;
            let target = format!(
                "/v1/x-littleghost/allows/{}?operation={}",
                http::encode(logical.as_bytes()),
                http::encode(feature.as_bytes())
            );
            let answer = http::call(
                &grpc.endpoint,
                hyper::Method::GET,
                &target,
                grpc.scope.as_deref(),
                &[],
                Default::default(),
            )
            .await?;
            if !answer.status.is_success() {
                return Err(http::failure(&answer));
            }
            serde_json::from_slice::<serde_json::Value>(&answer.body)
                .ok()
                .and_then(|value| value.get("allowed")?.as_bool())
                .ok_or_else(|| Error::Protocol("an allows answer without allowed".into()))
        })
    }

    /// The daemon's denials from now on, each handed to `sink`.
    pub fn watch_denials(&self, sink: impl Fn(Denial) + Send + Sync + 'static) -> Pending<Watch> {
        let endpoint = self.grpc.endpoint.clone();
        Pending::spawn(&self.runtime, stream::watch(endpoint, sink))
    }
}

/// `/v1/metadata`, read.
pub(super) async fn fetch_metadata(endpoint: Endpoint) -> Result<Metadata, Error> {
    let answer = http::call(
        &endpoint,
        hyper::Method::GET,
        "/v1/metadata",
        None,
        &[],
        Default::default(),
    )
    .await?;
    if !answer.status.is_success() {
        return Err(http::failure(&answer));
    }
    let value: serde_json::Value = serde_json::from_slice(&answer.body)
        .map_err(|error| Error::Protocol(format!("metadata that is not JSON: {error}")))?;
    Metadata::from_json(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn narrowing(files: Option<&[(&str, &str)]>, network: Option<&str>) -> Narrowing {
        Narrowing {
            files: files.map(|files| {
                files
                    .iter()
                    .map(|(name, access)| (name.to_string(), access.to_string()))
                    .collect()
            }),
            network: network.map(str::to_string),
        }
    }

    use crate::policy::network_requests::tests::Json;

    #[test]
    fn a_scope_chain_is_read_from_its_tables_and_anything_else_refused() {
        let given = Json(serde_json::json!([
            {"files": {"root": "read_only"}, "capabilities": ["filesystem_read"]},
            {"network": "none"},
        ]));
        let chain = Narrowing::chain(&given, crate::Error::from).unwrap();
        let expected = [
            narrowing(Some(&[("root", "read_only")]), None),
            narrowing(None, Some("none")),
        ];
        assert_eq!(chain, expected);
        for misshapen in [
            serde_json::json!(["files"]),
            serde_json::json!([{"files": ["root"]}]),
        ] {
            let refused = Narrowing::chain(&Json(misshapen), crate::Error::from).unwrap_err();
            assert!(
                matches!(refused, crate::Error::Remote(Error::Narrowing(_))),
                "{refused:?}"
            );
            assert_eq!(refused.kind(), crate::error::kind::Kind::Argument);
        }
    }

    #[test]
    fn what_a_daemon_enforces_is_reported_as_capabilities() {
        let enforced = Enforced {
            features: vec!["filesystem_read".into(), "process_execute".into()],
            network: "none".into(),
            isolation: "landlock".into(),
            files: None,
        };
        let report = enforced.capabilities().unwrap();
        assert_eq!(report.features, ["filesystem_read", "process_execute"]);
        assert_eq!(report.network_modes, [crate::policy::NetworkMode::None]);
        assert_eq!(report.isolation, "landlock");
        let unknown = Enforced {
            network: "everywhere".into(),
            ..enforced
        };
        assert!(unknown.capabilities().is_err());
    }

    #[test]
    fn only_littleghost_sandboxd_replaces_atomically() {
        let of = |implementation: &str| Metadata {
            env: vec![("SANDBOXD_IMPLEMENTATION".into(), implementation.into())],
            ..Metadata::default()
        };
        assert_eq!(of("littleghost-sandboxd").require_atomic_replace(), Ok(()));
        let replace = |metadata: Metadata| {
            metadata
                .enforced()
                .features
                .iter()
                .any(|feature| feature == "filesystem_replace")
        };
        assert!(replace(of("littleghost-sandboxd")));
        assert!(!replace(of("sandboxd")));
        let refused = of("sandboxd").require_atomic_replace().unwrap_err();
        assert_eq!(refused.kind(), crate::error::kind::Kind::Capability);
        assert!(Metadata::default().require_atomic_replace().is_err());
    }

    #[test]
    fn a_chain_of_narrowings_is_one_scope_no_wider_than_any() {
        let chain = [
            narrowing(Some(&[("root", "read_only")]), Some("none")),
            narrowing(
                Some(&[("root", "read_write"), ("cache", "read_write")]),
                Some("inherit"),
            ),
        ];
        assert_eq!(
            Narrowing::combined(&chain),
            serde_json::json!({"files": {"root": "read_only"}, "network": "none"})
        );
        assert_eq!(Narrowing::combined(&[]), serde_json::json!({}));
        let only_network = [narrowing(None, Some("none"))];
        assert_eq!(
            Narrowing::combined(&only_network),
            serde_json::json!({"network": "none"})
        );
    }

    #[test]
    fn published_capabilities_win_over_the_inferred_ones() {
        let metadata = Metadata::from_json(&serde_json::json!({
            "env": {"LITTLEGHOST_BACKEND": "landlock", "LITTLEGHOST_NETWORK": "none"},
            "x-littleghost": {
                "backend": "landlock",
                "features": ["filesystem_read", "filesystem_write", "process_execute", "memory_limit"],
                "network": "inherit",
                "files": {"root": "read_only"},
            },
        }))
        .unwrap();
        let enforced = metadata.enforced();
        assert_eq!(
            enforced.features,
            [
                "filesystem_read",
                "filesystem_write",
                "process_execute",
                "memory_limit"
            ]
        );
        assert_eq!(
            (enforced.network.as_str(), enforced.isolation.as_str()),
            ("inherit", "landlock")
        );
        assert!(!enforced.writable(&[]), "a read-only root is not writable");
        let malformed = serde_json::json!({"env": {}, "x-littleghost": {"features": "all"}});
        assert!(matches!(
            Metadata::from_json(&malformed),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn a_daemon_that_publishes_nothing_is_inferred_from_its_env() {
        let reference =
            Metadata::from_json(&serde_json::json!({"env": {"SANDBOX_X": "1"}})).unwrap();
        let enforced = reference.enforced();
        assert_eq!(
            (enforced.network.as_str(), enforced.isolation.as_str()),
            ("inherit", "none")
        );
        assert!(!enforced.features.iter().any(|f| f == "process_spawn"));
        assert!(enforced.writable(&[]));
    }

    #[test]
    fn writable_keeps_only_what_every_narrowing_keeps() {
        let enforced = Enforced {
            features: vec!["filesystem_write".into()],
            network: "none".into(),
            isolation: "bubblewrap".into(),
            files: Some(vec![("root".into(), "read_write".into())]),
        };
        assert!(enforced.writable(&[]));
        assert!(enforced.writable(&[narrowing(None, Some("none"))]));
        let read_only = narrowing(Some(&[("root", "read_only")]), None);
        let read_write = narrowing(Some(&[("root", "read_write")]), None);
        assert!(!enforced.writable(std::slice::from_ref(&read_only)));
        assert!(!enforced.writable(&[read_only, read_write.clone()]));
        assert!(enforced.writable(&[read_write]));
        assert!(!enforced.writable(&[narrowing(Some(&[]), None)]));
    }
}
