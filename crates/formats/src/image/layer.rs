//! Apply OCI/Docker layer tars, in order, onto a directory: the image's root filesystem as a
//! container runtime would see it, built without running anything.
//!
//! Whiteouts (OCI image spec, "Representing Changes"): `.wh.<name>` removes `<name>` of the
//! lower layers, `.wh..wh..opq` removes every lower-layer entry of its directory; neither is
//! written. Safety: names are normalised by [`crate::deb::tar::components`] (no absolute names,
//! no `..`); no entry is written through a symlink already in the tree; a hard link must name
//! a regular file already unpacked (any earlier layer or entry), reached without symlinks; a
//! relative symlink whose target climbs above the root is refused. Device nodes and FIFOs are
//! skipped (nothing reads them); ownership is not applied; set-id bits are dropped. A whiteout
//! must name one plain entry (`.wh.`, `.wh..`, `.wh...` would remove the directory itself or
//! its parent) and no directory may be named like a whiteout. Every entry is counted against
//! the unpack's [`Budget`] before anything of it is written.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::limits::{Budget, ImageLimits, Limit};
use super::links::{self, LinkSteps};
use crate::deb::tar::{components, read_raw, shown_name, RawEntry};
use crate::image::invalid;

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

/// What one applied layer held.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LayerStats {
    pub entries: usize,
    pub whiteouts: usize,
    /// Device nodes and FIFOs, not created.
    pub skipped_special: usize,
}

/// Open a layer blob, undoing gzip or zstd compression (recognised by magic bytes).
pub fn open_layer(path: &Path) -> anyhow::Result<Box<dyn Read>> {
    let f = fs::File::open(path).with_context(|| format!("opening layer {}", path.display()))?;
    decompress(f)
}

/// A layer blob's tar stream: `blob` with gzip or zstd compression undone (magic bytes).
pub fn decompress<'a, R: Read + 'a>(mut blob: R) -> anyhow::Result<Box<dyn Read + 'a>> {
    let mut magic = [0u8; 4];
    let n = read_up_to(&mut blob, &mut magic)?;
    let head = io::Cursor::new(magic[..n].to_vec());
    let stream = head.chain(blob);
    Ok(match magic {
        [0x1f, 0x8b, _, _] => Box::new(flate2::read::MultiGzDecoder::new(stream)),
        [0x28, 0xb5, 0x2f, 0xfd] => Box::new(zstd::stream::read::Decoder::new(stream)?),
        _ => Box::new(stream),
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Apply one layer tar stream onto `root` (an existing directory), with the default limits.
pub fn apply_layer(root: &Path, layer: &mut dyn Read) -> anyhow::Result<LayerStats> {
    let limits = ImageLimits::default();
    let mut budget = Budget::new(&limits, Default::default());
    apply_layer_within(root, layer, &mut budget, u64::MAX)
}

/// After the last layer: refuse a tree holding a symlink that leaves `root` when the host
/// follows it (see `links`): a link that stayed inside when written can be made to leave by
/// a later entry (`a/b -> ../x/x/../..`, then `x -> .`).
pub fn check_links(root: &Path, budget: &Budget<'_>) -> anyhow::Result<()> {
    links::check_tree(root, &|| budget.check_interrupt())
}

/// Apply one layer tar stream onto `root`, counting every entry against `budget`; the tar
/// stream may hold at most `allowance` bytes (the compression-ratio limit of its blob).
pub fn apply_layer_within(
    root: &Path,
    layer: &mut dyn Read,
    budget: &mut Budget<'_>,
    allowance: u64,
) -> anyhow::Result<LayerStats> {
    let mut applier = Applier {
        root,
        written: HashSet::new(),
        opaque_done: HashSet::new(),
        stats: LayerStats::default(),
        budget,
        decoded: 0,
        allowance,
        links: LinkSteps::new(),
    };
    let mut failure: Option<anyhow::Error> = None;
    // Every byte of the tar stream counts against the ratio limit, extension records (pax
    // `x`/`g`, GNU `L`/`K`) included: they are never entries, so `admit` never sees them.
    let mut layer = Counted::new(layer, allowance);
    let result = read_raw(&mut layer, &mut |raw, content| {
        applier.apply(raw, content).map_err(|e| {
            let msg = format!("{e:#}");
            failure = Some(e);
            io::Error::other(msg)
        })
    });
    match (result, failure) {
        (Ok(()), _) => Ok(applier.stats),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) if is_allowance_passed(&e) => Err(applier
            .budget
            .exceeded(
                Limit::Ratio,
                "the tar's extension records (pax or GNU headers)",
                layer.read,
            )
            .into()),
        (Err(e), None) => Err(invalid(format!("reading the layer tar: {e}"))),
    }
}

/// A reader that counts what it hands out and fails once more than `allowance` bytes have
/// been read (the error carries [`AllowancePassed`]).
struct Counted<'r> {
    inner: &'r mut dyn Read,
    read: u64,
    allowance: u64,
}

