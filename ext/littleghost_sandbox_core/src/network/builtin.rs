//! The built-in gateway as the G.2 protocol sees it (G.3, G.5, G.7): a
//! validated allowlist that `open` turns into a running [`Gateway`], at most
//! one at a time. After `close` the stopped gateway is kept, so its denials
//! stay readable until the next `open`.
//!
//! Secrets get their stand-ins when the BuiltinGateway is built (a sandbox
//! resolves its own gateway, so each sandbox has its own stand-ins; they
//! stay the same across `close` and a later `open` of the same gateway).
//! `upstream_ca:` is read at each `open`. A scope's narrowed network is
//! served by a view ([`BuiltinGateway::view`]) of the running gateway.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{
    Allowlist, Denial, DenialCallback, EgressCallback, EgressEvent, Gateway, GatewayConfig,
    GatewayView, Secrets,
};
use crate::error::{policy, Error, Result};
use crate::policy::{NetworkMode, NetworkRules, Policy};

/// The rules, secrets and upstream roots, and once opened, the gateway.
#[derive(Debug)]
pub struct BuiltinGateway {
    allowlist: Allowlist,
    secrets: Secrets,
    upstream_ca: Option<PathBuf>,
    /// `resolve:`: names answered without asking DNS.
    resolve: Vec<(String, std::net::IpAddr)>,
    gateway: Mutex<Option<Arc<Gateway>>>,
    /// The views of the running gateway, by the narrowed rules they serve.
    views: Mutex<Vec<(NetworkRules, GatewayView)>>,
}

impl BuiltinGateway {
    /// G.7: PolicyError for a malformed entry; nothing is started.
    pub fn new(allow: &[String], allow_private_destinations: bool) -> Result<BuiltinGateway> {
        Ok(Self::assemble(
            Allowlist::new(allow, allow_private_destinations)?,
            Secrets::default(),
            None,
        ))
    }

    /// A gateway enforcing a declaration's rules (patterns, HTTP rules,
    /// inspection), swapping its secrets, trusting `upstream_ca` upstream.
    pub fn declared(
        rules: &NetworkRules,
        allow_private_destinations: bool,
    ) -> Result<BuiltinGateway> {
        let allowlist = Allowlist::with_rules(rules.rules()?, allow_private_destinations)?;
        Ok(BuiltinGateway {
            resolve: rules.resolve.clone(),
            ..Self::assemble(
                allowlist,
                rules.gateway_secrets()?,
                rules.upstream_ca.clone(),
            )
        })
    }

    /// The gateway `policy` enforces its network through (G.3): the
    /// built-in one over its rules when the mode is `:allowlist`, else None.
    /// Nothing is started.
    pub fn for_policy(
        policy: &Policy,
        allow_private_destinations: bool,
    ) -> Result<Option<BuiltinGateway>> {
        match &policy.network {
            Some(network) if network.mode == NetworkMode::Allowlist => {
                Self::declared(&network.rules, allow_private_destinations).map(Some)
            }
            _ => Ok(None),
        }
    }

    fn assemble(
        allowlist: Allowlist,
        secrets: Secrets,
        upstream_ca: Option<PathBuf>,
    ) -> BuiltinGateway {
        BuiltinGateway {
            allowlist,
            secrets,
            upstream_ca,
            resolve: Vec::new(),
            gateway: Mutex::new(None),
            views: Mutex::new(Vec::new()),
        }
    }

    /// The secrets (with their stand-ins).
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The upstream roots' file, if one was declared.
    pub fn upstream_ca(&self) -> Option<&Path> {
        self.upstream_ca.as_deref()
    }

