//! Denials: every refusal the gem makes, as a value a
//! caller can observe without parsing messages, and the bounded log a
//! sandbox keeps of them.
//!
//! Three kinds of refusal exist:
//!
//! - [`Kind::Filesystem`]: the broker (§14) or a scope's capabilities refused
//!   a file operation. The broker's error carries a [`Refusal`] (see
//!   [`crate::Error::Refused`]); the binding adds the operation and the
//!   caller's logical path.
//! - [`Kind::Limit`]: a program was ended because it passed a resource limit
//!   (memory, CPU time, the output bound with `kill_on_output_limit`), or the
//!   kernel refused it a process at `tasks` (nothing killed). A
//!   timeout is *not* a denial: it bounds how long the caller waits, it does
//!   not refuse anything the program asked for, and it already raises its
//!   own `TimeoutError`.
//! - [`Kind::Network`]: the built-in gateway answered 403; its own record
//!   ([`crate::network::denial::Denial`]) converts with `From`.
//!
//! A workspace reference the file tools refuse before the broker (`../x`,
//! absolute, an unknown name) is a filesystem refusal too: see
//! [`crate::workspace::refused_reference`].
//!
//! Things that are not refusals (a missing file, text not found, invalid
//! UTF-8, an OS failure) are plain errors and are not recorded.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::limits::LimitExceeded;
use crate::network::denial as gateway;
use crate::network::log::{capped, Field, Fields, Record};

/// What was refused, broadly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Filesystem,
    Limit,
    Network,
}

impl Kind {
    /// Its name (the binding shows it as a Symbol).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Filesystem => "filesystem",
            Kind::Limit => "limit",
            Kind::Network => "network",
        }
    }
}

/// The operation that was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Read,
    List,
    Write,
    Replace,
    /// A program run (`execute_program`, `start_program`, `execute`).
    Execute,
    /// An outbound connection through the gateway.
    Connect,
    /// One HTTP request the gateway read (plain HTTP, or inspected HTTPS).
    Request,
}

impl Operation {
    /// The operation named `name` ([`Operation::name`]).
    pub fn from_name(name: &str) -> Option<Operation> {
        [
            Operation::Read,
            Operation::List,
            Operation::Write,
            Operation::Replace,
            Operation::Execute,
            Operation::Connect,
            Operation::Request,
        ]
        .into_iter()
        .find(|operation| operation.name() == name)
    }

    /// Its name (the binding shows it as a Symbol).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::List => "list",
            Operation::Write => "write",
            Operation::Replace => "replace",
            Operation::Execute => "execute",
            Operation::Connect => "connect",
            Operation::Request => "request",
        }
    }
}

/// The rule that refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The path lies outside every tool-visible grant (or under a deny marker).
    OutsideScope,
    /// The path contains a `..` component.
    EscapesScope,
    /// A write or replace under a read-only grant.
    ReadOnly,
    /// The path is or traverses a symbolic link.
    Symlink,
    /// The file has more than one hard link.
    MultiplyLinked,
    /// The scope's capabilities do not include the operation.
    Capability,
    /// `Limits#read_bytes`.
    ReadLimit,
    /// `Limits#write_bytes`.
    WriteLimit,
    /// `Limits#list_entries`.
    ListLimit,
    /// A program passed its memory limit and was ended.
    MemoryLimit,
    /// A program passed its CPU time limit and was ended.
    CpuLimit,
    /// A program passed `max_output_bytes` with `kill_on_output_limit`.
    OutputLimit,
    /// A program's tree asked for more processes than `tasks` (refused, not killed).
    TaskLimit,
    /// The gateway's allowlist does not name the destination.
    NotAllowed,
    /// The destination resolves to a private or reserved address.
    PrivateDestination,
    /// The network gateway is at its descriptor budget.
    DescriptorBudget,
    /// The network gateway is at its memory budget (the bytes it buffers).
    MemoryBudget,
    /// An HTTP request outside its destination's `methods:`/`paths:`.
    RequestNotAllowed,
    /// A secret's stand-in bound for a destination the secret does not name
    /// (or through a tunnel the gateway cannot read).
    SecretExfiltration,
    /// A CONNECT to a destination whose HTTP rules can only be enforced by
    /// reading the requests, which is not inspected (`inspect: true`).
    InspectionRequired,
    /// TLS SNI or the `Host` header names another host than the CONNECT target.
    HostMismatch,
    /// An HTTP request whose `Connection` names a framing or routing header (400).
    MalformedRequest,
    /// A secret's value that cannot stand in the request target where its stand-in is.
    SecretPlacement,
    /// An allowed destination's name did not resolve.
    Dns,
    /// No connection could be made to an allowed destination.
    UpstreamUnreachable,
    /// An inspected destination's certificate did not verify.
    UpstreamCertificate,
    /// TLS to an inspected destination failed otherwise.
    UpstreamTls,
    /// The destination closed the connection or answered unreadably.
    UpstreamFailed,
    /// The destination did not answer in time.
    UpstreamTimeout,
}

