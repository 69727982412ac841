//! `rocm-pin deb build`'s compressor threads, through the real binary: the default is the CPUs
//! the process may use (never more because the machine is busy), `--threads N` sets it, and the
//! bytes written never depend on it.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::util::bin;
use crate::util::deb::*;

/// A tree whose data.tar is several compressor blocks at level 1 (xz: 1 MiB blocks, zstd: 2 MiB
/// jobs), so more threads really split the work.
fn multi_block_tree(root: &Path) {
    fs::create_dir_all(root.join("DEBIAN")).unwrap();
    fs::write(root.join("DEBIAN/control"), CONTROL).unwrap();
    let data = lcg_text(9 << 20, 7, 48);
    write_file(root, "usr/lib/x86_64-linux-gnu/libbig.so.1", &data, 0o644);
    write_file(root, "usr/share/doc/pkg/README", b"small\n", 0o644);
}

/// Runs `deb build --json` (prefixed by `wrapper`, e.g. taskset) and returns the JSON summary.
fn build_json(wrapper: &[&str], tree: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(bin());
            c
        }
        None => Command::new(bin()),
    };
    let res = must(
        cmd.args(["deb", "build", "--json"])
            .args(extra)
            .arg(tree)
            .arg(out)
            .env("SOURCE_DATE_EPOCH", SDE.to_string()),
    );
    serde_json::from_slice(&res.stdout).unwrap()
}

fn threads_of(summary: &serde_json::Value) -> u64 {
    summary["compressor_threads"]
        .as_u64()
        .unwrap_or_else(|| panic!("no compressor_threads in {summary}"))
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn deb_build_writes_the_same_bytes_with_1_2_and_4_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    multi_block_tree(&tree);
    for compression in ["xz", "zstd"] {
        let mut sums = Vec::new();
        for threads in [1u64, 2, 4] {
            let out = tmp.path().join(format!("{compression}-{threads}.deb"));
            let t = threads.to_string();
            let summary = build_json(
                &[],
                &tree,
                &out,
                &["-Z", compression, "-z", "1", "--threads", &t],
            );
            assert_eq!(threads_of(&summary), threads, "{compression}: {summary}");
            sums.push((threads, sha256(&out)));
        }
        assert!(
            sums.iter().all(|(_, s)| *s == sums[0].1),
            "{compression}: sha256 per thread count differ: {sums:?}"
        );
    }
}

#[test]
fn the_default_threads_are_the_cpus_the_process_may_use_whatever_the_load() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    fs::write(tree.join("DEBIAN/control"), CONTROL).unwrap();
    write_file(&tree, "usr/share/doc/pkg/README", b"small\n", 0o644);
    let out = tmp.path().join("p.deb");
    // Pinned to one CPU: one compressor thread, however high the load average is (the old
    // load-based count gave up to two per CPU here).
    let pinned = build_json(&["taskset", "-c", "0"], &tree, &out, &["-Z", "xz"]);
    assert_eq!(threads_of(&pinned), 1, "{pinned}");
    // Unpinned: what this (test) process may use, per affinity and cgroup quota.
    let available = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let free = build_json(&[], &tree, &out, &["-Z", "zstd"]);
    assert_eq!(threads_of(&free), available, "{free}");
    // An explicit count wins over the affinity mask.
    let asked = build_json(&["taskset", "-c", "0"], &tree, &out, &["--threads", "3"]);
    assert_eq!(threads_of(&asked), 3, "{asked}");
}

#[test]
fn zero_threads_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let res = Command::new(bin())
        .args(["deb", "build", "--threads", "0"])
        .arg(tmp.path())
        .arg(tmp.path().join("p.deb"))
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("--threads"));
}
