//! The package step, `rocm-pin package` end to end: load the staging and the stock facts, ask
//! the planner (`plan::plan`, which decides and writes nothing) for the plan, turn each
//! package's plan into the .deb writer's content model (files streamed from the staging, the
//! rebuilt libraries stripped into a work directory first), add the provenance marker hashed
//! from that content, build the .debs. All work happens in a temporary directory; `--out`
//! receives the finished .debs only at the very end, so a refusal leaves nothing behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::deb::{
    BuildOptions, BuildSummary, Compression, ControlFile, EntryData, FileData, PackageContent,
    PayloadEntry,
};
use crate::host::dpkgdb::DpkgDb;
use crate::host::root::Root;
use crate::ops::plan::refused;
use crate::ops::plan::staging::{self, CommitOverride};
use crate::ops::plan::stock::{self, sha256_file, StockPackage};
use crate::ops::plan::{
    discover_in_db, discover_in_packages, plan, Content, PackagePlan, PlanOptions, ReplacementPlan,
    Role, Target,
};
use crate::progress::Listener;
use crate::rocm::{self, Half};

/// Where the stock facts come from.
#[derive(Debug, Clone)]
pub enum StockInput {
    /// The dpkg database (and installed files) under this root.
    Root(Root),
    /// [`StockInput::Root`] on a host patched in place (`rocm-pin adopt --no-rollback`): the
    /// stock runtime library files of the families the staging rebuilds may differ from dpkg's
    /// md5sums (they are replaced, never carried).
    PatchedInPlace(Root),
    /// Stock .debs; NEEDED entries are resolved against the dpkg database under `target_root`.
    Debs {
        debs: Vec<PathBuf>,
        target_root: Root,
    },
}

/// The libraries to package.
#[derive(Debug, Clone)]
pub enum StagingInput {
    /// A staging directory: `rocm-pin build`'s output, or a `cmake --install` tree with the
    /// commit facts given (see [`staging::load`]).
    Dir {
        dir: PathBuf,
        commit: CommitOverride,
    },
    /// A staging already read (`rocm-pin adopt`'s, from the host: [`staging::adopted`]).
    Read(staging::Staging),
    /// The .debs a library's own CPack build made (`rccl_<ver>_amd64.deb`, `rccl-dev_….deb`):
    /// their family libraries become the staging (`super::family_stock::staging_from_debs`).
    FromDebs {
        debs: Vec<PathBuf>,
        commit: CommitOverride,
    },
}

#[derive(Debug, Clone)]
pub struct PackageRequest {
    pub staging: StagingInput,
    pub stock: StockInput,
    /// The real versioned prefix; None = resolve `/opt/rocm` in the stock root, else the prefix
    /// the stock .debs install into.
    pub prefix: Option<String>,
    pub out: PathBuf,
    pub compression: Compression,
    /// Compressor threads; None = the CPUs this process may use.
    pub threads: Option<u32>,
    /// None = the commit time (byte-identical rebuilds from the same inputs).
    pub source_date_epoch: Option<u64>,
    pub options: PlanOptions,
}

/// Per package, what went in, for the report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PackageReport {
    pub package: String,
    pub version: String,
    pub stock_name: String,
    pub stock_version: String,
    pub deb: PathBuf,
    /// role word → paths (rebuilt, aliased, linked, carried, vendored, generated).
    pub files: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct PackageOutcome {
    pub plan: PackagePlan,
    pub debs: Vec<BuildSummary>,
    pub reports: Vec<PackageReport>,
}