impl Reason {
    /// The gateway's reason whose record names `name` (the test hooks inject
    /// a gateway denial by its name).
    pub fn gateway_named(name: &str) -> Option<gateway::DenialReason> {
        let named = |reason: &gateway::DenialReason| Reason::from(*reason).name() == name;
        gateway::DenialReason::ALL.into_iter().find(named)
    }

    /// Every reason, so a name read back (a daemon's denial stream) finds its reason.
    pub const ALL: [Reason; 29] = [
        Reason::OutsideScope,
        Reason::EscapesScope,
        Reason::ReadOnly,
        Reason::Symlink,
        Reason::MultiplyLinked,
        Reason::Capability,
        Reason::ReadLimit,
        Reason::WriteLimit,
        Reason::ListLimit,
        Reason::MemoryLimit,
        Reason::CpuLimit,
        Reason::OutputLimit,
        Reason::TaskLimit,
        Reason::NotAllowed,
        Reason::PrivateDestination,
        Reason::DescriptorBudget,
        Reason::MemoryBudget,
        Reason::RequestNotAllowed,
        Reason::SecretExfiltration,
        Reason::InspectionRequired,
        Reason::HostMismatch,
        Reason::MalformedRequest,
        Reason::SecretPlacement,
        Reason::Dns,
        Reason::UpstreamUnreachable,
        Reason::UpstreamCertificate,
        Reason::UpstreamTls,
        Reason::UpstreamFailed,
        Reason::UpstreamTimeout,
    ];

    /// The reason named `name` ([`Reason::name`]).
    pub fn from_name(name: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|reason| reason.name() == name)
    }

    /// Its name (the binding shows it as a Symbol).
    pub fn name(self) -> &'static str {
        match self {
            Reason::OutsideScope => "outside_scope",
            Reason::EscapesScope => "escapes_scope",
            Reason::ReadOnly => "read_only",
            Reason::Symlink => "symlink",
            Reason::MultiplyLinked => "multiply_linked",
            Reason::Capability => "capability",
            Reason::ReadLimit => "read_limit",
            Reason::WriteLimit => "write_limit",
            Reason::ListLimit => "list_limit",
            Reason::MemoryLimit => "memory_limit",
            Reason::CpuLimit => "cpu_limit",
            Reason::OutputLimit => "output_limit",
            Reason::TaskLimit => "task_limit",
            Reason::NotAllowed => "not_allowed",
            Reason::PrivateDestination => "private_destination",
            Reason::DescriptorBudget => "descriptor_budget",
            Reason::MemoryBudget => "memory_budget",
            Reason::RequestNotAllowed => "request_not_allowed",
            Reason::SecretExfiltration => "secret_exfiltration",
            Reason::InspectionRequired => "inspection_required",
            Reason::HostMismatch => "host_mismatch",
            Reason::MalformedRequest => "malformed_request",
            Reason::SecretPlacement => "secret_placement",
            Reason::Dns => "dns",
            Reason::UpstreamUnreachable => "upstream_unreachable",
            Reason::UpstreamCertificate => "upstream_certificate",
            Reason::UpstreamTls => "upstream_tls",
            Reason::UpstreamFailed => "upstream_failed",
            Reason::UpstreamTimeout => "upstream_timeout",
        }
    }

    /// The kind a refusal for this reason belongs to.
    pub fn kind(self) -> Kind {
        match self {
            Reason::MemoryLimit | Reason::CpuLimit | Reason::OutputLimit | Reason::TaskLimit => {
                Kind::Limit
            }
            Reason::NotAllowed
            | Reason::PrivateDestination
            | Reason::DescriptorBudget
            | Reason::MemoryBudget
            | Reason::RequestNotAllowed
            | Reason::SecretExfiltration
            | Reason::InspectionRequired
            | Reason::HostMismatch
            | Reason::MalformedRequest
            | Reason::SecretPlacement
            | Reason::Dns
            | Reason::UpstreamUnreachable
            | Reason::UpstreamCertificate
            | Reason::UpstreamTls
            | Reason::UpstreamFailed
            | Reason::UpstreamTimeout => Kind::Network,
            _ => Kind::Filesystem,
        }
    }
}

