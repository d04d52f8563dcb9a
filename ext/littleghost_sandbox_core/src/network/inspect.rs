//! TLS inspection: for a CONNECT to a destination whose
//! rule says `inspect: true`, the gateway is the TLS server the child talks
//! to and a verifying TLS client of the real destination.
//!
//! An [`Inspector`] exists only while a gateway with at least one inspected
//! rule runs. It holds a CA made for that gateway alone (its private key is
//! generated in memory, never written anywhere, and dropped with the
//! inspector when the gateway stops), mints a leaf certificate per host
//! name on demand (cached), and holds the TLS client configuration for the
//! upstream side: the system's roots plus the gateway's `upstream_ca`. The
//! child trusts the CA through [`Inspector::bundle`], which the gateway
//! writes into its private directory as [`BUNDLE_NAME`].
//!
//! Both sides speak HTTP/1.1 only (ALPN `http/1.1`): the gateway reads what
//! it inspects as HTTP/1.1.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_rustls::{client, server, LazyConfigAcceptor, TlsConnector};

use super::allowlist::{Destination, Host};
use super::denial::DenialReason;

/// The bundle's file name in the gateway's private directory.
pub const BUNDLE_NAME: &str = "ca-bundle.pem";

/// The variables pointing a child's TLS clients at the bundle (OpenSSL and
/// curl, Python `requests`, curl again, Node.js, git).
pub const BUNDLE_VARIABLES: [&str; 5] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
];

/// How long the CA is valid from the gateway's start (leaves end with it).
const CA_VALIDITY: Duration = Duration::from_secs(30 * 24 * 3600);
/// Tolerated clock difference between the gateway and a child.
const BACKDATE: Duration = Duration::from_secs(3600);
/// Leaf configurations kept; past it the cache starts afresh (a wildcard or
/// network rule could otherwise make it grow without bound).
const LEAF_CACHE: usize = 1024;

/// PEM with Unix line ends (the crate's default is CRLF).
const PEM_LF: pem::EncodeConfig = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);

/// The only application protocol either side offers or accepts.
const HTTP_1_1: &[u8] = b"http/1.1";

/// How much of a TLS connection's transport is read at once (rustls itself
/// asks for 4 KiB at a time; four full records here).
const TRANSPORT_BUFFER: usize = 64 * 1024;

/// What an inspected connection's two TLS sessions buffer, held of the
/// gateway's memory budget for as long as it lives (`docs/design.md`,
/// "Memory budget"): on each side the transport buffer, the records
/// waiting to be sent (rustls's default limit, 64 KiB) and one record
/// being received (16 KiB).
pub(super) const SESSION_BUFFERS: usize = 2 * (TRANSPORT_BUFFER + 64 * 1024 + 16 * 1024);

/// A TLS alert record (plaintext, before any handshake): fatal
/// `unrecognized_name`, what a server answers to an SNI it does not serve.
const UNRECOGNIZED_NAME_ALERT: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x70];

/// Why the child's side of an inspected tunnel did not come up.
#[derive(Debug)]
pub enum AcceptError {
    /// The ClientHello named (SNI) another host than the CONNECT target;
    /// the child was answered with a TLS `unrecognized_name` alert.
    HostMismatch { server_name: String },
    /// Anything else: not TLS, a handshake failure, the child went away.
    Handshake(String),
}

