//! `DebWriter`: a directory laid out like `dpkg-deb --build`'s input (DIR/DEBIAN/control,
//! maintainer scripts, conffiles, triggers; everything else is the payload) → a .deb.
//! Streaming: file contents are never held whole in memory.

use std::path::{Path, PathBuf};

use super::Compression;
use crate::progress::Listener;

#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub compression: Compression,
    /// Compressor level; None = the compressor's default as dpkg-deb uses it.
    pub level: Option<u32>,
    /// Compressor threads; None = all CPUs. Output bytes must not depend on this.
    pub threads: Option<u32>,
    /// When set, every mtime in both tars is set to it (not only clamped).
    pub source_date_epoch: Option<u64>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            compression: Compression::Xz,
            level: None,
            threads: None,
            source_date_epoch: None,
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BuildSummary {
    pub output: PathBuf,
    pub package: String,
    pub version: String,
    pub architecture: String,
    /// Payload entries written (files, dirs, symlinks, hard links).
    pub entries: usize,
    pub installed_size_kib: u64,
    pub size: u64,
}

/// Build `out` from `dir` with the contract of `dpkg-deb --root-owner-group --build DIR OUT`.
/// Generates DEBIAN/md5sums when absent and Installed-Size when absent; hard links (same
/// device+inode) become tar link entries; the control file is validated first.
/// On error nothing is left at `out` (written to a temporary file, renamed at the end).
pub fn build_from_dir(
    _dir: &Path,
    _out: &Path,
    _opts: &BuildOptions,
    _listener: &dyn Listener,
) -> anyhow::Result<BuildSummary> {
    todo!("deb::archive: build_from_dir")
}
