//! The reader of an existing repository's index (`repo --out` on a repository that exists)
//! under the `repo_index` fuzz target's checks (`fuzz/harness.rs`), without nightly:
//!
//! - `regressions_and_quick_mutations` (always on): every input saved in
//!   `fuzz/regressions/repo_index/`, the seeds, and a few thousand mutations of them;
//! - `stress` (ignored; `ROCM_PIN_FUZZ_SECS=120 cargo test --release --test formats -- --ignored
//!   repo_fuzz::stress --nocapture`): mutations for the given time; a failing input is saved
//!   into `fuzz/regressions/repo_index/`.

// The harness is compiled once, in root_fuzz (clippy: duplicate_mod).
use crate::root_fuzz::harness;

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/repo_index")
}

/// One stanza as `repo` writes it, naming the scratch repository's pool file at its size.
const STANZA: &str = "Package: fuzzed\nVersion: 1:1.0-1\nArchitecture: all\n\
Maintainer: t <t@example.invalid>\nInstalled-Size: 1\nDepends: libc6 (>= 2.36), foo | bar\n\
Filename: pool/main/f/fuzzed/fuzzed_1.0_all.deb\nSize: 45\n\
MD5sum: 0123456789abcdef0123456789abcdef\n\
SHA256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\
Description: test\n a longer description\n .\n with a paragraph\n";

fn seeds() -> Vec<Vec<u8>> {
    let other = STANZA
        .replace("Package: fuzzed", "Package: other")
        .replace("Architecture: all", "Architecture: amd64");
    vec![
        STANZA.as_bytes().to_vec(),
        format!("{STANZA}\n{other}").into_bytes(),
        format!("{STANZA}\n{STANZA}").into_bytes(),
        STANZA.replace("Size: 45", "Size: 44").into_bytes(),
        STANZA
            .replace("pool/main/f/fuzzed/", "pool/main/f/gone/")
            .into_bytes(),
        STANZA.replace("Filename: ", "Filename: ../").into_bytes(),
        Vec::new(),
    ]
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

/// Words that matter to a Packages index: field names, separators, path tricks.
const INTERESTING: &[&[u8]] = &[
    b"\n",
    b"\n\n",
    b"\n ",
    b": ",
    b":",
    b"/",
    b"..",
    b"./",
    b"//",
    b"\0",
    b"\xff",
    b"\r",
    b"#",
    b"Filename: ",
    b"Size: ",
    b"Package: ",
    b"Version: ",
    b"Architecture: ",
    b"SHA256: ",
    b"18446744073709551616",
    b"-1",
    b"/etc/hostname",
];

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = v.len();
        match rng.below(6) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 => v.truncate(rng.below(len + 1)),
            2 if len > 0 => {
                let a = rng.below(len);
                let b = (a + rng.below(32)).min(len);
                v.drain(a..b);
            }
            3 if len > 0 => {
                // Duplicate a line somewhere else.
                let a = rng.below(len);
                let b = v[a..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .map_or(len, |p| a + p + 1);
                let line = v[a..b].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, line);
            }
            _ => {
                let word = INTERESTING[rng.below(INTERESTING.len())];
                let at = rng.below(len + 1);
                v.splice(at..at, word.iter().copied());
            }
        }
    }
    v
}

/// Mutations until `budget` runs out or `max` inputs; returns (inputs run, failing inputs).
fn run_mutations(seed_value: u64, budget: Duration, max: usize) -> (usize, Vec<Vec<u8>>) {
    let seeds = seeds();
    let scratch = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed_value | 1);
    let start = Instant::now();
    let mut failing = Vec::new();
    let mut n = 0;
    let prev_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    while n < max && start.elapsed() < budget {
        let base = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, base);
        if catch_unwind(AssertUnwindSafe(|| {
            harness::repo_index(&input, scratch.path())
        }))
        .is_err()
        {
            failing.push(input);
        }
        n += 1;
    }
    std::panic::set_hook(prev_hook);
    (n, failing)
}

fn save(failing: &[Vec<u8>]) -> Vec<PathBuf> {
    let dir = regressions_dir();
    fs::create_dir_all(&dir).unwrap();
    failing
        .iter()
        .map(|input| {
            use sha2::Digest;
            let name = hex::encode(&sha2::Sha256::digest(input)[..8]);
            let p = dir.join(format!("crash-{name}"));
            fs::write(&p, input).unwrap();
            p
        })
        .collect()
}

#[test]
fn regressions_and_quick_mutations() {
    let scratch = tempfile::tempdir().unwrap();
    if let Ok(entries) = fs::read_dir(regressions_dir()) {
        for e in entries.flatten() {
            let data = fs::read(e.path()).unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| {
                harness::repo_index(&data, scratch.path())
            }));
            assert!(r.is_ok(), "regression input {} fails", e.path().display());
        }
    }
    for s in seeds() {
        harness::repo_index(&s, scratch.path());
    }
    let (n, failing) = run_mutations(0x5eed, Duration::from_secs(10), 2000);
    let saved = save(&failing);
    assert!(
        saved.is_empty(),
        "{} of {n} inputs fail: {saved:?}",
        saved.len()
    );
}

#[test]
#[ignore = "long-running stress run; see docs/fuzzing.md"]
fn stress() {
    let secs: u64 = std::env::var("ROCM_PIN_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let (n, failing) = run_mutations(seed, Duration::from_secs(secs), usize::MAX);
    let saved = save(&failing);
    eprintln!(
        "repo_index stress: {n} inputs in {secs}s (seed {seed:#x}), {} failing",
        saved.len()
    );
    assert!(saved.is_empty(), "failing inputs saved: {saved:?}");
}