pub fn package(req: &PackageRequest, listener: &dyn Listener) -> anyhow::Result<PackageOutcome> {
    let work = work_dir_beside(&req.out)?;
    let staging = match &req.staging {
        StagingInput::Dir { dir, commit } => {
            crate::progress::step(listener, "read staging", || staging::load(dir, commit))?
        }
        StagingInput::Read(staging) => staging.clone(),
        StagingInput::FromDebs { debs, commit } => {
            crate::progress::step(listener, "read custom .debs", || {
                let family = req.options.family;
                super::family_stock::staging_from_debs(debs, commit, family, work.path(), listener)
            })?
        }
    };
    let plan = plan_packages(req, &staging, work.path(), listener)?;

    let built = work.path().join("debs");
    std::fs::create_dir_all(&built)?;
    let stripped = work.path().join("stripped");
    let mut contents = vec![];
    for p in &plan.packages {
        let content = crate::progress::step(listener, &format!("prepare {}", p.package), || {
            package_content(p, &stripped.join(&p.package))
        })?;
        contents.push(content);
    }
    add_marker(&plan, &mut contents, staging.adopted_source())?;

    let epoch = req
        .source_date_epoch
        .unwrap_or_else(|| u64::try_from(plan.commit_time).unwrap_or(0));
    let opts = BuildOptions {
        compression: req.compression,
        level: None,
        threads: req.threads,
        source_date_epoch: Some(epoch),
        read_ahead: None,
    };
    let mut debs = vec![];
    let mut reports = vec![];
    for (p, content) in plan.packages.iter().zip(&contents) {
        let file = deb_file_name(p);
        let out = built.join(&file);
        let summary = crate::progress::step(listener, &format!("build {file}"), || {
            // The writer's own sub-steps would name the temporary path; this step reports it.
            crate::deb::build_package(content, &out, &opts, &crate::progress::Silent)
        })?;
        let files = files_by_role(p);
        announce_package(p, &files, listener);
        reports.push(PackageReport {
            package: p.package.clone(),
            version: p.version.to_string(),
            stock_name: p.stock_name.clone(),
            stock_version: p.stock_version.to_string(),
            deb: req.out.join(&file),
            files,
        });
        debs.push(summary);
    }

    // Everything succeeded: move the finished .debs into --out.
    deliver_debs(&mut debs, &req.out, listener)?;
    Ok(PackageOutcome {
        plan,
        debs,
        reports,
    })
}

/// A temporary work directory next to `out` (same filesystem, so the finished .debs are
/// renamed into place rather than copied).
fn work_dir_beside(out: &Path) -> anyhow::Result<tempfile::TempDir> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    tempfile::Builder::new()
        .prefix(".rocm-pin-package-")
        .tempdir_in(parent)
        .with_context(|| format!("cannot create a work directory in {}", parent.display()))
}

