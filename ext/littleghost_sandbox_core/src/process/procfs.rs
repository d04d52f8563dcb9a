//! Memory readers for session supervision (18.10): RSS summed over a root pid
//! and its descendants, found by following parent links in one snapshot.
//!
//! The parsing and summing are pure functions so they can be tested on
//! fixture text; only [`read_tree_rss`] touches the system.

use std::collections::HashMap;
use std::io;

use crate::error::{Error, Result};

/// What one process contributes to a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcEntry {
    pub ppid: u32,
    pub rss_bytes: u64,
}

/// Why a sample could not be taken. The binding turns these into
/// DependencyError with the io error as `cause`.
#[derive(Debug)]
pub enum SampleError {
    /// "process memory supervisor cannot snapshot /proc"
    Snapshot(io::Error),
    /// "process memory supervisor cannot read root process /proc/PID/status"
    Root(u32, io::Error),
    /// `ps` printed no rows.
    NoRows,
}

impl SampleError {
    /// The documented message (18.10).
    pub fn message(&self) -> String {
        match self {
            SampleError::Snapshot(_) => {
                "process memory supervisor cannot snapshot /proc".to_string()
            }
            SampleError::Root(pid, _) => {
                format!("process memory supervisor cannot read root process /proc/{pid}/status")
            }
            SampleError::NoRows => "process memory supervisor got no rows from /bin/ps".to_string(),
        }
    }

    /// The underlying OS error, if any.
    pub fn cause(&self) -> Option<&io::Error> {
        match self {
            SampleError::Snapshot(error) | SampleError::Root(_, error) => Some(error),
            SampleError::NoRows => None,
        }
    }
}

/// Parses `/proc/N/status`: `PPid:` and `VmRSS: … kB`. A process without
/// `VmRSS` (a zombie, a kernel thread) counts as 0 bytes; text without a
/// numeric `PPid:` is malformed.
pub fn parse_status(text: &str) -> Option<ProcEntry> {
    let mut ppid = None;
    let mut rss_bytes = 0u64;
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("PPid:") {
            ppid = Some(value.trim().parse::<u32>().ok()?);
        } else if let Some(value) = line.strip_prefix("VmRSS:") {
            let kb = value
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<u64>()
                .ok()?;
            rss_bytes = kb.checked_mul(1024)?;
        }
    }
    Some(ProcEntry {
        ppid: ppid?,
        rss_bytes,
    })
}

/// Sums RSS over `root` and every process whose parent chain reaches it.
pub fn sum_tree(root: u32, root_entry: ProcEntry, others: &HashMap<u32, ProcEntry>) -> u64 {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, entry) in others {
        if pid != root {
            children.entry(entry.ppid).or_default().push(pid);
        }
    }
    let mut total = root_entry.rss_bytes;
    let mut pending = vec![root];
    let mut seen = std::collections::HashSet::from([root]);
    while let Some(parent) = pending.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            if seen.insert(child) {
                total = total.saturating_add(others[&child].rss_bytes);
                pending.push(child);
            }
        }
    }
    total
}

/// 18.10 on a snapshot: `root_status` is the root's status text (or why it
/// could not be read); `entries` are the other listed pids with their status
/// text, `None` when the entry vanished or was unreadable. Malformed and
/// missing entries are skipped; the root is required.
pub fn tree_rss_from_snapshot(
    root: u32,
    root_status: io::Result<String>,
    entries: impl IntoIterator<Item = (u32, Option<String>)>,
) -> std::result::Result<u64, SampleError> {
    let root_text = root_status.map_err(|error| SampleError::Root(root, error))?;
    let root_entry = parse_status(&root_text).ok_or_else(|| {
        SampleError::Root(
            root,
            io::Error::new(io::ErrorKind::InvalidData, "malformed status"),
        )
    })?;
    let others = entries
        .into_iter()
        .filter_map(|(pid, text)| Some((pid, parse_status(&text?)?)))
        .collect::<HashMap<_, _>>();
    Ok(sum_tree(root, root_entry, &others))
}

/// The default Linux reader: one pass over `/proc`.
pub fn read_tree_rss(root: u32) -> std::result::Result<u64, SampleError> {
    let listing = std::fs::read_dir("/proc").map_err(SampleError::Snapshot)?;
    let mut entries = Vec::new();
    for entry in listing {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != root {
            entries.push((
                pid,
                std::fs::read_to_string(entry.path().join("status")).ok(),
            ));
        }
    }
    // Read the root directly, so it counts even if the listing omitted it.
    let root_status = std::fs::read_to_string(format!("/proc/{root}/status"));
    tree_rss_from_snapshot(root, root_status, entries)
}

/// Parses `ps -axo pid=,ppid=,rss=` (rss in kB), skipping malformed rows.
pub fn parse_ps_rows(text: &str) -> HashMap<u32, ProcEntry> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line
                .split_whitespace()
                .map(|field| field.parse::<u64>().ok());
            let (Some(Some(pid)), Some(Some(ppid)), Some(Some(rss_kb))) =
                (fields.next(), fields.next(), fields.next())
            else {
                return None;
            };
            Some((
                u32::try_from(pid).ok()?,
                ProcEntry {
                    ppid: u32::try_from(ppid).ok()?,
                    rss_bytes: rss_kb * 1024,
                },
            ))
        })
        .collect()
}

