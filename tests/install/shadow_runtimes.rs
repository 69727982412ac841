//! Shadow runtimes (issue 33, criterion 1): a second copy of the pair that a consumer maps
//! before ours. The root is `verify_fake_root`'s (our pair installed under /opt/rocm-7.2.4,
//! a real ld.so cache), plus a virtual environment laid out like TheRock's wheels:
//! `site-packages/_rocm_sdk_core/lib/` holds the SONAME files only, `_rocm_sdk_devel/lib/`
//! the full name set as hard links of them, and `torch/lib/libtorch_hip.so` NEEDs
//! `libamdhip64.so.7` through a forced DT_RPATH `$ORIGIN/../../_rocm_sdk_core/lib`. Every
//! library and consumer is built by gcc; the resolver's order is checked against the real
//! ld.so on this host.

use rocm_pin_testkit::assert_says;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocm_pin_core::host::ldsearch::{self, Loaded, Step};
use rocm_pin_core::host::root::Root;
use rocm_pin_core::ops::verify::{verify, VerifyOptions, VerifyReport};

use crate::verify_fake_root::{build_libs, host, make_root};

const SITE: &str = "/opt/venv/lib/python3.12/site-packages";
const OUR_HIP: &str = "/opt/rocm-7.2.4/lib/libamdhip64.so.7";
const OUR_HSA: &str = "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1";

/// gcc `-shared` (or an executable when `shared` is false) from `src`, with `args` appended.
fn gcc(dir: &Path, name: &str, src: &str, shared: bool, args: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let out = dir.join(name);
    let mut cmd = Command::new("gcc");
    if shared {
        cmd.args(["-shared", "-fPIC"]);
    }
    let st = cmd
        .arg("-o")
        .arg(&out)
        .arg(&c)
        .arg("-Wl,--no-as-needed")
        .args(args)
        .status()
        .expect("gcc must be installed");
    assert!(st.success(), "gcc failed for {name}");
    out
}

/// The stock pair (the HIP library NEEDs the HSA one, as AMD's does) and a torch stand-in
/// linked against it with a forced DT_RPATH into `_rocm_sdk_core/lib`.
struct Stock {
    hsa: PathBuf,
    hip: PathBuf,
    torch_hip: PathBuf,
    dir: tempfile::TempDir,
}

fn stock() -> Stock {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hsa = gcc(
        d,
        "libhsa-runtime64.so.1",
        "const char *hsa_identity(void){return \"hsa-STOCK\";}\n",
        true,
        &["-Wl,-soname,libhsa-runtime64.so.1"],
    );
    let hip = gcc(
        d,
        "libamdhip64.so.7",
        "const char *hsa_identity(void);\nconst char *rocm_pin_identity(void){hsa_identity();return \"hip-STOCK\";}\n",
        true,
        &["-Wl,-soname,libamdhip64.so.7", hsa.to_str().unwrap()],
    );
    let torch_hip = gcc(
        d,
        "libtorch_hip.so",
        "const char *rocm_pin_identity(void);\nconst char *torch_identity(void){return rocm_pin_identity();}\n",
        true,
        &[
            "-Wl,-soname,libtorch_hip.so",
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../../_rocm_sdk_core/lib",
            hip.to_str().unwrap(),
        ],
    );
    Stock {
        hsa,
        hip,
        torch_hip,
        dir,
    }
}

/// Lets the linker find the stock HIP library's own NEEDED (an executable is linked whole).
fn rpath_link(s: &Stock) -> String {
    format!("-Wl,-rpath-link,{}", s.dir.path().display())
}

