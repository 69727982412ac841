//! The files rendered from `debian-templates/`: maintainer scripts, triggers, the apt pin,
//! description, copyright (with years), changelog, lintian overrides. `{{key}}` placeholders;
//! an unknown or unfilled placeholder is an error, never silently left in a package.

use std::collections::BTreeMap;

use super::error::refused;
use super::model::{PlanOptions, ReplacementPlan};
use super::staging::Staging;
use super::stock::StockPackage;
use crate::host::layout::StateLayout;
use crate::rocm;

pub use super::model::DEFAULT_MAINTAINER;

const PREINST_HSA: &str = include_str!("../../../../../debian-templates/preinst-hsa.in");
const POSTINST_HSA: &str = include_str!("../../../../../debian-templates/postinst-hsa.in");
const POSTRM_HSA: &str = include_str!("../../../../../debian-templates/postrm-hsa.in");
const POSTINST_HIP: &str = include_str!("../../../../../debian-templates/postinst-hip.in");
const TRIGGERS: &str = include_str!("../../../../../debian-templates/triggers");
const PREFERENCES: &str = include_str!("../../../../../debian-templates/preferences.in");
const DESCRIPTION: &str = include_str!("../../../../../debian-templates/description.in");
const CHANGELOG: &str = include_str!("../../../../../debian-templates/changelog.in");
const OVERRIDES: &str = include_str!("../../../../../debian-templates/lintian-overrides.in");
const OVERRIDES_PER_LIBRARY: &str =
    include_str!("../../../../../debian-templates/lintian-overrides-per-library.in");

/// Fill `{{key}}` placeholders from `vars`; any placeholder left is an error.
pub fn render(template: &str, vars: &[(&str, &str)]) -> anyhow::Result<String> {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    if let Some(i) = out.find("{{") {
        let rest: String = out[i..].chars().take(40).collect();
        return Err(refused(format!(
            "template placeholder left unfilled: {rest:?}"
        )));
    }
    Ok(out)
}

pub fn preferences(stock: &str, package: &str, commit: &str) -> anyhow::Result<String> {
    render(
        PREFERENCES,
        &[("stock", stock), ("package", package), ("commit", commit)],
    )
}

/// The Description value: synopsis, then continuation lines each starting with a space.
pub fn description(p: &ReplacementPlan, commit: &str) -> anyhow::Result<String> {
    let pin = StateLayout::pin_file(&p.package).display().to_string();
    let text = render(
        DESCRIPTION,
        &[
            ("half", rocm::half_description(p.half)),
            ("stock", &p.stock_name),
            ("stock_version", &p.stock_version.to_string()),
            (
                "repository",
                rocm::families::family_of_half(p.half).repository,
            ),
            ("commit", commit),
            ("pin_file", &pin),
        ],
    )?;
    Ok(text.trim_end().to_string())
}

/// DEBIAN/ scripts and triggers for one replacement. The family's first part (the pair's HSA
/// half, RCCL's one package) writes the loader entry; the others depend on it.
pub fn scripts(
    p: &ReplacementPlan,
    layout: &rocm::RuntimeLayout,
    hsa_package: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    out.insert("triggers".to_string(), TRIGGERS.to_string());
    if layout.spec().loader == rocm::LoaderRegistration::LdconfigTrigger {
        // The library directory is on the loader path already: like the stock packages, no
        // maintainer scripts, the trigger alone refreshes the cache.
        return Ok(out);
    }
    let libdir = layout.lib_dir.as_str();
    if p.half == rocm::families::family_of_half(p.half).first_half() {
        let entry = StateLayout::loader_entry(&p.package).display().to_string();
        let vars = [
            ("package", p.package.as_str()),
            ("stock", p.stock_name.as_str()),
            ("entry", entry.as_str()),
            ("libdir", libdir),
        ];
        out.insert("preinst".into(), render(PREINST_HSA, &vars)?);
        out.insert("postinst".into(), render(POSTINST_HSA, &vars)?);
        out.insert("postrm".into(), render(POSTRM_HSA, &vars)?);
    } else {
        out.insert(
            "postinst".into(),
            render(
                POSTINST_HIP,
                &[
                    ("package", p.package.as_str()),
                    ("hsa_package", hsa_package),
                ],
            )?,
        );
    }
    Ok(out)
}

/// copyright, changelog.Debian.gz and the lintian overrides: (absolute path, bytes).
pub fn docs(
    p: &ReplacementPlan,
    s: &StockPackage,
    staging: &Staging,
    layout: &rocm::RuntimeLayout,
    opts: &PlanOptions,
) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let (year, date) = dates(staging.commit_time)?;
    let year = year.to_string();
    let tool = env!("CARGO_PKG_VERSION");
    let (version, stock_version) = (p.version.to_string(), s.version.to_string());
    let vars = [
        ("package", p.package.as_str()),
        ("version", version.as_str()),
        ("stock", s.name.as_str()),
        ("stock_version", stock_version.as_str()),
        ("commit", staging.commit.as_str()),
        (
            "repository",
            rocm::families::family_of_half(p.half).repository,
        ),
        ("year", year.as_str()),
        ("date", date.as_str()),
        ("maintainer", opts.maintainer.as_str()),
        ("tool_version", tool),
    ];
    let part = rocm::families::part_spec(p.half);
    let copyright = render(part.copyright, &vars)?;
    let changelog = render(CHANGELOG, &vars)?;
    let mut overrides = render(OVERRIDES, &vars)?;
    overrides.push_str(&render(part.lintian_overrides, &vars)?);
    if layout.one_package_per_library() {
        overrides.push_str(&render(OVERRIDES_PER_LIBRARY, &vars)?);
    }
    let doc = format!("/usr/share/doc/{}", p.package);
    Ok(vec![
        (format!("{doc}/copyright"), copyright.into_bytes()),
        (
            format!("{doc}/changelog.Debian.gz"),
            gzip_max(changelog.as_bytes())?,
        ),
        (
            format!("/usr/share/lintian/overrides/{}", p.package),
            overrides.into_bytes(),
        ),
    ])
}

/// gzip -9n: no name, no mtime, best compression flag (lintian checks it).
fn gzip_max(data: &[u8]) -> anyhow::Result<Vec<u8>> {
    use std::io::Write;
    let mut enc = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(3)
        .write(Vec::new(), flate2::Compression::best());
    enc.write_all(data)?;
    Ok(enc.finish()?)
}

/// (year, RFC 2822 date) of a Unix timestamp, UTC: the copyright year and the changelog trailer.
pub fn dates(t: i64) -> anyhow::Result<(i32, String)> {
    Ok((
        crate::deb::date::year(t)?,
        crate::deb::date::changelog_date(t)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_date_r() {
        assert_eq!(
            dates(1764720000).unwrap(),
            (2025, "Wed, 03 Dec 2025 00:00:00 +0000".into())
        );
    }

    #[test]
    fn unfilled_placeholders_are_errors() {
        assert!(render("a {{x}} b", &[]).is_err());
        assert_eq!(render("a {{x}} b", &[("x", "1")]).unwrap(), "a 1 b");
    }

    #[test]
    fn every_template_renders_with_its_variables() {
        let p = preferences("hsa-rocr", "hsa-rocr-pinned", "abc").unwrap();
        assert!(p.contains("Package: hsa-rocr\nPin: version *\nPin-Priority: -1\n"));
    }
}
