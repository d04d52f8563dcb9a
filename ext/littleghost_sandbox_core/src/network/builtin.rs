//! The built-in gateway as the G.2 protocol sees it (G.3, G.5, G.7): a
//! validated allowlist that `open` turns into a running [`Gateway`], at most
//! one at a time. After `close` the stopped gateway is kept, so its denials
//! stay readable until the next `open`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::allowlist::parse_pattern;
use super::{Allowlist, Denial, DenialCallback, Gateway, GatewayConfig, Rule};
use crate::error::{policy, Error, Result};

/// An allowlist and, once opened, its gateway.
#[derive(Debug)]
pub struct BuiltinGateway {
    allowlist: Allowlist,
    /// A PEM bundle of extra roots for inspected destinations, read at `open`.
    upstream_ca: Option<PathBuf>,
    gateway: Mutex<Option<Arc<Gateway>>>,
}

impl BuiltinGateway {
    /// G.7: PolicyError for a malformed entry; nothing is started.
    pub fn new(allow: &[String], allow_private_destinations: bool) -> Result<BuiltinGateway> {
        Ok(BuiltinGateway {
            allowlist: Allowlist::new(allow, allow_private_destinations)?,
            upstream_ca: None,
            gateway: Mutex::new(None),
        })
    }

    /// Like [`BuiltinGateway::new`], with the `inspect` entries allowed too
    /// and TLS-inspected (issue 22 item 3), trusting `upstream_ca` (a PEM
    /// file, read at `open`) beside the system's roots upstream.
    pub fn inspecting(
        allow: &[String],
        inspect: &[String],
        upstream_ca: Option<PathBuf>,
        allow_private_destinations: bool,
    ) -> Result<BuiltinGateway> {
        let mut rules = Vec::new();
        for (entries, inspected) in [(allow, false), (inspect, true)] {
            if entries.is_empty() {
                continue;
            }
            for entry in crate::policy::allow_entries(entries)? {
                rules.push(Rule {
                    inspect: inspected,
                    ..Rule::destination(parse_pattern(&entry)?)
                });
            }
        }
        Ok(BuiltinGateway {
            allowlist: Allowlist::with_rules(rules, allow_private_destinations)?,
            upstream_ca,
            gateway: Mutex::new(None),
        })
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
        if self.running().is_some() {
            return Ok(());
        }
        let mut config = GatewayConfig::new(self.allowlist.clone());
        config.on_denial = on_denial;
        config.upstream_ca = self
            .upstream_ca
            .as_deref()
            .map(read_upstream_ca)
            .transpose()?;
        let gateway = Arc::new(Gateway::start(config)?);
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
}

/// The `upstream_ca` file's bytes, or a PolicyError naming the file and
/// what is wrong with it.
fn read_upstream_ca(path: &std::path::Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|e| {
        policy(format!(
            "network upstream_ca {:?} cannot be read: {e}",
            path.display().to_string()
        ))
    })?;
    super::inspect::upstream_roots(&bytes).map_err(|why| {
        policy(format!(
            "network upstream_ca {:?} {why}",
            path.display().to_string()
        ))
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

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

    #[test]
    fn a_malformed_upstream_ca_is_a_policy_error_at_open_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("company-ca.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let builtin = BuiltinGateway::inspecting(
            &[],
            &["localhost:8443".to_string()],
            Some(path.clone()),
            true,
        )
        .unwrap();
        let err = builtin.open(None).unwrap_err();
        match err {
            Error::Policy(message) => {
                assert!(message.contains("company-ca.pem"), "{message}");
                assert!(message.contains("no PEM certificate"), "{message}");
            }
            other => panic!("{other}"),
        }
        assert!(builtin.running().is_none());
        let missing = BuiltinGateway::inspecting(
            &[],
            &["localhost:8443".to_string()],
            Some(dir.path().join("absent.pem")),
            true,
        )
        .unwrap();
        assert!(matches!(missing.open(None), Err(Error::Policy(m)) if m.contains("absent.pem")));
    }

    #[test]
    fn inspected_entries_are_allowed_and_inspected_the_others_are_not() {
        let builtin = BuiltinGateway::inspecting(
            &["a.test:443".to_string()],
            &["B.test:443".to_string()],
            None,
            false,
        )
        .unwrap();
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
}
