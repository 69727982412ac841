//! The outer ar container of a .deb (debian-binary, control.tar.*, data.tar.*).
//! `DebWriter`: a directory laid out like `dpkg-deb --build`'s input (DIR/DEBIAN/control,
//! maintainer scripts, conffiles, triggers; everything else is the payload) → a .deb.
//! Streaming: file contents are never held whole in memory.
//!
//! Order of work: data.tar is compressed first into a temporary file beside the output, with
//! md5sums computed in the same pass over each file (each file read once, by a read-ahead
//! thread when more than one thread is allowed: `super::read_ahead`); then control.tar (which holds md5sums) is
//! built in memory; then the ar is assembled into a second temporary file (copying data.tar's
//! compressed bytes, which the kernel does without a userspace pass) and renamed into place.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::ar::ArWriter;
use super::compress::Encoder;
use super::content::{
    self, ControlFile, FileData, Ordered, OrderedKind, PackageContent, PayloadEntry,
};
pub use super::read_ahead::read_ahead_by_default;
use super::read_ahead::{with_contents, Contents};
use super::tar::{TarWriter, WriteKind};
use super::{Compression, Paragraph};
use crate::deb::invalid;
use crate::progress::{self, Listener};

#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub compression: Compression,
    /// Compressor level; None = the compressor's default as dpkg-deb uses it.
    pub level: Option<u32>,
    /// Compressor threads; None = the CPUs this process may use ([`default_threads`]). Output
    /// bytes must not depend on this.
    pub threads: Option<u32>,
    /// When set, every mtime in both tars is set to it (not only clamped).
    pub source_date_epoch: Option<u64>,
    /// Read and md5-hash the files on a thread of their own, overlapping the compressor
    /// (`super::read_ahead`); None = when more than one thread is allowed
    /// ([`read_ahead_by_default`]). Output bytes must not depend on this.
    pub read_ahead: Option<bool>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            compression: Compression::Xz,
            level: None,
            threads: None,
            source_date_epoch: None,
            read_ahead: None,
        }
    }
}

/// SOURCE_DATE_EPOCH from the environment: None when unset or empty.
pub fn source_date_epoch_from_env() -> anyhow::Result<Option<u64>> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
            invalid(format!(
                "SOURCE_DATE_EPOCH={v:?} is not a whole number of seconds"
            ))
        }),
        Err(_) => Ok(None),
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
    /// Compressor threads data.tar was written with (the bytes do not depend on it).
    pub compressor_threads: u32,
    /// Whether the files were read and hashed on a thread of their own (the bytes do not
    /// depend on it either).
    pub read_ahead: bool,
}

/// Maintainer scripts: dpkg-deb requires them to be executable.
const MAINTAINER_SCRIPTS: &[&str] = &["preinst", "postinst", "prerm", "postrm", "config"];

fn tar_name(rel: &[u8], dir: bool) -> Vec<u8> {
    let mut name = b"./".to_vec();
    name.extend_from_slice(rel);
    if dir && !rel.is_empty() {
        name.push(b'/');
    }
    name
}

/// Depth-first walk with each directory's children sorted bytewise (a directory comes before
/// its contents, as dpkg-deb's tree walk emits them). Hard links: the first path of an inode in
/// this order is the file; later ones link to it.
fn scan_payload(dir: &Path) -> anyhow::Result<Vec<PayloadEntry>> {
    let mut out = Vec::new();
    let mut inodes: HashMap<(u64, u64), String> = HashMap::new();
    let root_meta =
        fs::symlink_metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    out.push(PayloadEntry {
        mtime: Some(mtime_of(&root_meta)),
        ..PayloadEntry::dir("", root_meta.mode() & 0o7777)
    });
    walk_dir(&mut out, &mut inodes, dir, "", true)?;
    Ok(out)
}

fn mtime_of(meta: &fs::Metadata) -> u64 {
    u64::try_from(meta.mtime()).unwrap_or(0)
}