impl<'r> Counted<'r> {
    fn new(inner: &'r mut dyn Read, allowance: u64) -> Self {
        Counted {
            inner,
            read: 0,
            allowance,
        }
    }
}

/// The marker inside the I/O error [`Counted`] returns.
#[derive(Debug)]
struct AllowancePassed;

impl std::fmt::Display for AllowancePassed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the layer's tar stream passes its ratio limit")
    }
}

impl std::error::Error for AllowancePassed {}

fn is_allowance_passed(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.is::<AllowancePassed>())
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.read > self.allowance {
            return Err(io::Error::other(AllowancePassed));
        }
        // At most one byte past the allowance, so passing it is seen exactly.
        let room = (self.allowance - self.read).saturating_add(1);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        if self.read > self.allowance {
            return Err(io::Error::other(AllowancePassed));
        }
        Ok(n)
    }
}

struct Applier<'a, 'b> {
    root: &'a Path,
    /// Relative paths this layer wrote: an opaque whiteout keeps them.
    written: HashSet<PathBuf>,
    /// Directories whose lower entries an opaque whiteout of this layer already removed: a
    /// second one there has nothing left to remove (without this, N opaque whiteouts of a
    /// directory of M entries cost N×M).
    opaque_done: HashSet<PathBuf>,
    /// The work the symlink checks of this layer may still do.
    links: LinkSteps,
    stats: LayerStats,
    budget: &'a mut Budget<'b>,
    /// Tar stream bytes this layer declared so far (headers and padded contents).
    decoded: u64,
    /// The most tar stream bytes this layer may hold (ratio limit).
    allowance: u64,
}

/// The longest name one path component may have, and a whole path (Linux's NAME_MAX and
/// PATH_MAX less the NUL): the kernel would refuse longer ones less clearly.
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4095;

impl Applier<'_, '_> {
    /// Count the entry against the budget and check its name: before anything is written.
    fn admit(&mut self, raw: &RawEntry, shown: &str, parts: &[String]) -> anyhow::Result<()> {
        self.budget.entry(shown, parts.len())?;
        let padded = raw.size.div_ceil(512).saturating_mul(512);
        self.decoded = self.decoded.saturating_add(512).saturating_add(padded);
        if self.decoded > self.allowance {
            return Err(self
                .budget
                .exceeded(Limit::Ratio, shown, self.decoded)
                .into());
        }
        if parts.iter().any(|p| p.len() > NAME_MAX) || raw.name.len() > PATH_MAX {
            return Err(invalid(format!("layer entry refused: {shown:?} has a name longer than Linux allows ({NAME_MAX} bytes a component, {PATH_MAX} a path)")));
        }
        if let Some((_, dirs)) = parts.split_last() {
            if let Some(d) = dirs.iter().find(|d| d.starts_with(WHITEOUT_PREFIX)) {
                return Err(invalid(format!("layer entry refused: {shown:?} goes through {d:?}, a whiteout name used as a directory")));
            }
        }
        Ok(())
    }

