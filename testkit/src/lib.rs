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

/// Is this process root?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Set by `scripts/test`: there, not being root fails a root test instead of skipping it, so
/// the project's test command can never go green by skipping.
pub const ROOT_REQUIRED_ENV: &str = "ROCM_PIN_TESTS_NEED_ROOT";

/// Called by [`needs_root!`] when not root: one line saying why the test is skipped, or a
/// failure under `scripts/test`.
pub fn skip_without_root(test: &str, why: &str) {
    if std::env::var_os(ROOT_REQUIRED_ENV).is_some_and(|v| !v.is_empty()) {
        panic!(
            "{test} needs root ({why}) and {ROOT_REQUIRED_ENV} is set: run scripts/test as root"
        );
    }
    eprintln!("skipped {test}: needs root ({why}); scripts/test runs it as root");
}

/// First line of a test that needs root (chroots, mounts, dpkg in a sandbox, OCI builds):
/// returns from the test with a one-line reason when not root, so a contributor's plain
/// `cargo test` is green, and fails instead under `scripts/test`.
#[macro_export]
macro_rules! needs_root {
    ($why:expr) => {
        if !$crate::is_root() {
            $crate::skip_without_root(module_path!(), $why);
            return;
        }
    };
}
