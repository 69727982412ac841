//! The mutation fuzzing the format tests share without nightly (deb_fuzz, repo_fuzz, root_fuzz):
//! one seeded generator, one mutator, one campaign runner that saves a failing input under
//! `fuzz/regressions/` and names it, and the `ROCM_PIN_FUZZ_SECS` stress settings.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// xorshift64*: no dependency, and the same seed gives the same inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    pub fn pick<'a, T: ?Sized>(&mut self, of: &[&'a T]) -> &'a T {
        of[self.below(of.len())]
    }
}

/// What a duplicated piece of input is: a tar-sized block, or a line (for text formats).
#[derive(Clone, Copy)]
pub enum Unit {
    Block(usize),
    Line,
}

/// How a format's inputs are mutated: the words that matter to its parser and its unit.
pub struct Mutator {
    pub interesting: &'static [&'static [u8]],
    pub unit: Unit,
}

impl Mutator {
    /// One to five edits of `input`: bit flips, byte sets, cuts, deletions, interesting words
    /// spliced over or in, a unit duplicated elsewhere, random bytes inserted.
    pub fn mutate(&self, rng: &mut Rng, input: &[u8]) -> Vec<u8> {
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
                2 => v.truncate(rng.below(len + 1)),
                3 if len > 0 => {
                    let a = rng.below(len);
                    let b = (a + rng.below(64)).min(len);
                    v.drain(a..b);
                }
                4 => {
                    let word = rng.pick(self.interesting);
                    let at = rng.below(len + 1);
                    let end = if rng.below(2) == 0 {
                        (at + word.len()).min(len)
                    } else {
                        at
                    };
                    v.splice(at..end, word.iter().copied());
                }
                5 if len > 0 => {
                    let a = rng.below(len);
                    let b = match self.unit {
                        Unit::Block(size) => (a + size).min(len),
                        Unit::Line => v[a..]
                            .iter()
                            .position(|c| *c == b'\n')
                            .map_or(len, |p| a + p + 1),
                    };
                    let piece = v[a..b].to_vec();
                    let at = rng.below(v.len() + 1);
                    v.splice(at..at, piece);
                }
                _ => {
                    let at = rng.below(len + 1);
                    for _ in 0..rng.below(16) {
                        v.insert(at, rng.next() as u8);
                    }
                }
            }
        }
        v
    }
}

/// One fuzzed reader: its name, where its failing inputs are kept, its seeds, its mutator and
/// the harness (which panics when an input fails the target's checks).
pub struct Campaign<'a> {
    pub name: &'a str,
    pub regressions: PathBuf,
    pub seeds: Vec<Vec<u8>>,
    pub mutator: Mutator,
    pub harness: &'a dyn Fn(&[u8]),
}

impl Campaign<'_> {
    /// Every saved regression input (README.md and subdirectories, other targets' inputs,
    /// left out) and every seed must pass.
    pub fn replay(&self) {
        if let Ok(dir) = fs::read_dir(&self.regressions) {
            for e in dir.flatten() {
                if e.file_name() == "README.md" || e.path().is_dir() {
                    continue;
                }
                let bytes = fs::read(e.path()).unwrap();
                let r = catch_unwind(AssertUnwindSafe(|| (self.harness)(&bytes)));
                assert!(
                    r.is_ok(),
                    "{}: regression input {} fails",
                    self.name,
                    e.path().display()
                );
            }
        }
        for s in &self.seeds {
            (self.harness)(s);
        }
    }

    /// Mutations of the seeds until `budget` runs out or `max` inputs ran; each failing input
    /// is saved under the regressions directory. Returns the inputs run and the saved paths.
    pub fn mutate_for(&self, seed: u64, budget: Duration, max: usize) -> (usize, Vec<PathBuf>) {
        let mut rng = Rng::new(seed);
        let start = Instant::now();
        let mut failing = Vec::new();
        let mut n = 0;
        let prev_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        while n < max && start.elapsed() < budget {
            let base = &self.seeds[rng.below(self.seeds.len())];
            let input = self.mutator.mutate(&mut rng, base);
            if catch_unwind(AssertUnwindSafe(|| (self.harness)(&input))).is_err() {
                failing.push(input);
            }
            n += 1;
        }
        std::panic::set_hook(prev_hook);
        (n, save(&self.regressions, &failing))
    }

    /// The always-on run: replay, then up to `max` mutations in at most `budget`.
    pub fn quick(&self, budget: Duration, max: usize) {
        self.replay();
        let (n, saved) = self.mutate_for(0x5eed, budget, max);
        assert!(
            saved.is_empty(),
            "{}: {} of {n} inputs fail: {saved:?}",
            self.name,
            saved.len()
        );
    }

    /// The by-hand run: mutations for [`stress_secs`] seconds, seeded by the clock (printed).
    pub fn stress(&self, default_secs: u64) {
        let secs = stress_secs(default_secs);
        let seed = clock_seed();
        let (n, saved) = self.mutate_for(seed, Duration::from_secs(secs), usize::MAX);
        eprintln!(
            "{} stress: {n} inputs in {secs} s (seed {seed:#x}), {} failing",
            self.name,
            saved.len()
        );
        assert!(saved.is_empty(), "failing inputs saved: {saved:?}");
    }
}

/// Save each failing input as `<dir>/crash-<hash>`; their paths.
pub fn save(dir: &Path, failing: &[Vec<u8>]) -> Vec<PathBuf> {
    use sha2::Digest;
    if failing.is_empty() {
        return Vec::new();
    }
    fs::create_dir_all(dir).unwrap();
    failing
        .iter()
        .map(|input| {
            let name = hex::encode(&sha2::Sha256::digest(input)[..8]);
            let p = dir.join(format!("crash-{name}"));
            fs::write(&p, input).unwrap();
            p
        })
        .collect()
}

/// `fuzz/regressions/<sub>` in the workspace (`""`: the directory itself).
pub fn regressions_dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(sub)
}

/// How long a by-hand stress run lasts: `ROCM_PIN_FUZZ_SECS`, else `default`.
pub fn stress_secs(default: u64) -> u64 {
    std::env::var("ROCM_PIN_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A seed from the clock, for stress runs (printed, so a finding can be replayed).
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1
}
