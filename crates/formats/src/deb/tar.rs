//! Reproducible tar members (GNU headers, root:root, fixed mtime, `./` names) and safe reading.
//!
//! The writer emits exactly what GNU tar `--format=gnu --owner=root:0 --group=root:0` emits for
//! the entry kinds a package holds (GNU `././@LongLink` entries for names or link targets over
//! 100 bytes), so dpkg-deb and dpkg read it as their own. Headers are built here rather than
//! with the `tar` crate because that crate drops the leading `./` Debian packages carry.
//!
//! The reader is strict: checksums verified, a declared size larger than the data left is an
//! error (not a short file), unknown entry kinds are refused, and [`SafeNames`] refuses names
//! that would write outside the destination.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};

/// One entry of a data.tar as a package holds it (what `dpkg-deb -c` lists).
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
    /// Path as stored, normalised to start with `./`. Directories end with `/` (as
    /// `dpkg-deb -c` prints them); the root directory is `./`.
    pub path: String,
    pub kind: EntryKind,
    pub mode: u32,
    pub size: u64,
}

impl EntryKind {
    /// The type letter of `ls -l`, `tar -tv` and `dpkg-deb -c` (`h` for a hard link).
    pub fn type_char(&self) -> char {
        match self {
            EntryKind::File => '-',
            EntryKind::Dir => 'd',
            EntryKind::Symlink(_) => 'l',
            EntryKind::Hardlink(_) => 'h',
        }
    }
}

/// The nine permission letters of `ls -l` for a mode, set-id and sticky bits included
/// (`rwsr-xr-t`).
pub fn permission_letters(mode: u32) -> String {
    let bit = |mask: u32, c: char| if mode & mask != 0 { c } else { '-' };
    let exec = |x: u32, special: u32, s: char, big: char| match (mode & x != 0, mode & special != 0)
    {
        (true, true) => s,
        (false, true) => big,
        (true, false) => 'x',
        (false, false) => '-',
    };
    [
        bit(0o400, 'r'),
        bit(0o200, 'w'),
        exec(0o100, 0o4000, 's', 'S'),
        bit(0o040, 'r'),
        bit(0o020, 'w'),
        exec(0o010, 0o2000, 's', 'S'),
        bit(0o004, 'r'),
        bit(0o002, 'w'),
        exec(0o001, 0o1000, 't', 'T'),
    ]
    .iter()
    .collect()
}

pub const BLOCK: usize = 512;
/// GNU tar pads the archive to a multiple of its record size (20 blocks).
const RECORD: u64 = 20 * BLOCK as u64;

const TYPE_FILE: u8 = b'0';
const TYPE_FILE_OLD: u8 = 0;
const TYPE_HARDLINK: u8 = b'1';
const TYPE_SYMLINK: u8 = b'2';
const TYPE_DIR: u8 = b'5';
const TYPE_GNU_LONGNAME: u8 = b'L';
const TYPE_GNU_LONGLINK: u8 = b'K';
const TYPE_PAX_LOCAL: u8 = b'x';
const TYPE_PAX_GLOBAL: u8 = b'g';

