//! The properties the fuzz targets check, shared by the libFuzzer targets (`fuzz/fuzz_targets/`)
//! and the always-on replay of `fuzz/regressions/` (`tests/formats/root_fuzz.rs`), so a saved
//! input is judged by exactly the checks that found it.
//!
//! Each reader is driven twice where it has both forms: the pure parser on the bytes, and the
//! public reader that takes a root (the file written into a scratch root), which must agree with
//! the parser whenever it succeeds. Any input must give a result or a clean error: a panic
//! (including a failed property below) is a finding.
#![allow(dead_code)] // each fuzz target uses one of the entry points

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rocm_pin_core::deb::tar::{TarWriter, WriteKind};
use rocm_pin_core::deb::Paragraph;
use rocm_pin_core::host::dpkgdb::{parse_md5sums, DpkgDb};
use rocm_pin_core::host::root::Root;
use rocm_pin_core::host::{ldcache, loader, status};
use rocm_pin_core::image::layer::{apply_layer, check_links, open_layer};
use rocm_pin_core::image::limits::{Budget, ImageLimits};
use rocm_pin_core::ops::{rollback, stale_maps};
use rocm_pin_core::rocm::{self, Marker};

/// The package the scratch root's status file installs; its info files are the fuzzed ones.
const PACKAGE: &str = "fuzzed";
/// Where the scratch root's package lists the provenance marker.
const MARKER_PATH: &str = "/opt/rocm-7.2.4/.info/rocm-pin.json";
/// Decompressed bytes one layer may feed the unpacker: a compression bomb stays a fast input
/// and the scratch directory stays small (the unpacker has no byte limit of its own yet).
const MAX_LAYER_STREAM: u64 = 64 << 20;
/// The file outside the image root that no layer may reach: its contents, mode and link count
/// are checked after every input.
const SENTINEL: &str = "outside/sentinel";
const SENTINEL_TEXT: &[u8] = b"host file: no layer may change or link this\n";

/// Write `bytes` to `root`/`rel`, creating parents.
fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel.trim_start_matches('/'));
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, bytes).unwrap();
}

/// The status file of the scratch root: our package, installed, carrying the pin's commit field
/// (so `rollback::installed_pin` looks for its marker).
fn scratch_status() -> String {
    format!(
        "Package: {PACKAGE}\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1\n{}: b539bf7\n",
        rocm::COMMIT_FIELD
    )
}

/// `status`: `var/lib/dpkg/status` as `verify`/`status` (`host::status`) and the packaging side
/// (`DpkgDb`) read it.
pub fn status(data: &[u8], scratch: &Path) {
    let text = String::from_utf8_lossy(data);
    let extra = [rocm::COMMIT_FIELD, rocm::PATCHES_FIELD];
    let parsed = status::parse_status(&text, &extra);
    let paragraphs = Paragraph::parse_many(&text);
    if let Ok(entries) = &parsed {
        // parse_status is parse_many plus "every paragraph names its package".
        let paragraphs = paragraphs
            .as_ref()
            .expect("parse_status ok but parse_many failed");
        assert_eq!(entries.len(), paragraphs.len());
        for e in entries {
            assert!(!e.package.is_empty(), "an entry without a package name");
            assert!(!e.status.contains("  "), "Status words not normalised");
            assert_eq!(e.abbrev().chars().count(), 2);
            let _ = (e.is_installed_ok(), e.has_files(), e.state());
        }
    }
    put(scratch, "var/lib/dpkg/status", data);
    let root = Root::new(scratch);
    if let (Ok(from_root), Ok(_)) = (
        rocm_pin_core::rocm::read_status(&root),
        std::str::from_utf8(data),
    ) {
        assert_eq!(Ok(&from_root), parsed.as_ref().map_err(|_| ()));
    }
    if let Ok(db) = DpkgDb::open(&root) {
        let named = paragraphs
            .as_ref()
            .expect("DpkgDb opened a status file parse_many refuses")
            .iter()
            .filter(|p| p.get("Package").is_some())
            .count();
        assert_eq!(db.packages().len(), named);
        // A package with files on disk is found by its plain name (a name with `:` would be
        // read as `<name>:<arch>`).
        for p in db
            .packages()
            .iter()
            .filter(|p| p.has_files() && !p.name.contains(':'))
        {
            assert!(
                db.package(&p.name).is_some(),
                "{} has files but is not found",
                p.name
            );
        }
    }
}

