//! Package formats, built and read as streams, with bounds on untrusted input: Debian packages
//! ([`deb`]: ar, tar, control paragraphs, relations, versions ordered as dpkg orders them, a
//! `dpkg-deb --build` compatible writer and a reader), ELF dynamic sections ([`elf`]: SONAME,
//! NEEDED, RUNPATH, versioned symbols), OCI image layers ([`image`]: unpack with whiteouts and
//! limits) and Python wheels ([`wheel`]: a reproducible zip writer and reader, METADATA,
//! RECORD). README.md says how to use it on its own.
//!
//! The crate knows no product built on it: no package names, no install prefixes, no host
//! databases. Each module refuses bad input with its own error type ([`deb::DebError`],
//! [`elf::ElfError`], [`image::ImageError`], …), carried in an `anyhow::Error`; the caller decides
//! what each means for its exit status.
//!
//! Support the formats share: [`progress`] (the listener long work reports to), [`text`]
//! (showing untrusted names on a terminal), [`filetype`] (a file type in words), [`program`] (this process's name, for its
//! temporary files) and [`interrupt`] (removing temporary trees and killing child process groups on a signal).

#![warn(clippy::too_many_lines)]
#![warn(unreachable_pub)]

pub mod deb;
pub mod elf;
pub mod filetype;
pub mod image;
pub mod interrupt;
pub mod program;
pub mod progress;
pub mod text;
pub mod wheel;

/// README.md's example, compiled by `cargo test -p pkgformats --doc` (not run: it names files).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

#[cfg(test)]
mod product_free_tests;