/// What a refusing error carries besides its message: the rule, so callers
/// never parse the message. See [`crate::Error::Refused`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: Reason,
    /// The message the caller sees (a tool failure's).
    pub message: String,
}

/// One refusal: what was refused, where, why, and the message the caller got.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Denial {
    pub kind: Kind,
    pub operation: Operation,
    /// The caller's logical path, the program's `argv[0]`, or `host:port`.
    pub target: String,
    pub reason: Reason,
    /// The refused operation's own error message (or the gateway's reason).
    pub message: String,
    pub at: SystemTime,
    /// For a refused HTTP request: its method and origin-form path.
    pub request: Option<(String, String)>,
    /// For a destination that failed the gateway: what the resolver, the
    /// system or the TLS library said (also at the end of `message`).
    pub detail: Option<String>,
}

impl Denial {
    /// A denial now, of the kind `reason` implies.
    pub fn new(
        operation: Operation,
        target: impl Into<String>,
        reason: Reason,
        message: impl Into<String>,
    ) -> Denial {
        Denial {
            kind: reason.kind(),
            operation,
            target: target.into(),
            reason,
            message: message.into(),
            at: SystemTime::now(),
            request: None,
            detail: None,
        }
    }

    /// The denial of a broker refusal of `operation` on `logical`.
    pub fn refused(operation: Operation, logical: &str, refusal: &Refusal) -> Denial {
        Denial::new(operation, logical, refusal.reason, refusal.message.clone())
    }
}

impl Denial {
    /// The denial of a run of `program` the cgroup (or the sampler) ended at a limit.
    pub fn limit_kill(program: &str, exceeded: &LimitExceeded) -> Denial {
        let reason = match exceeded {
            LimitExceeded::Memory { .. } => Reason::MemoryLimit,
            LimitExceeded::Cpu { .. } => Reason::CpuLimit,
            LimitExceeded::Output { .. } => Reason::OutputLimit,
        };
        Denial::new(Operation::Execute, program, reason, exceeded.message())
    }

    /// The denial of a file operation on `target` a scope's capabilities
    /// refuse; `feature` is `filesystem_read`, `filesystem_list`, ...
    pub fn capability(feature: &str, target: impl Into<String>) -> Denial {
        let operation = match feature {
            "filesystem_list" => Operation::List,
            "filesystem_write" => Operation::Write,
            "filesystem_replace" => Operation::Replace,
            _ => Operation::Read,
        };
        let message = format!("Sandbox scope does not allow {}", feature.replace('_', " "));
        Denial::new(operation, target, Reason::Capability, message)
    }
}

/// A denial in one line: kind, operation, target and reason,
/// `filesystem write "docs/a.md" read_only`, and for a refused HTTP request
/// its method and path too:
/// `network request "api.example.com:443" request_not_allowed POST "/x"`
/// (the binding's `Denial#inspect` wraps it).
impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {:?} {}",
            self.kind.name(),
            self.operation.name(),
            self.target,
            self.reason.name()
        )?;
        if let Some((method, path)) = &self.request {
            write!(f, " {method} {path:?}")?;
        }
        Ok(())
    }
}

