//! Apt repository writer and OpenPGP signing. (Issue 6.)
//!
//! Layout (the one Debian archives and `apt-ftparchive` use):
//! ```text
//! pool/<component>/<first letter>/<source>/<name>_<version>_<arch>.deb
//! dists/<suite>/<component>/binary-<arch>/Packages{,.gz,.xz}
//! dists/<suite>/Release, InRelease, Release.gpg
//! ```
//! or, with `flat`, `Packages{,.gz,.xz}` and `Release`/`InRelease`/`Release.gpg` at the top (the
//! `.deb` files still go under `pool/`). The repository is regenerated from the union of the
//! packages it already lists and the new ones, so adding keeps what is there; the same
//! name + version + architecture with different bytes is refused before anything is written.
//!
//! Signing uses rpgp (pure Rust). Keys are v4 EdDSA (Ed25519, "legacy" encoding): the
//! algorithm GnuPG 2.2 (bookworm's gpgv, which apt uses) and Sequoia's sqv (trixie) both verify.

mod dir;
mod error;
use dir::RepoDir;
use error::refused;
pub use error::{KeyValidityProblem, RepoConflict, RepoError};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::deb::control::{format_many, package_name_problem, ControlError, Paragraph};
use crate::deb::Version;
use crate::exit::usage;
use crate::host::root::FileKind;
use crate::progress::{step, Listener};

pub const DEFAULT_SUITE: &str = "stable";
pub const DEFAULT_COMPONENT: &str = "main";
/// Public key files written into a signed repository, for clients that fetch the key with it.
pub const REPO_KEY_ASC: &str = "archive-key.asc";
pub const REPO_KEY_GPG: &str = "archive-key.gpg";

#[derive(Debug, Clone)]
pub struct RepoOptions {
    pub out: PathBuf,
    pub suite: String,
    pub component: String,
    /// Armored OpenPGP secret key (unprotected) to sign Release with.
    pub sign_key: Option<PathBuf>,
    pub flat: bool,
    pub origin: String,
    pub label: String,
}

