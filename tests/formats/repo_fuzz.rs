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

use std::path::Path;
use std::time::Duration;

use crate::util::fuzz::{regressions_dir, Campaign, Mutator, Unit};

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

/// The existing index's reader as a fuzz campaign: stanzas mutated with index words, lines
/// duplicated.
fn campaign(harness: &dyn Fn(&[u8])) -> Campaign<'_> {
    Campaign {
        name: "repo_index",
        regressions: regressions_dir("repo_index"),
        seeds: seeds(),
        mutator: Mutator {
            interesting: INTERESTING,
            unit: Unit::Line,
        },
        harness,
    }
}

fn repo_index(scratch: &Path) -> impl Fn(&[u8]) + '_ {
    move |data| harness::repo_index(data, scratch)
}

#[test]
fn regressions_and_quick_mutations() {
    let scratch = tempfile::tempdir().unwrap();
    campaign(&repo_index(scratch.path())).quick(Duration::from_secs(10), 2000);
}

#[test]
#[ignore = "long-running stress run; see docs/fuzzing.md"]
fn stress() {
    let scratch = tempfile::tempdir().unwrap();
    campaign(&repo_index(scratch.path())).stress(60);
}