/// What one written entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind<'a> {
    Dir,
    /// A regular file of the given size; contents follow via `TarWriter::append_file`.
    File(u64),
    Symlink(&'a [u8]),
    Hardlink(&'a [u8]),
}

/// Writes a GNU tar stream. Names are written as given: callers pass `./`-prefixed names, with
/// a trailing `/` for directories, as GNU tar writes them for dpkg-deb.
pub struct TarWriter<W: Write> {
    out: W,
    written: u64,
}

fn put_octal(field: &mut [u8], value: u64) -> io::Result<()> {
    // `width - 1` octal digits and a NUL, as GNU tar writes them.
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    if text.len() > digits {
        // GNU base-256 for values that do not fit (sizes ≥ 8 GiB): high bit set, big-endian.
        if field.len() < 9 {
            return Err(io::Error::other(format!(
                "tar header value {value} does not fit"
            )));
        }
        field.fill(0);
        field[0] = 0x80;
        let n = field.len();
        field[n - 8..].copy_from_slice(&value.to_be_bytes());
        return Ok(());
    }
    field[..digits].copy_from_slice(text.as_bytes());
    field[digits] = 0;
    Ok(())
}

fn header_block(
    name: &[u8],
    typeflag: u8,
    mode: u32,
    size: u64,
    mtime: u64,
    link: &[u8],
) -> io::Result<[u8; BLOCK]> {
    let mut h = [0u8; BLOCK];
    let n = name.len().min(100);
    h[..n].copy_from_slice(&name[..n]);
    put_octal(&mut h[100..108], u64::from(mode & 0o7777))?;
    put_octal(&mut h[108..116], 0)?;
    put_octal(&mut h[116..124], 0)?;
    put_octal(&mut h[124..136], size)?;
    put_octal(&mut h[136..148], mtime)?;
    h[156] = typeflag;
    let l = link.len().min(100);
    h[157..157 + l].copy_from_slice(&link[..l]);
    h[257..265].copy_from_slice(b"ustar  \0");
    h[265..269].copy_from_slice(b"root");
    h[297..301].copy_from_slice(b"root");
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let text = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(text.as_bytes());
    Ok(h)
}

impl<W: Write> TarWriter<W> {
    pub fn new(out: W) -> Self {
        TarWriter { out, written: 0 }
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let rem = (self.written % BLOCK as u64) as usize;
        if rem != 0 {
            self.put(&[0u8; BLOCK][..BLOCK - rem])?;
        }
        Ok(())
    }

    fn long_entry(&mut self, typeflag: u8, value: &[u8]) -> io::Result<()> {
        let mut data = value.to_vec();
        data.push(0);
        let h = header_block(b"././@LongLink", typeflag, 0o644, data.len() as u64, 0, b"")?;
        self.put(&h)?;
        self.put(&data)?;
        self.pad()
    }

    /// Write one header (plus GNU long-name entries when needed). For `File`, the caller must
    /// then write exactly that many bytes with [`TarWriter::write_contents`].
    pub fn append_header(
        &mut self,
        name: &[u8],
        kind: WriteKind<'_>,
        mode: u32,
        mtime: u64,
    ) -> io::Result<()> {
        let (typeflag, size, link): (u8, u64, &[u8]) = match kind {
            WriteKind::Dir => (TYPE_DIR, 0, b""),
            WriteKind::File(size) => (TYPE_FILE, size, b""),
            WriteKind::Symlink(t) => (TYPE_SYMLINK, 0, t),
            WriteKind::Hardlink(t) => (TYPE_HARDLINK, 0, t),
        };
        if link.len() > 100 {
            self.long_entry(TYPE_GNU_LONGLINK, link)?;
        }
        if name.len() > 100 {
            self.long_entry(TYPE_GNU_LONGNAME, name)?;
        }
        let h = header_block(name, typeflag, mode, size, mtime, link)?;
        self.put(&h)
    }

    /// Copy exactly `size` bytes of a file's contents from `src`, then pad. Each chunk is also
    /// passed to `observe` (used to compute md5sums in the same pass). A source shorter or
    /// longer than `size` is an error: the file changed while the package was being built.
    pub fn write_contents(
        &mut self,
        src: &mut dyn Read,
        size: u64,
        observe: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        let mut buf = vec![0u8; 256 << 10];
        let mut left = size;
        while left > 0 {
            let want = (buf.len() as u64).min(left) as usize;
            let n = match src.read(&mut buf[..want]) {
                Ok(0) => return Err(file_shrank(left, size)),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            observe(&buf[..n]);
            self.put(&buf[..n])?;
            left -= n as u64;
        }
        check_no_more(src, size)?;
        self.pad()
    }

    /// Write the next part of a file's contents whose bytes were read elsewhere (the read-ahead
    /// thread of `super::read_ahead`); the caller makes the parts add up to the header's size
    /// and ends the file with [`TarWriter::end_contents`].
    pub fn put_contents(&mut self, part: &[u8]) -> io::Result<()> {
        self.put(part)
    }

    /// End a file written with [`TarWriter::put_contents`]: pad to the block size.
    pub fn end_contents(&mut self) -> io::Result<()> {
        self.pad()
    }

    /// End the archive (two zero blocks, padded to the record size) and return the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.put(&[0u8; 2 * BLOCK])?;
        let rem = self.written % RECORD;
        if rem != 0 {
            let zeros = vec![0u8; (RECORD - rem) as usize];
            self.put(&zeros)?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The size a file had when the package's entries were listed (its tar header's size) is what
/// must be read: fewer bytes mean it shrank while the package was being built.
pub(super) fn file_shrank(left: u64, size: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("file shrank while being read ({left} of {size} bytes missing)"),
    )
}

/// After a file's `size` bytes, `src` must be at its end, or the file grew while being read.
pub(super) fn check_no_more(src: &mut dyn Read, size: u64) -> io::Result<()> {
    let mut probe = [0u8; 1];
    loop {
        match src.read(&mut probe) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "file grew while being read (more than {size} bytes)"
                )))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One raw header as read: names as stored (GNU long names and pax paths resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub name: Vec<u8>,
    pub link: Vec<u8>,
    pub typeflag: u8,
    pub mode: u32,
    pub size: u64,
    pub mtime: u64,
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn parse_number(field: &[u8], what: &str) -> io::Result<u64> {
    if let Some(&first) = field.first() {
        if first & 0x80 != 0 {
            // GNU base-256. Only positive values make sense for a package.
            if first & 0x40 != 0 {
                return Err(bad(format!("negative {what} in tar header")));
            }
            let mut v: u64 = u64::from(first & 0x3f);
            for &b in &field[1..] {
                v = v
                    .checked_mul(256)
                    .and_then(|v| v.checked_add(u64::from(b)))
                    .ok_or_else(|| bad(format!("{what} in tar header overflows")))?;
            }
            return Ok(v);
        }
    }
    let text: Vec<u8> = field
        .iter()
        .copied()
        .take_while(|&b| b != 0)
        .filter(|&b| b != b' ')
        .collect();
    if text.is_empty() {
        return Ok(0);
    }
    let mut v: u64 = 0;
    for b in text {
        if !(b'0'..=b'7').contains(&b) {
            return Err(bad(format!("{what} field in tar header is not octal")));
        }
        v = v
            .checked_mul(8)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| bad(format!("{what} in tar header overflows")))?;
    }
    Ok(v)
}

fn cstr(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    &field[..end]
}

/// Reader over one entry's contents: returns an error, not a short read, when the archive
/// ends before the declared size.
struct ContentReader<'a, R: Read> {
    inner: &'a mut R,
    left: u64,
    declared: u64,
}