impl RepoOptions {
    pub fn new(out: impl Into<PathBuf>) -> Self {
        RepoOptions {
            out: out.into(),
            suite: DEFAULT_SUITE.to_string(),
            component: DEFAULT_COMPONENT.to_string(),
            sign_key: None,
            flat: false,
            origin: "rocm-pin".to_string(),
            label: "rocm-pin".to_string(),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PublishSummary {
    /// `name_version_arch` of packages copied into the pool by this run.
    pub added: Vec<String>,
    /// Packages given again with identical bytes (nothing to do).
    pub unchanged: Vec<String>,
    /// Packages in the repository after this run.
    pub total: usize,
    pub architectures: Vec<String>,
    /// The Release file (InRelease / Release.gpg beside it when signed).
    pub release: PathBuf,
    /// Fingerprint of the signing key, when signed.
    pub signed_by: Option<String>,
}

/// One package as listed in the index: its Packages stanza and where the .deb lives.
#[derive(Debug, Clone)]
struct Listed {
    stanza: Paragraph,
    name: String,
    version: String,
    arch: String,
    sha256: String,
}

impl Listed {
    fn id(&self) -> String {
        format!("{}_{}_{}", self.name, self.version, self.arch)
    }
}

/// Suite and component names become path components and Release values.
fn check_name(what: &'static str, name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    if !ok {
        return Err(RepoError::BadName {
            what,
            name: name.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Where the index files (Packages, Release) of this repository live.
fn index_root(opts: &RepoOptions) -> PathBuf {
    if opts.flat {
        opts.out.clone()
    } else {
        opts.out.join("dists").join(&opts.suite)
    }
}

/// Path of a Packages file relative to `index_root`.
fn packages_rel(opts: &RepoOptions, arch: &str) -> String {
    if opts.flat {
        "Packages".to_string()
    } else {
        format!("{}/binary-{arch}/Packages", opts.component)
    }
}

/// Where the index files are, relative to the repository directory (`""` when flat).
fn index_rel(opts: &RepoOptions) -> String {
    if opts.flat {
        String::new()
    } else {
        format!("dists/{}", opts.suite)
    }
}

/// The directories holding an existing repository's `Packages`, relative to the repository.
fn index_dirs(repo: &RepoDir, opts: &RepoOptions) -> anyhow::Result<Vec<String>> {
    if opts.flat {
        return Ok(vec![String::new()]);
    }
    let component = format!("{}/{}", index_rel(opts), opts.component);
    let Some(dir) = repo.dir(&component)? else {
        return Ok(Vec::new());
    };
    Ok(dir
        .names(dir::MAX_DIR_ENTRIES)?
        .into_iter()
        .filter(|name| name.starts_with("binary-"))
        .map(|name| format!("{component}/{name}"))
        .collect())
}

/// Read the packages an existing repository already lists (nothing when there is none yet),
/// through no-follow descriptors: a symlink, FIFO or device anywhere on the way is refused,
/// each index is read up to [`FileKind::PackageIndex`]'s cap, and each listed pool file must
/// be a regular file of the listed size.
fn existing_packages(repo: Option<&RepoDir>, opts: &RepoOptions) -> anyhow::Result<Vec<Listed>> {
    let Some(repo) = repo else {
        return Ok(Vec::new());
    };
    let mut by_id: BTreeMap<String, Listed> = BTreeMap::new();
    for rel in index_dirs(repo, opts)? {
        let Some(dir) = repo.dir(&rel)? else {
            continue;
        };
        let Some(bytes) = dir.read_capped("Packages", FileKind::PackageIndex)? else {
            continue;
        };
        let file = dir.path_of("Packages");
        for listed in parse_index(&file, &bytes)? {
            check_pool_file(repo, &file, &listed)?;
            // Arch-all packages appear once per binary-<arch>; keep one.
            by_id.entry(listed.id()).or_insert(listed);
        }
    }
    Ok(by_id.into_values().collect())
}

/// The packages an index lists, each with a `Filename:` inside the repository. An index that
/// does not parse is refused by line number, without quoting it.
fn parse_index(file: &Path, bytes: &[u8]) -> anyhow::Result<Vec<Listed>> {
    let bad = |why: String| {
        refused(format!(
            "the existing index {}: {why}; refused (its text is not shown): fix the index or \
             start a new repository",
            file.display()
        ))
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|e| bad(format!("not UTF-8 text (at byte {})", e.valid_up_to())))?;
    let stanzas = Paragraph::parse_many(text).map_err(|e| {
        bad(match e {
            ControlError::Syntax { line, .. } => format!("line {line} is not a deb822 field"),
            ControlError::Field { .. } => "a field name or value is not valid deb822".into(),
            ControlError::Missing(_) => "a required field is missing".into(),
        })
    })?;
    let mut listed = Vec::with_capacity(stanzas.len());
    for (number, stanza) in stanzas.into_iter().enumerate() {
        let package =
            listed_from_stanza(stanza).map_err(|e| bad(format!("stanza {}: {e}", number + 1)))?;
        let filename = package.stanza.get("Filename").unwrap_or_default();
        check_index_filename(filename).map_err(|why| {
            usage(format!(
                "{} lists {} with Filename {filename:?}, which {why}: refusing to read or \
                 publish outside the repository; fix the index or start a new repository",
                file.display(),
                package.id()
            ))
        })?;
        listed.push(package);
    }
    Ok(listed)
}

/// The pool file an index lists must be a regular file of the listed size, reached without a
/// symlink (its bytes are not read: the index's SHA256 stays the published one).
fn check_pool_file(repo: &RepoDir, file: &Path, listed: &Listed) -> anyhow::Result<()> {
    let filename = listed.stanza.get("Filename").unwrap_or_default();
    let deb = repo.path_of(filename);
    let size: u64 = listed
        .stanza
        .get("Size")
        .unwrap_or_default()
        .parse()
        .unwrap_or(0);
    let (parent, name) = filename.rsplit_once('/').unwrap_or(("", filename));
    let found = match repo.dir(parent)? {
        Some(dir) => dir.regular_size(name)?,
        None => None,
    };
    match found {
        Some(len) if len == size => Ok(()),
        Some(len) => Err(refused(format!(
            "{} lists {} with Size {size}, but {} has {len} bytes: the repository is \
             inconsistent; restore the file or start a new repository",
            file.display(),
            listed.id(),
            deb.display()
        ))),
        None => Err(refused(format!(
            "{} lists {}, but {} is missing: restore the pool or start a new repository",
            file.display(),
            listed.id(),
            deb.display()
        ))),
    }
}

/// A package an existing index lists, as [`existing_index`] reads it (for the fuzz harness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedPackage {
    /// `name_version_arch`
    pub id: String,
    pub filename: String,
    pub size: String,
    pub sha256: String,
}

impl From<&Listed> for IndexedPackage {
    fn from(l: &Listed) -> Self {
        IndexedPackage {
            id: l.id(),
            filename: l.stanza.get("Filename").unwrap_or_default().to_string(),
            size: l.stanza.get("Size").unwrap_or_default().to_string(),
            sha256: l.sha256.clone(),
        }
    }
}

/// The packages one `Packages` index lists (`file` names it in errors), as `repo` parses an
/// existing index before it reads anything it names.
pub fn parse_index_bytes(file: &Path, bytes: &[u8]) -> anyhow::Result<Vec<IndexedPackage>> {
    Ok(parse_index(file, bytes)?
        .iter()
        .map(IndexedPackage::from)
        .collect())
}

/// The packages the existing repository `opts.out` lists, read as `repo --out` reads them
/// (indices and pool checked; nothing written). Empty when `opts.out` does not exist.
pub fn existing_index(opts: &RepoOptions) -> anyhow::Result<Vec<IndexedPackage>> {
    let repo = match fs::metadata(&opts.out) {
        Ok(m) if m.is_dir() => Some(RepoDir::open(&opts.out)?),
        _ => None,
    };
    Ok(existing_packages(repo.as_ref(), opts)?
        .iter()
        .map(IndexedPackage::from)
        .collect())
}

/// Why an index's `Filename:` does not name a file inside the repository, or Ok: it must be
/// relative and made of plain names (no `..`, `.` or empty component), as apt resolves it
/// against the repository's base URL.
fn check_index_filename(filename: &str) -> Result<(), &'static str> {
    if filename.starts_with('/') {
        return Err("is absolute");
    }
    // A continuation line or a control character would name another file than apt fetches
    // and break the one-line messages that name it.
    if filename
        .chars()
        .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err("has white space or a control character");
    }
    if filename
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err("has an empty, '.' or '..' component");
    }
    Ok(())
}

fn listed_from_stanza(stanza: Paragraph) -> anyhow::Result<Listed> {
    let field = |name: &str| -> anyhow::Result<String> {
        stanza
            .get(name)
            .map(str::to_string)
            .with_context(|| format!("a stanza has no {name} field"))
    };
    let name = field("Package")?;
    let version = field("Version")?;
    let arch = field("Architecture")?;
    let sha256 = field("SHA256")?;
    field("Filename")?;
    field("Size")?;
    // These make the package's id and appear in messages: only what rocm-pin itself writes.
    if package_name_problem(&name).is_some() {
        anyhow::bail!("its Package is not a valid package name");
    }
    if version.parse::<Version>().is_err() || version.contains(char::is_whitespace) {
        anyhow::bail!("its Version is not a valid version");
    }
    if arch.is_empty() || !arch.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        anyhow::bail!("its Architecture is not a valid architecture");
    }
    Ok(Listed {
        stanza,
        name,
        version,
        arch,
        sha256,
    })
}

struct Hashed {
    size: u64,
    md5: String,
    sha256: String,
}

fn hash_file(path: &Path) -> anyhow::Result<Hashed> {
    let file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let d = crate::digest::digests_reader(file, true)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(Hashed {
        size: d.size,
        md5: d.md5,
        sha256: d.sha256.unwrap_or_default(),
    })
}

/// Control paragraph of a .deb.
fn deb_control(path: &Path) -> anyhow::Result<Paragraph> {
    let info = crate::deb::reader::read_deb(path, &crate::deb::ReadLimits::default())?;
    Ok(info.control)
}

/// `pool/<component>/<first letter>/<source>/<name>_<version without epoch>_<arch>.deb`
fn pool_path(
    component: &str,
    control: &Paragraph,
    name: &str,
    version: &Version,
    arch: &str,
) -> String {
    // Source may read "src (1.2-3)" when the binary version differs.
    let source = control
        .get("Source")
        .and_then(|s| s.split_whitespace().next())
        .filter(|s| package_name_problem(s).is_none())
        .unwrap_or(name);
    let letter = &source[..1];
    let mut file_version = version.upstream.clone();
    if !version.revision.is_empty() {
        file_version.push('-');
        file_version.push_str(&version.revision);
    }
    format!("pool/{component}/{letter}/{source}/{name}_{file_version}_{arch}.deb")
}

/// Packages fields that say where the file is and what it hashes to, which the repository
/// writes; `Description-md5` is derived from the description (apt looks translations up by it),
/// so a copied one could only be wrong.
const INDEX_OWNED_FIELDS: &[&str] = &[
    "Filename",
    "Size",
    "MD5sum",
    "SHA1",
    "SHA256",
    "SHA512",
    "Description-md5",
];

/// A new package: checked and hashed, not yet copied.
struct Incoming {
    source: PathBuf,
    listed: Listed,
    pool_rel: String,
    size: u64,
}

fn read_incoming(deb: &Path, component: &str) -> anyhow::Result<Incoming> {
    let control = deb_control(deb)
        .with_context(|| format!("reading the control file of {}", deb.display()))?;
    control
        .validate_binary()
        .with_context(|| format!("{}: invalid control file", deb.display()))?;
    let name = control.get("Package").unwrap_or_default().to_string();
    let version_text = control.get("Version").unwrap_or_default().to_string();
    let arch = control.get("Architecture").unwrap_or_default().to_string();
    if !arch.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(refused(format!(
            "{}: invalid Architecture {arch:?}",
            deb.display()
        )));
    }
    let version: Version = version_text.parse()?;
    let hashed = hash_file(deb)?;
    let pool_rel = pool_path(component, &control, &name, &version, &arch);
    // The Packages stanza: the control fields, then where and what the file is. Description
    // stays last, as dpkg-scanpackages writes it. The fields that describe the file in the
    // repository are ours alone: a control carrying its own SHA512 (say) would otherwise reach
    // the index and make apt refuse the download with "Hash Sum mismatch".
    let mut stanza = Paragraph::new();
    for (field, value) in control.fields() {
        let index_owned = INDEX_OWNED_FIELDS
            .iter()
            .any(|owned| field.eq_ignore_ascii_case(owned));
        if !index_owned && !field.eq_ignore_ascii_case("Description") {
            stanza.set(field, value)?;
        }
    }
    stanza.set("Filename", &pool_rel)?;
    stanza.set("Size", &hashed.size.to_string())?;
    stanza.set("MD5sum", &hashed.md5)?;
    stanza.set("SHA256", &hashed.sha256)?;
    if let Some(description) = control.get("Description") {
        stanza.set("Description", description)?;
    }
    Ok(Incoming {
        source: deb.to_path_buf(),
        listed: Listed {
            stanza,
            name,
            version: version_text,
            arch,
            sha256: hashed.sha256,
        },
        pool_rel,
        size: hashed.size,
    })
}