/// The per-gateway CA, its minted leaves and the upstream client config.
pub struct Inspector {
    name: String,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
    /// One key for every leaf (each leaf still has its own certificate).
    leaf_key: KeyPair,
    not_after: SystemTime,
    provider: Arc<CryptoProvider>,
    leaves: Mutex<HashMap<Host, Arc<ServerConfig>>>,
    client: Arc<ClientConfig>,
    system_roots: Vec<CertificateDer<'static>>,
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why the inspecting gateway cannot trust, make or use a certificate. The
/// first four read as the end of a sentence about the `upstream_ca` bundle;
/// each carries the TLS library's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    #[error("is not a PEM certificate bundle ({0})")]
    NotPem(String),
    #[error("holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")")]
    NoCertificate,
    #[error("has an unusable certificate (number {number} in the file): {error}")]
    UnusableInFile { number: usize, error: String },
    #[error("has an unusable certificate: {0}")]
    Unusable(String),
    #[error("cannot configure TLS: {0}")]
    Configure(String),
    #[error("cannot make the CA key: {0}")]
    CaKey(String),
    #[error("cannot make the CA certificate: {0}")]
    CaCertificate(String),
    #[error("cannot make a leaf key: {0}")]
    LeafKey(String),
    #[error("cannot name {name} in a certificate: {error}")]
    Name { name: String, error: String },
    #[error("cannot mint a certificate for {host}: {error}")]
    Mint { host: String, error: String },
    #[error("cannot use the certificate for {host}: {error}")]
    Use { host: String, error: String },
}

/// The certificates of a PEM bundle the gateway is told to trust upstream
/// (`upstream_ca:`). The error completes a sentence about the bundle:
/// "is not PEM ...", "holds no certificate", "has an unusable certificate ...".
pub fn upstream_roots(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::NotPem(e.to_string()))?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let mut store = RootCertStore::empty();
    for (index, certificate) in certificates.iter().enumerate() {
        store
            .add(certificate.clone())
            .map_err(|e| TlsError::UnusableInFile {
                number: index + 1,
                error: e.to_string(),
            })?;
    }
    Ok(certificates)
}

