//! `rocm-pin package` from stock .debs (no dpkg database): the multi-version-named stand-in set,
//! every field and entry checked with dpkg-deb, lintian, byte-identical rebuild.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::path::Path;

use crate::util::*;
use rocm_pin_kit::standin::{Naming, StockRole};

#[test]
fn from_stock_debs_multi_version_names() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let mut spec = default_spec();
    spec.naming = Naming::MultiVersion;
    let set = stock_set(&w.join("stock"), spec);
    let hsa = set.require(StockRole::HsaRocr).unwrap().clone();
    let hip = set.require(StockRole::HipRuntime).unwrap().clone();
    assert_eq!(hsa.name, "hsa-rocr7.2.4");
    let staging = w.join("staging");
    let names = build_staging(&staging, &StagingSpec::default());

    // Every stand-in .deb is given: discovery must pick only the pair (decoys, metas ignored).
    let out = w.join("out");
    let debs = set.debs();
    let every_deb = || StockFrom::Debs(debs.iter().map(|d| d.as_path()).collect());
    let res = package_staging(&staging, every_deb(), &out, &[]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "package failed: {stderr}");
    let built = debs_in(&out);
    assert_eq!(built.len(), 2, "{built:?}");
    let ver_hsa = format!("{}+pin{COMMIT_TIME}.gb539bf7", hsa.version);
    let ver_hip = format!("{}+pin{COMMIT_TIME}.gb539bf7", hip.version);
    let hsa_deb = out.join(format!(
        "hsa-rocr7.2.4-pinned_{ver_hsa}_{}.deb",
        hsa.architecture
    ));
    let hip_deb = out.join(format!(
        "hip-runtime-amd7.2.4-pinned_{ver_hip}_{}.deb",
        hip.architecture
    ));
    assert!(hsa_deb.is_file() && hip_deb.is_file(), "{built:?}");

    // The report names rebuilt, aliased and carried files per package.
    assert_says(&stderr, &["hsa-rocr7.2.4-pinned: rebuilt /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0", "hsa-rocr7.2.4-pinned: aliased /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204 = /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0"]);
    assert!(
        stderr.contains("hip-runtime-amd7.2.4-pinned: carried /opt/rocm-7.2.4/lib/.hipInfo")
            || stderr.contains("carried /opt/rocm-7.2.4/.hipInfo")
            || stderr.contains(".hipInfo"),
        "{}",
        stderr
    );

    // Control fields.
    assert_eq!(field(&hsa_deb, "Package"), "hsa-rocr7.2.4-pinned");
    assert_eq!(field(&hsa_deb, "Version"), ver_hsa);
    assert_eq!(field(&hsa_deb, "Protected"), "yes");
    assert_eq!(field(&hsa_deb, "X-Rocm-Pin-Commit"), COMMIT);
    assert_eq!(field(&hip_deb, "X-Rocm-Pin-Commit"), COMMIT);
    assert!(field(&hsa_deb, "Provides").contains(&format!("hsa-rocr7.2.4 (= {})", hsa.version)));
    assert!(field(&hsa_deb, "Conflicts").contains("hsa-rocr7.2.4"));
    assert!(field(&hsa_deb, "Replaces").contains("hsa-rocr7.2.4"));
    let hip_provides = field(&hip_deb, "Provides");
    assert_says(
        &hip_provides,
        &[&format!("hip-runtime-amd7.2.4 (= {})", hip.version)],
    );
    // Carried stock relations: hip-rocclr stays provided and replaced.
    for f in ["Provides", "Replaces"] {
        let stock_v = hip.field(f).unwrap_or_default().to_string();
        for rel in stock_v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            assert!(
                field(&hip_deb, f).contains(rel),
                "{f} lost stock relation {rel}"
            );
        }
    }
    let hip_dep = field(&hip_deb, "Depends");
    assert!(
        hip_dep.contains(&format!("hsa-rocr7.2.4-pinned (= {ver_hsa})")),
        "HIP must depend on our HSA at our exact version: {hip_dep}"
    );
    assert!(
        !hip_dep.contains("hsa-rocr7.2.4 ("),
        "stock HSA dependency not remapped: {hip_dep}"
    );
    let desc = field(&hsa_deb, "Description");
    assert!(
        desc.contains(COMMIT) && desc.contains("rollback"),
        "{}",
        desc
    );

    // Contents.
    let hsa_c = contents(&hsa_deb);
    let hip_c = contents(&hip_deb);
    let has = |c: &[(char, String, String)], kind: char, path: &str| {
        c.iter()
            .find(|(k, p, _)| *k == kind && p == path)
            .map(|(_, _, l)| l.clone())
    };
    let lib = |n: &str| format!("{PREFIX}/lib/{n}");
    assert!(has(&hsa_c, '-', &lib(&names.hsa)).is_some(), "{hsa_c:?}");
    for stock_lib in &hsa.libraries {
        assert_eq!(
            has(&hsa_c, 'h', &stock_lib.path).as_deref(),
            Some(lib(&names.hsa).as_str()),
            "stock filename {} must be a hard link to the rebuilt file",
            stock_lib.path
        );
    }
    assert_eq!(
        has(&hsa_c, 'l', &lib("libhsa-runtime64.so.1")).as_deref(),
        Some(names.hsa.as_str())
    );
    assert_eq!(
        has(&hsa_c, 'l', &lib("libhsa-runtime64.so")).as_deref(),
        Some("libhsa-runtime64.so.1")
    );
    assert!(has(&hsa_c, '-', "/etc/apt/preferences.d/hsa-rocr7.2.4-pinned").is_some());
    assert!(has(&hsa_c, '-', &format!("{PREFIX}/.info/rocm-pin.json")).is_some());
    assert!(
        has(&hip_c, '-', &format!("{PREFIX}/.info/rocm-pin.json")).is_none(),
        "marker only in HSA"
    );
    assert!(has(&hip_c, '-', &lib(&names.hip)).is_some());
    for stock_lib in &hip.libraries {
        let l = has(&hip_c, 'h', &stock_lib.path);
        assert!(l.is_some(), "{} not aliased in {hip_c:?}", stock_lib.path);
    }
    for pkg in [&hsa, &hip] {
        for f in &pkg.files {
            let found = hsa_c.iter().chain(hip_c.iter()).any(|(_, p, _)| p == f);
            assert!(
                found,
                "stock path {f} of {} missing from the replacements",
                pkg.name
            );
        }
    }
    // The loader entry is written by the maintainer scripts, never shipped in data.tar.
    assert!(hsa_c
        .iter()
        .chain(hip_c.iter())
        .all(|(_, p, _)| !p.starts_with("/etc/ld.so.conf.d")));
    // No path in both packages (directories aside).
    for (k, p, _) in &hsa_c {
        if *k != 'd' {
            assert!(
                !hip_c.iter().any(|(k2, p2, _)| *k2 != 'd' && p2 == p),
                "{p} in both"
            );
        }
    }
    // Conffiles and scripts.
    let info = dpkg_deb_into_tempdir("-e", &hsa_deb);
    let conffiles = std::fs::read_to_string(info.path().join("conffiles")).unwrap();
    assert!(conffiles.contains("/etc/apt/preferences.d/hsa-rocr7.2.4-pinned"));
    let pin = std::fs::read_to_string(
        tempdir_extract(&hsa_deb)
            .path()
            .join("etc/apt/preferences.d/hsa-rocr7.2.4-pinned"),
    )
    .unwrap();
    assert_says(
        &pin,
        &["Package: hsa-rocr7.2.4\nPin: version *\nPin-Priority: -1"],
    );
    let triggers = std::fs::read_to_string(info.path().join("triggers")).unwrap();
    assert!(triggers.contains("activate-noawait ldconfig"));
    // The rendered maintainer scripts pass shellcheck as POSIX sh.
    must(
        std::process::Command::new("shellcheck")
            .args(["-s", "sh"])
            .arg(info.path().join("preinst"))
            .arg(info.path().join("postinst"))
            .arg(info.path().join("postrm")),
    );
    let preinst = std::fs::read_to_string(info.path().join("preinst")).unwrap();
    assert!(
        preinst.contains("/etc/ld.so.conf.d/hsa-rocr7.2.4-pinned.conf")
            && preinst.contains("ldconfig")
    );

    // Rebuilt libraries are stripped of debug info but keep the backport symbol.
    let x = tempdir_extract(&hsa_deb);
    let real = x.path().join(lib(&names.hsa).trim_start_matches('/'));
    let sections = must_stdout(std::process::Command::new("readelf").arg("-S").arg(&real));
    assert!(!sections.contains(".debug_info"), "not stripped");
    let staged_sections = must_stdout(
        std::process::Command::new("readelf")
            .arg("-S")
            .arg(staging.join("lib").join(&names.hsa)),
    );
    assert!(
        staged_sections.contains(".debug_info"),
        "the test staging should have debug info"
    );
    let syms = must_stdout(
        std::process::Command::new("readelf")
            .args(["--dyn-syms", "-W"])
            .arg(&real),
    );
    assert_says(&syms, &["hsa_amd_signal_create_v2@@ROCR_1"]);
    // The marker names the commit, the replaced packages and the sha256 of the shipped file.
    let marker: rocm_pin_core::rocm::Marker = serde_json::from_slice(
        &std::fs::read(x.path().join("opt/rocm-7.2.4/.info/rocm-pin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker.commit, COMMIT);
    assert_eq!(marker.replaced.len(), 2);
    let shipped = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(&real).unwrap()))
    };
    assert!(marker
        .libraries
        .iter()
        .any(|l| l.sha256 == shipped && l.soname == "libhsa-runtime64.so.1"));

    // lintian: no error or warning that is not overridden with a reason.
    for d in [&hsa_deb, &hip_deb] {
        assert_lintian_clean(d);
    }

    // Byte-identical rebuild.
    let out2 = w.join("out2");
    let res2 = package_staging(&staging, every_deb(), &out2, &[]);
    assert_success(&res2, "the command");
    assert_rebuilt_identically(&built, &out2);
}

