//! `DebReader`: read a .deb safely — control fields, member names and compressions, every
//! data entry — and extract it without ever writing outside the destination.
//!
//! Every error is one line naming the file, the member and the problem, e.g.
//! `pkg.deb: data.tar.xz: entry "./a/../../x" contains a '..' component`.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::ar::ArReader;
use super::tar::{self, Entry, EntryKind};
use super::{Compression, Paragraph};
use crate::deb::invalid;

/// Limits that make a hostile archive fail instead of exhausting the machine.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// Total decompressed bytes per member (decompression-bomb guard), whatever its size.
    pub max_member_uncompressed: u64,
    /// Decompressed bytes per compressed byte of one member, beyond [`RATIO_SLACK`]: what a
    /// member may cost is bounded by its size. Every decoded byte counts (tar headers, pax and
    /// GNU extension records, padding).
    pub ratio: u64,
    /// Maximum size of one control member file held in memory.
    pub max_control_file: u64,
    /// Maximum number of entries in the control member (real packages have a handful).
    pub max_control_entries: u64,
    /// Maximum total size of the control member's files, all held in memory at once.
    pub max_control_total: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_member_uncompressed: 64 << 30,
            // Real packages decode to 3-10 times their members (Debian's xz members of shared
            // libraries ~3-6x, control members ~9x); gzip cannot pass ~1032:1 whatever it
            // holds, so 1000 refuses no gzip member and only bombs of xz or zstd (a 130 KB
            // member of 4 GiB of zeros is ~30000:1). The same bound as an image layer's.
            ratio: 1000,
            max_control_file: 16 << 20,
            max_control_entries: 256,
            max_control_total: 64 << 20,
        }
    }
}

/// Decompressed bytes a member may always hold, whatever its compressed size: small members
/// compress far better than big ones (an empty tar is 10 KiB of zeros, ~100 bytes compressed).
pub const RATIO_SLACK: u64 = 16 << 20;

/// The keys [`ReadLimits::set`] takes (`deb inspect --deb-limit KEY=VALUE`).
pub const LIMIT_KEYS: [&str; 2] = ["ratio", "member-bytes"];

impl ReadLimits {
    /// The most decompressed bytes a member of `compressed` bytes may give (ratio limit
    /// within the absolute one), and how to raise it, for the error.
    fn member_limit(&self, compressed: u64) -> (u64, String) {
        let by_ratio = compressed
            .saturating_mul(self.ratio)
            .saturating_add(RATIO_SLACK);
        if by_ratio < self.max_member_uncompressed {
            let why = format!(
                "ratio={} of its {compressed} compressed bytes, beyond {} MiB; raise it with \
                 --deb-limit ratio=N",
                self.ratio,
                RATIO_SLACK >> 20
            );
            (by_ratio, why)
        } else {
            let why = format!(
                "member-bytes={}; raise it with --deb-limit member-bytes=N",
                self.max_member_uncompressed
            );
            (self.max_member_uncompressed, why)
        }
    }

    /// Apply one `KEY=VALUE` (`ratio=5000`, `member-bytes=100G`; K, M, G, T are powers of
    /// 1024).
    pub fn set(&mut self, spec: &str) -> Result<(), String> {
        let keys = LIMIT_KEYS.join(", ");
        let (key, value) = spec
            .split_once('=')
            .ok_or_else(|| format!("deb limit {spec:?} is not KEY=VALUE (keys: {keys})"))?;
        let n = parse_size(value.trim()).filter(|&n| n > 0).ok_or_else(|| {
            format!(
                "deb limit {key}: {value:?} is not a positive number (K, M, G, T suffixes allowed)"
            )
        })?;
        match key.trim() {
            "ratio" => self.ratio = n,
            "member-bytes" => self.max_member_uncompressed = n,
            _ => return Err(format!("unknown deb limit {key:?} (keys: {keys})")),
        }
        Ok(())
    }

