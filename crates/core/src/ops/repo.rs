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
mod index;
mod keygen;
mod options;
pub(crate) mod signing;
use dir::RepoDir;
use error::refused;
pub use error::{KeyValidityProblem, RepoConflict, RepoError};
pub use index::{existing_index, parse_index_bytes, IndexedPackage};
use index::{existing_packages, Listed};
pub use keygen::{keygen, KeyFiles};
use options::{check_name, index_rel, index_root, packages_rel};
pub use options::{RepoOptions, DEFAULT_COMPONENT, DEFAULT_SUITE};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::deb::control::{format_many, package_name_problem, Paragraph};
use crate::deb::Version;
use crate::exit::usage;
use crate::host::root::FileKind;
use crate::progress::{step, Listener};

/// Public key files written into a signed repository, for clients that fetch the key with it.
pub const REPO_KEY_ASC: &str = "archive-key.asc";
pub const REPO_KEY_GPG: &str = "archive-key.gpg";

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

#[cfg(test)]
#[path = "repo/repo_tests.rs"]
pub(crate) mod tests;
