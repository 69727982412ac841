//! What unpacking one untrusted image may cost, and the temporary root's removal when a signal
//! ends the run.
//!
//! An image is untrusted input: a 140 KB layer can expand to terabytes, a layer can hold
//! millions of entries. Every limit is checked from the tar header, before the entry's bytes
//! are written (tar declares each file's size up front, and the reader refuses a file that
//! ends short), so a layer over a limit is refused with nothing of it on disk.
//!
//! The defaults are far above a large real image (a GPU runtime image is 10-30 GB unpacked and
//! ~300k entries; its paths far fewer than 128 components deep) and far below a full disk's
//! worth of damage; a caller raises any of them ([`ImageLimits`] is plain data).

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::image::ImageError;

/// One bound on unpacking an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Bytes written to the temporary directory: the archive's blobs and every layer's files.
    Bytes,
    /// Entries, the archive's and every layer's together.
    Entries,
    /// One file's size.
    FileBytes,
    /// Path components of one entry.
    Depth,
    /// Uncompressed bytes per compressed byte of one layer blob (beyond a fixed 16 MiB slack).
    Ratio,
}

impl Limit {
    pub const ALL: [Limit; 5] = [
        Limit::Bytes,
        Limit::Entries,
        Limit::FileBytes,
        Limit::Depth,
        Limit::Ratio,
    ];

    /// The name `--image-limit` takes.
    pub fn key(self) -> &'static str {
        match self {
            Limit::Bytes => "bytes",
            Limit::Entries => "entries",
            Limit::FileBytes => "file-bytes",
            Limit::Depth => "depth",
            Limit::Ratio => "ratio",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

const GIB: u64 = 1 << 30;

/// Uncompressed bytes a layer may always hold, whatever its compressed size: small layers
/// (an empty tar is 10 KiB of zeros, ~100 bytes compressed) compress far better than big ones.
pub const RATIO_SLACK: u64 = 16 << 20;

/// The limits of one unpack. [`Default`] holds the documented defaults (docs/docker.md, "Limits on an untrusted image").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageLimits {
    pub bytes: u64,
    pub entries: u64,
    pub file_bytes: u64,
    pub depth: u64,
    pub ratio: u64,
}

impl Default for ImageLimits {
    fn default() -> Self {
        ImageLimits {
            bytes: 64 * GIB,
            entries: 4_000_000,
            file_bytes: 16 * GIB,
            depth: 128,
            // gzip cannot exceed ~1032:1; zstd can reach 30000:1 on zeros (a layer bomb).
            ratio: 1000,
        }
    }
}

impl ImageLimits {
    pub fn get(&self, limit: Limit) -> u64 {
        match limit {
            Limit::Bytes => self.bytes,
            Limit::Entries => self.entries,
            Limit::FileBytes => self.file_bytes,
            Limit::Depth => self.depth,
            Limit::Ratio => self.ratio,
        }
    }

    /// Apply one `KEY=VALUE` (`bytes=100G`, `entries=10000000`); sizes take K, M, G, T
    /// (powers of 1024).
    pub fn set(&mut self, spec: &str) -> Result<(), String> {
        let keys: Vec<&str> = Limit::ALL.iter().map(|l| l.key()).collect();
        let (key, value) = spec.split_once('=').ok_or_else(|| {
            format!(
                "image limit {spec:?} is not KEY=VALUE (keys: {})",
                keys.join(", ")
            )
        })?;
        let limit = Limit::ALL
            .into_iter()
            .find(|l| l.key() == key.trim())
            .ok_or_else(|| format!("unknown image limit {key:?} (keys: {})", keys.join(", ")))?;
        let n = parse_size(value.trim())
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("image limit {key}: {value:?} is not a positive number (K, M, G, T suffixes allowed)"))?;
        match limit {
            Limit::Bytes => self.bytes = n,
            Limit::Entries => self.entries = n,
            Limit::FileBytes => self.file_bytes = n,
            Limit::Depth => self.depth = n,
            Limit::Ratio => self.ratio = n,
        }
        Ok(())
    }
}

