//! `littleghost-sandbox-helper`: the one executable the gem ships beside its
//! extension, for work that must happen in a separate process around a child
//! (inside its namespaces, or between the gem and the child's `execve`).
//!
//! Usage: `littleghost-sandbox-helper MODE [ARGS...]`. Each mode is one
//! module with a `main(args) -> ExitCode`; the modes and their contracts are
//! documented in their modules. The extension finds this file next to itself
//! (`littleghost_sandbox_core::helper`).

use std::process::ExitCode;

#[cfg(target_os = "linux")]
mod intercept;
#[cfg(target_os = "linux")]
mod relay;
#[cfg(target_os = "linux")]
mod supervise;

/// A mode's entry point: its arguments after the mode name, its exit status.
type Mode = fn(Vec<String>) -> ExitCode;

/// Modes, by name; an unknown mode is a usage error.
#[cfg(target_os = "linux")]
const MODES: &[(&str, Mode)] = &[("relay", relay::main), ("supervise", supervise::main)];
#[cfg(not(target_os = "linux"))]
const MODES: &[(&str, Mode)] = &[];

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    forget_own_descriptor();
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    match MODES.iter().find(|(name, _)| *name == mode) {
        Some((_, run)) => run(args.collect()),
        None => {
            let names: Vec<&str> = MODES.iter().map(|(name, _)| *name).collect();
            eprintln!(
                "littleghost-sandbox-helper: unknown mode {mode:?} (modes: {})",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            );
            ExitCode::from(2)
        }
    }
}

/// The gem executes this helper from a sealed in-memory copy it passes as an
/// inherited descriptor (`/proc/self/fd/N`, or `/dev/fd/N` through
/// `execveat`). That descriptor is marked close-on-exec at once, so nothing
/// the helper runs inherits it.
#[cfg(target_os = "linux")]
fn forget_own_descriptor() {
    // SAFETY: getauxval returns the address of the NUL-terminated name the
    // kernel placed on this process's stack, or 0.
    let name = unsafe { libc::getauxval(libc::AT_EXECFN) } as *const libc::c_char;
    if name.is_null() {
        return;
    }
    // SAFETY: a NUL-terminated string that lives as long as the process.
    let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
    let Some(fd) = descriptor_of(name) else {
        return;
    };
    // SAFETY: fcntl on a descriptor number; a closed one fails harmlessly.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// N of an exec name `/proc/self/fd/N` or `/dev/fd/N`.
#[cfg(target_os = "linux")]
fn descriptor_of(name: &[u8]) -> Option<libc::c_int> {
    let number = name
        .strip_prefix(b"/proc/self/fd/")
        .or_else(|| name.strip_prefix(b"/dev/fd/"))?;
    let number = std::str::from_utf8(number).ok()?;
    number.parse().ok().filter(|fd| *fd > 2)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::descriptor_of;

    #[test]
    fn only_a_descriptor_exec_name_names_a_descriptor() {
        assert_eq!(descriptor_of(b"/proc/self/fd/4"), Some(4));
        assert_eq!(descriptor_of(b"/dev/fd/12"), Some(12));
        assert_eq!(descriptor_of(b"/dev/fd/1"), None);
        assert_eq!(descriptor_of(b"/gem/lib/littleghost-sandbox-helper"), None);
        assert_eq!(descriptor_of(b"/proc/self/fd/x"), None);
    }
}
