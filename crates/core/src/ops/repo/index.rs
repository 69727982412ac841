//! Reading what an existing repository already lists: its Packages indices and pool files,
//! through no-follow descriptors.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::Context;

use super::dir::{self, RepoDir};
use super::error::refused;
use super::options::{index_rel, RepoOptions};
use crate::deb::control::{package_name_problem, ControlError, Paragraph};
use crate::deb::Version;
use crate::exit::usage;
use crate::host::root::FileKind;

/// One package as listed in the index: its Packages stanza and where the .deb lives.
#[derive(Debug, Clone)]
pub(super) struct Listed {
    pub(super) stanza: Paragraph,
    pub(super) name: String,
    pub(super) version: String,
    pub(super) arch: String,
    pub(super) sha256: String,
}

impl Listed {
    pub(super) fn id(&self) -> String {
        format!("{}_{}_{}", self.name, self.version, self.arch)
    }
}

/// The directories holding an existing repository's `Packages`, relative to the repository.
pub(super) fn index_dirs(repo: &RepoDir, opts: &RepoOptions) -> anyhow::Result<Vec<String>> {
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
pub(super) fn existing_packages(
    repo: Option<&RepoDir>,
    opts: &RepoOptions,
) -> anyhow::Result<Vec<Listed>> {
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
pub(super) fn parse_index(file: &Path, bytes: &[u8]) -> anyhow::Result<Vec<Listed>> {
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
pub(super) fn check_pool_file(repo: &RepoDir, file: &Path, listed: &Listed) -> anyhow::Result<()> {
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
pub(super) fn check_index_filename(filename: &str) -> Result<(), &'static str> {
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

pub(super) fn listed_from_stanza(stanza: Paragraph) -> anyhow::Result<Listed> {
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
