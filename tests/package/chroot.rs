//! `rocm-pin package` against a dpkg database: the stand-in stock set (with decoys and the
//! exact-`=` metas) installed in a bookworm chroot, packaged with `--stock-root`, then the
//! replacements installed there with `apt-get install ./*.deb`. Needs root (chroot).

use rocm_pin_testkit::assert_success;
use rocm_pin_testkit::deb_table::assert_deb_table;
use rocm_pin_testkit::deb_table::DebCheck::{self, *};
use std::os::unix::fs::MetadataExt;

use crate::util::*;
use rocm_pin_kit::sandbox::SandboxOptions;
use rocm_pin_kit::standin::StockRole;

/// The stock set installed in the chroot: the pair, its dependants, the decoys.
const INSTALLED_STOCK: &[&str] = &[
    "rocm-hip-runtime",
    "hip-dev",
    "rccl",
    "libhsa-runtime64-1",
    "hsa-rocr-asan",
];

/// What the pair packaged from the dpkg database must hold, one fact a row.
#[rustfmt::skip]
const PAIR_FROM_DATABASE: &[DebCheck] = &[
    FieldIs("hsa", "Version", "{ver_hsa}"),
    FieldHas("hsa", "Provides", "hsa-rocr (= {stock_hsa})"),
    FieldHas("hip", "Provides", "hip-runtime-amd (= {stock_hip})"),
    FieldHas("hip", "Depends", "hsa-rocr-pinned (= {ver_hsa})"),
    // NEEDED → Depends: the staged libraries NEED libc.so.6, owned by libc6 in the chroot.
    FieldHas("hsa", "Depends", "libc6 (>="),
    // The decoys were not picked: nothing under /usr/lib or lib/asan is shipped.
    NoPathWith("*", "/lib/asan"),
    NoPathWith("*", "/usr/lib/"),
];

/// Each package after `apt-get install ./ours*.deb`: `None` = removed (and only these are),
/// else its `db:Status-Abbrev`.
const AFTER_THE_SWAP: &[(&str, Option<&str>)] = &[
    ("hsa-rocr", None),
    ("hip-runtime-amd", None),
    ("rocm-hip-runtime", Some("ii")),
    ("hip-dev", Some("ii")),
    ("rccl", Some("ii")),
    ("hsa-rocr-pinned", Some("ii")),
    ("hip-runtime-amd-pinned", Some("ii")),
    ("libhsa-runtime64-1", Some("ii")),
];

/// Files in the chroot after the swap: `Some(text)` = present with that (trimmed) text, `""` =
/// present, `None` = absent. Our loader entry is in, the stock one deleted by the stock prerm.
const FILES_AFTER_THE_SWAP: &[(&str, Option<&str>)] = &[
    (
        "/etc/ld.so.conf.d/hsa-rocr-pinned.conf",
        Some("/opt/rocm-7.2.4/lib"),
    ),
    ("/etc/ld.so.conf.d/rocr-runtime.conf", None),
    ("/etc/apt/preferences.d/hsa-rocr-pinned", Some("")),
    ("/etc/apt/preferences.d/hip-runtime-amd-pinned", Some("")),
];

/// The ld.so caches that must resolve both sonames into [`PREFIX`]: as seen from each of our
/// postinsts during the transaction (the probe files), and after it (`ldconfig -p`).
const LOADER_CACHES: &[&str] = &[
    "/tmp/postinst-probe.hsa-rocr-pinned",
    "/tmp/postinst-probe.hip-runtime-amd-pinned",
    "ldconfig -p",
];
const SONAMES: &[&str] = &["libhsa-runtime64.so.1", "libamdhip64.so.7"];

