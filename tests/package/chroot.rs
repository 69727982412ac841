//! `rocm-pin package` against a dpkg database: the stand-in stock set (with decoys and the
//! exact-`=` metas) installed in a bookworm chroot, packaged with `--stock-root`, then the
//! replacements installed there with `apt-get install ./*.deb`. Needs root (chroot).

use rocm_pin_testkit::assert_success;
use std::os::unix::fs::MetadataExt;

use crate::util::*;
use rocm_pin_kit::sandbox::SandboxOptions;
use rocm_pin_kit::standin::StockRole;

#[test]
fn from_dpkg_database_then_apt_install_in_chroot() {
    rocm_pin_testkit::needs_root!("a chroot");
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let hsa = set.require(StockRole::HsaRocr).unwrap().clone();
    let hip = set.require(StockRole::HipRuntime).unwrap().clone();
    let sb = sandbox_with_stock(
        &set,
        &[
            "rocm-hip-runtime",
            "hip-dev",
            "rccl",
            "libhsa-runtime64-1",
            "hsa-rocr-asan",
        ],
        &SandboxOptions::default(),
    );
    let staging = w.join("staging");
    let names = build_staging(&staging, &StagingSpec::default());
    let out = w.join("out");
    let res = package_staging(&staging, StockFrom::Root(sb.root()), &out, &[]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "package failed: {stderr}");
    let debs = debs_in(&out);
    assert_eq!(debs.len(), 2, "{debs:?}");
    let ours_hsa = format!("{}+pin{COMMIT_TIME}.gb539bf7", hsa.version);
    let hsa_deb = deb_of(&debs, "hsa-rocr-pinned");
    let hip_deb = deb_of(&debs, "hip-runtime-amd-pinned");
    assert_eq!(field(hsa_deb, "Version"), ours_hsa);
    assert!(field(hsa_deb, "Provides").contains(&format!("hsa-rocr (= {})", hsa.version)));
    assert!(field(hip_deb, "Provides").contains(&format!("hip-runtime-amd (= {})", hip.version)));
    assert!(field(hip_deb, "Depends").contains(&format!("hsa-rocr-pinned (= {ours_hsa})")));
    // The decoys were not picked: nothing under /usr/lib or lib/asan is shipped.
    for d in &debs {
        for (_, p, _) in contents(d) {
            assert!(
                !p.contains("/lib/asan") && !p.starts_with("/usr/lib/"),
                "decoy path {p} in {}",
                d.display()
            );
        }
    }
    // NEEDED → Depends: the staged libraries NEED libc.so.6, owned by libc6 in the chroot.
    let hsa_dep = field(hsa_deb, "Depends");
    assert!(
        hsa_dep.contains("libc6 (>="),
        "NEEDED libc.so.6 must become a libc6 dependency: {hsa_dep}"
    );

    // lintian judges the database-made packages too, and a second run is byte-identical.
    for d in &debs {
        assert_lintian_clean(d);
    }
    let out2 = w.join("out2");
    let again = package_staging(&staging, StockFrom::Root(sb.root()), &out2, &[]);
    assert_success(&again, "the command");
    assert_rebuilt_identically(&debs, &out2);

    // Install with apt in the chroot, recording the loader cache from our postinsts.
    sb.run_ok(&["mkdir", "-p", "/tmp/ours"]).unwrap();
    for d in &debs {
        sb.copy_in(
            d,
            &format!("/tmp/ours/{}", d.file_name().unwrap().to_string_lossy()),
        )
        .unwrap();
    }
    let before = dpkg_states(&sb);
    let mut argv = vec![
        "apt-get".to_string(),
        "install".into(),
        "-y".into(),
        "-q".into(),
    ];
    for d in &debs {
        argv.push(format!(
            "/tmp/ours/{}",
            d.file_name().unwrap().to_string_lossy()
        ));
    }
    let argv_ref: Vec<&str> = argv.iter().map(String::as_str).collect();
    must(
        sb.command(&argv_ref)
            .env("ROCM_PIN_POSTINST_PROBE", "/tmp/postinst-probe"),
    );
    let after = dpkg_states(&sb);
    let removed: Vec<&String> = before
        .iter()
        .filter(|(p, s)| s.starts_with("ii") && !after.get(*p).is_some_and(|a| a.starts_with("ii")))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        removed,
        vec!["hip-runtime-amd", "hsa-rocr"],
        "apt removed more than the stock pair"
    );
    for p in [
        "rocm-hip-runtime",
        "hip-dev",
        "rccl",
        "hsa-rocr-pinned",
        "hip-runtime-amd-pinned",
        "libhsa-runtime64-1",
    ] {
        assert_eq!(
            after.get(p).map(String::as_str),
            Some("ii"),
            "{p} after install: {after:?}"
        );
    }
    sb.run_ok(&["apt-get", "check"])
        .expect("dependencies satisfied after the swap");

    // Hard links share an inode after install.
    for l in hsa.libraries.iter().chain(hip.libraries.iter()) {
        let stock_name = std::fs::metadata(sb.path(&l.path)).unwrap();
        let fam = l.soname.split(".so").next().unwrap();
        let rebuilt = if fam == "libhsa-runtime64" {
            names.hsa.clone()
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
    let _ = &names.hip;
    // Loader entry: ours present, the stock one deleted by the stock prerm.
    assert_eq!(
        sb.read_to_string("/etc/ld.so.conf.d/hsa-rocr-pinned.conf")
            .unwrap()
            .trim(),
        format!("{PREFIX}/lib")
    );
    assert!(!sb.path("/etc/ld.so.conf.d/rocr-runtime.conf").exists());
    assert!(sb.path("/etc/apt/preferences.d/hsa-rocr-pinned").is_file());
    assert!(sb
        .path("/etc/apt/preferences.d/hip-runtime-amd-pinned")
        .is_file());
    // The ld.so cache, as seen from our postinsts during the transaction and after it.
    for probe in [
        "/tmp/postinst-probe.hsa-rocr-pinned",
        "/tmp/postinst-probe.hip-runtime-amd-pinned",
    ] {
        let cache = sb
            .read_to_string(probe)
            .unwrap_or_else(|e| panic!("{probe}: {e}"));
        for so in ["libhsa-runtime64.so.1 ", "libamdhip64.so.7 "] {
            assert!(
                cache
                    .lines()
                    .any(|l| l.trim_start().starts_with(so) && l.contains(PREFIX)),
                "{probe}: {so} not in the ld.so cache during the transaction:\n{cache}"
            );
        }
    }
    let cache = sb.run_ok(&["ldconfig", "-p"]).unwrap();
    for so in ["libhsa-runtime64.so.1 ", "libamdhip64.so.7 "] {
        assert!(
            cache
                .lines()
                .any(|l| l.trim_start().starts_with(so) && l.contains(PREFIX)),
            "{so}:\n{cache}"
        );
    }
    // The loader resolves both sonames to the patched files.
    let probe = w.join("probe");
    rocm_pin_kit::standin::build_loader_probe(&probe).unwrap();
    sb.copy_in(&probe, "/tmp/probe").unwrap();
    let lines = sb
        .run_ok(&["/tmp/probe", "libhsa-runtime64.so.1", "libamdhip64.so.7"])
        .unwrap();
    let parsed = rocm_pin_kit::standin::parse_probe_output(&lines).unwrap();
    assert_eq!(parsed.len(), 2);
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