    /// The child's variables this gateway contributes: for each secret
    /// `LITTLEGHOST_SECRET_<NAME>` = stand-in (never a value), and while it
    /// runs and inspects TLS, the CA bundle variables
    /// ([`super::inspect::BUNDLE_VARIABLES`]).
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut environment = self.secrets.environment();
        // While a gateway that inspects TLS runs: its CA bundle for TLS clients.
        if let Some(gateway) = self.running() {
            if let Some(bundle) = gateway.ca_bundle() {
                let path = bundle.display().to_string();
                for name in super::inspect::BUNDLE_VARIABLES {
                    environment.push((name.to_string(), path.clone()));
                }
            }
        }
        environment
    }

    /// `full` (a gateway's whole environment) for a launch through the
    /// view serving `narrowed`: the secret variables of secrets the view
    /// does not carry are dropped; every other variable is kept.
    pub fn view_environment(
        narrowed: &NetworkRules,
        full: Vec<(String, String)>,
    ) -> Vec<(String, String)> {
        let kept: Vec<String> = narrowed
            .secrets
            .iter()
            .map(|s| format!("LITTLEGHOST_SECRET_{}", s.name.to_ascii_uppercase()))
            .collect();
        full.into_iter()
            .filter(|(name, _)| !name.starts_with("LITTLEGHOST_SECRET_") || kept.contains(name))
            .collect()
    }

    /// The view serving `narrowed` (a scope's rules, each covered by this
    /// gateway's: the scope checked that), opened on first use. Its secrets
    /// are this gateway's (same stand-ins) limited to the names and
    /// destinations `narrowed` keeps. DependencyError when not open.
    pub fn view(&self, narrowed: &NetworkRules) -> Result<GatewayView> {
        let Some(gateway) = self.running() else {
            return Err(Error::Dependency(
                "the built-in network gateway is not open".into(),
            ));
        };
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, view)) = views.iter().find(|(rules, _)| rules == narrowed) {
            return Ok(view.clone());
        }
        let allowlist = Allowlist::with_rules(
            narrowed.rules()?,
            self.allowlist.allow_private_destinations(),
        )?;
        let names: Vec<String> = narrowed.secrets.iter().map(|s| s.name.clone()).collect();
        let mut kept = Vec::new();
        for secret in self.secrets.only(&names).iter() {
            let entry = narrowed.secrets.iter().find(|s| s.name == secret.name());
            let destinations = match entry {
                Some(entry) => entry
                    .destinations
                    .iter()
                    .map(|d| super::allowlist::parse_pattern(d))
                    .collect::<Result<Vec<_>>>()?,
                None => secret.destinations().to_vec(),
            };
            kept.push(secret.with_destinations(destinations));
        }
        let view = gateway.open_view(allowlist, Secrets::new(kept)?)?;
        views.push((narrowed.clone(), view.clone()));
        Ok(view)
    }

    pub fn allowlist(&self) -> &Allowlist {
        &self.allowlist
    }

    /// The allowlist entries as `host:port` (or `*.suffix:port`) text.
    pub fn entries(&self) -> Vec<String> {
        self.allowlist.entries()
    }

    /// The last gateway `open` started, running or stopped.
    fn current(&self) -> Option<Arc<Gateway>> {
        self.gateway
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The gateway, if `open` started it and it has not been stopped.
    pub fn running(&self) -> Option<Arc<Gateway>> {
        self.current().filter(|gateway| gateway.is_running())
    }

    /// Starts serving (calling `on_denial` for each 403) unless already
    /// serving: idempotent.
    pub fn open(&self, on_denial: Option<DenialCallback>) -> Result<()> {
        self.open_with(on_denial, None)
    }

    /// [`open`](Self::open), also calling `on_egress` for each egress event.
    pub fn open_with(
        &self,
        on_denial: Option<DenialCallback>,
        on_egress: Option<EgressCallback>,
    ) -> Result<()> {
        if self.running().is_some() {
            return Ok(());
        }
        let mut config = GatewayConfig::new(self.allowlist.clone());
        config.on_denial = on_denial;
        config.secrets = self.secrets.clone();
        config.upstream_ca = self
            .upstream_ca
            .as_deref()
            .map(read_upstream_ca)
            .transpose()?;
        config.on_egress = on_egress;
        if !self.resolve.is_empty() {
            config.resolver = Arc::new(super::resolve::Mapped::new(
                self.resolve.clone(),
                config.resolver,
            ));
        }
        let gateway = Arc::new(Gateway::start(config)?);
        // The views of a stopped gateway stopped with it.
        self.views.lock().unwrap_or_else(|e| e.into_inner()).clear();
        *self.gateway.lock().unwrap_or_else(|e| e.into_inner()) = Some(gateway);
        Ok(())
    }

    /// `validate!`: DependencyError unless the gateway is serving.
    pub fn validate(&self) -> Result<()> {
        match self.running() {
            Some(_) => Ok(()),
            None => Err(Error::Dependency(
                "the built-in network gateway is not open".into(),
            )),
        }
    }

    /// The refused requests of the last gateway opened, oldest first.
    pub fn denials(&self) -> Vec<Denial> {
        self.current().map(|g| g.denials()).unwrap_or_default()
    }

    /// The egress events of the last gateway opened, oldest first.
    pub fn egress(&self) -> Vec<EgressEvent> {
        self.current().map(|g| g.egress()).unwrap_or_default()
    }
}

