//! Read-only access to a dpkg database under a root (`/` on a host, a chroot directory in tests):
//! `var/lib/dpkg/status` paragraphs, `info/<pkg>.list`, `.md5sums`, `.conffiles`, maintainer
//! scripts, and the files themselves as seen inside that root.
//!
//! Nothing here writes. Paths handed in and out are absolute paths *inside* the root
//! (`/opt/rocm-7.2.4/lib/libamdhip64.so.7`), and every read goes through [`Root::read_file`],
//! so a hostile root cannot point a read outside itself or make it unbounded.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::deb::Paragraph;
use crate::host::excludes::{fnmatch, PathFilters};
use crate::host::loader;
use crate::host::refused;
use crate::host::root::{FileKind, Missing, Root};
use crate::host::status::{is_package_name, read_file_list, StatusSnapshot};
// The formats live below both dpkg readers; kept importable from here for callers.
pub use crate::host::dpkgfmt::{
    parse_conffiles_field, parse_md5sums, Conffile, MAX_CONFIG_DIR_ENTRIES,
};

/// dpkg's administrative directory, inside the root.
pub const ADMIN_DIR: &str = "/var/lib/dpkg";

/// One package paragraph of the status file.
#[derive(Debug, Clone)]
pub struct InstalledPackage {
    pub name: String,
    pub version: String,
    pub architecture: String,
    /// The three words of `Status:` (want, flag, state), e.g. `install ok installed`.
    pub want: String,
    pub flag: String,
    pub state: String,
    /// The whole status paragraph as dpkg wrote it.
    pub control: Paragraph,
}

impl InstalledPackage {
    /// True for `install ok installed` style states where the package's files are all on disk
    /// and configured.
    pub fn is_installed(&self) -> bool {
        self.state == "installed"
    }
    /// True when the package has files on disk (anything between unpacked and installed).
    pub fn has_files(&self) -> bool {
        matches!(
            self.state.as_str(),
            "installed"
                | "unpacked"
                | "half-configured"
                | "half-installed"
                | "triggers-awaited"
                | "triggers-pending"
        )
    }
}

/// The maintainer scripts dpkg keeps in `info/`.
pub const MAINTAINER_SCRIPTS: &[&str] = &["preinst", "postinst", "prerm", "postrm", "config"];

/// The dpkg database under one root.
pub struct DpkgDb {
    root: Root,
    /// The admin directory, inside the root.
    admin: PathBuf,
    packages: Vec<InstalledPackage>,
    by_name: HashMap<String, Vec<usize>>,
    /// path → owning package names; built on first `owner_of`.
    owners: OnceCell<HashMap<String, Vec<String>>>,
    /// dpkg's path filters, read on the first `is_path_excluded` (None: unreadable).
    path_filters: OnceCell<Option<PathFilters>>,
}

impl std::fmt::Debug for DpkgDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpkgDb")
            .field("root", &self.root)
            .field("packages", &self.packages.len())
            .finish()
    }
}

impl DpkgDb {
    /// Open the database at `<root>/var/lib/dpkg`. Reads the status file once.
    pub fn open(root: &Root) -> anyhow::Result<Self> {
        Self::open_admin_dir(root, Path::new(ADMIN_DIR))
    }

    /// Open with an explicit admin directory (dpkg's `--admindir`), inside the root.
    pub fn open_admin_dir(root: &Root, admin: &Path) -> anyhow::Result<Self> {
        let status = StatusSnapshot::read_at(root, &admin.join("status"))?;
        Ok(Self::from_snapshot(root, admin, status))
    }