/// A denial's texts are cut to [`crate::network::log::TEXT_LIMIT`] where it
/// is kept (a [`DenialLog`], a sandbox's event log): a child chooses a
/// request's path and a logical path's length (docs/security.md, "The
/// gateway: descriptor and memory budgets").
impl Record for Denial {
    fn capped(self) -> Self {
        Denial {
            target: capped(self.target),
            message: capped(self.message),
            request: self
                .request
                .map(|(method, path)| (capped(method), capped(path))),
            detail: self.detail.map(capped),
            ..self
        }
    }
}

impl Fields for Denial {
    const NAMES: &'static [&'static str] = &[
        "kind",
        "operation",
        "target",
        "reason",
        "message",
        "time",
        "method",
        "path",
        "detail",
    ];

    fn fields(&self) -> Vec<Field<'_>> {
        let request = self.request.as_ref();
        vec![
            Field::Name(self.kind.name()),
            Field::Name(self.operation.name()),
            Field::Text(&self.target),
            Field::Name(self.reason.name()),
            Field::Text(&self.message),
            Field::Time(self.at),
            Field::text(request.map(|(method, _)| method.as_str())),
            Field::text(request.map(|(_, path)| path.as_str())),
            Field::text(self.detail.as_deref()),
        ]
    }
}

impl From<gateway::DenialReason> for Reason {
    fn from(reason: gateway::DenialReason) -> Reason {
        match reason {
            gateway::DenialReason::NotAllowed => Reason::NotAllowed,
            gateway::DenialReason::PrivateDestination => Reason::PrivateDestination,
            gateway::DenialReason::DescriptorBudget => Reason::DescriptorBudget,
            gateway::DenialReason::MemoryBudget => Reason::MemoryBudget,
            gateway::DenialReason::RequestNotAllowed => Reason::RequestNotAllowed,
            gateway::DenialReason::SecretExfiltration => Reason::SecretExfiltration,
            gateway::DenialReason::InspectionRequired => Reason::InspectionRequired,
            gateway::DenialReason::HostMismatch => Reason::HostMismatch,
            gateway::DenialReason::MalformedRequest => Reason::MalformedRequest,
            gateway::DenialReason::SecretPlacement => Reason::SecretPlacement,
            gateway::DenialReason::Dns => Reason::Dns,
            gateway::DenialReason::UpstreamUnreachable => Reason::UpstreamUnreachable,
            gateway::DenialReason::UpstreamCertificate => Reason::UpstreamCertificate,
            gateway::DenialReason::UpstreamTls => Reason::UpstreamTls,
            gateway::DenialReason::UpstreamFailed => Reason::UpstreamFailed,
            gateway::DenialReason::UpstreamTimeout => Reason::UpstreamTimeout,
        }
    }
}

impl From<&gateway::Denial> for Denial {
    fn from(record: &gateway::Denial) -> Denial {
        let message = match &record.detail {
            Some(detail) => format!("{}: {detail}", record.reason.text()),
            None => record.reason.text().to_owned(),
        };
        Denial {
            kind: Kind::Network,
            operation: match record.request {
                Some(_) => Operation::Request,
                None => Operation::Connect,
            },
            target: record.destination.clone(),
            reason: record.reason.into(),
            message,
            at: record.at,
            request: record.request.clone(),
            detail: record.detail.clone(),
        }
    }
}

/// How many denials a sandbox keeps by default.
pub const DEFAULT_CAPACITY: usize = 100;

/// The last `capacity` denials, oldest first; older ones are dropped (and
/// counted). Safe to share between threads.
#[derive(Debug)]
pub struct DenialLog {
    capacity: usize,
    state: Mutex<(VecDeque<Denial>, u64)>,
}

impl Default for DenialLog {
    fn default() -> Self {
        DenialLog::new(DEFAULT_CAPACITY)
    }
}

impl DenialLog {
    /// Keeps the last `capacity` denials (at least one).
    pub fn new(capacity: usize) -> DenialLog {
        DenialLog {
            capacity: capacity.max(1),
            state: Mutex::new((VecDeque::new(), 0)),
        }
    }

