//! Process-group signals and liveness, the building blocks of 17.12.
//!
//! Liveness starts from `kill(0, -pgid)` (ESRCH: gone, EPERM: alive). A
//! member that already died but was orphaned stays in the group as a zombie
//! until init reaps it, which `kill` cannot tell apart from a live process;
//! on Linux a "yes" is therefore confirmed from `/proc`, so a group whose
//! members are all dead is not waited on (or signalled) for the full grace.

use rustix::io::Errno;
use rustix::process::{kill_process_group, test_kill_process_group, Signal};

use super::spawn::pid_of;

pub use rustix::process::Signal as GroupSignal;

/// Sends `signal` to every member of group `pgid`; ESRCH (gone) and EPERM
/// are ignored (17.12 step 3).
pub fn signal_group(pgid: i32, signal: Signal) {
    let _ = kill_process_group(pid_of(pgid), signal);
}

/// Whether any process of group `pgid` is alive (zombies do not count).
pub fn group_alive(pgid: i32) -> bool {
    match test_kill_process_group(pid_of(pgid)) {
        Ok(()) | Err(Errno::PERM) => live_member_listed(pgid).unwrap_or(true),
        Err(_) => false,
    }
}

/// Scans `/proc` for a non-zombie member of `pgid`; None if `/proc` is unusable.
fn live_member_listed(pgid: i32) -> Option<bool> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let listing = std::fs::read_dir("/proc").ok()?;
    let mut saw_any = false;
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        saw_any = true;
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue;
        };
        if let Some((state, group)) = parse_stat(&stat) {
            if group == pgid && !matches!(state, 'Z' | 'X' | 'x') {
                return Some(true);
            }
        }
    }
    // An empty listing means /proc is not what we think it is: do not trust it.
    saw_any.then_some(false)
}

/// Every descendant of `leader` as `(pid, pgrp)`, from a `/proc` scan
/// (empty where `/proc` is unusable).
///
/// A child that starts its own group or session (bwrap's sandbox with
/// `--new-session`) is not reached by signalling the leader's group, and one
/// that is still in it may leave it a moment later. It is meant to die with
/// its parent (`PR_SET_PDEATHSIG`), but bwrap sets that link only once its
/// setup is done: one killed earlier outlives everything, reparented to init.
/// Termination therefore signals these processes and their groups too, found
/// while the leader is still alive to be their parent.
pub fn descendants(leader: i32) -> Vec<(i32, i32)> {
    if !cfg!(target_os = "linux") {
        return Vec::new();
    }
    let Ok(listing) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, ppid, pgrp) of every readable process.
    let mut table = Vec::new();
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((ppid, pgrp)) = parse_parent_and_group(&stat) {
            table.push((pid, ppid, pgrp));
        }
    }
    let mut found: Vec<(i32, i32)> = Vec::new();
    let mut parents = vec![leader];
    while let Some(parent) = parents.pop() {
        for &(pid, ppid, pgrp) in &table {
            if ppid == parent && pid != leader && !found.iter().any(|&(seen, _)| seen == pid) {
                found.push((pid, pgrp));
                parents.push(pid);
            }
        }
    }
    found
}

/// Sends `signal` to one process (ESRCH and EPERM ignored).
pub fn signal_process(pid: i32, signal: Signal) {
    let _ = rustix::process::kill_process(pid_of(pid), signal);
}

/// Whether process `pid` is alive (zombies do not count).
pub fn process_alive(pid: i32) -> bool {
    match rustix::process::test_kill_process(pid_of(pid)) {
        Ok(()) | Err(Errno::PERM) => {
            if !cfg!(target_os = "linux") {
                return true;
            }
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Ok(stat) => !matches!(parse_stat(&stat), Some(('Z' | 'X' | 'x', _))),
                Err(_) => false,
            }
        }
        Err(_) => false,
    }
}

/// Whether every live process of `groups` and `members` is deaf to TERM
/// ([`deaf_to_term`]), so that only KILL can end what lingers and waiting out
/// the grace would serve nobody. False when nothing is alive, when one
/// process could still act on TERM, or where `/proc` cannot tell (then the
/// grace runs as before).
pub fn only_deaf_to_term(groups: &[i32], members: &[i32]) -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    let Ok(listing) = std::fs::read_dir("/proc") else {
        return false;
    };
    let mut live = 0usize;
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((state, group)) = parse_stat(&stat) else {
            continue;
        };
        if matches!(state, 'Z' | 'X' | 'x') || !(groups.contains(&group) || members.contains(&pid))
        {
            continue;
        }
        live += 1;
        match std::fs::read_to_string(format!("/proc/{pid}/status")) {
            Ok(status) if deaf_to_term(&status) => {}
            // Gone since the stat was read: it no longer lingers.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => live -= 1,
            _ => return false,
        }
    }
    live > 0
}

