//! Stock facts + staging → `ReplacementPlan` (files, aliases, relations, scripts): what each
//! replacement package is, decided without writing anything. (docs/design.md §4 is the measured
//! shape.) Turning plans into .debs is the package step, `crate::ops::package`.
//!
//! - `stock`: stock package facts from the dpkg database or from stock .debs (md5-checked).
//! - [`staging`]: the rebuilt libraries and their ELF facts.
//! - this file: discovery of the stock packages to replace and the plan for each replacement,
//!   a pipeline over `checks`, `families` and `vendored`.
//! - [`templates`]: maintainer scripts, pin file and documents rendered from debian-templates/.

mod abi;
mod checks;
mod error;
mod families;
mod library_info;
mod model;
mod owners;
pub mod staging;
pub(crate) mod stock;
pub mod templates;
mod vendored;

pub(crate) use error::refused;
pub use error::PlanError;

use std::collections::{BTreeMap, BTreeSet};

use crate::deb::control::{format_relations, parse_relations, Relation, RelationOp, Relations};
use crate::deb::version::Version;
use crate::deb::Paragraph;
use crate::host::dpkgdb::DpkgDb;
use crate::host::layout::StateLayout;
use crate::rocm::{self, Half};

pub use model::{
    Content, PackagePlan, PlanOptions, PlannedFile, PlannedLibrary, ReplacementPlan, Role, Target,
};
pub use staging::{CommitOverride, StagedLibrary, Staging};
pub use stock::{StockFile, StockKind, StockPackage};

/// Relationship fields carried from the stock control, in the order we write them.
pub const RELATION_FIELDS: &[&str] = &[
    "Pre-Depends",
    "Depends",
    "Recommends",
    "Suggests",
    "Enhances",
    "Breaks",
    "Conflicts",
    "Replaces",
    "Provides",
];
/// Fields whose references to a replaced stock package are remapped to our package.
const DEPENDENCY_FIELDS: &[&str] = &["Pre-Depends", "Depends", "Recommends", "Suggests"];

/// Our version: `<stock version>+pin<commit time>.g<short commit>`. Sorts above the stock
/// version, and a later commit time above an earlier one (the number is compared numerically).
pub fn replacement_version(stock_version: &Version, commit_time: i64, commit: &str) -> Version {
    let short: String = commit.chars().take(7).collect();
    // A valid stock version plus `+pin<digits>.g<hex>` is valid; the commit is checked hex.
    let mut v = stock_version.clone();
    let tail = format!("+pin{commit_time}.g{short}");
    if v.revision.is_empty() {
        v.upstream.push_str(&tail);
    } else {
        v.revision.push_str(&tail);
    }
    v
}

/// The family of a runtime library `path` that makes its owner a stock runtime package: any
/// family member directly in `lib_dir` except the bare development link (`libamdhip64.so`).
/// Debian's -dev packages (`libamdhip64-dev`, `libhsa-runtime-dev`) own only that link next to
/// the runtime; they depend on the runtime with `=` and stay installed, never replaced.
fn runtime_owner_family(
    family: &'static rocm::PinnedFamily,
    lib_dir: &str,
    path: &str,
) -> Option<&'static rocm::LibraryFamily> {
    if path.ends_with(".so") {
        return None;
    }
    family.library_in(lib_dir, path)
}

/// The library-directory discovery: which installed packages own a runtime library of a staged
/// family directly in the layout's library directory (`<prefix>/lib/`, or the multiarch
/// directory). Returns (half, package name) sorted HSA first.
pub fn discover_in_db(
    db: &DpkgDb,
    layout: &rocm::RuntimeLayout,
    family: &'static rocm::PinnedFamily,
) -> anyhow::Result<Vec<(Half, String)>> {
    let mut found: BTreeMap<Half, BTreeSet<String>> = BTreeMap::new();
    for p in db.packages().iter().filter(|p| p.has_files()) {
        let key = if db
            .packages()
            .iter()
            .filter(|q| q.name == p.name && q.has_files())
            .count()
            > 1
        {
            format!("{}:{}", p.name, p.architecture)
        } else {
            p.name.clone()
        };
        for f in db.files(&key)? {
            if let Some(fam) = runtime_owner_family(family, &layout.lib_dir, &f) {
                if !p.is_installed() {
                    return Err(refused(format!("stock package {} owns {f} but is in state `{}`, not installed; finish it first (dpkg --configure -a)", p.name, p.state)));
                }
                found.entry(fam.half).or_default().insert(key.clone());
            }
        }
    }
    collect_halves(
        found,
        layout,
        &format!("the dpkg database under {}", db.root().display()),
        family,
    )
}

