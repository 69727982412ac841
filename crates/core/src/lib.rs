//! rocm-pin: build, package, pin and verify a patched ROCm HIP/HSA runtime pair.
//!
//! Layers, low to high (docs/design.md "Layers"; `layers_tests` fails on an arrow up):
//! - base: [`output`], [`progress`], `digest`, `filetype`, [`process`], [`exit`];
//! - formats: [`deb`] (ROCm-agnostic Debian format), [`elf`], [`image`], [`wheel`] (Python
//!   wheels);
//! - host: [`host`] (the only place that touches the dpkg database, apt configuration or runs
//!   apt/dpkg), `toolchain` (the build machine's probes and compiler launcher);
//! - rocm: [`rocm`] holds ALL ROCm knowledge (package names, paths, sonames, backport symbol,
//!   version gate, the build recipe);
//! - ops: [`ops`], every operation (build, plan, package, install, verify, …); the CLI is thin;
//! - [`error`]: the exit code of any error chain, on top of everything.

#![warn(clippy::too_many_lines)]
// The public API is what a caller outside the crate uses: an item no such caller can reach is
// `pub(crate)`, so `pub` says "part of the API".
#![warn(unreachable_pub)]

// First, so its `out!`/`outln!`/`errln!` macros are in scope in every module below.
#[macro_use]
pub mod output;
pub(crate) mod digest;
pub mod error;
pub mod exit;
pub mod host;
pub mod ops;
pub mod process;
pub mod progress;
pub mod rocm;
pub(crate) mod toolchain;

// The format layer is its own crate (`pkgformats`, crates/formats), which knows nothing of
// ROCm or hosts; its modules are re-exported here under their old names, so `crate::deb::…`
// in this crate and `rocm_pin_core::deb::…` in the binary, kit and tests read as before.
pub(crate) use pkgformats::filetype;
pub use pkgformats::{deb, elf, image, interrupt, wheel};

#[cfg(test)]
mod error_kinds_tests;
#[cfg(test)]
mod fs_rule_tests;
#[cfg(test)]
mod layers_tests;
#[cfg(test)]
mod module_graph_tests;
#[cfg(test)]
mod size_limits_tests;
