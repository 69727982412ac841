//! Installing ours made against a newer stock upload over ours made against the older one:
//! an update in place, no rollback first (kept apart from install.rs, which is near its size
//! limit, and from package_update.rs, which reads rollback's state). Packages that depend on
//! the old stock with exact `=` (AMD's metas: `rocm-hip-runtime`, `hip-dev`) move in the same
//! apt transaction to the versions apt has for the new upload; the new stock is kept for
//! rollback.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Context;

use super::ourdebs::DebFacts;
use crate::host::root::Root;
use crate::host::status::StatusEntry;

/// What an update to a newer stock upload adds to install's transaction.
#[derive(Debug, Default)]
pub(crate) struct UploadUpdate {
    /// (package, installed version, the version apt installs with ours).
    pub(crate) moves: Vec<(String, String, String)>,
    /// Of the moved packages, those apt marks automatically installed (kept so after apt).
    pub(crate) auto: Vec<String>,
    /// The new stock packages (name, version, architecture): kept for rollback.
    pub(crate) new_stock: Vec<StatusEntry>,
}

impl UploadUpdate {
    /// apt-get arguments: each moved package at its exact new version.
    pub(crate) fn apt_args(&self) -> Vec<String> {
        self.moves
            .iter()
            .map(|(n, _, v)| format!("{n}={v}"))
            .collect()
    }