/// `rel` (`a/b/name`) split into its directory and file name.
fn split_rel(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// Write `bytes` as `rel` inside the repository (directories created as needed, none
/// followed through a symlink), through a temporary file and a rename.
fn write_atomic(repo: &RepoDir, rel: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let (dir, name) = split_rel(rel);
    repo.create_dir_all(dir)?.write_atomic(name, bytes)
}

/// Copy `from` to `rel` inside the repository through a temporary file beside it (streamed:
/// ROCm packages are hundreds of megabytes) and a rename. The bytes copied must still have
/// the SHA-256 the index will list; a file changed since it was read is refused.
fn copy_atomic(from: &Path, repo: &RepoDir, rel: &str, sha256: &str) -> anyhow::Result<()> {
    let (dir, name) = split_rel(rel);
    let dir = repo.create_dir_all(dir)?;
    if dir.regular_size(name)?.is_some() {
        return Ok(());
    }
    let mut source = fs::File::open(from).with_context(|| format!("opening {}", from.display()))?;
    let mut tmp = dir.new_file(name)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = source
            .read(&mut buf)
            .with_context(|| format!("reading {}", from.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        tmp.file
            .write_all(&buf[..n])
            .with_context(|| format!("writing {}", dir.path_of(name).display()))?;
    }
    if hex::encode(hasher.finalize()) != sha256 {
        return Err(refused(format!(
            "{} changed while it was being published; run again",
            from.display()
        )));
    }
    tmp.persist()
}

fn gzip(data: &[u8]) -> anyhow::Result<Vec<u8>> {
    // No file name and mtime 0 in the header: the same index gives the same bytes.
    let mut enc = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::best());
    enc.write_all(data)?;
    Ok(enc.finish()?)
}

fn xz(data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
    enc.write_all(data)?;
    Ok(enc.finish()?)
}

/// Seconds since the epoch: SOURCE_DATE_EPOCH when set (reproducible builds), else now.
pub fn release_time() -> anyhow::Result<i64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(text) => text.trim().parse::<i64>().map_err(|_| {
            usage(format!(
                "SOURCE_DATE_EPOCH={text:?} is not a number of seconds since 1970-01-01"
            ))
        }),
        Err(_) => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)),
    }
}