#[test]
fn from_dpkg_database_then_apt_install_in_chroot() {
    rocm_pin_testkit::needs_root!("a chroot");
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let hsa = set.require(StockRole::HsaRocr).unwrap().clone();
    let hip = set.require(StockRole::HipRuntime).unwrap().clone();
    let sb = sandbox_with_stock(&set, INSTALLED_STOCK, &SandboxOptions::default());
    let staging = w.join("staging");
    let names = build_staging(&staging, &StagingSpec::default());
    let out = w.join("out");
    let res = package_staging(&staging, StockFrom::Root(sb.root()), &out, &[]);
    assert_success(&res, "package --stock-root");
    let debs = debs_in(&out);
    assert_eq!(debs.len(), 2, "{debs:?}");
    let pair = [
        ("hsa", deb_of(&debs, "hsa-rocr-pinned")),
        ("hip", deb_of(&debs, "hip-runtime-amd-pinned")),
    ];
    let vars = [
        (
            "ver_hsa",
            format!("{}+pin{COMMIT_TIME}.gb539bf7", hsa.version),
        ),
        ("stock_hsa", hsa.version.clone()),
        ("stock_hip", hip.version.clone()),
    ];
    assert_deb_table(&pair, &vars, PAIR_FROM_DATABASE);

    // lintian judges the database-made packages too, and a second run is byte-identical.
    for d in &debs {
        assert_lintian_clean(d);
    }
    let out2 = w.join("out2");
    let again = package_staging(&staging, StockFrom::Root(sb.root()), &out2, &[]);
    assert_success(&again, "the command");
    assert_rebuilt_identically(&debs, &out2);

    // Install with apt in the chroot, recording the loader cache from our postinsts.
    let before = dpkg_states(&sb);
    apt_install_debs(
        &sb,
        &debs,
        &[("ROCM_PIN_POSTINST_PROBE", "/tmp/postinst-probe")],
    );
    assert_states_after(&before, &dpkg_states(&sb), AFTER_THE_SWAP);
    sb.run_ok(&["apt-get", "check"])
        .expect("dependencies satisfied after the swap");
    assert_stock_names_hard_linked(&sb, &names.hsa, hsa.libraries.iter().chain(&hip.libraries));
    for (path, want) in FILES_AFTER_THE_SWAP {
        let got = sb.read_to_string(path).ok();
        match want {
            Some(text) => assert!(
                got.as_deref()
                    .is_some_and(|g| g.trim() == *text || text.is_empty()),
                "{path}: {got:?}, want {text:?}"
            ),
            None => assert!(!sb.path(path).exists(), "{path} still there"),
        }
    }
    for cache in LOADER_CACHES {
        assert_cache_resolves_into_prefix(&sb, cache, SONAMES);
    }
    // The loader resolves both sonames to the patched files.
    let probe = w.join("probe");
    rocm_pin_kit::standin::build_loader_probe(&probe).unwrap();
    sb.copy_in(&probe, "/tmp/probe").unwrap();
    let mut argv = vec!["/tmp/probe"];
    argv.extend_from_slice(SONAMES);
    let lines = sb.run_ok(&argv).unwrap();
    let parsed = rocm_pin_kit::standin::parse_probe_output(&lines).unwrap();
    assert_eq!(parsed.len(), SONAMES.len());
    for p in &parsed {
        assert!(
            p.identity.as_deref().unwrap_or("").contains("PATCHED"),
            "{p:?}"
        );
        assert!(
            p.real_path.as_deref().unwrap_or("").starts_with(PREFIX),
            "{p:?}"
        );
    }
    // rocm-pin verify (the install side's judge) accepts what package made, inside the chroot.
    rocm_pin_inside_ok(&sb, &["verify"]);
    // dpkg's own view of our files is clean.
    let verify = sb
        .run_ok(&[
            "dpkg",
            "--verify",
            "hsa-rocr-pinned",
            "hip-runtime-amd-pinned",
        ])
        .unwrap();
    assert!(verify.trim().is_empty(), "dpkg --verify: {verify}");
}