    /// The decompressed size control.tar may reach: its files plus, per entry, a tar header and
    /// padding, plus the end-of-archive blocks and record padding. Past it the member is a
    /// bomb whatever its entries claim.
    fn control_tar_limit(&self) -> u64 {
        self.max_control_total
            .saturating_add(self.max_control_entries.saturating_mul(1024))
            .saturating_add(20 << 10)
            .min(self.max_member_uncompressed)
    }
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

impl DebInfo {
    /// A control.tar file's bytes by name (`md5sums`, `conffiles`, `postinst`, …).
    pub fn control_file(&self, name: &str) -> Option<&[u8]> {
        self.control_files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }
}

/// The control paragraph and every control.tar file (name, bytes).
pub type ControlMember = (Paragraph, Vec<(String, Vec<u8>)>);

/// What to do with data.tar while walking a package.
enum DataPass<'a> {
    /// Stop after the control member (data.tar is not read).
    Skip,
    Visit(&'a mut dyn FnMut(&Entry, &mut dyn Read) -> anyhow::Result<()>),
}

struct Walked {
    control: Option<ControlMember>,
    members: Vec<MemberInfo>,
}

fn read_control_tar(
    reader: &mut dyn Read,
    member: &str,
    limits: &ReadLimits,
) -> anyhow::Result<ControlMember> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut entry_count: u64 = 0;
    let mut total: u64 = 0;
    let mut r = reader;
    tar::read_safe(&mut r, &mut |entry, content| {
        entry_count += 1;
        if entry_count > limits.max_control_entries {
            return Err(invalid(format!(
                "{member}: the control member has more than the limit of {} entries",
                limits.max_control_entries
            )));
        }
        match entry.kind {
            super::EntryKind::File => {}
            super::EntryKind::Dir if entry.path == "./" => return Ok(()),
            _ => {
                return Err(invalid(format!(
                    "{member}: control member holds {:?}, which is not a regular file",
                    entry.path
                )))
            }
        }
        let name = entry.path.trim_start_matches("./");
        if name.contains('/') {
            return Err(invalid(format!(
                "{member}: control member holds {:?} in a subdirectory",
                entry.path
            )));
        }
        if entry.size > limits.max_control_file {
            return Err(invalid(format!(
                "{member}: control file {name} is {} bytes, more than the limit of {}",
                entry.size, limits.max_control_file
            )));
        }
        // Checked from the header, before the file is read: the whole member stays bounded.
        total = total.saturating_add(entry.size);
        if total > limits.max_control_total {
            return Err(invalid(format!(
                "{member}: the control files add up to more than the limit of {} bytes (at {name})",
                limits.max_control_total
            )));
        }
        let mut bytes = Vec::with_capacity(entry.size as usize);
        content.read_to_end(&mut bytes)?;
        files.push((name.to_string(), bytes));
        Ok(())
    })
    .map_err(|e| {
        invalid(format!(
            "{member}: {}",
            strip_prefix(&format!("{e:#}"), member)
        ))
    })?;
    let control = files
        .iter()
        .find(|(n, _)| n == "control")
        .ok_or_else(|| invalid(format!("{member}: no control file in the control member")))?;
    let text = std::str::from_utf8(&control.1)
        .map_err(|_| invalid(format!("{member}: control file is not UTF-8")))?;
    let paragraph =
        Paragraph::parse(text).map_err(|e| invalid(format!("{member}: control file: {e}")))?;
    Ok((paragraph, files))
}

/// Avoid "control.tar.xz: control.tar.xz: …" when an inner error already names the member.
fn strip_prefix<'a>(msg: &'a str, member: &str) -> &'a str {
    msg.strip_prefix(member)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(msg)
}

/// The `debian-binary` member: a 2.x format version and a newline, at most 64 bytes.
fn check_debian_binary(member: impl Read, size: u64) -> anyhow::Result<()> {
    let mut text = Vec::new();
    member
        .take(64)
        .read_to_end(&mut text)
        .map_err(|e| invalid(format!("{e}")))?;
    let ok = text
        .strip_suffix(b"\n")
        .and_then(|v| std::str::from_utf8(v).ok())
        .is_some_and(|v| v.starts_with("2.") && v[2..].bytes().all(|b| b.is_ascii_digit()));
    if !ok || size > 64 {
        return Err(invalid(format!(
            "debian-binary is {:?}, expected a 2.x format version",
            String::from_utf8_lossy(&text)
        )));
    }
    Ok(())
}

