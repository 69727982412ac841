//! The pinned RCCL on the stand-in's AMD stock host (issue 34, the AMD part of items 3 and 4):
//! the custom RCCL made by CPack is packaged against the chroot's installed stock `rccl`
//! (`--stock-root`), installed with apt, and kept through the seed's own sequence —
//! `dpkg -i --force-all <stock rccl>.deb` then `apt --fix-broken install` — judged by the
//! loader (the stand-in probe maps librccl.so.1 and reads its identity) and by dpkg (ours
//! installed, every dependant kept). Needs root and the cached bookworm image.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::path::Path;

use rocm_pin_kit::sandbox::{Sandbox, SandboxOptions};
use rocm_pin_kit::standin::chroot::{prepare_stock_host, run_probe};
use rocm_pin_kit::standin::{build_loader_probe, StockRole};

use crate::util::*;

const IDENTITY: &str = "rccl-CPACK-chroot";

/// What the loader maps for librccl.so.1: (identity, real path).
fn rccl_mapped(sb: &Sandbox) -> (String, String) {
    let (lines, ok) = run_probe(sb, &["librccl.so.1"]).unwrap();
    assert!(ok, "librccl.so.1 does not load: {lines:?}");
    (
        lines[0].identity.clone().unwrap_or_default(),
        lines[0].real_path.clone().unwrap_or_default(),
    )
}

fn states(sb: &Sandbox, names: &[&str]) -> Vec<String> {
    let all = dpkg_states(sb);
    names
        .iter()
        .map(|n| format!("{n}={}", all.get(*n).map(String::as_str).unwrap_or("-")))
        .collect()
}

#[test]
fn the_pinned_rccl_survives_the_seeds_force_all_and_fix_broken() {
    if !rocm_pin_testkit::is_root() {
        rocm_pin_testkit::skip_without_root("rccl_chroot", "a chroot");
        return;
    }
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let rccl = set.require(StockRole::Rccl).unwrap().clone();
    let probe = build_loader_probe(&w.join("probe")).unwrap();
    let sb = Sandbox::with_options(&image(), &SandboxOptions::default()).expect("sandbox");
    prepare_stock_host(&sb, &set, &probe).unwrap();
    let stock_identity = rccl_mapped(&sb).0;
    assert_says(&stock_identity, &["STOCK"]);

    let (ours_deb, ours) = package_against(&sb, w);
    install_and_judge(&sb, &ours_deb, &ours, &rccl.name);
    status_shows_the_family(&sb, &ours);

    // The seed's sequence, verbatim in shape: force the stock rccl in, then let apt repair.
    let stock_in = format!("/root/{}", rccl.deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&rccl.deb, &stock_in).unwrap();
    let forced = sb.sh(&format!("dpkg -i --force-all {stock_in}")).unwrap();
    let between = states(&sb, &[&ours, &rccl.name]);
    let fixed = sb.sh("apt-get --fix-broken install -y -q").unwrap();
    let (identity, real) = rccl_mapped(&sb);
    let after = states(
        &sb,
        &[&ours, &rccl.name, "hipblas", "hip-dev", "rocm-hip-runtime"],
    );
    eprintln!(
        "rccl_chroot: dpkg -i --force-all stock rccl rc {:?}; apt --fix-broken install rc {:?}; \
         loader maps {real} ({identity}); between {between:?}, after {after:?}",
        forced.status.code(),
        fixed.status.code()
    );
    assert_success(&fixed, "fix-broken failed");
    assert_eq!(
        identity, IDENTITY,
        "after the seed's sequence the loader maps {real}"
    );
    assert!(
        after.contains(&format!("{ours}=ii")),
        "ours stays: {after:?}"
    );
    for dependant in ["hipblas", "hip-dev", "rocm-hip-runtime"] {
        assert!(
            after.contains(&format!("{dependant}=ii")),
            "{dependant} kept: {after:?}"
        );
    }

    // What else a downstream image runs: a reinstall by the stock name, an explicit stock
    // version (apt refuses it: the pin), a full upgrade. After each, ours is what loads.
    for script in [
        "apt-get install --reinstall -y -q rccl".to_string(),
        format!("apt-get install -y -q rccl={}", rccl.version),
        "apt-get full-upgrade -y -q".to_string(),
    ] {
        let run = sb.sh(&script).unwrap();
        let (identity, real) = rccl_mapped(&sb);
        let now = states(&sb, &[&ours, "hipblas", "hip-dev", "rocm-hip-runtime"]);
        eprintln!(
            "rccl_chroot: {script}: rc {:?}; loader maps {real} ({identity}); {now:?}",
            run.status.code()
        );
        assert_eq!(identity, IDENTITY, "after {script}");
        assert!(
            now.iter().all(|s| s.ends_with("=ii")),
            "after {script}: {now:?}"
        );
    }

    rollback_amd(&sb, &ours, &rccl.name, &stock_identity);
}