/// TheRock's layout in `root`: core SONAME files, devel hard links, torch's library.
fn lay_out_venv(root: &Path, s: &Stock) {
    let core = host(root, &format!("{SITE}/_rocm_sdk_core/lib"));
    let devel = host(root, &format!("{SITE}/_rocm_sdk_devel/lib"));
    let torch = host(root, &format!("{SITE}/torch/lib"));
    for d in [&core, &devel, &torch] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(host(root, "/opt/venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::copy(&s.hip, core.join("libamdhip64.so.7")).unwrap();
    std::fs::copy(&s.hsa, core.join("libhsa-runtime64.so.1")).unwrap();
    for name in [
        "libamdhip64.so",
        "libamdhip64.so.7",
        "libamdhip64.so.7.2.70204",
    ] {
        std::fs::hard_link(core.join("libamdhip64.so.7"), devel.join(name)).unwrap();
    }
    std::fs::hard_link(
        core.join("libhsa-runtime64.so.1"),
        devel.join("libhsa-runtime64.so.1"),
    )
    .unwrap();
    std::fs::copy(&s.torch_hip, torch.join("libtorch_hip.so")).unwrap();
}

/// `verify_fake_root`'s root (our pair installed) with TheRock's venv laid out in it, and the
/// stock pair the venv copies.
fn root_with_venv() -> (tempfile::TempDir, Stock) {
    let s = stock();
    let d = make_root(&build_libs());
    lay_out_venv(d.path(), &s);
    (d, s)
}

fn run(root: &Path, consumers: Vec<PathBuf>, ld_library_path: Option<&str>) -> VerifyReport {
    verify(&VerifyOptions {
        root: Root::new(root),
        ld_library_path: ld_library_path.map(str::to_string),
        ask_apt: false,
        accept_skipped_backport_check: false,
        consumers,
    })
    .unwrap()
}

fn shadow_failures(rep: &VerifyReport) -> Vec<(String, String)> {
    rep.failed()
        .filter(|c| c.name == "shadow")
        .map(|c| (c.subject.clone(), c.detail.clone()))
        .collect()
}

fn copies(rep: &VerifyReport) -> Vec<serde_json::Value> {
    let json = serde_json::to_value(rep).unwrap();
    json["shadow"]["copies"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The `ln -sf TARGET LINK` a failure prints, applied as it would run inside the root.
fn apply_fix(root: &Path, detail: &str) {
    let cmd = detail
        .split('`')
        .find_map(|part| part.split_once("ln -sf ").map(|(_, rest)| rest.to_string()))
        .unwrap_or_else(|| panic!("no ln -sf fix in: {detail}"));
    let (target, link) = cmd.split_once(' ').unwrap();
    let link = host(root, link);
    std::fs::remove_file(&link).unwrap();
    symlink(target, &link).unwrap();
}

#[test]
fn stock_copies_in_a_venv_fail_naming_rocm_sdk_core_and_the_consumer_until_replaced() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots into the fake root");
    let (d, _stock) = root_with_venv();
    let r = d.path();

    let rep = run(r, Vec::new(), None);
    assert!(!rep.ok, "{}", rep.to_human());
    let failures = shadow_failures(&rep);
    let core_hip = format!("{SITE}/_rocm_sdk_core/lib/libamdhip64.so.7");
    let core_hsa = format!("{SITE}/_rocm_sdk_core/lib/libhsa-runtime64.so.1");
    let consumer = format!("{SITE}/torch/lib/libtorch_hip.so");
    let subjects: Vec<&str> = failures.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        subjects,
        vec![core_hip.as_str(), core_hsa.as_str()],
        "{}",
        rep.to_human()
    );
    for (_, detail) in &failures {
        assert_says(
            detail,
            &[&consumer, "DT_RPATH", "ln -sf /opt/rocm-7.2.4/lib/"],
        );
    }
    // The HSA copy is mapped for the stock HIP library, through torch's DT_RPATH.
    assert!(
        failures[1].1.contains(&format!("for {core_hip}")),
        "{}",
        failures[1].1
    );
    // The devel hard links: nothing maps them, a warning each.
    let human = rep.to_human();
    assert_says(
        &human,
        &["_rocm_sdk_devel/lib/libamdhip64.so.7.2.70204: a stale copy"],
    );

    // The fix as printed: each mapped copy becomes a link to ours. Then verify passes and
    // the JSON lists every copy, the linked ones as the patched build, mapped by torch.
    for (_, detail) in &failures {
        apply_fix(r, detail);
    }
    let rep = run(r, Vec::new(), None);
    assert!(rep.ok, "{}", rep.to_human());
    let listed = copies(&rep);
    let by_path = |p: &str| {
        listed
            .iter()
            .find(|c| c["path"] == p)
            .unwrap_or_else(|| panic!("{p} not listed: {listed:?}"))
            .clone()
    };
    for (path, ours) in [(&core_hip, OUR_HIP), (&core_hsa, OUR_HSA)] {
        let c = by_path(path);
        assert_eq!(c["patched"], true, "{c}");
        let file = c["file"].as_str().unwrap();
        assert!(file.starts_with("/opt/rocm-7.2.4/lib/"), "{c} ({ours})");
    }
    // Ours needs no HSA library by that name here: only the HIP copy is still mapped.
    assert_eq!(
        by_path(&core_hip)["mapped_by"][0]["consumer"],
        consumer.as_str()
    );
    let devel = by_path(&format!("{SITE}/_rocm_sdk_devel/lib/libamdhip64.so"));
    assert_eq!(devel["patched"], false);
    assert!(devel["mapped_by"].as_array().unwrap().is_empty());
    assert!(!listed
        .iter()
        .any(|c| c["path"].as_str().unwrap().starts_with("/opt/rocm-7.2.4/")));

    // A byte copy of ours (not a link) is the patched build too.
    let core = host(r, &format!("{SITE}/_rocm_sdk_core/lib"));
    std::fs::remove_file(core.join("libamdhip64.so.7")).unwrap();
    std::fs::copy(host(r, OUR_HIP), core.join("libamdhip64.so.7")).unwrap();
    let rep = run(r, Vec::new(), None);
    assert!(rep.ok, "{}", rep.to_human());
    assert_eq!(by_path_in(&rep, &core_hip)["patched"], true);
}

fn by_path_in(rep: &VerifyReport, path: &str) -> serde_json::Value {
    copies(rep)
        .into_iter()
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("{path} not listed"))
}

#[test]
fn a_stale_copy_nothing_maps_is_a_warning_only() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots into the fake root");
    let b = build_libs();
    let s = stock();
    let d = make_root(&b);
    let r = d.path();
    let libs = host(r, &format!("{SITE}/_rocm_sdk_libraries/lib"));
    std::fs::create_dir_all(&libs).unwrap();
    std::fs::write(host(r, "/opt/venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::copy(&s.hip, libs.join("libamdhip64.so.7")).unwrap();
    // And a second ROCm prefix nobody points at.
    std::fs::create_dir_all(host(r, "/opt/rocm-6.4.0/lib")).unwrap();
    std::fs::copy(&s.hsa, host(r, "/opt/rocm-6.4.0/lib/libhsa-runtime64.so.1")).unwrap();
    let rep = run(r, Vec::new(), None);
    assert!(rep.ok, "{}", rep.to_human());
    let human = rep.to_human();
    assert!(
        human.contains("warn shadow")
            && human.contains("_rocm_sdk_libraries/lib/libamdhip64.so.7: a stale copy"),
        "{}",
        human
    );
    assert_says(
        &human,
        &["/opt/rocm-6.4.0/lib/libhsa-runtime64.so.1: a stale copy"],
    );
    let c = by_path_in(&rep, "/opt/rocm-6.4.0/lib/libhsa-runtime64.so.1");
    assert_eq!(c["patched"], false);
    assert_eq!(c["found_in"][0], "/opt/rocm* prefix");
}

#[test]
fn a_consumer_given_with_runpath_or_rpath_meets_ld_library_path_in_ld_so_order() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots into the fake root");
    let b = build_libs();
    let s = stock();
    let work = tempfile::tempdir().unwrap();
    for (flag, tag) in [
        ("--enable-new-dtags", "runpath"),
        ("--disable-new-dtags", "rpath"),
    ] {
        let d = make_root(&b);
        let r = d.path();
        std::fs::create_dir_all(host(r, "/srv/app/lib")).unwrap();
        std::fs::create_dir_all(host(r, "/srv/app/bin")).unwrap();
        std::fs::copy(&s.hip, host(r, "/srv/app/lib/libamdhip64.so.7")).unwrap();
        std::fs::copy(&s.hsa, host(r, "/srv/app/lib/libhsa-runtime64.so.1")).unwrap();
        let app = gcc(
            work.path(),
            &format!("app-{tag}"),
            "const char *rocm_pin_identity(void);\nint main(void){return rocm_pin_identity()[0]=='x';}\n",
            false,
            &[
                &format!("-Wl,{flag},-rpath,$ORIGIN/../lib"),
                &rpath_link(&s),
                s.hip.to_str().unwrap(),
            ],
        );
        std::fs::copy(&app, host(r, "/srv/app/bin/app")).unwrap();
        let consumers = vec![PathBuf::from("/srv/app/bin/app")];

        let rep = run(r, consumers.clone(), None);
        let failures = shadow_failures(&rep);
        assert!(!failures.is_empty(), "{tag}: {}", rep.to_human());
        assert_eq!(failures[0].0, "/srv/app/lib/libamdhip64.so.7");
        let step = if tag == "rpath" {
            "DT_RPATH"
        } else {
            "DT_RUNPATH"
        };
        assert!(
            failures[0]
                .1
                .contains(&format!("/srv/app/bin/app (via {step})")),
            "{}",
            failures[0].1
        );

        // LD_LIBRARY_PATH naming ours: it beats DT_RUNPATH, never DT_RPATH.
        let rep = run(r, consumers, Some("/opt/rocm-7.2.4/lib"));
        let failures = shadow_failures(&rep);
        if tag == "rpath" {
            assert!(!failures.is_empty(), "{}", rep.to_human());
        } else {
            assert!(rep.ok, "{}", rep.to_human());
            let c = by_path_in(&rep, "/srv/app/lib/libamdhip64.so.7");
            assert!(c["mapped_by"].as_array().unwrap().is_empty(), "{c}");
        }
    }
}

/// The resolver's order against the real ld.so: an executable whose DT_RPATH or DT_RUNPATH
/// names a directory with the stock HIP library, run with LD_LIBRARY_PATH naming one with a
/// patched library; what it prints is the library ld.so mapped.
#[test]
fn the_resolver_agrees_with_the_real_ld_so_on_rpath_runpath_and_ld_library_path() {
    let s = stock();
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    for d in ["stock", "patched", "bin-rpath", "bin-runpath"] {
        std::fs::create_dir_all(w.join(d)).unwrap();
    }
    std::fs::copy(&s.hip, w.join("stock/libamdhip64.so.7")).unwrap();
    std::fs::copy(&s.hsa, w.join("stock/libhsa-runtime64.so.1")).unwrap();
    std::fs::copy(&s.hsa, w.join("patched/libhsa-runtime64.so.1")).unwrap();
    gcc(
        &w.join("patched"),
        "libamdhip64.so.7",
        "const char *rocm_pin_identity(void){return \"hip-PATCHED\";}\n",
        true,
        &["-Wl,-soname,libamdhip64.so.7"],
    );
    let main = "#include <stdio.h>\nconst char *rocm_pin_identity(void);\nint main(void){puts(rocm_pin_identity());return 0;}\n";
    for (flag, tag) in [
        ("--disable-new-dtags", "rpath"),
        ("--enable-new-dtags", "runpath"),
    ] {
        let dir = w.join(format!("bin-{tag}"));
        let exe = gcc(
            &dir,
            "app",
            main,
            false,
            &[
                &format!("-Wl,{flag},-rpath,$ORIGIN/../stock"),
                &rpath_link(&s),
                s.hip.to_str().unwrap(),
            ],
        );
        let llp = w.join("patched");
        let out = Command::new(&exe)
            .env("LD_LIBRARY_PATH", &llp)
            .output()
            .unwrap();
        assert!(out.status.success(), "{tag}: {out:?}");
        let real = String::from_utf8_lossy(&out.stdout).trim().to_string();

        let root = Root::system();
        let exe_path = exe.to_str().unwrap();
        let dynamic = rocm_pin_core::host::shadow::read_dynamic(&root, exe_path).unwrap();
        let chain = [Loaded {
            path: exe_path,
            dynamic: &dynamic,
        }];
        let (found, step) =
            ldsearch::resolve(&root, "libamdhip64.so.7", &chain, llp.to_str(), &[]).unwrap();
        let expected_dir = std::fs::canonicalize(w).unwrap();
        if tag == "rpath" {
            assert_eq!(real, "hip-STOCK", "ld.so: DT_RPATH beats LD_LIBRARY_PATH");
            assert_eq!(step, Step::Rpath);
            assert_eq!(
                PathBuf::from(&found),
                expected_dir.join("stock/libamdhip64.so.7")
            );
        } else {
            assert_eq!(
                real, "hip-PATCHED",
                "ld.so: LD_LIBRARY_PATH beats DT_RUNPATH"
            );
            assert_eq!(step, Step::LdLibraryPath);
            assert_eq!(
                PathBuf::from(&found),
                expected_dir.join("patched/libamdhip64.so.7")
            );
        }
    }
}

#[test]
fn a_hostile_venv_is_walked_inside_the_root_only() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots into the fake root");
    let (d, s) = root_with_venv();
    let r = d.path();
    // Outside the root, a stock library and a directory of them.
    let outside = tempfile::tempdir().unwrap();
    std::fs::copy(&s.hip, outside.path().join("libamdhip64.so.7")).unwrap();
    let core = host(r, &format!("{SITE}/_rocm_sdk_core/lib"));
    std::fs::remove_file(core.join("libamdhip64.so.7")).unwrap();
    std::fs::remove_file(core.join("libhsa-runtime64.so.1")).unwrap();
    // A link to the host's copy by its host path: inside the root that path does not exist.
    symlink(
        outside.path().join("libamdhip64.so.7"),
        core.join("libamdhip64.so.7"),
    )
    .unwrap();
    // A loop, and directories that lead out of the site-packages and the root.
    symlink("libhsa-runtime64.so.1", core.join("libhsa-runtime64.so.1")).unwrap();
    let sp = host(r, SITE);
    symlink("/", sp.join("to-root")).unwrap();
    symlink(outside.path(), sp.join("to-host")).unwrap();
    symlink("../../../../..", sp.join("climb")).unwrap();

    let rep = run(r, Vec::new(), None);
    let json = serde_json::to_string(&rep).unwrap();
    let outside_text = outside.path().to_string_lossy().to_string();
    for c in copies(&rep) {
        let file = c["file"].as_str().unwrap();
        assert!(!file.contains(&outside_text), "left the root: {c}");
        assert!(file.starts_with('/'), "{c}");
    }
    // Neither the host's copy nor the loop is a copy; both are skipped with a reason.
    assert!(
        !copies(&rep).iter().any(|c| c["path"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{SITE}/_rocm_sdk_core"))),
        "{json}"
    );
    let skipped: Vec<String> = serde_json::to_value(&rep).unwrap()["shadow"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("libhsa-runtime64.so.1") && s.contains("too many levels")),
        "{skipped:?}"
    );
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("_rocm_sdk_core/lib/libamdhip64.so.7")
                && s.contains("does not exist")),
        "{skipped:?}"
    );
    // torch's DT_RPATH leads nowhere openable: ld.so goes on to the cache, which holds ours.
    assert!(rep.ok, "{}", rep.to_human());
    // The devel tree's stock hard links are still found (through no link).
    assert!(
        by_path_in(&rep, &format!("{SITE}/_rocm_sdk_devel/lib/libamdhip64.so"))["patched"] == false
    );
}

