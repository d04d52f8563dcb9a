//! Denial records of the built-in gateway (SPEC G.7): each refused request
//! is kept in a bounded list (oldest dropped first) and handed to an optional
//! callback, which the binding turns into `sandbox.denials` events.

use std::time::SystemTime;

use super::log::{capped, Callback, Log, Record};

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenialReason {
    /// The destination is not an allowlist entry.
    NotAllowed,
    /// The destination resolved into a refused range (loopback, private...).
    PrivateDestination,
    /// The gateway or the process is at its descriptor budget (503).
    DescriptorBudget,
    /// The gateway's memory budget has not the bytes a new connection (or
    /// a new part of one) needs to buffer (503).
    MemoryBudget,
    /// An HTTP request outside its destination's `methods:`/`paths:`.
    RequestNotAllowed,
    /// A secret's stand-in bound where the secret may not go.
    SecretExfiltration,
    /// HTTP rules that only inspection could enforce, on a tunnel not inspected.
    InspectionRequired,
    /// TLS SNI or `Host` names another host than the CONNECT target.
    HostMismatch,
    /// A request whose `Connection` names `Content-Length`,
    /// `Transfer-Encoding` or `Host` (its framing could be read two ways).
    MalformedRequest,
    /// A secret's value that cannot stand where its stand-in stands (a
    /// space or another byte not valid in a request target).
    SecretPlacement,
    /// An allowed destination's name did not resolve (502).
    Dns,
    /// No connection could be made to an allowed destination's addresses (502).
    UpstreamUnreachable,
    /// An inspected destination's certificate did not verify against the
    /// system's roots plus `upstream_ca:` (502).
    UpstreamCertificate,
    /// TLS to an inspected destination failed for another reason (502).
    UpstreamTls,
    /// The destination closed the connection or answered with a response
    /// the gateway could not frame (502).
    UpstreamFailed,
    /// The destination did not answer in time (504).
    UpstreamTimeout,
}

impl DenialReason {
    pub const ALL: [DenialReason; 16] = [
        DenialReason::NotAllowed,
        DenialReason::PrivateDestination,
        DenialReason::DescriptorBudget,
        DenialReason::MemoryBudget,
        DenialReason::RequestNotAllowed,
        DenialReason::SecretExfiltration,
        DenialReason::InspectionRequired,
        DenialReason::HostMismatch,
        DenialReason::MalformedRequest,
        DenialReason::SecretPlacement,
        DenialReason::Dns,
        DenialReason::UpstreamUnreachable,
        DenialReason::UpstreamCertificate,
        DenialReason::UpstreamTls,
        DenialReason::UpstreamFailed,
        DenialReason::UpstreamTimeout,
    ];

    /// Short text, used in the 403 body and in Ruby.
    pub fn text(self) -> &'static str {
        match self {
            DenialReason::NotAllowed => "destination is not in the allowlist",
            DenialReason::PrivateDestination => {
                "destination resolves to a private or reserved address"
            }
            DenialReason::DescriptorBudget => {
                "the gateway is at its descriptor budget; try again when a connection closes"
            }
            DenialReason::MemoryBudget => {
                "the gateway is at its memory budget; try again when a connection closes"
            }
            DenialReason::RequestNotAllowed => {
                "the request's method or path is outside the destination's rules"
            }
            DenialReason::SecretExfiltration => {
                "a secret's stand-in was sent where that secret may not go"
            }
            DenialReason::InspectionRequired => {
                "the destination's HTTP rules need inspect: true to be enforced on a tunnel"
            }
            DenialReason::HostMismatch => {
                "TLS server name or Host header differs from the CONNECT target"
            }
            DenialReason::MalformedRequest => {
                "the request's Connection header names Content-Length, Transfer-Encoding or Host"
            }
            DenialReason::SecretPlacement => {
                "a secret's value cannot stand in the request target where its stand-in is"
            }
            DenialReason::Dns => "the destination's name does not resolve",
            DenialReason::UpstreamUnreachable => "cannot connect to the destination",
            DenialReason::UpstreamCertificate => {
                "the destination's TLS certificate did not verify (system roots plus upstream_ca:)"
            }
            DenialReason::UpstreamTls => "TLS to the destination failed",
            DenialReason::UpstreamFailed => "the destination failed to answer",
            DenialReason::UpstreamTimeout => "the destination did not answer in time",
        }
    }

    /// The HTTP status the client is answered with.
    pub fn status(self) -> &'static str {
        match self {
            DenialReason::DescriptorBudget | DenialReason::MemoryBudget => {
                "503 Service Unavailable"
            }
            DenialReason::MalformedRequest => "400 Bad Request",
            DenialReason::Dns
            | DenialReason::UpstreamUnreachable
            | DenialReason::UpstreamCertificate
            | DenialReason::UpstreamTls
            | DenialReason::UpstreamFailed => "502 Bad Gateway",
            DenialReason::UpstreamTimeout => "504 Gateway Timeout",
            _ => "403 Forbidden",
        }
    }
}