/// Largest `upstream_ca:` file read: a bundle of every public root is about
/// 220 KiB, so 1 MiB leaves room for private CAs and refuses a file that
/// could only be a mistake (or `/dev/zero`) before it is read into memory.
pub const MAX_UPSTREAM_CA_BYTES: u64 = 1 << 20;

/// The PEM file of `upstream_ca:`: PolicyError naming the path when it is
/// missing, unreadable, not a regular file (a FIFO would block the open
/// forever, a device read without end), larger than
/// [`MAX_UPSTREAM_CA_BYTES`], or holds no certificate rustls can parse.
pub fn read_upstream_ca(path: &Path) -> Result<Vec<u8>> {
    let refused = |why: String| policy(format!("network upstream_ca {} {why}", path.display()));
    let file = open_regular(path).map_err(|e| refused(format!("cannot be read: {e}")))?;
    let bytes = read_bounded(file, MAX_UPSTREAM_CA_BYTES).map_err(|e| match e {
        Bounded::TooLarge => refused(format!(
            "is larger than {} bytes; a PEM bundle of CA certificates is far smaller",
            MAX_UPSTREAM_CA_BYTES
        )),
        Bounded::Io(e) => refused(format!("cannot be read: {e}")),
    })?;
    super::inspect::upstream_roots(&bytes).map_err(|why| refused(why.to_string()))?;
    Ok(bytes)
}

/// Opens `path` for reading without blocking (a FIFO with no writer would
/// otherwise block `open` itself) and only if it is a regular file, which
/// the descriptor's own `fstat` says (no check-then-open race).
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
    if kind != rustix::fs::FileType::RegularFile {
        return Err(std::io::Error::other(format!(
            "is not a regular file (a {})",
            file_kind(kind)
        )));
    }
    Ok(std::fs::File::from(fd))
}

fn file_kind(kind: rustix::fs::FileType) -> &'static str {
    use rustix::fs::FileType;
    match kind {
        FileType::Directory => "directory",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        _ => "special file",
    }
}

enum Bounded {
    TooLarge,
    Io(std::io::Error),
}