/// Read the stock packages (reporting each) and plan the replacements for `staging`.
fn plan_packages(
    req: &PackageRequest,
    staging: &staging::Staging,
    work: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<PackagePlan> {
    let (layout, stock, target_db) =
        crate::progress::step(listener, "read stock packages", || load_stock(req, work))?;
    if let StagingInput::FromDebs { debs, .. } = &req.staging {
        super::family_stock::check_from_debs(debs, staging, &stock, &layout, req.options.family)?;
    }
    for (half, s) in &stock {
        listener.info(&format!(
            "stock {:?}: {} {} ({}, {} paths)",
            half,
            s.name,
            s.version,
            s.origin,
            s.files.len()
        ));
    }
    let target = Target {
        db: target_db.as_ref().ok(),
        db_error: target_db.as_ref().err().cloned(),
        layout,
    };
    let plan = crate::progress::step(listener, "plan replacements", || {
        plan(staging, &stock, &target, &req.options)
    })?;
    for w in &plan.warnings {
        listener.warn(w);
    }
    Ok(plan)
}

/// `<package>_<version without epoch>_<architecture>.deb`, Debian's file name for a binary
/// package.
fn deb_file_name(p: &ReplacementPlan) -> String {
    format!(
        "{}_{}_{}.deb",
        p.package,
        p.version.without_epoch(),
        p.architecture
    )
}

/// The package's files (directories left out) as report lines, grouped by role word.
fn files_by_role(p: &ReplacementPlan) -> BTreeMap<String, Vec<String>> {
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in p.files.iter().filter(|f| f.role != Role::Dir) {
        let line = match (&f.content, &f.from) {
            (Content::HardLink(to), _) => format!("{} = {}", f.path, to),
            (Content::Symlink(t), _) => format!("{} -> {}", f.path, t),
            (_, Some(from)) if f.role != Role::Carried => format!("{} (from {from})", f.path),
            _ => f.path.clone(),
        };
        files
            .entry(f.role.word().to_string())
            .or_default()
            .push(line);
    }
    files
}

/// Tell the listener what went into the package, role by role, and which stock maintainer
/// scripts were dropped.
fn announce_package(
    p: &ReplacementPlan,
    files: &BTreeMap<String, Vec<String>>,
    listener: &dyn Listener,
) {
    for role in [
        Role::Rebuilt,
        Role::Alias,
        Role::Link,
        Role::Vendored,
        Role::Carried,
        Role::Generated,
    ] {
        for l in files.get(role.word()).into_iter().flatten() {
            listener.info(&format!("{}: {} {l}", p.package, role.word()));
        }
    }
    if !p.stock_scripts_dropped.is_empty() {
        listener.info(&format!(
            "{}: stock maintainer scripts of {} not carried (ours replace them): {}",
            p.package,
            p.stock_name,
            p.stock_scripts_dropped.join(", ")
        ));
    }
}

/// Move the finished .debs into `out` (copy to a hidden temporary and rename when `out` is on
/// another filesystem, so a reader never sees half a .deb), updating each summary's path.
fn deliver_debs(
    debs: &mut [BuildSummary],
    out: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create --out {}", out.display()))?;
    for d in debs.iter_mut() {
        let name = d
            .output
            .file_name()
            .ok_or_else(|| refused("internal: deb without a name"))?
            .to_owned();
        let dest = out.join(&name);
        if std::fs::rename(&d.output, &dest).is_err() {
            let tmp = out.join(format!(".{}.tmp", name.to_string_lossy()));
            std::fs::copy(&d.output, &tmp)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
            std::fs::rename(&tmp, &dest)
                .with_context(|| format!("cannot write {}", dest.display()))?;
        }
        d.output = dest;
        listener.info(&format!(
            "wrote {} ({} entries, {} bytes)",
            d.output.display(),
            d.entries,
            d.size
        ));
    }
    Ok(())
}

/// The layout, the stock packages, and the target's dpkg database or why it could not be read.
type LoadedStock = (
    rocm::RuntimeLayout,
    Vec<(Half, StockPackage)>,
    Result<DpkgDb, String>,
);

fn load_stock(req: &PackageRequest, work: &Path) -> anyhow::Result<LoadedStock> {
    let family = req.options.family;
    match &req.stock {
        StockInput::Root(root) if family.name == rocm::families::RUNTIME.name => {
            match super::package_update::kept_stock_of_running_pin(root)? {
                // A host that runs ours: the stock it replaced, as install kept it.
                Some(debs) => load_stock_debs(req, work, &debs, root),
                None => load_stock_installed(req, root),
            }
        }
        StockInput::Root(root) | StockInput::PatchedInPlace(root) => {
            load_stock_installed(req, root)
        }
        StockInput::Debs { debs, target_root } => load_stock_debs(req, work, debs, target_root),
    }
}

/// The stock facts from the dpkg database and the installed files under `root`.
fn load_stock_installed(req: &PackageRequest, root: &Root) -> anyhow::Result<LoadedStock> {
    let family = req.options.family;
    let db = DpkgDb::open(root)?;
    let layout = if family.name == rocm::families::RUNTIME.name {
        layout_in_root(root, req.prefix.as_deref())?
    } else {
        super::family_stock::layout_in_root(root, &db, req.prefix.as_deref(), family)?
    };
    let found = discover_in_db(&db, &layout, family)?;
    let mut stock = vec![];
    let in_place = matches!(req.stock, StockInput::PatchedInPlace(_));
    let replaced = |path: &str| {
        in_place
            && family
                .library_in(&layout.lib_dir, path)
                .is_some_and(|f| f.required)
    };
    for (half, name) in found {
        stock.push((half, stock::from_dpkg_db_allowing(&db, &name, &replaced)?));
    }
    Ok((layout, stock, Ok(db)))
}

/// The stock facts from stock .debs; NEEDED entries resolve against `target_root`'s database.
fn load_stock_debs(
    req: &PackageRequest,
    work: &Path,
    debs: &[PathBuf],
    target_root: &Root,
) -> anyhow::Result<LoadedStock> {
    let family = req.options.family;
    if debs.is_empty() {
        return Err(refused("--stock-deb needs at least one .deb"));
    }
    let mut pkgs = vec![];
    for (i, deb) in debs.iter().enumerate() {
        let dir = work.join("stock").join(i.to_string());
        std::fs::create_dir_all(&dir)?;
        pkgs.push(stock::from_deb(deb, &dir)?);
    }
    let layout = match &req.prefix {
        Some(p) if rocm::is_multiarch_lib_dir(p.trim_end_matches('/')) => {
            rocm::RuntimeLayout::multiarch(p)
        }
        Some(p) => versioned_prefix_layout(p)?,
        None => layout_of_debs(&pkgs, family)?,
    };
    let found = discover_in_packages(&pkgs, &layout, family)?;
    let mut stock = vec![];
    for (half, name) in found {
        let idx = pkgs
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| refused(format!("internal: {name} vanished")))?;
        stock.push((half, pkgs.remove(idx)));
    }
    let db = DpkgDb::open(target_root).map_err(|e| format!("{e:#}"));
    Ok((layout, stock, db))
}