impl<R: Read> Read for ContentReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(self.left) as usize;
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(bad(format!(
                "declared size {} but the archive ends after {} bytes of it",
                self.declared,
                self.declared - self.left
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn read_block<R: Read>(r: &mut R, block: &mut [u8; BLOCK]) -> io::Result<bool> {
    // false = clean EOF before the block started.
    let mut got = 0;
    while got < BLOCK {
        match r.read(&mut block[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(bad("tar archive ends in the middle of a header")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn skip<R: Read>(r: &mut R, n: u64, what: &str) -> io::Result<()> {
    let copied = io::copy(&mut r.take(n), &mut io::sink())?;
    if copied != n {
        return Err(bad(format!("tar archive ends inside {what}")));
    }
    Ok(())
}

fn padding(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

/// Read a small special entry's data (long names, pax headers), capped.
fn read_small<R: Read>(r: &mut R, size: u64, what: &str) -> io::Result<Vec<u8>> {
    const MAX: u64 = 1 << 20;
    if size > MAX {
        return Err(bad(format!("{what} of {size} bytes is larger than {MAX}")));
    }
    let mut data = Vec::with_capacity(size as usize);
    ContentReader {
        inner: r,
        left: size,
        declared: size,
    }
    .read_to_end(&mut data)
    .map_err(|e| match e.kind() {
        // Not the archive's fault (a limit of the reader below, an I/O error): kept as is.
        io::ErrorKind::InvalidData => bad(format!("{what}: {e}")),
        _ => e,
    })?;
    skip(r, padding(size), what)?;
    Ok(data)
}

fn parse_pax(data: &[u8]) -> io::Result<Vec<(String, Vec<u8>)>> {
    // Records: "<len> <key>=<value>\n", len counting the whole record.
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let sp = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| bad("malformed pax header record"))?;
        let len: usize = std::str::from_utf8(&rest[..sp])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("malformed pax header record length"))?;
        if len <= sp + 1 || len > rest.len() || rest[len - 1] != b'\n' {
            return Err(bad("malformed pax header record"));
        }
        let record = &rest[sp + 1..len - 1];
        let eq = record
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| bad("malformed pax header record"))?;
        let key = String::from_utf8_lossy(&record[..eq]).into_owned();
        out.push((key, record[eq + 1..].to_vec()));
        rest = &rest[len..];
    }
    Ok(out)
}

/// Read every entry of a tar stream, calling `visit` with the raw header and a reader over its
/// contents. Whatever `visit` leaves unread is skipped. The archive must end with a zero block;
/// anything after it is ignored (record padding).
pub fn read_raw<R: Read>(
    r: &mut R,
    visit: &mut dyn FnMut(&RawEntry, &mut dyn Read) -> io::Result<()>,
) -> io::Result<()> {
    let mut block = [0u8; BLOCK];
    let mut pending = PendingExtensions::default();
    loop {
        if !read_block(r, &mut block)? {
            return Err(bad(
                "tar archive ends without its end-of-archive marker (truncated)",
            ));
        }
        if block.iter().all(|&b| b == 0) {
            if !pending.is_empty() {
                return Err(bad("tar archive ends right after an extended header"));
            }
            return Ok(());
        }
        check_header_checksum(&block)?;
        let typeflag = block[156];
        let mode = parse_number(&block[100..108], "mode")?;
        let size = parse_number(&block[124..136], "size")?;
        let mtime = parse_number(&block[136..148], "mtime")?;
        if pending.read_extension(r, typeflag, size)? {
            continue;
        }
        let (name, link, size) = pending.apply(&block, size)?;
        let entry = RawEntry {
            name,
            link,
            typeflag,
            mode: (mode & 0o7777) as u32,
            size,
            mtime,
        };
        // Only regular files carry data; a link or directory with a size would desynchronise.
        let data_size = match typeflag {
            TYPE_FILE | TYPE_FILE_OLD => size,
            _ => 0,
        };
        let mut content = ContentReader {
            inner: r,
            left: data_size,
            declared: data_size,
        };
        visit(&entry, &mut content)?;
        let left = content.left;
        if left > 0 {
            let copied = io::copy(&mut content, &mut io::sink())?;
            debug_assert_eq!(copied, left);
        }
        skip(r, padding(data_size), "entry padding")?;
    }
}

/// The header checksum: the sum of the header bytes with the checksum field read as spaces.
fn check_header_checksum(block: &[u8; BLOCK]) -> io::Result<()> {
    let stored = parse_number(&block[148..156], "checksum")?;
    let mut sum: u64 = 0;
    for (i, &b) in block.iter().enumerate() {
        sum += if (148..156).contains(&i) {
            u64::from(b' ')
        } else {
            u64::from(b)
        };
    }
    if stored != sum {
        return Err(bad("tar header checksum mismatch (corrupt archive)"));
    }
    Ok(())
}

/// Extended headers (GNU long name/link, pax) read but not yet applied: they describe the next
/// real entry.
#[derive(Default)]
struct PendingExtensions {
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax: Vec<(String, Vec<u8>)>,
}

impl PendingExtensions {
    fn is_empty(&self) -> bool {
        self.long_name.is_none() && self.long_link.is_none() && self.pax.is_empty()
    }

    /// When `typeflag` is an extended header, read its `size` bytes of data from `r` and keep
    /// them for the next entry (a pax global header is read and ignored); true if it was one.
    fn read_extension<R: Read>(&mut self, r: &mut R, typeflag: u8, size: u64) -> io::Result<bool> {
        match typeflag {
            TYPE_GNU_LONGNAME => {
                let mut v = read_small(r, size, "GNU long name")?;
                v.truncate(cstr(&v).len());
                self.long_name = Some(v);
            }
            TYPE_GNU_LONGLINK => {
                let mut v = read_small(r, size, "GNU long link name")?;
                v.truncate(cstr(&v).len());
                self.long_link = Some(v);
            }
            TYPE_PAX_LOCAL => {
                let data = read_small(r, size, "pax header")?;
                self.pax = parse_pax(&data)?;
            }
            TYPE_PAX_GLOBAL => {
                read_small(r, size, "pax global header")?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The name, link name and size of the entry whose header is `block`: the header's own
    /// fields, overridden by the pending extensions (pax last), which are used up.
    fn apply(&mut self, block: &[u8; BLOCK], size: u64) -> io::Result<(Vec<u8>, Vec<u8>, u64)> {
        let mut name = self.long_name.take().unwrap_or_else(|| header_name(block));
        let mut link = self
            .long_link
            .take()
            .unwrap_or_else(|| cstr(&block[157..257]).to_vec());
        let mut size = size;
        for (key, value) in self.pax.drain(..) {
            match key.as_str() {
                "path" => name = value,
                "linkpath" => link = value,
                "size" => {
                    size = std::str::from_utf8(&value)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| bad("malformed pax size"))?
                }
                _ => {}
            }
        }
        Ok((name, link, size))
    }
}

/// The name stored in a header: the name field, behind the ustar prefix field when there is one.
fn header_name(block: &[u8; BLOCK]) -> Vec<u8> {
    let base = cstr(&block[0..100]).to_vec();
    // ustar prefix field (not used by GNU format, whose magic is "ustar  \0").
    if &block[257..263] == b"ustar\0" {
        let prefix = cstr(&block[345..500]);
        if prefix.is_empty() {
            base
        } else {
            let mut full = prefix.to_vec();
            full.push(b'/');
            full.extend_from_slice(&base);
            full
        }
    } else {
        base
    }
}

/// Turns stored names into safe, normalised `./` names and enforces the rules that keep an
/// extraction inside its destination: no absolute names, no `..`, no path through a symlink
/// entry, hard links only to earlier regular files, no duplicate names, known entry kinds only.
#[derive(Default)]
pub struct SafeNames {
    symlinks: HashSet<String>,
    seen: HashMap<String, bool>,
}

fn display_name(raw: &[u8]) -> String {
    shown_name(raw)
}

/// How many bytes of a name errors quote: a GNU long name may be a megabyte on one line.
const SHOWN_NAME_BYTES: usize = 200;

/// A stored name (or link target) as errors show it: at most its first 200 bytes (lossy
/// UTF-8), then `…` and the full length. Callers quote it with `{:?}`, which escapes
/// control characters.
pub fn shown_name(raw: &[u8]) -> String {
    if raw.len() <= SHOWN_NAME_BYTES {
        return String::from_utf8_lossy(raw).into_owned();
    }
    format!(
        "{}… ({} bytes)",
        String::from_utf8_lossy(&raw[..SHOWN_NAME_BYTES]),
        raw.len()
    )
}

/// Normalise a stored name to its components: strips any number of leading `./`, empty and
/// `.` components; refuses absolute names and `..`.
pub fn components(raw: &[u8]) -> Result<Vec<String>, String> {
    let name = std::str::from_utf8(raw)
        .map_err(|_| format!("entry name {:?} is not UTF-8", display_name(raw)))?;
    let shown = || shown_name(raw);
    if name.starts_with('/') {
        return Err(format!("entry {:?} has an absolute name", shown()));
    }
    if name.contains('\0') {
        return Err(format!("entry {:?} contains a NUL byte", shown()));
    }
    let mut out = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(format!("entry {:?} contains a '..' component", shown())),
            p => out.push(p.to_string()),
        }
    }
    Ok(out)
}

fn join(parts: &[String], dir: bool) -> String {
    if parts.is_empty() {
        return "./".to_string();
    }
    let mut s = format!("./{}", parts.join("/"));
    if dir {
        s.push('/');
    }
    s
}

impl SafeNames {
    pub fn new() -> Self {
        Self::default()
    }

    fn check_parents(&self, parts: &[String], what: &str) -> Result<(), String> {
        for i in 1..parts.len() {
            let ancestor = join(&parts[..i], false);
            if self.symlinks.contains(&ancestor) {
                return Err(format!(
                    "{what} goes through the symlink entry {:?}",
                    shown_name(ancestor.as_bytes())
                ));
            }
        }
        Ok(())
    }

    /// Validate one raw entry (in archive order) and turn it into an [`Entry`]. Directory names
    /// end with `/` (as `dpkg-deb -c` prints them); the root is `./`.
    pub fn check(&mut self, raw: &RawEntry) -> Result<Entry, String> {
        let parts = components(&raw.name)?;
        let kind_is_dir = raw.typeflag == TYPE_DIR;
        let path = join(&parts, kind_is_dir);
        let key = join(&parts, false);
        let shown = display_name(&raw.name);
        let kind = match raw.typeflag {
            TYPE_FILE | TYPE_FILE_OLD => EntryKind::File,
            TYPE_DIR => EntryKind::Dir,
            TYPE_SYMLINK => {
                let target = std::str::from_utf8(&raw.link)
                    .map_err(|_| format!("symlink {shown:?} has a target that is not UTF-8"))?;
                if target.is_empty() {
                    return Err(format!("symlink {shown:?} has an empty target"));
                }
                EntryKind::Symlink(target.to_string())
            }
            TYPE_HARDLINK => {
                let tparts = components(&raw.link)
                    .map_err(|e| format!("hard link {shown:?} target: {e}"))?;
                let target = join(&tparts, false);
                self.check_parents(
                    &tparts,
                    &format!("hard link target {:?}", shown_name(target.as_bytes())),
                )?;
                match self.seen.get(&target) {
                    Some(true) => {}
                    Some(false) => {
                        return Err(format!(
                            "hard link {shown:?} points at {:?}, which is not a regular file",
                            shown_name(target.as_bytes())
                        ))
                    }
                    None => {
                        return Err(format!(
                            "hard link {shown:?} points at {:?}, which is not an earlier entry",
                            shown_name(target.as_bytes())
                        ))
                    }
                }
                EntryKind::Hardlink(target)
            }
            other => {
                return Err(format!(
                    "entry {shown:?} has unsupported type {:?}",
                    char::from(other)
                ))
            }
        };
        if parts.is_empty() && kind != EntryKind::Dir {
            return Err(format!(
                "entry {shown:?} names the root but is not a directory"
            ));
        }
        self.check_parents(&parts, &format!("entry {:?}", shown_name(path.as_bytes())))?;
        if self.seen.contains_key(&key) {
            return Err(format!(
                "entry {:?} appears twice",
                shown_name(path.as_bytes())
            ));
        }
        self.seen.insert(key.clone(), kind == EntryKind::File);
        if matches!(kind, EntryKind::Symlink(_)) {
            self.symlinks.insert(key);
        }
        let size = if kind == EntryKind::File { raw.size } else { 0 };
        Ok(Entry {
            path,
            kind,
            mode: raw.mode,
            size,
        })
    }
}

/// Read a tar stream, validating every entry with [`SafeNames`]; `visit` gets each entry and a
/// reader over its contents (empty for non-files).
pub fn read_safe<R: Read>(
    r: &mut R,
    visit: &mut dyn FnMut(&Entry, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut names = SafeNames::new();
    let mut failure: Option<anyhow::Error> = None;
    let result = read_raw(r, &mut |raw, content| {
        let entry = names.check(raw).map_err(bad)?;
        visit(&entry, content).map_err(|e| {
            let msg = format!("{e:#}");
            failure = Some(e);
            io::Error::other(msg)
        })
    });
    match (result, failure) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(anyhow::anyhow!(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::deb::crafted::tar_of as build;

    fn list(bytes: &[u8]) -> anyhow::Result<Vec<Entry>> {
        let mut out = Vec::new();
        read_safe(&mut &bytes[..], &mut |e, r| {
            let mut data = Vec::new();
            r.read_to_end(&mut data)?;
            assert_eq!(data.len() as u64, e.size);
            out.push(e.clone());
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn written_archive_reads_back_and_gnu_tar_agrees() {
        let long = format!("./{}/file", "d".repeat(150));
        let long_target = format!("../{}", "t".repeat(120));
        let bytes = build(&[
            ("./", WriteKind::Dir, b""),
            ("./a/", WriteKind::Dir, b""),
            ("./a/f", WriteKind::File(5), b"hello"),
            ("./a/h", WriteKind::Hardlink(b"./a/f"), b""),
            ("./a/s", WriteKind::Symlink(b"f"), b""),
            (&long, WriteKind::File(0), b""),
            ("./a/ls", WriteKind::Symlink(long_target.as_bytes()), b""),
        ]);
        assert_eq!(bytes.len() % RECORD as usize, 0);
        let entries = list(&bytes).unwrap();
        let paths: Vec<_> = entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "./",
                "./a/",
                "./a/f",
                "./a/h",
                "./a/s",
                long.as_str(),
                "./a/ls"
            ]
        );
        assert_eq!(entries[3].kind, EntryKind::Hardlink("./a/f".into()));
        assert_eq!(entries[6].kind, EntryKind::Symlink(long_target.clone()));
        // GNU tar is the judge of the format.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.tar");
        std::fs::write(&p, &bytes).unwrap();
        let out = std::process::Command::new("tar")
            .arg("-tvf")
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("root/root"), "{text}");
        assert!(text.contains("./a/h link to ./a/f"), "{text}");
        assert!(text.contains(&long), "{text}");
        assert!(text.contains(&format!("./a/ls -> {long_target}")), "{text}");
    }

    fn expect_err(entries: &[(&str, WriteKind<'_>, &[u8])], needle: &str) {
        let bytes = build(entries);
        let err = list(&bytes).unwrap_err().to_string();
        assert!(err.contains(needle), "expected {needle:?} in {err:?}");
    }

    #[test]
    fn hostile_names_are_refused() {
        expect_err(&[("./a/../../x", WriteKind::File(0), b"")], "'..'");
        expect_err(&[("/etc/x", WriteKind::File(0), b"")], "absolute");
        expect_err(
            &[
                ("./l", WriteKind::Symlink(b"/etc"), b""),
                ("./l/passwd", WriteKind::File(0), b""),
            ],
            "goes through the symlink",
        );
        expect_err(
            &[("./h", WriteKind::Hardlink(b"./nowhere"), b"")],
            "not an earlier entry",
        );
        expect_err(
            &[
                ("./l", WriteKind::Symlink(b"/etc"), b""),
                ("./h", WriteKind::Hardlink(b"./l/passwd"), b""),
            ],
            "goes through the symlink",
        );
        expect_err(
            &[
                ("./f", WriteKind::File(0), b""),
                ("f", WriteKind::File(0), b""),
            ],
            "appears twice",
        );
    }

    #[test]
    fn declared_size_larger_than_data_is_refused() {
        let mut w = TarWriter::new(Vec::new());
        w.append_header(b"./f", WriteKind::File(4096), 0o644, 0)
            .unwrap();
        let mut bytes = w.finish().unwrap();
        bytes.truncate(BLOCK + 100);
        let err = list(&bytes).unwrap_err().to_string();
        assert!(err.contains("declared size 4096"), "{err}");
    }

    #[test]
    fn corrupt_header_and_unknown_type_are_refused() {
        let mut bytes = build(&[("./f", WriteKind::File(0), b"")]);
        bytes[10] ^= 1;
        assert!(list(&bytes).unwrap_err().to_string().contains("checksum"));
        let mut bytes = build(&[("./f", WriteKind::File(0), b"")]);
        bytes[156] = b'3';
        // Fix the checksum so only the type is wrong.
        bytes[148..156].fill(b' ');
        let sum: u32 = bytes[..BLOCK].iter().map(|&b| u32::from(b)).sum();
        bytes[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let err = list(&bytes).unwrap_err().to_string();
        assert!(err.contains("unsupported type"), "{err}");
        let bytes = build(&[("./f", WriteKind::File(0), b"")]);
        let err = list(&bytes[..BLOCK]).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn huge_sizes_use_base256() {
        let h = header_block(b"./big", TYPE_FILE, 0o644, 10 << 30, 0, b"").unwrap();
        assert_eq!(parse_number(&h[124..136], "size").unwrap(), 10 << 30);
    }
}