    fn apply(&mut self, raw: &RawEntry, content: &mut dyn Read) -> anyhow::Result<()> {
        let shown = shown_name(&raw.name);
        let parts =
            components(&raw.name).map_err(|e| invalid(format!("layer entry refused: {e}")))?;
        self.admit(raw, &shown, &parts)?;
        self.stats.entries += 1;
        let Some((base, dirs)) = parts.split_last() else {
            // The root itself ("./"): nothing to create.
            return Ok(());
        };
        let rel_parent: PathBuf = dirs.iter().collect();
        if base == OPAQUE {
            self.stats.whiteouts += 1;
            return self.opaque(rel_parent, &shown);
        }
        if let Some(hidden) = base.strip_prefix(WHITEOUT_PREFIX) {
            // `.wh.` would remove the directory itself, `.wh..` too, `.wh...` its parent.
            if matches!(hidden, "" | "." | "..") {
                return Err(invalid(format!(
                    "layer entry refused: whiteout {shown:?} does not name one plain entry"
                )));
            }
            self.stats.whiteouts += 1;
            if let Some(dir) = self.existing_dir(&rel_parent, &shown)? {
                remove_any(&dir.join(hidden))?;
            }
            return Ok(());
        }
        let parent = self.make_parents(&rel_parent, &shown)?;
        let dest = parent.join(base);
        let rel = rel_parent.join(base);
        let mode = raw.mode & 0o777;
        match raw.typeflag {
            b'0' | 0 => {
                self.budget.file(&shown, raw.size, true)?;
                remove_any(&dest)?;
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .open(&dest)
                    .with_context(|| format!("creating {}", dest.display()))?;
                copy_checked(content, &mut f, self.budget)
                    .with_context(|| format!("writing {}", dest.display()))?;
                fs::set_permissions(&dest, fs::Permissions::from_mode(mode))?;
            }
            b'5' => {
                let meta = fs::symlink_metadata(&dest).ok();
                if !meta.as_ref().is_some_and(|m| m.is_dir()) {
                    remove_any(&dest)?;
                    fs::create_dir(&dest)
                        .with_context(|| format!("creating {}", dest.display()))?;
                }
                fs::set_permissions(&dest, fs::Permissions::from_mode(mode | 0o700))?;
            }
            b'2' => {
                let target = String::from_utf8(raw.link.clone()).map_err(|_| {
                    invalid(format!("symlink {shown:?} has a target that is not UTF-8"))
                })?;
                if target.len() > PATH_MAX {
                    return Err(invalid(format!("layer entry refused: symlink {shown:?} has a target longer than Linux allows ({PATH_MAX} bytes)")));
                }
                check_symlink_target(dirs.len(), &target).map_err(|e| {
                    invalid(format!(
                        "layer entry refused: symlink {shown:?} -> {:?} {e}",
                        shown_name(target.as_bytes())
                    ))
                })?;
                // Checked alone the target may stay inside; followed through the links
                // already in the tree (`x -> .`, then `a/b -> ../x/x/../..`) it may not.
                self.links.allow_one();
                if let Some(why) = links::escapes(self.root, dirs, &target, &mut self.links)? {
                    return Err(invalid(format!(
                        "layer entry refused: symlink {shown:?} -> {:?} {why}",
                        shown_name(target.as_bytes())
                    )));
                }
                remove_any(&dest)?;
                std::os::unix::fs::symlink(&target, &dest)
                    .with_context(|| format!("creating symlink {}", dest.display()))?;
            }
            b'1' => {
                let tparts = components(&raw.link).map_err(|e| {
                    invalid(format!(
                        "layer entry refused: hard link {shown:?} target: {e}"
                    ))
                })?;
                let target = self.existing_file(&tparts, &shown)?;
                if target != dest {
                    remove_any(&dest)?;
                    fs::hard_link(&target, &dest).with_context(|| {
                        format!("linking {} to {}", dest.display(), target.display())
                    })?;
                }
            }
            b'3' | b'4' | b'6' => {
                self.stats.skipped_special += 1;
                return Ok(());
            }
            other => {
                return Err(invalid(format!(
                    "layer entry refused: {shown:?} has unsupported tar type {:?}",
                    char::from(other)
                )))
            }
        }
        self.written.insert(rel);
        Ok(())
    }