/// The packages `after` an apt run against `before`: exactly the `None` rows of `want` went
/// from installed to not installed, and each `Some` row has that state.
fn assert_states_after(
    before: &std::collections::BTreeMap<String, String>,
    after: &std::collections::BTreeMap<String, String>,
    want: &[(&str, Option<&str>)],
) {
    let installed = |m: &std::collections::BTreeMap<String, String>, p: &str| {
        m.get(p).is_some_and(|s| s.starts_with("ii"))
    };
    let mut removed: Vec<&str> = before
        .keys()
        .map(String::as_str)
        .filter(|p| installed(before, p) && !installed(after, p))
        .collect();
    let mut want_removed: Vec<&str> = want
        .iter()
        .filter(|(_, s)| s.is_none())
        .map(|(p, _)| *p)
        .collect();
    removed.sort();
    want_removed.sort();
    assert_eq!(
        removed, want_removed,
        "apt removed other than the stock pair"
    );
    for (p, state) in want.iter().filter(|(_, s)| s.is_some()) {
        assert_eq!(
            after.get(*p).map(String::as_str),
            *state,
            "{p} after install: {after:?}"
        );
    }
}

/// Each stock library filename shares an inode with its rebuilt file after install (the HSA
/// one is `hsa_so`, the others the stock name with the stand-in's version swapped for ours).
fn assert_stock_names_hard_linked<'a>(
    sb: &rocm_pin_kit::sandbox::Sandbox,
    hsa_so: &str,
    libraries: impl Iterator<Item = &'a rocm_pin_kit::standin::StockLibrary>,
) {
    for l in libraries {
        let stock_name = std::fs::metadata(sb.path(&l.path)).unwrap();
        let rebuilt = if l.soname.starts_with("libhsa-runtime64.so") {
            hsa_so.to_string()
        } else {
            l.path
                .rsplit('/')
                .next()
                .unwrap()
                .replace("7.2.70204", "7.2.53211-b539bf7")
        };
        let real = std::fs::metadata(sb.path(format!("{PREFIX}/lib/{rebuilt}"))).unwrap();
        assert_eq!(
            stock_name.ino(),
            real.ino(),
            "{} is not a hard link to {rebuilt}",
            l.path
        );
        assert!(real.nlink() >= 2);
    }
}

/// The ld.so cache `cache` (a file in the chroot, or `ldconfig -p` run there) maps each of
/// `sonames` into [`PREFIX`].
fn assert_cache_resolves_into_prefix(
    sb: &rocm_pin_kit::sandbox::Sandbox,
    cache: &str,
    sonames: &[&str],
) {
    let text = if cache == "ldconfig -p" {
        sb.run_ok(&["ldconfig", "-p"]).unwrap()
    } else {
        sb.read_to_string(cache)
            .unwrap_or_else(|e| panic!("{cache}: {e}"))
    };
    for so in sonames {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("{so} ")) && l.contains(PREFIX)),
            "{cache}: {so} not in the ld.so cache:\n{text}"
        );
    }
}

#[test]
fn modified_stock_file_is_refused_but_path_excluded_docs_are_fine() {
    rocm_pin_testkit::needs_root!("a chroot");
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let sb = sandbox_with_stock(
        &set,
        &["hsa-rocr", "hip-runtime-amd"],
        &SandboxOptions {
            dpkg_excludes: true,
            ..Default::default()
        },
    );
    let staging = w.join("staging");
    build_staging(&staging, &StagingSpec::default());
    let pkg = |out: &std::path::Path| {
        package_staging(
            &staging,
            StockFrom::Root(sb.root()),
            out,
            &["--prefix", "/opt/rocm"],
        )
    };
    // Docs dropped by path-exclude are absent by design: packaging still works.
    let ok = pkg(&w.join("ok"));
    assert_success(&ok, "the command");
    assert_eq!(debs_in(&w.join("ok")).len(), 2);
    // --prefix /opt/rocm was resolved to the real versioned prefix.
    for d in debs_in(&w.join("ok")) {
        assert!(contents(&d)
            .iter()
            .all(|(_, p, _)| !p.starts_with("/opt/rocm/")));
    }

    // A stock file overwritten in place (the seed's method) is refused, naming the file.
    let hip = set.require(StockRole::HipRuntime).unwrap();
    let victim = &hip.libraries[0].path;
    std::fs::write(sb.path(victim), b"overwritten").unwrap();
    let out = w.join("refused");
    let bad = pkg(&out);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        err.contains(victim.as_str()) && err.contains("modified"),
        "{}",
        err
    );
    assert!(!out.exists(), "nothing may be written on refusal");
}