/// `apt-get install ./ours.deb`: the stock package goes by Conflicts/Replaces, nothing else,
/// and the loader maps the custom build.
fn install_and_judge(sb: &Sandbox, ours_deb: &Path, ours: &str, stock: &str) {
    let before = dpkg_states(sb);
    let inside = format!("/root/{}", ours_deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(ours_deb, &inside).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "-q", &inside])
        .expect("apt installs ours");
    let after = dpkg_states(sb);
    let gone: Vec<&String> = before
        .iter()
        .filter(|(k, v)| v.starts_with("ii") && !after.get(*k).is_some_and(|a| a.starts_with("ii")))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(gone, [stock], "only the stock package goes");
    assert!(after.get(ours).is_some_and(|s| s.starts_with("ii")));
    assert_eq!(rccl_mapped(sb).0, IDENTITY);
}

/// Debian's packaging, on a Debian-shaped `librccl1` (tests/package/rccl.rs, `debian_librccl`)
/// published as a local repository: `librccl1-tests` depends on `librccl1 (= <version>)`, the
/// hard case for a replacement. Ours is packaged against the installed stock (the multiarch
/// directory found through the package owning librccl.so.1), installed with apt, and kept
/// through the seed's sequence, a reinstall by the stock name, installing `librccl-dev`
/// (`=` on librccl1), a newer stock release published then `apt full-upgrade`, and an
/// explicit stock version. The real librccl1 7.2.4 is criterion 3's input (not downloaded here).
#[test]
fn the_pinned_rccl_keeps_debians_exact_dependants() {
    if !rocm_pin_testkit::is_root() {
        rocm_pin_testkit::skip_without_root("rccl_chroot", "a chroot");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let version = "7.2.4-1~exp3";
    let (stock_deb, _dev, _tests) = crate::rccl::debian_librccl(&w.join("debian"), version);
    let probe = build_loader_probe(&w.join("probe")).unwrap();
    let sb = Sandbox::with_options(&image(), &SandboxOptions::default()).expect("sandbox");
    sb.add_local_repo("debrccl", &w.join("debian")).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "-q", "librccl1-tests"])
        .expect("install the Debian-shaped stock");
    rocm_pin_kit::standin::chroot::install_probe(&sb, &probe).unwrap();
    assert!(
        rccl_mapped(&sb).0.is_empty(),
        "the stock library has no identity"
    );

    let (ours_deb, ours) = package_against(&sb, w);
    assert_eq!(ours, "librccl1-pinned");
    install_and_judge(&sb, &ours_deb, &ours, "librccl1");

    // A newer stock release, published after ours went in (for full-upgrade).
    let newer = w.join("newer");
    let _ = crate::rccl::debian_librccl(&newer, "7.2.4-1~exp4");
    for f in ["librccl-dev_7.2.4-1~exp4", "librccl1-tests_7.2.4-1~exp4"] {
        for d in debs_in(&newer) {
            if d.file_name().unwrap().to_str().unwrap().starts_with(f) {
                std::fs::remove_file(d).unwrap();
            }
        }
    }
    let stock_in = format!("/root/{}", stock_deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&stock_deb, &stock_in).unwrap();
    let steps: Vec<(&str, String)> = vec![
        (
            "seed",
            format!("dpkg -i --force-all {stock_in}; apt-get --fix-broken install -y -q"),
        ),
        (
            "reinstall",
            "apt-get install --reinstall -y -q librccl1".into(),
        ),
        ("dev", "apt-get install -y -q librccl-dev".into()),
        ("newer", String::new()),
        ("full-upgrade", "apt-get full-upgrade -y -q".into()),
        (
            "explicit",
            format!("apt-get install -y -q librccl1={version}"),
        ),
    ];
    for (step, script) in steps {
        if step == "newer" {
            sb.add_local_repo("debrccl-newer", &newer).unwrap();
            continue;
        }
        let run = sb.sh(&script).unwrap();
        let (identity, real) = rccl_mapped(&sb);
        let now = states(&sb, &[&ours, "librccl1-tests", "librccl1"]);
        eprintln!(
            "rccl_chroot debian: {script}: rc {:?}; loader maps {real} ({identity}); {now:?}",
            run.status.code()
        );
        assert_eq!(identity, IDENTITY, "after {script}");
        assert!(
            now[0].ends_with("=ii") && now[1].ends_with("=ii"),
            "after {script}: {now:?}"
        );
        if step == "dev" {
            assert!(
                dpkg_states(&sb)
                    .get("librccl-dev")
                    .is_some_and(|s| s.starts_with("ii")),
                "librccl-dev (= on librccl1) installs against ours"
            );
        }
    }

    rollback_debian(&sb, &ours, version);
}