/// One refused connection or request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub at: SystemTime,
    /// The requested `host:port` as the gateway understood it.
    pub destination: String,
    pub reason: DenialReason,
    /// For a refused HTTP request: its method and origin-form path.
    pub request: Option<(String, String)>,
    /// What the destination or the resolver said, for a failed upstream
    /// (the resolver's or TLS library's error text).
    pub detail: Option<String>,
}

impl Record for Denial {
    fn capped(self) -> Self {
        Denial {
            destination: capped(self.destination),
            request: self
                .request
                .map(|(method, path)| (capped(method), capped(path))),
            detail: self.detail.map(capped),
            ..self
        }
    }
}

/// Called for every denial, on a gateway thread; must not block.
pub type DenialCallback = Callback<Denial>;

/// A bounded list of denials plus the callback.
#[derive(Debug)]
pub struct Denials {
    log: Log<Denial>,
}

impl Denials {
    /// Keeps the last `capacity` denials (at least one).
    pub fn new(capacity: usize, callback: Option<DenialCallback>) -> Denials {
        Denials {
            log: Log::new(capacity, callback),
        }
    }

    /// Records a refused connection and calls the callback.
    pub fn record(&self, destination: String, reason: DenialReason) {
        self.record_request(destination, reason, None);
    }

    /// Records a refusal, of a request when `request` is its method and path.
    pub fn record_request(
        &self,
        destination: String,
        reason: DenialReason,
        request: Option<(String, String)>,
    ) {
        self.record_detailed(destination, reason, request, None);
    }

    /// [`record_request`](Self::record_request) with the upstream's own
    /// words (`detail`).
    pub fn record_detailed(
        &self,
        destination: String,
        reason: DenialReason,
        request: Option<(String, String)>,
        detail: Option<String>,
    ) {
        self.log.push(Denial {
            at: SystemTime::now(),
            destination,
            reason,
            request,
            detail,
        });
    }

    /// The kept denials, oldest first.
    pub fn list(&self) -> Vec<Denial> {
        self.log.list()
    }

    /// How many denials were dropped to respect the bound.
    pub fn dropped(&self) -> u64 {
        self.log.dropped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn both_budgets_answer_503_each_with_its_own_text() {
        for reason in [DenialReason::DescriptorBudget, DenialReason::MemoryBudget] {
            assert_eq!(reason.status(), "503 Service Unavailable");
        }
        assert!(DenialReason::MemoryBudget.text().contains("memory budget"));
        assert_ne!(
            DenialReason::MemoryBudget.text(),
            DenialReason::DescriptorBudget.text()
        );
    }

    #[test]
    fn a_refused_request_is_kept_and_called_back_with_its_path_cut() {
        use crate::network::log::{CUT_MARKER, TEXT_LIMIT};
        let seen = Arc::new(std::sync::Mutex::new(0));
        let called = seen.clone();
        let callback = move |denial: &Denial| {
            *called.lock().unwrap() = denial.request.as_ref().unwrap().1.len();
        };
        let denials = Denials::new(2, Some(Arc::new(callback)));
        let path = format!("/{}", "p".repeat(30 * 1024));
        let host = format!("{}:80", "h".repeat(2048));
        denials.record_request(
            host,
            DenialReason::RequestNotAllowed,
            Some(("GET".into(), path)),
        );
        let kept = denials.list().remove(0);
        let path = kept.request.unwrap().1;
        assert!(
            path.len() <= TEXT_LIMIT && path.contains(CUT_MARKER),
            "{path}"
        );
        assert!(kept.destination.len() <= TEXT_LIMIT);
        assert_eq!(*seen.lock().unwrap(), path.len());
    }

    #[test]
    fn bounded_and_calls_back() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let denials = Denials::new(
            2,
            Some(Arc::new(move |_: &Denial| {
                seen.fetch_add(1, Ordering::SeqCst);
            })),
        );
        for port in 1..=3 {
            denials.record(format!("a:{port}"), DenialReason::NotAllowed);
        }
        let kept: Vec<String> = denials.list().into_iter().map(|d| d.destination).collect();
        assert_eq!(kept, ["a:2", "a:3"]);
        assert_eq!(denials.dropped(), 1);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
