//! rocm-pin: build, package, pin and verify a patched ROCm HIP/HSA runtime pair.
//!
//! Layering (see DESIGN.md §2):
//! - [`deb`] is the ROCm-agnostic Debian format layer (ar, tar, compression, deb822, versions).
//! - [`elf`] reads SONAME / NEEDED / exported symbols.
//! - [`rocm`] holds ALL ROCm knowledge (package names, paths, sonames, backport symbol, version gate).
//! - [`host`] is the only place that touches the dpkg database, apt configuration or runs apt/dpkg.
//! - [`build`], [`plan`], [`verify`], [`repo`] are the pipeline stages; [`cli`] is thin.

#![warn(clippy::too_many_lines)]

// First, so its `out!`/`outln!`/`errln!` macros are in scope in every module below.
#[macro_use]
pub mod output;
pub mod deb;
pub mod digest;
pub mod elf;
pub mod error;
pub mod exit;
pub mod filetype;
pub mod host;
pub mod image;
pub mod ops;
pub mod process;
pub mod progress;
pub mod rocm;
pub mod toolchain;
