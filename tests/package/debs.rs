//! `rocm-pin package` from stock .debs (no dpkg database): the multi-version-named stand-in set,
//! every field and entry checked with dpkg-deb, lintian, byte-identical rebuild.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use rocm_pin_testkit::deb_table::DebCheck::{self, *};
use rocm_pin_testkit::deb_table::{assert_deb_table, deb_table_failures, fill};
use std::path::Path;

use crate::util::*;
use rocm_pin_kit::standin::{Naming, StandinPackage, StockRole};

/// What the multi-version-named pair must hold, one fact a row (`hsa`, `hip`: the two .debs;
/// `{lib}` is [`PREFIX`]/lib, `{hsa_so}` / `{hip_so}` the rebuilt files' names).
#[rustfmt::skip]
const MULTI_VERSION_PAIR: &[DebCheck] = &[
    // Control fields.
    FieldIs("hsa", "Package", "hsa-rocr7.2.4-pinned"),
    FieldIs("hsa", "Version", "{ver_hsa}"),
    FieldIs("hip", "Version", "{ver_hip}"),
    FieldIs("hsa", "Protected", "yes"),
    FieldIs("hsa", "X-Rocm-Pin-Commit", "{commit}"),
    FieldIs("hip", "X-Rocm-Pin-Commit", "{commit}"),
    FieldHas("hsa", "Provides", "hsa-rocr7.2.4 (= {stock_hsa})"),
    FieldHas("hsa", "Conflicts", "hsa-rocr7.2.4"),
    FieldHas("hsa", "Replaces", "hsa-rocr7.2.4"),
    FieldHas("hip", "Provides", "hip-runtime-amd7.2.4 (= {stock_hip})"),
    // HIP depends on our HSA at our exact version, and the stock HSA dependency is remapped.
    FieldHas("hip", "Depends", "hsa-rocr7.2.4-pinned (= {ver_hsa})"),
    FieldLacks("hip", "Depends", "hsa-rocr7.2.4 ("),
    FieldHas("hsa", "Description", "{commit}"),
    FieldHas("hsa", "Description", "rollback"),
    // Contents: the rebuilt files, their sonames' links, the pin, the marker (HSA only).
    Entry("hsa", '-', "{lib}/{hsa_so}", None),
    Entry("hip", '-', "{lib}/{hip_so}", None),
    Entry("hsa", 'l', "{lib}/libhsa-runtime64.so.1", Some("{hsa_so}")),
    Entry("hsa", 'l', "{lib}/libhsa-runtime64.so", Some("libhsa-runtime64.so.1")),
    Entry("hsa", '-', "/etc/apt/preferences.d/hsa-rocr7.2.4-pinned", None),
    Entry("hsa", '-', "{prefix}/.info/rocm-pin.json", None),
    NoEntry("hip", "{prefix}/.info/rocm-pin.json"),
    // The loader entry is written by the maintainer scripts, never shipped in data.tar.
    NoPathWith("*", "/etc/ld.so.conf.d"),
    Disjoint("hsa", "hip"),
    // Conffiles, the pin's text, triggers, the preinst's loader entry.
    ControlHas("hsa", "conffiles", "/etc/apt/preferences.d/hsa-rocr7.2.4-pinned"),
    DataHas("hsa", "{pin}", "Package: hsa-rocr7.2.4\nPin: version *\nPin-Priority: -1"),
    ControlHas("hsa", "triggers", "activate-noawait ldconfig"),
    ControlHas("hsa", "preinst", "/etc/ld.so.conf.d/hsa-rocr7.2.4-pinned.conf"),
    ControlHas("hsa", "preinst", "ldconfig"),
];

/// Rows that must fail on the same pair: the table's judge can say no (one per kind of row).
#[rustfmt::skip]
const MUST_NOT_HOLD: &[DebCheck] = &[
    FieldIs("hsa", "Protected", "no"),
    FieldHas("hip", "Depends", "hsa-rocr7.2.4 ("),
    FieldLacks("hsa", "Package", "pinned"),
    Entry("hsa", 'l', "{lib}/libhsa-runtime64.so", Some("{hsa_so}")),
    NoEntry("hsa", "{prefix}/.info/rocm-pin.json"),
    Ships("hip", "{prefix}/.info/rocm-pin.json"),
    NoPathWith("*", "/etc/apt/preferences.d"),
    Disjoint("hsa", "hsa"),
    ControlHas("hsa", "triggers", "interest"),
    DataHas("hsa", "{pin}", "Pin-Priority: 990"),
    FieldIs("hsa", "Version", "{no_such_var}"),
];

