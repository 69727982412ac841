//! Every refusal of `rocm-pin package`: a clear error naming the problem, exit 2, and nothing
//! written to --out. Stock facts from the stand-in .debs (the dpkg-database refusal for a
//! modified stock file is in package_chroot.rs).

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;
use rocm_pin_kit::standin::{StockRole, StockSet};

struct Case {
    name: &'static str,
    staging: StagingSpec,
    /// Change the staging after it is built.
    tamper: fn(&Path),
    /// Which stock .debs to give (None = the pair).
    stock: fn(&StockSet, &Path) -> Vec<PathBuf>,
    extra: &'static [&'static str],
    expect: &'static [&'static str],
}

fn pair(set: &StockSet, _w: &Path) -> Vec<PathBuf> {
    vec![
        set.require(StockRole::HsaRocr).unwrap().deb.clone(),
        set.require(StockRole::HipRuntime).unwrap().deb.clone(),
    ]
}

fn nothing(_: &Path) {}

/// The stock HIP .deb repacked without libhiprtc-builtins (so the staged one has no owner).
fn hip_without_builtins(set: &StockSet, w: &Path) -> Vec<PathBuf> {
    let hip = set.require(StockRole::HipRuntime).unwrap();
    let tree = w.join("repack");
    must(Command::new("dpkg-deb").arg("-R").arg(&hip.deb).arg(&tree));
    let lib = tree.join("opt/rocm-7.2.4/lib");
    for e in std::fs::read_dir(&lib).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("libhiprtc-builtins")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    let sums = tree.join("DEBIAN/md5sums");
    let kept: String = std::fs::read_to_string(&sums)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("libhiprtc-builtins"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&sums, kept).unwrap();
    let deb = w.join("hip-repacked.deb");
    must(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-b"])
            .arg(&tree)
            .arg(&deb),
    );
    vec![set.require(StockRole::HsaRocr).unwrap().deb.clone(), deb]
}

/// The refusals, one row each: how the staging and the stock are made wrong, and what the
/// error must say.
fn refusal_cases() -> Vec<Case> {
    vec![
        Case {
            name: "HSA library without the backport symbol",
            staging: StagingSpec {
                backport_symbol: false,
                ..Default::default()
            },
            tamper: nothing,
            stock: pair,
            extra: &[],
            expect: &["does not export hsa_amd_signal_create_v2"],
        },
        Case {
            // Fails on f225f56: nothing compared the exports, the pair was packaged.
            name: "a rebuilt library lacking a stock symbol (issue 32)",
            staging: StagingSpec {
                without_symbol: Some("hsa_system_get_info".into()),
                ..Default::default()
            },
            tamper: nothing,
            stock: pair,
            extra: &[],
            expect: &[
                "libhsa-runtime64.so.1",
                "lacks 1 of the",
                "hsa_system_get_info@ROCR_1",
                "--allow-missing-symbols",
            ],
        },
        Case {
            name: "empty staged library",
            staging: StagingSpec::default(),
            tamper: |s| {
                std::fs::write(s.join("lib/libamdhip64.so.7.2.53211-b539bf7"), b"").unwrap();
            },
            stock: pair,
            extra: &[],
            expect: &["libamdhip64.so.7.2.53211-b539bf7", "empty (0 bytes)"],
        },
        Case {
            name: "dangling staged link",
            staging: StagingSpec::default(),
            tamper: |s| {
                let l = s.join("lib/libhiprtc.so.7");
                std::fs::remove_file(&l).unwrap();
                std::os::unix::fs::symlink("libhiprtc.so.7.9.9", &l).unwrap();
            },
            stock: pair,
            extra: &[],
            expect: &["libhiprtc.so.7", "dangles"],
        },
        Case {
            name: "staged link out of the staging",
            staging: StagingSpec::default(),
            tamper: |s| {
                let l = s.join("lib/libhiprtc.so.7");
                std::fs::remove_file(&l).unwrap();
                std::os::unix::fs::symlink("/bin/sh", &l).unwrap();
            },
            stock: pair,
            extra: &[],
            expect: &["points outside the staging"],
        },
        Case {
            name: "no stock packages at the prefix",
            staging: StagingSpec::default(),
            tamper: nothing,
            stock: pair,
            extra: &["--prefix", "/opt/rocm-9.9.9"],
            expect: &["no stock packages", "/opt/rocm-9.9.9/lib/"],
        },
        Case {
            name: "only half of the pair",
            staging: StagingSpec::default(),
            tamper: nothing,
            stock: |set, _| vec![set.require(StockRole::HsaRocr).unwrap().deb.clone()],
            extra: &[],
            expect: &["only half of the runtime pair", "hip-runtime-amd"],
        },
        Case {
            name: "staged family with no stock owner",
            staging: StagingSpec::default(),
            tamper: nothing,
            stock: hip_without_builtins,
            extra: &[],
            expect: &["libhiprtc-builtins", "no stock owner"],
        },
        Case {
            name: "SONAME major change",
            staging: StagingSpec {
                hip_major: 8,
                ..Default::default()
            },
            tamper: nothing,
            stock: pair,
            extra: &[],
            expect: &[
                "SONAME change",
                "libamdhip64.so.7",
                "libamdhip64.so.8",
                "--allow-soname-change",
            ],
        },
        Case {
            name: "unresolvable NEEDED",
            staging: StagingSpec {
                extra_needed: Some("libnotthere-rocm-pin.so.9".into()),
                ..Default::default()
            },
            tamper: nothing,
            stock: pair,
            extra: &[],
            expect: &["NEEDs libnotthere-rocm-pin.so.9", "not found"],
        },
    ]
}

