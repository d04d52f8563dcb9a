//! What one request or tunnel leaves in the egress record.

use super::*;

/// What one request or tunnel leaves in the egress record.
pub(in crate::network) struct Event {
    pub destination: String,
    pub method: Option<String>,
    pub path: Option<String>,
    pub status: Option<u16>,
    pub sent: u64,
    pub received: u64,
    pub decision: Decision,
    pub inspected: bool,
    /// Why it was refused, and the upstream's words ([`Event::refused`]).
    pub reason: Option<DenialReason>,
    pub detail: Option<String>,
    /// Once [`Event::arm`]ed, where a dropped event still goes: an exchange
    /// cut by the gateway's stop (its task aborted) is recorded too, so
    /// `close` loses no event.
    pub(super) armed: Option<(Arc<EgressLog>, Instant)>,
}

impl Event {
    pub(in crate::network) fn new(destination: String, method: &str, inspected: bool) -> Event {
        Event {
            destination,
            method: Some(method.to_owned()),
            path: None,
            status: None,
            sent: 0,
            received: 0,
            decision: Decision::Denied,
            inspected,
            reason: None,
            detail: None,
            armed: None,
        }
    }

    /// Marks it refused by the gateway with `refused`'s status and reason
    /// (a malformed head has no denial: its parse error is the detail,
    /// stand-ins redacted as in the answer's body).
    pub(in crate::network) fn refused(&mut self, refused: &Refusal, secrets: &Secrets) {
        self.status = Some(refused.code());
        self.decision = Decision::Denied;
        match &refused.denied {
            Some((reason, detail)) => {
                self.reason = Some(*reason);
                self.detail = detail.clone();
            }
            None => self.detail = Some(secrets.redact(&refused.reason).into_owned()),
        }
    }

    /// Marks it refused for `reason` after it was allowed (a cut tunnel or body).
    pub(in crate::network) fn cut(&mut self, reason: DenialReason) {
        self.decision = Decision::Denied;
        self.reason = Some(reason);
    }

    /// Makes the event record itself if it is dropped before [`Event::push`].
    pub(in crate::network) fn arm(&mut self, shared: &Shared, start: Instant) {
        self.armed = Some((shared.egress.clone(), start));
    }

    pub(in crate::network) fn push(mut self, shared: &Shared, start: Instant) {
        self.armed = None;
        shared.egress.push(self.record(start));
    }

    pub(super) fn record(&mut self, start: Instant) -> EgressEvent {
        EgressEvent {
            at: SystemTime::now(),
            destination: std::mem::take(&mut self.destination),
            method: self.method.take(),
            path: self.path.take(),
            status: self.status,
            bytes_sent: self.sent,
            bytes_received: self.received,
            duration: start.elapsed(),
            decision: self.decision,
            inspected: self.inspected,
            reason: self.reason,
            detail: self.detail.take(),
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Some((log, start)) = self.armed.take() {
            log.push(self.record(start));
        }
    }
}
