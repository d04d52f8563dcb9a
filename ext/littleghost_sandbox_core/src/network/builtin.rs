//! The built-in gateway as the G.2 protocol sees it (G.3, G.5, G.7): a
//! validated allowlist that `open` turns into a running [`Gateway`], at most
//! one at a time. After `close` the stopped gateway is kept, so its denials
//! stay readable until the next `open`.

use std::sync::{Arc, Mutex};

use super::{
    Allowlist, Denial, DenialCallback, EgressCallback, EgressEvent, Gateway, GatewayConfig,
};
use crate::error::{Error, Result};

/// An allowlist and, once opened, its gateway.
#[derive(Debug)]
pub struct BuiltinGateway {
    allowlist: Allowlist,
    gateway: Mutex<Option<Arc<Gateway>>>,
}

impl BuiltinGateway {
    /// G.7: PolicyError for a malformed entry; nothing is started.
    pub fn new(allow: &[String], allow_private_destinations: bool) -> Result<BuiltinGateway> {
        Ok(BuiltinGateway {
            allowlist: Allowlist::new(allow, allow_private_destinations)?,
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
        config.on_egress = on_egress;
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

    /// The egress events of the last gateway opened, oldest first.
    pub fn egress(&self) -> Vec<EgressEvent> {
        self.current().map(|g| g.egress()).unwrap_or_default()
    }
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
}
