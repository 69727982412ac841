//! A reproducible zip writer for wheels: the same entries and timestamp give the same bytes.
//! Entries are written sorted by name (whatever order they were added in), every one deflated
//! at a fixed level, stamped with one fixed time (the caller's `SOURCE_DATE_EPOCH`), with a
//! Unix mode and no extra fields (no extended timestamps, no uid/gid). No zip64: a wheel over
//! 4 GiB or with more than 65,535 entries is refused, which no wheel of a
//! large native runtime (a few thousand files, a few GiB) is near.

use std::io::Write;

use anyhow::{bail, Context};
use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc};

/// Signatures of the three zip records this writer emits (APPNOTE 4.3.7, 4.3.12, 4.3.16).
pub(crate) const LOCAL_HEADER_SIG: u32 = 0x0403_4b50;
pub(crate) const CENTRAL_HEADER_SIG: u32 = 0x0201_4b50;
pub(crate) const END_OF_CENTRAL_DIR_SIG: u32 = 0x0605_4b50;
/// Bit 11 of the general purpose flags: names are UTF-8.
const FLAG_UTF8: u16 = 0x0800;
const METHOD_DEFLATE: u16 = 8;
/// "Version needed": 2.0 (deflate). "Made by": Unix (3) so the external attributes carry a mode.
const VERSION_NEEDED: u16 = 20;
const VERSION_MADE_BY_UNIX: u16 = (3 << 8) | 20;
/// The regular-file type bits of a Unix mode, set in the external attributes.
const S_IFREG: u32 = 0o100_000;

struct Entry {
    name: String,
    data: Vec<u8>,
    mode: u32,
}

/// Collects entries, then writes the archive in one go ([`ZipWriter::finish`]).
pub struct ZipWriter {
    entries: Vec<Entry>,
    dos_time: u16,
    dos_date: u16,
}

impl ZipWriter {
    /// A writer whose every entry is stamped `epoch` (Unix seconds, UTC; clamped to the range
    /// a zip's DOS time can hold, 1980–2107).
    pub fn new(epoch: i64) -> ZipWriter {
        let (dos_time, dos_date) = dos_time_date(epoch);
        ZipWriter {
            entries: Vec::new(),
            dos_time,
            dos_date,
        }
    }

    /// Add a file `name` (a relative `/`-separated path) holding `data`, with permission bits
    /// `mode` (0o644 or 0o755). A name given twice is refused.
    pub fn add(&mut self, name: &str, data: Vec<u8>, mode: u32) -> anyhow::Result<()> {
        if name.is_empty() || name.starts_with('/') || name.contains('\\') || name.contains('\0') {
            bail!("refusing zip entry name {name:?}: not a clean relative path");
        }
        if name
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            bail!("refusing zip entry name {name:?}: empty, `.` or `..` component");
        }
        if self.entries.iter().any(|e| e.name == name) {
            bail!("zip entry {name:?} added twice");
        }
        self.entries.push(Entry {
            name: name.to_string(),
            data,
            mode: mode & 0o7777,
        });
        Ok(())
    }

    /// The names added so far, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// Write the archive to `out`: local headers and data sorted by name, then the central
    /// directory, then its end record. Returns the bytes written.
    pub fn finish(mut self, out: &mut impl Write) -> anyhow::Result<u64> {
        if self.entries.len() > usize::from(u16::MAX) {
            bail!(
                "{} zip entries: more than a zip without zip64 holds",
                self.entries.len()
            );
        }
        self.entries.sort_by(|a, b| a.name.cmp(&b.name));
        let mut central = Vec::new();
        let mut offset: u64 = 0;
        for e in &self.entries {
            let mut crc = Crc::new();
            crc.update(&e.data);
            let compressed = deflate(&e.data)?;
            let (csize, usize_) = (small(compressed.len() as u64)?, small(e.data.len() as u64)?);
            let mut local = Vec::with_capacity(30 + e.name.len());
            put32(&mut local, LOCAL_HEADER_SIG);
            put16(&mut local, VERSION_NEEDED);
            put16(&mut local, FLAG_UTF8);
            put16(&mut local, METHOD_DEFLATE);
            put16(&mut local, self.dos_time);
            put16(&mut local, self.dos_date);
            put32(&mut local, crc.sum());
            put32(&mut local, csize);
            put32(&mut local, usize_);
            put16(&mut local, name_len(&e.name)?);
            put16(&mut local, 0);
            local.extend_from_slice(e.name.as_bytes());
            out.write_all(&local).context("writing a zip entry")?;
            out.write_all(&compressed).context("writing a zip entry")?;

            put32(&mut central, CENTRAL_HEADER_SIG);
            put16(&mut central, VERSION_MADE_BY_UNIX);
            put16(&mut central, VERSION_NEEDED);
            put16(&mut central, FLAG_UTF8);
            put16(&mut central, METHOD_DEFLATE);
            put16(&mut central, self.dos_time);
            put16(&mut central, self.dos_date);
            put32(&mut central, crc.sum());
            put32(&mut central, csize);
            put32(&mut central, usize_);
            put16(&mut central, name_len(&e.name)?);
            put16(&mut central, 0); // extra field length
            put16(&mut central, 0); // comment length
            put16(&mut central, 0); // disk number start
            put16(&mut central, 0); // internal attributes
            put32(&mut central, (S_IFREG | e.mode) << 16);
            put32(&mut central, small(offset)?);
            central.extend_from_slice(e.name.as_bytes());
            offset += local.len() as u64 + compressed.len() as u64;
        }
        let count = self.entries.len() as u16;
        let mut end = Vec::with_capacity(22);
        put32(&mut end, END_OF_CENTRAL_DIR_SIG);
        put16(&mut end, 0);
        put16(&mut end, 0);
        put16(&mut end, count);
        put16(&mut end, count);
        put32(&mut end, small(central.len() as u64)?);
        put32(&mut end, small(offset)?);
        put16(&mut end, 0);
        out.write_all(&central)
            .context("writing the zip central directory")?;
        out.write_all(&end).context("writing the zip end record")?;
        Ok(offset + central.len() as u64 + end.len() as u64)
    }
}

