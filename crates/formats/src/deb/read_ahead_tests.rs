//! The read-ahead path against the inline one, on the same entries: the same tar bytes and the
//! same md5 sums (checked against sums computed here), and the same failures — a file that
//! shrank, grew or vanished after the entries were listed, a writer that fails — each reported
//! with the file's path, and the read-ahead thread always joined (a hang would fail the test
//! run by its timeout).

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use md5::{Digest, Md5};

use super::super::archive::{write_data_tar, BuildOptions};
use super::super::content::{ordered, FileData, PayloadEntry};
use super::super::Compression;
use super::CHUNK;
use super::POOL;

fn options() -> BuildOptions {
    BuildOptions {
        compression: Compression::None,
        source_date_epoch: Some(1_700_000_000),
        ..BuildOptions::default()
    }
}

/// Bytes that differ at every offset (a chunk boundary error shows in the sums).
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8)
        .collect()
}

/// Files on disk: an empty one, a small one, one larger than all the read-ahead buffers
/// together (so buffers are given back and reused), one of exactly one chunk, one in memory,
/// a hard link and a symlink.
fn payload(dir: &Path) -> Vec<PayloadEntry> {
    let files = [
        ("empty", Vec::new()),
        ("small.txt", b"small file\n".to_vec()),
        ("big.bin", pattern(POOL * CHUNK + CHUNK / 2 + 3, 1)),
        ("chunk.bin", pattern(CHUNK, 2)),
    ];
    let mut entries = vec![PayloadEntry::dir("usr", 0o755)];
    for (name, data) in files {
        let path = dir.join(name);
        fs::write(&path, data).unwrap();
        entries.push(PayloadEntry::file(
            format!("usr/{name}"),
            FileData::Path(path),
            0o644,
        ));
    }
    entries.push(PayloadEntry::file(
        "usr/in-memory",
        FileData::Bytes(pattern(70_000, 3)),
        0o644,
    ));
    entries.push(PayloadEntry::hard_link("usr/z-link", "usr/big.bin"));
    entries.push(PayloadEntry::symlink("usr/sym", "small.txt"));
    entries
}

fn md5_hex(bytes: &[u8]) -> String {
    hex::encode(Md5::digest(bytes))
}

#[test]
fn read_ahead_writes_the_same_bytes_and_sums_as_inline() {
    let tmp = tempfile::tempdir().unwrap();
    let payload = payload(tmp.path());
    let entries = ordered(&payload).unwrap();
    let mut results = Vec::new();
    for ahead in [false, true] {
        for md5 in [false, true] {
            let (tar, sums) =
                write_data_tar(&entries, Vec::new(), &options(), 1, md5, ahead).unwrap();
            results.push((ahead, md5, tar, sums));
        }
    }
    let (.., first_tar, _) = &results[0];
    for (ahead, md5, tar, _) in &results {
        assert!(
            tar == first_tar,
            "ahead {ahead}, md5 {md5}: tar bytes differ"
        );
    }
    let expected: Vec<(String, String)> = [
        ("usr/big.bin", fs::read(tmp.path().join("big.bin")).unwrap()),
        ("usr/chunk.bin", pattern(CHUNK, 2)),
        ("usr/empty", Vec::new()),
        ("usr/in-memory", pattern(70_000, 3)),
        ("usr/small.txt", b"small file\n".to_vec()),
        ("usr/z-link", fs::read(tmp.path().join("big.bin")).unwrap()),
    ]
    .iter()
    .map(|(p, d)| (p.to_string(), md5_hex(d)))
    .collect();
    for (ahead, md5, _, sums) in &results {
        if *md5 {
            assert_eq!(sums, &expected, "ahead {ahead}");
        } else {
            assert!(sums.is_empty(), "ahead {ahead}: sums without md5");
        }
    }
}

/// Runs both paths after `change` altered the files listed in the entries; returns each error.
fn errors_after(change: impl Fn(&Path)) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let payload = payload(tmp.path());
    let entries = ordered(&payload).unwrap();
    change(tmp.path());
    [false, true]
        .into_iter()
        .map(|ahead| {
            let err = write_data_tar(&entries, Vec::new(), &options(), 1, true, ahead)
                .err()
                .unwrap_or_else(|| panic!("ahead {ahead}: the changed file went unnoticed"));
            format!("{err:#}")
        })
        .collect()
}

#[test]
fn a_file_that_shrank_grew_or_vanished_fails_both_paths_naming_it() {
    let big = |dir: &Path| dir.join("big.bin");
    let shrank = errors_after(|d| fs::write(big(d), b"short").unwrap());
    let grew = errors_after(|d| {
        let mut f = fs::OpenOptions::new().append(true).open(big(d)).unwrap();
        f.write_all(b"more").unwrap();
    });
    let vanished = errors_after(|d| fs::remove_file(big(d)).unwrap());
    for (case, errors, says) in [
        ("shrank", shrank, "file shrank while being read"),
        ("grew", grew, "file grew while being read"),
        ("vanished", vanished, "cannot open"),
    ] {
        for e in errors {
            assert!(e.contains(says), "{case}: {e}");
            assert!(e.contains("big.bin"), "{case}: the file is not named: {e}");
        }
    }
}

/// A writer that takes `left` bytes, then fails.
struct FailingWriter {
    left: usize,
}

impl Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::other("disk full (test)"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_writer_stops_the_read_ahead_thread_and_reports_the_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let payload = payload(tmp.path());
    let entries = ordered(&payload).unwrap();
    // Fails inside big.bin, while the thread has buffers in flight and more to read.
    for left in [0, 3 * CHUNK] {
        let err = write_data_tar(&entries, FailingWriter { left }, &options(), 1, true, true)
            .err()
            .expect("a failing writer went unnoticed");
        assert!(format!("{err:#}").contains("disk full (test)"), "{err:#}");
    }
}

#[test]
fn reading_ahead_is_the_default_with_more_than_one_thread() {
    assert!(!super::read_ahead_by_default(1));
    assert!(super::read_ahead_by_default(2));
}