/// The default macOS reader: one `/bin/ps` listing.
pub fn read_tree_rss_with_ps(root: u32) -> std::result::Result<u64, SampleError> {
    let output = std::process::Command::new("/bin/ps")
        .args(["-axo", "pid=,ppid=,rss="])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(SampleError::Snapshot)?;
    let rows = parse_ps_rows(&String::from_utf8_lossy(&output.stdout));
    let root_entry = *rows.get(&root).ok_or(SampleError::NoRows)?;
    Ok(sum_tree(root, root_entry, &rows))
}

/// The platform's default reader, checked before anything is spawned (18.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultReader {
    Proc,
    Ps,
}

impl DefaultReader {
    /// For memory sampled at `limit` bytes (18.9, the L.3 fallback): the
    /// platform's reader with the limit, chosen before anything is spawned;
    /// None when nothing is sampled.
    pub fn sampling(limit: Option<u64>) -> Result<Option<(Self, u64)>> {
        match limit {
            Some(limit) => Ok(Some((DefaultReader::choose()?, limit))),
            None => Ok(None),
        }
    }

    /// Picks the reader for this platform or says why there is none.
    pub fn choose() -> Result<Self> {
        if cfg!(target_os = "linux") {
            let usable = std::fs::metadata("/proc").is_ok_and(|meta| meta.is_dir())
                && rustix::fs::access(
                    "/proc",
                    rustix::fs::Access::READ_OK | rustix::fs::Access::EXEC_OK,
                )
                .is_ok();
            if usable {
                Ok(DefaultReader::Proc)
            } else {
                Err(Error::Dependency(
                    "process memory supervision requires /proc".into(),
                ))
            }
        } else if cfg!(target_os = "macos") {
            if rustix::fs::access("/bin/ps", rustix::fs::Access::EXEC_OK).is_ok() {
                Ok(DefaultReader::Ps)
            } else {
                Err(Error::Dependency(
                    "process memory supervision requires an executable /bin/ps".into(),
                ))
            }
        } else {
            Err(Error::UnsupportedPlatform(
                "process memory supervision is not supported on this platform".into(),
            ))
        }
    }

    /// Takes one sample for `root`.
    pub fn sample(self, root: u32) -> std::result::Result<u64, SampleError> {
        match self {
            DefaultReader::Proc => read_tree_rss(root),
            DefaultReader::Ps => read_tree_rss_with_ps(root),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sampled_memory_needs_a_reader() {
        assert_eq!(DefaultReader::sampling(None).unwrap(), None);
        if cfg!(target_os = "linux") {
            let chosen = DefaultReader::sampling(Some(64)).unwrap();
            assert_eq!(chosen, Some((DefaultReader::Proc, 64)));
        }
    }

    fn status(ppid: u32, rss_kb: u64) -> String {
        format!(
            "Name:\tx\nState:\tS (sleeping)\nPPid:\t{ppid}\nVmRSS:\t   {rss_kb} kB\nThreads:\t1\n"
        )
    }

    #[test]
    fn the_spec_example_sums_the_tree_and_skips_bad_entries() {
        // Root 100 (10 kB), 104 (ppid 100, 20 kB), 105 (ppid 104, 30 kB) = 61440 bytes,
        // while other entries vanished, were unreadable or malformed.
        let entries = vec![
            (1, Some(status(0, 5000))),
            (104, Some(status(100, 20))),
            (105, Some(status(104, 30))),
            (106, None),                                        // vanished or EACCES
            (107, Some("Name:\tbroken\nPPid:\tnope\n".into())), // malformed
            (108, Some(status(1, 999))),                        // unrelated
        ];
        let total = tree_rss_from_snapshot(100, Ok(status(1, 10)), entries).unwrap();
        assert_eq!(total, 61440);
    }

    #[test]
    fn the_root_is_required_and_counts_even_if_not_listed() {
        let error =
            tree_rss_from_snapshot(100, Err(io::Error::from_raw_os_error(libc::ENOENT)), vec![])
                .unwrap_err();
        assert_eq!(
            error.message(),
            "process memory supervisor cannot read root process /proc/100/status"
        );
        assert_eq!(error.cause().unwrap().raw_os_error(), Some(libc::ENOENT));
        let malformed = tree_rss_from_snapshot(100, Ok("garbage".into()), vec![]).unwrap_err();
        assert!(matches!(malformed, SampleError::Root(100, _)));
        assert_eq!(
            tree_rss_from_snapshot(100, Ok(status(1, 7)), vec![]).unwrap(),
            7 * 1024
        );
    }

    #[test]
    fn status_parsing() {
        assert_eq!(
            parse_status(&status(42, 3)),
            Some(ProcEntry {
                ppid: 42,
                rss_bytes: 3072
            })
        );
        // A zombie has no VmRSS line.
        assert_eq!(
            parse_status("PPid:\t1\n"),
            Some(ProcEntry {
                ppid: 1,
                rss_bytes: 0
            })
        );
        assert_eq!(parse_status("VmRSS:\t1 kB\n"), None);
        assert_eq!(parse_status("PPid:\t1\nVmRSS:\tmany kB\n"), None);
    }

    #[test]
    fn ps_rows() {
        let rows = parse_ps_rows("  100     1   10\n  104   100   20\nbad row\n  105   104   30\n");
        assert_eq!(sum_tree(100, rows[&100], &rows), 61440);
    }

    #[test]
    fn reads_this_process_from_proc() {
        let me = std::process::id();
        assert!(read_tree_rss(me).unwrap() > 0);
        assert_eq!(DefaultReader::choose().unwrap(), DefaultReader::Proc);
    }
}
