//! Member compression: none, gzip, xz (always the threaded encoder with a fixed block size, so
//! output bytes do not depend on the CPU count), zstd. Decompression with a size limit.

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
}
