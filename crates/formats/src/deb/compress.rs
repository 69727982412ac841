//! Member compression: none, gzip, xz (always the threaded encoder with a fixed block size, so
//! output bytes do not depend on the CPU count), zstd. Decompression with a size limit.

use std::fmt;
use std::io::{self, Read, Write};
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Gzip,
    Xz,
    Zstd,
}

impl Compression {
    /// The member-name suffix: "", ".gz", ".xz", ".zst".
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Xz => ".xz",
            Compression::Zstd => ".zst",
        }
    }

    /// The compression of a member named `<stem><suffix>` (e.g. `data.tar.xz` with stem
    /// `data.tar`); None when the suffix is not one dpkg knows.
    pub fn from_member_name(name: &str, stem: &str) -> Option<Compression> {
        let suffix = name.strip_prefix(stem)?;
        [
            Compression::None,
            Compression::Gzip,
            Compression::Xz,
            Compression::Zstd,
        ]
        .into_iter()
        .find(|c| c.suffix() == suffix)
    }

    /// The level dpkg-deb uses when none is given (gzip 9, xz 6, zstd 3).
    pub fn default_level(self) -> u32 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 9,
            Compression::Xz => 6,
            Compression::Zstd => 3,
        }
    }

    /// The accepted level range, as dpkg-deb's `-z` accepts it.
    pub fn level_range(self) -> (u32, u32) {
        match self {
            Compression::None => (0, 9),
            Compression::Gzip => (0, 9),
            Compression::Xz => (0, 9),
            Compression::Zstd => (1, 22),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Compression::None),
            "gzip" | "gz" => Ok(Compression::Gzip),
            "xz" => Ok(Compression::Xz),
            "zstd" | "zst" => Ok(Compression::Zstd),
            other => Err(format!(
                "unknown compression {other:?} (expected xz, gzip, zstd or none)"
            )),
        }
    }
}

/// The xz block size for a preset: the preset's dictionary (at least 1 MiB). Fixed here so the
/// block layout — and so every output byte — is the same whatever the thread count.
///
/// Why not `xz -T`'s default of three dictionaries (24 MiB at -6, what `dpkg-deb` writes): each
/// block is one thread's work, so the last, shorter block leaves the other threads idle. The real
/// 7.2.4 runtime package's 32 MiB data.tar is a 24 MiB and an 8 MiB block there: on 2 CPUs one
/// CPU waits for most of the build. One-dictionary blocks bound that wait by one small block at
/// any thread count; the cost is ratio (that package at -6: +0.44 % output, and 0.60× the time
/// on 2 threads: docs/performance.md).
pub fn xz_block_size(level: u32) -> u64 {
    const MIB: u64 = 1 << 20;
    let dict: u64 = match level {
        0 => 256 << 10,
        1 => MIB,
        2 => 2 * MIB,
        3 | 4 => 4 * MIB,
        5 | 6 => 8 * MIB,
        7 => 16 * MIB,
        8 => 32 * MIB,
        _ => 64 * MIB,
    };
    dict.max(MIB)
}

/// A compressing writer. `finish` must be called; dropping it loses the stream end.
pub enum Encoder<W: Write> {
    None(W),
    Gzip(flate2::write::GzEncoder<W>),
    Xz(liblzma::write::XzEncoder<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Encoder<W> {
    /// `level` None uses [`Compression::default_level`]; `threads` (≥ 1) only changes speed,
    /// never the output bytes.
    pub fn new(
        out: W,
        compression: Compression,
        level: Option<u32>,
        threads: u32,
    ) -> io::Result<Self> {
        let level = level.unwrap_or(compression.default_level());
        let (lo, hi) = compression.level_range();
        if level < lo || level > hi {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{compression} compression level {level} is out of range {lo}..={hi}"),
            ));
        }
        let threads = threads.max(1);
        Ok(match compression {
            Compression::None => Encoder::None(out),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::new(level),
            )),
            Compression::Xz => {
                let stream = liblzma::stream::MtStreamBuilder::new()
                    .threads(threads)
                    .block_size(xz_block_size(level))
                    .preset(level)
                    .check(liblzma::stream::Check::Crc64)
                    .encoder()
                    .map_err(|e| io::Error::other(format!("xz encoder setup: {e}")))?;
                Encoder::Xz(liblzma::write::XzEncoder::new_stream(out, stream))
            }
            Compression::Zstd => {
                let mut enc = zstd::stream::write::Encoder::new(out, level as i32)?;
                enc.include_checksum(true)?;
                // Always the multi-threaded mode, even with one worker: zstd's MT output depends
                // on the job layout, not on the number of workers, but differs from the
                // single-threaded (0 workers) mode.
                enc.multithread(threads)?;
                Encoder::Zstd(enc)
            }
        })
    }

    /// Write the stream end and hand back the inner writer.
    pub fn finish(self) -> io::Result<W> {
        match self {
            Encoder::None(w) => Ok(w),
            Encoder::Gzip(e) => e.finish(),
            Encoder::Xz(e) => e.finish(),
            Encoder::Zstd(e) => e.finish(),
        }
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::None(w) => w.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Xz(e) => e.write(buf),
            Encoder::Zstd(e) => e.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Encoder::None(w) => w.write_all(buf),
            Encoder::Gzip(e) => e.write_all(buf),
            Encoder::Xz(e) => e.write_all(buf),
            Encoder::Zstd(e) => e.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::None(w) => w.flush(),
            Encoder::Gzip(e) => e.flush(),
            Encoder::Xz(e) => e.flush(),
            Encoder::Zstd(e) => e.flush(),
        }
    }
}