    /// The whole-paragraph view of a status file already read (the one reader is
    /// [`StatusSnapshot`]; a caller holding a snapshot does not read the file again).
    pub fn from_snapshot(root: &Root, admin: &Path, status: StatusSnapshot) -> Self {
        let root = root.clone();
        let mut packages = Vec::with_capacity(status.paragraphs().len());
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for p in status.into_paragraphs() {
            // The reader checked that every paragraph names a package.
            let name = p.get("Package").unwrap_or("").to_string();
            let status = p.get("Status").unwrap_or("");
            let mut words = status.split_whitespace();
            let want = words.next().unwrap_or("").to_string();
            let flag = words.next().unwrap_or("").to_string();
            let state = words.next().unwrap_or("").to_string();
            let pkg = InstalledPackage {
                version: p.get("Version").unwrap_or("").to_string(),
                architecture: p.get("Architecture").unwrap_or("").to_string(),
                name: name.clone(),
                want,
                flag,
                state,
                control: p,
            };
            by_name.entry(name).or_default().push(packages.len());
            packages.push(pkg);
        }
        DpkgDb {
            root,
            admin: admin.to_path_buf(),
            packages,
            by_name,
            owners: OnceCell::new(),
            path_filters: OnceCell::new(),
        }
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Every package paragraph in the status file (any state, including config-files and
    /// not-installed leftovers).
    pub fn packages(&self) -> &[InstalledPackage] {
        &self.packages
    }

    /// The paragraph for `name` whose files are on disk (state unpacked … installed). `name` may
    /// carry an architecture qualifier (`libc6:amd64`).
    pub fn package(&self, name: &str) -> Option<&InstalledPackage> {
        let (bare, arch) = split_arch(name);
        self.by_name
            .get(bare)?
            .iter()
            .map(|&i| &self.packages[i])
            .filter(|p| arch.is_none_or(|a| p.architecture == a))
            .find(|p| p.has_files())
    }

    /// The package `name` when it is fully installed (`Status: install ok installed` or a
    /// hold on an installed package).
    pub fn installed(&self, name: &str) -> Option<&InstalledPackage> {
        self.package(name).filter(|p| p.is_installed())
    }

    /// The path of `info/<pkg>.<ext>`, honouring the `<pkg>:<arch>.<ext>` naming dpkg uses for
    /// `Multi-Arch: same` packages. None when neither exists.
    pub fn info_file(&self, name: &str, ext: &str) -> Option<PathBuf> {
        if !is_package_name(name) {
            return None;
        }
        let (bare, arch) = split_arch(name);
        let info = self.admin.join("info");
        let mut candidates = vec![];
        if let Some(a) = arch {
            candidates.push(info.join(format!("{bare}:{a}.{ext}")));
        }
        candidates.push(info.join(format!("{bare}.{ext}")));
        if let Some(p) = self.package(name) {
            candidates.push(info.join(format!("{bare}:{}.{ext}", p.architecture)));
        }
        candidates.into_iter().find(|p| self.root.exists(p))
    }

    /// Every path the package owns (`info/<pkg>.list`: directories included, `/.` dropped),
    /// in dpkg's order.
    pub fn files(&self, name: &str) -> anyhow::Result<Vec<String>> {
        let list = self
            .info_file(name, "list")
            .ok_or_else(|| refused(format!("dpkg database {}: no file list for package {name} (info/{name}.list is missing; is it installed?)", self.admin.display())))?;
        read_file_list(&self.root, &list)
    }

    /// `info/<pkg>.md5sums` as absolute path → md5 hex. Empty when the package has none (dpkg
    /// writes one for every package with regular files, so absence means no files).
    pub fn md5sums(&self, name: &str) -> anyhow::Result<BTreeMap<String, String>> {
        let Some(path) = self.info_file(name, "md5sums") else {
            return Ok(BTreeMap::new());
        };
        let text = self
            .root
            .read_to_string(&path, FileKind::DpkgMd5sums)
            .map_err(anyhow::Error::from)?;
        parse_md5sums(&text).with_context(|| format!("{}", path.display()))
    }

    /// The package's conffiles from its status paragraph (with the shipped md5).
    pub fn conffiles(&self, name: &str) -> Vec<Conffile> {
        self.package(name)
            .and_then(|p| p.control.get("Conffiles"))
            .map(parse_conffiles_field)
            .unwrap_or_default()
    }

    /// A maintainer script's bytes (`preinst`, `postinst`, `prerm`, `postrm`, `config`), None when
    /// the package has none.
    pub fn maintainer_script(&self, name: &str, script: &str) -> anyhow::Result<Option<Vec<u8>>> {
        match self.info_file(name, script) {
            None => Ok(None),
            Some(p) => self
                .root
                .read_file(&p, FileKind::DpkgInfo)
                .map(Some)
                .map_err(anyhow::Error::from),
        }
    }

    /// Every maintainer script the package has, by name.
    pub fn maintainer_scripts(&self, name: &str) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
        let mut out = BTreeMap::new();
        for s in MAINTAINER_SCRIPTS {
            if let Some(bytes) = self.maintainer_script(name, s)? {
                out.insert(s.to_string(), bytes);
            }
        }
        Ok(out)
    }

    /// The packages (with files on disk) whose file list names `path` exactly. dpkg lists
    /// paths as shipped, so `/lib/x/libc.so.6` and `/usr/lib/x/libc.so.6` are different keys;
    /// see [`DpkgDb::owner_of_resolved`] for the usrmerge-aware form.
    pub fn owner_of(&self, path: &str) -> anyhow::Result<Vec<String>> {
        let index = self.owner_index()?;
        Ok(index.get(path).cloned().unwrap_or_default())
    }

    /// Like `owner_of`, but also tries the path with each leading directory replaced by the
    /// directory a symlink inside the root points at (`/lib` → `/usr/lib` on merged-/usr
    /// systems) and the reverse.
    pub fn owner_of_resolved(&self, path: &str) -> anyhow::Result<Vec<String>> {
        let direct = self.owner_of(path)?;
        if !direct.is_empty() {
            return Ok(direct);
        }
        let resolved = self.resolve(path);
        if resolved != path {
            let r = self.owner_of(&resolved)?;
            if !r.is_empty() {
                return Ok(r);
            }
        }
        // The reverse of usrmerge: the package may list /lib/… while we hold /usr/lib/….
        for (merged, legacy) in [
            ("/usr/lib/", "/lib/"),
            ("/usr/lib64/", "/lib64/"),
            ("/usr/bin/", "/bin/"),
            ("/usr/sbin/", "/sbin/"),
        ] {
            if let Some(rest) = resolved.strip_prefix(merged) {
                let r = self.owner_of(&format!("{legacy}{rest}"))?;
                if !r.is_empty() {
                    return Ok(r);
                }
            }
        }
        Ok(vec![])
    }

    fn owner_index(&self) -> anyhow::Result<&HashMap<String, Vec<String>>> {
        if let Some(i) = self.owners.get() {
            return Ok(i);
        }
        let mut index: HashMap<String, Vec<String>> = HashMap::new();
        let mut seen = BTreeSet::new();
        for p in self.packages.iter().filter(|p| p.has_files()) {
            let key = if self.by_name.get(&p.name).map(Vec::len).unwrap_or(0) > 1 {
                format!("{}:{}", p.name, p.architecture)
            } else {
                p.name.clone()
            };
            if !seen.insert(key.clone()) {
                continue;
            }
            // A package in a files state without a list is a broken database; say so.
            for f in self.files(&key)? {
                index.entry(f).or_default().push(key.clone());
            }
        }
        Ok(self.owners.get_or_init(|| index))
    }

    /// Resolve every symlink in `path` inside the root (absolute link targets are taken as
    /// inside the root, like a chroot would). Returns an absolute in-root path; components that
    /// do not exist are kept as they are.
    pub fn resolve(&self, path: &str) -> String {
        // A loop or an unreadable link leaves the path as written: dpkg would not find the
        // file through it either, and the callers report the file as missing.
        self.root
            .resolve(path, Missing::Keep)
            .map(|r| r.path.to_string_lossy().into_owned())
            .unwrap_or_else(|_| path.to_string())
    }

    /// Is `path` dropped at unpack time by a `path-exclude` in `<root>/etc/dpkg/dpkg.cfg.d/*`
    /// (and not brought back by a later `path-include`)? Ubuntu's container images exclude
    /// `/usr/share/doc/*` except copyright files, so such files are absent by design.
    pub fn is_path_excluded(&self, path: &str) -> bool {
        // dpkg's own reading (run-parts names, last filter wins, libc fnmatch). A configuration
        // file that cannot be read excludes nothing: the caller then reports the file as
        // missing, which fails closed.
        self.path_filters
            .get_or_init(|| PathFilters::load(&self.root).ok())
            .as_ref()
            .is_some_and(|f| f.is_excluded(path))
    }

    /// Directories the dynamic loader searches inside the root: `/etc/ld.so.conf` and its
    /// includes (one level of globbing), then the trusted default directories.
    pub fn library_search_dirs(&self) -> Vec<String> {
        let mut dirs = vec![];
        self.read_ld_conf("/etc/ld.so.conf", &mut dirs, 0);
        // Then the loader's trusted directories: the same list `loader::resolve` uses.
        for d in loader::default_dirs() {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        dirs
    }

    fn read_ld_conf(&self, file: &str, dirs: &mut Vec<String>, depth: usize) {
        if depth > 4 {
            return;
        }
        let Ok(text) = self.root.read_to_string(file, FileKind::Config) else {
            return;
        };
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(pattern) = line.strip_prefix("include") {
                let pattern = pattern.trim();
                let pattern = if pattern.starts_with('/') {
                    pattern.to_string()
                } else {
                    format!("/etc/{pattern}")
                };
                let (dir, file_glob) = match pattern.rsplit_once('/') {
                    Some((d, f)) => (if d.is_empty() { "/" } else { d }, f),
                    None => continue,
                };
                let mut matched: Vec<String> = self
                    .root
                    .read_dir_names(dir, MAX_CONFIG_DIR_ENTRIES)
                    .map(|names| {
                        names
                            .into_iter()
                            .filter(|n| fnmatch(file_glob, n))
                            .map(|n| format!("{}/{n}", dir.trim_end_matches('/')))
                            .collect()
                    })
                    .unwrap_or_default();
                matched.sort();
                for m in matched {
                    self.read_ld_conf(&m, dirs, depth + 1);
                }
            } else if line.starts_with('/') {
                let d = line.trim_end_matches('/').to_string();
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
    }

    /// The installed package that owns the file the loader would find for `soname` in
    /// `dirs` (searched in order; the first directory holding an owned file wins). Returns the
    /// in-root path found and its owners.
    pub fn find_library_owner(
        &self,
        soname: &str,
        dirs: &[String],
    ) -> anyhow::Result<Option<(String, Vec<String>)>> {
        for d in dirs {
            let candidate = format!("{}/{soname}", d.trim_end_matches('/'));
            if self.root.metadata(&candidate).is_err() {
                continue;
            }
            let owners = self.owner_of_resolved(&candidate)?;
            if !owners.is_empty() {
                return Ok(Some((candidate, owners)));
            }
        }
        Ok(None)
    }
}

fn split_arch(name: &str) -> (&str, Option<&str>) {
    match name.split_once(':') {
        Some((n, a)) if a != "any" => (n, Some(a)),
        Some((n, _)) => (n, None),
        None => (name, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn fixture() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(
            r,
            "var/lib/dpkg/status",
            "Package: hsa-rocr\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.18.0.70204-93~24.04\nDepends: libc6\nConffiles:\n /etc/hsa.conf 0123456789abcdef0123456789abcdef\n /etc/old.conf 0123456789abcdef0123456789abcdef obsolete\nDescription: x\n\nPackage: gone\nStatus: deinstall ok config-files\nArchitecture: amd64\nVersion: 1\n\nPackage: libc6\nStatus: install ok installed\nArchitecture: amd64\nMulti-Arch: same\nVersion: 2.36-9\n",
        );
        write(
            r,
            "var/lib/dpkg/info/hsa-rocr.list",
            "/.\n/opt\n/opt/rocm-7.2.4\n/opt/rocm-7.2.4/lib\n/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204\n/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1\n",
        );
        write(
            r,
            "var/lib/dpkg/info/hsa-rocr.md5sums",
            "d41d8cd98f00b204e9800998ecf8427e  opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204\n",
        );
        write(r, "var/lib/dpkg/info/hsa-rocr.postinst", "#!/bin/sh\n");
        write(
            r,
            "var/lib/dpkg/info/libc6:amd64.list",
            "/lib\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libc.so.6\n",
        );
        write(r, "usr/lib/x86_64-linux-gnu/libc.so.6", "elf");
        std::os::unix::fs::symlink("usr/lib", r.join("lib")).unwrap();
        write(r, "etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
        write(r, "etc/ld.so.conf.d/rocm.conf", "/opt/rocm-7.2.4/lib\n");
        write(
            r,
            "etc/dpkg/dpkg.cfg.d/excludes",
            "path-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n",
        );
        d
    }

    #[test]
    fn reads_status_lists_md5sums_conffiles_scripts() {
        let d = fixture();
        let db = DpkgDb::open(&Root::new(d.path())).unwrap();
        assert_eq!(db.packages().len(), 3);
        let hsa = db.installed("hsa-rocr").unwrap();
        assert_eq!(hsa.version, "1.18.0.70204-93~24.04");
        assert!(db.installed("gone").is_none());
        assert_eq!(db.files("hsa-rocr").unwrap().len(), 5);
        let sums = db.md5sums("hsa-rocr").unwrap();
        assert_eq!(
            sums["/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204"],
            "d41d8cd98f00b204e9800998ecf8427e"
        );
        let conf = db.conffiles("hsa-rocr");
        assert_eq!(conf.len(), 2);
        assert_eq!(conf[1].flags, vec!["obsolete".to_string()]);
        assert!(db
            .maintainer_script("hsa-rocr", "postinst")
            .unwrap()
            .is_some());
        assert!(db.maintainer_script("hsa-rocr", "prerm").unwrap().is_none());
        // Multi-Arch: same list name.
        assert_eq!(db.files("libc6").unwrap().len(), 3);
    }

    #[test]
    fn owners_and_loader_search() {
        let d = fixture();
        let db = DpkgDb::open(&Root::new(d.path())).unwrap();
        assert_eq!(
            db.owner_of("/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1")
                .unwrap(),
            vec!["hsa-rocr".to_string()]
        );
        assert!(db.owner_of("/nope").unwrap().is_empty());
        assert_eq!(
            db.owner_of_resolved("/usr/lib/x86_64-linux-gnu/libc.so.6")
                .unwrap(),
            vec!["libc6".to_string()]
        );
        let dirs = db.library_search_dirs();
        assert_eq!(dirs[0], "/opt/rocm-7.2.4/lib");
        let (path, owners) = db.find_library_owner("libc.so.6", &dirs).unwrap().unwrap();
        assert_eq!(owners, vec!["libc6".to_string()]);
        assert!(path.ends_with("/libc.so.6"));
        assert!(db
            .find_library_owner("libnope.so.1", &dirs)
            .unwrap()
            .is_none());
    }

    #[test]
    fn path_excludes_follow_dpkg_order() {
        let d = fixture();
        let db = DpkgDb::open(&Root::new(d.path())).unwrap();
        assert!(db.is_path_excluded("/usr/share/doc/hsa-rocr/changelog.gz"));
        assert!(!db.is_path_excluded("/usr/share/doc/hsa-rocr/copyright"));
        assert!(!db.is_path_excluded("/opt/rocm-7.2.4/lib/libx.so"));
    }

    #[test]
    fn missing_status_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let e = DpkgDb::open(&Root::new(d.path())).unwrap_err().to_string();
        assert!(e.contains("dpkg status file"), "{e}");
    }

    #[test]
    fn resolves_merged_usr_links() {
        let d = fixture();
        assert_eq!(
            DpkgDb::open(&Root::new(d.path()))
                .unwrap()
                .resolve("/lib/x86_64-linux-gnu/libc.so.6"),
            "/usr/lib/x86_64-linux-gnu/libc.so.6"
        );
    }

    #[test]
    fn md5sums_parser_rejects_garbage() {
        assert!(parse_md5sums("zz  a\n").is_err());
        for climbing in ["../../etc/hostname", "a/../../b", "a/./b", "/a//b"] {
            let e = parse_md5sums(&format!("d41d8cd98f00b204e9800998ecf8427e  {climbing}\n"))
                .unwrap_err();
            assert!(e.to_string().contains("refused"), "{climbing}: {e}");
        }
        let m = parse_md5sums("D41D8CD98F00B204E9800998ECF8427E  a/b\n").unwrap();
        assert_eq!(m["/a/b"], "d41d8cd98f00b204e9800998ecf8427e");
    }
}
