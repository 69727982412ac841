//! Fuzz the reader of an existing repository's index (`repo --out` on a repository that exists);
//! the properties are in fuzz/harness.rs (shared with the replay test of
//! fuzz/regressions/repo_index/). A scratch repository per process, rewritten per input.
#![no_main]

#[path = "../harness.rs"]
mod harness;

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("rocm-pin-fuzz-repo-index.{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    harness::repo_index(data, scratch());
});