/// Write (or extend) a repository with `debs`.
pub fn publish(
    debs: &[PathBuf],
    opts: &RepoOptions,
    listener: &dyn Listener,
) -> anyhow::Result<PublishSummary> {
    check_name("suite", &opts.suite)?;
    check_name("component", &opts.component)?;
    if debs.is_empty() {
        return Err(usage("no .deb files given: rocm-pin repo DEB... --out DIR"));
    }
    // Everything that can fail on bad input is checked before the first write.
    let key = opts
        .sign_key
        .as_deref()
        .map(signing::load_secret_key)
        .transpose()?;
    // One instant for Release's Date and the signatures' creation time: with SOURCE_DATE_EPOCH
    // set, InRelease and Release.gpg are then byte-identical from run to run (EdDSA signatures
    // are deterministic; only the creation time subpacket would differ).
    let released_at = release_time()?;
    let date = crate::deb::date::release_date(released_at)?;
    // One writer at a time per repository: an existing one is locked before it is read; a new
    // one is created (exclusively) and locked only once the inputs have been checked.
    let existing = match fs::metadata(&opts.out) {
        Ok(m) if m.is_dir() => {
            let repo = RepoDir::open(&opts.out)?;
            lock_repository(&repo, listener)?;
            Some(repo)
        }
        Ok(_) => {
            return Err(usage(format!(
                "--out {} exists and is not a directory",
                opts.out.display()
            )))
        }
        Err(_) => None,
    };
    let (mut by_id, incoming, unchanged) =
        step(listener, "read the repository and the new packages", || {
            let plan = plan_additions(existing.as_ref(), debs, opts)?;
            if let Some(repo) = &existing {
                check_writes(repo, opts, &plan, key.is_some())?;
            }
            anyhow::Ok(plan)
        })?;
    let repo = match existing {
        Some(repo) => repo,
        None => {
            if let Some(parent) = opts.out.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            fs::create_dir(&opts.out).with_context(|| {
                format!(
                    "creating {} (if another rocm-pin repo created it meanwhile, run again)",
                    opts.out.display()
                )
            })?;
            let repo = RepoDir::open(&opts.out)?;
            lock_repository(&repo, listener)?;
            repo
        }
    };
    let added = step(listener, "copy packages into the pool", || {
        let mut added = Vec::new();
        for new in incoming {
            copy_atomic(&new.source, &repo, &new.pool_rel, &new.listed.sha256)?;
            listener.info(&format!("added {}", new.pool_rel));
            added.push(new.listed.id());
            by_id.insert(new.listed.id(), new.listed);
        }
        anyhow::Ok(added)
    })?;
    let release = step(listener, "write the indices and Release", || {
        write_indices(&repo, opts, &by_id, &date, released_at, key.as_ref())
    })?;
    let architectures = index_architectures(&by_id);
    Ok(PublishSummary {
        added,
        unchanged,
        total: by_id.len(),
        architectures,
        release,
        signed_by: key.as_ref().map(signing::fingerprint),
    })
}

/// An exclusive flock on the repository directory, released when it is closed.
fn lock_repository(repo: &RepoDir, listener: &dyn Listener) -> anyhow::Result<()> {
    let dir = repo.path().display();
    match repo.file().try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            listener.info(&format!(
                "waiting for another rocm-pin repo writing {}",
                dir
            ));
            repo.file()
                .lock()
                .with_context(|| format!("locking {}", dir))?;
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", dir))
        }
    }
    Ok(())
}

type Plan = (BTreeMap<String, Listed>, Vec<Incoming>, Vec<String>);