/// Where the stock runtime is in a root: `--prefix` (a versioned prefix, or a multiarch
/// library directory for Debian's flavour); else `/opt/rocm` resolved (AMD's flavour); else,
/// with no `/opt/rocm` at all, the one multiarch directory where Debian's runtime packages put
/// their libraries.
fn layout_in_root(root: &Root, asked: Option<&str>) -> anyhow::Result<rocm::RuntimeLayout> {
    if let Some(p) = asked.filter(|p| rocm::is_multiarch_lib_dir(p.trim_end_matches('/'))) {
        return Ok(rocm::RuntimeLayout::multiarch(p));
    }
    let path = asked.unwrap_or(rocm::DEFAULT_ROCM_PATH);
    match rocm::resolve_rocm_path(root, Path::new(path)) {
        // Paths always go into the real versioned prefix, never through a symlink.
        Ok((resolved, _hops)) => Ok(rocm::RuntimeLayout::versioned_prefix(
            &resolved.display().to_string(),
        )),
        Err(e) => {
            if asked.is_none() {
                if let Some(layout) = multiarch_layout_in_root(root)? {
                    return Ok(layout);
                }
            }
            Err(e.context(no_rocm_prefix_hint(root, asked)))
        }
    }
}

/// The multiarch directory of the one complete Debian-flavour runtime in `root` (discovery by
/// SONAME through the dpkg database); None when there is none. Several are refused: the
/// user says which with `--prefix /usr/lib/<triplet>`.
fn multiarch_layout_in_root(root: &Root) -> anyhow::Result<Option<rocm::RuntimeLayout>> {
    let entries = crate::rocm::read_status(root)?;
    let found = crate::rocm::stock_runtime::discover(root, &entries);
    let mut dirs: Vec<String> = found
        .runtimes
        .iter()
        .filter(|r| r.flavour == rocm::StockFlavour::Debian && r.is_complete())
        .flat_map(|r| r.library_dirs.iter().cloned())
        .filter(|d| rocm::is_multiarch_lib_dir(d))
        .collect();
    dirs.sort();
    dirs.dedup();
    match dirs.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(rocm::RuntimeLayout::multiarch(one))),
        many => Err(refused(format!(
            "Debian's ROCm runtime is installed in several library directories under {} ({}); give --prefix with the one to replace",
            root.display(),
            many.join(", ")
        ))),
    }
}

/// `--prefix` for stock .debs of AMD's flavour: the real versioned prefix.
fn versioned_prefix_layout(prefix: &str) -> anyhow::Result<rocm::RuntimeLayout> {
    let prefix = prefix.trim_end_matches('/');
    if prefix.ends_with("/opt/rocm") {
        return Err(refused(format!("--prefix {prefix} is the /opt/rocm symlink; give the real versioned prefix (e.g. /opt/rocm-7.2.4)")));
    }
    Ok(rocm::RuntimeLayout::versioned_prefix(prefix))
}