impl Inspector {
    /// Makes the CA (a fresh P-256 key in memory) and the upstream client
    /// configuration: the system's roots (those that parse) plus
    /// `upstream_ca`, a PEM bundle (an error says what is wrong with it).
    pub fn new(upstream_ca: Option<&[u8]>) -> Result<Inspector, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let extra = match upstream_ca {
            Some(pem) => upstream_roots(pem)?,
            None => Vec::new(),
        };
        let system_roots = rustls_native_certs::load_native_certs().certs;
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(system_roots.iter().cloned());
        for certificate in extra {
            roots
                .add(certificate)
                .map_err(|e| TlsError::Unusable(e.to_string()))?;
        }
        let mut client = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Configure(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![HTTP_1_1.to_vec()];

        let now = SystemTime::now();
        let not_after = now + CA_VALIDITY;
        let name = format!("LittleGhost sandbox CA {}", hex(&random::<6>()));
        let ca_key = KeyPair::generate().map_err(|e| TlsError::CaKey(e.to_string()))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, name.as_str());
        params
            .distinguished_name
            .push(DnType::OrganizationName, "LittleGhost sandbox");
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.serial_number = Some(SerialNumber::from_slice(&random::<16>()));
        params.not_before = (now - BACKDATE).into();
        params.not_after = not_after.into();
        let ca = params
            .self_signed(&ca_key)
            .map_err(|e| TlsError::CaCertificate(e.to_string()))?;
        let leaf_key = KeyPair::generate().map_err(|e| TlsError::LeafKey(e.to_string()))?;
        Ok(Inspector {
            name,
            ca,
            ca_key,
            leaf_key,
            not_after,
            provider,
            leaves: Mutex::new(HashMap::new()),
            client: Arc::new(client),
            system_roots,
        })
    }

    /// The CA's subject common name, "LittleGhost sandbox CA <random>".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CA certificate (no key), PEM.
    pub fn ca_pem(&self) -> String {
        certificate_pem(self.ca.der())
    }

    /// What a child trusts: the system's roots, then the sandbox CA, PEM.
    pub fn bundle(&self) -> String {
        let mut pems: Vec<pem::Pem> = self
            .system_roots
            .iter()
            .map(|der| pem::Pem::new("CERTIFICATE", der.as_ref()))
            .collect();
        pems.push(pem::Pem::new("CERTIFICATE", self.ca.der().as_ref()));
        pem::encode_many_config(&pems, PEM_LF)
    }

    /// The child-side configuration for `host`: a leaf certificate whose only
    /// subject alternative name is `host` (DNS name or IP address), signed by
    /// the CA, minted on first use.
    pub fn server_config(&self, host: &Host) -> Result<Arc<ServerConfig>, TlsError> {
        let mut leaves = self.leaves.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(config) = leaves.get(host) {
            return Ok(config.clone());
        }
        let config = Arc::new(self.mint(host)?);
        if leaves.len() >= LEAF_CACHE {
            leaves.clear();
        }
        leaves.insert(host.clone(), config.clone());
        Ok(config)
    }

    fn mint(&self, host: &Host) -> Result<ServerConfig, TlsError> {
        let (san, common_name) = match host {
            Host::Name(name) => (
                SanType::DnsName(name.as_str().try_into().map_err(|e: rcgen::Error| {
                    TlsError::Name {
                        name: name.clone(),
                        error: e.to_string(),
                    }
                })?),
                name.clone(),
            ),
            Host::Ip(ip) => (SanType::IpAddress(*ip), ip.to_string()),
        };
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![san];
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(SerialNumber::from_slice(&random::<16>()));
        params.not_before = (SystemTime::now() - BACKDATE).into();
        params.not_after = self.not_after.into();
        let leaf = params
            .signed_by(&self.leaf_key, &self.ca, &self.ca_key)
            .map_err(|e| TlsError::Mint {
                host: host.to_string(),
                error: e.to_string(),
            })?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Configure(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone(), self.ca.der().clone()], key)
            .map_err(|e| TlsError::Use {
                host: host.to_string(),
                error: e.to_string(),
            })?;
        config.alpn_protocols = vec![HTTP_1_1.to_vec()];
        Ok(config)
    }

    /// Accepts the child's TLS connection for a tunnel to `destination`:
    /// reads the ClientHello, refuses one whose SNI names another host
    /// (answering a TLS `unrecognized_name` alert), then completes the
    /// handshake with the host's leaf. A ClientHello without SNI is served
    /// the CONNECT target's certificate. The connection is read through a
    /// buffer, as in [`Inspector::connect`].
    pub async fn accept<IO>(
        &self,
        destination: &Destination,
        io: IO,
        before_refusal: impl FnOnce(),
    ) -> Result<server::TlsStream<BufReader<IO>>, AcceptError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let handshake = |e: std::io::Error| AcceptError::Handshake(e.to_string());
        let io = BufReader::with_capacity(TRANSPORT_BUFFER, io);
        let start = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), io)
            .await
            .map_err(handshake)?;
        if let Some(server_name) = start.client_hello().server_name() {
            if !names_host(server_name, &destination.host) {
                let server_name = server_name.to_owned();
                // Recorded before the child can read the alert.
                before_refusal();
                let mut io = start.io;
                let _ = io.write_all(&UNRECOGNIZED_NAME_ALERT).await;
                let _ = io.shutdown().await;
                return Err(AcceptError::HostMismatch { server_name });
            }
        }
        let config = self
            .server_config(&destination.host)
            .map_err(|e| AcceptError::Handshake(e.to_string()))?;
        start.into_stream(config).await.map_err(handshake)
    }

    /// Opens TLS to `destination` over `io` (a connection to one of its
    /// vetted addresses), verifying its certificate against the roots for
    /// the CONNECT target's host. The error says why verification failed.
    ///
    /// The connection is read through a buffer: rustls asks its transport
    /// for at most 4 KiB at a time, so a bulk download would otherwise cost
    /// a system call per 4 KiB.
    pub async fn connect<IO>(
        &self,
        destination: &Destination,
        io: IO,
    ) -> Result<client::TlsStream<BufReader<IO>>, (DenialReason, String)>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let server_name = match &destination.host {
            Host::Name(name) => ServerName::try_from(name.clone()).map_err(|e| {
                (
                    DenialReason::UpstreamTls,
                    format!("{name} is not a TLS server name: {e}"),
                )
            })?,
            Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
        };
        TlsConnector::from(self.client.clone())
            .connect(server_name, BufReader::with_capacity(TRANSPORT_BUFFER, io))
            .await
            .map_err(|e| match e.get_ref() {
                Some(inner) => {
                    let reason = match inner.downcast_ref::<rustls::Error>() {
                        Some(rustls::Error::InvalidCertificate(_)) => {
                            DenialReason::UpstreamCertificate
                        }
                        _ => DenialReason::UpstreamTls,
                    };
                    (reason, inner.to_string())
                }
                None => (DenialReason::UpstreamTls, e.to_string()),
            })
    }
}

