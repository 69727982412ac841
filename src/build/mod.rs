//! `rocm-pin build`: check out the pinned source, build ROCr, then CLR against it, into a
//! staging tree with a `rocm-pin-build.json` manifest. (Issue 3.)

pub mod manifest;

pub use manifest::{BuildManifest, ManifestLibrary, MANIFEST_FILE};