/// Compress `data` in memory (control.tar is small).
pub fn compress_bytes(
    data: &[u8],
    compression: Compression,
    level: Option<u32>,
    threads: u32,
) -> io::Result<Vec<u8>> {
    let mut enc = Encoder::new(Vec::new(), compression, level, threads)?;
    enc.write_all(data)?;
    enc.finish()
}

/// A decompressing reader that fails cleanly: a corrupt or truncated stream becomes an
/// `InvalidData` error saying which format was corrupt, and more than `limit` decompressed
/// bytes is an error (decompression-bomb guard) instead of filling the disk or memory.
pub struct Decoder<'a> {
    inner: Box<dyn Read + 'a>,
    compression: Compression,
    produced: u64,
    limit: u64,
    /// Where the limit comes from and how to raise it, for the error.
    why: Option<String>,
}

impl<'a> Decoder<'a> {
    pub fn new<R: Read + 'a>(input: R, compression: Compression, limit: u64) -> io::Result<Self> {
        let inner: Box<dyn Read + 'a> = match compression {
            Compression::None => Box::new(input),
            // Concatenated gzip members are one member's data, as dpkg-deb (zlib's gzread) reads
            // them. dpkg-deb reads only the first xz stream and the first zstd frame, so more is
            // refused (see OneStream).
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
            Compression::Xz => Box::new(OneStream {
                decoder: liblzma::bufread::XzDecoder::new(io::BufReader::new(input)),
                what: "xz stream",
            }),
            Compression::Zstd => Box::new(OneStream {
                decoder: zstd::stream::read::Decoder::with_buffer(io::BufReader::new(input))?
                    .single_frame(),
                what: "zstd frame",
            }),
        };
        Ok(Decoder {
            inner,
            compression,
            produced: 0,
            limit,
            why: None,
        })
    }

    /// Say in the limit's error where the limit comes from and how to raise it.
    pub fn explaining(mut self, why: String) -> Self {
        self.why = Some(why);
        self
    }

    /// Decompressed bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }
}

/// A decoder that can give back its buffered input (to see whether anything follows the
/// stream it decoded).
trait BufferedDecoder: Read {
    fn input(&mut self) -> &mut dyn io::BufRead;
}

impl<R: Read> BufferedDecoder for liblzma::bufread::XzDecoder<io::BufReader<R>> {
    fn input(&mut self) -> &mut dyn io::BufRead {
        self.get_mut()
    }
}

impl<R: Read> BufferedDecoder for zstd::stream::read::Decoder<'_, io::BufReader<R>> {
    fn input(&mut self) -> &mut dyn io::BufRead {
        self.get_mut()
    }
}

/// One xz stream or zstd frame, and nothing after it: dpkg-deb (checked against 1.21) decodes
/// only a member's first one, so the tar in a second is cut short. Bytes after the first are
/// refused by name rather than silently dropped or read where dpkg would not.
struct OneStream<D: BufferedDecoder> {
    decoder: D,
    what: &'static str,
}

impl<D: BufferedDecoder> Read for OneStream<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.decoder.read(buf)?;
        if n == 0 && !buf.is_empty() && !self.decoder.input().fill_buf()?.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "data after the end of the first {} (dpkg-deb reads only the first one: \
                     recompress the member as a single {})",
                    self.what, self.what
                ),
            ));
        }
        Ok(n)
    }
}