/// The same rule over stock packages already loaded (from .debs).
pub fn discover_in_packages(
    pkgs: &[StockPackage],
    layout: &rocm::RuntimeLayout,
    family: &'static rocm::PinnedFamily,
) -> anyhow::Result<Vec<(Half, String)>> {
    let mut found: BTreeMap<Half, BTreeSet<String>> = BTreeMap::new();
    for p in pkgs {
        for f in &p.files {
            if let Some(fam) = runtime_owner_family(family, &layout.lib_dir, &f.path) {
                found.entry(fam.half).or_default().insert(p.name.clone());
            }
        }
    }
    collect_halves(found, layout, "the given stock .debs", family)
}

/// The owners found, HSA first. AMD's flavour has one package per half; Debian's one per
/// library (HIP: libamdhip64-N, libhiprtcN, libhiprtc-builtinsN), all replaced together.
fn collect_halves(
    found: BTreeMap<Half, BTreeSet<String>>,
    layout: &rocm::RuntimeLayout,
    where_: &str,
    family: &'static rocm::PinnedFamily,
) -> anyhow::Result<Vec<(Half, String)>> {
    if family.name != rocm::families::RUNTIME.name {
        return owners::collect_parts(found, layout, where_, family);
    }
    let prefix = layout
        .lib_dir
        .strip_suffix("/lib")
        .unwrap_or(&layout.lib_dir);
    if layout.one_package_per_library() {
        return collect_per_library(found, &layout.lib_dir, where_);
    }
    if found.is_empty() {
        return Err(refused(format!(
            "no stock packages own a ROCm runtime library in {prefix}/lib/ in {where_}; \
             check --prefix (the real versioned prefix, e.g. {}) and that the stock runtime is installed",
            crate::rocm::versioned_prefix(crate::rocm::TARGET_ROCM_VERSION)
        )));
    }
    let mut out = vec![];
    for half in [Half::Hsa, Half::Hip] {
        match found.get(&half) {
            None => {
                let have: Vec<&String> = found.values().flatten().collect();
                return Err(refused(format!("only half of the runtime pair found in {prefix}/lib/ ({where_}): {} present, but no package owns the {} libraries; \
                     replacing one half alone would mix a patched and a stock runtime", have.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "), rocm::stock_base_name(half))));
            }
            Some(names) if names.len() > 1 => {
                return Err(refused(format!(
                    "several packages own {} libraries in {prefix}/lib/: {}; expected one",
                    rocm::stock_base_name(half),
                    names.iter().cloned().collect::<Vec<_>>().join(", ")
                )))
            }
            Some(names) => out.push((half, names.iter().next().cloned().unwrap_or_default())),
        }
    }
    for (half, names) in &found {
        if names
            .iter()
            .filter(|n| out.iter().any(|(_, o)| o == *n))
            .count()
            == names.len()
        {
            continue;
        }
        return Err(refused(format!(
            "unexpected owners for {half:?}: {names:?}"
        )));
    }
    let hsa = &out[0].1;
    if out[1].1 == *hsa {
        return Err(refused(format!("package {hsa} owns both HSA and HIP runtime libraries in {prefix}/lib/; refusing to guess how to split it")));
    }
    Ok(out)
}

/// [`collect_halves`] for a flavour with one package per library: every owner of each half,
/// HSA first; a package owning libraries of both halves is refused.
fn collect_per_library(
    found: BTreeMap<Half, BTreeSet<String>>,
    lib_dir: &str,
    where_: &str,
) -> anyhow::Result<Vec<(Half, String)>> {
    let names = |h: Half| found.get(&h).cloned().unwrap_or_default();
    let (hsa, hip) = (names(Half::Hsa), names(Half::Hip));
    if hsa.is_empty() || hip.is_empty() {
        let (have, missing) = if hsa.is_empty() {
            (&hip, "HSA (libhsa-runtime64)")
        } else {
            (&hsa, "HIP (libamdhip64)")
        };
        return Err(refused(format!(
            "only half of the runtime pair found in {lib_dir}/ ({where_}): {} present, but no package owns the {missing} libraries; \
             replacing one half alone would mix a patched and a stock runtime",
            if have.is_empty() { "nothing".to_string() } else { have.iter().cloned().collect::<Vec<_>>().join(", ") }
        )));
    }
    if let Some(both) = hsa.intersection(&hip).next() {
        return Err(refused(format!("package {both} owns both HSA and HIP runtime libraries in {lib_dir}/; refusing to guess how to split it")));
    }
    let mut out: Vec<(Half, String)> = hsa.into_iter().map(|n| (Half::Hsa, n)).collect();
    out.extend(hip.into_iter().map(|n| (Half::Hip, n)));
    Ok(out)
}

/// Plan both replacements. `stock` holds the discovered packages, HSA first. Pure: reads the
/// staged and stock files' ELF facts, writes nothing.
pub fn plan(
    staging: &Staging,
    stock: &[(Half, StockPackage)],
    target: &Target<'_>,
    opts: &PlanOptions,
) -> anyhow::Result<PackagePlan> {
    let layout = &target.layout;
    let prefix = layout.prefix.clone();
    // The staged libraries labelled with the family being packaged (a pair staging's labels
    // are its own).
    let staging = &staging.for_family(opts.family)?;
    let mut warnings: Vec<String> = stock.iter().flat_map(|(_, s)| s.notes.clone()).collect();
    checks::check_inputs(staging, stock, &layout.lib_dir, opts, &mut warnings)?;
    let names = replacement_names(staging, stock, opts)?;
    let provided = provided_sonames(staging, stock, &layout.lib_dir, opts.family);

    let mut plans = vec![];
    for (half, s) in stock {
        let name = names
            .iter()
            .find(|n| n.stock == s.name)
            .ok_or_else(|| refused(format!("internal: no name for {}", s.name)))?;
        plans.push(plan_package(
            *half,
            s,
            name,
            staging,
            layout,
            opts,
            &mut warnings,
        )?);
    }
    vendored::place(staging, &mut plans, &layout.lib_dir, opts, &mut warnings);
    let missing_symbols = abi::check(&plans, stock, staging, &layout.lib_dir, opts, &mut warnings)?;

    let stock_names: Vec<String> = plans.iter().map(|p| p.stock_name.clone()).collect();
    let target_deps = resolve_needed(staging, &plans, &provided, target, &stock_names)?;
    finish_packages(
        &mut plans,
        stock,
        &names,
        &target_deps,
        staging,
        layout,
        opts,
    )?;
    for p in &mut plans {
        if let Some(v) = abi::field_value(p, &missing_symbols) {
            p.control
                .set(rocm::MISSING_SYMBOLS_FIELD, &v)
                .map_err(|e| {
                    refused(format!(
                        "control field {}: {e}",
                        rocm::MISSING_SYMBOLS_FIELD
                    ))
                })?;
        }
    }
    // No path in both packages: dpkg aborts the swap half-way with "trying to overwrite".
    check_disjoint(&plans)?;
    checks::check_target_owners(&plans, target, &stock_names)?;

    Ok(PackagePlan {
        prefix,
        layout: layout.clone(),
        commit: staging.commit.clone(),
        commit_time: staging.commit_time,
        suffix: opts.suffix.clone(),
        patches: staging.patches().to_vec(),
        backport_check_skipped: staging.backport_check_skipped(),
        missing_symbols,
        packages: plans,
        warnings,
    })
}

/// The name and version one stock package's replacement gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplacementName {
    pub half: Half,
    /// The stock package replaced (`hsa-rocr`).
    pub stock: String,
    /// Ours (`hsa-rocr-pinned`).
    pub package: String,
    /// Ours, sorting above the stock version.
    pub version: Version,
}

fn replacement_names(
    staging: &Staging,
    stock: &[(Half, StockPackage)],
    opts: &PlanOptions,
) -> anyhow::Result<Vec<ReplacementName>> {
    let mut names = Vec::new();
    for (half, s) in stock {
        let version = replacement_version(&s.version, staging.commit_time, &staging.commit);
        if version <= s.version {
            return Err(refused(format!(
                "replacement version {version} does not sort above stock {}",
                s.version
            )));
        }
        names.push(ReplacementName {
            half: *half,
            stock: s.name.clone(),
            package: rocm::replacement_name(&s.name, &opts.suffix),
            version,
        });
    }
    Ok(names)
}

/// Sonames our packages provide (rebuilt, carried family files, vendored): NEEDED entries
/// naming one of these need no dependency.
fn provided_sonames(
    staging: &Staging,
    stock: &[(Half, StockPackage)],
    lib_dir: &str,
    family: &'static rocm::PinnedFamily,
) -> BTreeSet<String> {
    let mut provided: BTreeSet<String> = BTreeSet::new();
    for l in &staging.libraries {
        provided.insert(l.soname().to_string());
        provided.insert(l.file_name.clone());
        provided.extend(l.links.iter().cloned());
    }
    for (_, s) in stock {
        for f in &s.files {
            if family.library_in(lib_dir, &f.path).is_some() {
                if let Some(n) = f.path.rsplit('/').next() {
                    provided.insert(n.to_string());
                }
            }
        }
    }
    provided
}

/// One replacement package: its runtime families rebuilt, everything else the stock package
/// ships carried unchanged, the apt pin, and (the family's first part: the pair's HSA) the
/// provenance marker.
fn plan_package(
    half: Half,
    s: &StockPackage,
    name: &ReplacementName,
    staging: &Staging,
    layout: &rocm::RuntimeLayout,
    opts: &PlanOptions,
    warnings: &mut Vec<String>,
) -> anyhow::Result<ReplacementPlan> {
    let ours = name.package.clone();
    let mut families = families::plan_families(s, &ours, staging, layout, opts, warnings)?;
    let mut files = std::mem::take(&mut families.files);
    files.extend(carried_unchanged(s, &ours, &families.handled, warnings));

    let pin_path = StateLayout::pin_file(&ours).display().to_string();
    files.push(PlannedFile {
        path: pin_path.clone(),
        role: Role::Generated,
        content: Content::Bytes {
            data: templates::preferences(&s.name, &ours, &staging.commit)?.into_bytes(),
            mode: 0o644,
        },
        from: None,
    });
    let mut conffiles = s.conffiles.clone();
    conffiles.push(pin_path);
    if half == opts.family.first_half() {
        files.push(PlannedFile {
            path: layout.family_marker_path(opts.family, &s.architecture),
            role: Role::Generated,
            content: Content::Marker,
            from: None,
        });
    }
    Ok(ReplacementPlan {
        half,
        stock_name: s.name.clone(),
        stock_version: s.version.clone(),
        architecture: s.architecture.clone(),
        package: ours,
        version: name.version.clone(),
        control: Paragraph::new(),
        files,
        conffiles,
        scripts: BTreeMap::new(),
        libraries: families.libraries,
        stock_scripts_dropped: s.scripts.keys().cloned().collect(),
    })
}

/// Everything the stock package ships that no family plan took, unchanged.
fn carried_unchanged(
    s: &StockPackage,
    ours: &str,
    handled: &BTreeSet<String>,
    warnings: &mut Vec<String>,
) -> Vec<PlannedFile> {
    let mut files = Vec::new();
    for f in &s.files {
        if handled.contains(&f.path) {
            continue;
        }
        let content = match &f.kind {
            StockKind::Dir => Content::Dir,
            StockKind::Symlink(t) => Content::Symlink(t.clone()),
            StockKind::File { mode, .. } => Content::Copy {
                source: f.source.clone(),
                mode: *mode,
                strip: false,
            },
            StockKind::Excluded => {
                warnings.push(format!(
                    "{ours}: stock {} is excluded by dpkg's path-exclude on the stock root and is not carried",
                    f.path
                ));
                continue;
            }
        };
        files.push(PlannedFile {
            path: f.path.clone(),
            role: if content == Content::Dir {
                Role::Dir
            } else {
                Role::Carried
            },
            content,
            from: Some(format!("stock {}", s.name)),
        });
    }
    files
}

/// Control fields, maintainer scripts and generated documents of each package; then the file
/// list completed (parent directories), sorted and checked for duplicates.
fn finish_packages(
    plans: &mut [ReplacementPlan],
    stock: &[(Half, StockPackage)],
    names: &[ReplacementName],
    target_deps: &BTreeMap<String, Vec<(String, String)>>,
    staging: &Staging,
    layout: &rocm::RuntimeLayout,
    opts: &PlanOptions,
) -> anyhow::Result<()> {
    let hsa_ref = plans
        .iter()
        .find(|p| p.half == opts.family.first_half())
        .map(|p| {
            (
                p.stock_name.clone(),
                p.package.clone(),
                p.version.to_string(),
            )
        })
        .ok_or_else(|| refused("internal: no HSA plan"))?;
    for p in plans.iter_mut() {
        let s = &stock
            .iter()
            .find(|(_, s)| s.name == p.stock_name)
            .ok_or_else(|| refused(format!("internal: no stock package {}", p.stock_name)))?
            .1;
        p.control = control_for(p, s, &hsa_ref, names, target_deps, staging, layout, opts)?;
        p.scripts = templates::scripts(p, layout, &hsa_ref.1)?;
        if layout.spec().shlibs_and_symbols {
            p.scripts.extend(library_info::carried(p, s, staging)?);
        }
        for (path, data) in templates::docs(p, s, staging, layout, opts)? {
            p.files.push(PlannedFile {
                path,
                role: Role::Generated,
                content: Content::Bytes { data, mode: 0o644 },
                from: None,
            });
        }
        add_parent_dirs(&mut p.files);
        p.files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut seen = BTreeSet::new();
        for f in &p.files {
            if !seen.insert(f.path.clone()) {
                return Err(refused(format!(
                    "internal: {} planned twice in {}",
                    f.path, p.package
                )));
            }
        }
    }
    Ok(())
}

/// Refuse a plan where a non-directory path is shipped by more than one replacement package.
pub fn check_disjoint(plans: &[ReplacementPlan]) -> anyhow::Result<()> {
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for p in plans {
        for f in p.files.iter().filter(|f| f.content != Content::Dir) {
            if let Some(other) = owner.insert(f.path.as_str(), p.package.as_str()) {
                return Err(refused(format!("{} would be shipped by both {other} and {}; dpkg would abort the swap with \"trying to overwrite\"", f.path, p.package)));
            }
        }
    }
    Ok(())
}

/// Every parent directory of every planned path, as a Dir entry (dpkg wants them in data.tar).
fn add_parent_dirs(files: &mut Vec<PlannedFile>) {
    let have: BTreeSet<String> = files.iter().map(|f| f.path.clone()).collect();
    let mut dirs = BTreeSet::new();
    for f in files.iter() {
        let mut p = f.path.as_str();
        while let Some((parent, _)) = p.rsplit_once('/') {
            if parent.is_empty() {
                break;
            }
            dirs.insert(parent.to_string());
            p = parent;
        }
    }
    for d in dirs {
        if !have.contains(&d) {
            files.push(PlannedFile {
                path: d,
                role: Role::Dir,
                content: Content::Dir,
                from: None,
            });
        }
    }
}

/// NEEDED → Depends per package: a NEEDED library our packages provide needs nothing; one
/// the target's loader finds in an installed package becomes `<owner> (>= <its version>)`; any
/// other is refused.
fn resolve_needed(
    staging: &Staging,
    plans: &[ReplacementPlan],
    provided: &BTreeSet<String>,
    target: &Target<'_>,
    stock_names: &[String],
) -> anyhow::Result<BTreeMap<String, Vec<(String, String)>>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let dirs = target.db.map(|db| {
        let mut d = vec![target.layout.lib_dir.clone()];
        for x in db.library_search_dirs() {
            if !d.contains(&x) {
                d.push(x);
            }
        }
        d
    });
    for p in plans {
        let shipped: Vec<&StagedLibrary> = staging
            .libraries
            .iter()
            .filter(|l| {
                // By source: a rebuilt library may take the stock file's name.
                p.files.iter().any(|f| {
                    matches!(f.role, Role::Rebuilt | Role::Vendored)
                        && matches!(&f.content, Content::Copy { source, .. } if *source == l.source)
                })
            })
            .collect();
        for lib in shipped {
            for needed in &lib.elf.needed {
                if provided.contains(needed) {
                    continue;
                }
                let (Some(db), Some(dirs)) = (target.db, dirs.as_ref()) else {
                    return Err(refused(format!("{} NEEDs {needed}, which the replacement packages do not ship, and there is no target dpkg database to resolve it against ({}); \
                         run on the target system, or give --stock-root DIR for a ROCm image tree", lib.file_name, target.db_error.as_deref().unwrap_or("none was read"))));
                };
                let Some((found, owners)) = db.find_library_owner(needed, dirs)? else {
                    return Err(refused(format!("{} NEEDs {needed}: not shipped by the replacement packages and not found in any installed package on the target ({}; searched {}). \
                         Install the package that provides it on the target, or vendor it in the staging", lib.file_name, db.root().display(), dirs.join(", "))));
                };
                let owner = owners[0].clone();
                let bare = owner.split(':').next().unwrap_or(&owner).to_string();
                if stock_names.contains(&bare) {
                    continue;
                }
                let version = db
                    .installed(&owner)
                    .map(|i| i.version.clone())
                    .ok_or_else(|| refused(format!("{found} is owned by {owner}, which is not fully installed on the target")))?;
                let list = out.entry(p.package.clone()).or_default();
                if !list.iter().any(|(n, _)| *n == bare) {
                    list.push((bare, version));
                }
            }
        }
    }
    Ok(out)
}

/// The control paragraph of one replacement.
#[allow(clippy::too_many_arguments)]
fn control_for(
    p: &ReplacementPlan,
    s: &StockPackage,
    hsa: &(String, String, String),
    names: &[ReplacementName],
    needed_deps: &BTreeMap<String, Vec<(String, String)>>,
    staging: &Staging,
    layout: &rocm::RuntimeLayout,
    opts: &PlanOptions,
) -> anyhow::Result<Paragraph> {
    let err = |field: &str, e: crate::deb::control::ControlError| {
        refused(format!(
            "stock {} ({}): field {field}: {e}",
            s.name, s.origin
        ))
    };
    let mut fields: BTreeMap<&str, Relations> = BTreeMap::new();
    for f in RELATION_FIELDS {
        if let Some(v) = s.control.get(f) {
            fields.insert(f, parse_relations(v).map_err(|e| err(f, e))?);
        }
    }
    remap_to_replacements(&mut fields, names);
    let mut depends = fields.remove("Depends").unwrap_or_default();
    // The family's other parts (the pair's HIP) depend on the first at its exact version.
    if p.half != opts.family.first_half() {
        let (_, hsa_pkg, hsa_ver) = hsa;
        let has = depends
            .iter()
            .any(|g| g.len() == 1 && g[0].name == *hsa_pkg);
        if !has {
            depends.push(vec![Relation {
                name: hsa_pkg.clone(),
                arch_qualifier: None,
                constraint: Some((RelationOp::Eq, hsa_ver.clone())),
            }]);
        }
    }
    for (dep, ver) in needed_deps.get(&p.package).into_iter().flatten() {
        merge_at_least(&mut depends, dep, ver)?;
    }
    if !depends.is_empty() {
        fields.insert("Depends", depends);
    }
    let me = |constraint| Relation {
        name: s.name.clone(),
        arch_qualifier: None,
        constraint,
    };
    fields
        .entry("Provides")
        .or_default()
        .push(vec![me(Some((RelationOp::Eq, s.version.to_string())))]);
    fields.entry("Conflicts").or_default().push(vec![me(None)]);
    fields.entry("Replaces").or_default().push(vec![me(None)]);

    let mut c = Paragraph::new();
    let set = |c: &mut Paragraph, k: &str, v: &str| {
        c.set(k, v)
            .map_err(|e| refused(format!("control field {k}: {e}")))
    };
    set(&mut c, "Package", &p.package)?;
    set(&mut c, "Version", &p.version.to_string())?;
    set(&mut c, "Architecture", &p.architecture)?;
    // Debian's libraries are co-installable per architecture; a replacement must be too, or
    // apt would remove every foreign-architecture copy of the stock package with it.
    if layout.spec().multi_arch_same {
        set(&mut c, "Multi-Arch", "same")?;
    }
    set(&mut c, "Maintainer", &opts.maintainer)?;
    for f in RELATION_FIELDS {
        if let Some(rels) = fields.get(f) {
            if !rels.is_empty() {
                set(&mut c, f, &format_relations(rels))?;
            }
        }
    }
    set(&mut c, "Protected", "yes")?;
    for f in ["Section", "Priority", "Homepage"] {
        if let Some(v) = s.control.get(f) {
            set(&mut c, f, v)?;
        }
    }
    if c.get("Section").is_none() {
        set(&mut c, "Section", "libs")?;
    }
    if c.get("Priority").is_none() {
        set(&mut c, "Priority", "optional")?;
    }
    set(&mut c, rocm::COMMIT_FIELD, &staging.commit)?;
    if opts.family.name != rocm::families::RUNTIME.name {
        set(&mut c, rocm::FAMILY_FIELD, opts.family.name)?;
    }
    if let Some(v) = rocm::patches_field(staging.patches()) {
        set(&mut c, rocm::PATCHES_FIELD, &v)?;
    }
    if staging.backport_check_skipped() {
        set(&mut c, rocm::BACKPORT_CHECK_FIELD, "skipped")?;
    }
    set(
        &mut c,
        "Description",
        &templates::description(p, &staging.commit)?,
    )?;
    Ok(c)
}

/// Remap references to a replaced stock package onto ours, at our exact version.
fn remap_to_replacements(fields: &mut BTreeMap<&str, Relations>, names: &[ReplacementName]) {
    for f in DEPENDENCY_FIELDS {
        if let Some(rels) = fields.get_mut(f) {
            for group in rels.iter_mut() {
                for alt in group.iter_mut() {
                    if let Some(n) = names.iter().find(|n| n.stock == alt.name) {
                        *alt = Relation {
                            name: n.package.clone(),
                            arch_qualifier: None,
                            constraint: Some((RelationOp::Eq, n.version.to_string())),
                        };
                    }
                }
            }
        }
    }
}

/// Add `dep (>= ver)` to `rels` unless an existing single-name group already says as much;
/// a weaker existing constraint is raised (lintian flags redundant duplicates).
fn merge_at_least(rels: &mut Relations, dep: &str, ver: &str) -> anyhow::Result<()> {
    for group in rels.iter_mut() {
        if group.len() != 1 || group[0].name != dep {
            continue;
        }
        match &group[0].constraint {
            None => {
                group[0].constraint = Some((RelationOp::Ge, ver.to_string()));
                return Ok(());
            }
            Some((RelationOp::Ge, have)) => {
                if crate::deb::version::compare(have, ver)? == std::cmp::Ordering::Less {
                    group[0].constraint = Some((RelationOp::Ge, ver.to_string()));
                }
                return Ok(());
            }
            Some((RelationOp::Eq, _)) | Some((RelationOp::Gt, _)) => return Ok(()),
            Some(_) => {}
        }
    }
    rels.push(vec![Relation {
        name: dep.to_string(),
        arch_qualifier: None,
        constraint: Some((RelationOp::Ge, ver.to_string())),
    }]);
    Ok(())
}

#[cfg(test)]
mod plan_tests;