/// One row of [`refusal_cases`] in the work directory `cw`: package must exit 2 with every
/// expected phrase and write nothing (no --out, no work directory beside it); what failed.
fn refuse(set: &StockSet, cw: &Path, case: &Case) -> Vec<String> {
    let mut failures = vec![];
    std::fs::create_dir_all(cw).unwrap();
    let staging = cw.join("staging");
    build_staging(&staging, &case.staging);
    (case.tamper)(&staging);
    let debs = (case.stock)(set, cw);
    let out = cw.join("out");
    let debs: Vec<&Path> = debs.iter().map(PathBuf::as_path).collect();
    let res = package_staging(&staging, StockFrom::Debs(debs), &out, case.extra);
    let err = String::from_utf8_lossy(&res.stderr);
    if res.status.code() != Some(2) {
        failures.push(format!(
            "{}: exit {:?}, expected 2\n{err}",
            case.name,
            res.status.code()
        ));
    }
    for e in case.expect {
        if !err.contains(e) {
            failures.push(format!("{}: message lacks {e:?}:\n{err}", case.name));
        }
    }
    if out.exists() {
        failures.push(format!(
            "{}: --out {} was created",
            case.name,
            out.display()
        ));
    }
    // No work directory left beside --out either.
    let leftovers: Vec<_> = std::fs::read_dir(cw)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".rocm-pin-package-")
        })
        .collect();
    if !leftovers.is_empty() {
        failures.push(format!("{}: work directory left behind", case.name));
    }
    failures
}

#[test]
fn every_refusal_writes_nothing() {
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let cases = refusal_cases();
    let mut failures = vec![];
    for (i, case) in cases.iter().enumerate() {
        failures.extend(refuse(&set, &w.join(format!("case{i}")), case));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));

    // The SONAME change is a decision: with --allow-soname-change it is packaged.
    let staging = w.join("soname8");
    build_staging(
        &staging,
        &StagingSpec {
            hip_major: 8,
            ..Default::default()
        },
    );
    let out = w.join("soname8-out");
    let stock = pair(&set, w);
    let stock: Vec<&Path> = stock.iter().map(PathBuf::as_path).collect();
    let res = package_staging(
        &staging,
        StockFrom::Debs(stock),
        &out,
        &["--allow-soname-change", "-Z", "zstd"],
    );
    assert_success(&res, "the command");
    let hip = deb_of(&debs_in(&out), "hip-runtime-amd-pinned").to_path_buf();
    let members = must_stdout(Command::new("ar").arg("t").arg(&hip));
    assert!(members.contains("data.tar.zst"), "-Z zstd: {members}");
    let c = contents(&hip);
    assert!(c.iter().any(|(k, p, l)| *k == 'l'
        && p.ends_with("/libamdhip64.so.8")
        && l.starts_with("libamdhip64.so.8.")));
    assert!(
        !c.iter().any(|(_, p, _)| p.ends_with("/libamdhip64.so.7")),
        "old soname link must go"
    );
}

/// A strip step that changes the dynamic interface (here: an objcopy in PATH that writes some
/// other library) is caught by comparing the stripped copy with the original: exit 2, the
/// library named, nothing written.
#[test]
fn a_strip_that_changes_the_dynamic_interface_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let staging = w.join("staging");
    build_staging(&staging, &StagingSpec::default());

    // A real shared object with another SONAME and none of the runtime's symbols.
    let src = w.join("other.c");
    std::fs::write(&src, "int other_symbol(void) { return 1; }\n").unwrap();
    let other = w.join("libother.so.1");
    must(
        Command::new("gcc")
            .args(["-shared", "-fPIC", "-Wl,-soname,libother.so.1", "-o"])
            .arg(&other)
            .arg(&src),
    );
    let bin_dir = w.join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let fake = bin_dir.join("objcopy");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n# a broken objcopy: writes another library to the output (last argument)\nfor last; do :; done\ncp '{}' \"$last\"\n",
            other.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let out = w.join("out");
    let mut cmd = Command::new(bin());
    cmd.arg("package")
        .arg("--staging")
        .arg(&staging)
        .args(["--commit", COMMIT, "--commit-time"])
        .arg(COMMIT_TIME.to_string())
        .arg("--out")
        .arg(&out)
        .arg("--stock-deb")
        .args(pair(&set, w))
        .env("PATH", path)
        .env_remove("SOURCE_DATE_EPOCH");
    let res = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{err}");
    assert_says(&err, &["changed its dynamic interface"]);
    assert!(err.contains("staging/lib/lib"), "names the library: {err}");
    assert!(!out.exists(), "--out was created");
}

/// A staging changed after `rocm-pin build` (one byte of a library) is refused against the
/// sha256 in the build's own manifest, and nothing is written.
#[test]
fn a_staging_changed_after_the_build_is_refused() {
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let (src, commit) = rocm_pin_testkit::fixture::standin_repo(w, |_| {});
    let staging = rocm_pin_testkit::build_standin_staging(&bin(), &src, &commit, w);
    let lib = staging.join("lib");
    let hsa = std::fs::read_dir(&lib)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("libhsa-runtime64.so.") && !p.is_symlink()
        })
        .expect("the built HSA library");
    let mut bytes = std::fs::read(&hsa).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&hsa, bytes).unwrap();
    let out = w.join("out");
    let mut args: Vec<OsString> = vec![
        "--staging".into(),
        staging.into(),
        "--out".into(),
        out.clone().into(),
        "--stock-deb".into(),
    ];
    for d in pair(&set, w) {
        args.push(d.into());
    }
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let res = package_cmd(&refs);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{err}");
    assert_says(&err, &["changed since the build"]);
    assert!(!out.exists(), "--out was created");
}