    /// Appends `denial`, its texts capped, dropping the oldest one when full.
    pub fn record(&self, denial: Denial) {
        let denial = denial.capped();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.0.len() == self.capacity {
            state.0.pop_front();
            state.1 += 1;
        }
        state.0.push_back(denial);
    }

    /// The kept denials, oldest first.
    pub fn list(&self) -> Vec<Denial> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0.iter().cloned().collect()
    }

    /// How many denials were dropped to respect the bound.
    pub fn dropped(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    /// The bound.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gateway_reason_is_found_by_the_name_its_record_shows() {
        for reason in gateway::DenialReason::ALL {
            let name = Reason::from(reason).name();
            assert_eq!(Reason::gateway_named(name), Some(reason));
        }
        assert_eq!(
            Reason::gateway_named("secret_exfiltration"),
            Some(gateway::DenialReason::SecretExfiltration)
        );
        assert_eq!(Reason::gateway_named("outside_scope"), None);
    }

    #[test]
    fn each_named_field_has_its_value() {
        let mut denial = Denial::capability("filesystem_write", "docs/a.md");
        let fields = denial.fields();
        assert_eq!(fields.len(), Denial::NAMES.len());
        assert_eq!(fields[0], Field::Name("filesystem"));
        assert_eq!(fields[1], Field::Name("write"));
        assert_eq!(fields[2], Field::Text("docs/a.md"));
        assert_eq!(fields[6..], [Field::Absent, Field::Absent, Field::Absent]);
        denial.request = Some(("POST".into(), "/x".into()));
        assert_eq!(
            denial.fields()[6..8],
            [Field::Text("POST"), Field::Text("/x")]
        );
    }

    #[test]
    fn a_capability_refusal_names_the_feature() {
        let denial = Denial::capability("filesystem_write", "docs/a.md");
        assert_eq!(denial.operation, Operation::Write);
        assert_eq!(denial.reason, Reason::Capability);
        assert_eq!(denial.target, "docs/a.md");
        assert_eq!(
            denial.message,
            "Sandbox scope does not allow filesystem write"
        );
        assert_eq!(
            Denial::capability("filesystem_read", "").operation,
            Operation::Read
        );
    }

    #[test]
    fn the_log_keeps_the_newest_and_counts_the_dropped() {
        let log = DenialLog::new(2);
        for name in ["a", "b", "c"] {
            log.record(Denial::new(
                Operation::Read,
                name,
                Reason::OutsideScope,
                "x",
            ));
        }
        let kept: Vec<String> = log.list().into_iter().map(|d| d.target).collect();
        assert_eq!(kept, ["b", "c"]);
        assert_eq!(log.dropped(), 1);
        assert_eq!(DenialLog::new(0).capacity(), 1);
        assert_eq!(DenialLog::default().capacity(), DEFAULT_CAPACITY);
    }

    #[test]
    fn a_kept_denial_holds_no_text_longer_than_the_limit() {
        use crate::network::log::{CUT_MARKER, TEXT_LIMIT};
        let log = DenialLog::new(2);
        let long = format!("/{}", "a".repeat(30 * 1024));
        let mut denial = Denial::new(Operation::Request, long.clone(), Reason::NotAllowed, &long);
        denial.request = Some(("GET".into(), long.clone()));
        denial.detail = Some(long.clone());
        log.record(denial);
        let kept = log.list().remove(0);
        let (method, path) = kept.request.clone().unwrap();
        assert_eq!(method, "GET");
        for text in [
            &kept.target,
            &kept.message,
            &path,
            kept.detail.as_ref().unwrap(),
        ] {
            assert!(
                text.len() <= TEXT_LIMIT && text.contains(CUT_MARKER),
                "{}",
                text.len()
            );
            assert!(text.starts_with("/aaaa"));
        }
    }

    #[test]
    fn it_shows_as_ruby_inspects_it() {
        let denial = Denial::capability("filesystem_write", "docs/\"a\".md");
        assert_eq!(
            denial.to_string(),
            r#"filesystem write "docs/\"a\".md" capability"#
        );
    }

    #[test]
    fn a_refused_request_shows_its_method_and_path() {
        let record = gateway::Denial {
            at: SystemTime::UNIX_EPOCH,
            destination: "api.example.com:443".into(),
            reason: gateway::DenialReason::RequestNotAllowed,
            request: Some(("POST".into(), "/x".into())),
            detail: None,
        };
        let denial = Denial::from(&record);
        assert_eq!(denial.operation, Operation::Request);
        assert_eq!(
            denial.to_string(),
            r#"network request "api.example.com:443" request_not_allowed POST "/x""#
        );
    }

    #[test]
    fn reasons_imply_their_kind() {
        assert_eq!(Reason::ReadOnly.kind(), Kind::Filesystem);
        assert_eq!(Reason::ReadLimit.kind(), Kind::Filesystem);
        assert_eq!(Reason::MemoryLimit.kind(), Kind::Limit);
        assert_eq!(Reason::OutputLimit.kind(), Kind::Limit);
        assert_eq!(Reason::TaskLimit.kind(), Kind::Limit);
        assert_eq!(Reason::NotAllowed.kind(), Kind::Network);
        let denial = Denial::refused(
            Operation::Write,
            "docs/a.md",
            &Refusal {
                reason: Reason::ReadOnly,
                message: "Sandbox scope is read-only: docs/a.md".into(),
            },
        );
        assert_eq!(
            (denial.kind, denial.operation, denial.target.as_str()),
            (Kind::Filesystem, Operation::Write, "docs/a.md")
        );
    }

    #[test]
    fn a_limit_kill_names_its_limit() {
        let denial = Denial::limit_kill("sh", &LimitExceeded::Cpu { seconds: 2 });
        assert_eq!(
            (denial.kind, denial.operation, denial.reason),
            (Kind::Limit, Operation::Execute, Reason::CpuLimit)
        );
        assert_eq!(denial.message, "Program CPU time exceeded 2 seconds");
        let denial = Denial::limit_kill("sh", &LimitExceeded::Memory { bytes: 64 });
        assert_eq!(denial.reason, Reason::MemoryLimit);
    }

    #[test]
    fn a_gateway_record_converts() {
        let record = gateway::Denial {
            at: SystemTime::UNIX_EPOCH,
            destination: "example.com:443".into(),
            reason: gateway::DenialReason::PrivateDestination,
            request: None,
            detail: None,
        };
        let denial = Denial::from(&record);
        assert_eq!(denial.kind, Kind::Network);
        assert_eq!(denial.operation, Operation::Connect);
        assert_eq!(denial.target, "example.com:443");
        assert_eq!(denial.reason, Reason::PrivateDestination);
        assert_eq!(denial.at, SystemTime::UNIX_EPOCH);
        assert_eq!(denial.message, record.reason.text());
    }

    #[test]
    fn a_memory_budget_refusal_is_a_network_denial_named_memory_budget() {
        let record = gateway::Denial {
            at: SystemTime::UNIX_EPOCH,
            destination: "*".into(),
            reason: gateway::DenialReason::MemoryBudget,
            request: None,
            detail: None,
        };
        let denial = Denial::from(&record);
        assert_eq!(
            (denial.kind, denial.operation, denial.reason.name()),
            (Kind::Network, Operation::Connect, "memory_budget")
        );
        assert_eq!(denial.message, record.reason.text());
    }

    #[test]
    fn a_failed_upstream_keeps_its_words_in_detail_and_message() {
        let record = gateway::Denial {
            at: SystemTime::UNIX_EPOCH,
            destination: "self-signed.test:443".into(),
            reason: gateway::DenialReason::UpstreamCertificate,
            request: None,
            detail: Some("invalid peer certificate: UnknownIssuer".into()),
        };
        let denial = Denial::from(&record);
        assert_eq!(denial.reason.name(), "upstream_certificate");
        assert_eq!(denial.detail.as_deref(), record.detail.as_deref());
        assert!(
            denial
                .message
                .ends_with(": invalid peer certificate: UnknownIssuer"),
            "{}",
            denial.message
        );
    }
}