/// What is already published, what is new, what is given again unchanged; refuses conflicts.
fn plan_additions(
    repo: Option<&RepoDir>,
    debs: &[PathBuf],
    opts: &RepoOptions,
) -> anyhow::Result<Plan> {
    let existing = existing_packages(repo, opts)?;
    let by_id: BTreeMap<String, Listed> = existing.into_iter().map(|l| (l.id(), l)).collect();
    let mut incoming: Vec<Incoming> = Vec::new();
    let mut unchanged = Vec::new();
    let mut conflicts = Vec::new();
    for deb in debs {
        let new = read_incoming(deb, &opts.component)?;
        let id = new.listed.id();
        let earlier = by_id
            .get(&id)
            .map(|l| (l.sha256.clone(), "the repository"))
            .or_else(|| {
                incoming
                    .iter()
                    .find(|i| i.listed.id() == id)
                    .map(|i| (i.listed.sha256.clone(), "an earlier argument"))
            });
        match earlier {
            Some((sha, _)) if sha == new.listed.sha256 => unchanged.push(id),
            Some((sha, place)) => conflicts.push(RepoConflict::ChangedVersion {
                deb: deb.clone(),
                name: new.listed.name.clone(),
                version: new.listed.version.clone(),
                arch: new.listed.arch.clone(),
                place,
                published_sha256: sha,
                sha256: new.listed.sha256.clone(),
            }),
            None => {
                if let Some(repo) = repo {
                    if stray_pool_file(repo, &new)? {
                        let path = repo.path_of(&new.pool_rel);
                        conflicts.push(RepoConflict::StrayPoolFile { path });
                    }
                }
                incoming.push(new);
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(RepoError::RepoConflicts(conflicts).into());
    }
    Ok((by_id, incoming, unchanged))
}

/// Whether a file not in the index lies where `new` goes in the pool with other bytes. Its size
/// is compared first and it is hashed only at the size of the new package, so an existing file
/// costs at most what the caller's own .deb does (and never more than a packaged file's cap).
fn stray_pool_file(repo: &RepoDir, new: &Incoming) -> anyhow::Result<bool> {
    let (parent, name) = split_rel(&new.pool_rel);
    let Some(dir) = repo.dir(parent)? else {
        return Ok(false);
    };
    match dir.regular_size(name)? {
        None => return Ok(false),
        Some(size) if size != new.size => return Ok(true),
        Some(_) => {}
    }
    let Some((file, _)) = dir.open_regular(name, FileKind::PackagedFile)? else {
        return Ok(false);
    };
    let digests = crate::digest::digests_reader(file.take(new.size + 1), true)
        .with_context(|| format!("reading {}", dir.path_of(name).display()))?;
    Ok(digests.sha256.as_deref() != Some(new.listed.sha256.as_str()))
}

/// Before anything is written into an existing repository: every directory and file this run
/// will write must be a real directory or regular file (or not exist yet). A symlink among
/// them is refused here, so a refused run writes nothing anywhere.
fn check_writes(
    repo: &RepoDir,
    opts: &RepoOptions,
    plan: &Plan,
    signed: bool,
) -> anyhow::Result<()> {
    let (by_id, incoming, _) = plan;
    let packages = ["Packages", "Packages.gz", "Packages.xz"];
    let signatures = ["Release", "InRelease", "Release.gpg"];
    let index = index_rel(opts);
    if opts.flat {
        repo.check_writable("", &packages)?;
    } else {
        let arches = architectures(
            by_id
                .values()
                .map(|l| l.arch.as_str())
                .chain(incoming.iter().map(|i| i.listed.arch.as_str())),
        );
        for arch in arches {
            repo.check_writable(
                &format!("{index}/{}/binary-{arch}", opts.component),
                &packages,
            )?;
        }
    }
    repo.check_writable(&index, &signatures)?;
    if signed {
        repo.check_writable("", &[REPO_KEY_ASC, REPO_KEY_GPG])?;
    }
    for new in incoming {
        let (dir, name) = split_rel(&new.pool_rel);
        repo.check_writable(dir, &[name])?;
    }
    Ok(())
}

/// The binary-<arch> indices to write: every concrete architecture (arch-all packages go into
/// each of them, as apt expects), or `all` alone when there is no other.
fn index_architectures(by_id: &BTreeMap<String, Listed>) -> Vec<String> {
    architectures(by_id.values().map(|l| l.arch.as_str()))
}

/// [`index_architectures`] of the packages' architectures `arches`.
fn architectures<'a>(arches: impl Iterator<Item = &'a str>) -> Vec<String> {
    let concrete: BTreeSet<&str> = arches.filter(|a| *a != "all").collect();
    if concrete.is_empty() {
        vec!["all".to_string()]
    } else {
        concrete.into_iter().map(str::to_string).collect()
    }
}

fn write_indices(
    repo: &RepoDir,
    opts: &RepoOptions,
    by_id: &BTreeMap<String, Listed>,
    date: &str,
    released_at: i64,
    key: Option<&pgp::composed::SignedSecretKey>,
) -> anyhow::Result<PathBuf> {
    let root = index_root(opts);
    let index = repo.create_dir_all(&index_rel(opts))?;
    let mut listed: Vec<&Listed> = by_id.values().collect();
    listed.sort_by(|a, b| {
        a.name
            .cmp(&b.name)
            .then_with(|| {
                crate::deb::version::compare(&a.version, &b.version)
                    .unwrap_or(a.version.cmp(&b.version))
            })
            .then_with(|| a.arch.cmp(&b.arch))
    });
    let arches = index_architectures(by_id);
    // (relative path, bytes) of every index file, for the Release checksums.
    let mut indices: Vec<(String, Vec<u8>)> = Vec::new();
    if opts.flat {
        let all: Vec<Paragraph> = listed.iter().map(|l| l.stanza.clone()).collect();
        push_packages(&mut indices, "Packages", &all)?;
    } else {
        for arch in &arches {
            let stanzas: Vec<Paragraph> = listed
                .iter()
                .filter(|l| l.arch == *arch || l.arch == "all")
                .map(|l| l.stanza.clone())
                .collect();
            push_packages(&mut indices, &packages_rel(opts, arch), &stanzas)?;
        }
    }
    for (rel, bytes) in &indices {
        write_atomic(&index, rel, bytes)?;
    }
    if !opts.flat {
        remove_stale_indices(&index.create_dir_all(&opts.component)?, &arches)?;
    }

    let mut release = Paragraph::new();
    release.set("Origin", &opts.origin)?;
    release.set("Label", &opts.label)?;
    release.set("Suite", &opts.suite)?;
    release.set("Codename", &opts.suite)?;
    release.set("Date", date)?;
    release.set("Architectures", &arches.join(" "))?;
    if !opts.flat {
        release.set("Components", &opts.component)?;
    }
    release.set("Description", "apt repository written by rocm-pin")?;
    let width = indices
        .iter()
        .map(|(_, b)| b.len().to_string().len())
        .max()
        .unwrap_or(1)
        .max(8);
    let mut md5_lines = String::new();
    let mut sha_lines = String::new();
    for (rel, bytes) in &indices {
        md5_lines.push_str(&format!(
            "\n {} {:>width$} {rel}",
            crate::digest::md5_hex(bytes),
            bytes.len()
        ));
        sha_lines.push_str(&format!(
            "\n {} {:>width$} {rel}",
            crate::digest::sha256_hex(bytes),
            bytes.len()
        ));
    }
    release.set("MD5Sum", &md5_lines)?;
    release.set("SHA256", &sha_lines)?;
    let release_text = release.to_string();
    let release_path = root.join("Release");
    index.write_atomic("Release", release_text.as_bytes())?;

    match key {
        Some(key) => {
            let (clear, det) = signing::sign_release(key, &release_text, released_at)?;
            index.write_atomic("InRelease", clear.as_bytes())?;
            index.write_atomic("Release.gpg", det.as_bytes())?;
            let (asc, gpg) = signing::public_key_bytes(key)?;
            repo.write_atomic(REPO_KEY_ASC, &asc)?;
            repo.write_atomic(REPO_KEY_GPG, &gpg)?;
        }
        None => {
            // Signatures over an older Release would make apt refuse the repository.
            for stale in ["InRelease", "Release.gpg"] {
                index.remove_file(stale)?;
            }
        }
    }
    Ok(release_path)
}

/// A `binary-all` index written while the repository held only arch-all packages is replaced by
/// the per-architecture indices once a concrete architecture arrives: remove it, so no index
/// outside Release is left to be read back.
fn remove_stale_indices(component: &RepoDir, arches: &[String]) -> anyhow::Result<()> {
    for name in component.names(dir::MAX_DIR_ENTRIES)? {
        let Some(arch) = name.strip_prefix("binary-") else {
            continue;
        };
        if arches.iter().any(|a| a == arch) {
            continue;
        }
        let Some(stale) = component.dir(&name)? else {
            continue;
        };
        for file in ["Packages", "Packages.gz", "Packages.xz"] {
            stale.remove_file(file)?;
        }
        // Only if nothing else is in there.
        component.remove_empty_dir(&name);
    }
    Ok(())
}

fn push_packages(
    indices: &mut Vec<(String, Vec<u8>)>,
    rel: &str,
    stanzas: &[Paragraph],
) -> anyhow::Result<()> {
    let mut text = format_many(stanzas);
    if !text.is_empty() {
        text.push('\n');
    }
    let bytes = text.into_bytes();
    indices.push((format!("{rel}.gz"), gzip(&bytes)?));
    indices.push((format!("{rel}.xz"), xz(&bytes)?));
    indices.push((rel.to_string(), bytes));
    Ok(())
}

/// Files written by [`keygen`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct KeyFiles {
    /// Armored secret key (mode 0600, no passphrase): give it to `--sign-key`.
    pub secret: PathBuf,
    /// Armored public key.
    pub public_asc: PathBuf,
    /// Binary public key, for `signed-by=` in an apt sources entry.
    pub public_gpg: PathBuf,
    pub fingerprint: String,
}

