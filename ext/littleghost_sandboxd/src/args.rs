//! The command line: `--root DIR`, `--path NAME=DIR` (repeated),
//! `--policy FILE`, `--grpc ADDR`, `--rest ADDR`, `--token-file FILE` (each
//! also as `--flag=value`), `--health-without-token` (no value).

use std::ffi::OsString;
use std::path::PathBuf;

/// What the daemon was told to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub root: PathBuf,
    /// The workspace's named paths (docs/spec.md §3), in the order given.
    pub paths: Vec<(String, PathBuf)>,
    pub policy: Option<PathBuf>,
    pub grpc: String,
    pub rest: String,
    pub token_file: Option<PathBuf>,
    /// `GET /v1/health` answers without the token (for kubelet's probes,
    /// which cannot carry a Secret's value); every other call still needs it.
    pub health_without_token: bool,
}

pub const USAGE: &str = "usage: littleghost-sandboxd [--root DIR] [--path NAME=DIR ...] [--policy FILE] [--grpc ADDR] [--rest ADDR] \
[--token-file FILE] [--health-without-token]\n\
  --root DIR         the workspace every file call and program is confined to (default /workspace)\n\
  --path NAME=DIR    a named workspace path a policy may grant (DIR absolute, or relative to the root)\n\
  --policy FILE      a JSON sandbox declaration (default: the root read-write, no network, native)\n\
  --grpc ADDR        process.v1 and littleghost.v1 (default $SANDBOXD_GRPC_ADDR, else 127.0.0.1:9090)\n\
  --rest ADDR        the filesystem REST API (default $SANDBOXD_REST_ADDR, else 127.0.0.1:8080)\n\
  --token-file FILE  every call must carry `authorization: Bearer <the file's first line>`;\n\
                     without it the daemon binds loopback addresses only\n\
  --health-without-token  GET /v1/health answers without the token (kubelet's probes); nothing else does";

impl Args {
    /// Parses `argv` (without the program name); `env` reads the defaults
    /// of `--grpc` and `--rest`. Err holds the message to print.
    pub fn parse(
        argv: impl IntoIterator<Item = OsString>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Args, String> {
        let mut args = Args {
            root: PathBuf::from("/workspace"),
            paths: Vec::new(),
            policy: None,
            grpc: env("SANDBOXD_GRPC_ADDR").unwrap_or_else(|| "127.0.0.1:9090".into()),
            rest: env("SANDBOXD_REST_ADDR").unwrap_or_else(|| "127.0.0.1:8080".into()),
            token_file: None,
            health_without_token: false,
        };
        let mut argv = argv.into_iter();
        while let Some(flag) = argv.next() {
            let flag = flag
                .into_string()
                .map_err(|flag| format!("unknown argument {flag:?}\n{USAGE}"))?;
            let (name, inline) = match flag.split_once('=') {
                Some((name, value)) => (name.to_string(), Some(OsString::from(value))),
                None => (flag.clone(), None),
            };
            if name == "--help" || name == "-h" {
                return Err(USAGE.to_string());
            }
            if name == "--health-without-token" && inline.is_none() {
                args.health_without_token = true;
                continue;
            }
            if ![
                "--root",
                "--path",
                "--policy",
                "--grpc",
                "--rest",
                "--token-file",
            ]
            .contains(&name.as_str())
            {
                return Err(format!("unknown argument {flag:?}\n{USAGE}"));
            }
            let value = match inline.or_else(|| argv.next()) {
                Some(value) if !value.is_empty() => value,
                _ => return Err(format!("{name} needs a value\n{USAGE}")),
            };
            let text = || {
                value
                    .clone()
                    .into_string()
                    .map_err(|_| format!("{name} must be valid UTF-8"))
            };
            match name.as_str() {
                "--root" => args.root = PathBuf::from(&value),
                "--path" => args.paths.push(named_path(&text()?)?),
                "--policy" => args.policy = Some(PathBuf::from(&value)),
                "--grpc" => args.grpc = text()?,
                "--rest" => args.rest = text()?,
                _ => args.token_file = Some(PathBuf::from(&value)),
            }
        }
        Ok(args)
    }
}

/// `NAME=DIR`: both non-empty (the name's own rules are the workspace's).
fn named_path(value: &str) -> Result<(String, PathBuf), String> {
    match value.split_once('=') {
        Some((name, dir)) if !name.is_empty() && !dir.is_empty() => {
            Ok((name.to_string(), PathBuf::from(dir)))
        }
        _ => Err(format!("--path needs NAME=DIR, got {value:?}\n{USAGE}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str], env: &[(&str, &str)]) -> Result<Args, String> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Args::parse(argv.iter().map(OsString::from), |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_come_from_the_environment_then_loopback() {
        let args = parse(&[], &[]).unwrap();
        assert_eq!(args.root, PathBuf::from("/workspace"));
        assert_eq!(
            (args.grpc.as_str(), args.rest.as_str()),
            ("127.0.0.1:9090", "127.0.0.1:8080")
        );
        let args = parse(
            &[],
            &[
                ("SANDBOXD_GRPC_ADDR", "0.0.0.0:1"),
                ("SANDBOXD_REST_ADDR", "[::1]:2"),
            ],
        )
        .unwrap();
        assert_eq!(
            (args.grpc.as_str(), args.rest.as_str()),
            ("0.0.0.0:1", "[::1]:2")
        );
    }

    #[test]
    fn flags_take_a_value_in_either_spelling() {
        let args = parse(
            &[
                "--root",
                "/w",
                "--policy=/p.json",
                "--grpc",
                "127.0.0.1:0",
                "--rest=127.0.0.1:0",
                "--token-file",
                "/t",
            ],
            &[("SANDBOXD_GRPC_ADDR", "0.0.0.0:1")],
        )
        .unwrap();
        assert_eq!(args.root, PathBuf::from("/w"));
        assert_eq!(args.policy, Some(PathBuf::from("/p.json")));
        assert_eq!(args.grpc, "127.0.0.1:0");
        assert_eq!(args.rest, "127.0.0.1:0");
        assert_eq!(args.token_file, Some(PathBuf::from("/t")));
    }

    #[test]
    fn health_without_the_token_is_asked_for_by_a_flag_without_a_value() {
        assert!(!parse(&[], &[]).unwrap().health_without_token);
        assert!(
            parse(&["--health-without-token"], &[])
                .unwrap()
                .health_without_token
        );
        assert!(parse(&["--health-without-token=yes"], &[])
            .unwrap_err()
            .starts_with("unknown argument"));
    }

    #[test]
    fn named_paths_are_repeated_name_dir_pairs() {
        let args = parse(&["--path", "docs=/d", "--path=cache=tmp/c"], &[]).unwrap();
        assert_eq!(
            args.paths,
            vec![
                ("docs".to_string(), PathBuf::from("/d")),
                ("cache".to_string(), PathBuf::from("tmp/c"))
            ]
        );
        for bad in ["docs", "=/d", "docs="] {
            assert!(parse(&["--path", bad], &[])
                .unwrap_err()
                .starts_with("--path needs NAME=DIR"));
        }
    }

    #[test]
    fn a_bad_command_line_is_refused_with_the_usage() {
        assert!(parse(&["--roots", "/w"], &[])
            .unwrap_err()
            .starts_with("unknown argument \"--roots\""));
        assert!(parse(&["--root"], &[])
            .unwrap_err()
            .starts_with("--root needs a value"));
        assert!(parse(&["--grpc="], &[])
            .unwrap_err()
            .starts_with("--grpc needs a value"));
        assert!(parse(&["--help"], &[]).unwrap_err().starts_with("usage:"));
    }
}
