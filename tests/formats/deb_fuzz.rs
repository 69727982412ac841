//! The .deb reader under mutated input, without nightly: the same harness as the cargo-fuzz target
//! (fuzz/fuzz_targets/deb_reader.rs) driven by a small built-in mutator.
//!
//! - `regressions_and_quick_mutations` (always run): every input in fuzz/regressions/ plus a few
//!   thousand mutations of valid packages; the reader must return Ok or an error, never panic.
//! - `stress` (ignored; `ROCM_PIN_FUZZ_SECS=600 cargo test --release --test formats -- --ignored deb_fuzz::stress`):
//!   the same for a fixed time; a panicking input is saved to fuzz/regressions/ and fails the run.

use std::fs;
use std::time::Duration;

use crate::util::deb::*;
use crate::util::fuzz::{regressions_dir, Campaign, Mutator, Unit};
use rocm_pin_core::deb::ar::ArWriter;
use rocm_pin_core::deb::compress::compress_bytes;
use rocm_pin_core::deb::reader::{for_each_data_entry_from, read_deb_from};
use rocm_pin_core::deb::tar::{TarWriter, WriteKind};
use rocm_pin_core::deb::{Compression, ReadLimits};

/// Exactly what the cargo-fuzz target does with one input.
fn harness(data: &[u8]) {
    let limits = ReadLimits {
        max_member_uncompressed: 32 << 20,
        max_control_file: 1 << 20,
        ..ReadLimits::default()
    };
    let _ = read_deb_from(data, data.len() as u64, "fuzz.deb", &limits);
    let _ = for_each_data_entry_from(data, data.len() as u64, "fuzz.deb", &limits, &mut |_, r| {
        std::io::copy(r, &mut std::io::sink())?;
        Ok(())
    });
}

fn seed(c: Compression) -> Vec<u8> {
    let long = format!("./{}/x", "n".repeat(120));
    let mut t = TarWriter::new(Vec::new());
    t.append_header(b"./", WriteKind::Dir, 0o755, SDE).unwrap();
    t.append_header(b"./usr/", WriteKind::Dir, 0o755, SDE)
        .unwrap();
    t.append_header(b"./usr/f", WriteKind::File(5), 0o644, SDE)
        .unwrap();
    t.write_contents(&mut &b"hello"[..], 5, &mut |_| {})
        .unwrap();
    t.append_header(b"./usr/h", WriteKind::Hardlink(b"./usr/f"), 0o644, SDE)
        .unwrap();
    t.append_header(b"./usr/s", WriteKind::Symlink(b"f"), 0o777, SDE)
        .unwrap();
    t.append_header(long.as_bytes(), WriteKind::File(0), 0o644, SDE)
        .unwrap();
    let data = t.finish().unwrap();
    let mut ct = TarWriter::new(Vec::new());
    ct.append_header(b"./", WriteKind::Dir, 0o755, SDE).unwrap();
    ct.append_header(
        b"./control",
        WriteKind::File(CONTROL.len() as u64),
        0o644,
        SDE,
    )
    .unwrap();
    ct.write_contents(&mut CONTROL.as_bytes(), CONTROL.len() as u64, &mut |_| {})
        .unwrap();
    let control = ct.finish().unwrap();
    let mut ar = ArWriter::new(Vec::new(), SDE).unwrap();
    ar.append_bytes("debian-binary", b"2.0\n").unwrap();
    ar.append_bytes(
        &format!("control.tar{}", c.suffix()),
        &compress_bytes(&control, c, None, 1).unwrap(),
    )
    .unwrap();
    ar.append_bytes(
        &format!("data.tar{}", c.suffix()),
        &compress_bytes(&data, c, None, 1).unwrap(),
    )
    .unwrap();
    ar.finish().unwrap()
}

fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = [
        Compression::None,
        Compression::Gzip,
        Compression::Xz,
        Compression::Zstd,
    ]
    .into_iter()
    .map(seed)
    .collect();
    // Real packages when the setup script fetched them (not required for this test).
    if let Ok(dir) = fs::read_dir(cache_dir().join("debian-debs")) {
        for e in dir.flatten() {
            if let Ok(bytes) = fs::read(e.path()) {
                if bytes.len() < 1 << 20 {
                    out.push(bytes);
                }
            }
        }
    }
    out
}

const INTERESTING: &[&[u8]] = &[
    b"0",
    b"9999999999",
    b"-1",
    b" ",
    b"\0",
    b"\xff",
    b"..",
    b"/",
    b"./../",
    b"`\n",
    b"\n",
    b"77777777777",
    b"\x80\0\0\0\0\0\0\0\0\0\0\x01",
    b"ustar  \0",
    b"././@LongLink",
];

/// The .deb reader as a fuzz campaign: valid packages mutated with tar and ar words.
fn campaign(harness: &dyn Fn(&[u8])) -> Campaign<'_> {
    Campaign {
        name: "deb reader",
        regressions: regressions_dir(""),
        seeds: seeds(),
        mutator: Mutator {
            interesting: INTERESTING,
            // Duplicate a block (e.g. a tar header) somewhere else.
            unit: Unit::Block(512),
        },
        harness,
    }
}

#[test]
fn regressions_and_quick_mutations() {
    campaign(&harness).quick(Duration::from_secs(60), 3000);
}

#[test]
#[ignore = "long-running stress run; see docs/fuzzing.md"]
fn stress() {
    campaign(&harness).stress(600);
}
