//! The runtime library families of one stock package (`libhsa-runtime64`, `libamdhip64`, …):
//! the rebuilt library under its own name, the stock versioned names as hard links to it,
//! the SONAME link, and the stock's other links following the SONAME chain.

use std::collections::BTreeSet;

use super::error::refused;
use super::model::{Content, PlanOptions, PlannedFile, PlannedLibrary, Role};
use super::stock::{StockFile, StockKind, StockPackage};
use crate::ops::plan::staging::{StagedLibrary, Staging};
use crate::rocm::{self, Half};

/// What the family plan of one package produced.
pub(super) struct FamilyPlan {
    pub files: Vec<PlannedFile>,
    pub libraries: Vec<PlannedLibrary>,
    /// Stock paths the family plan took care of (replaced, aliased or dropped).
    pub handled: BTreeSet<String>,
}

pub(super) fn plan_families(
    s: &StockPackage,
    ours: &str,
    staging: &Staging,
    layout: &rocm::RuntimeLayout,
    opts: &PlanOptions,
    warnings: &mut Vec<String>,
) -> anyhow::Result<FamilyPlan> {
    let lib_dir = layout.lib_dir.as_str();
    let one_file_per_soname = layout.one_file_per_soname();
    let mut plan = FamilyPlan {
        files: vec![],
        libraries: vec![],
        handled: BTreeSet::new(),
    };
    // Families this stock package owns in its library directory.
    let mut families: Vec<&'static rocm::LibraryFamily> = vec![];
    for f in &s.files {
        if let Some(fam) = opts.family.library_in(lib_dir, &f.path) {
            if !families.iter().any(|x| x.stem == fam.stem) {
                families.push(fam);
            }
        }
    }
    for fam in families {
        let stock_family: Vec<&StockFile> = s
            .files
            .iter()
            .filter(|f| {
                opts.family
                    .library_in(lib_dir, &f.path)
                    .is_some_and(|x| x.stem == fam.stem)
            })
            .collect();
        let Some(staged) = staging.family(fam.stem) else {
            if fam.required {
                return Err(refused(format!(
                    "stock {} ships {} but the staging has none",
                    s.name, fam.stem
                )));
            }
            warnings.push(format!(
                "{}: the staging has no {}; the stock copy is carried unchanged (a rebuilt {} with a stock {} can fail at JIT time)",
                ours,
                fam.stem,
                rocm::pair_family(Half::Hip).stem,
                fam.stem
            ));
            continue;
        };
        plan_family(
            &mut plan,
            s,
            ours,
            &stock_family,
            staged,
            (lib_dir, one_file_per_soname),
            opts,
            warnings,
        )?;
    }
    Ok(plan)
}

/// One family: the staged library under its own name, the stock real files as hard links to
/// it, its SONAME link, and the stock's other links (a dropped old-soname link is a warning).
#[allow(clippy::too_many_arguments)]
fn plan_family(
    plan: &mut FamilyPlan,
    s: &StockPackage,
    ours: &str,
    stock_family: &[&StockFile],
    staged: &StagedLibrary,
    (lib_dir, one_file_per_soname): (&str, bool),
    opts: &PlanOptions,
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    let staged_soname = staged.elf.soname.clone().ok_or_else(|| {
        refused(format!(
            "staged {} has no SONAME (DT_SONAME); it cannot stand in for a stock library",
            staged.source.display()
        ))
    })?;
    let stock_real: Vec<&StockFile> = stock_family
        .iter()
        .copied()
        .filter(|f| matches!(f.kind, StockKind::File { .. }))
        .collect();
    let stock_sonames = stock_sonames(&stock_real, stock_family, &staged_soname, warnings);
    for so in &stock_sonames {
        if rocm::soname_major(so) != rocm::soname_major(&staged_soname) && !opts.allow_soname_change
        {
            return Err(refused(format!("SONAME change: stock {} ships {so}, the staged {} has SONAME {staged_soname}. \
                 Everything linked against {so} would stop loading it; pass --allow-soname-change if this ABI change is intended", s.name, staged.file_name)));
        }
    }
    // In a directory ldconfig manages, two files with one SONAME make ldconfig pick the link's
    // target: the rebuilt library takes the stock file's name there, with no alias.
    let real_name = match stock_real.as_slice() {
        [one] if one_file_per_soname => one.path.rsplit('/').next().unwrap_or_default(),
        _ => staged.file_name.as_str(),
    };
    let real_path = format!("{lib_dir}/{real_name}");
    plan.files.push(PlannedFile {
        path: real_path.clone(),
        role: Role::Rebuilt,
        content: Content::Copy {
            source: staged.source.clone(),
            mode: 0o644,
            strip: opts.strip,
        },
        from: Some(staged.source.display().to_string()),
    });
    plan.handled.insert(real_path.clone());
    let mut aliases = vec![];
    for f in &stock_real {
        if f.path == real_path {
            continue;
        }
        plan.files.push(PlannedFile {
            path: f.path.clone(),
            role: Role::Alias,
            content: Content::HardLink(real_path.clone()),
            from: Some(format!("stock {}", s.name)),
        });
        aliases.push(f.path.clone());
        plan.handled.insert(f.path.clone());
    }
    let soname_path = format!("{lib_dir}/{staged_soname}");
    if soname_path != real_path {
        plan.files.push(PlannedFile {
            path: soname_path.clone(),
            role: Role::Link,
            content: Content::Symlink(real_name.to_string()),
            from: None,
        });
        plan.handled.insert(soname_path.clone());
    }
    for f in stock_family {
        if plan.handled.contains(&f.path) {
            continue;
        }
        if let StockKind::Symlink(_) = f.kind {
            let n = f.path.rsplit('/').next().unwrap_or("");
            if stock_sonames.contains(n) && n != staged_soname {
                warnings.push(format!(
                    "{ours}: stock soname link {} dropped (the rebuilt library's SONAME is {staged_soname})",
                    f.path
                ));
                plan.handled.insert(f.path.clone());
                continue;
            }
            // Development and other links follow the SONAME chain.
            plan.files.push(PlannedFile {
                path: f.path.clone(),
                role: Role::Link,
                content: Content::Symlink(staged_soname.clone()),
                from: None,
            });
            plan.handled.insert(f.path.clone());
        }
    }
    plan.libraries.push(PlannedLibrary {
        path: real_path,
        soname: staged_soname,
        aliases,
    });
    Ok(())
}

/// The stock soname(s): from the stock real files' ELF, else from their soname links.
fn stock_sonames(
    stock_real: &[&StockFile],
    stock_family: &[&StockFile],
    staged_soname: &str,
    warnings: &mut Vec<String>,
) -> BTreeSet<String> {
    let mut stock_sonames = BTreeSet::new();
    for f in stock_real {
        match crate::elf::read_elf(&f.source) {
            Ok(info) => {
                if let Some(so) = info.soname {
                    stock_sonames.insert(so);
                }
            }
            Err(e) => warnings.push(format!(
                "cannot read the stock {} as ELF ({e:#}); its soname is taken from its links",
                f.path
            )),
        }
    }
    if stock_sonames.is_empty() {
        for f in stock_family {
            if let StockKind::Symlink(_) = f.kind {
                let n = f.path.rsplit('/').next().unwrap_or("");
                if rocm::soname_major(n).is_some()
                    && n.matches('.').count() == staged_soname.matches('.').count()
                {
                    stock_sonames.insert(n.to_string());
                }
            }
        }
    }
    stock_sonames
}
