//! The outer ar container of a .deb (debian-binary, control.tar.*, data.tar.*).
//!
//! Writer: plain (System V / common) ar as dpkg-deb writes it — `!<arch>\n`, 60-byte member
//! headers with the name space-padded (no `/` terminator), uid/gid 0, mode 100644, a newline
//! after odd-sized members.
//! Reader: strict header validation (magic, decimal fields, size within the file, padding);
//! every error names the member.

use std::io::{self, Read, Write};

pub const MAGIC: &[u8; 8] = b"!<arch>\n";
pub const HEADER_LEN: usize = 60;

fn header(name: &str, size: u64, mtime: u64) -> io::Result<[u8; HEADER_LEN]> {
    if name.len() > 16 || name.is_empty() || name.contains(['/', ' ']) {
        return Err(io::Error::other(format!(
            "ar member name {name:?} does not fit a plain ar header"
        )));
    }
    let text = format!(
        "{name:<16}{mtime:<12}{:<6}{:<6}{:<8o}{size:<10}`\n",
        0, 0, 0o100644
    );
    let bytes = text.as_bytes();
    if bytes.len() != HEADER_LEN {
        return Err(io::Error::other(format!(
            "ar member {name:?}: size {size} or mtime {mtime} does not fit the header"
        )));
    }
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(bytes);
    Ok(h)
}

/// Writes an ar archive member by member.
pub struct ArWriter<W: Write> {
    out: W,
    mtime: u64,
}

impl<W: Write> ArWriter<W> {
    /// Writes the global header. `mtime` goes in every member header.
    pub fn new(mut out: W, mtime: u64) -> io::Result<Self> {
        out.write_all(MAGIC)?;
        Ok(ArWriter { out, mtime })
    }

    /// Continue an archive whose global header (and maybe members) were already written to
    /// `out` — used to switch from a buffered writer to the raw file for a bulk copy.
    pub fn resume(out: W, mtime: u64) -> Self {
        ArWriter { out, mtime }
    }

    /// Append a member held in memory.
    pub fn append_bytes(&mut self, name: &str, data: &[u8]) -> io::Result<()> {
        self.append(name, data.len() as u64, &mut &data[..])
    }

    /// Append a member of known `size`, streamed from `src` (which must yield exactly `size`).
    /// Generic, not `dyn Read`: std's `io::copy` from a `File` into a `File` then copies in the
    /// kernel (copy_file_range); through `dyn Read` it went in 8 KiB reads and writes — 1,500 of
    /// each for a 12 MB data.tar.zst, on the critical path after compression (scripts/bench-trace).
    pub fn append<R: Read + ?Sized>(
        &mut self,
        name: &str,
        size: u64,
        src: &mut R,
    ) -> io::Result<()> {
        self.out.write_all(&header(name, size, self.mtime)?)?;
        let copied = io::copy(&mut src.take(size), &mut self.out)?;
        if copied != size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("ar member {name}: expected {size} bytes, source gave {copied}"),
            ));
        }
        if size % 2 == 1 {
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One member header as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberHeader {
    pub name: String,
    pub size: u64,
    /// Offset of the member's data from the start of the archive.
    pub offset: u64,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn decimal_field(field: &[u8], what: &str, member: &str, allow_empty: bool) -> io::Result<u64> {
    let text = std::str::from_utf8(field)
        .map_err(|_| invalid(format!("ar member {member:?}: {what} field is not text")))?;
    let trimmed = text.trim_end_matches(' ');
    if trimmed.is_empty() && allow_empty {
        return Ok(0);
    }
    if trimmed.is_empty() || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(format!(
            "ar member {member:?}: {what} field {text:?} is not a decimal number"
        )));
    }
    trimmed.parse().map_err(|_| {
        invalid(format!(
            "ar member {member:?}: {what} field {text:?} overflows"
        ))
    })
}

/// Reads members in order from an ar archive, of known total length (a file) or not (a pipe).
pub struct ArReader<R: Read> {
    inner: R,
    /// The archive's length when known; None for a stream, where a short member is found when
    /// its data runs out instead of from its header.
    total_len: Option<u64>,
    pos: u64,
    /// Data bytes of the current member not yet consumed.
    data_left: u64,
    /// Padding bytes (0 or 1) after the current member's data.
    pad_left: u64,
    current: String,
}

impl<R: Read> ArReader<R> {
    /// Checks the global header. `total_len` is the archive's size (the file length), used to
    /// refuse member sizes that reach past the end.
    pub fn new(inner: R, total_len: u64) -> io::Result<Self> {
        Self::open(inner, Some(total_len))
    }

    /// Reads an archive of unknown length (a pipe, a FIFO, stdin) strictly in order: ar is
    /// sequential, so nothing needs the length up front.
    pub fn new_stream(inner: R) -> io::Result<Self> {
        Self::open(inner, None)
    }

    fn open(mut inner: R, total_len: Option<u64>) -> io::Result<Self> {
        let mut magic = [0u8; 8];
        let mut got = 0;
        while got < magic.len() {
            match inner.read(&mut magic[got..])? {
                0 => break,
                n => got += n,
            }
        }
        if got < magic.len() || &magic != MAGIC {
            return Err(invalid(
                "not a Debian package: the file does not start with the ar magic \"!<arch>\\n\""
                    .to_string(),
            ));
        }
        Ok(ArReader {
            inner,
            total_len,
            pos: 8,
            data_left: 0,
            pad_left: 0,
            current: String::new(),
        })
    }

