//! Fuzz the image layer reader: `open_layer` (plain, gzip, zstd) then `apply_layer`, twice, onto a
//! scratch image root; nothing beside the root may change, and once the tree check passes no
//! symlink leads beside the root. Each input is also read as operations of a generated layer. The properties are in
//! fuzz/harness.rs (shared with the replay test of fuzz/regressions/image_layer/).
#![no_main]

#[path = "../harness.rs"]
mod harness;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn scratch() -> &'static harness::LayerScratch {
    static DIR: OnceLock<harness::LayerScratch> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rocm-pin-fuzz-layer.{}", std::process::id()));
        harness::LayerScratch::new(dir)
    })
}

fuzz_target!(|data: &[u8]| {
    // The bytes as a layer blob, then as operations of a structure-aware layer (whiteouts,
    // links through links), which random bytes rarely reach as a tar.
    let _ = harness::image_layer(data, scratch());
    let _ = harness::generated_image_layer(data, scratch());
});
