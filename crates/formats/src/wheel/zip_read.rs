//! A bounded zip reader for wheels nobody vouches for (a stock wheel, a wheel given on the
//! command line). Reads the central directory and refuses, before inflating anything: more
//! entries than the limit, an entry or a total over the size limits, a compression ratio past
//! the limit (a zip bomb), encryption, zip64, a method other than stored/deflate, a name that
//! is absolute, has a `..`/`.`/empty component, a backslash or a NUL, a duplicate name, and
//! local headers that disagree with the central directory. Each entry read is inflated at most
//! to its declared size, and its CRC-32 checked.

use std::io::Read;

use anyhow::{bail, Context};
use flate2::read::DeflateDecoder;
use flate2::Crc;

use super::zip_write::{CENTRAL_HEADER_SIG, END_OF_CENTRAL_DIR_SIG, LOCAL_HEADER_SIG};

/// How much a zip may hold before it is refused unread.
#[derive(Debug, Clone, Copy)]
pub struct ZipLimits {
    pub max_entries: usize,
    pub max_entry_bytes: u64,
    pub max_total_bytes: u64,
    /// Most uncompressed bytes per compressed byte (past a small allowance for tiny entries).
    pub max_ratio: u64,
}

impl ZipLimits {
    /// Sized for large native runtime wheels: a few thousand files, the largest libraries a
    /// few hundred MiB; 8 GiB in all. Deflate cannot pass ~1032:1.
    pub const WHEEL: ZipLimits = ZipLimits {
        max_entries: 100_000,
        max_entry_bytes: 4 << 30,
        max_total_bytes: 8 << 30,
        max_ratio: 1100,
    };
}

/// One entry of the central directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipEntry {
    pub name: String,
    pub size: u64,
    pub compressed_size: u64,
    /// Unix permission bits, when the archive was made on Unix (else 0).
    pub mode: u32,
    crc: u32,
    method: u16,
    local_offset: u64,
}

/// A zip archive in memory, its central directory checked against `limits`.
pub struct ZipReader<'a> {
    bytes: &'a [u8],
    entries: Vec<ZipEntry>,
}

fn u16_at(b: &[u8], at: usize) -> anyhow::Result<u16> {
    let s = b.get(at..at + 2).context("truncated zip record")?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> anyhow::Result<u32> {
    let s = b.get(at..at + 4).context("truncated zip record")?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Why `name` is not a clean relative entry name, if it is not.
pub fn unclean_entry_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("empty name");
    }
    if name.starts_with('/') {
        return Some("absolute path");
    }
    if name.contains('\\') || name.contains('\0') {
        return Some("backslash or NUL in the name");
    }
    let body = name.strip_suffix('/').unwrap_or(name);
    if body
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Some("empty, `.` or `..` path component");
    }
    None
}

