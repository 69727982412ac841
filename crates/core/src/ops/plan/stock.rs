//! Stock package facts: from the dpkg database under a root, or from stock .deb files. Every
//! regular file is checked against dpkg's md5sums here, so a later step never carries a file
//! that is not what the stock package shipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::error::refused;
use crate::deb::version::Version;
use crate::deb::Paragraph;
pub(crate) use crate::digest::{md5_file, sha256_file};
use crate::host::dpkgdb::{parse_md5sums, DpkgDb};

/// What one path of a stock package is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockKind {
    Dir,
    /// A regular file, readable at `source`, whose md5 matched dpkg's record.
    File {
        mode: u32,
        md5: String,
    },
    Symlink(String),
    /// Listed by dpkg but absent because dpkg's `path-exclude` dropped it at unpack time.
    Excluded,
}

#[derive(Debug, Clone)]
pub struct StockFile {
    /// Absolute path as installed, e.g. `/opt/rocm-7.2.4/lib/libamdhip64.so.7`.
    pub path: String,
    pub kind: StockKind,
    /// Where the content can be read on this machine (the file in the root, or extracted).
    pub source: PathBuf,
}

/// One stock package with everything a replacement needs to know about it.
#[derive(Debug, Clone)]
pub struct StockPackage {
    pub name: String,
    pub version: Version,
    pub architecture: String,
    /// The package's control paragraph (the status paragraph for a database package).
    pub control: Paragraph,
    pub files: Vec<StockFile>,
    /// Conffile paths.
    pub conffiles: Vec<String>,
    /// Maintainer scripts by name (`postinst`, `prerm`, …). Reported, never carried.
    pub scripts: BTreeMap<String, Vec<u8>>,
    /// The shared-library control members (`shlibs`, `symbols`) by name: carried, rewritten
    /// for our library (plan::library_info).
    pub library_info: BTreeMap<String, Vec<u8>>,
    /// Where the facts came from, for messages: `dpkg database /` or the .deb path.
    pub origin: String,
    /// Things worth telling the user (e.g. a conffile carried with local changes).
    pub notes: Vec<String>,
}

