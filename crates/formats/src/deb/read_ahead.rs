//! Where data.tar's file contents come from, and where their md5 sums are computed.
//!
//! Inline, the thread that writes the tar stream reads each file, hashes each chunk and feeds
//! it to the compressor, one after the other: while it hashes, the compressor waits for input,
//! and while the compressor's input buffer is full, nothing is hashed. Read ahead, a thread of
//! its own reads every file once, in archive order, hashes it and hands the chunks over through
//! a bounded queue, so hashing overlaps compression. The writer receives the same chunks in the
//! same order either way (the same reads of the same sizes), so the compressed bytes are
//! identical; memory is bounded by [`POOL`] chunks of [`CHUNK`] bytes.

use std::io::{self, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use anyhow::Context;
use md5::{Digest, Md5};

use super::content::{FileData, Ordered, OrderedKind};
use super::tar::{check_no_more, file_shrank, TarWriter};

/// Bytes per read, as the inline path reads them (`TarWriter::write_contents`).
const CHUNK: usize = 256 << 10;
/// Chunks in flight at most: the read-ahead thread's memory (4 MiB) and how far it may run
/// ahead of the compressor.
const POOL: usize = 16;

/// Read ahead when more than one thread is allowed: with one (`--threads 1`), everything stays
/// on one thread, as asked.
pub fn read_ahead_by_default(threads: u32) -> bool {
    threads > 1
}

/// What the read-ahead thread hands to the writer, in archive order.
pub(super) enum Piece {
    /// The next `.1` bytes of the current file, in a buffer to give back.
    Bytes(Vec<u8>, usize),
    /// The current file is complete: its md5 (hex) when hashing.
    End(Option<String>),
    /// Reading the current file failed; nothing follows.
    Failed(anyhow::Error),
}

/// The source of every regular file's contents for one data.tar.
pub(super) enum Contents {
    /// Read and hashed on the writer's thread.
    Inline { md5: bool },
    /// Read and hashed by the read-ahead thread; used buffers go back through `free`.
    Ahead {
        pieces: Receiver<Piece>,
        free: SyncSender<Vec<u8>>,
    },
}

/// Runs `write` (which writes data.tar, calling [`Contents::write_file`] for every regular file
/// in archive order) with contents read inline, or read ahead by a thread of their own that
/// reads the regular files of `entries` in order. The thread is joined before this returns,
/// also when `write` fails (it stops at its next hand-over).
pub(super) fn with_contents<R>(
    entries: &[Ordered<'_>],
    md5: bool,
    ahead: bool,
    write: impl FnOnce(&mut Contents) -> anyhow::Result<R>,
) -> anyhow::Result<R> {
    if !ahead {
        return write(&mut Contents::Inline { md5 });
    }
    std::thread::scope(|scope| {
        let (piece_tx, pieces) = sync_channel(POOL);
        let (free, free_rx) = sync_channel(POOL);
        std::thread::Builder::new()
            .name("deb-read-ahead".into())
            .spawn_scoped(scope, move || read_ahead(entries, md5, &piece_tx, &free_rx))
            .context("cannot start the read-ahead thread")?;
        // `contents` holds the channel ends: dropped when `write` returns, so a thread still
        // waiting to hand over a chunk stops, and the scope's join does not wait forever.
        let mut contents = Contents::Ahead { pieces, free };
        write(&mut contents)
    })
}

impl Contents {
    /// Writes the contents of one regular file (`size` bytes, its header already written) into
    /// `tar`; returns its md5 (hex) when hashing.
    pub(super) fn write_file<W: Write>(
        &mut self,
        tar: &mut TarWriter<W>,
        data: &FileData,
        size: u64,
        rel: &str,
    ) -> anyhow::Result<Option<String>> {
        let context = || format!("writing data.tar: {rel}");
        match self {
            Contents::Inline { md5 } => {
                let mut reader = data.open()?;
                let mut hasher = md5.then(Md5::new);
                let mut observe = |chunk: &[u8]| {
                    if let Some(h) = hasher.as_mut() {
                        h.update(chunk);
                    }
                };
                tar.write_contents(&mut reader, size, &mut observe)
                    .with_context(context)?;
                Ok(hasher.map(|h| hex::encode(h.finalize())))
            }
            Contents::Ahead { pieces, free } => {
                let mut written = 0u64;
                loop {
                    match pieces.recv() {
                        Ok(Piece::Bytes(buf, n)) => {
                            tar.put_contents(&buf[..n]).with_context(context)?;
                            written += n as u64;
                            // At most POOL buffers exist: the queue back always has room.
                            let _ = free.try_send(buf);
                        }
                        Ok(Piece::End(sum)) => {
                            // The thread reads exactly `size` bytes or fails; a mismatch here
                            // would be a bug in the hand-over, and a corrupt archive.
                            anyhow::ensure!(
                                written == size,
                                "{}: read ahead {written} bytes, the header says {size}",
                                context()
                            );
                            tar.end_contents().with_context(context)?;
                            return Ok(sum);
                        }
                        Ok(Piece::Failed(e)) => return Err(e),
                        Err(_) => anyhow::bail!(
                            "{}: the read-ahead thread stopped without a word",
                            context()
                        ),
                    }
                }
            }
        }
    }
}

/// The read-ahead thread: every regular file of `entries`, in order, read in [`CHUNK`]s into
/// buffers from `free` (new ones while fewer than [`POOL`] exist), hashed when `md5`, and sent.
/// Stops at the first failure (sent as [`Piece::Failed`]) or when the writer is gone.
fn read_ahead(
    entries: &[Ordered<'_>],
    md5: bool,
    pieces: &SyncSender<Piece>,
    free: &Receiver<Vec<u8>>,
) {
    let mut made = 0usize;
    let mut buffer = || -> Option<Vec<u8>> {
        if let Ok(buf) = free.try_recv() {
            return Some(buf);
        }
        if made < POOL {
            made += 1;
            return Some(vec![0u8; CHUNK]);
        }
        free.recv().ok()
    };
    for entry in entries {
        let OrderedKind::File { data, size } = &entry.kind else {
            continue;
        };
        let piece = match read_one(data, *size, md5, &mut buffer, pieces) {
            Ok(Some(sum)) => Piece::End(sum),
            // The writer is gone (it failed): nobody to tell.
            Ok(None) => return,
            Err(e) => Piece::Failed(e.context(format!("writing data.tar: {}", entry.rel))),
        };
        let failed = matches!(piece, Piece::Failed(_));
        if pieces.send(piece).is_err() || failed {
            return;
        }
    }
}

/// One file for [`read_ahead`]: exactly `size` bytes sent in chunks, then its end checked.
/// Ok(Some(md5 when hashing)) when sent whole, Ok(None) when the writer is gone.
fn read_one(
    data: &FileData,
    size: u64,
    md5: bool,
    buffer: &mut dyn FnMut() -> Option<Vec<u8>>,
    pieces: &SyncSender<Piece>,
) -> anyhow::Result<Option<Option<String>>> {
    let mut src = data.open()?;
    let mut hasher = md5.then(Md5::new);
    let mut left = size;
    while left > 0 {
        let Some(mut buf) = buffer() else {
            return Ok(None);
        };
        let want = (buf.len() as u64).min(left) as usize;
        let n = loop {
            match src.read(&mut buf[..want]) {
                Ok(0) => return Err(file_shrank(left, size).into()),
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        };
        if let Some(h) = hasher.as_mut() {
            h.update(&buf[..n]);
        }
        if pieces.send(Piece::Bytes(buf, n)).is_err() {
            return Ok(None);
        }
        left -= n as u64;
    }
    check_no_more(&mut src, size)?;
    Ok(Some(hasher.map(|h| hex::encode(h.finalize()))))
}

#[cfg(test)]
#[path = "read_ahead_tests.rs"]
mod tests;