/// Walk the ar members of a package: debian-binary, control.tar.*, data.tar.* (members whose
/// name starts with `_` are skipped, as dpkg does).
fn walk<R: Read>(
    input: R,
    total_len: Option<u64>,
    limits: &ReadLimits,
    mut data: DataPass<'_>,
) -> anyhow::Result<Walked> {
    let mut ar = match total_len {
        Some(len) => ArReader::new(input, len)?,
        None => ArReader::new_stream(input)?,
    };
    let mut walked = Walked {
        control: None,
        members: Vec::new(),
    };
    let mut seen_binary = false;
    let mut seen_data = false;
    while let Some(header) = ar.next_member()? {
        let name = header.name.clone();
        if !seen_binary {
            if name != "debian-binary" {
                return Err(invalid(format!(
                    "first ar member is {name:?}, expected \"debian-binary\""
                )));
            }
            check_debian_binary(ar.member_reader(), header.size)?;
            seen_binary = true;
            walked.members.push(MemberInfo {
                name,
                size: header.size,
                compression: None,
            });
            continue;
        }
        if name.starts_with('_') {
            walked.members.push(MemberInfo {
                name,
                size: header.size,
                compression: None,
            });
            continue;
        }
        if walked.control.is_none() {
            let compression = Compression::from_member_name(&name, "control.tar")
                .ok_or_else(|| {
                    if name.starts_with("control.tar") {
                        invalid(format!("{name}: unknown compression for the control member"))
                    } else {
                        invalid(format!("ar member {name:?} where the control member (control.tar[.gz|.xz|.zst]) was expected"))
                    }
                })?;
            let (by_size, why) = limits.member_limit(header.size);
            let (limit, why) = if by_size < limits.control_tar_limit() {
                (by_size, why)
            } else {
                let why = "its files, headers and padding at the control limits".to_string();
                (limits.control_tar_limit(), why)
            };
            let mut dec = super::compress::Decoder::new(ar.member_reader(), compression, limit)
                .map_err(|e| invalid(format!("{name}: {e}")))?
                .explaining(why);
            let control = read_control_tar(&mut dec, &name, limits)?;
            walked.control = Some(control);
            walked.members.push(MemberInfo {
                name,
                size: header.size,
                compression: Some(compression),
            });
            continue;
        }
        if !seen_data {
            let compression = Compression::from_member_name(&name, "data.tar").ok_or_else(|| {
                if name.starts_with("data.tar") {
                    invalid(format!("{name}: unknown compression for the data member"))
                } else {
                    invalid(format!("ar member {name:?} where the data member (data.tar[.gz|.xz|.zst]) was expected"))
                }
            })?;
            seen_data = true;
            walked.members.push(MemberInfo {
                name: name.clone(),
                size: header.size,
                compression: Some(compression),
            });
            match &mut data {
                DataPass::Skip => {}
                DataPass::Visit(visit) => {
                    let (limit, why) = limits.member_limit(header.size);
                    let mut dec =
                        super::compress::Decoder::new(ar.member_reader(), compression, limit)
                            .map_err(|e| invalid(format!("{name}: {e}")))?
                            .explaining(why);
                    tar::read_safe(&mut dec, *visit).map_err(|e| {
                        invalid(format!(
                            "{name}: {}",
                            strip_prefix(&format!("{e:#}"), &name)
                        ))
                    })?;
                }
            }
            continue;
        }
        return Err(invalid(format!(
            "unexpected ar member {name:?} after the data member"
        )));
    }
    if !seen_binary {
        return Err(invalid("empty ar archive (no debian-binary member)"));
    }
    if walked.control.is_none() {
        return Err(invalid(
            "no control member (the archive is truncated after debian-binary)",
        ));
    }
    if !seen_data {
        return Err(invalid(
            "no data member (the archive is truncated after the control member)",
        ));
    }
    Ok(walked)
}

/// Open a package for one sequential pass. A regular file's length bounds its members up front;
/// anything else (a pipe, a FIFO, `/dev/stdin`) is read as a stream of unknown length, as
/// `dpkg-deb -I` reads it. A directory is refused by name.
fn open(path: &Path) -> anyhow::Result<(io::BufReader<File>, Option<u64>)> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("{}: cannot stat", path.display()))?;
    if meta.is_dir() {
        return Err(invalid(format!(
            "{}: is a directory, not a .deb file",
            path.display()
        )));
    }
    let len = meta.is_file().then_some(meta.len());
    Ok((io::BufReader::with_capacity(256 << 10, file), len))
}

