//! Mode `supervise`: runs one command under the Landlock backend.
//!
//! Usage: `littleghost-sandbox-helper supervise PLAN... -- COMMAND [ARGS...]`,
//! where PLAN is `littleghost_sandbox_restrict::landlock::Plan::to_args`
//! (the gem decides the policy; this mode only applies it).
//!
//! The helper becomes a child subreaper and forks. The child restricts
//! itself (Landlock + `no_new_privs` + seccomp, `landlock::restrict`) and
//! execs the command; the supervisor stays unrestricted, so it can reap and
//! kill whatever the command leaves behind:
//! - When the command exits, every remaining descendant is killed (SIGKILL;
//!   orphans are reparented to the supervisor, so none escapes by
//!   daemonizing) and the supervisor exits with the command's status: its
//!   exit code, or the same signal re-raised.
//! - SIGTERM, SIGINT, SIGHUP or SIGQUIT sent to the supervisor go to every
//!   descendant; whatever is alive `GRACE` later is killed. The gem's own
//!   grace (TERM, then KILL after 500 ms) is longer, so the tree is gone
//!   before the gem's SIGKILL can reach the supervisor.
//! - The command gets SIGKILL if the supervisor dies (`PR_SET_PDEATHSIG`).
//! - Under network `:allowlist` (`--network gateway FD`) the child
//!   hands the listener of its seccomp filter to the supervisor over a
//!   socket pair before it execs, and a thread of the supervisor answers
//!   every `connect` of the child and its descendants (see `intercept`).
//!
//! Exit 125 with a message on stderr when the plan is malformed or the child
//! cannot be restricted (nothing ran), 127 when the command cannot be
//! executed.

use std::ffi::CString;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use littleghost_sandbox_restrict::landlock::{restrict, Network, Plan};

use crate::intercept;

/// How long descendants get between a forwarded termination signal and SIGKILL.
const GRACE: Duration = Duration::from_millis(200);
const SETUP_FAILED: u8 = 125;
const NOT_EXECUTABLE: u8 = 127;
const FORWARDED: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

pub fn main(args: Vec<String>) -> ExitCode {
    let (plan, command) = match Plan::from_args(&args) {
        Ok(parsed) => parsed,
        Err(error) => return fail(&error.to_string()),
    };
    let Ok(argv) = command
        .iter()
        .map(|arg| CString::new(arg.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
    else {
        return fail("an argument contains a NUL byte");
    };
    // SAFETY: plain prctl on this process; no pointers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return fail("cannot become a child subreaper");
    }
    let watched = signal_set(&[&FORWARDED[..], &[libc::SIGCHLD]].concat());
    let mut previous = empty_set();
    // SAFETY: both sets are valid sigset_t values owned by this frame.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &watched, &mut previous) };
    let supervisor = std::process::id() as libc::pid_t;
    // The carrier of the filter's listener, from the child to the supervisor.
    let carrier = match &plan.network {
        Network::Gateway(socket) => match UnixStream::pair() {
            Ok((ours, theirs)) => Some((ours, theirs, format!("/proc/self/fd/{socket}"))),
            Err(_) => return fail("cannot make the socket pair for the connect listener"),
        },
        Network::None | Network::Inherit => None,
    };
    // SAFETY: the helper is single-threaded, so the child may allocate and
    // run ordinary Rust code until it execs or exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return fail("fork failed");
    }
    if child == 0 {
        let carrier = carrier.as_ref().map(|(_, theirs, _)| theirs);
        run_child(&plan, &argv, &previous, supervisor, carrier);
    }
    if let Some((ours, theirs, socket)) = carrier {
        // Ours alone: the pair ends when the child execs or dies.
        drop(theirs);
        std::thread::spawn(move || intercept::serve(ours, socket.into()));
    }
    let status = supervise(child, &watched);
    end_descendants();
    exit_like(status)
}

/// In the forked child: restrict, hand the `connect` listener to the
/// supervisor over `carrier` (under `:allowlist`), then exec. Never returns.
fn run_child(
    plan: &Plan,
    argv: &[CString],
    mask: &libc::sigset_t,
    supervisor: libc::pid_t,
    carrier: Option<&UnixStream>,
) -> ! {
    // SAFETY: prctl/getppid/signal/sigprocmask on this process; `mask` is valid.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != supervisor {
            libc::_exit(i32::from(SETUP_FAILED));
        }
        // Rust's runtime ignores SIGPIPE in the helper, and an ignored signal
        // stays ignored across execve: the command gets the default action
        // back, as the gem's other launches give it (`yes | head` ends `yes`).
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::sigprocmask(libc::SIG_SETMASK, mask, std::ptr::null_mut());
    }
    let listener = match restrict(plan) {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("littleghost-sandbox-helper supervise: {error}");
            // SAFETY: ends this child without running the parent's destructors.
            unsafe { libc::_exit(i32::from(SETUP_FAILED)) };
        }
    };
    // The listener reaches the supervisor and no one else: the command
    // inherits neither it nor the carrier (both close-on-exec, closed here).
    if let (Some(listener), Some(carrier)) = (listener, carrier) {
        if let Err(error) = intercept::send_descriptor(carrier, &listener) {
            eprintln!("littleghost-sandbox-helper supervise: cannot hand over the connect listener: {error}");
            // SAFETY: as above.
            unsafe { libc::_exit(i32::from(SETUP_FAILED)) };
        }
    }
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // SAFETY: `pointers` is a NULL-terminated array of C strings that live
    // until execvp replaces the process or returns.
    unsafe { libc::execvp(pointers[0], pointers.as_ptr()) };
    eprintln!(
        "littleghost-sandbox-helper supervise: cannot execute {}: {}",
        argv[0].to_string_lossy(),
        std::io::Error::last_os_error()
    );
    // SAFETY: as above.
    unsafe { libc::_exit(i32::from(NOT_EXECUTABLE)) }
}