/// Make a signing key. `out` names the secret key (`KEY.asc`); the public key goes beside it as
/// `KEY.pub.asc` and `KEY.pub.gpg`. Refuses to overwrite any of them.
pub fn keygen(out: &Path, user_id: &str) -> anyhow::Result<KeyFiles> {
    let file_name = out
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} is not a file name", out.display()))?;
    let stem = file_name.strip_suffix(".asc").unwrap_or(file_name);
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let files = KeyFiles {
        secret: out.to_path_buf(),
        public_asc: out.with_file_name(format!("{stem}.pub.asc")),
        public_gpg: out.with_file_name(format!("{stem}.pub.gpg")),
        fingerprint: String::new(),
    };
    for path in [&files.secret, &files.public_asc, &files.public_gpg] {
        if path.exists() {
            return Err(RepoError::KeyExists { path: path.clone() }.into());
        }
    }
    if !dir.is_dir() {
        // `--out keys/rocm-pin.asc` in a fresh checkout: make keys/ as `mkdir -p` would,
        // private (0700) as it holds the secret key.
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                usage(format!(
                    "cannot create the directory {}: {e}",
                    dir.display()
                ))
            })?;
    }
    let key = signing::generate(user_id)?;
    let secret = key
        .to_armored_string(pgp::composed::ArmorOptions::default())
        .context("armoring the secret key")?;
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&files.secret)
            .with_context(|| format!("creating {}", files.secret.display()))?;
        f.write_all(secret.as_bytes())
            .with_context(|| format!("writing {}", files.secret.display()))?;
    }
    let (asc, gpg) = signing::public_key_bytes(&key)?;
    fs::write(&files.public_asc, asc)
        .with_context(|| format!("writing {}", files.public_asc.display()))?;
    fs::write(&files.public_gpg, gpg)
        .with_context(|| format!("writing {}", files.public_gpg.display()))?;
    Ok(KeyFiles {
        fingerprint: signing::fingerprint(&key),
        ..files
    })
}

/// OpenPGP through rpgp.
pub(crate) mod signing {
    use std::path::Path;

    use anyhow::Context;
    use pgp::composed::{
        ArmorOptions, CleartextSignedMessage, Deserializable, DetachedSignature, KeyType,
        SecretKeyParamsBuilder, SignedSecretKey, SubpacketConfig,
    };
    use pgp::crypto::hash::HashAlgorithm;
    use pgp::packet::{SignatureConfig, SignatureType, Subpacket, SubpacketData};
    use pgp::ser::Serialize;
    use pgp::types::{KeyDetails, Password, Timestamp};

    use super::{refused, KeyValidityProblem};