/// `rocm-pin status --json` lists the RCCL family's package, and the pair's own report does
/// not take it for half of the pair (nothing of the pair is installed: `not-installed`).
fn status_shows_the_family(sb: &Sandbox, ours: &str) {
    let out = rocm_pin()
        .args(["status", "--json", "--root"])
        .arg(sb.root())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["families"][0]["family"], "rccl", "{v:#}");
    assert_eq!(v["families"][0]["package"], ours, "{v:#}");
    assert_eq!(v["families"][0]["commit"], COMMIT);
    assert_eq!(v["health"], "not-installed", "the pair's health: {v:#}");
    assert!(
        v["packages"].as_array().is_none_or(|p| p.is_empty()),
        "{v:#}"
    );
    let human = rocm_pin_on_root("status", sb.root());
    assert!(
        String::from_utf8_lossy(&human.stdout).contains(&format!("family rccl: {ours} ")),
        "{}",
        String::from_utf8_lossy(&human.stdout)
    );
}

/// `rocm-pin rollback --family rccl` on the AMD host: the stock rccl back at the marker's
/// version (fetched with apt-get download: nothing was kept), ours purged with its pin,
/// nothing else removed, and the loader maps the stock library again.
fn rollback_amd(sb: &Sandbox, ours: &str, stock: &str, stock_identity: &str) {
    sb.install_rocm_pin(&bin()).unwrap();
    let out = sb
        .run(&["rocm-pin", "rollback", "--family", "rccl", "--json"])
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rollback --family rccl failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["purged"][0], ours, "{report:#}");
    assert_eq!(report["removed"], serde_json::json!([ours]), "{report:#}");
    let now = states(sb, &[ours, stock, "hipblas", "hip-dev", "rocm-hip-runtime"]);
    assert_eq!(
        now,
        [
            format!("{ours}=-"),
            format!("{stock}=ii"),
            "hipblas=ii".to_string(),
            "hip-dev=ii".to_string(),
            "rocm-hip-runtime=ii".to_string()
        ],
        "{report:#}"
    );
    assert!(
        dpkg_states(sb)
            .get(ours)
            .is_none_or(|s| !s.starts_with('r')),
        "purged, not removed"
    );
    assert_eq!(
        rccl_mapped(sb).0,
        stock_identity,
        "the stock library loads again"
    );
    assert!(!sb.path(format!("/etc/apt/preferences.d/{ours}")).exists());
    eprintln!("rccl_chroot: rollback --family rccl: {}", report["checks"]);
}

/// `rocm-pin rollback --family rccl` puts Debian's librccl1 back at the replaced version (the
/// newer release is published; the marker's version is what comes back), with both exact
/// dependants kept.
fn rollback_debian(sb: &Sandbox, ours: &str, version: &str) {
    sb.install_rocm_pin(&bin()).unwrap();
    let out = sb
        .run(&["rocm-pin", "rollback", "--family", "rccl"])
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let all = dpkg_states(sb);
    assert!(!all.contains_key(ours), "{ours} purged");
    for kept in ["librccl1", "librccl1-tests", "librccl-dev"] {
        assert!(
            all.get(kept).is_some_and(|s| s.starts_with("ii")),
            "{kept}: {all:?}"
        );
    }
    assert_eq!(
        sb.run_ok(&["dpkg-query", "-W", "-f", "${Version}", "librccl1"])
            .unwrap(),
        version
    );
    assert!(
        rccl_mapped(sb).0.is_empty(),
        "the stock library loads again"
    );
}

/// The CPack-built custom RCCL packaged against the chroot's installed stock
/// (`--stock-root`): the .deb and its package name.
fn package_against(sb: &Sandbox, w: &Path) -> (std::path::PathBuf, String) {
    let deb = rocm_pin_testkit::cpack::package_cpack_rccl(&bin(), sb.root(), w, IDENTITY);
    let name = field(&deb, "Package");
    (deb, name)
}