/// What package reports per package: rebuilt, aliased and carried files.
const MULTI_VERSION_REPORT: &[&str] = &[
    "hsa-rocr7.2.4-pinned: rebuilt /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0",
    "hsa-rocr7.2.4-pinned: aliased /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204 = /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0",
    ".hipInfo",
];

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
    assert_says(&stderr, MULTI_VERSION_REPORT);
    let built = debs_in(&out);
    assert_eq!(built.len(), 2, "{built:?}");
    let vars = [
        (
            "ver_hsa",
            format!("{}+pin{COMMIT_TIME}.gb539bf7", hsa.version),
        ),
        (
            "ver_hip",
            format!("{}+pin{COMMIT_TIME}.gb539bf7", hip.version),
        ),
        ("stock_hsa", hsa.version.clone()),
        ("stock_hip", hip.version.clone()),
        ("commit", COMMIT.to_string()),
        ("prefix", PREFIX.to_string()),
        ("lib", format!("{PREFIX}/lib")),
        ("hsa_so", names.hsa.clone()),
        ("hip_so", names.hip.clone()),
        (
            "pin",
            "/etc/apt/preferences.d/hsa-rocr7.2.4-pinned".to_string(),
        ),
    ];
    let hsa_deb = out
        .join(fill("hsa-rocr7.2.4-pinned_{ver_hsa}_", &vars).unwrap() + &hsa.architecture + ".deb");
    let hip_deb = out.join(
        fill("hip-runtime-amd7.2.4-pinned_{ver_hip}_", &vars).unwrap() + &hip.architecture + ".deb",
    );
    assert!(hsa_deb.is_file() && hip_deb.is_file(), "{built:?}");
    let pair = [("hsa", hsa_deb.as_path()), ("hip", hip_deb.as_path())];
    assert_deb_table(&pair, &vars, MULTI_VERSION_PAIR);
    let rebuilt = format!("{PREFIX}/lib/{}", names.hsa);
    assert_deb_table(&pair, &vars, &stock_rows(&hsa, &hip, &rebuilt));
    let wrong = deb_table_failures(&pair, &vars, MUST_NOT_HOLD);
    assert_eq!(
        wrong.len(),
        MUST_NOT_HOLD.len(),
        "a wrong row held: {wrong:#?}"
    );

    assert_maintainer_scripts_pass_shellcheck(&hsa_deb);
    let x = tempdir_extract(&hsa_deb);
    let real = x
        .path()
        .join(format!("{PREFIX}/lib/{}", names.hsa).trim_start_matches('/'));
    assert_stripped_but_keeps_the_backport(&real, &staging.join("lib").join(&names.hsa));
    assert_marker_names_the_shipped_file(x.path(), &real);

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

/// The rows the stock pair gives: each stock library filename a hard link to the rebuilt file
/// (HSA) or aliased (HIP), each stock path shipped by one of ours, each stock Provides/Replaces
/// relation of HIP carried over (hip-rocclr stays provided and replaced).
fn stock_rows<'a>(
    hsa: &'a StandinPackage,
    hip: &'a StandinPackage,
    rebuilt: &'a str,
) -> Vec<DebCheck<'a>> {
    let mut rows = Vec::new();
    rows.extend(
        hsa.libraries
            .iter()
            .map(|l| Entry("hsa", 'h', &l.path, Some(rebuilt))),
    );
    rows.extend(
        hip.libraries
            .iter()
            .map(|l| Entry("hip", 'h', &l.path, None)),
    );
    rows.extend(hsa.files.iter().chain(&hip.files).map(|f| Ships("*", f)));
    for f in ["Provides", "Replaces"] {
        let stock = hip.field(f).unwrap_or_default();
        rows.extend(
            stock
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|rel| FieldHas("hip", f, rel)),
        );
    }
    rows
}

/// The rendered maintainer scripts pass shellcheck as POSIX sh.
fn assert_maintainer_scripts_pass_shellcheck(deb: &Path) {
    let info = dpkg_deb_into_tempdir("-e", deb);
    must(
        std::process::Command::new("shellcheck")
            .args(["-s", "sh"])
            .arg(info.path().join("preinst"))
            .arg(info.path().join("postinst"))
            .arg(info.path().join("postrm")),
    );
}

/// The rebuilt library `real` is stripped of debug info (the staged one had it) but keeps the
/// backport symbol.
fn assert_stripped_but_keeps_the_backport(real: &Path, staged: &Path) {
    let readelf = |args: &[&str], f: &Path| {
        must_stdout(std::process::Command::new("readelf").args(args).arg(f))
    };
    assert!(
        !readelf(&["-S"], real).contains(".debug_info"),
        "not stripped"
    );
    assert!(
        readelf(&["-S"], staged).contains(".debug_info"),
        "the test staging should have debug info"
    );
    assert_says(
        &readelf(&["--dyn-syms", "-W"], real),
        &["hsa_amd_signal_create_v2@@ROCR_1"],
    );
}

/// The marker names the commit, the replaced packages and the sha256 of the shipped file.
fn assert_marker_names_the_shipped_file(extracted: &Path, real: &Path) {
    let marker: rocm_pin_core::rocm::Marker = serde_json::from_slice(
        &std::fs::read(extracted.join("opt/rocm-7.2.4/.info/rocm-pin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker.commit, COMMIT);
    assert_eq!(marker.replaced.len(), 2);
    let shipped = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(real).unwrap()))
    };
    assert!(marker
        .libraries
        .iter()
        .any(|l| l.sha256 == shipped && l.soname == "libhsa-runtime64.so.1"));
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