    fn skip_pending(&mut self) -> io::Result<()> {
        let n = self.data_left;
        if n > 0 {
            let copied = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())?;
            self.pos += copied;
            self.data_left = 0;
            if copied != n {
                self.pad_left = 0;
                return Err(invalid(format!(
                    "ar member {:?} is truncated",
                    self.current
                )));
            }
        }
        // The padding byte after an odd-sized last member may be missing (dpkg accepts that);
        // a missing one simply makes the next header read find the end of the archive.
        if self.pad_left > 0 {
            let pad = self.pad_left;
            self.pad_left = 0;
            self.pos += io::copy(&mut (&mut self.inner).take(pad), &mut io::sink())?;
        }
        Ok(())
    }

    /// The next member's header, or None at a clean end of archive. The previous member's
    /// unread data is skipped.
    pub fn next_member(&mut self) -> io::Result<Option<MemberHeader>> {
        self.skip_pending()?;
        let mut h = [0u8; HEADER_LEN];
        let mut got = 0;
        while got < HEADER_LEN {
            match self.inner.read(&mut h[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if got == 0 {
            return Ok(None);
        }
        let after = if self.current.is_empty() {
            "the ar magic".to_string()
        } else {
            format!("member {:?}", self.current)
        };
        if got < HEADER_LEN {
            return Err(invalid(format!(
                "truncated ar header after {after} ({got} of {HEADER_LEN} bytes)"
            )));
        }
        self.pos += HEADER_LEN as u64;
        if &h[58..60] != b"`\n" {
            return Err(invalid(format!(
                "bad ar member header after {after} (missing the header terminator)"
            )));
        }
        let raw_name = std::str::from_utf8(&h[0..16])
            .map_err(|_| invalid(format!("ar member name after {after} is not text")))?;
        let name = raw_name.trim_end_matches(' ');
        // GNU ar terminates names with '/'; dpkg-deb does not, but accepts both.
        let name = name.strip_suffix('/').unwrap_or(name).to_string();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid(format!(
                "ar member after {after} has an invalid name {raw_name:?}"
            )));
        }
        decimal_field(&h[16..28], "mtime", &name, true)?;
        decimal_field(&h[28..34], "uid", &name, true)?;
        decimal_field(&h[34..40], "gid", &name, true)?;
        let mode_text = std::str::from_utf8(&h[40..48]).unwrap_or("?");
        if !mode_text
            .trim_end_matches(' ')
            .bytes()
            .all(|b| (b'0'..=b'7').contains(&b))
        {
            return Err(invalid(format!(
                "ar member {name:?}: mode field {mode_text:?} is not octal"
            )));
        }
        let size = decimal_field(&h[48..58], "size", &name, false)?;
        if let Some(total_len) = self.total_len {
            let remaining = total_len.saturating_sub(self.pos);
            if size > remaining {
                return Err(invalid(format!(
                    "ar member {name:?} declares {size} bytes but only {remaining} remain in the file (truncated or corrupt)"
                )));
            }
        }
        self.data_left = size;
        self.pad_left = size % 2;
        self.current = name.clone();
        Ok(Some(MemberHeader {
            name,
            size,
            offset: self.pos,
        }))
    }

    /// A reader over the current member's data (exactly its declared size).
    pub fn member_reader(&mut self) -> MemberReader<'_, R> {
        MemberReader { ar: self }
    }
}

/// Reads one member's data; a short file is an error naming the member.
pub struct MemberReader<'a, R: Read> {
    ar: &'a mut ArReader<R>,
}

impl<R: Read> Read for MemberReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let data = self.ar.data_left;
        if data == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(data) as usize;
        let n = self.ar.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(invalid(format!(
                "ar member {:?} is truncated",
                self.ar.current
            )));
        }
        self.ar.data_left -= n as u64;
        self.ar.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom};

    /// A member streamed from a file into a file (the path `deb build` takes for data.tar, which
    /// std copies in the kernel) has the bytes, the padding and the header of one written from
    /// memory; a source shorter than the declared size is an error naming the member.
    #[test]
    fn a_member_copied_from_a_file_is_the_member_written_from_memory() {
        let data: Vec<u8> = (0..(3 << 20) + 1)
            .map(|i: u32| (i * 7 % 251) as u8)
            .collect();
        let mut src = tempfile::tempfile().unwrap();
        src.write_all(&data).unwrap();

        let mut from_memory = ArWriter::new(Vec::new(), 7).unwrap();
        from_memory.append_bytes("data.tar.xz", &data).unwrap();
        let expected = from_memory.finish().unwrap();

        let out = tempfile::tempfile().unwrap();
        let mut ar = ArWriter::new(out, 7).unwrap();
        src.seek(SeekFrom::Start(0)).unwrap();
        ar.append("data.tar.xz", data.len() as u64, &mut src)
            .unwrap();
        let mut out = ar.finish().unwrap();
        let mut got = Vec::new();
        out.seek(SeekFrom::Start(0)).unwrap();
        out.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(
            got == expected,
            "the copied member differs from the one written from memory"
        );

        let mut ar = ArWriter::new(tempfile::tempfile().unwrap(), 7).unwrap();
        src.seek(SeekFrom::Start(1)).unwrap();
        let err = ar
            .append("data.tar.xz", data.len() as u64, &mut src)
            .unwrap_err();
        assert!(err.to_string().contains("data.tar.xz"), "{err}");
    }
}
