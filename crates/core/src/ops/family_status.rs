//! The pinned families other than the runtime pair as `rocm-pin status` shows them: each
//! installed replacement carrying `X-Rocm-Pin-Family` (an RCCL built and packaged with
//! `package --family rccl`), its version, commit and the stock package it provides.

use crate::host::status::StatusEntry;
use crate::rocm;

/// One installed replacement of a family other than the pair.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FamilyPackage {
    /// `rccl`.
    pub family: String,
    pub package: String,
    pub version: String,
    pub commit: String,
    /// The stock package(s) ours provides at their exact version (`rccl (= 2.27.7…)`).
    pub provides: String,
    /// dpkg's state: `install ok installed` when healthy.
    pub status: String,
}

/// Every installed (files on disk) replacement of a family other than the pair, by name.
pub fn installed(entries: &[StatusEntry]) -> Vec<FamilyPackage> {
    let mut out: Vec<FamilyPackage> = entries
        .iter()
        .filter(|e| e.has_files())
        .filter_map(|e| {
            let family = e.extra.get(rocm::FAMILY_FIELD)?;
            let family = rocm::PinnedFamily::by_name(family)?;
            rocm::is_ours_of(e, family).then(|| FamilyPackage {
                family: family.name.to_string(),
                package: e.package.clone(),
                version: e.version.clone(),
                commit: e.extra.get(rocm::COMMIT_FIELD).cloned().unwrap_or_default(),
                provides: e.provides.clone(),
                status: e.status.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.family, &a.package).cmp(&(&b.family, &b.package)));
    out
}

/// The human lines (`family rccl: rccl-pinned 2.27.7…+pin… (commit …), provides …`).
pub fn human(packages: &[FamilyPackage]) -> String {
    packages
        .iter()
        .map(|p| {
            format!(
                "family {}: {} {} (commit {}), provides {}{}\n",
                p.family,
                p.package,
                p.version,
                p.commit,
                p.provides,
                if p.status == "install ok installed" {
                    String::new()
                } else {
                    format!(" — dpkg state `{}`", p.status)
                }
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_families_packages_are_listed() {
        let entry = |package: &str, family: Option<&str>| StatusEntry {
            package: package.into(),
            version: "2.27.7+pin1.gabc".into(),
            status: "install ok installed".into(),
            provides: "rccl (= 2.27.7)".into(),
            extra: [(rocm::COMMIT_FIELD.to_string(), "abc".to_string())]
                .into_iter()
                .chain(family.map(|f| (rocm::FAMILY_FIELD.to_string(), f.to_string())))
                .collect(),
            ..StatusEntry::default()
        };
        let entries = vec![
            entry("hsa-rocr-pinned", None),
            entry("rccl-pinned", Some("rccl")),
            entry("foo-pinned", Some("nope")),
        ];
        let found = installed(&entries);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].family.as_str(), found[0].package.as_str()),
            ("rccl", "rccl-pinned")
        );
        let text = human(&[FamilyPackage {
            family: "rccl".into(),
            package: "rccl-pinned".into(),
            version: "1+pin1".into(),
            commit: "abc".into(),
            provides: "rccl (= 1)".into(),
            status: "install ok installed".into(),
        }]);
        assert_eq!(
            text,
            "family rccl: rccl-pinned 1+pin1 (commit abc), provides rccl (= 1)\n"
        );
    }
}