    /// A v4 Ed25519 (EdDSA legacy) primary key that certifies and signs.
    pub(crate) fn generate(user_id: &str) -> anyhow::Result<SignedSecretKey> {
        let mut params = SecretKeyParamsBuilder::default();
        params
            .key_type(KeyType::Ed25519Legacy)
            .can_certify(true)
            .can_sign(true)
            .primary_user_id(user_id.to_string())
            .preferred_hash_algorithms(
                [HashAlgorithm::Sha256, HashAlgorithm::Sha512]
                    .into_iter()
                    .collect(),
            );
        let params = params.build().context("key parameters")?;
        let key = params
            .generate(rand::thread_rng())
            .context("generating the key")?;
        Ok(key)
    }

    pub(crate) fn load_secret_key(path: &Path) -> anyhow::Result<SignedSecretKey> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the signing key {}", path.display()))?;
        let (key, _) = SignedSecretKey::from_string(&text).with_context(|| {
            format!(
                "{} is not an armored OpenPGP secret key (make one with `rocm-pin repo keygen --out KEY.asc`)",
                path.display()
            )
        })?;
        key.verify_bindings().with_context(|| {
            format!(
                "{}: the key's self-signatures do not verify",
                path.display()
            )
        })?;
        // apt (gpgv) judges the key at the time it verifies, so the clock decides, not
        // SOURCE_DATE_EPOCH: a key that is expired, revoked or not yet valid now would make every
        // `apt-get update` fail with EXPKEYSIG/REVKEYSIG.
        if let Some(problem) = validity_problem(&key, Timestamp::now().as_secs()) {
            return Err(crate::ops::repo::RepoError::SigningKeyUnusable {
                path: path.to_path_buf(),
                fingerprint: fingerprint(&key),
                problem,
            }
            .into());
        }
        // Fail now, not half-way through writing, if the key cannot sign without a passphrase.
        DetachedSignature::sign_binary_data(
            rand::thread_rng(),
            &key.primary_key,
            &Password::empty(),
            HashAlgorithm::Sha256,
            &b"probe"[..],
        )
        .with_context(|| {
            format!(
                "{}: cannot sign with this key (passphrase-protected keys are not supported)",
                path.display()
            )
        })?;
        Ok(key)
    }

    /// Why the primary key (the one that signs) cannot make signatures apt accepts at `now`
    /// (seconds since the epoch), or None. Its expiry is the one its newest self-signature gives,
    /// as GnuPG reads it; any verified revocation signature revokes it.
    pub(crate) fn validity_problem(key: &SignedSecretKey, now: u32) -> Option<KeyValidityProblem> {
        let created = key.primary_key.created_at().as_secs();
        if let Some(revocation) = key.details.revocation_signatures.first() {
            return Some(KeyValidityProblem::Revoked {
                at: revocation.created().map(|t| i64::from(t.as_secs())),
            });
        }
        if created > now {
            return Some(KeyValidityProblem::NotYetValid {
                from: i64::from(created),
            });
        }
        let newest_self_signature = key
            .details
            .users
            .iter()
            .flat_map(|u| &u.signatures)
            .chain(&key.details.direct_signatures)
            .max_by_key(|sig| sig.created().map(|t| t.as_secs()).unwrap_or(0))?;
        let lifetime = newest_self_signature.key_expiration_time()?.as_secs();
        // A zero lifetime means the key does not expire (RFC 9580 §5.2.3.13).
        if lifetime == 0 {
            return None;
        }
        let expires = u64::from(created) + u64::from(lifetime);
        (expires <= u64::from(now)).then_some(KeyValidityProblem::Expired { at: expires as i64 })
    }

    pub(crate) fn fingerprint(key: &SignedSecretKey) -> String {
        hex::encode_upper(key.fingerprint().as_bytes())
    }

    /// (InRelease: cleartext-signed Release, Release.gpg: armored detached signature), both
    /// created at `created` (seconds since the epoch; Release's Date) — or at the key's own
    /// creation time if that is later, since gpgv (and so apt) refuses a signature older than
    /// its key ("Time conflict"). The subpackets are the ones rpgp writes by default (issuer
    /// fingerprint, creation time; issuer key id unhashed), with the creation time given instead
    /// of the clock, so equal inputs and key give equal bytes.
    pub(crate) fn sign_release(
        key: &SignedSecretKey,
        release: &str,
        created: i64,
    ) -> anyhow::Result<(String, String)> {
        let created = u32::try_from(created).map_err(|_| {
            refused(format!("signature time {created} is outside OpenPGP's range (1970..2106): check SOURCE_DATE_EPOCH"))
        })?;
        let created = created.max(key.primary_key.created_at().as_secs());
        let hashed = vec![
            Subpacket::regular(SubpacketData::IssuerFingerprint(key.fingerprint()))?,
            Subpacket::regular(SubpacketData::SignatureCreationTime(Timestamp::from_secs(
                created,
            )))?,
        ];
        let unhashed = vec![Subpacket::regular(SubpacketData::IssuerKeyId(
            key.legacy_key_id(),
        ))?];
        // In a cleartext signature the line break before the signature block belongs to the
        // framing, not the text (RFC 9580 §7.1): sign the text without its final newline so the
        // InRelease layout and what gpgv verifies are exactly Release, as `gpg --clearsign` does.
        let mut config = SignatureConfig::v4(
            SignatureType::Text,
            key.primary_key.algorithm(),
            HashAlgorithm::Sha256,
        );
        config.hashed_subpackets = hashed.clone();
        config.unhashed_subpackets = unhashed.clone();
        let clear = CleartextSignedMessage::new(
            release.strip_suffix('\n').unwrap_or(release),
            config,
            &key.primary_key,
            &Password::empty(),
        )
        .context("signing InRelease")?
        .to_armored_string(ArmorOptions::default())
        .context("armoring InRelease")?;
        let detached = DetachedSignature::sign_binary_data_with_subpackets(
            rand::thread_rng(),
            &key.primary_key,
            &Password::empty(),
            HashAlgorithm::Sha256,
            release.as_bytes(),
            SubpacketConfig::UserDefined { hashed, unhashed },
        )
        .context("signing Release.gpg")?
        .to_armored_string(ArmorOptions::default())
        .context("armoring Release.gpg")?;
        Ok((clear, detached))
    }

    /// (armored, binary) public key.
    pub(crate) fn public_key_bytes(key: &SignedSecretKey) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
        let public = key.to_public_key();
        let asc = public
            .to_armored_bytes(ArmorOptions::default())
            .context("armoring the public key")?;
        let gpg = public.to_bytes().context("serializing the public key")?;
        Ok((asc, gpg))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small .deb made by our own writer in `dir`: `package` at `version` (architecture
    /// amd64), `extra` appended to its control file, `files` (root-relative path, bytes).
    pub(crate) fn small_deb(
        dir: &Path,
        package: &str,
        version: &str,
        extra: &str,
        files: &[(&str, &[u8])],
    ) -> PathBuf {
        let root = dir.join(format!("{package}_{version}.tree"));
        if root.exists() {
            fs::remove_dir_all(&root).unwrap();
        }
        fs::create_dir_all(root.join("DEBIAN")).unwrap();
        fs::write(
            root.join("DEBIAN/control"),
            format!(
                "Package: {package}\nVersion: {version}\nArchitecture: amd64\n\
                 Maintainer: t <t@example.invalid>\nDescription: test\n{extra}"
            ),
        )
        .unwrap();
        for (path, bytes) in files {
            let p = root.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, bytes).unwrap();
        }
        let out = dir.join(format!("{package}_{version}_amd64.deb"));
        crate::deb::archive::build_from_dir(
            &root,
            &out,
            &crate::deb::archive::BuildOptions::default(),
            &crate::progress::Silent,
        )
        .unwrap();
        out
    }

    #[test]
    fn an_index_filename_must_stay_inside_the_repository() {
        assert_eq!(check_index_filename("pool/main/a/a/a_1_all.deb"), Ok(()));
        assert_eq!(
            check_index_filename("./a.deb").unwrap_err(),
            "has an empty, '.' or '..' component"
        );
        for escape in [
            "/etc/hostname",
            "../x.deb",
            "pool/../../x.deb",
            "pool//x.deb",
            "",
            "pool/main\n /x.deb",
            "pool/a b.deb",
            "pool/\u{1b}[2J.deb",
        ] {
            assert!(check_index_filename(escape).is_err(), "{escape}");
        }
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "a/b", "..", "a b", "ü"] {
            let err = check_name("suite", bad).unwrap_err();
            assert!(
                matches!(err.downcast_ref::<RepoError>(),
                    Some(RepoError::BadName { what: "suite", name }) if name == bad),
                "{bad:?}: {err:?}"
            );
        }
        check_name("suite", "bookworm-rocm_7.2+x").unwrap();
        let err = publish(
            &[],
            &RepoOptions {
                component: "a b".into(),
                ..RepoOptions::new("/nonexistent/repo")
            },
            &crate::progress::Silent,
        )
        .unwrap_err();
        assert!(
            matches!(err.downcast_ref::<RepoError>(),
                Some(RepoError::BadName { what: "component", name }) if name == "a b"),
            "{err:?}"
        );
    }

    #[test]
    fn a_published_version_never_changes() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("repo");
        let opts = RepoOptions::new(&out);
        let first = d.path().join("first");
        let second = d.path().join("second");
        fs::create_dir_all(&first).unwrap();
        fs::create_dir_all(&second).unwrap();
        let a = small_deb(&first, "tool", "1.0", "", &[("usr/share/tool/a", b"one\n")]);
        let b = small_deb(
            &second,
            "tool",
            "1.0",
            "",
            &[("usr/share/tool/a", b"two\n")],
        );
        publish(std::slice::from_ref(&a), &opts, &crate::progress::Silent).unwrap();
        let before = fs::read(out.join("dists/stable/Release")).unwrap();

        let err = publish(std::slice::from_ref(&b), &opts, &crate::progress::Silent).unwrap_err();
        match err.downcast_ref::<RepoError>() {
            Some(RepoError::RepoConflicts(c)) => assert!(
                matches!(c.as_slice(), [RepoConflict::ChangedVersion { deb, name, version, place, .. }]
                    if *deb == b && name == "tool" && version == "1.0" && *place == "the repository"),
                "{c:?}"
            ),
            other => panic!("not RepoConflicts: {other:?} ({err})"),
        }
        assert!(
            err.to_string().starts_with("refused, nothing written:\n  "),
            "{err}"
        );
        assert_eq!(fs::read(out.join("dists/stable/Release")).unwrap(), before);

        // The same clash between two arguments of one run.
        let fresh = RepoOptions::new(d.path().join("repo2"));
        let err = publish(&[a, b], &fresh, &crate::progress::Silent).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<RepoError>(),
                Some(RepoError::RepoConflicts(c)) if matches!(c.as_slice(),
                    [RepoConflict::ChangedVersion { place: "an earlier argument", .. }])),
            "{err:?}"
        );
    }

    #[test]
    fn keygen_never_overwrites_a_key() {
        let d = tempfile::tempdir().unwrap();
        let public = d.path().join("k.pub.asc");
        fs::write(&public, "keep\n").unwrap();
        let err = keygen(&d.path().join("k.asc"), "t <t@example.invalid>").unwrap_err();
        assert!(
            matches!(err.downcast_ref::<RepoError>(), Some(RepoError::KeyExists { path }) if *path == public),
            "{err:?}"
        );
        assert!(!d.path().join("k.asc").exists());
        assert_eq!(fs::read_to_string(&public).unwrap(), "keep\n");
    }
}