/// Whether a ClientHello's SNI names `host` (case and a final dot aside).
fn names_host(server_name: &str, host: &Host) -> bool {
    let given = server_name.trim_end_matches('.');
    match host {
        Host::Name(name) => given.eq_ignore_ascii_case(name.trim_end_matches('.')),
        Host::Ip(ip) => given.parse::<IpAddr>().is_ok_and(|given| given == *ip),
    }
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    let _ = rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty());
    bytes
}

/// One certificate as PEM.
pub(crate) fn certificate_pem(der: &[u8]) -> String {
    pem::encode_config(&pem::Pem::new("CERTIFICATE", der), PEM_LF)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A test CA and a server certificate it signed for `names`, as an
    /// upstream would have: (CA PEM, server ServerConfig).
    pub(crate) fn upstream(names: &[&str]) -> (String, Arc<ServerConfig>) {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "Test upstream CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca = params.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "Test upstream server");
        let leaf = params.signed_by(&key, &ca, &ca_key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        (certificate_pem(ca.der()), Arc::new(config))
    }

    /// A client trusting exactly `pem`, offering `http/1.1`.
    pub(crate) fn client_trusting(pem: &str) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            roots.add(certificate.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![HTTP_1_1.to_vec()];
        Arc::new(config)
    }

    fn dest(text: &str) -> Destination {
        Destination::parse(text, None).unwrap()
    }

    #[test]
    fn a_malformed_upstream_ca_is_refused_with_the_reason() {
        assert!(upstream_roots(b"not pem at all")
            .unwrap_err()
            .to_string()
            .contains("no PEM certificate"));
        let broken = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        assert!(upstream_roots(broken)
            .unwrap_err()
            .to_string()
            .contains("not a PEM"));
        let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(upstream_roots(garbage.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("unusable certificate (number 1"));
        let (ca, _) = upstream(&["a.test"]);
        assert_eq!(upstream_roots(ca.as_bytes()).unwrap().len(), 1);
        assert!(Inspector::new(Some(b"nope")).is_err());
    }

    #[test]
    fn each_gateway_has_its_own_ca_and_the_bundle_ends_with_it() {
        let one = Inspector::new(None).unwrap();
        let two = Inspector::new(None).unwrap();
        assert!(one.name().starts_with("LittleGhost sandbox CA "));
        assert_ne!(one.name(), two.name());
        assert_ne!(one.ca_pem(), two.ca_pem());
        let bundle = one.bundle();
        assert!(
            bundle.trim_end().ends_with(one.ca_pem().trim_end()),
            "{bundle}"
        );
        assert!(!bundle.contains("PRIVATE KEY"));
        let host = Host::Name("a.test".into());
        let first = one.server_config(&host).unwrap();
        assert!(Arc::ptr_eq(&first, &one.server_config(&host).unwrap()));
    }

    #[test]
    fn sni_comparison_ignores_case_and_a_final_dot_only() {
        let name = Host::Name("api.example.com".into());
        assert!(names_host("API.example.com.", &name));
        assert!(!names_host("evil.example.com", &name));
        let ip = Host::Ip("127.0.0.1".parse().unwrap());
        assert!(names_host("127.0.0.1", &ip));
        assert!(!names_host("localhost", &ip));
    }

    /// Runs the child side of `inspector.accept` over an in-memory pipe and
    /// returns what a client trusting `trusted` got.
    async fn handshake(
        inspector: &Inspector,
        target: &str,
        sni: &str,
        trusted: &str,
    ) -> (Result<(), AcceptError>, Result<Vec<u8>, String>) {
        let (near, far) = tokio::io::duplex(64 * 1024);
        let destination = dest(target);
        let server = async {
            let mut stream = inspector.accept(&destination, far, || {}).await?;
            stream.write_all(b"hello").await.unwrap();
            stream.shutdown().await.unwrap();
            Ok(())
        };
        let client = async {
            let connector = TlsConnector::from(client_trusting(trusted));
            let name = ServerName::try_from(sni.to_owned()).unwrap();
            let mut stream = connector
                .connect(name, near)
                .await
                .map_err(|e| e.to_string())?;
            let certificate = stream.get_ref().1.peer_certificates().unwrap()[0].to_vec();
            let mut body = Vec::new();
            let _ = stream.read_to_end(&mut body).await;
            assert_eq!(body, b"hello");
            Ok(certificate)
        };
        tokio::join!(server, client)
    }

    #[tokio::test]
    async fn the_child_side_serves_a_leaf_of_the_sandbox_ca_for_the_target_only() {
        let inspector = Inspector::new(None).unwrap();
        let ca = inspector.ca_pem();
        let (served, seen) = handshake(&inspector, "api.test:443", "api.test", &ca).await;
        served.unwrap();
        seen.unwrap();

        let (served, seen) = handshake(&inspector, "api.test:443", "other.test", &ca).await;
        match served {
            Err(AcceptError::HostMismatch { server_name }) => assert_eq!(server_name, "other.test"),
            other => panic!("served a mismatched SNI: {other:?}"),
        }
        assert!(seen.unwrap_err().contains("UnrecognisedName"), "alert");

        // An IP target gets an IP SAN a verifying client accepts.
        let (served, seen) = handshake(&inspector, "127.0.0.1:443", "127.0.0.1", &ca).await;
        served.unwrap();
        seen.unwrap();

        // Another gateway's CA is not trusted for this one's leaves.
        let other = Inspector::new(None).unwrap();
        let (_, seen) = handshake(&inspector, "api.test:443", "api.test", &other.ca_pem()).await;
        assert!(seen.unwrap_err().contains("UnknownIssuer"));
    }

    #[tokio::test]
    async fn the_upstream_side_verifies_the_certificate_for_the_target() {
        let (ca, server_config) = upstream(&["api.test"]);
        let trusting = Inspector::new(Some(ca.as_bytes())).unwrap();
        let untrusting = Inspector::new(None).unwrap();
        for (inspector, target, expect) in [
            (&trusting, "api.test:443", None),
            (&trusting, "other.test:443", Some("not valid for name")),
            (&untrusting, "api.test:443", Some("UnknownIssuer")),
        ] {
            let (near, far) = tokio::io::duplex(64 * 1024);
            let acceptor = tokio_rustls::TlsAcceptor::from(server_config.clone());
            let server = async move {
                if let Ok(mut stream) = acceptor.accept(far).await {
                    let _ = stream.write_all(b"upstream").await;
                    let _ = stream.shutdown().await;
                }
            };
            let destination = dest(target);
            let client = inspector.connect(&destination, near);
            let (_, connected) = tokio::join!(server, client);
            match (connected, expect) {
                (Ok(stream), None) => {
                    assert_eq!(stream.get_ref().1.alpn_protocol(), None);
                }
                // A certificate that does not verify is named as such (the
                // denial's reason), with rustls's words as its detail.
                (Err((reason, why)), Some(expected)) => {
                    assert_eq!(reason, DenialReason::UpstreamCertificate, "{why}");
                    assert!(why.contains(expected), "{why}");
                }
                (Ok(_), Some(expected)) => panic!("{target}: connected despite {expected}"),
                (Err((_, why)), None) => panic!("{target}: {why}"),
            }
        }
    }
}