/// [`scan_payload`]'s step: the entries under `abs` (whose path in the package is `rel`).
fn walk_dir(
    out: &mut Vec<PayloadEntry>,
    inodes: &mut HashMap<(u64, u64), String>,
    abs: &Path,
    rel: &str,
    top: bool,
) -> anyhow::Result<()> {
    let mut names: Vec<OsString> = fs::read_dir(abs)
        .with_context(|| format!("cannot list {}", abs.display()))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot list {}", abs.display()))?;
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    for name in names {
        if top && name == "DEBIAN" {
            continue;
        }
        let path = abs.join(&name);
        let Some(name) = name.to_str() else {
            return Err(invalid(format!(
                "{}: file name is not UTF-8",
                path.display()
            )));
        };
        let child_rel = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        let meta = fs::symlink_metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let ft = meta.file_type();
        let mode = meta.mode() & 0o7777;
        let entry = if ft.is_dir() {
            PayloadEntry::dir(child_rel.clone(), mode)
        } else if ft.is_symlink() {
            let target = fs::read_link(&path)
                .with_context(|| format!("cannot read symlink {}", path.display()))?;
            PayloadEntry::symlink(child_rel.clone(), target.as_os_str().as_bytes())
        } else if ft.is_file() {
            let first = if meta.nlink() > 1 {
                inodes
                    .entry((meta.dev(), meta.ino()))
                    .or_insert_with(|| child_rel.clone())
                    .clone()
            } else {
                child_rel.clone()
            };
            if first == child_rel {
                PayloadEntry::file(child_rel.clone(), FileData::Path(path.clone()), mode)
            } else {
                PayloadEntry::hard_link(child_rel.clone(), first)
            }
        } else {
            return Err(invalid(format!("{}: unsupported file type (only files, directories, symlinks and hard links go into a package)", path.display())));
        };
        out.push(PayloadEntry {
            mtime: Some(mtime_of(&meta)),
            ..entry
        });
        if ft.is_dir() {
            walk_dir(out, inodes, &path, &child_rel, false)?;
        }
    }
    Ok(())
}

