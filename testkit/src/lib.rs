//! Test machinery shared by rocm-pin's integration tests. Nothing here ships in the product.

pub mod http;
pub mod scratch;

use std::path::{Path, PathBuf};

/// Where `scripts/test-setup` puts the test inputs (chroot tarballs, Debian's .debs, image
/// bases): `$ROCM_PIN_CACHE` when set and not empty, else `.cache` in the workspace root.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("ROCM_PIN_CACHE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .expect("testkit lives in the workspace root")
                .join(".cache")
        })
}