#[test]
fn vendored_library_ships_with_the_package_that_needs_it() {
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let staging = w.join("staging");
    build_staging(
        &staging,
        &StagingSpec {
            vendored: true,
            ..Default::default()
        },
    );
    let out = w.join("out");
    let res = package_staging(
        &staging,
        StockFrom::Debs(vec![
            &set.require(StockRole::HsaRocr).unwrap().deb,
            &set.require(StockRole::HipRuntime).unwrap().deb,
        ]),
        &out,
        &[],
    );
    assert_success(&res, "the command");
    let debs = debs_in(&out);
    let hip = deb_of(&debs, "hip-runtime-amd-pinned");
    let hsa = deb_of(&debs, "hsa-rocr-pinned");
    let hip_c = contents(hip);
    assert!(
        hip_c
            .iter()
            .any(|(k, p, _)| *k == '-' && p == "/opt/rocm-7.2.4/lib/libvendored.so.3.1.0"),
        "{hip_c:?}"
    );
    assert!(hip_c.iter().any(|(k, p, l)| *k == 'l'
        && p == "/opt/rocm-7.2.4/lib/libvendored.so.3"
        && l == "libvendored.so.3.1.0"));
    assert!(contents(hsa)
        .iter()
        .all(|(_, p, _)| !p.contains("libvendored")));
}

