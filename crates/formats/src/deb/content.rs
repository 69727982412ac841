//! The content model of a binary package: the control paragraph, the other control members, and
//! the payload (directories, files with their bytes or a source path, symlinks, hard links,
//! modes, mtimes; owners are always root:root, as `dpkg-deb --root-owner-group` writes them).
//! [`super::archive::build_package`] streams it into a .deb. Producers say what the package
//! holds; they never lay it out on disk first: `build_from_dir` (the `deb build DIR` adapter)
//! makes one from a tree walk, callers that already know their files make one directly.
//!
//! Archive order is the writer's business, not the producer's: entries are emitted as
//! dpkg-deb's tree walk would (depth first, each directory's children sorted bytewise), missing
//! parent directories are added (0755), and of a set of hard links the first path in that
//! order carries the bytes while the others link to it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;

use super::Paragraph;
use crate::deb::invalid;

/// Where a regular file's bytes come from.
#[derive(Debug, Clone)]
pub enum FileData {
    Bytes(Vec<u8>),
    /// Read when the file is written (streamed, never held whole in memory).
    Path(PathBuf),
}

impl FileData {
    pub(super) fn size(&self) -> anyhow::Result<u64> {
        match self {
            FileData::Bytes(b) => Ok(b.len() as u64),
            FileData::Path(p) => Ok(std::fs::metadata(p)
                .with_context(|| format!("cannot read {}", p.display()))?
                .len()),
        }
    }

    pub(super) fn open(&self) -> anyhow::Result<Box<dyn Read + '_>> {
        match self {
            FileData::Bytes(b) => Ok(Box::new(&b[..])),
            FileData::Path(p) => Ok(Box::new(
                std::fs::File::open(p).with_context(|| format!("cannot open {}", p.display()))?,
            )),
        }
    }
}

/// What one payload path is.
#[derive(Debug, Clone)]
pub enum EntryData {
    Dir,
    File(FileData),
    /// The link target, as stored.
    Symlink(Vec<u8>),
    /// The same file as another payload path (a regular file, or a hard link to one).
    HardLink(String),
}

/// One payload path. `path` is relative to the package root (a leading `/` is accepted and
/// dropped; the empty path is the root directory).
#[derive(Debug, Clone)]
pub struct PayloadEntry {
    pub path: String,
    pub data: EntryData,
    /// Permission bits; ignored for symlinks (0777) and hard links (their file's mode).
    pub mode: u32,
    /// None = the build's SOURCE_DATE_EPOCH, else the build time. A set SOURCE_DATE_EPOCH
    /// overrides every mtime.
    pub mtime: Option<u64>,
}

impl PayloadEntry {
    pub fn dir(path: impl Into<String>, mode: u32) -> Self {
        Self::new(path, EntryData::Dir, mode)
    }

    pub fn file(path: impl Into<String>, data: FileData, mode: u32) -> Self {
        Self::new(path, EntryData::File(data), mode)
    }

    pub fn symlink(path: impl Into<String>, target: impl Into<Vec<u8>>) -> Self {
        Self::new(path, EntryData::Symlink(target.into()), 0o777)
    }

    pub fn hard_link(path: impl Into<String>, target: impl Into<String>) -> Self {
        Self::new(path, EntryData::HardLink(target.into()), 0)
    }

    fn new(path: impl Into<String>, data: EntryData, mode: u32) -> Self {
        PayloadEntry {
            path: path.into(),
            data,
            mode,
            mtime: None,
        }
    }
}

/// A control member other than `control` (maintainer scripts, conffiles, triggers, md5sums…).
#[derive(Debug, Clone)]
pub struct ControlFile {
    pub name: String,
    pub data: FileData,
    pub mode: u32,
    /// As [`PayloadEntry::mtime`].
    pub mtime: Option<u64>,
}

/// Everything a .deb holds. md5sums are generated from the payload unless `control_files`
/// has one; Installed-Size is computed unless the paragraph has one.
#[derive(Debug, Clone)]
pub struct PackageContent {
    pub control: Paragraph,
    /// Mode of the control tar's `./` (DEBIAN/'s mode in a tree).
    pub control_dir_mode: u32,
    pub control_files: Vec<ControlFile>,
    /// The conffiles' absolute paths (left out of the generated md5sums).
    pub conffiles: Vec<String>,
    pub payload: Vec<PayloadEntry>,
}

/// One payload entry as written, in archive order.
pub(super) struct Ordered<'a> {
    /// Relative path without `./` (empty for the root).
    pub rel: String,
    pub kind: OrderedKind<'a>,
    pub mode: u32,
    pub mtime: Option<u64>,
}

