//! TLS inspection seen from a client: for an inspected
//! destination the child's TLS ends at the gateway, with a certificate of the
//! gateway's own CA that the child trusts through the bundle the gateway
//! writes; the gateway verifies the destination's certificate itself; an SNI
//! naming another host than the CONNECT target is refused; a destination
//! not inspected stays an end-to-end tunnel. The upstream is a rustls server
//! on 127.0.0.1 with a certificate of a CA made here (given as `upstream_ca`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use littleghost_sandbox_core::network::{
    Allowlist, Decision, DenialReason, Gateway, GatewayConfig, Pattern, Rule,
};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, StreamOwned};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn pem_of(der: &[u8]) -> String {
    pem::encode(&pem::Pem::new("CERTIFICATE", der))
}

/// An HTTPS server on 127.0.0.1 whose certificate (for `localhost` and
/// 127.0.0.1) a CA made here signed; it answers every request with `body`
/// and keeps the SNI each connection sent.
struct Upstream {
    port: u16,
    ca_pem: String,
    certificate: Vec<u8>,
    server_names: Arc<Mutex<Vec<Option<String>>>>,
}

fn upstream(body: &'static str) -> Upstream {
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params
        .distinguished_name
        .push(DnType::CommonName, "Test upstream CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca = params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let leaf = params.signed_by(&key, &ca, &ca_key).unwrap();
    let config = Arc::new(
        ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server_names = Arc::new(Mutex::new(Vec::new()));
    let seen = server_names.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (config, seen) = (config.clone(), seen.clone());
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                let connection = rustls::ServerConnection::new(config).unwrap();
                let mut tls = StreamOwned::new(connection, stream);
                let mut reader = BufReader::new(&mut tls);
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                drop(reader);
                seen.lock()
                    .unwrap()
                    .push(tls.conn.server_name().map(str::to_owned));
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    Upstream {
        port,
        ca_pem: pem_of(ca.der().as_ref()),
        certificate: leaf.der().to_vec(),
        server_names,
    }
}

/// A gateway allowing `inspected` (inspect: true) and `tunnelled` (plain),
/// trusting `upstream_ca` beside the system's roots.
fn gateway(inspected: &[String], tunnelled: &[String], upstream_ca: Option<&str>) -> Gateway {
    let rule = |entry: &String, inspect: bool| Rule {
        inspect,
        ..Rule::destination(Pattern::parse(entry).unwrap())
    };
    let rules = inspected
        .iter()
        .map(|e| rule(e, true))
        .chain(tunnelled.iter().map(|e| rule(e, false)))
        .collect();
    let mut config = GatewayConfig::new(Allowlist::with_rules(rules, true).unwrap());
    config.upstream_ca = upstream_ca.map(|pem| pem.as_bytes().to_vec());
    Gateway::start(config).unwrap()
}

/// Sends `CONNECT target` and returns the stream after the answer's head,
/// with the status line.
fn connect(socket: &Path, target: &str) -> (UnixStream, String) {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.lines().next().unwrap_or_default().to_owned();
    (stream, status)
}

fn trusting(pem: &str) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(
        CertificateDer::pem_slice_iter(pem.as_bytes()).map(|certificate| certificate.unwrap()),
    );
    Arc::new(
        ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// TLS over the tunnel as `server_name`, trusting `pem`: the certificate
/// the client was shown and the response, or the TLS error.
fn fetch(stream: UnixStream, server_name: &str, pem: &str) -> Result<(Vec<u8>, String), String> {
    let name = ServerName::try_from(server_name.to_owned()).unwrap();
    let connection = ClientConnection::new(trusting(pem), name).unwrap();
    let mut tls = StreamOwned::new(connection, stream);
    // The Host names the server the child meant: the gateway refuses another one.
    let request = format!("GET / HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    let read = tls.read_to_string(&mut response);
    let certificate = tls
        .conn
        .peer_certificates()
        .map(|chain| chain[0].to_vec())
        .ok_or_else(|| format!("no certificate ({read:?})"))?;
    read.map_err(|e| e.to_string())?;
    Ok((certificate, response))
}

fn bundle(gateway: &Gateway) -> String {
    std::fs::read_to_string(gateway.ca_bundle().expect("a bundle")).unwrap()
}

#[test]
fn an_inspected_destination_is_served_with_a_certificate_of_the_gateways_ca() {
    let server = upstream("secret payload");
    let target = format!("localhost:{}", server.port);
    let gateway = gateway(std::slice::from_ref(&target), &[], Some(&server.ca_pem));
    let bundle = bundle(&gateway);
    assert!(bundle.contains("BEGIN CERTIFICATE") && !bundle.contains("PRIVATE KEY"));

    let (stream, status) = connect(gateway.socket_path(), &target);
    assert_eq!(status, "HTTP/1.1 200 Connection Established");
    let (certificate, response) = fetch(stream, "localhost", &bundle).unwrap();
    assert!(response.ends_with("secret payload"), "{response}");
    assert_ne!(
        certificate, server.certificate,
        "the child saw the real certificate"
    );
    // The gateway sent the CONNECT target as its own SNI upstream.
    assert_eq!(
        *server.server_names.lock().unwrap(),
        [Some("localhost".to_owned())]
    );
    // A child trusting only the destination's CA refuses the gateway's leaf:
    // what it talks to is the gateway, not the destination.
    let (stream, _) = connect(gateway.socket_path(), &target);
    let refused = fetch(stream, "localhost", &server.ca_pem).unwrap_err();
    assert!(refused.contains("UnknownIssuer"), "{refused}");

    let events = gateway.egress();
    assert!(events
        .iter()
        .any(|e| e.destination == target && e.inspected && e.decision == Decision::Allowed));
}

#[test]
fn an_ip_target_is_served_a_certificate_for_the_address() {
    let server = upstream("by address");
    let target = format!("127.0.0.1:{}", server.port);
    let gateway = gateway(std::slice::from_ref(&target), &[], Some(&server.ca_pem));
    let (stream, _) = connect(gateway.socket_path(), &target);
    let (_, response) = fetch(stream, "127.0.0.1", &bundle(&gateway)).unwrap();
    assert!(response.ends_with("by address"), "{response}");
}

#[test]
fn a_client_hello_naming_another_host_than_the_connect_target_is_refused() {
    let server = upstream("never");
    let target = format!("localhost:{}", server.port);
    let gateway = gateway(std::slice::from_ref(&target), &[], Some(&server.ca_pem));
    let (stream, status) = connect(gateway.socket_path(), &target);
    assert_eq!(status, "HTTP/1.1 200 Connection Established");
    let refused = fetch(stream, "api.github.com", &bundle(&gateway)).unwrap_err();
    assert!(refused.contains("UnrecognisedName"), "{refused}");
    let denials = gateway.denials();
    assert_eq!(denials.len(), 1);
    assert_eq!(
        (denials[0].destination.as_str(), denials[0].reason),
        (target.as_str(), DenialReason::HostMismatch)
    );
    assert!(gateway
        .egress()
        .iter()
        .any(|e| e.destination == target && e.decision == Decision::Denied));
}

#[test]
fn an_upstream_the_gateway_cannot_verify_is_refused_before_the_child_is_answered() {
    let server = upstream("unverified");
    let target = format!("localhost:{}", server.port);
    // The test CA is not given: the system's roots do not vouch for it.
    let gateway = gateway(std::slice::from_ref(&target), &[], None);
    let (mut stream, status) = connect(gateway.socket_path(), &target);
    assert_eq!(status, "HTTP/1.1 502 Bad Gateway");
    let mut body = String::new();
    stream.read_to_string(&mut body).unwrap();
    assert!(body.contains("certificate did not verify"), "{body}");
    assert!(body.contains("UnknownIssuer"), "{body}");
    let event = gateway.egress().pop().expect("an egress event");
    assert_eq!(
        (event.status, event.decision, event.inspected),
        (Some(502), Decision::Denied, true)
    );
    // The reason a user looks for is in the denial, not only in the body.
    let denials = gateway.denials();
    assert_eq!(
        denials.iter().map(|d| d.reason).collect::<Vec<_>>(),
        [DenialReason::UpstreamCertificate]
    );
    assert!(denials[0]
        .detail
        .as_deref()
        .is_some_and(|detail| detail.contains("UnknownIssuer")));
}

#[test]
fn a_destination_not_inspected_stays_an_end_to_end_tunnel() {
    let inspected = upstream("inspected");
    let tunnelled = upstream("tunnelled");
    let gateway = gateway(
        &[format!("localhost:{}", inspected.port)],
        &[format!("localhost:{}", tunnelled.port)],
        Some(&inspected.ca_pem),
    );
    let target = format!("localhost:{}", tunnelled.port);
    let (stream, status) = connect(gateway.socket_path(), &target);
    assert_eq!(status, "HTTP/1.1 200 Connection Established");
    let (certificate, response) = fetch(stream, "localhost", &tunnelled.ca_pem).unwrap();
    assert_eq!(certificate, tunnelled.certificate);
    assert!(response.ends_with("tunnelled"), "{response}");
    // Through the tunnel any SNI reaches the destination untouched.
    let (stream, _) = connect(gateway.socket_path(), &target);
    assert!(fetch(stream, "other.test", &tunnelled.ca_pem).is_err());
    assert!(gateway.denials().is_empty());
}

#[test]
fn no_inspected_rule_means_no_ca_and_no_bundle() {
    let gateway = gateway(&[], &["localhost:1".to_string()], None);
    assert!(gateway.ca_bundle().is_none());
}

#[test]
fn the_bundle_goes_with_the_gateway_and_a_malformed_upstream_ca_is_refused() {
    let gateway = gateway(&["localhost:1".to_string()], &[], None);
    let path = gateway.ca_bundle().unwrap().to_owned();
    let directory = gateway.directory().to_owned();
    assert!(path.starts_with(&directory));
    gateway.stop().unwrap();
    assert!(!path.exists() && !directory.exists());

    let rules = vec![Rule {
        inspect: true,
        ..Rule::destination(Pattern::parse("localhost:1").unwrap())
    }];
    let mut config = GatewayConfig::new(Allowlist::with_rules(rules, true).unwrap());
    config.upstream_ca =
        Some(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec());
    let err = Gateway::start(config).unwrap_err();
    assert!(
        matches!(&err, littleghost_sandbox_core::error::Error::Policy(m) if m.contains("upstream_ca")),
        "{err}"
    );
}
