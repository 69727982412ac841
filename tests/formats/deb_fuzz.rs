//! The .deb reader under mutated input, without nightly: the same harness as the cargo-fuzz target
//! (fuzz/fuzz_targets/deb_reader.rs) driven by a small built-in mutator.
//!
//! - `regressions_and_quick_mutations` (always run): every input in fuzz/regressions/ plus a few
//!   thousand mutations of valid packages; the reader must return Ok or an error, never panic.
//! - `stress` (ignored; `ROCM_PIN_FUZZ_SECS=600 cargo test --release --test formats -- --ignored deb_fuzz::stress`):
//!   the same for a fixed time; a panicking input is saved to fuzz/regressions/ and fails the run.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::deb::*;
use rocm_pin::deb::ar::ArWriter;
use rocm_pin::deb::compress::compress_bytes;
use rocm_pin::deb::reader::{for_each_data_entry_from, read_deb_from};
use rocm_pin::deb::tar::{TarWriter, WriteKind};
use rocm_pin::deb::{Compression, ReadLimits};

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

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions")
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

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
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

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = v.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            2 => {
                let cut = rng.below(len + 1);
                v.truncate(cut);
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + rng.below(64)).min(len);
                v.drain(a..b);
            }
            4 => {
                let word = INTERESTING[rng.below(INTERESTING.len())];
                let at = rng.below(len + 1);
                if rng.below(2) == 0 {
                    let end = (at + word.len()).min(len);
                    v.splice(at..end, word.iter().copied());
                } else {
                    v.splice(at..at, word.iter().copied());
                }
            }
            5 if len > 0 => {
                // Duplicate a block (e.g. a tar header) somewhere else.
                let a = rng.below(len);
                let b = (a + 512).min(len);
                let block = v[a..b].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, block);
            }
            _ => {
                let at = rng.below(len + 1);
                let n = rng.below(16);
                for _ in 0..n {
                    v.insert(at, rng.next() as u8);
                }
            }
        }
    }
    v
}

/// Run mutations until `budget` runs out or `max` inputs; returns panicking inputs.
fn run_mutations(seed_value: u64, budget: Duration, max: usize) -> (usize, Vec<Vec<u8>>) {
    let seeds = seeds();
    let mut rng = Rng(seed_value | 1);
    let start = Instant::now();
    let mut crashes = Vec::new();
    let mut n = 0;
    let prev_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    while n < max && start.elapsed() < budget {
        let base = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, base);
        if catch_unwind(AssertUnwindSafe(|| harness(&input))).is_err() {
            crashes.push(input);
        }
        n += 1;
    }
    std::panic::set_hook(prev_hook);
    (n, crashes)
}

fn save(crashes: &[Vec<u8>]) -> Vec<PathBuf> {
    let dir = regressions_dir();
    fs::create_dir_all(&dir).unwrap();
    crashes
        .iter()
        .map(|c| {
            let name = format!("crash-{}", hex::encode(&md5_of(c)[..8]));
            let p = dir.join(name);
            fs::write(&p, c).unwrap();
            p
        })
        .collect()
}

fn md5_of(data: &[u8]) -> Vec<u8> {
    use md5::{Digest, Md5};
    Md5::digest(data).to_vec()
}

#[test]
fn regressions_and_quick_mutations() {
    if let Ok(dir) = fs::read_dir(regressions_dir()) {
        for e in dir.flatten() {
            // README.md explains the directory; the subdirectories hold the other targets'
            // inputs (replayed by root_fuzz.rs); every other file is a .deb reader input.
            if e.file_name() == "README.md" || e.path().is_dir() {
                continue;
            }
            let bytes = fs::read(e.path()).unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| harness(&bytes)));
            assert!(r.is_ok(), "regression input {} panics", e.path().display());
        }
    }
    for s in seeds() {
        harness(&s);
    }
    let (n, crashes) = run_mutations(0x5eed, Duration::from_secs(60), 3000);
    let saved = save(&crashes);
    assert!(
        saved.is_empty(),
        "{} of {n} inputs panicked: {saved:?}",
        saved.len()
    );
}

#[test]
#[ignore = "long-running stress run; see docs/fuzzing.md"]
fn stress() {
    let secs: u64 = std::env::var("ROCM_PIN_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let seed_value = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    let (n, crashes) = run_mutations(seed_value, Duration::from_secs(secs), usize::MAX);
    let saved = save(&crashes);
    eprintln!(
        "deb reader stress: {n} inputs in {secs} s (seed {seed_value:#x}), {} panics",
        saved.len()
    );
    assert!(saved.is_empty(), "panicking inputs saved: {saved:?}");
}
