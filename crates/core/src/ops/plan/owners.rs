//! The stock owners of a pinned family other than the runtime pair (whose two-half rules and
//! wording stay in `collect_halves`): every part owned, one package per part on AMD's
//! packaging, every owner on Debian's (one package per library).

use std::collections::{BTreeMap, BTreeSet};

use super::error::refused;
use crate::rocm::{self, Half};

/// The owners found, in the family's part order; refused with one line when the stock set is
/// not there, incomplete or ambiguous.
pub(super) fn collect_parts(
    found: BTreeMap<Half, BTreeSet<String>>,
    layout: &rocm::RuntimeLayout,
    where_: &str,
    family: &'static rocm::PinnedFamily,
) -> anyhow::Result<Vec<(Half, String)>> {
    let lib_dir = &layout.lib_dir;
    let stems: Vec<&str> = family.libraries.iter().map(|l| l.stem).collect();
    let stock_names = family
        .stock_of(layout.flavour)
        .map(|s| s.replaced.join(" "))
        .unwrap_or_default();
    if found.is_empty() {
        return Err(refused(format!(
            "no stock {} found: no package owns a {} library in {lib_dir}/ in {where_}; \
             install the stock packages first (apt-get install {stock_names}), or give the stock .debs with --stock-deb",
            family.name,
            stems.join(", ")
        )));
    }
    let mut out: Vec<(Half, String)> = vec![];
    for part in family.parts {
        match found.get(&part.half) {
            None => {
                let have: Vec<&str> = found.values().flatten().map(String::as_str).collect();
                return Err(refused(format!(
                    "only part of {} found in {lib_dir}/ ({where_}): {} present, but no package owns its {} libraries; \
                     replacing part of it would mix a rebuilt and a stock library",
                    family.title,
                    have.join(", "),
                    part.description
                )));
            }
            Some(names) if names.len() > 1 && !layout.one_package_per_library() => {
                return Err(refused(format!(
                    "several packages own {} libraries in {lib_dir}/: {}; expected one",
                    part.description,
                    names.iter().cloned().collect::<Vec<_>>().join(", ")
                )))
            }
            Some(names) => {
                for n in names {
                    if let Some((other, _)) = out.iter().find(|(_, o)| o == n) {
                        return Err(refused(format!("package {n} owns libraries of two parts ({other:?} and {:?}) in {lib_dir}/; refusing to guess how to split it", part.half)));
                    }
                    out.push((part.half, n.clone()));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rocm::families::RCCL;

    fn found(owners: &[&str]) -> BTreeMap<Half, BTreeSet<String>> {
        let mut m: BTreeMap<Half, BTreeSet<String>> = BTreeMap::new();
        for o in owners {
            m.entry(Half::Rccl).or_default().insert(o.to_string());
        }
        m
    }

    #[test]
    fn rccl_owners_are_one_package_on_amd_and_every_owner_on_debian() {
        let amd = rocm::RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4");
        let deb = rocm::RuntimeLayout::multiarch("/usr/lib/x86_64-linux-gnu");
        assert_eq!(
            collect_parts(found(&["rccl"]), &amd, "here", &RCCL).unwrap(),
            vec![(Half::Rccl, "rccl".to_string())]
        );
        let e = collect_parts(found(&["rccl", "rccl-custom"]), &amd, "here", &RCCL)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("several packages") && e.contains("rccl-custom"),
            "{e}"
        );
        assert_eq!(
            collect_parts(found(&["librccl1"]), &deb, "here", &RCCL)
                .unwrap()
                .len(),
            1
        );
        let e = collect_parts(BTreeMap::new(), &deb, "the dpkg database under /x", &RCCL)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("no stock rccl found") && e.contains("apt-get install librccl1"),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
        let e = collect_parts(BTreeMap::new(), &amd, "here", &RCCL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("apt-get install rccl"), "{e}");
    }
}
