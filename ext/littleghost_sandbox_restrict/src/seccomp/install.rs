//! Handing the program over: as `struct sock_filter` bytes, in a memfd for
//! `bwrap --seccomp FD`, or installed on the calling thread.

use std::io::{Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;

use super::program::program;
use super::{Arch, Filter, Instruction};
use crate::error::{capability, Result};

/// The program as the bytes of a `struct sock_filter` array, which is what
/// `bwrap --seccomp FD` reads.
pub fn to_bytes(program: &[Instruction]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

/// The native filter's bytes, or CapabilityError where no filter exists for
/// this architecture (so `allow_subprocesses: false` fails closed).
pub fn native_filter_bytes(filter: &Filter) -> Result<Vec<u8>> {
    let arch = Arch::native().ok_or_else(|| {
        capability(format!(
            "the bubblewrap sandbox has no seccomp filter for {}",
            std::env::consts::ARCH
        ))
    })?;
    Ok(to_bytes(&program(arch, filter)))
}

/// Writes the native filter into a fresh memfd, rewound to the start, and
/// returns it. It is close-on-exec: the spawner keeps it open in bwrap only
/// (`SpawnOptions::keep_fds`), so a concurrent spawn never inherits it. Use
/// one per launch: bwrap reads from the shared file offset.
pub fn filter_fd(filter: &Filter) -> Result<OwnedFd> {
    let bytes = native_filter_bytes(filter)?;
    let unavailable = |_| {
        capability("the bubblewrap sandbox cannot prepare its seccomp filter (memfd_create failed)")
    };
    let fd = rustix::fs::memfd_create("littleghost-seccomp", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(unavailable)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&bytes)
        .and_then(|_| file.seek(SeekFrom::Start(0)).map(|_| ()))
        .map_err(|_| capability("the bubblewrap sandbox cannot prepare its seccomp filter"))?;
    Ok(OwnedFd::from(file))
}

/// Installs the native filter on the calling thread (and what it execs).
/// The caller must already have set `no_new_privs` (the Landlock backend's
/// `restrict_self` does). Used by the helper's `supervise` mode, in the
/// child it is about to exec, never in the Ruby process.
#[cfg(target_os = "linux")]
pub fn install(filter: &Filter) -> Result<()> {
    load(filter, 0).map(|_| ())
}

/// [`install`], returning the listener of the filter's notifications
/// (`SECCOMP_FILTER_FLAG_NEW_LISTENER`), for a filter that intercepts
/// `connect`. A notified call waits only killably once the supervisor has
/// received it (`SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`): a signal cannot
/// restart a `connect` the supervisor is already making.
#[cfg(target_os = "linux")]
pub fn install_with_listener(filter: &Filter) -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let flags =
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
    let fd = load(filter, flags)?;
    // SAFETY: with NEW_LISTENER the kernel returns a new descriptor we own.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int) })
}

#[cfg(target_os = "linux")]
fn load(filter: &Filter, flags: libc::c_ulong) -> Result<libc::c_long> {
    let arch = Arch::native().ok_or_else(|| {
        capability(format!(
            "no seccomp filter exists for {}",
            std::env::consts::ARCH
        ))
    })?;
    let mut filters: Vec<libc::sock_filter> = program(arch, filter)
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let fprog = libc::sock_fprog {
        len: u16::try_from(filters.len()).expect("the seccomp program fits in u16"),
        filter: filters.as_mut_ptr(),
    };
    // SAFETY: `fprog` points at `filters`, which outlives the call; the
    // kernel copies the program and keeps no pointer into our memory.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if result < 0 {
        return Err(capability(format!(
            "cannot install the seccomp filter: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(result)
}
