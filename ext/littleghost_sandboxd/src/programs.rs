//! Programs: every one prepared by the core's launcher (confined by the
//! policy), started by the core's process runner in its own cgroup with the
//! policy's limits, owned by the daemon so shutdown ends it. These calls
//! block (the runner is poll-driven): the servers run them on blocking threads.
//!
//! A program started on a terminal (`Start` with a `pty`) is confined the
//! same way; only its stdio differs: a pseudo-terminal of its own, whose
//! master the session writes input to and resizes.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use littleghost_sandbox_core::backend::bubblewrap as bw;
use littleghost_sandbox_core::denial::Denial;
use littleghost_sandbox_core::error::Error;
use littleghost_sandbox_core::launch::prepare::{Kind, LaunchError, Prepared, ScopeCall};
use littleghost_sandbox_core::limits::plan::{Plan, ProgramEnd};
use littleghost_sandbox_core::process::capture::CaptureMode;
use littleghost_sandbox_core::process::error::SpawnError;
use littleghost_sandbox_core::process::running::{
    write_stdin, Exit, RunningProcess, TerminationStep,
};
use littleghost_sandbox_core::process::terminal::{self, Terminal, WindowSize};
use littleghost_sandbox_core::process::Launch;
use rustix::process::Signal;

use crate::confinement::Confinement;

/// How long one wait for news lasts before the caller's checks run again.
const SLICE: Duration = Duration::from_millis(50);

/// What a caller asked to run.
#[derive(Debug, Clone)]
pub struct Command {
    pub argv: Vec<String>,
    pub environment: Vec<(String, String)>,
    /// Relative to the root (B.7); None: the root.
    pub cwd: Option<PathBuf>,
    /// The call's narrower scope (`x-littleghost-scope`), if any.
    pub scope: Option<ScopeCall>,
}

/// Why a program could not run as asked.
#[derive(Debug)]
pub enum Failure {
    /// The core refused the launch (the documented class of its error).
    Refused(Error),
    /// The working directory the caller wrote is refused (outside the
    /// root, not a path) or, `missing`, does not exist (B.7); the error
    /// is worded as the core words it.
    WorkingDirectory { missing: bool, error: Error },
    /// The runner could not start it.
    Spawn(SpawnError),
    /// The caller's deadline passed; the program was ended.
    TimedOut,
    /// The caller went away; the program was ended.
    Cancelled,
}

impl From<Box<LaunchError<Error>>> for Failure {
    fn from(error: Box<LaunchError<Error>>) -> Failure {
        let working_directory = match *error {
            LaunchError::CwdRefused { .. } => Some(false),
            LaunchError::CwdMissing { .. } => Some(true),
            LaunchError::Rule(_) | LaunchError::Caller(_) => None,
        };
        let error = error.into_caller(|core| core);
        match working_directory {
            Some(missing) => Failure::WorkingDirectory { missing, error },
            None => Failure::Refused(error),
        }
    }
}

/// A program running, with what must live as long as it.
pub struct Program {
    pub process: RunningProcess,
    pub prepared: Prepared,
    pub plan: Plan,
    /// It runs on a terminal: its stdin is the terminal's master.
    pub terminal: bool,
}

impl Program {
    /// Prepares and starts `command` under the confinement.
    pub fn start(
        confinement: &Confinement,
        kind: Kind,
        command: Command,
        mode: CaptureMode,
        keep_stdin: bool,
    ) -> Result<Program, Failure> {
        let (prepared, plan, launch) = Self::prepare(confinement, kind, command)?;
        let process = RunningProcess::start_limited(
            &launch,
            &plan.cgroup,
            mode,
            keep_stdin,
            Some(&confinement.owner),
        )
        .map_err(Failure::Spawn)?;
        Ok(Program {
            process,
            prepared,
            plan,
            terminal: false,
        })
    }

    /// [`start`](Self::start) on a new terminal sized `size` (else 0 by 0):
    /// a session whose output is all stdout.
    pub fn start_on_terminal(
        confinement: &Confinement,
        command: Command,
        mode: CaptureMode,
        size: Option<WindowSize>,
    ) -> Result<Program, Failure> {
        let (prepared, plan, mut launch) = Self::prepare(confinement, Kind::Session, command)?;
        // The program's controlling terminal is this one, which only its own
        // launch shares (docs/security.md).
        bw::keep_session(&mut launch.argv);
        let terminal = Terminal::open(size).map_err(|error| {
            Failure::Refused(Error::Capability(format!(
                "cannot open a pseudo-terminal: {error}"
            )))
        })?;
        let process = RunningProcess::start_on_terminal(
            &launch,
            &plan.cgroup,
            mode,
            terminal,
            Some(&confinement.owner),
        )
        .map_err(Failure::Spawn)?;
        Ok(Program {
            process,
            prepared,
            plan,
            terminal: true,
        })
    }

    /// The confined launch of `command` and its limits.
    fn prepare(
        confinement: &Confinement,
        kind: Kind,
        command: Command,
    ) -> Result<(Prepared, Plan, Launch), Failure> {
        let prepared = confinement
            .prepare(
                kind,
                command.argv,
                command.cwd,
                command.environment,
                command.scope,
            )
            .map_err(Failure::from)?;
        let plan = confinement.limits_plan().map_err(Failure::Refused)?;
        if plan.sampled_memory_bytes.is_some() {
            return Err(Failure::Refused(Error::Capability(
                "process_limits memory_bytes needs a launch cgroup with the memory controller, \
                 which this host cannot make"
                    .into(),
            )));
        }
        let launch = Launch {
            argv: prepared.argv.clone(),
            environment: prepared.environment.clone(),
            inherit_environment: prepared.inherit_environment,
            chdir: prepared.chdir.clone(),
            cpu_rlimit: plan.cpu_rlimit(),
            file_bytes: None,
            spawn_options: prepared.spawn.clone(),
        };
        Ok((prepared, plan, launch))
    }