/// Turn any error into one line that starts with the file name.
fn one_line(origin: &str, e: anyhow::Error) -> anyhow::Error {
    let msg = format!("{e:#}");
    if msg.starts_with(origin) {
        invalid(msg)
    } else {
        invalid(format!("{origin}: {msg}"))
    }
}

/// Read control and the entry list from any reader of `total_len` bytes (used by the fuzz
/// target and for in-memory packages). `origin` names the input in errors.
pub fn read_deb_from<R: Read>(
    input: R,
    total_len: u64,
    origin: &str,
    limits: &ReadLimits,
) -> anyhow::Result<DebInfo> {
    read_info(input, Some(total_len), origin, limits, &mut |_, _| Ok(()))
}

/// One pass over a package: control, the entry list, and every data.tar entry handed to
/// `visit` with its contents.
fn read_info<R: Read>(
    input: R,
    len: Option<u64>,
    origin: &str,
    limits: &ReadLimits,
    visit: &mut dyn FnMut(&Entry, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<DebInfo> {
    let mut entries = Vec::new();
    let mut keep = |e: &Entry, content: &mut dyn Read| -> anyhow::Result<()> {
        entries.push(e.clone());
        visit(e, content)
    };
    let walked =
        walk(input, len, limits, DataPass::Visit(&mut keep)).map_err(|e| one_line(origin, e))?;
    let (control, control_files) = walked
        .control
        .ok_or_else(|| invalid(format!("{origin}: no control member")))?;
    Ok(DebInfo {
        control,
        control_files,
        members: walked.members,
        entries,
    })
}

/// Stream every data.tar entry of a package from any reader (see [`read_deb_from`]).
pub fn for_each_data_entry_from<R: Read>(
    input: R,
    total_len: u64,
    origin: &str,
    limits: &ReadLimits,
    visit: &mut dyn FnMut(&Entry, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    walk(input, Some(total_len), limits, DataPass::Visit(visit))
        .map(|_| ())
        .map_err(|e| one_line(origin, e))
}

/// Read control and the entry list (data.tar is streamed, contents not kept).
pub fn read_deb(path: &Path, limits: &ReadLimits) -> anyhow::Result<DebInfo> {
    read_deb_visiting(path, limits, &mut |_, _| Ok(()))
}

/// Read control and the entry list in one pass, handing every data.tar entry and its contents
/// to `visit` too: the only way to both read and check a package given as a pipe.
pub fn read_deb_visiting(
    path: &Path,
    limits: &ReadLimits,
    visit: &mut dyn FnMut(&Entry, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<DebInfo> {
    let (input, len) = open(path)?;
    read_info(input, len, &path.display().to_string(), limits, visit)
}

/// Read only the control member (fast: data.tar is not decompressed).
pub fn read_control(path: &Path, limits: &ReadLimits) -> anyhow::Result<ControlMember> {
    let (input, len) = open(path)?;
    let origin = path.display().to_string();
    let walked = walk(input, len, limits, DataPass::Skip).map_err(|e| one_line(&origin, e))?;
    walked
        .control
        .ok_or_else(|| invalid(format!("{origin}: no control member")))
}

/// Stream every data.tar entry to `visit` with a reader over its contents (empty for non-files).
pub fn for_each_data_entry(
    path: &Path,
    limits: &ReadLimits,
    visit: &mut dyn FnMut(&Entry, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let (input, len) = open(path)?;
    walk(input, len, limits, DataPass::Visit(visit))
        .map(|_| ())
        .map_err(|e| one_line(&path.display().to_string(), e))
}

/// Make sure every component of `rel` under `dest` (except the last) is a real directory,
/// creating missing ones; never follows a symlink.
fn ensure_parent_dirs(dest: &Path, rel: &[&str]) -> anyhow::Result<PathBuf> {
    let mut cur = dest.to_path_buf();
    for part in rel {
        cur.push(part);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                return Err(invalid(format!(
                    "{} exists and is not a directory (refusing to write through it)",
                    cur.display()
                )))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir(&cur)
                    .with_context(|| format!("cannot create {}", cur.display()))?;
            }
            Err(e) => return Err(invalid(format!("cannot inspect {}: {e}", cur.display()))),
        }
    }
    Ok(cur)
}

/// Extract data.tar under `dest` (which must exist). Refuses `..`, absolute names, and any
/// entry whose path goes through a symlink; hard links are recreated as hard links.
/// Directory modes are applied at the end (a read-only directory would block its contents).
pub fn extract_data(path: &Path, dest: &Path, limits: &ReadLimits) -> anyhow::Result<Vec<Entry>> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let meta = std::fs::symlink_metadata(dest)
        .with_context(|| format!("destination {} does not exist", dest.display()))?;
    if !meta.is_dir() {
        return Err(invalid(format!(
            "destination {} is not a directory",
            dest.display()
        )));
    }
    let mut entries = Vec::new();
    let mut dir_modes: Vec<(PathBuf, u32)> = Vec::new();
    for_each_data_entry(path, limits, &mut |entry, content| {
        let rel: Vec<&str> = entry
            .path
            .trim_start_matches("./")
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        let (last, parents) = match rel.split_last() {
            Some((l, p)) => (*l, p),
            None => {
                // The root entry "./": dest itself.
                entries.push(entry.clone());
                return Ok(());
            }
        };
        let parent = ensure_parent_dirs(dest, parents)?;
        let target = parent.join(last);
        let exists = std::fs::symlink_metadata(&target).ok();
        match &entry.kind {
            EntryKind::Dir => match exists {
                Some(m) if m.file_type().is_dir() => {}
                Some(_) => {
                    return Err(invalid(format!(
                        "{} exists and is not a directory",
                        target.display()
                    )))
                }
                None => std::fs::create_dir(&target)
                    .with_context(|| format!("cannot create {}", target.display()))?,
            },
            kind => {
                if exists.is_some() {
                    return Err(invalid(format!(
                        "{} already exists (refusing to overwrite)",
                        target.display()
                    )));
                }
                match kind {
                    EntryKind::File => {
                        let mut f = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .custom_flags(libc::O_NOFOLLOW)
                            .mode(0o600)
                            .open(&target)
                            .with_context(|| format!("cannot create {}", target.display()))?;
                        io::copy(content, &mut f)
                            .map_err(|e| invalid(format!("{}: {e}", entry.path)))?;
                        f.set_permissions(std::fs::Permissions::from_mode(entry.mode))
                            .with_context(|| format!("cannot chmod {}", target.display()))?;
                    }
                    EntryKind::Symlink(to) => std::os::unix::fs::symlink(to, &target)
                        .with_context(|| format!("cannot create symlink {}", target.display()))?,
                    EntryKind::Hardlink(to) => {
                        let source: PathBuf = dest.join(to.trim_start_matches("./"));
                        // link(2) does not follow a symlink source, and the reader already
                        // refused a target reached through a symlink entry.
                        std::fs::hard_link(&source, &target).with_context(|| {
                            format!(
                                "cannot hard-link {} to {}",
                                target.display(),
                                source.display()
                            )
                        })?;
                    }
                    EntryKind::Dir => {
                        return Err(invalid(format!(
                            "{}: directory entry in the file branch",
                            entry.path
                        )))
                    }
                }
            }
        }
        if entry.kind == EntryKind::Dir {
            dir_modes.push((target, entry.mode));
        }
        entries.push(entry.clone());
        Ok(())
    })?;
    for (dir, mode) in dir_modes.iter().rev() {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(*mode))
            .with_context(|| format!("cannot chmod {}", dir.display()))?;
    }
    Ok(entries)
}

/// `123`, `10K`, `4G`, `1T` (binary multiples; an optional trailing `iB`/`B`).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text
        .strip_suffix("iB")
        .or_else(|| text.strip_suffix('B'))
        .unwrap_or(text);
    let (digits, shift) = match text.char_indices().last()? {
        (i, 'K' | 'k') => (&text[..i], 10),
        (i, 'M' | 'm') => (&text[..i], 20),
        (i, 'G' | 'g') => (&text[..i], 30),
        (i, 'T' | 't') => (&text[..i], 40),
        _ => (text, 0),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1u64 << shift)
}
