//! The release hold for what is not installed yet: the packages apt offers that depend with
//! `=` on the stock a package of ours replaces, at the replaced version (Debian's
//! `libhsa-runtime-dev`, `libamdhip64-dev`; AMD's `hip-dev` siblings), held by name and version
//! before the user installs them, so a -dev package installed after `rocm-pin install` is
//! already covered, with nothing to re-run and no hook needed.
//!
//! Why this and not the alternatives (apt_preferences(5)):
//! - `Package: src:NAME` pins every binary of the stock's source package. Debian's -dev
//!   packages share the runtime's source, but AMD's CPack-built packages carry no `Source`
//!   field (each is its own source), so it misses AMD's; and the pin would match the stock
//!   binaries themselves, whose `-1` then wins only through the preferences files' order
//!   (apt's first matching pin per version).
//! - Refreshing the hold from the guard's hook (`rocm-pin guard hook`) works only with
//!   `install --guard`, which is off by default.
//!
//! A package held here and never installed costs nothing: apt only prefers that version if
//! the user installs it, which is the one that works next to ours (a newer one needs a newer
//! stock, which ours keeps away). Held at 990, below 1000, so apt never downgrades for it. A
//! dependant a repository adds after `install` is still only named by `status`/verify, with
//! the `rocm-pin install` that adds it.

use super::root::Root;
use super::status::StatusEntry;

/// `name (= version)` relations of a Depends field (alternatives included).
pub(crate) fn exact_relations(depends: &str) -> Vec<(String, String)> {
    depends
        .split([',', '|'])
        .filter_map(|rel| {
            let (name, rest) = rel.trim().split_once('(')?;
            let rest = rest.trim().strip_prefix('=')?;
            let version = rest.trim_end_matches(')').trim();
            let name = name.trim().split(':').next().unwrap_or("").to_string();
            (!name.is_empty() && !version.is_empty()).then(|| (name, version.to_string()))
        })
        .collect()
}

