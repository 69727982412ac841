//! `DebReader`: read a .deb safely — control fields, member names and compressions, every
//! data entry — and extract it without ever writing outside the destination.

use std::io::Read;
use std::path::Path;

use super::{Compression, Paragraph};

/// Limits that make a hostile archive fail instead of exhausting the machine.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// Total decompressed bytes per member (decompression-bomb guard).
    pub max_member_uncompressed: u64,
    /// Maximum size of the control member's files held in memory.
    pub max_control_file: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_member_uncompressed: 64 << 30,
            max_control_file: 16 << 20,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "type", content = "target", rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    /// Symlink with its target as stored.
    Symlink(String),
    /// Hard link to another entry (path as stored in the tar, e.g. `./opt/x/lib.so.1.2`).
    Hardlink(String),
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// Path as stored, normalised to start with `./`.
    pub path: String,
    pub kind: EntryKind,
    pub mode: u32,
    pub size: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberInfo {
    pub name: String,
    pub size: u64,
    pub compression: Option<Compression>,
}

#[derive(Debug, Clone)]
pub struct DebInfo {
    pub control: Paragraph,
    /// Every file of control.tar (control, md5sums, postinst, conffiles, …) with its bytes.
    pub control_files: Vec<(String, Vec<u8>)>,
    pub members: Vec<MemberInfo>,
    pub entries: Vec<Entry>,
}

/// Read control and the entry list (data.tar is streamed, contents not kept).
pub fn read_deb(_path: &Path, _limits: &ReadLimits) -> anyhow::Result<DebInfo> {
    todo!("deb::reader: read_deb")
}

/// Stream every data.tar entry to `visit` with a reader over its contents (empty for non-files).
pub fn for_each_data_entry(
    _path: &Path,
    _limits: &ReadLimits,
    _visit: &mut dyn FnMut(&Entry, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    todo!("deb::reader: for_each_data_entry")
}

/// Extract data.tar under `dest` (which must exist). Refuses `..`, absolute names, and any
/// entry whose path goes through a symlink; hard links are recreated as hard links.
pub fn extract_data(
    _path: &Path,
    _dest: &Path,
    _limits: &ReadLimits,
) -> anyhow::Result<Vec<Entry>> {
    todo!("deb::reader: extract_data")
}