/// `md5sums` (and `.list`): a package's `info/<pkg>.md5sums` and `info/<pkg>.list` as
/// `host::status` and `DpkgDb` read them.
pub fn md5sums(data: &[u8], scratch: &Path) {
    let text = String::from_utf8_lossy(data);
    let parsed = parse_md5sums(&text);
    if let Ok(sums) = &parsed {
        for (path, sum) in sums {
            assert!(
                path.starts_with('/'),
                "md5sums path {path:?} is not absolute"
            );
            assert!(
                sum.len() == 32 && sum.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "md5sums sum {sum:?} is not 32 lower-case hex digits"
            );
        }
    }
    put(scratch, "var/lib/dpkg/status", scratch_status().as_bytes());
    put(
        scratch,
        &format!("var/lib/dpkg/info/{PACKAGE}.md5sums"),
        data,
    );
    put(scratch, &format!("var/lib/dpkg/info/{PACKAGE}.list"), data);
    let root = Root::new(scratch);
    let utf8 = std::str::from_utf8(data).is_ok();
    if let (Ok(Some(from_root)), true) = (status::package_md5sums(&root, PACKAGE, "amd64"), utf8) {
        let parsed: Vec<(String, String)> = parsed.as_ref().unwrap().clone().into_iter().collect();
        assert_eq!(from_root, parsed);
    }
    if let Ok(list) = status::package_list(&root, PACKAGE, "amd64") {
        assert!(list.iter().all(|l| !l.is_empty() && !l.contains('\n')));
    }
    if let Ok(db) = DpkgDb::open(&root) {
        if let (Ok(sums), true) = (db.md5sums(PACKAGE), utf8) {
            assert_eq!(Ok(&sums), parsed.as_ref().map_err(|_| ()));
        }
        if let Ok(files) = db.files(PACKAGE) {
            assert!(files.iter().all(|l| !l.is_empty() && l != "/."));
        }
    }
}

/// `marker`: the provenance marker `<prefix>/.info/rocm-pin.json`, parsed as `verify` parses it
/// and read through a root as `rollback::installed_pin` reads it.
pub fn marker(data: &[u8], scratch: &Path) {
    let parsed = serde_json::from_slice::<Marker>(data).ok();
    if let Some(m) = &parsed {
        // The package writes the marker with serde_json and verify reads it back: a marker that
        // parses must survive that round trip unchanged.
        let again: Marker = serde_json::from_slice(&serde_json::to_vec(m).unwrap()).unwrap();
        assert_eq!(&again, m);
        for lib in &m.libraries {
            let _ = rocm::soname_major(&lib.soname);
            let _ = rocm::runtime_library_family_at(&m.prefix, &lib.path);
            let _ = rocm::prefix_of_runtime_path(&lib.path);
        }
        for path in m.files.keys() {
            let _ = rocm::prefix_of_runtime_path(path);
        }
    }
    put(scratch, "var/lib/dpkg/status", scratch_status().as_bytes());
    put(
        scratch,
        &format!("var/lib/dpkg/info/{PACKAGE}.list"),
        format!("/.\n/opt\n{MARKER_PATH}\n").as_bytes(),
    );
    put(scratch, MARKER_PATH, data);
    let root = Root::new(scratch);
    let entries =
        rocm_pin_core::rocm::read_status(&root).expect("the scratch status file is valid");
    let read = rollback::installed_pin(&root, &entries)
        .expect("the scratch status file is valid")
        .expect("the scratch root has our package");
    assert_eq!(
        read.1, parsed,
        "installed_pin read another marker than the file holds"
    );
}

/// `ldcache`: `/etc/ld.so.cache` as the loader model reads it.
pub fn ldcache(data: &[u8], scratch: &Path) {
    let Some(entries) = ldcache::parse(data) else {
        // Not understood: `read_cache` would run `ldconfig -p` (a process per input; not fuzzed).
        return;
    };
    // Each entry takes 24 bytes of the table after a 48-byte header.
    assert!(
        entries.len() <= data.len() / 24,
        "more entries than the file can hold"
    );
    for e in &entries {
        assert!(["ELF", "libc5", "libc6"]
            .iter()
            .any(|k| e.flags.split(',').next() == Some(k)));
    }
    put(scratch, "etc/ld.so.cache", data);
    let from_root = loader::read_cache(&Root::new(scratch)).expect("parse understood the file");
    assert_eq!(from_root, entries);
}