pub(super) enum OrderedKind<'a> {
    Dir,
    File {
        data: &'a FileData,
        size: u64,
    },
    Symlink(&'a [u8]),
    /// Index (in archive order) of the entry that carries the bytes.
    Hardlink(usize),
}

/// A payload path relative to the root: a leading `/` dropped, every component a plain name.
fn relative(path: &str) -> anyhow::Result<&str> {
    let rel = path.trim_start_matches('/');
    if !rel.is_empty()
        && rel
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == ".." || c.contains('\0'))
    {
        return Err(invalid(format!(
            "payload path {path:?} is not a plain relative path (empty, `.` or `..` component)"
        )));
    }
    Ok(rel)
}

/// Sort key giving dpkg-deb's walk order: components compared bytewise, a directory before
/// its contents (`/` made to sort below every byte a name can hold).
fn order_key(rel: &str) -> Vec<u8> {
    rel.bytes().map(|b| if b == b'/' { 0 } else { b }).collect()
}

/// The payload in archive order, parents added, hard links resolved (see the module comment).
pub(super) fn ordered(payload: &[PayloadEntry]) -> anyhow::Result<Vec<Ordered<'_>>> {
    let mut by_path: BTreeMap<Vec<u8>, (String, Option<&PayloadEntry>)> = BTreeMap::new();
    by_path.insert(Vec::new(), (String::new(), None));
    for entry in payload {
        let rel = relative(&entry.path)?;
        let key = order_key(rel);
        if by_path.get(&key).is_some_and(|(_, e)| e.is_some()) {
            return Err(invalid(format!(
                "payload path {} appears twice",
                entry.path
            )));
        }
        by_path.insert(key, (rel.to_string(), Some(entry)));
        let mut parent = rel;
        while let Some((up, _)) = parent.rsplit_once('/') {
            by_path
                .entry(order_key(up))
                .or_insert_with(|| (up.to_string(), None));
            parent = up;
        }
    }
    let files = link_roots(payload)?;
    let mut out: Vec<Ordered<'_>> = Vec::with_capacity(by_path.len());
    // Root file path → index (in archive order) of the first of its links written.
    let mut first_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (rel, entry) in by_path.into_values() {
        let Some(entry) = entry else {
            out.push(Ordered {
                rel,
                kind: OrderedKind::Dir,
                mode: 0o755,
                mtime: None,
            });
            continue;
        };
        let (kind, mode) = match &entry.data {
            EntryData::Dir => (OrderedKind::Dir, entry.mode),
            EntryData::Symlink(t) => (OrderedKind::Symlink(t), 0o777),
            EntryData::File(_) | EntryData::HardLink(_) => {
                let (root, data, mode) = files[rel.as_str()];
                match first_of.get(root) {
                    Some(&first) => (OrderedKind::Hardlink(first), mode),
                    None => {
                        first_of.insert(root, out.len());
                        let size = data.size()?;
                        (OrderedKind::File { data, size }, mode)
                    }
                }
            }
        };
        out.push(Ordered {
            rel,
            kind,
            mode,
            mtime: entry.mtime,
        });
    }
    Ok(out)
}

/// For every regular file and hard link (by relative path): the regular file it is, its bytes
/// and its mode.
fn link_roots(payload: &[PayloadEntry]) -> anyhow::Result<BTreeMap<&str, (&str, &FileData, u32)>> {
    let mut by_rel: BTreeMap<&str, &PayloadEntry> = BTreeMap::new();
    for e in payload {
        by_rel.insert(relative(&e.path)?, e);
    }
    let mut out = BTreeMap::new();
    for (&rel, &entry) in &by_rel {
        let mut at = (rel, entry);
        // A chain longer than the payload is a cycle.
        for _ in 0..=by_rel.len() {
            match &at.1.data {
                EntryData::File(data) => {
                    out.insert(rel, (at.0, data, at.1.mode));
                    break;
                }
                EntryData::HardLink(target) => {
                    let t = relative(target)?;
                    let next = by_rel.get_key_value(t).ok_or_else(|| {
                        invalid(format!(
                            "hard link {} points at {target}, which is not in the payload",
                            entry.path
                        ))
                    })?;
                    at = (*next.0, *next.1);
                }
                _ if at.0 == rel => break,
                _ => {
                    return Err(invalid(format!(
                        "hard link {} points at {}, which is not a regular file",
                        entry.path, at.1.path
                    )))
                }
            }
        }
        if matches!(entry.data, EntryData::HardLink(_)) && !out.contains_key(rel) {
            return Err(invalid(format!(
                "hard link {} is part of a cycle of hard links",
                entry.path
            )));
        }
    }
    Ok(out)
}
