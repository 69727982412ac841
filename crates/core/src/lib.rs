//! rocm-pin: build, package, pin and verify a patched ROCm HIP/HSA runtime pair.
//!
//! Layers, low to high (docs/design.md "Layers"; `layers_tests` fails on an arrow up):
//! - base: [`output`], [`progress`], [`digest`], [`filetype`], [`process`], [`exit`];
//! - formats: [`deb`] (ROCm-agnostic Debian format), [`elf`], [`image`];
//! - host: [`host`] (the only place that touches the dpkg database, apt configuration or runs
//!   apt/dpkg), [`toolchain`] (the build machine's probes and compiler launcher);
//! - rocm: [`rocm`] holds ALL ROCm knowledge (package names, paths, sonames, backport symbol,
//!   version gate, the build recipe);
//! - ops: [`ops`], every operation (build, plan, package, install, verify, …); the CLI is thin;
//! - [`error`]: the exit code of any error chain, on top of everything.

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

#[cfg(test)]
mod layers_tests;
