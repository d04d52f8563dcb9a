//! The egress record: one event per connection (a tunnel) and per HTTP
//! request (plain, or inspected HTTPS) through the gateway, allowed or not,
//! kept bounded like the denials and handed to an optional callback, which
//! the binding turns into `sandbox.network_log` and `on_network` events.

use std::time::{Duration, SystemTime};

use super::denial::DenialReason;
use super::log::{capped, Callback, Field, Fields, Log, Record};

/// What the gateway did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Passed on (a tunnel opened, a request forwarded).
    Allowed,
    /// Refused with a 4xx/5xx of the gateway's own (a denial was recorded
    /// with the event's `reason`, except for a malformed request head,
    /// whose parse error is the event's `detail`).
    Denied,
}

impl Decision {
    /// The Ruby Symbol name.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Denied => "denied",
        }
    }
}

/// One connection or request through the gateway. `bytes_sent` counts what
/// the gateway passed toward the destination after the request head (the
/// body as framed, or a tunnel's bytes); `bytes_received` what it relayed
/// from the destination to the child (response heads and bodies as framed,
/// or a tunnel's bytes; 0 for the gateway's own refusals).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EgressEvent {
    pub at: SystemTime,
    /// `host:port` as the client named it.
    pub destination: String,
    /// `CONNECT` for a tunnel, else the request's method, when readable.
    pub method: Option<String>,
    /// The origin-form path, when the request was read.
    pub path: Option<String>,
    /// The status the child received (the gateway's own, or the destination's
    /// when readable); `None` for a tunnel cut before any answer.
    pub status: Option<u16>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub duration: Duration,
    pub decision: Decision,
    /// Whether the gateway terminated TLS to read it.
    pub inspected: bool,
    /// Why the gateway refused it (the denial's reason), when it did.
    pub reason: Option<DenialReason>,
    /// The upstream's words for a failed destination (resolver, connect or
    /// TLS error), or the parse error of a malformed request head.
    pub detail: Option<String>,
}

/// An event in one line:
/// `allowed GET "example.com:80" "/a" 200 sent=0 received=512 0.012s`
/// (method, path and status only when known; `inspected` when TLS was
/// terminated). The binding's `NetworkEvent#inspect` wraps it.
impl std::fmt::Display for EgressEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.decision.name())?;
        if let Some(method) = &self.method {
            write!(f, " {method}")?;
        }
        write!(f, " {:?}", self.destination)?;
        if let Some(path) = &self.path {
            write!(f, " {path:?}")?;
        }
        if let Some(status) = self.status {
            write!(f, " {status}")?;
        }
        if let Some(reason) = self.reason {
            write!(f, " {}", crate::denial::Reason::from(reason).name())?;
        }
        if self.inspected {
            write!(f, " inspected")?;
        }
        write!(
            f,
            " sent={} received={} {:.3}s",
            self.bytes_sent,
            self.bytes_received,
            self.duration.as_secs_f64()
        )
    }
}

impl Record for EgressEvent {
    fn capped(self) -> Self {
        EgressEvent {
            destination: capped(self.destination),
            method: self.method.map(capped),
            path: self.path.map(capped),
            detail: self.detail.map(capped),
            ..self
        }
    }
}

impl Fields for EgressEvent {
    const NAMES: &'static [&'static str] = &[
        "destination",
        "method",
        "path",
        "status",
        "bytes_sent",
        "bytes_received",
        "duration",
        "decision",
        "reason",
        "detail",
        "inspected",
        "time",
    ];

    fn fields(&self) -> Vec<Field<'_>> {
        let reason = self.reason.map(|r| crate::denial::Reason::from(r).name());
        vec![
            Field::Text(&self.destination),
            Field::text(self.method.as_deref()),
            Field::text(self.path.as_deref()),
            self.status
                .map_or(Field::Absent, |s| Field::Count(s.into())),
            Field::Count(self.bytes_sent),
            Field::Count(self.bytes_received),
            Field::Seconds(self.duration.as_secs_f64()),
            Field::Name(self.decision.name()),
            reason.map_or(Field::Absent, Field::Name),
            Field::text(self.detail.as_deref()),
            Field::Flag(self.inspected),
            Field::Time(self.at),
        ]
    }
}

/// Called for every event, on a gateway thread; must not block.
pub type EgressCallback = Callback<EgressEvent>;

/// The bounded egress record.
pub type EgressLog = Log<EgressEvent>;

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> EgressEvent {
        EgressEvent {
            at: SystemTime::UNIX_EPOCH,
            destination: "example.com:80".into(),
            method: Some("GET".into()),
            path: Some("/a \"b\"".into()),
            status: Some(200),
            bytes_sent: 0,
            bytes_received: 512,
            duration: Duration::from_millis(12),
            decision: Decision::Allowed,
            inspected: false,
            reason: None,
            detail: None,
        }
    }

    #[test]
    fn each_named_field_has_its_value() {
        let event = event();
        let fields = event.fields();
        assert_eq!(fields.len(), EgressEvent::NAMES.len());
        let field =
            |name: &str| fields[EgressEvent::NAMES.iter().position(|n| *n == name).unwrap()];
        assert_eq!(field("method"), Field::Text("GET"));
        assert_eq!(field("status"), Field::Count(200));
        assert_eq!(field("decision"), Field::Name("allowed"));
        assert_eq!(field("reason"), Field::Absent);
        assert_eq!(field("duration"), Field::Seconds(0.012));
        assert_eq!(field("time"), Field::Time(SystemTime::UNIX_EPOCH));
        let refused = EgressEvent {
            reason: Some(DenialReason::NotAllowed),
            status: None,
            ..event
        };
        let fields = refused.fields();
        assert_eq!(fields[8], Field::Name("not_allowed"));
        assert_eq!(fields[3], Field::Absent);
    }

    #[test]
    fn a_logged_event_holds_no_text_longer_than_the_limit() {
        use super::super::log::{CUT_MARKER, TEXT_LIMIT};
        let log = EgressLog::new(2, None);
        let long = format!("/{}", "p".repeat(30 * 1024));
        log.push(EgressEvent {
            destination: long.clone(),
            method: Some(long.clone()),
            path: Some(long.clone()),
            detail: Some(long.clone()),
            ..event()
        });
        let kept = log.list().remove(0);
        let texts = [
            kept.destination,
            kept.method.unwrap(),
            kept.path.unwrap(),
            kept.detail.unwrap(),
        ];
        for text in texts {
            assert!(
                text.len() <= TEXT_LIMIT && text.contains(CUT_MARKER),
                "{}",
                text.len()
            );
        }
    }

    #[test]
    fn it_shows_as_ruby_inspects_it() {
        assert_eq!(
            event().to_string(),
            r#"allowed GET "example.com:80" "/a \"b\"" 200 sent=0 received=512 0.012s"#
        );
        let tunnel = EgressEvent {
            method: None,
            path: None,
            status: None,
            inspected: true,
            decision: Decision::Denied,
            ..event()
        };
        assert_eq!(
            tunnel.to_string(),
            r#"denied "example.com:80" inspected sent=0 received=512 0.012s"#
        );
        let failed = EgressEvent {
            method: Some("CONNECT".into()),
            path: None,
            status: Some(502),
            decision: Decision::Denied,
            reason: Some(DenialReason::UpstreamCertificate),
            detail: Some("invalid peer certificate: UnknownIssuer".into()),
            ..event()
        };
        assert_eq!(
            failed.to_string(),
            r#"denied CONNECT "example.com:80" 502 upstream_certificate sent=0 received=512 0.012s"#
        );
    }
}