/// Waits for the command, forwarding termination signals to the whole tree;
/// returns its wait status.
fn supervise(child: libc::pid_t, watched: &libc::sigset_t) -> libc::c_int {
    let mut deadline: Option<Instant> = None;
    loop {
        if let Some(status) = reap(child) {
            return status;
        }
        let timeout = deadline.map(|at| at.saturating_duration_since(Instant::now()));
        if timeout == Some(Duration::ZERO) {
            signal_descendants(libc::SIGKILL);
            deadline = None;
            continue;
        }
        let signal = wait_signal(watched, timeout);
        if FORWARDED.contains(&signal) {
            signal_descendants(signal);
            deadline.get_or_insert_with(|| Instant::now() + GRACE);
        }
    }
}

/// Reaps every exited child; the command's status when it is among them.
fn reap(command: libc::pid_t) -> Option<libc::c_int> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return found;
        }
        if pid == command {
            found = Some(status);
        }
    }
}

/// The next watched signal, or 0 after `timeout`.
fn wait_signal(watched: &libc::sigset_t, timeout: Option<Duration>) -> libc::c_int {
    // SAFETY: `watched` is valid; a null siginfo pointer is allowed.
    unsafe {
        match timeout {
            None => libc::sigwaitinfo(watched, std::ptr::null_mut()),
            Some(left) => {
                let spec = libc::timespec {
                    // `as _`: time_t's width differs between glibc and musl.
                    tv_sec: left.as_secs().min(i32::MAX as u64) as _,
                    tv_nsec: libc::c_long::from(left.subsec_nanos() as i32),
                };
                libc::sigtimedwait(watched, std::ptr::null_mut(), &spec)
            }
        }
    }
    .max(0)
}

/// Kills every descendant and reaps until none is left. Every descendant
/// has a chain of parents up to one of our children (orphans are reparented
/// to us), so without children there is nothing to find and `/proc` is not
/// scanned (the common case, and most of this mode's cost).
fn end_descendants() {
    loop {
        if !has_children() {
            return;
        }
        signal_descendants(libc::SIGKILL);
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        if unsafe { libc::waitpid(-1, &mut status, 0) } < 0 {
            return; // ECHILD: nothing left
        }
    }
}

/// Whether any child (live or not yet reaped) remains.
fn has_children() -> bool {
    // SAFETY: `info` is a valid, zeroed siginfo_t; WNOHANG | WNOWAIT only
    // inspects the children and reaps none. It fails (ECHILD) without any.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::WSTOPPED | libc::WCONTINUED,
        ) == 0
    }
}

fn signal_descendants(signal: libc::c_int) {
    for pid in descendants(std::process::id() as libc::pid_t) {
        // SAFETY: kill has no memory effects; a vanished pid is ESRCH.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Every process below `root`, from `/proc/*/stat` parent links.
fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut links: Vec<(libc::pid_t, libc::pid_t)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // "pid (comm) state ppid ...": comm may hold spaces and ')'.
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
            if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
                links.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            links
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    found.remove(0);
    found
}

/// Exits with the command's code, or dies of the command's signal.
fn exit_like(status: libc::c_int) -> ExitCode {
    if libc::WIFEXITED(status) {
        return ExitCode::from(libc::WEXITSTATUS(status) as u8);
    }
    let signal = libc::WTERMSIG(status);
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: resets one signal's disposition, unblocks it and raises it on
    // this process; the rlimit pointer is valid.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let only = signal_set(&[signal]);
        libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::raise(signal);
    }
    ExitCode::from(128u8.wrapping_add(signal as u8))
}

fn empty_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the zeroed set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        set
    }
}

fn signal_set(signals: &[libc::c_int]) -> libc::sigset_t {
    let mut set = empty_set();
    for &signal in signals {
        // SAFETY: `set` is an initialised sigset_t.
        unsafe { libc::sigaddset(&mut set, signal) };
    }
    set
}

fn fail(message: &str) -> ExitCode {
    eprintln!("littleghost-sandbox-helper supervise: {message}");
    ExitCode::from(SETUP_FAILED)
}