fn deflate(data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut enc = DeflateEncoder::new(Vec::new(), Compression::new(6));
    enc.write_all(data).context("deflating a zip entry")?;
    enc.finish().context("deflating a zip entry")
}

fn small(n: u64) -> anyhow::Result<u32> {
    u32::try_from(n)
        .map_err(|_| anyhow::anyhow!("{n} bytes: past the 4 GiB a zip without zip64 holds"))
}

fn name_len(name: &str) -> anyhow::Result<u16> {
    u16::try_from(name.len())
        .map_err(|_| anyhow::anyhow!("zip entry name longer than 65,535 bytes"))
}

fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

/// The MS-DOS time and date of `epoch` (UTC), clamped to 1980-01-01 .. 2107-12-31.
pub(crate) fn dos_time_date(epoch: i64) -> (u16, u16) {
    const MIN: i64 = 315_532_800; // 1980-01-01T00:00:00Z
    const MAX: i64 = 4_354_819_198; // 2107-12-31T23:59:58Z
    let t = time::OffsetDateTime::from_unix_timestamp(epoch.clamp(MIN, MAX))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let time =
        (u16::from(t.hour()) << 11) | (u16::from(t.minute()) << 5) | u16::from(t.second() / 2);
    let date = ((t.year() - 1980) as u16) << 9
        | (u16::from(u8::from(t.month())) << 5)
        | u16::from(t.day());
    (time, date)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dos_time_of_a_known_instant() {
        // 2025-12-03T00:00:00Z: date (45 << 9) | (12 << 5) | 3, time 0.
        assert_eq!(dos_time_date(1_764_720_000), (0, (45 << 9) | (12 << 5) | 3));
        // Before 1980 clamps to 1980-01-01.
        assert_eq!(dos_time_date(0), (0, (1 << 5) | 1));
    }

    #[test]
    fn refuses_unclean_names_and_duplicates() {
        let mut z = ZipWriter::new(0);
        for bad in ["", "/abs", "a/../b", "a//b", "a\\b", "./a"] {
            assert!(z.add(bad, vec![], 0o644).is_err(), "{bad:?} accepted");
        }
        z.add("a", vec![], 0o644).unwrap();
        assert!(z.add("a", vec![1], 0o644).is_err());
    }
}