/// Reads all of `file` if it holds at most `limit` bytes (one byte past the
/// limit is read to tell; a file that grows meanwhile is still cut there).
fn read_bounded(file: std::fs::File, limit: u64) -> std::result::Result<Vec<u8>, Bounded> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Bounded::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Bounded::TooLarge);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn an_upstream_ca_that_is_no_regular_file_or_too_large_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ca.fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let large = dir.path().join("large.pem");
        std::fs::write(&large, vec![b'a'; MAX_UPSTREAM_CA_BYTES as usize + 1]).unwrap();
        for (path, expected) in [
            (fifo.as_path(), "not a regular file (a FIFO)"),
            (
                Path::new("/dev/zero"),
                "not a regular file (a character device)",
            ),
            (dir.path(), "not a regular file (a directory)"),
            (large.as_path(), "is larger than 1048576 bytes"),
        ] {
            let err = read_upstream_ca(path).unwrap_err();
            assert!(matches!(err, Error::Policy(_)), "{err}");
            assert!(err.to_string().contains(expected), "{path:?}: {err}");
            assert!(
                err.to_string().contains(&path.display().to_string()),
                "{err}"
            );
        }
    }

    #[test]
    fn a_malformed_entry_is_refused_before_anything_starts() {
        let err = BuiltinGateway::new(&["not a host".to_string()], false).unwrap_err();
        assert!(matches!(err, Error::Policy(_)), "{err}");
    }

    #[test]
    fn open_is_idempotent_and_denials_outlive_close() {
        let builtin = BuiltinGateway::new(&["example.com:443".to_string()], false).unwrap();
        assert_eq!(builtin.entries(), ["example.com:443"]);
        assert!(!builtin.allowlist().allow_private_destinations());
        let err = builtin.validate().unwrap_err();
        assert_eq!(
            err,
            Error::Dependency("the built-in network gateway is not open".into())
        );
        builtin.open(None).unwrap();
        let first = builtin.running().unwrap();
        builtin.open(None).unwrap();
        assert!(Arc::ptr_eq(&first, &builtin.running().unwrap()));
        builtin.validate().unwrap();

        let mut client = std::os::unix::net::UnixStream::connect(first.socket_path()).unwrap();
        client
            .write_all(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");

        first.stop().unwrap();
        assert!(builtin.running().is_none());
        assert!(builtin.validate().is_err());
        let denials = builtin.denials();
        assert_eq!(denials.len(), 1);
        assert_eq!(denials[0].destination, "other.test:443");
    }

    fn declared(allow: &[&str], secrets: &[(&str, &str, &[&str])]) -> NetworkRules {
        use crate::policy::{AllowRequest, SecretRequest};
        let allow: Vec<AllowRequest> = allow
            .iter()
            .map(|a| AllowRequest::Text(a.to_string()))
            .collect();
        let secrets: Vec<SecretRequest> = secrets
            .iter()
            .map(|(name, value, destinations)| SecretRequest {
                name: name.to_string(),
                keys: Some(vec!["value".into(), "destinations".into()]),
                value: Some(value.to_string()),
                destinations: destinations.iter().map(|d| d.to_string()).collect(),
            })
            .collect();
        NetworkRules::new(&allow, &secrets, None).unwrap()
    }

    fn connect(socket: &Path, target: &str) -> String {
        let mut client = std::os::unix::net::UnixStream::connect(socket).unwrap();
        client
            .write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
            .unwrap();
        let mut answer = [0u8; 12];
        client.read_exact(&mut answer).unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[test]
    fn a_view_serves_only_its_narrowed_rules_and_stops_with_the_gateway() {
        let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (a_port, b_port) = (
            a.local_addr().unwrap().port(),
            b.local_addr().unwrap().port(),
        );
        let rules = declared(
            &["127.0.0.0/8:*"],
            &[("github", "ghp_real_value", &["127.0.0.1:1"])],
        );
        let builtin = BuiltinGateway::declared(&rules, true).unwrap();
        let environment = builtin.environment();
        assert_eq!(environment.len(), 1);
        assert_eq!(environment[0].0, "LITTLEGHOST_SECRET_GITHUB");
        assert!(environment[0].1.starts_with("lgsecret_"));
        assert!(!format!("{builtin:?}").contains("ghp_real_value"));
        assert!(builtin.view(&rules).is_err(), "no view before open");
        builtin.open(None).unwrap();
        let gateway = builtin.running().unwrap();
        let narrowed = declared(&[&format!("127.0.0.1:{a_port}")], &[]);
        let view = builtin.view(&narrowed).unwrap();
        assert_eq!(
            builtin.view(&narrowed).unwrap().socket_path(),
            view.socket_path(),
            "one view per narrowing"
        );
        assert!(view.socket_path().starts_with(gateway.directory()));
        assert_ne!(view.mount().source, gateway.directory());
        let mode = std::fs::metadata(view.mount().source)
            .unwrap()
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );
        assert_eq!(
            connect(view.socket_path(), &format!("127.0.0.1:{a_port}")),
            "HTTP/1.1 200"
        );
        assert_eq!(
            connect(view.socket_path(), &format!("127.0.0.1:{b_port}")),
            "HTTP/1.1 403"
        );
        assert_eq!(
            connect(gateway.socket_path(), &format!("127.0.0.1:{b_port}")),
            "HTTP/1.1 200"
        );
        // The view's refusal is in the gateway's (shared) denials.
        let denied = builtin.denials();
        assert_eq!(denied.len(), 1);
        assert_eq!(denied[0].destination, format!("127.0.0.1:{b_port}"));
        // Only the kept secrets' variables go to a launch through the view.
        let full = vec![
            (
                "LITTLEGHOST_SECRET_GITHUB".to_string(),
                "lgsecret_x".to_string(),
            ),
            ("SSL_CERT_FILE".to_string(), "/x".to_string()),
        ];
        assert_eq!(
            BuiltinGateway::view_environment(&narrowed, full.clone()),
            [full[1].clone()]
        );
        assert_eq!(BuiltinGateway::view_environment(&rules, full.clone()), full);
        let directory = gateway.directory().to_path_buf();
        gateway.stop().unwrap();
        assert!(
            !directory.exists(),
            "the views' directories go with the gateway's"
        );
        assert!(builtin.view(&narrowed).is_err());
    }

    #[test]
    fn http_rules_open_now_that_the_engine_enforces_them() {
        use crate::policy::{AllowRequest, RuleRequest};
        let rule = RuleRequest {
            keys: vec!["destination".into(), "methods".into()],
            destination: Some("a.test:80".into()),
            methods: vec!["GET".into()],
            ..RuleRequest::default()
        };
        let rules = NetworkRules::new(&[AllowRequest::Rule(rule)], &[], None).unwrap();
        let builtin = BuiltinGateway::declared(&rules, false).unwrap();
        builtin.open(None).unwrap();
        builtin.running().unwrap().stop().unwrap();
    }

    #[test]
    fn inspected_entries_are_inspected_the_others_are_not() {
        use crate::policy::{AllowRequest, InspectRequest, RuleRequest};
        let rule = RuleRequest {
            keys: vec!["destination".into(), "inspect".into()],
            destination: Some("B.test:443".into()),
            inspect: Some(InspectRequest::Flag(true)),
            ..RuleRequest::default()
        };
        let allow = [
            AllowRequest::Text("a.test:443".into()),
            AllowRequest::Rule(rule),
        ];
        let rules = NetworkRules::new(&allow, &[], None).unwrap();
        let builtin = BuiltinGateway::declared(&rules, false).unwrap();
        assert_eq!(builtin.entries(), ["a.test:443", "b.test:443"]);
        let inspect = |text: &str| {
            let destination = super::super::Destination::parse(text, None).unwrap();
            builtin.allowlist().access(&destination).unwrap().inspect()
        };
        assert!(!inspect("a.test:443"));
        assert!(inspect("b.test:443"));
        builtin.open(None).unwrap();
        let gateway = builtin.running().unwrap();
        assert!(gateway.ca_bundle().unwrap().exists());
        gateway.stop().unwrap();
    }

    #[test]
    fn upstream_ca_is_read_at_open_and_a_bad_file_names_its_path() {
        let directory = std::env::temp_dir().join(format!("lg-ca-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let missing = directory.join("missing.pem");
        let error = read_upstream_ca(&missing).unwrap_err();
        assert!(matches!(error, Error::Policy(_)));
        assert!(error.message().contains(&missing.display().to_string()));
        let bad = directory.join("bad.pem");
        std::fs::write(&bad, "not a certificate").unwrap();
        assert!(read_upstream_ca(&bad)
            .unwrap_err()
            .message()
            .contains("bad.pem"));
        std::fs::write(
            &bad,
            "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert!(read_upstream_ca(&bad).is_err());
        let good = directory.join("good.pem");
        let certified = rcgen::generate_simple_self_signed(vec!["ca.test".into()]).unwrap();
        let block = pem::Pem::new("CERTIFICATE", certified.cert.der().to_vec());
        std::fs::write(&good, pem::encode(&block)).unwrap();
        assert!(read_upstream_ca(&good).is_ok());
        let mut rules = declared(&["a.test:443"], &[]);
        rules.upstream_ca = Some(missing.clone());
        let builtin = BuiltinGateway::declared(&rules, false).unwrap();
        let error = builtin.open(None).unwrap_err();
        assert!(error.message().contains("missing.pem"), "{error}");
        assert!(builtin.running().is_none());
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
