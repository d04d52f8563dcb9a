//! The committed code in `src/generated/` is what `proto/` generates: this
//! test regenerates it (pure Rust: protox parses, tonic-prost-build writes)
//! and fails on any difference. `LITTLEGHOST_REGENERATE_PROTO=1` writes the
//! new code into `src/generated/` instead.

use std::path::Path;

const FILES: [&str; 2] = ["process.v1.rs", "littleghost.v1.rs"];

#[test]
fn the_committed_code_is_what_the_protos_generate() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let protos = [
        crate_dir.join("proto/process/v1/process.proto"),
        crate_dir.join("proto/littleghost/v1/denials.proto"),
    ];
    let descriptors = protox::compile(&protos, [crate_dir.join("proto")]).unwrap();
    let out = tempfile_dir();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .out_dir(&out)
        .compile_fds(descriptors)
        .unwrap();
    let committed = crate_dir.join("src/generated");
    let regenerate = std::env::var_os("LITTLEGHOST_REGENERATE_PROTO").is_some();
    for file in FILES {
        let fresh = std::fs::read_to_string(out.join(file)).unwrap();
        if regenerate {
            std::fs::write(committed.join(file), &fresh).unwrap();
            continue;
        }
        let current = std::fs::read_to_string(committed.join(file)).unwrap_or_default();
        assert!(
            current == fresh,
            "src/generated/{file} is stale: run LITTLEGHOST_REGENERATE_PROTO=1 cargo test -p littleghost_sandbox_proto"
        );
    }
}

/// A fresh directory under the target directory (no extra dependency).
fn tempfile_dir() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("proto-generated");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