impl<'a> ZipReader<'a> {
    /// Read the central directory of `bytes`, refusing what `limits` or the format forbid.
    pub fn new(bytes: &'a [u8], limits: ZipLimits) -> anyhow::Result<ZipReader<'a>> {
        let end = find_end(bytes)?;
        let count = usize::from(u16_at(bytes, end + 10)?);
        let cd_size = u32_at(bytes, end + 12)? as usize;
        let cd_offset = u32_at(bytes, end + 16)? as usize;
        if u16_at(bytes, end + 4)? != 0 || u16_at(bytes, end + 6)? != 0 {
            bail!("multi-disk zip archives are not wheels");
        }
        if count == usize::from(u16::MAX) || cd_offset == u32::MAX as usize {
            bail!("zip64 archive refused (no wheel this reader is sized for needs zip64)");
        }
        if count > limits.max_entries {
            bail!(
                "{count} zip entries: more than the {} allowed",
                limits.max_entries
            );
        }
        if cd_offset.checked_add(cd_size).is_none_or(|e| e > end) {
            bail!("zip central directory lies outside the file");
        }
        let mut entries = Vec::with_capacity(count);
        let mut at = cd_offset;
        let mut total: u64 = 0;
        let mut names = std::collections::HashSet::new();
        for _ in 0..count {
            let (entry, next) = central_entry(bytes, at, cd_offset + cd_size)?;
            at = next;
            if let Some(why) = unclean_entry_name(&entry.name) {
                bail!("zip entry {:?} refused: {why}", entry.name);
            }
            if !names.insert(entry.name.clone()) {
                bail!("zip entry {:?} appears twice", entry.name);
            }
            if entry.size > limits.max_entry_bytes {
                bail!(
                    "zip entry {:?} is {} bytes: over the {} allowed",
                    entry.name,
                    entry.size,
                    limits.max_entry_bytes
                );
            }
            if entry.size > entry.compressed_size.saturating_mul(limits.max_ratio) + 4096 {
                bail!(
                    "zip entry {:?} inflates {}:1 ({} from {} bytes): refused as a zip bomb",
                    entry.name,
                    entry.size / entry.compressed_size.max(1),
                    entry.size,
                    entry.compressed_size
                );
            }
            total += entry.size;
            if total > limits.max_total_bytes {
                bail!(
                    "zip entries total over the {} bytes allowed",
                    limits.max_total_bytes
                );
            }
            entries.push(entry);
        }
        Ok(ZipReader { bytes, entries })
    }

    /// The entries, in central-directory order.
    pub fn entries(&self) -> &[ZipEntry] {
        &self.entries
    }

    /// The entry named `name`.
    pub fn entry(&self, name: &str) -> Option<&ZipEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The uncompressed bytes of `entry`, checked against its size and CRC-32.
    pub fn read(&self, entry: &ZipEntry) -> anyhow::Result<Vec<u8>> {
        let at = entry.local_offset as usize;
        if u32_at(self.bytes, at)? != LOCAL_HEADER_SIG {
            bail!(
                "zip entry {:?}: no local header where the central directory says",
                entry.name
            );
        }
        let name_len = usize::from(u16_at(self.bytes, at + 26)?);
        let extra_len = usize::from(u16_at(self.bytes, at + 28)?);
        if self.bytes.get(at + 30..at + 30 + name_len) != Some(entry.name.as_bytes()) {
            bail!(
                "zip entry {:?}: its local header names another file",
                entry.name
            );
        }
        let start = at + 30 + name_len + extra_len;
        let data = start
            .checked_add(entry.compressed_size as usize)
            .and_then(|end| self.bytes.get(start..end))
            .with_context(|| format!("zip entry {:?} runs past the end of the file", entry.name))?;
        let mut out = Vec::with_capacity(entry.size.min(1 << 26) as usize);
        match entry.method {
            0 => out.extend_from_slice(data),
            _ => {
                DeflateDecoder::new(data)
                    .take(entry.size + 1)
                    .read_to_end(&mut out)
                    .with_context(|| format!("inflating zip entry {:?}", entry.name))?;
            }
        }
        if out.len() as u64 != entry.size {
            bail!(
                "zip entry {:?} holds {} bytes, its header says {}",
                entry.name,
                out.len(),
                entry.size
            );
        }
        let mut crc = Crc::new();
        crc.update(&out);
        if crc.sum() != entry.crc {
            bail!(
                "zip entry {:?}: CRC-32 mismatch (corrupt archive)",
                entry.name
            );
        }
        Ok(out)
    }

    /// The bytes of the entry named `name`.
    pub fn read_named(&self, name: &str) -> anyhow::Result<Vec<u8>> {
        let entry = self
            .entry(name)
            .with_context(|| format!("the archive has no {name}"))?;
        self.read(entry)
    }
}

/// The offset of the end-of-central-directory record (searched back over a comment).
fn find_end(bytes: &[u8]) -> anyhow::Result<usize> {
    if bytes.len() < 22 {
        bail!("not a zip archive (too short)");
    }
    let lowest = bytes.len().saturating_sub(22 + usize::from(u16::MAX));
    (lowest..=bytes.len() - 22)
        .rev()
        .find(|&at| u32_at(bytes, at).ok() == Some(END_OF_CENTRAL_DIR_SIG))
        .context("not a zip archive (no end of central directory record)")
}

/// The central directory entry at `at` (ending before `limit`) and where the next starts.
fn central_entry(bytes: &[u8], at: usize, limit: usize) -> anyhow::Result<(ZipEntry, usize)> {
    if u32_at(bytes, at)? != CENTRAL_HEADER_SIG {
        bail!("corrupt zip central directory");
    }
    let made_by = u16_at(bytes, at + 4)?;
    let flags = u16_at(bytes, at + 8)?;
    let method = u16_at(bytes, at + 10)?;
    let crc = u32_at(bytes, at + 16)?;
    let compressed_size = u32_at(bytes, at + 20)?;
    let size = u32_at(bytes, at + 24)?;
    let name_len = usize::from(u16_at(bytes, at + 28)?);
    let extra_len = usize::from(u16_at(bytes, at + 30)?);
    let comment_len = usize::from(u16_at(bytes, at + 32)?);
    let external = u32_at(bytes, at + 38)?;
    let local_offset = u32_at(bytes, at + 42)?;
    let next = at + 46 + name_len + extra_len + comment_len;
    if next > limit {
        bail!("corrupt zip central directory (an entry runs past it)");
    }
    let name = std::str::from_utf8(&bytes[at + 46..at + 46 + name_len])
        .context("zip entry name is not UTF-8")?
        .to_string();
    if flags & 1 != 0 {
        bail!("zip entry {name:?} is encrypted");
    }
    if method != 0 && method != 8 {
        bail!("zip entry {name:?} uses compression method {method} (wheels use stored or deflate)");
    }
    if [compressed_size, size, local_offset].contains(&u32::MAX) {
        bail!("zip entry {name:?} needs zip64, refused");
    }
    let mode = if made_by >> 8 == 3 {
        (external >> 16) & 0o7777
    } else {
        0
    };
    Ok((
        ZipEntry {
            name,
            size: u64::from(size),
            compressed_size: u64::from(compressed_size),
            mode,
            crc,
            method,
            local_offset: u64::from(local_offset),
        },
        next,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wheel::ZipWriter;
    use proptest::prelude::*;

    fn zip_of(entries: &[(&str, &[u8], u32)], epoch: i64) -> Vec<u8> {
        let mut w = ZipWriter::new(epoch);
        for (n, d, m) in entries {
            w.add(n, d.to_vec(), *m).unwrap();
        }
        let mut out = Vec::new();
        w.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn reads_back_what_was_written_sorted() {
        let z = zip_of(
            &[("b/x", b"hello", 0o755), ("a", b"", 0o644)],
            1_764_720_000,
        );
        let r = ZipReader::new(&z, ZipLimits::WHEEL).unwrap();
        let names: Vec<_> = r.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "b/x"]);
        assert_eq!(r.read_named("b/x").unwrap(), b"hello");
        assert_eq!(r.entry("b/x").unwrap().mode, 0o755);
    }

    #[test]
    fn a_high_ratio_or_too_many_entries_is_refused_before_inflating() {
        let big = vec![0u8; 8 << 20];
        let z = zip_of(&[("zeros", &big, 0o644)], 0);
        let strict = ZipLimits {
            max_ratio: 100,
            ..ZipLimits::WHEEL
        };
        let err = ZipReader::new(&z, strict).err().unwrap().to_string();
        assert!(err.contains("zip bomb"), "{err}");
        assert!(ZipReader::new(&z, ZipLimits::WHEEL).is_ok());
        let few = ZipLimits {
            max_entries: 0,
            ..ZipLimits::WHEEL
        };
        assert!(ZipReader::new(&z, few).is_err());
    }

    #[test]
    fn a_traversing_name_is_refused() {
        // Forge a `..` name by patching a written archive's names (same length).
        let mut z = zip_of(&[("ab/cd", b"x", 0o644)], 0);
        let mut i = 0;
        while i + 5 <= z.len() {
            if &z[i..i + 5] == b"ab/cd" {
                z[i..i + 5].copy_from_slice(b"../cd");
            }
            i += 1;
        }
        let err = ZipReader::new(&z, ZipLimits::WHEEL)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("`..`"), "{err}");
    }

    #[test]
    fn corruption_is_caught_by_the_crc() {
        let mut z = zip_of(&[("f", &[7u8; 64][..], 0o644)], 0);
        // The stored deflate stream starts right after the 30-byte local header and the name.
        let data_at = 30 + 1;
        z[data_at + 2] ^= 0x55;
        let r = ZipReader::new(&z, ZipLimits::WHEEL).unwrap();
        assert!(r.read_named("f").is_err());
    }

    proptest! {
        #[test]
        fn any_entries_round_trip_and_the_bytes_are_reproducible(
            files in proptest::collection::btree_map("[a-z]{1,8}(/[a-z0-9_.-]{1,8}){0,2}", proptest::collection::vec(any::<u8>(), 0..300), 1..8),
            epoch in 0i64..5_000_000_000,
        ) {
            let entries: Vec<(&str, &[u8], u32)> = files.iter().map(|(n, d)| (n.as_str(), d.as_slice(), 0o644)).collect();
            prop_assume!(entries.iter().all(|(n, _, _)| unclean_entry_name(n).is_none()));
            // A name that is a prefix directory of another is still two distinct entries.
            let mut reversed = entries.clone();
            reversed.reverse();
            let z = zip_of(&entries, epoch);
            prop_assert_eq!(&z, &zip_of(&reversed, epoch));
            let r = ZipReader::new(&z, ZipLimits::WHEEL).unwrap();
            for (n, d) in &files {
                prop_assert_eq!(&r.read_named(n).unwrap(), d);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(r) = ZipReader::new(&bytes, ZipLimits::WHEEL) {
                for e in r.entries() {
                    let _ = r.read(e);
                }
            }
        }
    }
}