/// The cost of the search on a virtual environment of real size: `scripts/bench-shadow` runs
/// this (ignored by default) in a release build. ROCM_PIN_BENCH_SHADOW_FILES sets the file
/// count (default 50,000: torch + the ROCm wheels + a few hundred packages is 40-60k). The
/// shape: packages of nested directories holding `.py` files, `__pycache__/*.pyc`, a
/// `.dist-info` each, extension modules here and there, 40 ELF libraries in `torch/lib`
/// (consumers, each resolved), and TheRock's core/devel/libraries directories.
#[test]
#[ignore = "a measurement: scripts/bench-shadow"]
fn shadow_search_cost_on_a_venv_of_real_size() {
    let files: usize = std::env::var("ROCM_PIN_BENCH_SHADOW_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let s = stock();
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    lay_out_venv(r, &s);
    let sp = host(r, SITE);
    let torch_lib = sp.join("torch/lib");
    for i in 0..40 {
        std::fs::copy(&s.torch_hip, torch_lib.join(format!("libtorch_part{i}.so"))).unwrap();
    }
    let mut made = 0;
    let mut package = 0;
    while made < files {
        let pkg = sp.join(format!("package{package}"));
        let info = sp.join(format!("package{package}-1.0.dist-info"));
        std::fs::create_dir_all(&info).unwrap();
        for f in ["METADATA", "RECORD", "WHEEL", "top_level.txt"] {
            std::fs::write(info.join(f), b"x").unwrap();
        }
        made += 4;
        for sub in 0..6 {
            let dir = pkg.join(format!("sub{sub}/inner"));
            let cache = dir.join("__pycache__");
            std::fs::create_dir_all(&cache).unwrap();
            for m in 0..6 {
                std::fs::write(dir.join(format!("mod{m}.py")), b"pass\n").unwrap();
                std::fs::write(cache.join(format!("mod{m}.cpython-312.pyc")), b"x").unwrap();
            }
            std::fs::write(dir.join("_ext.cpython-312-x86_64-linux-gnu.so"), b"x").unwrap();
            made += 13;
        }
        package += 1;
    }
    let root = Root::new(r);
    let sonames: std::collections::BTreeSet<String> = ["libamdhip64.so.7", "libhsa-runtime64.so.1"]
        .into_iter()
        .map(str::to_string)
        .collect();
    let name_matches = |n: &str| rocm_pin_core::rocm::family_of(n).is_some();
    let scope = rocm_pin_core::host::shadow::Scope {
        sonames: &sonames,
        name_matches: &name_matches,
        consumers: &[],
        ld_library_path: None,
        cache: &[],
        max_entries: 4_000_000,
    };
    let mut times = Vec::new();
    let mut found = None;
    for _ in 0..5 {
        let t = std::time::Instant::now();
        found = Some(rocm_pin_core::host::shadow::find(&root, &scope));
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let found = found.unwrap();
    assert_eq!(found.consumers.len(), 41, "{:?}", found.consumers);
    assert!(found.copies.len() >= 6, "{:?}", found.copies);
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "shadow search: {made} files in {package} packages, {} entries walked, {} consumers, {} copies; ms min {:.1} median {:.1} max {:.1}",
        found.entries_walked,
        found.consumers.len(),
        found.copies.len(),
        times[0],
        times[2],
        times[4]
    );
}

/// `verify --image-archive`: the image config's `LD_LIBRARY_PATH` is what a container started
/// from it has, so it takes part in the resolution. The same tree as a docker-archive (its one
/// layer made by `tar`), first without, then with `Env: LD_LIBRARY_PATH=<_rocm_sdk_devel/lib>`:
/// with it, ld.so's default search opens the devel tree's stock copy and the `loader` check
/// fails, naming it; torch's DT_RPATH still beats it (the core copies, linked to ours).
#[test]
fn an_image_config_ld_library_path_takes_part_in_the_resolution() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots into the fake root");
    use rocm_pin_core::image::limits::ImageLimits;
    use rocm_pin_core::image::ImageSource;
    use sha2::Digest;
    let (d, _stock) = root_with_venv();
    let r = d.path();
    let core = host(r, &format!("{SITE}/_rocm_sdk_core/lib"));
    for (name, ours) in [
        ("libamdhip64.so.7", OUR_HIP),
        ("libhsa-runtime64.so.1", OUR_HSA),
    ] {
        std::fs::remove_file(core.join(name)).unwrap();
        symlink(ours, core.join(name)).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let layer = w.join("layer.tar");
    let st = Command::new("tar")
        .arg("-C")
        .arg(r)
        .args(["--numeric-owner", "-cf"])
        .arg(&layer)
        .arg(".")
        .status()
        .unwrap();
    assert!(st.success());
    let diff_id = format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(std::fs::read(&layer).unwrap()))
    );
    let devel = format!("{SITE}/_rocm_sdk_devel/lib");
    let archive = |env: &str| -> PathBuf {
        let config = format!(
            r#"{{"config":{{"Env":[{env}]}},"rootfs":{{"type":"layers","diff_ids":["{diff_id}"]}}}}"#
        );
        std::fs::write(w.join("config.json"), config).unwrap();
        std::fs::write(
            w.join("manifest.json"),
            r#"[{"Config":"config.json","RepoTags":["shadow:1"],"Layers":["layer.tar"]}]"#,
        )
        .unwrap();
        let out = w.join(format!("image-{}.tar", env.len()));
        let st = Command::new("tar")
            .arg("-C")
            .arg(w)
            .arg("-cf")
            .arg(&out)
            .args(["manifest.json", "config.json", "layer.tar"])
            .status()
            .unwrap();
        assert!(st.success());
        out
    };
    let verify_archive = |path: PathBuf| {
        rocm_pin_core::ops::verify_image::verify_image(
            &ImageSource::Archive(path),
            false,
            &ImageLimits::default(),
        )
        .unwrap()
    };

    let plain = verify_archive(archive(r#""PATH=/usr/bin""#));
    assert!(
        !plain
            .failed()
            .any(|c| c.name == "shadow" || c.name == "loader"),
        "{}",
        plain.to_human()
    );
    let with_llp = verify_archive(archive(&format!(
        r#""PATH=/usr/bin","LD_LIBRARY_PATH={devel}""#
    )));
    let loader = with_llp
        .failed()
        .find(|c| c.name == "loader")
        .unwrap_or_else(|| panic!("{}", with_llp.to_human()));
    assert!(
        loader.detail.contains(&format!("{devel}/")) && loader.detail.contains("LD_LIBRARY_PATH"),
        "{}",
        loader.detail
    );
    let copy = by_path_in(&with_llp, &format!("{devel}/libamdhip64.so.7"));
    assert_eq!(copy["mapped_by"][0]["via"], "ld-library-path", "{copy}");
    let core_hip = by_path_in(
        &with_llp,
        &format!("{SITE}/_rocm_sdk_core/lib/libamdhip64.so.7"),
    );
    assert_eq!(core_hip["patched"], true);
    assert_eq!(core_hip["mapped_by"][0]["via"], "rpath", "{core_hip}");
}