    /// Waits until the program ended and its output is read, its deadline
    /// passed or `cancelled` is set; the latter two end it first.
    pub fn wait(&self, deadline: Option<Instant>, cancelled: &AtomicBool) -> Result<(), Failure> {
        while !self.process.finished() {
            if cancelled.load(Ordering::Relaxed) {
                self.end();
                return Err(Failure::Cancelled);
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                self.end();
                return Err(Failure::TimedOut);
            }
            self.process.notifier().wait(SLICE, None);
            self.process.notifier().clear();
        }
        Ok(())
    }

    /// 17.12: TERM to the whole tree, KILL after the grace.
    pub fn end(&self) {
        let mut termination = self.process.begin_termination();
        while let TerminationStep::Wait(pause) = termination.step() {
            std::thread::sleep(pause);
        }
    }

    /// The exit code sandboxd reports: the status, or 128 + the signal that
    /// ended it (the shell's convention).
    pub fn exit_code(&self) -> i32 {
        match self.process.exit() {
            Some(exit @ Exit::Status(_)) => exit
                .code()
                .or(exit.signal().map(|signal| 128 + signal))
                .unwrap_or(-1),
            _ => -1,
        }
    }

    /// The limit that ended the program, as a denial, if one did (L.2).
    pub fn limit_denial(&self) -> Option<Denial> {
        let program = &self.prepared.program;
        if let Some(exceeded) = self.process.limit_exceeded() {
            return Some(Denial::limit_kill(program, &exceeded));
        }
        let end = self
            .process
            .exit()
            .map(Exit::program_end)
            .unwrap_or(ProgramEnd {
                signal: None,
                code: None,
            });
        if let Some(exceeded) = self.plan.rlimit_kill(end) {
            return Some(Denial::limit_kill(program, &exceeded));
        }
        self.process
            .tasks_refused()
            .map(|tasks| Denial::tasks_refused(program, tasks))
    }
}

/// The started programs a caller can reach by id (`Start`'s InitEvent).
#[derive(Default)]
pub struct Sessions {
    running: Mutex<HashMap<i32, Arc<Session>>>,
}

/// One started program and whether its stdin is still open.
pub struct Session {
    pub program: Program,
    stdin: Mutex<Option<Arc<OwnedFd>>>,
    /// The terminal's master, for a program started on one.
    terminal: Option<Arc<OwnedFd>>,
}

impl Sessions {
    pub fn insert(&self, program: Program) -> Arc<Session> {
        let stdin = program.process.stdin();
        let terminal = stdin.clone().filter(|_| program.terminal);
        let session = Arc::new(Session {
            program,
            stdin: Mutex::new(stdin),
            terminal,
        });
        self.lock()
            .insert(session.program.process.pid(), session.clone());
        session
    }

    pub fn get(&self, id: i32) -> Option<Arc<Session>> {
        self.lock().get(&id).cloned()
    }

    pub fn remove(&self, id: i32) {
        self.lock().remove(&id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Arc<Session>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why stdin could not take the bytes.
#[derive(Debug)]
pub enum StdinError {
    Closed,
    Io(std::io::Error),
}

/// Why a terminal could not be resized.
#[derive(Debug)]
pub enum ResizeError {
    NoTerminal,
    Io(std::io::Error),
}

impl Session {
    /// Writes all of `bytes` to the program's stdin (waiting while the pipe is full).
    pub fn write(&self, bytes: &[u8]) -> Result<(), StdinError> {
        let fd = self.stdin.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let fd = fd.ok_or(StdinError::Closed)?;
        let mut rest = bytes;
        while !rest.is_empty() {
            match write_stdin(&fd, rest) {
                Ok(written) => rest = &rest[written..],
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    if self.program.process.finished() {
                        return Err(StdinError::Closed);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Err(StdinError::Closed)
                }
                // A terminal whose program and its descendants all ended.
                Err(error)
                    if error.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error())
                        && self.terminal.is_some() =>
                {
                    return Err(StdinError::Closed)
                }
                Err(error) => return Err(StdinError::Io(error)),
            }
        }
        Ok(())
    }

    /// Closes stdin: the program reads end of file. On a terminal that is
    /// its end-of-file character (Ctrl-D): closing the master would hang
    /// the program up instead.
    pub fn close_stdin(&self) -> Result<(), StdinError> {
        if let Some(master) = &self.terminal {
            let end = terminal::end_of_file(master.as_ref()).map_err(StdinError::Io)?;
            return self.write(&[end]);
        }
        self.stdin.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.program.process.close_stdin();
        Ok(())
    }

    /// Sets the window size of the program's terminal.
    pub fn resize(&self, size: WindowSize) -> Result<(), ResizeError> {
        let master = self.terminal.as_ref().ok_or(ResizeError::NoTerminal)?;
        terminal::resize(master.as_ref(), size).map_err(ResizeError::Io)
    }

    /// Signals the program's process group.
    pub fn signal(&self, signal: Signal) {
        self.program.process.signal_group(signal);
    }
}
