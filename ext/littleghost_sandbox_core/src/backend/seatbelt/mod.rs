//! Seatbelt mechanism: the deny-default SBPL profile handed to
//! `sandbox-exec -p` (SPEC SB.6), as one pure function of plain data. It runs
//! only on macOS, but the text is built and tested everywhere.

pub mod host;
mod launcher;

pub use launcher::{Launcher, Sandbox};

use std::path::{Path, PathBuf};

use crate::backend::bubblewrap::RootFilesystem;
use crate::grants::Grant;

/// Where `sandbox-exec` lives (SB.1).
pub const DEFAULT_EXECUTABLE: &str = "/usr/bin/sandbox-exec";
/// System trees a process needs to start under `:isolated`; Ruby's prefix,
/// libdir and Homebrew's gmp are added by the caller (SB.6).
pub const RUNTIME_ROOTS: [&str; 4] = ["/System", "/usr", "/bin", "/sbin"];

/// Everything one launch's profile depends on.
#[derive(Debug, Clone)]
pub struct Profile {
    pub root_filesystem: RootFilesystem,
    /// The scope's grants.
    pub grants: Vec<Grant>,
    /// Readable under `:isolated`, each in expanded and realpath form (the caller supplies both).
    pub runtime_roots: Vec<PathBuf>,
    /// The sandbox's private temporary directory (readable and writable).
    pub temp_dir: PathBuf,
    pub allow_subprocesses: bool,
    /// True iff the scope's network mode is `:inherit`.
    pub network_inherit: bool,
}

/// An SBPL string literal: `\` and `"` are escaped.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '\\' || c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn subpath(path: &Path) -> String {
    format!("(subpath {})", quote(&path_text(path)))
}

fn literal(path: &Path) -> String {
    format!("(literal {})", quote(&path_text(path)))
}

/// Both spellings of a grant: where it appears and what it really is
/// (Seatbelt matches real paths, e.g. `/private/var` for `/var`).
fn grant_paths(grant: &Grant) -> Vec<&Path> {
    let mut out = vec![grant.source.as_path()];
    if grant.target != grant.source {
        out.push(grant.target.as_path());
    }
    out
}

