//! Vendored libraries: staged libraries of no runtime family (e.g. a newer libelf), shipped
//! with the package whose rebuilt library NEEDs them.

use super::model::{Content, PlanOptions, PlannedFile, ReplacementPlan, Role};
use crate::ops::plan::staging::Staging;

pub(super) fn place(
    staging: &Staging,
    plans: &mut [ReplacementPlan],
    lib_dir: &str,
    opts: &PlanOptions,
    warnings: &mut Vec<String>,
) {
    for lib in staging.libraries.iter().filter(|l| l.family.is_none()) {
        let needs = |p: &ReplacementPlan| {
            p.libraries.iter().any(|pl| {
                staging
                    .libraries
                    .iter()
                    .find(|sl| sl.family.is_some() && sl.elf.soname.as_deref() == Some(&pl.soname))
                    .is_some_and(|sl| {
                        sl.elf.needed.iter().any(|n| {
                            n == lib.soname() || *n == lib.file_name || lib.links.contains(n)
                        })
                    })
            })
        };
        let idx = plans
            .iter()
            .position(|p| p.half == opts.family.first_half() && needs(p))
            .or_else(|| plans.iter().position(needs));
        let Some(idx) = idx else {
            warnings.push(format!(
                "staged {} is not needed by any rebuilt runtime library and is NOT shipped",
                lib.source.display()
            ));
            continue;
        };
        let p = &mut plans[idx];
        let path = format!("{lib_dir}/{}", lib.file_name);
        p.files.push(PlannedFile {
            path: path.clone(),
            role: Role::Vendored,
            content: Content::Copy {
                source: lib.source.clone(),
                mode: 0o644,
                strip: opts.strip,
            },
            from: Some(lib.source.display().to_string()),
        });
        for link in &lib.links {
            p.files.push(PlannedFile {
                path: format!("{lib_dir}/{link}"),
                role: Role::Link,
                content: Content::Symlink(lib.file_name.clone()),
                from: None,
            });
        }
    }
}