impl StockPackage {
    pub fn file(&self, path: &str) -> Option<&StockFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// Every directory some listed path lies below (`/usr/lib/x` gives `/usr/lib`, `/usr` and ``),
/// without trailing slashes: whether a listed path has children, in one pass over the list.
/// (Asking the whole list for each entry was quadratic: 100 000 listed directories took 16 s.)
fn listed_parents(listed: &[String]) -> std::collections::HashSet<&str> {
    let mut parents = std::collections::HashSet::new();
    for path in listed {
        let mut at = path.trim_end_matches('/');
        while let Some((parent, _)) = at.rsplit_once('/') {
            let parent = parent.trim_end_matches('/');
            // Its ancestors went in with it.
            if !parents.insert(parent) {
                break;
            }
            at = parent;
        }
    }
    parents
}

/// Load one installed package from the database, checking every regular file against the
/// package's md5sums. A missing file is an error unless dpkg's path filters exclude it; a file
/// for which `replaced_in_place(path)` is true may differ from its md5sum: `rocm-pin adopt` reads
/// a host whose runtime files were overwritten in place (their content is never carried: the
/// rebuilt library takes those names).
pub(crate) fn from_dpkg_db_allowing(
    db: &DpkgDb,
    name: &str,
    replaced_in_place: &dyn Fn(&str) -> bool,
) -> anyhow::Result<StockPackage> {
    let pkg = db
        .installed(name)
        .ok_or_else(|| refused(format!("stock package {name} is not installed (state must be `installed`) in the dpkg database under {}", db.root().display())))?;
    let listed = db.files(name)?;
    let sums = db.md5sums(name)?;
    let conffile_sums: BTreeMap<String, String> = db
        .conffiles(name)
        .into_iter()
        .filter(|c| !c.flags.iter().any(|f| f == "obsolete"))
        .map(|c| (c.path, c.md5))
        .collect();
    let conffiles: Vec<String> = conffile_sums.keys().cloned().collect();
    let mut notes = vec![];
    let mut files = Vec::with_capacity(listed.len());
    let parents = listed_parents(&listed);
    for path in &listed {
        // The entry itself, its directory resolved inside the root: a link on the way out
        // of the root never reaches a host file.
        let host = db
            .root()
            .host_path_of_entry(path)
            .unwrap_or_else(|_| db.root().host_path(path));
        let meta = match db.root().symlink_metadata(path) {
            Ok(m) => m,
            Err(_) if db.is_path_excluded(path) => {
                files.push(StockFile {
                    path: path.clone(),
                    kind: StockKind::Excluded,
                    source: host,
                });
                continue;
            }
            Err(e) => {
                return Err(refused(format!(
                "stock file {path} of {name} is missing under {} ({e}); dpkg -L {name} lists it. \
                 Reinstall the stock package (apt-get install --reinstall {name}) before packaging",
                db.root().display()
            )))
            }
        };
        let has_children = parents.contains(path.trim_end_matches('/'));
        let kind = if meta.is_dir() || has_children {
            StockKind::Dir
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&host)
                .with_context(|| format!("cannot read link {}", host.display()))?;
            StockKind::Symlink(target.to_string_lossy().into_owned())
        } else if meta.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let actual = md5_file(&host)?;
            let is_conffile = conffile_sums.contains_key(path);
            if conffile_sums.get(path).is_some_and(|m| *m != actual) {
                // A conffile may be changed by the admin; carry it as it is and say so.
                notes.push(format!(
                    "conffile {path} of {name} has local changes; it is carried as changed"
                ));
            }
            match sums.get(path) {
                Some(expected) if *expected != actual && !replaced_in_place(path) => return Err(refused(format!("stock file {path} of {name} was modified on disk: md5 {actual}, dpkg recorded {expected} \
                     (a previous in-place replacement?). Restore it with apt-get install --reinstall {name}"))),
                None if !is_conffile => return Err(refused(format!("stock file {path} of {name} has no md5sum in dpkg's database ({}); cannot prove it is unmodified", db.info_file(name, "md5sums").map(|p| p.display().to_string()).unwrap_or_else(|| format!("info/{name}.md5sums missing"))))),
                _ => {}
            }
            StockKind::File {
                mode: meta.permissions().mode() & 0o7777,
                md5: actual,
            }
        } else {
            return Err(refused(format!(
                "stock path {path} of {name} is neither a file, a directory nor a symlink"
            )));
        };
        files.push(StockFile {
            path: path.clone(),
            kind,
            source: host,
        });
    }
    Ok(StockPackage {
        name: pkg.name.clone(),
        version: parse_version(&pkg.version, &format!("{name} in the dpkg database"))?,
        architecture: pkg.architecture.clone(),
        control: pkg.control.clone(),
        files,
        conffiles,
        scripts: db.maintainer_scripts(name)?,
        library_info: library_info_in_db(db, name)?,
        origin: format!("dpkg database under {}", db.root().display()),
        notes,
    })
}

/// Load a stock .deb: control, md5sums, conffiles and scripts from control.tar, contents
/// extracted under `extract_to` (which must exist and be empty) and checked against md5sums.
pub(crate) fn from_deb(deb: &Path, extract_to: &Path) -> anyhow::Result<StockPackage> {
    use crate::deb::reader::{extract_data, read_deb, ReadLimits};
    use crate::deb::EntryKind;
    let limits = ReadLimits::default();
    let info =
        read_deb(deb, &limits).with_context(|| format!("reading stock {}", deb.display()))?;
    let control_file = |n: &str| {
        info.control_files
            .iter()
            .find(|(name, _)| name.trim_start_matches("./") == n)
            .map(|(_, b)| b.clone())
    };
    let sums = match control_file("md5sums") {
        Some(b) => parse_md5sums(&String::from_utf8_lossy(&b))
            .with_context(|| format!("{}: md5sums", deb.display()))?,
        None => BTreeMap::new(),
    };
    let conffiles: Vec<String> = control_file("conffiles")
        .map(|b| {
            String::from_utf8_lossy(&b)
                .lines()
                .map(|l| l.trim())
                .filter(|l| l.starts_with('/'))
                .map(|l| l.split_whitespace().last().unwrap_or(l).to_string())
                .collect()
        })
        .unwrap_or_default();
    let mut scripts = BTreeMap::new();
    for s in crate::host::dpkgdb::MAINTAINER_SCRIPTS {
        if let Some(b) = control_file(s) {
            scripts.insert(s.to_string(), b);
        }
    }
    let library_info: BTreeMap<String, Vec<u8>> = LIBRARY_INFO_MEMBERS
        .iter()
        .filter_map(|m| control_file(m).map(|b| (m.to_string(), b)))
        .collect();
    let entries = extract_data(deb, extract_to, &limits)
        .with_context(|| format!("extracting stock {}", deb.display()))?;
    let get = |f: &str| info.control.get(f).map(str::to_string);
    let name =
        get("Package").ok_or_else(|| refused(format!("{}: no Package field", deb.display())))?;
    let mut files = vec![];
    for e in &entries {
        let rel = e.path.trim_start_matches("./").trim_end_matches('/');
        if rel.is_empty() {
            continue;
        }
        let path = format!("/{rel}");
        let source = extract_to.join(rel);
        let kind = match &e.kind {
            EntryKind::Dir => StockKind::Dir,
            EntryKind::Symlink(t) => StockKind::Symlink(t.clone()),
            EntryKind::File | EntryKind::Hardlink(_) => {
                let actual = md5_file(&source)?;
                if let Some(expected) = sums.get(&path) {
                    if *expected != actual {
                        return Err(refused(format!(
                            "{}: {path} does not match the package's own md5sums (corrupt .deb)",
                            deb.display()
                        )));
                    }
                }
                StockKind::File {
                    mode: e.mode & 0o7777,
                    md5: actual,
                }
            }
        };
        files.push(StockFile { path, kind, source });
    }
    Ok(StockPackage {
        version: parse_version(
            &get("Version")
                .ok_or_else(|| refused(format!("{}: no Version field", deb.display())))?,
            &deb.display().to_string(),
        )?,
        architecture: get("Architecture").unwrap_or_else(|| "all".into()),
        name,
        control: info.control.clone(),
        files,
        conffiles,
        scripts,
        library_info,
        origin: deb.display().to_string(),
        notes: vec![],
    })
}

