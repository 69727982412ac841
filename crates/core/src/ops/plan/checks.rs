//! Refusals a plan makes before anything is written: inputs that cannot give a clean
//! replacement, and paths an unrelated installed package already owns.

use super::error::refused;

use super::model::{Content, PlanOptions, ReplacementPlan, Target};
use super::stock::StockPackage;
use crate::ops::plan::staging::Staging;
use crate::rocm::{self, Half};

/// The suffix makes a package name; every staged family has a stock owner; the staging holds
/// every required library of the family (the pair: the patched ROCr with its backport symbol,
/// and a libamdhip64).
pub(super) fn check_inputs(
    staging: &Staging,
    stock: &[(Half, StockPackage)],
    lib_dir: &str,
    opts: &PlanOptions,
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    if opts.suffix.is_empty()
        || !opts
            .suffix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err(refused(format!("package suffix {:?} (--flavor) must be lower-case letters, digits, '-' or '.' (it becomes part of a package name)", opts.suffix)));
    }

    // Every staged family must have a stock owner; every required family a staged library.
    let unowned: Vec<_> = staging
        .libraries
        .iter()
        .filter_map(|lib| Some((lib, lib.family?)))
        .filter(|(_, fam)| {
            !stock.iter().any(|(_, s)| {
                s.files.iter().any(|f| {
                    opts.family
                        .library_in(lib_dir, &f.path)
                        .is_some_and(|x| x.stem == fam.stem)
                })
            })
        })
        .collect();
    if let Some((lib, fam)) = unowned.first() {
        return Err(refused(format!(
            "staged {} ({}) has no stock owner in {lib_dir}/: no stock package ships {} there, so nothing would replace it cleanly{}",
            lib.file_name,
            fam.stem,
            fam.stem,
            install_hint(lib_dir, &unowned)
        )));
    }
    // Every required library of the family staged, in the family's order; the one that must
    // carry a symbol (the pair's patched ROCr and its backport symbol) checked right after.
    for required in opts.family.libraries.iter().filter(|l| l.required) {
        let stem = required.stem;
        let lib = staging.family(stem).ok_or_else(|| {
            refused(format!(
                "staging {} has no {stem} library in lib/",
                staging.dir.display()
            ))
        })?;
        if let Some((_, symbol)) = opts.family.required_export.filter(|(s, _)| *s == stem) {
            check_required_export(staging, lib, symbol, warnings)?;
        }
    }
    Ok(())
}

/// The staged library must export `symbol` (the pair's backport) unless the build recorded
/// `--no-backport-check`, which both controls and the marker then carry.
fn check_required_export(
    staging: &Staging,
    lib: &crate::ops::plan::staging::StagedLibrary,
    symbol: &str,
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    if lib.elf.export(symbol).is_none() {
        if !staging.backport_check_skipped() {
            return Err(refused(format!("staged {} does not export {symbol} — it is not the patched ROCr (wrong commit or a stale build); refusing to package it", lib.source.display())));
        }
        // Built with --no-backport-check: both controls and the marker say so, and verify
        // fails on it unless told it is accepted.
        warnings.push(format!(
            "staged {} does not export {symbol}: accepted because the build recorded --no-backport-check \
             ({} and the marker carry it)",
            lib.file_name,
            rocm::BACKPORT_CHECK_FIELD
        ));
    }
    Ok(())
}

/// No file of ours may be owned by an installed package other than the stock pair: dpkg
/// would refuse to overwrite it half-way through the swap.
pub(super) fn check_target_owners(
    plans: &[ReplacementPlan],
    target: &Target<'_>,
    stock_names: &[String],
) -> anyhow::Result<()> {
    // A file our installed build owns is the same package upgraded in place (a new commit or a
    // new stock upload on a host that runs ours): dpkg replaces it.
    let planned: Vec<String> = plans.iter().map(|p| p.package.clone()).collect();
    if let Some(db) = target.db {
        for p in plans {
            for f in p.files.iter().filter(|f| f.content != Content::Dir) {
                let owners: Vec<String> = db
                    .owner_of(&f.path)?
                    .into_iter()
                    .filter(|o| {
                        let bare = o.split(':').next().unwrap_or(o);
                        !stock_names.iter().any(|s| s == bare) && !upgraded_in_place(o, &planned)
                    })
                    .collect();
                if !owners.is_empty() {
                    return Err(refused(format!("{} ({} in {}) is already owned by {} on the target; dpkg would refuse to overwrite it", f.path, f.role.word(), p.package, owners.join(", "))));
                }
            }
        }
    }

    Ok(())
}

/// Where the stock flavour ships one library per package (Debian's), the packages that would
/// own the unowned families (`libhiprtc6 libhiprtc-builtins6`, which `apt install
/// libamdhip64-6` does not pull in on sid): the one command that makes the host pinnable.
fn install_hint(
    lib_dir: &str,
    unowned: &[(
        &crate::ops::plan::staging::StagedLibrary,
        &rocm::LibraryFamily,
    )],
) -> String {
    let per_library = unowned.first().is_some_and(|(lib, _)| {
        rocm::runtime_library_location(&format!("{lib_dir}/{}", lib.soname())).is_some_and(
            |(flavour, ..)| {
                matches!(
                    rocm::flavour_spec(flavour).naming,
                    rocm::StockNaming::PerLibrary
                )
            },
        )
    });
    let names: Vec<String> = unowned
        .iter()
        .filter_map(|(lib, fam)| {
            let major = lib.soname().rsplit_once(".so.")?.1.split('.').next()?;
            Some(rocm::per_library_package_name(fam.stem, major))
        })
        .collect();
    if !per_library || names.is_empty() {
        return String::new();
    }
    format!(
        ". Install the stock package{} first: `apt-get install {}`, then package again",
        if names.len() == 1 { "" } else { "s" },
        names.join(" ")
    )
}

/// The packages of ours the target runs that `planned` upgrades in place: a file they own is the
/// older build of the same package, which dpkg replaces.
fn upgraded_in_place(owner: &str, planned: &[String]) -> bool {
    let bare = owner.split(':').next().unwrap_or(owner);
    planned.iter().any(|p| p == bare)
}

#[cfg(test)]
mod upgraded_in_place_tests {
    use super::*;

    #[test]
    fn an_owner_that_is_a_planned_package_is_upgraded_in_place() {
        let planned = vec!["libhsa-runtime64-1-pinned".to_string()];
        assert!(upgraded_in_place(
            "libhsa-runtime64-1-pinned:amd64",
            &planned
        ));
        assert!(upgraded_in_place("libhsa-runtime64-1-pinned", &planned));
        assert!(!upgraded_in_place("librocfft0:amd64", &planned));
        assert!(!upgraded_in_place("libhsa-runtime64-1", &planned));
    }
}
