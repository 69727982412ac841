//! Fuzz the `/proc/<pid>/maps` reader of `status --root`; the properties are in fuzz/harness.rs
//! (shared with the replay test of fuzz/regressions/proc_maps/). A scratch root per process,
//! rewritten per input.
#![no_main]

#[path = "../harness.rs"]
mod harness;

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rocm-pin-fuzz-proc-maps.{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    harness::proc_maps(data, scratch());
});