/// `proc_maps`: a `/proc/<pid>/maps` text as `status` reads it from a root's `/proc`: the pure
/// parser (`stale_maps::deleted_runtime_paths`), then `stale_maps::scan` on a scratch root whose
/// one process has the input as its `maps`.
pub fn proc_maps(data: &[u8], scratch: &Path) {
    let text = String::from_utf8_lossy(data);
    let paths = stale_maps::deleted_runtime_paths(&text);
    for (i, p) in paths.iter().enumerate() {
        assert!(!p.is_empty() && !p.contains('\n'), "a path {p:?}");
        assert!(!paths[..i].contains(p), "{p:?} listed twice");
        let suffix = format!("{p} (deleted)");
        assert!(
            text.lines().any(|l| l.ends_with(&suffix)),
            "{p:?} is not the path of a deleted mapping's line"
        );
        let name = Path::new(p).file_name().unwrap().to_string_lossy();
        assert!(
            rocm::family_of(&name).is_some(),
            "{p:?} is not a runtime library"
        );
    }
    let _ = fs::remove_dir_all(scratch.join("proc"));
    put(scratch, "proc/4242/maps", data);
    put(scratch, "proc/4242/comm", b"fuzzed\n");
    let scan = stale_maps::scan(&Root::new(scratch));
    assert_eq!(scan.unseen, None, "the scratch process was not read");
    let mut want: Vec<&str> = paths.clone();
    want.sort();
    let got: Vec<&str> = scan.stale.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(got, want, "the root reader disagrees with the parser");
    assert!(scan
        .stale
        .iter()
        .all(|m| m.pid == 4242 && m.command == "fuzzed"));
}

/// A scratch directory for the layer target: `layer` (the blob), `root/` (the image root, fresh
/// per input) and `outside/sentinel`, which no layer may reach. The root starts with two
/// symlinks that point at `outside/` (absolute and relative) for the fuzzer to try to write
/// through, and a file and directory for whiteouts and hard links to name.
pub struct LayerScratch {
    base: PathBuf,
}

impl LayerScratch {
    pub fn new(base: PathBuf) -> Self {
        LayerScratch { base }
    }

    fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    /// Make the scratch as described, whatever the last input left (it may have deleted it).
    fn reset(&self) {
        let root = self.root();
        if fs::symlink_metadata(&root).is_ok() {
            make_removable(&root);
            fs::remove_dir_all(&root).unwrap();
        }
        fs::create_dir_all(root.join("etc/d")).unwrap();
        fs::write(root.join("etc/d/file"), b"lower layer\n").unwrap();
        let outside = self.base.join("outside");
        std::os::unix::fs::symlink(&outside, root.join("abs-out")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("rel-out")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        let sentinel = self.base.join(SENTINEL);
        fs::write(&sentinel, SENTINEL_TEXT).unwrap();
        fs::set_permissions(&sentinel, fs::Permissions::from_mode(0o644)).unwrap();
    }

    /// Nothing outside `root/` changed: the scratch holds exactly `layer`, `outside/` and
    /// `root/`, `outside/` holds only the sentinel, unchanged and not linked from anywhere.
    pub fn check_outside(&self) {
        let mut names: Vec<String> = fs::read_dir(&self.base)
            .unwrap_or_else(|e| panic!("the scratch directory itself is gone: {e}"))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["layer", "outside", "root"],
            "a layer wrote or removed beside its root"
        );
        let outside: Vec<_> = fs::read_dir(self.base.join("outside")).unwrap().collect();
        assert_eq!(
            outside.len(),
            1,
            "a layer wrote into the directory beside its root"
        );
        let sentinel = self.base.join(SENTINEL);
        let meta =
            fs::symlink_metadata(&sentinel).expect("a layer removed the file beside its root");
        assert!(meta.is_file());
        assert_eq!(
            meta.nlink(),
            1,
            "a layer hard-linked the file beside its root"
        );
        assert_eq!(
            meta.mode() & 0o7777,
            0o644,
            "a layer changed the mode of the file beside its root"
        );
        assert_eq!(fs::read(&sentinel).unwrap(), SENTINEL_TEXT);
        let root = fs::symlink_metadata(self.root()).expect("a layer removed the image root");
        assert!(root.is_dir(), "a layer replaced the image root");
    }
}

/// A layer may leave directories without write permission; the next reset must still remove them.
fn make_removable(dir: &Path) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            make_removable(&e.path());
        }
    }
}