/// The size syntax of every limit flag, shared with the .deb reader's (`deb/reader.rs`).
pub use crate::deb::reader::parse_size;

/// The running totals of one unpack against its limits, and the interruption flag the main
/// thread polls between entries and chunks.
pub struct Budget<'a> {
    limits: &'a ImageLimits,
    /// What is being unpacked, for errors: "the image archive", "layer 2 of 5 (sha256:…)".
    place: String,
    written: u64,
    entries: u64,
    interrupt: Arc<AtomicI32>,
}

impl<'a> Budget<'a> {
    pub fn new(limits: &'a ImageLimits, interrupt: Arc<AtomicI32>) -> Self {
        Budget {
            limits,
            place: String::new(),
            written: 0,
            entries: 0,
            interrupt,
        }
    }

    pub fn limits(&self) -> &ImageLimits {
        self.limits
    }

    pub fn set_place(&mut self, place: String) {
        self.place = place;
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The error for `entry` passing `limit` (it would need `needed`).
    pub fn exceeded(&self, limit: Limit, entry: &str, needed: u64) -> ImageError {
        ImageError::ImageLimit {
            place: self.place.clone(),
            entry: entry.to_string(),
            limit: limit.key(),
            max: self.limits.get(limit),
            needed,
        }
    }

    /// A signal asked the run to end: stop before the next write.
    pub fn check_interrupt(&self) -> anyhow::Result<()> {
        match self.interrupt.load(Ordering::SeqCst) {
            0 => Ok(()),
            signal => Err(ImageError::Interrupted { signal }.into()),
        }
    }

    /// One more entry of `depth` components.
    pub fn entry(&mut self, entry: &str, depth: usize) -> anyhow::Result<()> {
        self.check_interrupt()?;
        self.entries += 1;
        if self.entries > self.limits.entries {
            return Err(self.exceeded(Limit::Entries, entry, self.entries).into());
        }
        if depth as u64 > self.limits.depth {
            return Err(self.exceeded(Limit::Depth, entry, depth as u64).into());
        }
        Ok(())
    }

    /// A file of `size` bytes is about to be written: within the per-file and total limits?
    /// `per_file` is false for the archive's own blobs (bounded by the total only).
    pub fn file(&mut self, entry: &str, size: u64, per_file: bool) -> anyhow::Result<()> {
        if per_file && size > self.limits.file_bytes {
            return Err(self.exceeded(Limit::FileBytes, entry, size).into());
        }
        let total = self.written.saturating_add(size);
        if total > self.limits.bytes {
            return Err(self.exceeded(Limit::Bytes, entry, total).into());
        }
        self.written = total;
        Ok(())
    }
}

/// How long the main thread has, after a signal, to notice it and remove the temporary root
/// itself before the watcher does (the main thread may be blocked in a read from a pipe).
const GRACE: Duration = Duration::from_secs(2);

/// While it lives, the terminating signals ([`crate::interrupt::TERMINATING_SIGNALS`]: INT, TERM,
/// HUP, QUIT, USR1, …) do not kill the process outright: the signal
/// number is stored (all the handler does: signal-hook's self-pipe, async-signal-safe), the
/// main thread sees it at its next check ([`Budget::check_interrupt`]), returns
/// [`ImageError::Interrupted`], and the temporary root is removed as the error unwinds (`main` then
/// exits 128+signal). Should the main thread not get there within `GRACE` (blocked in a
/// read), the watcher thread removes the root and exits 128+signal itself. A panic unwinds
/// through the same drops.
pub struct InterruptGuard {
    _deferring: crate::interrupt::Deferring,
    signal: Arc<AtomicI32>,
    closing: Arc<AtomicBool>,
    handle: Option<signal_hook::iterator::Handle>,
    thread: Option<JoinHandle<()>>,
}

impl InterruptGuard {
    /// Watch for the signals; on one, `dir` is removed (by the main thread, or after `GRACE`
    /// by the watcher). Without signal support the guard only never fires.
    pub fn install(dir: PathBuf) -> InterruptGuard {
        let signal = Arc::new(AtomicI32::new(0));
        let closing = Arc::new(AtomicBool::new(false));
        let deferring = crate::interrupt::Deferring::start();
        let signals = signal_hook::iterator::Signals::new(crate::interrupt::caught_signals());
        let Ok(mut signals) = signals else {
            return InterruptGuard {
                _deferring: deferring,
                signal,
                closing,
                handle: None,
                thread: None,
            };
        };
        let handle = signals.handle();
        let (seen, stop) = (Arc::clone(&signal), Arc::clone(&closing));
        let thread = std::thread::spawn(move || {
            let Some(sig) = signals.forever().next() else {
                return; // closed: the guard was dropped
            };
            seen.store(sig, Ordering::SeqCst);
            let start = Instant::now();
            while start.elapsed() < GRACE {
                if stop.load(Ordering::SeqCst) {
                    return; // the main thread unwound and removed the root
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // The main thread is stuck: remove the root from here and end as the signal would.
            crate::interrupt::end_registered();
            for _ in 0..5 {
                match std::fs::remove_dir_all(&dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    _ => break,
                }
            }
            crate::interrupt::say(format_args!("{}", ImageError::Interrupted { signal: sig }));
            std::process::exit(128 + sig);
        });
        InterruptGuard {
            _deferring: deferring,
            signal,
            closing,
            handle: Some(handle),
            thread: Some(thread),
        }
    }

    /// The flag a [`Budget`] polls: 0, or the signal that arrived.
    pub fn flag(&self) -> Arc<AtomicI32> {
        Arc::clone(&self.signal)
    }

    /// The signal that arrived, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.close();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_sizes_and_refuse_unknown_keys() {
        let mut l = ImageLimits::default();
        l.set("bytes=100G").unwrap();
        l.set("file-bytes=512M").unwrap();
        l.set("entries=10000000").unwrap();
        l.set("depth=64").unwrap();
        l.set("ratio=5000").unwrap();
        assert_eq!(
            (l.bytes, l.file_bytes, l.entries, l.depth, l.ratio),
            (100 << 30, 512 << 20, 10_000_000, 64, 5000)
        );
        assert_eq!(parse_size("4KiB"), Some(4096));
        for bad in [
            "bytes",
            "size=1",
            "bytes=-1",
            "bytes=0",
            "bytes=1X",
            "bytes=99999999999T",
        ] {
            assert!(l.set(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_budget_refuses_before_counting_past_a_limit() {
        let limits = ImageLimits {
            bytes: 100,
            entries: 2,
            file_bytes: 60,
            depth: 3,
            ratio: 1,
        };
        let mut b = Budget::new(&limits, Arc::new(AtomicI32::new(0)));
        b.set_place("layer 1 of 1 (sha256:x)".into());
        b.file("a", 60, true).unwrap();
        let limit_of = |r: anyhow::Result<()>| match r.unwrap_err().downcast::<ImageError>() {
            Ok(ImageError::ImageLimit { limit, needed, .. }) => (limit, needed),
            other => panic!("not an ImageLimit: {other:?}"),
        };
        assert_eq!(limit_of(b.file("b", 61, true)), ("file-bytes", 61));
        let err = b.file("c", 41, true).unwrap_err();
        assert!(err.to_string().contains("--image-limit bytes="), "{err}");
        assert!(err.to_string().contains("layer 1 of 1 (sha256:x)"), "{err}");
        assert_eq!(limit_of(Err(err)), ("bytes", 101));
        assert_eq!(b.written(), 60, "refused files are not counted as written");
        b.entry("x", 3).unwrap();
        assert_eq!(limit_of(b.entry("y/z/w/v", 4)), ("depth", 4));
        assert_eq!(limit_of(b.entry("z", 1)), ("entries", 3));
    }
}
