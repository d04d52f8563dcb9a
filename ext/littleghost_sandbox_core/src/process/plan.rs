//! What the child does, prepared in the parent: the data both start paths
//! ([`super::spawn`]'s fork and [`super::posix_spawn`]) consume. Kept apart so
//! neither path imports the other.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::Launch;

/// Everything the child does, prepared in the parent: after `fork` nothing
/// may allocate, and `posix_spawn` takes it as file actions and attributes.
pub(crate) struct ChildPlan {
    pub(crate) exec: DirectExec,
    pub(crate) chdir: Option<CString>,
    /// Child ends of the pipes, dup2'd onto 0, 1, 2 (all >= `first_free`).
    pub(crate) stdio: [RawFd; 3],
    /// `stdio` is a terminal's slave: the child leads a new session with it
    /// as its controlling terminal instead of only a new process group.
    pub(crate) terminal: bool,
    /// Sources dup2'd onto 3, 4, ... (all >= `first_free`).
    pub(crate) inherited: Vec<RawFd>,
    /// The first child descriptor that is neither stdio nor inherited.
    pub(crate) first_free: RawFd,
    /// v2: the launch cgroup's directory, which the child is cloned straight
    /// into (`clone3` with `CLONE_INTO_CGROUP`).
    pub(crate) cgroup_dir: Option<RawFd>,
    /// v2: the launch cgroup's `cgroup.procs`, written `0` first thing in a
    /// forked child where the kernel refuses `CLONE_INTO_CGROUP` (see
    /// [`crate::limits::launch`]).
    pub(crate) cgroup_procs: Option<RawFd>,
    pub(crate) cpu_rlimit: Option<crate::limits::plan::CpuRlimit>,
    pub(crate) file_bytes: Option<u64>,
}

/// The child's `execve`, prepared before the fork (nothing may allocate after it).
pub(crate) struct DirectExec {
    pub(crate) program: CString,
    pub(crate) argv: Vec<*const libc::c_char>,
    pub(crate) envp: Vec<*const libc::c_char>,
    /// Owns the strings `argv` and `envp` point into.
    _strings: Vec<CString>,
}

impl DirectExec {
    /// argv as given; the environment is the explicit set, over the host's when inheriting.
    pub(crate) fn new(program: &Path, launch: &Launch) -> io::Result<DirectExec> {
        let mut variables: Vec<(OsString, OsString)> = if launch.inherit_environment {
            std::env::vars_os().collect()
        } else {
            Vec::new()
        };
        for (name, value) in &launch.environment {
            variables.retain(|(existing, _)| existing.as_os_str() != OsStr::new(name));
            variables.push((name.into(), value.into()));
        }
        let argv: Vec<CString> = launch
            .argv
            .iter()
            .map(|arg| c_string(arg.as_bytes()))
            .collect::<io::Result<_>>()?;
        let envp: Vec<CString> = variables
            .iter()
            .map(|(name, value)| c_string(&[name.as_bytes(), b"=", value.as_bytes()].concat()))
            .collect::<io::Result<_>>()?;
        let pointers = |strings: &[CString]| -> Vec<*const libc::c_char> {
            strings
                .iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        let (argv_pointers, envp_pointers) = (pointers(&argv), pointers(&envp));
        Ok(DirectExec {
            program: c_string(program.as_os_str().as_bytes())?,
            argv: argv_pointers,
            envp: envp_pointers,
            _strings: argv.into_iter().chain(envp).collect(),
        })
    }

    /// Returns only if `execve` failed (errno says why).
    pub(crate) fn exec(&self) {
        // SAFETY: NUL-terminated strings and NULL-terminated arrays built in `new`.
        unsafe {
            libc::execve(
                self.program.as_ptr(),
                self.argv.as_ptr(),
                self.envp.as_ptr(),
            )
        };
    }
}

pub(crate) fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}