/// Whether a process, by its `/proc/N/status` text, can do nothing with a
/// TERM sent to it:
/// - it ignores TERM (`SigIgn`): the signal is discarded;
/// - it is the init of a pid namespace below ours (`NSpid` ends in 1) with
///   no TERM handler (`SigCgt`): the kernel drops TERM sent from an
///   ancestor namespace to such an init. That is bwrap's sandbox process
///   while it sets up the namespaces (before the user's program exists);
///   once the program runs, the program gets TERM itself and the init ends
///   with it.
///
/// A process that merely blocks TERM (the Landlock supervisor waits for it
/// with `sigtimedwait`) or catches it is not deaf: it may act on it during
/// the grace.
pub fn deaf_to_term(status: &str) -> bool {
    let term_bit = 1u64 << (libc::SIGTERM - 1);
    let mut ignored = false;
    let mut caught = false;
    let mut namespace_init = false;
    for line in status.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let mask = || u64::from_str_radix(value.trim(), 16).unwrap_or(0);
        match key {
            "SigIgn" => ignored = mask() & term_bit != 0,
            "SigCgt" => caught = mask() & term_bit != 0,
            "NSpid" => {
                let levels: Vec<&str> = value.split_whitespace().collect();
                namespace_init = levels.len() > 1 && levels.last() == Some(&"1");
            }
            _ => {}
        }
    }
    ignored || (namespace_init && !caught)
}

/// `(ppid, pgrp)` from a `/proc/N/stat` line.
fn parse_parent_and_group(stat: &str) -> Option<(i32, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(1);
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((ppid, pgrp))
}

/// `(state, pgrp)` from a `/proc/N/stat` line: "pid (comm) S ppid pgrp ...".
/// The command may contain spaces and parentheses, so fields start after the
/// last `)`.
pub fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn stat_lines_with_odd_command_names() {
        assert_eq!(parse_stat("123 (sleep) S 1 123 123 0 -1"), Some(('S', 123)));
        assert_eq!(parse_stat("124 (a) b (c)) Z 1 99 99 0"), Some(('Z', 99)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(
            parse_parent_and_group("124 (a) b (c)) Z 1 99 99 0"),
            Some((1, 99))
        );
    }

    #[test]
    fn term_is_useless_to_an_ignoring_process_and_a_handlerless_namespace_init() {
        let status = |ign: &str, cgt: &str, nspid: &str| {
            format!("Name:\tbwrap\nNSpid:\t{nspid}\nSigBlk:\t0000000000010000\nSigIgn:\t{ign}\nSigCgt:\t{cgt}\n")
        };
        let none = "0000000000000000";
        let term = "0000000000004000";
        // bwrap's sandbox process setting up its namespace: init, no handler.
        assert!(deaf_to_term(&status(none, none, "31224\t1")));
        // The same init with a TERM handler receives it.
        assert!(!deaf_to_term(&status(none, term, "31224\t1")));
        // The program inside (pid 2 there) and a plain process get TERM.
        assert!(!deaf_to_term(&status(none, none, "31225\t2")));
        assert!(!deaf_to_term(&status(none, none, "31223")));
        // `trap '' TERM` anywhere.
        assert!(deaf_to_term(&status(term, none, "31223")));
        assert!(!deaf_to_term("garbage"));
    }

    #[test]
    fn a_group_that_ignores_term_is_deaf_and_one_that_would_die_is_not() {
        use std::os::unix::process::CommandExt;
        let mut deaf = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"])
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(deaf.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let mut plain = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let (deaf_pid, plain_pid) = (deaf.id() as i32, plain.id() as i32);
        // The shell's `sleep 1` child ignores TERM too (inherited).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !only_deaf_to_term(&[deaf_pid], &[]) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(only_deaf_to_term(&[deaf_pid], &[]));
        assert!(!only_deaf_to_term(&[deaf_pid, plain_pid], &[]));
        assert!(!only_deaf_to_term(&[plain_pid], &[]));
        assert!(
            !only_deaf_to_term(&[0x3ff_ffff], &[]),
            "nothing alive is not deaf"
        );
        signal_group(deaf_pid, Signal::KILL);
        signal_group(plain_pid, Signal::KILL);
        deaf.wait().unwrap();
        plain.wait().unwrap();
    }

    #[test]
    fn a_group_without_members_is_dead_and_our_own_is_alive() {
        let me = rustix::process::getpgrp().as_raw_nonzero().get();
        assert!(group_alive(me));
        // pid 0x3ffffff is far above any pid_max default.
        assert!(!group_alive(0x3ff_ffff));
    }

    #[test]
    fn a_grandchild_in_its_own_session_is_found() {
        // sh (its own group) starts setsid sleep, which leads a new session.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 30 & echo $!; wait"])
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        // setsid may fork once more when it already leads a group; wait for the session.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let groups = loop {
            let found = descendants(child.id() as i32);
            let groups: Vec<i32> = found
                .iter()
                .map(|&(_, group)| group)
                .filter(|&group| group != child.id() as i32)
                .collect();
            if !groups.is_empty() || std::time::Instant::now() > deadline {
                assert!(found.iter().any(|&(pid, _)| pid == grandchild) || !groups.is_empty());
                break groups;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(!groups.contains(&(child.id() as i32)));
        assert_eq!(groups.len(), 1, "{groups:?}");
        for group in groups.iter().chain([&(child.id() as i32)]) {
            signal_group(*group, Signal::KILL);
        }
        child.wait().unwrap();
    }
}