/// Names listed under `Reverse Depends:` in `apt-cache showpkg` output (`  NAME,TARGET
/// [VERSION]` lines). Not `apt-cache rdepends`: it lists nothing for a package with no version
/// (the replaced stock where no source offers it any more, measured on Debian's 7.2.4).
pub(crate) fn parse_showpkg_reverse_depends(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with("  ") {
            inside = line.starts_with("Reverse Depends:");
            continue;
        }
        if !inside {
            continue;
        }
        let name = line.trim().split(',').next().unwrap_or("");
        let name = name.split(':').next().unwrap_or("");
        if super::status::is_package_name(name) && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// `(stock name, version)` each installed package of ours provides with `=` (its marker of
/// what it replaces: `Provides: libhsa-runtime64-1 (= 6.4.3-1)`).
pub(crate) fn replaced_versions(
    installed: &[StatusEntry],
    stock_names: &[String],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in installed.iter().filter(|e| e.has_files()) {
        for rel in exact_relations(&e.provides) {
            if stock_names.contains(&rel.0) && !out.contains(&rel) {
                out.push(rel);
            }
        }
    }
    out
}

/// What to hold among `offered` (apt's paragraphs of the reverse dependants, every version):
/// each version that depends with `=` on a replaced stock at the replaced version — itself
/// when `hold_dependants` (the flavour's `hold_exact_dependants`), and its other exact `=`
/// siblings, unless one is installed at another version (990 never downgrades it anyway).
pub(crate) fn offered_holds(
    installed: &[StatusEntry],
    offered: &[StatusEntry],
    replaced: &[(String, String)],
    hold_dependants: bool,
) -> Vec<(String, String)> {
    let installed_at = |name: &str| {
        installed
            .iter()
            .find(|e| e.package == name && e.has_files())
            .map(|e| e.version.as_str())
    };
    let mut held: Vec<(String, String)> = Vec::new();
    let mut hold = |n: &str, v: &str| {
        if !held.iter().any(|(h, _)| h == n) {
            held.push((n.to_string(), v.to_string()));
        }
    };
    for p in offered {
        let rels = exact_relations(p.extra.get("Depends").map_or("", String::as_str));
        if !rels.iter().any(|r| replaced.contains(r)) {
            continue;
        }
        let stock = |n: &str| replaced.iter().any(|(s, _)| s == n);
        if hold_dependants && !stock(&p.package) {
            hold(&p.package, &p.version);
        }
        for (n, v) in rels.iter().filter(|(n, _)| !stock(n)) {
            if installed_at(n).is_none_or(|iv| iv == v) {
                hold(n, v);
            }
        }
    }
    held.sort();
    held
}

/// The holds for packages apt offers (see the module comment), asked of apt read-only over
/// `root`. An apt that cannot answer holds nothing more: the installed ones are held anyway.
pub(crate) fn offered(
    root: &Root,
    installed: &[StatusEntry],
    stock_names: &[String],
    hold_dependants: bool,
) -> Vec<(String, String)> {
    let replaced = replaced_versions(installed, stock_names);
    if replaced.is_empty() {
        return Vec::new();
    }
    let mut args = vec!["showpkg"];
    args.extend(replaced.iter().map(|(n, _)| n.as_str()));
    let Ok(out) = super::apt::apt_cache_read_only(root, &args) else {
        return Vec::new();
    };
    let names = parse_showpkg_reverse_depends(&String::from_utf8_lossy(&out.stdout));
    if names.is_empty() {
        return Vec::new();
    }
    let mut args = vec!["show", "--all-versions"];
    args.extend(names.iter().map(String::as_str));
    let Ok(out) = super::apt::apt_cache_read_only(root, &args) else {
        return Vec::new();
    };
    // Purely virtual names make apt-cache say so on stderr and exit non-zero; the paragraphs
    // it printed for the others are what counts.
    let offered = super::status::parse_status(&String::from_utf8_lossy(&out.stdout), &["Depends"])
        .unwrap_or_default();
    offered_holds(installed, &offered, &replaced, hold_dependants)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(package: &str, version: &str, status: &str, depends: &str) -> StatusEntry {
        let mut e = StatusEntry {
            package: package.into(),
            version: version.into(),
            status: status.into(),
            ..Default::default()
        };
        if !depends.is_empty() {
            e.extra.insert("Depends".into(), depends.into());
        }
        e
    }

    #[test]
    fn reads_the_reverse_depends_of_showpkg_once_each() {
        let text = "Package: libhsa-runtime64-1\nVersions: \n\nReverse Depends: \n  libhsa-runtime-dev,libhsa-runtime64-1 6.4.3-1\n  rocminfo,libhsa-runtime64-1 6.4\n  libhsa-runtime-dev,libhsa-runtime64-1 6.4.3-2\n  librocfft0:amd64,libhsa-runtime64-1\nDependencies: \n  other,x\nProvides: \nReverse Provides: \nlibhsa-runtime64-1-pinned 6.4.3-1+pin1 (= 6.4.3-1)\n";
        assert_eq!(
            parse_showpkg_reverse_depends(text),
            vec!["libhsa-runtime-dev", "rocminfo", "librocfft0"]
        );
    }

    #[test]
    fn replaced_versions_come_from_our_provides() {
        let mut ours = entry(
            "libhsa-runtime64-1-pinned",
            "6.4.3-1+pin1",
            "install ok installed",
            "",
        );
        ours.provides = "libhsa-runtime64-1 (= 6.4.3-1), libhsa-runtime64 ".into();
        let stock = vec!["libhsa-runtime64-1".to_string()];
        assert_eq!(
            replaced_versions(&[ours], &stock),
            vec![("libhsa-runtime64-1".to_string(), "6.4.3-1".to_string())]
        );
    }

    /// Debian's flavour holds the offered -dev at the version that needs the replaced stock
    /// (not the newer one that needs a newer stock), and its sibling; AMD's holds the sibling
    /// only; a sibling installed at another version is left alone.
    #[test]
    fn holds_the_offered_version_that_needs_the_replaced_stock() {
        let replaced = vec![("libhsa-runtime64-1".to_string(), "6.4.3-1".to_string())];
        let installed = vec![entry("rocm-core", "9", "install ok installed", "")];
        let offered = vec![
            entry(
                "libhsa-runtime-dev",
                "6.4.3-2",
                "",
                "libhsa-runtime64-1 (= 6.4.3-2), libx (= 6.4.3-2)",
            ),
            entry(
                "libhsa-runtime-dev",
                "6.4.3-1",
                "",
                "libhsa-runtime64-1 (= 6.4.3-1), libx (= 6.4.3-1), rocm-core (= 8)",
            ),
            entry("rocminfo", "6.4.3-1", "", "libhsa-runtime64-1 (>= 6.4)"),
        ];
        let v = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(
            offered_holds(&installed, &offered, &replaced, true),
            vec![v("libhsa-runtime-dev", "6.4.3-1"), v("libx", "6.4.3-1")]
        );
        assert_eq!(
            offered_holds(&installed, &offered, &replaced, false),
            vec![v("libx", "6.4.3-1")]
        );
    }
}
