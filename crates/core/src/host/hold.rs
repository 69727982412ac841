//! The release hold: what keeps a newer stock ROCm release from being half-installed around
//! our pair. ROCm's meta packages depend with exact `=` versions on the stock pair *and* on
//! their siblings (`rocm-hip-runtime` → `hip-runtime-amd (= …)`, `hsa-rocr (= …)`,
//! `rocm-core (= …)`). With the stock pair pinned away, a new release makes `apt full-upgrade`
//! and `apt-get dist-upgrade` (measured, bookworm and trixie) remove the meta package to
//! upgrade `rocm-core` alone — which re-points `/opt/rocm` at the new, runtime-less prefix
//! and exits 0. Holding those siblings at their installed versions (priority 990, so apt never
//! picks a newer one but never downgrades either) keeps the whole release where it is; the
//! metas themselves stay unpinned, so apt still lists them as kept back.
//!
//! Written by `install` (an apt preferences file rocm-pin owns, not a conffile of ours),
//! removed by `rollback`.

use anyhow::Context;

use super::hold_offered::exact_relations;
use super::layout::StateLayout;
use super::root::{FileKind, Root};
use super::status::StatusEntry;

/// The installed packages to hold: every exact `=` dependency (other than the stock pair) of
/// an installed package that depends with `=` on the stock pair, at its installed version;
/// with `hold_dependants` (the flavour's `hold_exact_dependants`), that package itself too.
/// `entries` is the status database read with Depends kept
/// ([`status::read_status_with_depends`]).
pub(crate) fn held_packages(
    entries: &[StatusEntry],
    stock_names: &[String],
    hold_dependants: bool,
) -> Vec<(String, String)> {
    let installed = |name: &str| {
        entries
            .iter()
            .find(|e| e.package == name && e.is_installed_ok())
            .map(|e| e.version.clone())
    };
    let mut held: Vec<(String, String)> = Vec::new();
    for e in entries.iter().filter(|e| e.is_installed_ok()) {
        let rels = exact_relations(e.extra.get("Depends").map(String::as_str).unwrap_or(""));
        if !rels.iter().any(|(n, _)| stock_names.contains(n)) {
            continue;
        }
        if hold_dependants && !held.iter().any(|(h, _)| *h == e.package) {
            held.push((e.package.clone(), e.version.clone()));
        }
        for (n, v) in rels {
            if stock_names.contains(&n) || held.iter().any(|(h, _)| *h == n) {
                continue;
            }
            if installed(&n).as_deref() == Some(v.as_str()) {
                held.push((n, v));
            }
        }
    }
    held.sort();
    held
}

/// Write (or refresh) the hold for the stock pair `stock_names`, judged on `entries` (the
/// status database as apt left it, read with Depends), and on what apt offers that would need
/// the same holds once installed ([`super::hold_offered`]). Returns what it holds.
pub(crate) fn write(
    root: &Root,
    entries: &[StatusEntry],
    stock_names: &[String],
    hold_dependants: bool,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut held = held_packages(entries, stock_names, hold_dependants);
    for o in super::hold_offered::offered(root, entries, stock_names, hold_dependants) {
        if !held.iter().any(|(h, _)| *h == o.0) {
            held.push(o);
        }
    }
    held.sort();
    let path = root.host_path(StateLayout::release_hold());
    if held.is_empty() {
        remove(root)?;
        return Ok(held);
    }
    let mut text = String::from(
        "# Written by `rocm-pin install`, removed by `rocm-pin rollback`: holds the packages\n\
         # that need the replaced stock with an exact `=` (installed now, or offered by apt for later)\n\
         # at the installed release, so a newer stock release cannot be half-installed around ours.\n\
         # See `rocm-pin status`.\n",
    );
    for (n, v) in &held {
        text.push_str(&format!(
            "\nPackage: {n}\nPin: version {v}\nPin-Priority: 990\n"
        ));
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(held)
}

pub(crate) fn remove(root: &Root) -> anyhow::Result<bool> {
    let p = root.host_path(StateLayout::release_hold());
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", p.display())),
    }
}

/// The packages the hold file names (for `status`).
pub(crate) fn read(root: &Root) -> Vec<(String, String)> {
    let Ok(text) = root.read_to_string(StateLayout::release_hold(), FileKind::Config) else {
        return Vec::new();
    };
    super::apt::parse_preferences(&text)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|s| {
            let v = s.pin.strip_prefix("version ").unwrap_or(&s.pin).to_string();
            s.packages.into_iter().map(move |p| (p, v.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_exact_relations() {
        assert_eq!(
            exact_relations("hip-runtime-amd (= 7.2.53211.70204-93~24.04), rocm-core (= 7.2.4.70204-93~24.04), libc6 (>= 2.34) | foo, bar:amd64 (= 1)"),
            vec![
                ("hip-runtime-amd".to_string(), "7.2.53211.70204-93~24.04".to_string()),
                ("rocm-core".to_string(), "7.2.4.70204-93~24.04".to_string()),
                ("bar".to_string(), "1".to_string()),
            ]
        );
    }

    /// Debian's -dev package pins the runtime, hiprtc and builtins with `=`: with all three
    /// replaced, the hold keeps the -dev package itself (Debian's flavour) and the siblings it
    /// shares with the replaced set that are not replaced; AMD's flavour holds the siblings only.
    #[test]
    fn debian_flavour_holds_the_exact_dependant_and_its_unreplaced_siblings() {
        let d = tempfile::tempdir().unwrap();
        let admin = d.path().join("var/lib/dpkg");
        std::fs::create_dir_all(&admin).unwrap();
        let para = |name: &str, version: &str, depends: &str| {
            format!(
                "Package: {name}\nStatus: install ok installed\nArchitecture: amd64\nVersion: {version}\n{depends}\n"
            )
        };
        let status = [
            para("libamdhip64-7-pinned", "7.2.4-1~exp2+pin1.gabc", ""),
            para("libhiprtc7", "7.2.4-1~exp2", ""),
            para(
                "libamdhip64-dev",
                "7.2.4-1~exp2",
                "Depends: libamdhip64-7 (= 7.2.4-1~exp2), libhiprtc7 (= 7.2.4-1~exp2), libhsa-runtime-dev",
            ),
            para("rocminfo", "7.2.4-1", "Depends: libhsa-runtime64-1 (>= 6.4.3~)"),
        ]
        .join("\n");
        std::fs::write(admin.join("status"), status).unwrap();
        let root = Root::new(d.path());
        let entries = crate::rocm::read_status_with_depends(&root).unwrap();
        let stock = vec!["libamdhip64-7".to_string()];
        let v = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(
            held_packages(&entries, &stock, true),
            vec![
                v("libamdhip64-dev", "7.2.4-1~exp2"),
                v("libhiprtc7", "7.2.4-1~exp2")
            ]
        );
        assert_eq!(
            held_packages(&entries, &stock, false),
            vec![v("libhiprtc7", "7.2.4-1~exp2")]
        );
    }
}
