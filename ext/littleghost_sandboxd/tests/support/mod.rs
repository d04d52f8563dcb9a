//! Starts littleghost-sandboxd on ephemeral ports over a temporary root and
//! speaks to it as a client would: HTTP/1.1 for the files, tonic for gRPC.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use littleghost_sandbox_proto::littleghost::v1::denial_service_client::DenialServiceClient;
use littleghost_sandbox_proto::process::v1::process_service_client::ProcessServiceClient;
use littleghost_sandbox_proto::process::v1::{ExecuteRequest, ExecuteResponse, ProcessConfig};
use tonic::transport::Channel;

pub struct Daemon {
    pub child: Child,
    pub grpc: String,
    pub rest: String,
    pub root: PathBuf,
    pub token: Option<String>,
    _dir: tempfile::TempDir,
}

/// How the daemon is started.
#[derive(Default)]
pub struct Options<'a> {
    pub policy: Option<&'a str>,
    pub token: Option<&'a str>,
    /// `--path NAME=DIR` flags.
    pub paths: Vec<(&'a str, PathBuf)>,
    /// `--health-without-token`.
    pub health_without_token: bool,
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_littleghost-sandboxd")
}

impl Daemon {
    pub fn start(options: Options<'_>) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
        std::fs::create_dir(&root).unwrap();
        let mut command = Command::new(binary());
        command
            .arg("--root")
            .arg(&root)
            .args(["--grpc", "127.0.0.1:0", "--rest", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(policy) = options.policy {
            let path = dir.path().join("policy.json");
            std::fs::write(&path, policy).unwrap();
            command.arg("--policy").arg(path);
        }
        if options.health_without_token {
            command.arg("--health-without-token");
        }
        for (name, dir) in &options.paths {
            command.arg(format!("--path={name}={}", dir.display()));
        }
        if let Some(token) = options.token {
            let path = dir.path().join("token");
            std::fs::write(&path, format!("{token}\n")).unwrap();
            command.arg("--token-file").arg(path);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let rest_of = |key: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(key))
                .unwrap_or_else(|| panic!("no {key} in {line:?}"))
                .to_string()
        };
        assert!(
            line.starts_with("littleghost-sandboxd listening grpc="),
            "{line:?}"
        );
        Daemon {
            grpc: rest_of("grpc="),
            rest: rest_of("rest="),
            child,
            root,
            token: options.token.map(str::to_string),
            _dir: dir,
        }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// One HTTP request with the daemon's token (if any): (status, body).
    pub fn http(&self, method: &str, target: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let token = self.token.as_deref().map(|t| format!("Bearer {t}"));
        http(&self.rest, method, target, token.as_deref(), body)
    }

    pub fn json(&self, method: &str, target: &str, body: &[u8]) -> (u16, serde_json::Value) {
        let (status, body) = self.http(method, target, body);
        (
            status,
            serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        )
    }

    pub async fn channel(&self) -> Channel {
        tonic::transport::Endpoint::from_shared(format!("http://{}", self.grpc))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    pub async fn processes(&self) -> ProcessServiceClient<Channel> {
        ProcessServiceClient::new(self.channel().await)
    }

    pub async fn denial_client(&self) -> DenialServiceClient<Channel> {
        DenialServiceClient::new(self.channel().await)
    }

    /// `Execute` with the daemon's token.
    pub async fn execute(&self, argv: &[&str]) -> Result<ExecuteResponse, tonic::Status> {
        let request = self.request(ExecuteRequest {
            config: Some(config(argv)),
        });
        self.processes()
            .await
            .execute(request)
            .await
            .map(|r| r.into_inner())
    }

    /// A request carrying the daemon's token.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(token) = &self.token {
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        request
    }

    pub fn terminate(&self) {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.child.id() as i32).unwrap(),
            rustix::process::Signal::TERM,
        )
        .unwrap();
    }

    /// Waits (bounded) for the daemon to exit.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the daemon did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn config(argv: &[&str]) -> ProcessConfig {
    ProcessConfig {
        command: argv.iter().map(|a| a.to_string()).collect(),
        ..ProcessConfig::default()
    }
}

/// A request with the daemon's token and one extra header line: (status, body).
pub fn request_with(
    daemon: &Daemon,
    method: &str,
    target: &str,
    header: &str,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(&daemon.rest).unwrap();
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n{header}\r\n",
        daemon.rest,
        body.len()
    );
    if let Some(token) = &daemon.token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let status = String::from_utf8_lossy(&response[..split])
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    (status, response[split + 4..].to_vec())
}

/// The status of a bodiless request carrying one extra header line.
pub fn http_with(address: &str, method: &str, target: &str, header: &str) -> u16 {
    let mut stream = TcpStream::connect(address).unwrap();
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n{header}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// One HTTP/1.1 request on a fresh connection: (status, body).
pub fn http(
    address: &str,
    method: &str,
    target: &str,
    authorization: Option<&str>,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(address).unwrap();
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(value) = authorization {
        head.push_str(&format!("Authorization: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, response[split + 4..].to_vec())
}

/// Whether some process's command line contains `marker`.
pub fn process_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|cmdline| {
                cmdline
                    .split(|b| *b == 0)
                    .any(|arg| arg == marker.as_bytes())
            })
            .unwrap_or(false)
    })
}

/// Waits (bounded) until `condition` holds; false if it never did.
pub fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}