/// The layout the stock .debs install into: the one `/opt/rocm-*` prefix (AMD's flavour) or
/// the one multiarch directory (Debian's) holding runtime libraries.
fn layout_of_debs(
    pkgs: &[StockPackage],
    family: &'static rocm::PinnedFamily,
) -> anyhow::Result<rocm::RuntimeLayout> {
    let mut found: Vec<rocm::RuntimeLayout> = pkgs
        .iter()
        .flat_map(|p| p.files.iter())
        .filter_map(|f| super::family_stock::layout_of_library_path(family, &f.path))
        .collect();
    found.sort_by(|a, b| a.lib_dir.cmp(&b.lib_dir));
    found.dedup();
    // A layout holding both halves wins over one holding a stray half (a decoy such as a
    // Debian `libhsa-runtime64-1` beside AMD's pair).
    let complete: Vec<&rocm::RuntimeLayout> = found
        .iter()
        .filter(|l| discover_in_packages(pkgs, l, family).is_ok())
        .collect();
    if let [one] = complete.as_slice() {
        return versioned_or_multiarch(one);
    }
    match found.as_slice() {
        [one] => versioned_or_multiarch(one),
        [] if family.name != rocm::families::RUNTIME.name => {
            Err(super::family_stock::none_in_stock_debs(family))
        }
        [] => Err(refused("none of the stock .debs installs a ROCm runtime library into /opt/rocm-*/lib; give --prefix".to_string())),
        many => Err(refused(format!(
            "the stock .debs install runtime libraries into several prefixes ({}); give --prefix",
            many.iter().map(|l| if l.flavour == rocm::StockFlavour::Amd { l.prefix.clone() } else { l.lib_dir.clone() }).collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn versioned_or_multiarch(layout: &rocm::RuntimeLayout) -> anyhow::Result<rocm::RuntimeLayout> {
    match layout.flavour {
        rocm::StockFlavour::Amd => versioned_prefix_layout(&layout.prefix),
        rocm::StockFlavour::Debian => Ok(layout.clone()),
    }
}

/// What to say when the stock packages are to be read from a root that has no ROCm where we
/// looked: the two ways forward differ by whether `--prefix` was given.
fn no_rocm_prefix_hint(root: &Root, prefix: Option<&str>) -> String {
    let stock_debs = format!(
        "--stock-deb {}_*.deb {}_*.deb (the stock packages the replacements are built against, e.g. \
         from `apt-get download {} {}` with AMD's ROCm repository)",
        rocm::stock_base_name(Half::Hsa),
        rocm::stock_base_name(Half::Hip),
        rocm::stock_base_name(Half::Hsa),
        rocm::stock_base_name(Half::Hip),
    );
    match prefix {
        None => format!(
            "no ROCm installation under {}: {} does not resolve. Give the stock packages with {stock_debs}, \
             or --stock-root DIR for a ROCm image tree; on a ROCm host whose {} link is missing, give \
             --prefix {}",
            root.display(),
            rocm::DEFAULT_ROCM_PATH,
            rocm::DEFAULT_ROCM_PATH,
            rocm::versioned_prefix("X.Y.Z"),
        ),
        Some(p) => format!(
            "--prefix {p} does not exist under {}, so there are no installed stock packages to read there. \
             Give the stock packages with {stock_debs} instead, or --stock-root DIR for a ROCm image tree",
            root.display()
        ),
    }
}

/// The package's content for the .deb writer, straight from its plan: staged files are read
/// from where the staging has them (a stripped copy under `stripped` when the plan strips
/// them); the marker is added by [`add_marker`] once every file's bytes are known.
fn package_content(p: &ReplacementPlan, stripped: &Path) -> anyhow::Result<PackageContent> {
    let mut payload = vec![];
    for f in &p.files {
        let entry = match &f.content {
            Content::Dir => PayloadEntry::dir(f.path.as_str(), 0o755),
            Content::Copy {
                source,
                mode,
                strip,
            } => {
                let data = if *strip {
                    let dst = stripped.join(f.path.trim_start_matches('/'));
                    if let Some(parent) = dst.parent() {
                        std::fs::create_dir_all(parent)
                            .with_context(|| format!("cannot create {}", parent.display()))?;
                    }
                    strip_debug(source, &dst)?;
                    FileData::Path(dst)
                } else {
                    FileData::Path(source.clone())
                };
                PayloadEntry::file(f.path.as_str(), data, *mode)
            }
            Content::Symlink(target) => PayloadEntry::symlink(f.path.as_str(), target.as_str()),
            Content::Bytes { data, mode } => {
                PayloadEntry::file(f.path.as_str(), FileData::Bytes(data.clone()), *mode)
            }
            Content::HardLink(to) => PayloadEntry::hard_link(f.path.as_str(), to.as_str()),
            Content::Marker => continue,
        };
        payload.push(entry);
    }
    let mut control_files = vec![];
    let mut conffiles = p.conffiles.clone();
    conffiles.sort();
    conffiles.dedup();
    if !conffiles.is_empty() {
        control_files.push(control_file(
            "conffiles",
            conffiles.join("\n") + "\n",
            0o644,
        ));
    }
    for (name, text) in &p.scripts {
        // Maintainer scripts are executable; triggers, shlibs and symbols are data.
        let data = ["triggers", "shlibs", "symbols"].contains(&name.as_str());
        let mode = if data { 0o644 } else { 0o755 };
        control_files.push(control_file(name, text.clone(), mode));
    }
    Ok(PackageContent {
        control: p.control.clone(),
        control_dir_mode: 0o755,
        control_files,
        conffiles,
        payload,
    })
}

fn control_file(name: &str, text: String, mode: u32) -> ControlFile {
    ControlFile {
        name: name.to_string(),
        data: FileData::Bytes(text.into_bytes()),
        mode,
        mtime: None,
    }
}

/// Strip debug information and the static symbol table as dh_strip does for shared libraries
/// (`--strip-unneeded`); the dynamic symbol table, and with it the backport symbol, stays.
fn strip_debug(src: &Path, dst: &Path) -> anyhow::Result<()> {
    let out = Command::new("objcopy")
        .arg("--strip-unneeded")
        .arg("--remove-section=.comment")
        .arg("--remove-section=.note")
        .arg(src)
        .arg(dst)
        .output()
        .map_err(|e| {
            refused(format!(
                "cannot run objcopy to strip {} ({e}); install binutils or pass --no-strip",
                src.display()
            ))
        })?;
    if !out.status.success() {
        return Err(refused(format!(
            "objcopy --strip-unneeded {} failed: {}",
            src.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // Stripping must never change what the loader and callers see (SONAME, NEEDED, exported
    // symbols such as the backport symbol): check the stripped copy against the original rather
    // than trusting the objcopy in PATH.
    let before = crate::elf::read_elf(src)?;
    let after = crate::elf::read_elf(dst)?;
    if before.soname != after.soname
        || before.needed != after.needed
        || before.exports != after.exports
    {
        return Err(refused(format!(
            "stripping {} changed its dynamic interface (SONAME, NEEDED or exported symbols); \
             check the objcopy in PATH, or pass --no-strip",
            src.display()
        )));
    }
    Ok(())
}

/// The sha256 of the file at `path` in `content` (a hard link: of the file it links to).
fn sha256_in(content: &PackageContent, path: &str) -> anyhow::Result<String> {
    let mut at = path;
    for _ in 0..=content.payload.len() {
        let entry = content
            .payload
            .iter()
            .find(|e| e.path == at)
            .ok_or_else(|| refused(format!("internal: {path} is not in the package")))?;
        match &entry.data {
            EntryData::File(FileData::Path(p)) => return sha256_file(p),
            EntryData::File(FileData::Bytes(b)) => return Ok(hex::encode(Sha256::digest(b))),
            EntryData::HardLink(to) => at = to,
            _ => {
                return Err(refused(format!(
                    "internal: {path} is not a regular file of the package"
                )))
            }
        }
    }
    Err(refused(format!(
        "internal: {path} is a cycle of hard links"
    )))
}

/// The provenance marker `<prefix>/.info/rocm-pin.json`, hashed from the packages' contents,
/// added to the HSA package (where the plan put it). `adopted_source`: what an adoption took
/// its libraries from (recorded; a built pair's marker has no source).
fn add_marker(
    plan: &PackagePlan,
    contents: &mut [PackageContent],
    adopted_source: Option<&str>,
) -> anyhow::Result<()> {
    let mut files = BTreeMap::new();
    let mut libraries = vec![];
    let mut marker_at = None;
    for (i, (p, content)) in plan.packages.iter().zip(contents.iter()).enumerate() {
        for f in &p.files {
            match f.content {
                Content::Copy { .. } | Content::HardLink(_) | Content::Bytes { .. } => {
                    files.insert(f.path.clone(), sha256_in(content, &f.path)?);
                }
                Content::Marker => marker_at = Some((i, f.path.clone())),
                _ => {}
            }
        }
        for l in &p.libraries {
            libraries.push(rocm::MarkerLibrary {
                path: l.path.clone(),
                soname: l.soname.clone(),
                sha256: sha256_in(content, &l.path)?,
                aliases: l.aliases.clone(),
                package: p.package.clone(),
            });
        }
    }
    let marker = rocm::Marker {
        commit: plan.commit.clone(),
        commit_time: plan.commit_time,
        suffix: plan.suffix.clone(),
        prefix: plan.prefix.clone(),
        replaced: plan.marker_replaced(),
        libraries,
        files,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        patches: plan.patches.clone(),
        backport_check_skipped: plan.backport_check_skipped,
        missing_symbols: plan.missing_symbols.clone(),
        // Only an adoption is recorded: a built pair's marker stays byte-identical to before.
        source: adopted_source.map(str::to_string),
    };
    let (i, at) =
        marker_at.ok_or_else(|| refused("internal: no marker planned in the HSA package"))?;
    let mut json = serde_json::to_vec_pretty(&marker)?;
    json.push(b'\n');
    contents[i]
        .payload
        .push(PayloadEntry::file(at, FileData::Bytes(json), 0o644));
    Ok(())
}