    /// After apt: the report lines (what moved with ours, the auto marks kept).
    pub(crate) fn after_apt(&self, root: &Root) -> anyhow::Result<Vec<String>> {
        let moved = (!self.moves.is_empty()).then(|| {
            format!(
                "moved with ours in the same transaction (they depend on the stock with `=`): {}",
                self.moves
                    .iter()
                    .map(|(n, old, new)| format!("{n} {old} -> {new}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        let marks = super::automarks::mark_auto(root, &self.auto)?;
        Ok(moved.into_iter().chain(marks).collect())
    }
}

/// For ours of an older stock upload being replaced by `facts` (made against a newer one):
/// the new stock to keep, and every installed package whose exact `=` Depends name an old
/// version of something that moves (the stock, or a package moving with it), each at the
/// highest version apt has whose exact Depends on moving packages name their new versions.
/// None found for one: refused, nothing changed, naming it and the command that can help.
/// Live system only (asks apt-cache).
pub(crate) fn plan(
    root: &Root,
    facts: &[DebFacts],
    before: &[StatusEntry],
) -> anyhow::Result<UploadUpdate> {
    let mut up = UploadUpdate::default();
    // name -> (old version, new version)
    let mut moving: BTreeMap<String, (String, String)> = BTreeMap::new();
    for f in facts {
        let Some(o) = before
            .iter()
            .find(|e| e.package == f.package && e.has_files())
        else {
            continue;
        };
        match provided_version(&o.provides, &f.stock_name) {
            Some(old) if old != f.stock_version => {
                moving.insert(f.stock_name.clone(), (old, f.stock_version.clone()));
                up.new_stock.push(StatusEntry {
                    package: f.stock_name.clone(),
                    version: f.stock_version.clone(),
                    architecture: f.architecture.clone(),
                    ..Default::default()
                });
            }
            _ => {}
        }
    }
    if moving.is_empty() {
        return Ok(up);
    }
    let ours: BTreeSet<&str> = facts.iter().map(|f| f.package.as_str()).collect();
    loop {
        // Installed packages (not ours, not moving yet) with an exact `=` on an old version of
        // something that moves.
        let stale: Vec<(&StatusEntry, Vec<(String, String)>)> = before
            .iter()
            .filter(|e| e.is_installed_ok() && !ours.contains(e.package.as_str()))
            .filter(|e| !moving.contains_key(&e.package))
            .map(|e| {
                let depends = e.extra.get("Depends").map(String::as_str).unwrap_or("");
                let rels = crate::host::hold_offered::exact_relations(depends)
                    .into_iter()
                    .filter(|(n, v)| moving.get(n).is_some_and(|(_, new)| new != v))
                    .collect();
                (e, rels)
            })
            .filter(|(_, rels): &(_, Vec<_>)| !rels.is_empty())
            .collect();
        let mut missing = Vec::new();
        let mut moved = false;
        for (e, rels) in stale {
            match matching_version(root, &e.package, &e.version, &moving)? {
                Some(v) => {
                    moving.insert(e.package.clone(), (e.version.clone(), v.clone()));
                    up.moves.push((e.package.clone(), e.version.clone(), v));
                    moved = true;
                }
                None => missing.push((e, rels)),
            }
        }
        if moved {
            continue;
        }
        if !missing.is_empty() {
            return Err(crate::exit::usage(missing_refusal(
                &missing, &moving, facts,
            )));
        }
        break;
    }
    let names: Vec<String> = up.moves.iter().map(|m| m.0.clone()).collect();
    up.auto = super::automarks::auto_installed(root, &names)?
        .into_iter()
        .collect();
    Ok(up)
}

/// The one-line refusal: what apt lacks, and the command that makes it possible.
fn missing_refusal(
    missing: &[(&StatusEntry, Vec<(String, String)>)],
    moving: &BTreeMap<String, (String, String)>,
    facts: &[DebFacts],
) -> String {
    let need: Vec<String> = missing
        .iter()
        .map(|(e, stale)| {
            let rels: Vec<String> = stale
                .iter()
                .map(|(n, _)| format!("{n} (= {})", moving[n].1))
                .collect();
            format!("{} depending on {}", e.package, rels.join(", "))
        })
        .collect();
    let installed: Vec<String> = missing
        .iter()
        .map(|(e, stale)| {
            let rels: Vec<String> = stale.iter().map(|(n, v)| format!("{n} (= {v})")).collect();
            format!("{} {} needs {}", e.package, e.version, rels.join(", "))
        })
        .collect();
    let debs: Vec<String> = facts.iter().map(|f| f.path.display().to_string()).collect();
    format!(
        "apt has no {} (the new upload's packages that depend on it with `=`; installed: {}), so apt would remove them; nothing changed. Make the new upload's packages available to apt (its repository), then `apt-get update` and `rocm-pin install {}`",
        need.join("; "),
        installed.join("; "),
        debs.join(" ")
    )
}

/// The highest version apt has of `package` (other than `installed`) whose exact `=` Depends
/// on moving packages all name their new versions.
fn matching_version(
    root: &Root,
    package: &str,
    installed: &str,
    moving: &BTreeMap<String, (String, String)>,
) -> anyhow::Result<Option<String>> {
    let out = crate::host::apt::apt_cache_read_only(root, &["show", package])?;
    // apt-cache show fails for a package it has no record of: no version to move to.
    let text = String::from_utf8_lossy(&out.stdout);
    let paragraphs = crate::deb::control::Paragraph::parse_many(&text)
        .with_context(|| format!("cannot read apt-cache show {package}"))?;
    Ok(best_match(&paragraphs, package, installed, moving))
}

fn best_match(
    paragraphs: &[crate::deb::control::Paragraph],
    package: &str,
    installed: &str,
    moving: &BTreeMap<String, (String, String)>,
) -> Option<String> {
    paragraphs
        .iter()
        .filter(|p| p.get("Package") == Some(package))
        .filter_map(|p| {
            let v = p.get("Version")?.to_string();
            let rels = crate::host::hold_offered::exact_relations(p.get("Depends").unwrap_or(""));
            let fits = rels
                .iter()
                .filter_map(|(n, want)| moving.get(n).map(|(_, new)| new == want))
                .all(|ok| ok)
                && rels.iter().any(|(n, _)| moving.contains_key(n));
            (fits && v != installed).then_some(v)
        })
        .reduce(|a, b| {
            if crate::deb::version::compare(&b, &a).is_ok_and(|o| o == std::cmp::Ordering::Greater)
            {
                b
            } else {
                a
            }
        })
}

/// Ours installed as `installed` provide an older upload of the stock `new` is made against:
/// installing `new` updates them in place (no rollback). Anything else — an older stock, or a
/// Provides that cannot be read — is refused as before: install the matching replacement.
pub(crate) fn newer_stock_upload(installed: &StatusEntry, new: &DebFacts) -> anyhow::Result<()> {
    let provided = provided_version(&installed.provides, &new.stock_name);
    if let Some(v) = &provided {
        if crate::deb::version::compare(&new.stock_version, v)
            .is_ok_and(|o| o == std::cmp::Ordering::Greater)
        {
            return Ok(());
        }
    }
    Err(crate::exit::usage(format!(
        "{} {} is installed and provides {} {}, while {} is made against {} {}: only a newer stock upload updates in place; install the matching replacement or roll back first",
        installed.package,
        installed.version,
        new.stock_name,
        provided.as_deref().unwrap_or("at an unreadable version"),
        new.package,
        new.stock_name,
        new.stock_version
    )))
}

/// The exact version `Provides` (a control field's value) gives `name`, if any.
fn provided_version(provides: &str, name: &str) -> Option<String> {
    crate::host::hold_offered::exact_relations(provides)
        .into_iter()
        .find_map(|(n, v)| (n == name).then_some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provided_version_is_read_by_exact_name() {
        let p = "libhsa-runtime64-1-x (= 1), libhsa-runtime64-1 (= 7.2.4-1~exp2)";
        assert_eq!(
            provided_version(p, "libhsa-runtime64-1").as_deref(),
            Some("7.2.4-1~exp2")
        );
        assert_eq!(provided_version(p, "libamdhip64-7"), None);
    }

    fn moving() -> BTreeMap<String, (String, String)> {
        [(
            "hip-runtime-amd".to_string(),
            ("7.2-93".to_string(), "7.2-93+upd1".to_string()),
        )]
        .into_iter()
        .collect()
    }

    #[test]
    fn the_highest_version_naming_the_new_stock_is_chosen() {
        let text = "Package: rocm-hip-runtime\nVersion: 7.2-93+upd1\nDepends: hip-runtime-amd (= 7.2-93+upd1), rocm-core (= 7.2-93)\n\n\
                    Package: rocm-hip-runtime\nVersion: 7.2-93\nDepends: hip-runtime-amd (= 7.2-93), rocm-core (= 7.2-93)\n\n\
                    Package: rocm-hip-runtime\nVersion: 7.2-94\nDepends: hip-runtime-amd (= 7.2-94)\n";
        let ps = crate::deb::control::Paragraph::parse_many(text).unwrap();
        assert_eq!(
            best_match(&ps, "rocm-hip-runtime", "7.2-93", &moving()).as_deref(),
            Some("7.2-93+upd1")
        );
    }

    #[test]
    fn no_version_naming_the_new_stock_is_none() {
        let text = "Package: hip-dev\nVersion: 7.2-93\nDepends: hip-runtime-amd (= 7.2-93)\n";
        let ps = crate::deb::control::Paragraph::parse_many(text).unwrap();
        assert_eq!(best_match(&ps, "hip-dev", "7.2-93", &moving()), None);
    }
}