/// `image_layer`: one OCI/Docker layer blob (plain, gzip or zstd tar) opened by `open_layer` and
/// applied twice (over the scratch's lower layer, then over itself, as a later layer would be)
/// by `apply_layer`. Nothing outside the image root may change. Returns how the first
/// application went (entries applied, or the error), for callers that expect one or the other.
pub fn image_layer(data: &[u8], scratch: &LayerScratch) -> Result<usize, String> {
    scratch.reset();
    let blob = scratch.base.join("layer");
    fs::write(&blob, data).unwrap();
    let mut first = None;
    for _ in 0..2 {
        let applied = open_layer(&blob).and_then(|stream| {
            let mut stream = stream.take(MAX_LAYER_STREAM);
            apply_layer(&scratch.root(), &mut stream)
        });
        scratch.check_outside();
        let failed = applied.is_err();
        first.get_or_insert(applied.map(|s| s.entries).map_err(|e| format!("{e:#}")));
        if failed {
            break;
        }
    }
    scratch.check_links_stay_inside();
    first.unwrap()
}

/// Where the `repo_index` scratch repository's one pool file lives, and its bytes.
const REPO_POOL_FILE: &str = "pool/main/f/fuzzed/fuzzed_1.0_all.deb";
const REPO_POOL_BYTES: &[u8] = b"not a real package: only its size is checked\n";

