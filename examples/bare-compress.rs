//! The bare compressor rocm-pin links (the bundled static liblzma / libzstd, through the same
//! `Encoder` `rocm-pin deb build` uses): stdin to stdout, no tar, no hashing. scripts/bench-deb-build
//! times it beside `xz`/`zstd` (the system's library), so a ratio separates rocm-pin's own overhead
//! from the library version's.
//! Usage: bare-compress xz|zstd|gzip LEVEL [THREADS]   (THREADS default: what `deb build` picks)

use std::io::{self, BufReader, BufWriter, Write};

use rocm_pin_core::deb::archive::default_threads;
use rocm_pin_core::deb::compress::{Compression, Encoder};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bare-compress xz|zstd|gzip LEVEL [THREADS]";
    let compression: Compression = args
        .get(1)
        .ok_or_else(|| anyhow::anyhow!(usage))?
        .parse()
        .map_err(|e: String| anyhow::anyhow!(e))?;
    let level: u32 = args.get(2).ok_or_else(|| anyhow::anyhow!(usage))?.parse()?;
    let threads = match args.get(3) {
        Some(t) => t.parse()?,
        None => default_threads(),
    };
    let stdout = io::stdout().lock();
    let mut enc = Encoder::new(
        BufWriter::with_capacity(1 << 20, stdout),
        compression,
        Some(level),
        threads,
    )?;
    io::copy(
        &mut BufReader::with_capacity(1 << 20, io::stdin().lock()),
        &mut enc,
    )?;
    enc.finish()?.flush()?;
    Ok(())
}