/// `dpkg-deb -x` (the files) of `deb` into a new temporary directory.
fn tempdir_extract(deb: &Path) -> tempfile::TempDir {
    dpkg_deb_into_tempdir("-x", deb)
}

/// `dpkg-deb ACTION DEB DIR` (`-x` the files, `-e` the control members) into a new temporary
/// directory.
fn dpkg_deb_into_tempdir(action: &str, deb: &Path) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    must(
        std::process::Command::new("dpkg-deb")
            .arg(action)
            .arg(deb)
            .arg(d.path()),
    );
    d
}

/// Adopt's producer of a staging: the libraries in `lib/` with the marker's commit and where
/// they were taken from, no build manifest written or needed; package records that source in
/// the marker (a build's marker has none).
#[test]
fn an_adopted_staging_is_packaged_without_a_manifest_and_says_where_it_came_from() {
    use rocm_pin_core::ops::package::{self, PackageRequest, StagingInput, StockInput};
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let dir = w.join("staging");
    build_staging(&dir, &StagingSpec::default());
    let source = format!(
        "{} of {PREFIX}/lib (test)",
        rocm_pin_core::rocm::ADOPTED_SOURCE
    );
    let staging =
        rocm_pin_core::ops::plan::staging::adopted(&dir, COMMIT, COMMIT_TIME, source.clone())
            .unwrap();
    assert_eq!(staging.adopted_source(), Some(source.as_str()));
    assert!(staging.patches().is_empty() && !staging.backport_check_skipped());
    let out = w.join("out");
    let req = PackageRequest {
        staging: StagingInput::Read(staging),
        stock: StockInput::Debs {
            debs: vec![
                set.require(StockRole::HsaRocr).unwrap().deb.clone(),
                set.require(StockRole::HipRuntime).unwrap().deb.clone(),
            ],
            target_root: rocm_pin_core::host::root::Root::system(),
        },
        prefix: None,
        out: out.clone(),
        compression: rocm_pin_core::deb::Compression::Gzip,
        threads: None,
        source_date_epoch: None,
        options: Default::default(),
    };
    package::package(&req, &rocm_pin_core::progress::Silent).unwrap();
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["lib"], "nothing but the libraries in the staging");
    let hsa = deb_of(&debs_in(&out), "hsa-rocr-pinned").to_path_buf();
    let x = tempdir_extract(&hsa);
    let marker: rocm_pin_core::rocm::Marker = serde_json::from_slice(
        &std::fs::read(x.path().join("opt/rocm-7.2.4/.info/rocm-pin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker.source.as_deref(), Some(source.as_str()));
    assert_eq!(marker.commit, COMMIT);
}