/// Whether an index `Filename:` stays inside the repository: relative, plain components.
fn clean_repo_filename(f: &str) -> bool {
    !f.starts_with('/') && f.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// `repo_index`: an existing repository's `dists/stable/main/binary-all/Packages`, parsed as
/// `repo --out` parses it (`ops::repo::parse_index_bytes`) and read through the repository
/// directory as `repo --out` reads it before adding (`ops::repo::existing_index`: index and
/// pool through no-follow descriptors). Every Filename accepted stays inside the repository;
/// the reader accepts only what the parser does, and only pool files that are there at the
/// listed size; every error is one line.
pub fn repo_index(data: &[u8], scratch: &Path) {
    use rocm_pin_core::ops::repo::{existing_index, parse_index_bytes, RepoOptions};
    let repo = scratch.join("repo");
    let _ = fs::remove_dir_all(&repo);
    put(&repo, "dists/stable/main/binary-all/Packages", data);
    put(&repo, REPO_POOL_FILE, REPO_POOL_BYTES);
    let one_line = |e: &dyn std::fmt::Display| {
        let text = format!("{e:#}");
        assert!(!text.contains('\n'), "a multi-line error: {text:?}");
    };
    let parsed = parse_index_bytes(Path::new("Packages"), data);
    match &parsed {
        Ok(packages) => {
            for p in packages {
                assert!(
                    clean_repo_filename(&p.filename),
                    "accepted {:?}",
                    p.filename
                );
            }
        }
        Err(e) => one_line(&e),
    }
    let read = existing_index(&RepoOptions::new(&repo));
    match (&parsed, &read) {
        (Ok(packages), Ok(read)) => {
            for p in read {
                assert!(
                    packages.contains(p),
                    "read {p:?}, which the parser did not give"
                );
                let file = repo.join(&p.filename);
                let meta = fs::symlink_metadata(&file).expect("an accepted pool file exists");
                assert!(meta.is_file(), "{} is not a regular file", file.display());
                assert_eq!(meta.len().to_string(), p.size, "{}", file.display());
            }
        }
        (Err(_), Ok(read)) => panic!("the reader accepted what the parser refused: {read:?}"),
        (_, Err(e)) => one_line(&e),
    }
    // Reading changes nothing: the pool file is as written.
    assert_eq!(
        fs::read(repo.join(REPO_POOL_FILE)).unwrap(),
        REPO_POOL_BYTES
    );
}

impl LayerScratch {
    /// The unpacker's tree check after the last layer (the scratch's own links beside the root
    /// taken out first: they are the harness's, not a layer's): when it passes, no symlink of
    /// the tree may lead beside the root when the host follows it (`canonicalize`, the host's
    /// own resolution: a chain that leaves lands in the scratch directory).
    fn check_links_stay_inside(&self) {
        let root = self.root();
        for (name, planted) in [
            ("abs-out", self.base.join("outside")),
            ("rel-out", "../outside".into()),
        ] {
            let link = root.join(name);
            if fs::read_link(&link).is_ok_and(|t| t == planted) {
                fs::remove_file(&link).unwrap();
            }
        }
        let limits = ImageLimits::default();
        let budget = Budget::new(&limits, Default::default());
        if check_links(&root, &budget).is_err() {
            return; // the unpack refuses the image
        }
        let leaving = links_leaving(&self.base);
        assert!(
            leaving.is_empty(),
            "the tree check passed, yet these symlinks lead beside the root: {leaving:?}"
        );
    }
}

/// The symlinks under `base/root` that lead beside the root when the host follows them
/// (`canonicalize`): a relative chain that leaves the root one or two levels lands in `base`
/// or its parent. (Deeper escapes land where an absolute link, read from the image root by
/// rocm-pin, also leads on the host: not told apart here; the unpacker's tests cover them.)
pub fn links_leaving(base: &Path) -> Vec<(PathBuf, PathBuf)> {
    let base = fs::canonicalize(base).unwrap();
    let root = base.join("root");
    let near = base.parent().unwrap_or(&base).to_path_buf();
    let mut leaving = Vec::new();
    for entry in walkdir::WalkDir::new(&root).follow_links(false) {
        let Ok(entry) = entry else { continue };
        if !entry.path_is_symlink() {
            continue;
        }
        let Ok(led_to) = fs::canonicalize(entry.path()) else {
            continue; // dangling or a loop: the host stops there
        };
        if led_to.starts_with(&near) && !led_to.starts_with(&root) {
            leaving.push((entry.path().to_path_buf(), led_to));
        }
    }
    leaving
}

/// The names generated layers use: few, so that entries meet (a whiteout names an earlier
/// entry, a link goes through another), the scratch's own, and whiteout spellings.
const NAMES: [&str; 8] = ["a", "b", "x", "etc", "d", "a", "b", "x"];
/// Symlink target pieces: climbing, staying, absolute, through other names.
const TARGET_PARTS: [&str; 10] = ["..", ".", "x", "a", "..", "", "x", "b", "..", "rel-out"];

/// A structure-aware layer: `data` read as a list of operations (entry kind, a path of up to
/// three names, a symlink target of up to eight pieces), written as a GNU tar. Random bytes
/// become layers that reach whiteouts (plain and opaque, nested), hard links and symlink
/// chains (relative, absolute, `..`, through earlier links) instead of failing the tar
/// checksum.
pub fn generated_layer(data: &[u8]) -> Vec<u8> {
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next();
    let mut w = TarWriter::new(Vec::new());
    let mut files: Vec<String> = vec!["etc/d/file".to_string()];
    for _ in 0..24 {
        let Some(op) = next() else { break };
        let depth = 1 + usize::from(op >> 6) % 3;
        let mut parts = Vec::new();
        for _ in 0..depth {
            parts.push(NAMES[usize::from(next().unwrap_or(0)) % NAMES.len()]);
        }
        let name = parts.join("/");
        let mut target = String::new();
        let kind = match op % 6 {
            0 => WriteKind::Dir,
            1 => WriteKind::File(1),
            2 | 3 => {
                let n = 1 + usize::from(next().unwrap_or(0)) % 5;
                let absolute = next().unwrap_or(0) % 4 == 0;
                let pieces: Vec<&str> = (0..n)
                    .map(|_| TARGET_PARTS[usize::from(next().unwrap_or(0)) % TARGET_PARTS.len()])
                    .collect();
                target = format!("{}{}", if absolute { "/" } else { "" }, pieces.join("/"));
                if target.is_empty() {
                    target.push('.');
                }
                WriteKind::Symlink(b"")
            }
            4 => WriteKind::Hardlink(b""),
            _ => {
                // A whiteout of the entry's last name, or an opaque whiteout of its directory.
                let dir = &parts[..parts.len() - 1];
                let last = if op & 8 == 0 {
                    ".wh..wh..opq".to_string()
                } else {
                    format!(".wh.{}", parts[parts.len() - 1])
                };
                let mut p: Vec<String> = dir.iter().map(|s| s.to_string()).collect();
                p.push(last);
                let name = p.join("/");
                w.append_header(name.as_bytes(), WriteKind::File(0), 0o644, 0)
                    .unwrap();
                continue;
            }
        };
        let kind = match kind {
            WriteKind::Symlink(_) => WriteKind::Symlink(target.as_bytes()),
            WriteKind::Hardlink(_) => {
                target = files[usize::from(next().unwrap_or(0)) % files.len()].clone();
                WriteKind::Hardlink(target.as_bytes())
            }
            k => k,
        };
        let name = if kind == WriteKind::Dir {
            format!("{name}/")
        } else {
            name
        };
        w.append_header(name.as_bytes(), kind, 0o755, 0).unwrap();
        if let WriteKind::File(n) = kind {
            w.write_contents(&mut &b"f"[..n as usize], n, &mut |_| {})
                .unwrap();
            files.push(name);
        }
    }
    w.finish().unwrap()
}

/// `image_layer` on the layer [`generated_layer`] makes of `data`.
pub fn generated_image_layer(data: &[u8], scratch: &LayerScratch) -> Result<usize, String> {
    image_layer(&generated_layer(data), scratch)
}
