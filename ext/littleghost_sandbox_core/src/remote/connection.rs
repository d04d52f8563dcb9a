//! One sandbox's hold on its daemon: the client, the daemon's metadata
//! (fetched once), the watch streaming its denials, and the sessions the
//! sandbox started, which closing it ends (docs/design.md "The remote
//! provider").

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::client::{fetch_metadata, Client, Metadata};
use super::endpoint::Endpoint;
use super::error::Error;
use super::pending::Pending;
use super::session::Session;
use super::stream::{self, Watch};
use crate::denial::Denial;

/// A sandbox's connection to one daemon.
pub struct Connection {
    client: Client,
    metadata: Arc<Mutex<Option<Metadata>>>,
    watch: Arc<Mutex<Option<Watch>>>,
    sessions: Mutex<Vec<Weak<Session>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Connection {
    /// A connection to the daemon at `grpc` and `rest` (see [`Endpoint::new`]);
    /// nothing is sent yet.
    pub fn new(grpc: &str, rest: &str, token: Option<&str>) -> Result<Connection, Error> {
        Ok(Connection {
            client: Client::new(Endpoint::new(grpc, rest, token)?)?,
            metadata: Arc::default(),
            watch: Arc::default(),
            sessions: Mutex::default(),
        })
    }

    /// The client of the sandbox itself (a scope narrows a clone).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The daemon's `/v1/metadata`, fetched on first use and kept.
    pub fn metadata(&self) -> Pending<Metadata> {
        if let Some(known) = lock(&self.metadata).clone() {
            return Pending::ready(Ok(known));
        }
        let kept = self.metadata.clone();
        let endpoint = self.client.endpoint().clone();
        self.client.spawn(async move {
            let fetched = fetch_metadata(endpoint).await?;
            *lock(&kept) = Some(fetched.clone());
            Ok(fetched)
        })
    }

    /// docs/spec.md 14.11 through `client`, once [`metadata`](Self::metadata)
    /// answered: refused where the daemon has no atomic replace.
    pub fn replace(
        &self,
        client: &Client,
        logical: String,
        old: Vec<u8>,
        new: Vec<u8>,
    ) -> Pending<String> {
        let known = lock(&self.metadata).clone().unwrap_or_default();
        match known.require_atomic_replace() {
            Ok(()) => client.replace(logical, old, new),
            Err(refused) => Pending::ready(Err(refused)),
        }
    }

    /// Whether the daemon's denials are being watched.
    pub fn watching(&self) -> bool {
        lock(&self.watch).is_some()
    }

    /// Starts handing the daemon's denials to `sink` (once this answers,
    /// every later denial is reported); a watch begun meanwhile is kept
    /// instead. Giving up the call leaves nothing watching.
    pub fn watch(&self, sink: impl Fn(Denial) + Send + Sync + 'static) -> Pending<()> {
        let kept = self.watch.clone();
        let endpoint = self.client.endpoint().clone();
        self.client.spawn(async move {
            let watch = stream::watch(endpoint, sink).await?;
            lock(&kept).get_or_insert(watch);
            Ok(())
        })
    }

    /// `session`, owned from now on: [`close`](Self::close) ends it.
    pub fn own(&self, session: Session) -> Arc<Session> {
        let session = Arc::new(session);
        let mut sessions = lock(&self.sessions);
        sessions.retain(|known| known.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        session
    }

    /// Ends every session still open (the daemon ends their programs) and
    /// stops watching denials.
    pub fn close(&self) {
        let sessions = std::mem::take(&mut *lock(&self.sessions));
        sessions
            .iter()
            .filter_map(Weak::upgrade)
            .for_each(|session| session.end());
        lock(&self.watch).take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replace_is_refused_before_anything_is_sent_without_an_atomic_one() {
        // Nothing listens on port 1: a call that was sent would be Unreachable.
        let connection = Connection::new("127.0.0.1:1", "http://127.0.0.1:1", None).unwrap();
        let refused = connection.replace(
            connection.client(),
            "a.txt".into(),
            b"a".to_vec(),
            b"b".to_vec(),
        );
        assert!(
            matches!(refused.wait_all(), Err(Error::Unsupported(m)) if m.contains("atomic replace"))
        );
        assert!(!connection.watching());
    }

    #[test]
    fn a_malformed_endpoint_is_refused_at_once() {
        let refused = Connection::new("nowhere", "http://127.0.0.1:1", None);
        assert!(matches!(refused, Err(Error::Endpoint(_))));
    }
}