/// The control members that describe a shared library to dpkg-shlibdeps and dpkg-gensymbols.
pub(crate) const LIBRARY_INFO_MEMBERS: &[&str] = &["shlibs", "symbols"];

/// `info/<pkg>.shlibs` and `.symbols` of an installed package (`<pkg>:<arch>.` for
/// `Multi-Arch: same`), read inside the root.
fn library_info_in_db(db: &DpkgDb, name: &str) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for m in LIBRARY_INFO_MEMBERS {
        // The same bounded reader as the maintainer scripts: an info file is an info file.
        if let Some(bytes) = db.maintainer_script(name, m)? {
            out.insert(m.to_string(), bytes);
        }
    }
    Ok(out)
}

/// The stock version, parsed once: everything after compares and extends the parsed form.
fn parse_version(text: &str, whose: &str) -> anyhow::Result<Version> {
    text.parse()
        .with_context(|| format!("{whose}: the stock Version field"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_parents_are_every_ancestor() {
        let listed: Vec<String> = ["/usr", "/usr/lib/x/libx.so", "/opt/rocm/", "/opt/rocm/lib/"]
            .map(String::from)
            .to_vec();
        let parents = listed_parents(&listed);
        for dir in ["", "/usr", "/usr/lib", "/usr/lib/x", "/opt", "/opt/rocm"] {
            assert!(parents.contains(dir), "{dir:?}");
        }
        for leaf in ["/usr/lib/x/libx.so", "/opt/rocm/lib", "/usr/li"] {
            assert!(!parents.contains(leaf), "{leaf:?}");
        }
    }

    /// A stock package whose list names 50 000 directories (each present in the root) is read
    /// in one pass: f225f56 asked the whole list for children of every entry (2.5e9 steps
    /// here). The bound is loose: the per-entry lookups in the root cost seconds in a debug
    /// build on a loaded machine.
    #[test]
    fn a_list_of_many_directories_is_read_in_linear_time() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let info = r.join("var/lib/dpkg/info");
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(
            r.join("var/lib/dpkg/status"),
            "Package: manydirs\nStatus: install ok installed\nArchitecture: amd64\n\
             Version: 1.0\nDescription: d\n",
        )
        .unwrap();
        std::fs::create_dir_all(r.join("usr/share/manydirs")).unwrap();
        let mut list = String::from("/usr\n/usr/share\n/usr/share/manydirs\n");
        // Every entry names an existing directory; a repeated name costs the old scan as much
        // as a new one, and keeps this test from making 100 000 directories.
        for _ in 0..50_000 {
            list.push_str("/usr/share/manydirs\n");
        }
        std::fs::write(info.join("manydirs.list"), list).unwrap();
        let db = DpkgDb::open(&crate::host::root::Root::new(r)).unwrap();
        let start = std::time::Instant::now();
        let stock = from_dpkg_db_allowing(&db, "manydirs", &|_| false).unwrap();
        let took = start.elapsed();
        assert_eq!(stock.files.len(), 50_003);
        assert!(stock.files.iter().all(|f| matches!(f.kind, StockKind::Dir)));
        assert!(
            took < std::time::Duration::from_secs(30),
            "50 003 listed directories took {took:?}"
        );
    }
}
