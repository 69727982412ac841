//! The Debian package format, as dpkg-deb writes and dpkg reads it.
//!
//! - [`version`]: Debian version parsing and ordering (dpkg's algorithm).
//! - [`control`]: deb822 paragraphs and relationship fields.
//! - [`ar`], [`tar`], [`compress`]: the container layers.
//! - `content`: what a package holds (control, control files, payload entries) — the writer's input.
//! - [`archive`]: the writer — a [`content::PackageContent`] streamed into a reproducible .deb;
//!   `build_from_dir` is the adapter for a `dpkg-deb --build` style tree (with DEBIAN/).
//! - [`reader`]: `DebReader` — a .deb → control, member list, entries; safe extraction.
//! - `output`: where a built package may be written (a regular file or a new path).
//! - `read_ahead`: data.tar's file contents read and md5-hashed on a thread of their own,
//!   overlapping the compressor (or inline, on the writer's thread).
//! - [`inspect`]: a .deb checked against its own md5sums, its ELF shared objects described.

pub mod ar;
pub mod archive;
pub mod compress;
pub(crate) mod content;
pub mod control;
#[doc(hidden)]
pub mod crafted;
pub mod date;
mod error;
pub mod inspect;
pub(crate) mod output;
mod read_ahead;
pub mod reader;
pub mod tar;
pub mod version;

pub use archive::{build_from_dir, build_package, BuildOptions, BuildSummary};
pub use compress::Compression;
pub use content::{ControlFile, EntryData, FileData, PackageContent, PayloadEntry};
pub use control::{Paragraph, Relation, RelationOp};
pub(crate) use error::invalid;
pub use error::DebError;
pub use reader::{DebInfo, ReadLimits};
pub use tar::{Entry, EntryKind};
pub use version::Version;