impl Read for Decoder<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // Ask for at most one byte past the limit, so crossing it is detected exactly.
        let allowed = self.limit.saturating_sub(self.produced).saturating_add(1);
        let want = (buf.len() as u64).min(allowed) as usize;
        let n = self.inner.read(&mut buf[..want]).map_err(|e| {
            if self.compression == Compression::None {
                e
            } else if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("truncated {} stream", self.compression),
                )
            } else {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("corrupt {} stream: {e}", self.compression),
                )
            }
        })?;
        self.produced += n as u64;
        if self.produced > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                match &self.why {
                    None => format!(
                        "decompresses to more than the limit of {} bytes (decompression-bomb guard)",
                        self.limit
                    ),
                    Some(why) => format!(
                        "decompresses to more than the limit of {} bytes (decompression-bomb guard: {why})",
                        self.limit
                    ),
                },
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        // Compressible but not trivial: a few MiB of pseudo-random words.
        let mut out = Vec::new();
        let mut x: u64 = 0x9E3779B97F4A7C15;
        while out.len() < (5 << 20) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(format!("w{} ", x % 5000).as_bytes());
        }
        out
    }

    fn roundtrip(c: Compression) {
        let data = sample();
        let packed = compress_bytes(&data, c, None, 2).unwrap();
        let mut back = Vec::new();
        Decoder::new(&packed[..], c, u64::MAX)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data, "{c} round trip");
    }

    #[test]
    fn roundtrips() {
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Xz,
            Compression::Zstd,
        ] {
            roundtrip(c);
        }
    }

    #[test]
    fn threaded_output_does_not_depend_on_thread_count() {
        // 5 MiB with level 1 (1 MiB blocks) gives xz five blocks, so the threads really split work.
        let data = sample();
        for (c, level) in [(Compression::Xz, Some(1)), (Compression::Zstd, Some(3))] {
            let one = compress_bytes(&data, c, level, 1).unwrap();
            let two = compress_bytes(&data, c, level, 2).unwrap();
            let four = compress_bytes(&data, c, level, 4).unwrap();
            assert_eq!(one, two, "{c}: 1 thread vs 2 threads");
            assert_eq!(one, four, "{c}: 1 thread vs 4 threads");
        }
    }

    #[test]
    fn xz_writes_one_block_per_dictionary_so_threads_share_the_work() {
        // xz itself reads the layout back: 5 MiB at level 1 (1 MiB dictionary) is five blocks,
        // at level 6 (8 MiB) one. `xz --robot --list`: "file <streams> <blocks> ...".
        let data = sample();
        let dir = tempfile::tempdir().unwrap();
        for (level, blocks) in [(1u32, data.len().div_ceil(1 << 20)), (6, 1)] {
            let p = dir.path().join(format!("x{level}.xz"));
            let packed = compress_bytes(&data, Compression::Xz, Some(level), 2).unwrap();
            std::fs::write(&p, &packed).unwrap();
            let out = std::process::Command::new("xz")
                .args(["--robot", "--list"])
                .arg(&p)
                .output()
                .unwrap();
            assert!(out.status.success(), "xz --list: {out:?}");
            let text = String::from_utf8_lossy(&out.stdout);
            let file_line: Vec<&str> = text
                .lines()
                .find(|l| l.starts_with("file\t"))
                .unwrap_or_else(|| panic!("no file line in {text}"))
                .split('\t')
                .collect();
            assert_eq!(file_line[2], blocks.to_string(), "level {level}: {text}");
        }
    }

    #[test]
    fn xz_output_is_read_by_xz() {
        let data = sample();
        let packed = compress_bytes(&data, Compression::Xz, Some(1), 2).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.xz");
        std::fs::write(&p, &packed).unwrap();
        let out = std::process::Command::new("xz")
            .args(["-dc"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, data);
    }

    #[test]
    fn bomb_guard_stops_at_limit() {
        let data = vec![0u8; 1 << 20];
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Xz,
            Compression::Zstd,
        ] {
            let packed = compress_bytes(&data, c, None, 1).unwrap();
            let mut d = Decoder::new(&packed[..], c, 1000).unwrap();
            let err = io::copy(&mut d, &mut io::sink()).unwrap_err();
            assert!(
                err.to_string().contains("limit of 1000 bytes"),
                "{c}: {err}"
            );
            // Exactly at the limit is fine.
            let mut d = Decoder::new(&packed[..], c, 1 << 20).unwrap();
            assert_eq!(io::copy(&mut d, &mut io::sink()).unwrap(), 1 << 20);
        }
    }

    #[test]
    fn corrupt_and_truncated_streams_are_clean_errors() {
        let data = sample();
        for c in [Compression::Gzip, Compression::Xz, Compression::Zstd] {
            let packed = compress_bytes(&data, c, None, 1).unwrap();
            let truncated = &packed[..packed.len() / 2];
            let err = io::copy(
                &mut Decoder::new(truncated, c, u64::MAX).unwrap(),
                &mut io::sink(),
            )
            .unwrap_err();
            assert!(err.to_string().contains(c.name()), "{c}: {err}");
            let mut corrupt = packed.clone();
            let mid = corrupt.len() / 2;
            for b in &mut corrupt[mid..mid + 64] {
                *b ^= 0x5a;
            }
            let err = io::copy(
                &mut Decoder::new(&corrupt[..], c, u64::MAX).unwrap(),
                &mut io::sink(),
            )
            .unwrap_err();
            assert!(err.to_string().contains(c.name()), "{c}: {err}");
        }
    }

    #[test]
    fn level_out_of_range_is_refused() {
        assert!(Encoder::new(Vec::new(), Compression::Xz, Some(10), 1).is_err());
        assert!(Encoder::new(Vec::new(), Compression::Zstd, Some(0), 1).is_err());
    }
}