/// Installed-Size as dpkg-gencontrol computes it: regular files and symlinks count their size
/// in KiB rounded up (each inode once), every other entry counts 1.
fn installed_size_kib(entries: &[Ordered<'_>]) -> u64 {
    entries
        .iter()
        .map(|e| match &e.kind {
            OrderedKind::File { size, .. } => size.div_ceil(1024),
            OrderedKind::Symlink(t) => (t.len() as u64).div_ceil(1024),
            OrderedKind::Hardlink(_) => 0,
            OrderedKind::Dir => 1,
        })
        .sum()
}

struct ControlDir {
    paragraph: Paragraph,
    /// Other DEBIAN files: (name, path, mode), sorted by name; `control` excluded.
    files: Vec<(String, PathBuf, u32)>,
    conffiles: Vec<String>,
}

/// The package tree itself is checked before its DEBIAN/: "no DEBIAN directory" would send a
/// mistyped path looking for one.
fn check_tree_exists(dir: &Path) -> anyhow::Result<()> {
    match fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(invalid(format!(
            "{}: the package tree does not exist (give the directory that holds \
             DEBIAN/control and the files to install)",
            dir.display()
        ))),
        Ok(meta) if !meta.is_dir() => Err(invalid(format!(
            "{}: is not a directory (the package tree is a directory that holds \
             DEBIAN/control and the files to install)",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

fn read_control_dir(dir: &Path) -> anyhow::Result<ControlDir> {
    check_tree_exists(dir)?;
    let debian = dir.join("DEBIAN");
    let meta = fs::symlink_metadata(&debian).with_context(|| {
        format!(
            "{}: no DEBIAN directory (a package tree needs DEBIAN/control)",
            dir.display()
        )
    })?;
    if !meta.is_dir() {
        return Err(invalid(format!("{}: is not a directory", debian.display())));
    }
    let debian_mode = meta.mode() & 0o7777;
    // dpkg-deb's rule: 0755, optionally group-writable; nothing else (no setgid either).
    if debian_mode & 0o7757 != 0o755 {
        return Err(invalid(format!("{}: control directory has bad permissions {debian_mode:03o} (must be 0755 or 0775; run chmod 0755)", debian.display())));
    }
    let control_path = debian.join("control");
    let control_meta = fs::symlink_metadata(&control_path)
        .with_context(|| format!("{}: missing", control_path.display()))?;
    if !control_meta.is_file() {
        return Err(invalid(format!(
            "{}: is not a regular file",
            control_path.display()
        )));
    }
    if control_meta.len() > 1 << 20 {
        return Err(invalid(format!(
            "{}: larger than 1 MiB",
            control_path.display()
        )));
    }
    let text = fs::read_to_string(&control_path)
        .with_context(|| format!("{}: cannot read as UTF-8 text", control_path.display()))?;
    let paragraph =
        Paragraph::parse(&text).map_err(|e| invalid(format!("{}: {e}", control_path.display())))?;
    paragraph
        .validate_binary()
        .map_err(|e| invalid(format!("{}: {e}", control_path.display())))?;

    let mut files = Vec::new();
    let mut names: Vec<OsString> = fs::read_dir(&debian)
        .with_context(|| format!("cannot list {}", debian.display()))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot list {}", debian.display()))?;
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let mut conffiles = Vec::new();
    for name in names {
        let name_str = name
            .to_str()
            .ok_or_else(|| invalid(format!("{}: a file name is not UTF-8", debian.display())))?
            .to_string();
        if name_str == "control" {
            continue;
        }
        let path = debian.join(&name);
        let meta = fs::symlink_metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !meta.is_file() {
            return Err(invalid(format!(
                "{}: control member files must be plain files (no directories or symlinks)",
                path.display()
            )));
        }
        let mode = meta.mode() & 0o7777;
        if MAINTAINER_SCRIPTS.contains(&name_str.as_str())
            && ((mode & !0o7757) != 0 || (mode & 0o555) != 0o555)
        {
            return Err(invalid(format!("{}: maintainer script has bad permissions {mode:03o} (must be >=0555 and <=0775; run chmod 0755)", path.display())));
        }
        if name_str == "conffiles" {
            let text = fs::read_to_string(&path)
                .with_context(|| format!("{}: cannot read as UTF-8 text", path.display()))?;
            let lines =
                parse_conffiles(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
            for line in lines {
                let on_disk = dir.join(line.path.trim_start_matches('/'));
                let present = fs::symlink_metadata(&on_disk);
                if line.remove_on_upgrade {
                    if present.is_ok() {
                        return Err(invalid(format!("{}: conffile {} is in the package but flagged remove-on-upgrade (drop the flag or the file)", path.display(), line.path)));
                    }
                    continue;
                }
                match present {
                    Ok(m) if m.is_file() => {}
                    Ok(_) => {
                        return Err(invalid(format!(
                            "{}: conffile {} is not a plain file in the package",
                            path.display(),
                            line.path
                        )))
                    }
                    Err(_) => {
                        return Err(invalid(format!(
                            "{}: conffile {} does not appear in the package",
                            path.display(),
                            line.path
                        )))
                    }
                }
                conffiles.push(line.path);
            }
        }
        files.push((name_str, path, mode));
    }
    Ok(ControlDir {
        paragraph,
        files,
        conffiles,
    })
}

/// One line of DEBIAN/conffiles.
#[derive(Debug, PartialEq, Eq)]
struct ConffileLine {
    /// Absolute path inside the package, e.g. `/etc/foo.conf`.
    path: String,
    /// `remove-on-upgrade /path` (dpkg ≥ 1.20.1): the conffile must not be in this package.
    remove_on_upgrade: bool,
}

/// Parse DEBIAN/conffiles with dpkg-deb's rules (build.c, 1.21): every line ends in a newline,
/// has no leading or trailing white space, is `[FLAG ]/absolute/path` with `remove-on-upgrade`
/// the only flag. dpkg-deb only warns about a duplicated path; we refuse it, since a repeated
/// line is always a mistake in the tree and its warning is easy to miss.
fn parse_conffiles(text: &str) -> Result<Vec<ConffileLine>, String> {
    let mut out: Vec<ConffileLine> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut rest = text;
    let mut number = 0;
    while !rest.is_empty() {
        number += 1;
        let Some((line, tail)) = rest.split_once('\n') else {
            return Err(format!("line {number} ({rest:?}) has no final newline"));
        };
        rest = tail;
        if line.starts_with(char::is_whitespace) {
            return Err(format!("line {number} ({line:?}) has leading white space"));
        }
        if line.ends_with(char::is_whitespace) {
            return Err(format!(
                "line {number} ({line:?}) has trailing white space (or a CR line ending)"
            ));
        }
        let (flag, path) = match line.split_once(' ') {
            Some((flag, path)) if !flag.starts_with('/') => (Some(flag), path),
            _ => (None, line),
        };
        if let Some(flag) = flag {
            if flag != "remove-on-upgrade" {
                return Err(format!(
                    "line {number}: unknown flag {flag:?} for conffile {path:?} (only remove-on-upgrade exists)"
                ));
            }
        }
        if !path.starts_with('/') {
            return Err(format!(
                "line {number}: conffile {path:?} is not an absolute path"
            ));
        }
        if !seen.insert(path.to_string()) {
            return Err(format!(
                "line {number}: conffile {path} is listed twice (dpkg-deb warns \"conffile name '{path}' is duplicated\"); remove the repeated line"
            ));
        }
        out.push(ConffileLine {
            path: path.to_string(),
            remove_on_upgrade: flag.is_some(),
        });
    }
    Ok(out)
}

/// The compressor threads `deb build` uses when none are given: the CPUs this process may use
/// (std's count honours the affinity mask and the cgroup v2 CPU quota, so a container limited to
/// 2 CPUs gets 2, not the host's count), and never more. A busy machine is no reason to add
/// workers: that takes CPU from the neighbours and multiplies xz's memory exactly when the
/// machine is busiest. The output bytes never depend on it. Public so the bare-compressor
/// benchmark driver picks the same count.
pub fn default_threads() -> u32 {
    compressor_threads(None, std::thread::available_parallelism().ok())
}

/// The threads for a build: `requested` (`--threads N`) when given, else `available` (what
/// [`std::thread::available_parallelism`] reports; 1 when it cannot tell). At least 1.
pub fn compressor_threads(
    requested: Option<u32>,
    available: Option<std::num::NonZeroUsize>,
) -> u32 {
    match requested {
        Some(n) => n.max(1),
        None => available.map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX)),
    }
}

#[cfg(test)]
mod thread_tests {
    use super::{compressor_threads, default_threads};
    use std::num::NonZeroUsize;

    #[test]
    fn the_default_is_the_available_cpus_and_a_request_wins() {
        let cpus = |n| NonZeroUsize::new(n);
        assert_eq!(compressor_threads(None, cpus(2)), 2);
        assert_eq!(compressor_threads(None, cpus(64)), 64);
        assert_eq!(compressor_threads(None, None), 1);
        assert_eq!(compressor_threads(Some(3), cpus(2)), 3);
        assert_eq!(compressor_threads(Some(0), cpus(2)), 1);
    }

    #[test]
    fn the_default_never_exceeds_available_parallelism() {
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(default_threads() as usize, available);
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Write data.tar (compressed) into `out`, hashing regular files on the way when `md5` is set,
/// their contents read on the writer's thread or read ahead (`ahead`: `super::read_ahead`).
/// Returns the md5sums lines (path without `./`, in archive order).
pub(super) fn write_data_tar<W: Write>(
    entries: &[Ordered<'_>],
    out: W,
    opts: &BuildOptions,
    threads: u32,
    md5: bool,
    ahead: bool,
) -> anyhow::Result<(W, Vec<(String, String)>)> {
    let enc = Encoder::new(out, opts.compression, opts.level, threads)
        .context("cannot start the compressor")?;
    let tar = TarWriter::new(enc);
    let (tar, sums) = with_contents(entries, md5, ahead, |contents| {
        write_entries(entries, tar, opts, contents)
    })?;
    let enc = tar.finish().context("finishing data.tar")?;
    let out = enc.finish().context("finishing the data.tar compressor")?;
    Ok((out, sums))
}

/// md5sums lines: (path without `./`, md5 hex), in archive order.
type Md5Lines = Vec<(String, String)>;

/// [`write_data_tar`]'s walk: every entry's header, and each regular file's contents from
/// `contents`; returns the tar writer and the md5sums lines.
fn write_entries<W: Write>(
    entries: &[Ordered<'_>],
    mut tar: TarWriter<W>,
    opts: &BuildOptions,
    contents: &mut Contents,
) -> anyhow::Result<(TarWriter<W>, Md5Lines)> {
    let mut sums: Vec<(String, String)> = Vec::new();
    // Entries that later hard links point at, and their sums.
    let linked: std::collections::HashSet<usize> = entries
        .iter()
        .filter_map(|e| match e.kind {
            OrderedKind::Hardlink(first) => Some(first),
            _ => None,
        })
        .collect();
    let mut sum_of_entry: HashMap<usize, String> = HashMap::new();
    let now = now_secs();
    for (index, entry) in entries.iter().enumerate() {
        let context = || format!("writing data.tar: {}", entry.rel);
        let mtime = opts.source_date_epoch.or(entry.mtime).unwrap_or(now);
        let rel = entry.rel.as_bytes();
        match &entry.kind {
            OrderedKind::Dir => tar
                .append_header(&tar_name(rel, true), WriteKind::Dir, entry.mode, mtime)
                .with_context(context)?,
            OrderedKind::Symlink(target) => tar
                .append_header(
                    &tar_name(rel, false),
                    WriteKind::Symlink(target),
                    entry.mode,
                    mtime,
                )
                .with_context(context)?,
            OrderedKind::Hardlink(first) => {
                let target = tar_name(entries[*first].rel.as_bytes(), false);
                tar.append_header(
                    &tar_name(rel, false),
                    WriteKind::Hardlink(&target),
                    entry.mode,
                    mtime,
                )
                .with_context(context)?;
                // Same inode, same contents: reuse the first path's sum.
                if let Some(sum) = sum_of_entry.get(first) {
                    sums.push((entry.rel.clone(), sum.clone()));
                }
            }
            OrderedKind::File { data, size } => {
                tar.append_header(
                    &tar_name(rel, false),
                    WriteKind::File(*size),
                    entry.mode,
                    mtime,
                )
                .with_context(context)?;
                if let Some(sum) = contents.write_file(&mut tar, data, *size, &entry.rel)? {
                    if linked.contains(&index) {
                        sum_of_entry.insert(index, sum.clone());
                    }
                    sums.push((entry.rel.clone(), sum));
                }
            }
        }
    }
    Ok((tar, sums))
}

/// Build control.tar in memory (it is small): `./`, `./control`, then the other control files
/// and the generated md5sums, sorted by name.
fn control_tar(
    content: &PackageContent,
    control_text: &str,
    md5sums: Option<&str>,
    stamp: u64,
    sde: Option<u64>,
) -> anyhow::Result<Vec<u8>> {
    let mut items: Vec<(&str, FileData, u32, u64)> = Vec::new();
    items.push((
        "control",
        FileData::Bytes(control_text.as_bytes().to_vec()),
        0o644,
        stamp,
    ));
    if let Some(sums) = md5sums {
        items.push((
            "md5sums",
            FileData::Bytes(sums.as_bytes().to_vec()),
            0o644,
            stamp,
        ));
    }
    for f in &content.control_files {
        let mtime = sde.or(f.mtime).unwrap_or(stamp);
        items.push((&f.name, f.data.clone(), f.mode, mtime));
    }
    items.sort_by(|a, b| a.0.cmp(b.0));
    let mut tar = TarWriter::new(Vec::new());
    tar.append_header(b"./", WriteKind::Dir, content.control_dir_mode, stamp)?;
    for (name, data, mode, mtime) in items {
        let tname = format!("./{name}");
        let size = data.size()?;
        if size > 64 << 20 {
            return Err(invalid(format!(
                "control file {name} is larger than 64 MiB"
            )));
        }
        tar.append_header(tname.as_bytes(), WriteKind::File(size), mode, mtime)?;
        tar.write_contents(&mut data.open()?, size, &mut |_| {})
            .with_context(|| format!("writing control.tar: {name}"))?;
    }
    Ok(tar.finish()?)
}

/// Build `out` from `dir` with the contract of `dpkg-deb --root-owner-group --build DIR OUT`.
/// Generates DEBIAN/md5sums when absent and Installed-Size when absent; hard links (same
/// device+inode) become tar link entries; the control file is validated first.
/// On error nothing is left at `out` (written to a temporary file, renamed at the end).
pub fn build_from_dir(
    dir: &Path,
    out: &Path,
    opts: &BuildOptions,
    listener: &dyn Listener,
) -> anyhow::Result<BuildSummary> {
    // What is at `out` is judged first, as dpkg-deb does (a directory, a device, a FIFO …).
    let out = &super::output::package_output_path(out)?;
    let control = read_control_dir(dir)?;
    checked_output_dir(dir, out)?;
    let payload = progress::step(listener, "scan package tree", || scan_payload(dir))?;
    let debian_meta = fs::symlink_metadata(dir.join("DEBIAN"))?;
    let mut control_files = Vec::new();
    for (name, path, mode) in control.files {
        let meta = fs::symlink_metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        control_files.push(ControlFile {
            name,
            data: FileData::Path(path),
            mode,
            mtime: Some(mtime_of(&meta)),
        });
    }
    let content = PackageContent {
        control: control.paragraph,
        control_dir_mode: debian_meta.mode() & 0o7777,
        control_files,
        conffiles: control.conffiles,
        payload,
    };
    build_package(&content, out, opts, listener)
}

/// Stream `content` into the .deb `out` (see `super::content`): data.tar first, with the
/// md5sums computed in the same pass, then control.tar, then the ar. On error nothing is left
/// at `out` (written to a temporary file, renamed at the end).
pub fn build_package(
    content: &PackageContent,
    out: &Path,
    opts: &BuildOptions,
    listener: &dyn Listener,
) -> anyhow::Result<BuildSummary> {
    // Refuse a device, FIFO or dangling symlink before anything is written; a symlink to a
    // regular file is written through, as dpkg-deb does.
    let out = &super::output::package_output_path(out)?;
    let sde = opts.source_date_epoch;
    let mut paragraph = content.control.clone();
    paragraph
        .validate_binary()
        .map_err(|e| invalid(format!("{}: control: {e}", out.display())))?;
    let package = paragraph.get("Package").unwrap_or_default().to_string();
    let version = paragraph.get("Version").unwrap_or_default().to_string();
    let architecture = paragraph
        .get("Architecture")
        .unwrap_or_default()
        .to_string();
    let out_dir = output_dir(out)?;
    let entries = content::ordered(&content.payload)?;
    check_conffiles_in_payload(&content.conffiles, &entries)?;
    let installed_size_kib = fill_installed_size(&mut paragraph, &entries)?;

    let c = opts.compression;
    let want_md5 = !content.control_files.iter().any(|f| f.name == "md5sums");
    let threads = match opts.threads {
        Some(n) => n.max(1),
        None => default_threads(),
    };
    let ahead = opts
        .read_ahead
        .unwrap_or_else(|| read_ahead_by_default(threads));
    let (data, sums) = write_data_member(
        &out_dir,
        &entries,
        opts,
        (threads, ahead),
        want_md5,
        listener,
    )?;
    let md5sums = if want_md5 {
        md5sums_text(&sums, &content.conffiles)
    } else {
        None
    };

    let stamp = sde.unwrap_or_else(now_secs);
    let mut control_text = paragraph.to_string();
    if !control_text.ends_with('\n') {
        control_text.push('\n');
    }
    let control_name = format!("control.tar{}", c.suffix());
    let control_bytes = progress::step(listener, &format!("write {control_name}"), || {
        let tar = control_tar(content, &control_text, md5sums.as_deref(), stamp, sde)?;
        super::compress::compress_bytes(&tar, c, opts.level, 1).context("compressing control.tar")
    })?;
    let control_member = ControlMember {
        name: control_name,
        bytes: control_bytes,
    };

    let size = assemble_deb(out, &out_dir, &control_member, data, stamp, listener)?;
    listener.info(&format!(
        "{}: {package} {version} ({architecture}), {} entries, {} bytes",
        out.display(),
        entries.len(),
        size
    ));
    Ok(BuildSummary {
        output: out.to_path_buf(),
        package,
        version,
        architecture,
        entries: entries.len(),
        installed_size_kib,
        size,
        compressor_threads: threads,
        read_ahead: ahead,
    })
}

/// Every conffile must be a regular file of the payload (dpkg-deb's rule).
fn check_conffiles_in_payload(conffiles: &[String], entries: &[Ordered<'_>]) -> anyhow::Result<()> {
    for c in conffiles {
        let rel = c.trim_start_matches('/');
        let found = entries.iter().find(|e| e.rel == rel);
        if !found
            .is_some_and(|e| matches!(e.kind, OrderedKind::File { .. } | OrderedKind::Hardlink(_)))
        {
            return Err(invalid(format!(
                "conffile {c} is not a regular file in the package"
            )));
        }
    }
    Ok(())
}

/// The directory `out` goes into; refused when `out` is a directory, the directory does not
/// exist, or it lies inside the package tree (the .deb would package itself).
fn checked_output_dir(dir: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    let out_dir = output_dir(out)?;
    let out_dir_canon = out_dir
        .canonicalize()
        .with_context(|| format!("output directory {} does not exist", out_dir.display()))?;
    if let Ok(dir_canon) = dir.canonicalize() {
        if out_dir_canon.starts_with(&dir_canon) {
            return Err(invalid(format!(
                "{}: the output would be inside the package tree {} (it would package itself)",
                out.display(),
                dir.display()
            )));
        }
    }
    Ok(out_dir)
}

/// The directory `out` goes into; refused when `out` is a directory or the directory does not
/// exist.
fn output_dir(out: &Path) -> anyhow::Result<PathBuf> {
    let out_dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if out.is_dir() {
        return Err(invalid(format!(
            "{}: is a directory; give the output .deb file name",
            out.display()
        )));
    }
    if !out_dir.is_dir() {
        return Err(invalid(format!(
            "output directory {} does not exist",
            out_dir.display()
        )));
    }
    Ok(out_dir)
}

/// Set Installed-Size from the payload when the control file lacks it; returns the value the
/// package declares (the given one when it parses, else the computed one).
fn fill_installed_size(paragraph: &mut Paragraph, entries: &[Ordered<'_>]) -> anyhow::Result<u64> {
    let installed = installed_size_kib(entries);
    if paragraph.get("Installed-Size").is_none() {
        paragraph
            .set("Installed-Size", &installed.to_string())
            .map_err(|e| invalid(format!("setting Installed-Size: {e}")))?;
    }
    Ok(paragraph
        .get("Installed-Size")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(installed))
}

/// data.tar.*, compressed, in a temporary file beside the output.
struct DataMember {
    name: String,
    file: tempfile::NamedTempFile,
    size: u64,
}

/// control.tar.*, compressed, in memory (it is small).
struct ControlMember {
    name: String,
    bytes: Vec<u8>,
}

/// Write data.tar first (md5sums come out of this pass, when `want_md5`), into a temporary file
/// in `out_dir` so the final copy stays on one filesystem; with `threads` compressor threads,
/// the files read ahead when `ahead`.
fn write_data_member(
    out_dir: &Path,
    entries: &[Ordered<'_>],
    opts: &BuildOptions,
    (threads, ahead): (u32, bool),
    want_md5: bool,
    listener: &dyn Listener,
) -> anyhow::Result<(DataMember, Vec<(String, String)>)> {
    let name = format!("data.tar{}", opts.compression.suffix());
    let data_tmp = tempfile::Builder::new()
        .prefix(&format!(".{}-data.", crate::program::name()))
        .tempfile_in(out_dir)
        .with_context(|| format!("cannot create a temporary file in {}", out_dir.display()))?;
    let (file, sums) = progress::step(listener, &format!("write {name}"), || {
        let writer = BufWriter::with_capacity(1 << 20, data_tmp.as_file());
        let (writer, sums) = write_data_tar(entries, writer, opts, threads, want_md5, ahead)?;
        writer
            .into_inner()
            .map_err(|e| invalid(format!("writing {name}: {}", e.error())))?;
        Ok::<_, anyhow::Error>((data_tmp, sums))
    })?;
    let size = file
        .as_file()
        .metadata()
        .context("cannot stat the temporary data.tar")?
        .len();
    Ok((DataMember { name, file, size }, sums))
}

/// The md5sums file for the payload sums, None when nothing is left to list.
fn md5sums_text(sums: &[(String, String)], conffiles: &[String]) -> Option<String> {
    let conffiles: std::collections::HashSet<&str> = conffiles
        .iter()
        .map(|s| s.trim_start_matches('/'))
        .collect();
    // Conffiles are left out, as dh_md5sums does: dpkg tracks them in its conffile database.
    let text: String = sums
        .iter()
        .filter(|(p, _)| !conffiles.contains(p.as_str()))
        .map(|(p, s)| format!("{s}  {p}\n"))
        .collect();
    (!text.is_empty()).then_some(text)
}

/// Assemble the ar (debian-binary, control, data) into a temporary file beside `out` and rename
/// it into place; returns the size of the finished .deb.
fn assemble_deb(
    out: &Path,
    out_dir: &Path,
    control: &ControlMember,
    data: DataMember,
    stamp: u64,
    listener: &dyn Listener,
) -> anyhow::Result<u64> {
    let deb_tmp = tempfile::Builder::new()
        .prefix(&format!(".{}-deb.", crate::program::name()))
        .tempfile_in(out_dir)
        .with_context(|| format!("cannot create a temporary file in {}", out_dir.display()))?;
    progress::step(listener, "assemble .deb", || {
        let mut ar = ArWriter::new(BufWriter::new(deb_tmp.as_file()), stamp)?;
        ar.append_bytes("debian-binary", b"2.0\n")?;
        ar.append_bytes(&control.name, &control.bytes)?;
        let mut data_file = data.file.reopen()?;
        // Flush the buffered headers before the (kernel-side) bulk copy.
        let mut inner = ar.finish()?;
        inner.flush()?;
        let file = inner.into_inner().map_err(|e| e.into_error())?;
        let mut ar = ArWriter::resume(file, stamp);
        ar.append(&data.name, data.size, &mut data_file)?;
        ar.finish()?.sync_all()?;
        Ok::<_, io::Error>(())
    })
    .with_context(|| format!("writing {}", out.display()))?;
    drop(data);
    fs::set_permissions(deb_tmp.path(), fs::Permissions::from_mode(0o644))
        .with_context(|| format!("cannot chmod {}", deb_tmp.path().display()))?;
    deb_tmp.persist(out).map_err(|e| {
        invalid(format!(
            "cannot rename the finished package to {}: {}",
            out.display(),
            e.error
        ))
    })?;
    Ok(fs::metadata(out)
        .with_context(|| format!("cannot stat {}", out.display()))?
        .len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<(String, bool)> {
        parse_conffiles(text)
            .unwrap()
            .into_iter()
            .map(|l| (l.path, l.remove_on_upgrade))
            .collect()
    }

    fn err(text: &str) -> String {
        parse_conffiles(text).unwrap_err()
    }

    #[test]
    fn conffiles_accepted() {
        assert_eq!(ok(""), vec![]);
        assert_eq!(
            ok("/etc/a\nremove-on-upgrade /etc/old\n/etc/b c\n"),
            vec![
                ("/etc/a".to_string(), false),
                ("/etc/old".to_string(), true),
                ("/etc/b c".to_string(), false)
            ]
        );
    }

    #[test]
    fn conffiles_refused() {
        assert!(err("/etc/a\n/etc/a\n").contains("listed twice"));
        assert!(err("/etc/a\nremove-on-upgrade /etc/a\n").contains("listed twice"));
        assert!(err("/etc/a").contains("no final newline"));
        assert!(err("\n/etc/a\n").contains("not an absolute path"));
        assert!(err(" /etc/a\n").contains("leading white space"));
        assert!(err("/etc/a \n").contains("trailing white space"));
        assert!(err("/etc/a\r\n").contains("trailing white space"));
        assert!(err("etc/a\n").contains("not an absolute path"));
        assert!(err("bogus /etc/a\n").contains("unknown flag"));
        assert!(err("remove-on-upgrade  /etc/a\n").contains("not an absolute path"));
    }
}