    /// `.wh..wh..opq` in `rel_parent`: remove what the lower layers left there, keep what this
    /// layer wrote. Once per directory and layer: its cost is the directory's listing, which
    /// holds what it removes and what this layer wrote there (each listed once).
    fn opaque(&mut self, rel_parent: PathBuf, shown: &str) -> anyhow::Result<()> {
        if self.opaque_done.contains(&rel_parent) {
            // Only a path through a symlink planted since could differ: refused as before.
            self.existing_dir(&rel_parent, shown)?;
            return Ok(());
        }
        if let Some(dir) = self.existing_dir(&rel_parent, shown)? {
            let mut doomed: Vec<OsString> = Vec::new();
            for e in fs::read_dir(&dir)? {
                let name = e?.file_name();
                if !self.written.contains(&rel_parent.join(&name)) {
                    doomed.push(name);
                }
            }
            for name in doomed {
                remove_any(&dir.join(&name))?;
            }
        }
        self.opaque_done.insert(rel_parent);
        Ok(())
    }

    /// The directory `rel` under the root when it exists (reached without symlinks).
    fn existing_dir(&self, rel: &Path, shown: &str) -> anyhow::Result<Option<PathBuf>> {
        let mut p = self.root.to_path_buf();
        for c in rel.components() {
            p.push(c);
            match fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(invalid(format!(
                        "layer entry refused: {shown:?} goes through the symlink {}",
                        p.display()
                    )))
                }
                Ok(m) if m.is_dir() => {}
                _ => return Ok(None),
            }
        }
        Ok(Some(p))
    }

    /// Create the missing parent directories of an entry; refuse a path through a symlink or
    /// a non-directory.
    fn make_parents(&self, rel: &Path, shown: &str) -> anyhow::Result<PathBuf> {
        let mut p = self.root.to_path_buf();
        for c in rel.components() {
            p.push(c);
            match fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => return Err(invalid(format!("layer entry refused: {shown:?} goes through the symlink {} (a write through it could leave the image root)", p.display()))),
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(invalid(format!("layer entry refused: {shown:?} needs {} to be a directory, but it is a file", p.display()))),
                Err(_) => {
                    fs::create_dir(&p).with_context(|| format!("creating {}", p.display()))?;
                    fs::set_permissions(&p, fs::Permissions::from_mode(0o755))?;
                }
            }
        }
        Ok(p)
    }

    /// The regular file a hard link names, already in the tree and reached without symlinks.
    fn existing_file(&self, parts: &[String], shown: &str) -> anyhow::Result<PathBuf> {
        let Some((base, dirs)) = parts.split_last() else {
            return Err(invalid(format!(
                "layer entry refused: hard link {shown:?} points at the root"
            )));
        };
        let rel: PathBuf = dirs.iter().collect();
        let dir = self.existing_dir(&rel, shown)?.ok_or_else(|| {
            invalid(format!(
                "layer entry refused: hard link {shown:?} points at {}, which is not in the image",
                shown_name(parts.join("/").as_bytes())
            ))
        })?;
        let target = dir.join(base);
        match fs::symlink_metadata(&target) {
            Ok(m) if m.is_file() => Ok(target),
            _ => Err(invalid(format!("layer entry refused: hard link {shown:?} points at {}, which is not a regular file in the image", shown_name(parts.join("/").as_bytes())))),
        }
    }
}