/// Proper ancestors of `path`, excluding `/`, shallowest first.
fn ancestors(path: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .filter(|a| *a != Path::new("/") && !a.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .collect();
    out.reverse();
    out
}

/// SB.6: the profile text.
pub fn profile(spec: &Profile) -> String {
    let mut lines: Vec<String> = vec![
        "(version 1)".into(),
        "(deny default)".into(),
        "(allow process-exec)".into(),
    ];

    if spec.allow_subprocesses {
        lines.push("(allow process-fork)".into());
        lines.push("(allow process-info* (target same-sandbox))".into());
        lines.push("(allow signal (target same-sandbox))".into());
    } else {
        lines.push("(allow signal (target self))".into());
    }

    lines.push("(allow sysctl-read)".into());
    lines.push(format!("(allow file-read* {})", literal(Path::new("/"))));

    match spec.root_filesystem {
        RootFilesystem::Isolated => {
            if !spec.runtime_roots.is_empty() {
                let roots: Vec<String> = spec.runtime_roots.iter().map(|p| subpath(p)).collect();
                lines.push(format!("(allow file-read* {})", roots.join(" ")));
            }
            // Metadata only, so that path lookups through the parents succeed.
            let mut parents: Vec<PathBuf> = Vec::new();
            let wanted = spec
                .runtime_roots
                .iter()
                .map(PathBuf::as_path)
                .chain(spec.grants.iter().flat_map(grant_paths));
            for path in wanted {
                for ancestor in ancestors(path) {
                    if !parents.contains(&ancestor) {
                        parents.push(ancestor);
                    }
                }
            }
            if !parents.is_empty() {
                let parents: Vec<String> = parents.iter().map(|p| literal(p)).collect();
                lines.push(format!("(allow file-read-metadata {})", parents.join(" ")));
            }
        }
        RootFilesystem::ReadOnly => lines.push("(allow file-read*)".into()),
        RootFilesystem::ReadWrite => lines.push("(allow file-read* file-write*)".into()),
    }

    let devices = ["/dev/null", "/dev/random", "/dev/urandom"].map(|d| literal(Path::new(d)));
    lines.push(format!(
        "(allow file-read* file-write* {} {})",
        devices.join(" "),
        subpath(&spec.temp_dir)
    ));

    for grant in &spec.grants {
        let places: Vec<String> = grant_paths(grant).into_iter().map(subpath).collect();
        lines.push(format!("(allow file-read* {})", places.join(" ")));
        if grant.access.writable() {
            lines.push(format!("(allow file-write* {})", places.join(" ")));
        }
    }
    // Last, so that a read-only area nested in a writable one stays read-only.
    for grant in spec.grants.iter().filter(|g| !g.access.writable()) {
        let places: Vec<String> = grant_paths(grant).into_iter().map(subpath).collect();
        lines.push(format!("(deny file-write* {})", places.join(" ")));
    }

    if spec.network_inherit {
        lines.push("(allow network*)".into());
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Access;

    fn grant(path: &str, access: Access) -> Grant {
        Grant {
            source: path.into(),
            target: path.into(),
            access,
            tools: true,
            protect_aliases: true,
        }
    }

    fn base(root: RootFilesystem) -> Profile {
        Profile {
            root_filesystem: root,
            grants: vec![
                grant("/Users/u/w", Access::ReadWrite),
                grant("/Users/u/w/src", Access::ReadOnly),
            ],
            runtime_roots: vec!["/usr".into(), "/opt/homebrew/opt/ruby".into()],
            temp_dir: "/private/tmp/little-ghost-seatbelt-1".into(),
            allow_subprocesses: false,
            network_inherit: false,
        }
    }

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn denies_by_default_and_allows_exec_sysctl_and_the_root_entry() {
        let text = profile(&base(RootFilesystem::Isolated));
        assert_eq!(
            &lines(&text)[..3],
            &["(version 1)", "(deny default)", "(allow process-exec)"]
        );
        assert!(text.contains("(allow sysctl-read)\n"));
        assert!(text.contains("(allow file-read* (literal \"/\"))\n"));
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn isolated_reads_only_runtime_roots_plus_ancestor_metadata() {
        let text = profile(&base(RootFilesystem::Isolated));
        assert!(text.contains(
            "(allow file-read* (subpath \"/usr\") (subpath \"/opt/homebrew/opt/ruby\"))\n"
        ));
        assert!(text.contains(
            "(allow file-read-metadata (literal \"/opt\") (literal \"/opt/homebrew\") (literal \"/opt/homebrew/opt\") \
             (literal \"/Users\") (literal \"/Users/u\") (literal \"/Users/u/w\"))\n"
        ));
        assert!(!text.contains("(allow file-read*)\n"));
        assert!(!text.contains("(allow file-read* file-write*)\n"));
    }

    #[test]
    fn read_only_root_reads_everything_and_read_write_root_writes_everything() {
        let read_only = profile(&base(RootFilesystem::ReadOnly));
        assert!(read_only.contains("(allow file-read*)\n"));
        assert!(!read_only.contains("file-read-metadata"));
        assert!(!read_only.contains("(allow file-read* file-write*)\n"));
        let read_write = profile(&base(RootFilesystem::ReadWrite));
        assert!(read_write.contains("(allow file-read* file-write*)\n"));
    }

    #[test]
    fn devices_and_the_temp_dir_are_read_write() {
        let text = profile(&base(RootFilesystem::Isolated));
        assert!(text.contains(
            "(allow file-read* file-write* (literal \"/dev/null\") (literal \"/dev/random\") (literal \"/dev/urandom\") \
             (subpath \"/private/tmp/little-ghost-seatbelt-1\"))\n"
        ));
    }

    #[test]
    fn grants_are_read_writable_grants_written_and_read_only_grants_denied_last() {
        for root in [
            RootFilesystem::Isolated,
            RootFilesystem::ReadOnly,
            RootFilesystem::ReadWrite,
        ] {
            let text = profile(&base(root));
            let all = lines(&text);
            let find = |line: &str| {
                all.iter()
                    .position(|l| *l == line)
                    .unwrap_or_else(|| panic!("{line} in {text}"))
            };
            find("(allow file-read* (subpath \"/Users/u/w\"))");
            let write_root = find("(allow file-write* (subpath \"/Users/u/w\"))");
            find("(allow file-read* (subpath \"/Users/u/w/src\"))");
            assert!(!text.contains("(allow file-write* (subpath \"/Users/u/w/src\"))"));
            let deny = find("(deny file-write* (subpath \"/Users/u/w/src\"))");
            assert!(deny > write_root, "{root:?}");
            // Under a writable host root the deny still comes after the blanket allow.
            if root == RootFilesystem::ReadWrite {
                assert!(deny > find("(allow file-read* file-write*)"));
            }
        }
    }

    #[test]
    fn aliased_grants_name_both_the_realpath_and_the_target() {
        let mut spec = base(RootFilesystem::Isolated);
        spec.grants = vec![Grant {
            source: "/private/var/w".into(),
            target: "/var/w".into(),
            access: Access::ReadOnly,
            tools: true,
            protect_aliases: true,
        }];
        let text = profile(&spec);
        assert!(
            text.contains("(allow file-read* (subpath \"/private/var/w\") (subpath \"/var/w\"))\n")
        );
        assert!(
            text.contains("(deny file-write* (subpath \"/private/var/w\") (subpath \"/var/w\"))\n")
        );
    }

    #[test]
    fn subprocesses_toggle_fork_process_info_and_signals() {
        let mut spec = base(RootFilesystem::Isolated);
        let denied = profile(&spec);
        assert!(!denied.contains("process-fork"));
        assert!(!denied.contains("process-info"));
        assert!(denied.contains("(allow signal (target self))\n"));
        spec.allow_subprocesses = true;
        let allowed = profile(&spec);
        assert!(allowed.contains("(allow process-fork)\n"));
        assert!(allowed.contains("(allow process-info* (target same-sandbox))\n"));
        assert!(allowed.contains("(allow signal (target same-sandbox))\n"));
        assert!(!allowed.contains("(target self)"));
    }

    #[test]
    fn network_is_allowed_only_when_inherited() {
        let mut spec = base(RootFilesystem::Isolated);
        assert!(!profile(&spec).contains("network"));
        spec.network_inherit = true;
        assert!(profile(&spec).contains("(allow network*)\n"));
    }

    #[test]
    fn string_literals_escape_backslash_and_quote() {
        assert_eq!(quote(r#"/a "b" \c"#), r#""/a \"b\" \\c""#);
        let mut spec = base(RootFilesystem::ReadOnly);
        spec.grants = vec![grant(
            "/w/evil\") (allow file-write* (subpath \"/",
            Access::ReadOnly,
        )];
        let text = profile(&spec);
        assert!(text.contains(r#"(subpath "/w/evil\") (allow file-write* (subpath \"/")"#));
        // The injected text stays inside one literal: no extra top-level rule appeared.
        assert!(!text
            .lines()
            .any(|l| l.starts_with("(allow file-write* (subpath \"/\")")));
    }
}