/// `io::copy` that stops at a signal (checked every MiB).
pub fn copy_checked(
    from: &mut dyn Read,
    to: &mut dyn io::Write,
    budget: &Budget<'_>,
) -> anyhow::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        budget.check_interrupt()?;
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// A relative symlink target must not climb above the image root from the link's directory
/// (`depth` components below the root); absolute targets are relative to the image root.
fn check_symlink_target(depth: usize, target: &str) -> Result<(), String> {
    if target.is_empty() {
        return Err("has an empty target".into());
    }
    if target.starts_with('/') {
        return Ok(());
    }
    let mut level = depth as isize;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                level -= 1;
                if level < 0 {
                    return Err("points outside the image root".into());
                }
            }
            _ => level += 1,
        }
    }
    Ok(())
}

/// Remove whatever is at `p` (file, symlink or directory tree); nothing there is fine.
fn remove_any(p: &Path) -> anyhow::Result<()> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            fs::remove_dir_all(p).with_context(|| format!("removing {}", p.display()))
        }
        Ok(_) => fs::remove_file(p).with_context(|| format!("removing {}", p.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(invalid(format!("inspecting {}: {e}", p.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deb::crafted::{file, tar_of as layer, Entry as Spec};
    use crate::deb::tar::WriteKind;
    use std::os::unix::fs::MetadataExt;

    fn apply(root: &Path, entries: &[(&str, WriteKind<'_>, &[u8])]) -> anyhow::Result<LayerStats> {
        let bytes = layer(entries);
        apply_layer(root, &mut &bytes[..])
    }

    #[test]
    fn layers_stack_and_whiteouts_remove_lower_entries_only() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        apply(
            root,
            &[
                ("etc/", WriteKind::Dir, b""),
                ("etc/keep", file(b"k"), b"k"),
                ("etc/gone", file(b"g"), b"g"),
                ("opt/", WriteKind::Dir, b""),
                ("opt/old/", WriteKind::Dir, b""),
                ("opt/old/a", file(b"a"), b"a"),
                ("opt/b", file(b"b"), b"b"),
            ],
        )
        .unwrap();
        let stats = apply(
            root,
            &[
                ("etc/.wh.gone", file(b""), b""),
                ("etc/keep", file(b"K2"), b"K2"),
                // Opaque: what this layer writes in opt/ stays, the lower entries go.
                ("opt/new", file(b"n"), b"n"),
                ("opt/.wh..wh..opq", file(b""), b""),
            ],
        )
        .unwrap();
        assert_eq!(stats.whiteouts, 2);
        assert!(!root.join("etc/gone").exists());
        assert!(
            !root.join("etc/.wh.gone").exists(),
            "whiteouts are not written"
        );
        assert_eq!(fs::read(root.join("etc/keep")).unwrap(), b"K2");
        assert!(root.join("opt/new").is_file());
        assert!(!root.join("opt/old").exists() && !root.join("opt/b").exists());
        assert!(!root.join("opt/.wh..wh..opq").exists());
    }

    #[test]
    fn hard_links_across_layers_share_one_inode() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        apply(
            root,
            &[
                ("lib/", WriteKind::Dir, b""),
                ("lib/libx.so.1.2", file(b"elf"), b"elf"),
            ],
        )
        .unwrap();
        apply(
            root,
            &[(
                "lib/libx.so.1.2.70204",
                WriteKind::Hardlink(b"lib/libx.so.1.2"),
                b"",
            )],
        )
        .unwrap();
        let a = fs::metadata(root.join("lib/libx.so.1.2")).unwrap();
        let b = fs::metadata(root.join("lib/libx.so.1.2.70204")).unwrap();
        assert_eq!(a.ino(), b.ino());
        assert_eq!(a.nlink(), 2);
    }

    #[test]
    fn escaping_entries_and_links_are_refused_and_write_nothing_outside() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        fs::write(&secret, b"host").unwrap();
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        fs::create_dir(&root).unwrap();
        let secret_s = secret.to_str().unwrap().to_string();
        let climb = format!("../{}", secret_s.trim_start_matches('/'));
        let cases: Vec<(Vec<Spec<'_>>, &str)> = vec![
            (vec![("../escape", file(b"x"), b"x")], "'..'"),
            (vec![("/abs", file(b"x"), b"x")], "absolute"),
            (vec![("a/../../escape", file(b"x"), b"x")], "'..'"),
            // A hard link to a host file, by absolute or climbing name.
            (
                vec![("h", WriteKind::Hardlink(secret_s.as_bytes()), b"")],
                "hard link",
            ),
            (
                vec![("h", WriteKind::Hardlink(climb.as_bytes()), b"")],
                "hard link",
            ),
            // A hard link to something that is not in the image.
            (
                vec![("h", WriteKind::Hardlink(b"etc/missing"), b"")],
                "not in the image",
            ),
            // A relative symlink climbing above the root.
            (
                vec![
                    ("lib/", WriteKind::Dir, b""),
                    ("lib/l", WriteKind::Symlink(b"../../etc/passwd"), b""),
                ],
                "outside the image root",
            ),
            // Writing through a symlink planted earlier (same layer).
            (
                vec![
                    (
                        "evil",
                        WriteKind::Symlink(outside.path().to_str().unwrap().as_bytes()),
                        b"",
                    ),
                    ("evil/secret", file(b"pwned"), b"pwned"),
                ],
                "goes through the symlink",
            ),
        ];
        for (entries, needle) in cases {
            let err = apply(&root, &entries).expect_err(needle);
            let msg = format!("{err:#}");
            assert!(
                msg.contains("refused") || msg.contains(needle),
                "{needle}: {msg}"
            );
            assert!(msg.contains(needle), "expected {needle:?} in: {msg}");
        }
        assert_eq!(fs::read(&secret).unwrap(), b"host", "a host file changed");
        assert!(!t.path().join("escape").exists());
    }

    #[test]
    fn a_symlink_from_a_lower_layer_is_not_written_through() {
        let outside = tempfile::tempdir().unwrap();
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let target = outside.path().to_str().unwrap().as_bytes().to_vec();
        apply(
            root,
            &[
                ("opt/", WriteKind::Dir, b""),
                ("opt/sdk", WriteKind::Symlink(&target), b""),
            ],
        )
        .unwrap();
        let err = apply(root, &[("opt/sdk/lib", file(b"x"), b"x")]).unwrap_err();
        assert!(
            format!("{err:#}").contains("goes through the symlink"),
            "{err:#}"
        );
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
        // A whiteout through it is refused too (it would delete on the host).
        fs::write(outside.path().join("victim"), b"v").unwrap();
        let err = apply(root, &[("opt/sdk/.wh.victim", file(b""), b"")]).unwrap_err();
        assert!(
            format!("{err:#}").contains("goes through the symlink"),
            "{err:#}"
        );
        assert!(outside.path().join("victim").exists());
    }

    #[test]
    fn compressed_layers_are_recognised() {
        let bytes = layer(&[("f", file(b"data"), b"data")]);
        let t = tempfile::tempdir().unwrap();
        let gz = t.path().join("l.gz");
        let mut enc = flate2::write::GzEncoder::new(
            fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        std::io::Write::write_all(&mut enc, &bytes).unwrap();
        enc.finish().unwrap();
        let zst = t.path().join("l.zst");
        fs::write(&zst, zstd::encode_all(&bytes[..], 1).unwrap()).unwrap();
        for p in [gz, zst] {
            let root = t
                .path()
                .join(format!("root-{}", p.extension().unwrap().to_str().unwrap()));
            fs::create_dir(&root).unwrap();
            apply_layer(&root, &mut open_layer(&p).unwrap()).unwrap();
            assert_eq!(fs::read(root.join("f")).unwrap(), b"data");
        }
    }
}
