//! Issue 23 item 4: the whole downstream scenario list (testdata/scenarios.json, the one list
//! the demo and tests/install/downstream.rs run on AMD's stand-in packaging) on Debian's REAL
//! stock. In the `sid-debian-rocm` chroot (experimental's ROCm 7.2.4 with rocminfo, librocfft0
//! and libhipfft0), ours go in with `rocm-pin install`; then every scenario runs in a fresh
//! chroot under sid's apt with its default solver, and with `APT::Solver "internal"`. After
//! each: nothing but stock packages removed (every dependant installed), ours installed,
//! `rocm-pin verify --root` exit 0 (it checks that the loader maps ours by sha256), or, where
//! the list says so for the solver, apt failing loudly and verify naming a repair that works.
//!
//! The list's names come from discovery (rocm-pin's own, by SONAME through the dpkg
//! database): the HIP half is three packages, so `--reinstall` names each. Versions are read
//! from the chroot, never written here. Inputs, all offline (the image keeps no apt lists or
//! archives, and the sandbox has no network sources):
//! - the stock .debs, repacked from the chroot's dpkg database, as a local repository;
//! - the newer stock: the same .debs at `<version>+1`, published by the `newer_stock` entries;
//! - the new dependants: REAL Debian packages, one per half, that depend directly on a stock
//!   runtime package and are not installed in the image (today libhipfftw0 on libamdhip64-7 and
//!   libhsa-amd-aqlprofile64-1 on libhsa-runtime64-1), fetched with the closure the image lacks
//!   by scripts/setup.d/24-debian-new-dependants.sh into `<cache>/debian-new-dependants`, its
//!   manifest `dependants` naming them; published as the `deps` repository;
//! - the custom package of the seed entry: a local `Depends: <stock> (= <version>)` on both
//!   halves. (The local `Depends: <HIP stock> (>= <installed version>)` dependant this list
//!   had before the real ones is gone: what it tested beyond them, that ours Provides no lower
//!   than the exact stock version, the custom package's `=` tests more strictly.)

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::path::{Path, PathBuf};

use crate::debian_stock::{is_installed, package_against, tarball, DEPENDANTS};
use crate::util::*;
use rocm_pin_core::host::apt::{self, Solver};
use rocm_pin_core::host::repack;
use rocm_pin_core::host::root::Root;
use rocm_pin_core::rocm::stock_runtime::{self, StockRuntime};
use rocm_pin_core::rocm::Half;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox};
use rocm_pin_kit::standin::scenarios::{scenarios, Inputs, Scenario, StockNames};

/// The cached input of scripts/setup.d/24-debian-new-dependants.sh: the real new dependants'
/// .debs and their manifest.
const NEW_DEPENDANTS_INPUT: &str = "debian-new-dependants";
/// The seed entry's custom package, exact `=` on the stock versions (like the custom rccl).
const CUSTOM: &str = "rocm-pin-test-exact";

/// How apt in the chroot picks its solver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AptSolver {
    /// sid's apt as installed, no `APT::Solver` set.
    Default,
    /// `APT::Solver "internal"` (the classic solver).
    Internal,
}

/// One real new dependant, as the setup script's manifest names it.
#[derive(Debug, Clone)]
struct NewDependant {
    package: String,
    version: String,
    /// The stock runtime package it depends on directly.
    stock: String,
}

/// The real new dependants and the directory of .debs (theirs and their closure beyond the
/// image) published as the `deps` repository.
#[derive(Debug, Clone)]
struct NewDependants {
    dir: PathBuf,
    dependants: Vec<NewDependant>,
}

impl NewDependants {
    fn names(&self) -> Vec<&str> {
        self.dependants.iter().map(|d| d.package.as_str()).collect()
    }
}

/// The cached new dependants, or None after saying why the test skips (the testkit's
/// setup-input rule: a skip for a contributor's `cargo test`, a failure under scripts/test).
fn new_dependants() -> Option<NewDependants> {
    let Some(dir) = rocm_pin_testkit::setup_input(NEW_DEPENDANTS_INPUT) else {
        rocm_pin_testkit::skip_without_setup("debian_downstream", NEW_DEPENDANTS_INPUT);
        return None;
    };
    let manifest = dir.join("dependants");
    let lines = std::fs::read_to_string(&manifest).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (remove {} and run scripts/setup.d/24-debian-new-dependants.sh)",
            manifest.display(),
            dir.display()
        )
    });
    let dependants: Vec<NewDependant> = lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [package, version, stock] => NewDependant {
                package: package.into(),
                version: version.into(),
                stock: stock.into(),
            },
            _ => panic!(
                "{}: not `<package> <version> <stock>`: {l:?}",
                manifest.display()
            ),
        })
        .collect();
    assert!(!dependants.is_empty(), "{} names none", manifest.display());
    Some(NewDependants { dir, dependants })
}

/// The stock packages `deb`'s Depends names (every alternative), by name only.
fn depends_names(deb: &Path) -> Vec<String> {
    field(deb, "Depends")
        .split([',', '|'])
        .filter_map(|d| d.split([' ', '(', ':']).find(|w| !w.is_empty()))
        .map(str::to_string)
        .collect()
}

/// The inputs are what the scenario needs, checked against the image and discovery: each
/// dependant's .deb is there at the manifest's version, depends DIRECTLY on a stock runtime
/// package discovery found, and is not installed in the image yet.
fn check_new_dependants(sb: &Sandbox, stock: &StockRuntime, new: &NewDependants) {
    let debs = debs_in(&new.dir);
    for d in &new.dependants {
        let deb = debs
            .iter()
            .find(|p| field(p, "Package") == d.package)
            .unwrap_or_else(|| panic!("no .deb of {} in {}", d.package, new.dir.display()));
        assert_eq!(field(deb, "Version"), d.version, "{}", deb.display());
        assert!(
            stock.packages.iter().any(|s| s.package == d.stock),
            "{} depends on {}, which is not a stock runtime package here: {stock:?}",
            d.package,
            d.stock
        );
        let names = depends_names(deb);
        assert!(
            names.contains(&d.stock),
            "{} does not depend on {} directly: {names:?}",
            d.package,
            d.stock
        );
        assert!(
            !is_installed(sb, &d.package),
            "{} is installed in the image already: the scenario would install nothing",
            d.package
        );
    }
}

/// What is made once per test on the host: the replacements, the repositories, the stock as
/// discovered.
struct Prepared {
    _work: tempfile::TempDir,
    ours: Vec<(String, PathBuf)>,
    stock: StockRuntime,
    stock_repo: PathBuf,
    newer_repo: PathBuf,
    /// The real new dependants (the scenario list's tests; the status and guard tests run
    /// without them).
    new: Option<NewDependants>,
    custom: PathBuf,
}

fn discover(sb: &Sandbox) -> StockRuntime {
    let root = Root::new(sb.root());
    let entries = rocm_pin_core::rocm::read_status(&root).unwrap();
    let found = stock_runtime::discover(&root, &entries);
    assert_eq!(found.runtimes.len(), 1, "one stock runtime: {found:?}");
    let rt = found.runtimes[0].clone();
    assert!(rt.is_complete(), "both halves: {rt:?}");
    rt
}

/// The stock package shipping the library whose SONAME starts with `stem` (`libamdhip64.so.`).
fn package_of<'a>(rt: &'a StockRuntime, stem: &str) -> &'a stock_runtime::StockRuntimePackage {
    rt.packages
        .iter()
        .find(|p| p.libraries.iter().any(|l| l.soname.starts_with(stem)))
        .unwrap_or_else(|| panic!("no stock package ships {stem}*: {rt:?}"))
}

/// `deb` rebuilt at `<its version>+1`: a newer upload of the same stock.
fn bumped(deb: &Path, out_dir: &Path) -> PathBuf {
    let tree = tempfile::tempdir().unwrap();
    must(
        std::process::Command::new("dpkg-deb")
            .arg("-R")
            .arg(deb)
            .arg(tree.path()),
    );
    let control = tree.path().join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).unwrap();
    let bumped: String = text
        .lines()
        .map(|l| match l.strip_prefix("Version: ") {
            Some(v) => format!("Version: {v}+1\n"),
            None => format!("{l}\n"),
        })
        .collect();
    assert_ne!(text, bumped, "no Version in {}", deb.display());
    std::fs::write(&control, bumped).unwrap();
    let out = out_dir.join(format!(
        "{}+1.deb",
        deb.file_stem().unwrap().to_string_lossy()
    ));
    must(
        std::process::Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "-b"])
            .arg(tree.path())
            .arg(&out),
    );
    out
}

fn prepare(image: &ChrootImage, new: Option<NewDependants>) -> Prepared {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let sb = Sandbox::new(image).unwrap();
    let ours = package_against(&sb, w);
    let stock = discover(&sb);
    if let Some(new) = &new {
        check_new_dependants(&sb, &stock, new);
    }
    let root = Root::new(sb.root());
    let entries = rocm_pin_core::rocm::read_status(&root).unwrap();
    let (stock_repo, newer_repo) = (w.join("stock-repo"), w.join("newer-repo"));
    for d in [&stock_repo, &newer_repo] {
        std::fs::create_dir_all(d).unwrap();
    }
    for p in &stock.packages {
        let e = entries.iter().find(|e| e.package == p.package).unwrap();
        let deb = stock_repo.join(format!("{}.deb", p.package));
        repack::repack(&root, e, &deb).unwrap();
        bumped(&deb, &newer_repo);
    }
    let hip = package_of(&stock, "libamdhip64.so.");
    let hsa = package_of(&stock, "libhsa-runtime64.so.");
    let custom_dir = w.join("custom");
    std::fs::create_dir_all(&custom_dir).unwrap();
    let custom = tiny_package(
        &custom_dir,
        CUSTOM,
        "1.0",
        &format!(
            "Depends: {} (= {}), {} (= {})\n",
            hip.package, hip.version, hsa.package, hsa.version
        ),
    );
    Prepared {
        _work: work,
        ours,
        stock,
        stock_repo,
        newer_repo,
        new,
        custom,
    }
}

/// The scenarios' inputs: Debian's names from discovery, the .debs where `installed_sandbox`
/// puts them.
fn inputs(p: &Prepared) -> Inputs {
    let names_of = |half: Half| {
        p.stock
            .packages
            .iter()
            .filter(|s| s.half == half)
            .map(|s| s.package.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let hip = package_of(&p.stock, "libamdhip64.so.");
    let hsa = package_of(&p.stock, "libhsa-runtime64.so.");
    let new = p
        .new
        .as_ref()
        .expect("the scenario list needs the new dependants")
        .names();
    let mut dependants: Vec<&str> = DEPENDANTS.to_vec();
    dependants.extend(&new);
    Inputs {
        custom_rccl_deb: format!("/root/custom/{CUSTOM}.deb"),
        stock_hsa_deb: format!("/root/stock/{}.deb", hsa.package),
        stock_hip_deb: format!("/root/stock/{}.deb", hip.package),
        stock_hip_request: format!("{}={}", hip.package, hip.version),
        names: StockNames {
            stock_hsa: names_of(Half::Hsa),
            stock_hip: names_of(Half::Hip),
            hsa_package: hsa.package.clone(),
            hip_package: hip.package.clone(),
            new_dependant: new.join(" "),
            dependants: dependants.join(" "),
            stock_lib_dir: p.stock.library_dirs[0].clone(),
        },
    }
}

/// A fresh chroot of the image with `solver`, the stock and deps repositories published, and
/// ours installed by `rocm-pin install` inside it.
fn installed_sandbox(image: &ChrootImage, solver: AptSolver, p: &Prepared) -> Sandbox {
    let sb = Sandbox::new(image).unwrap();
    if solver == AptSolver::Internal {
        sb.write(
            "/etc/apt/apt.conf.d/99rocm-pin-test-solver",
            "APT::Solver \"internal\";\n",
        )
        .unwrap();
    }
    sb.add_local_repo("stock", &p.stock_repo).unwrap();
    if let Some(new) = &p.new {
        sb.add_local_repo("deps", &new.dir).unwrap();
    }
    sb.copy_in(&p.stock_repo, "/root/stock").unwrap();
    sb.copy_in(&p.custom, &format!("/root/custom/{CUSTOM}.deb"))
        .unwrap();
    sb.install_rocm_pin(&bin()).unwrap();
    // Under the file names `rocm-pin package` gives them, as a user runs it.
    let mut argv = vec!["rocm-pin".to_string(), "install".into()];
    for (_, deb) in &p.ours {
        let at = format!("/tmp/ours/{}", deb.file_name().unwrap().to_string_lossy());
        sb.copy_in(deb, &at).unwrap();
        argv.push(at);
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = sb.run(&argv).unwrap();
    assert_success(&out, "rocm-pin install");
    sb
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn rc(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn verify_root(sb: &Sandbox) -> std::process::Output {
    rocm_pin_on_root("verify", sb.root())
}

/// The solver apt uses in the chroot, as rocm-pin itself reads it (its configuration, else the
/// installed apt's default): the list's expectations are per solver.
fn solver_in(sb: &Sandbox) -> (Solver, String) {
    let version = sb
        .run_ok(&["dpkg-query", "-W", "-f", "${Version}", "apt"])
        .unwrap();
    let version = version.trim().to_string();
    (apt::solver(&Root::new(sb.root()), Some(&version)), version)
}

/// Ours installed and nothing but stock packages removed since `before`.
fn state_problems(
    sb: &Sandbox,
    p: &Prepared,
    before: &std::collections::BTreeMap<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for s in &p.stock.packages {
        if !is_installed(sb, &format!("{}-pinned", s.package)) {
            problems.push(format!("{}-pinned is not installed", s.package));
        }
    }
    let after = sb.installed_packages().unwrap();
    let gone: Vec<&String> = before
        .keys()
        .filter(|k| !after.contains_key(*k) && !p.stock.packages.iter().any(|s| &s.package == *k))
        .collect();
    if !gone.is_empty() {
        problems.push(format!("removed {gone:?}"));
    }
    problems
}

/// apt sees the newer stock (`<version>+1`) of every stock package, held back by our -1 pin:
/// without it the upgrade entries would test nothing.
fn published_newer_problems(sb: &Sandbox, stock: &StockRuntime) -> Vec<String> {
    let names: Vec<&str> = stock.packages.iter().map(|p| p.package.as_str()).collect();
    let mut argv = vec!["apt-cache", "policy"];
    argv.extend(&names);
    let policy = sb.run_ok(&argv).unwrap();
    stock
        .packages
        .iter()
        .filter(|p| {
            !policy
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{}+1 -1", p.version)))
        })
        .map(|p| {
            format!(
                "apt does not see {} {}+1 at -1:\n{policy}",
                p.package, p.version
            )
        })
        .collect()
}

/// The repair verify names for a stock package next to ours: the first backquoted command of
/// its `stock-absent` line.
fn named_repair(verify_text: &str) -> Option<String> {
    let line = verify_text
        .lines()
        .find(|l| l.contains("FAIL") && l.contains("stock-absent"))?;
    line.split('`').nth(1).map(str::to_string)
}

/// When verify is to fail (the list says so for the solver): it must name a repair, which is
/// run and everything checked again. The problems, and what the table says was run.
fn repair_problems(
    sb: &Sandbox,
    p: &Prepared,
    before: &std::collections::BTreeMap<String, String>,
    verify_text: &str,
) -> (Vec<String>, String) {
    let Some(repair) = named_repair(verify_text) else {
        return (
            vec![format!("verify names no repair:\n{verify_text}")],
            String::new(),
        );
    };
    let r = sb.sh(&repair).unwrap();
    let v2 = verify_root(sb);
    let mut problems = state_problems(sb, p, before);
    if rc(&r) != 0 || !v2.status.success() {
        problems.push(format!(
            "the repair `{repair}` rc {}:\n{}\nverify after it:\n{}",
            rc(&r),
            text(&r),
            text(&v2)
        ));
    }
    (problems, format!(", then `{repair}` rc {}", rc(&r)))
}

/// One entry in a fresh installed chroot under `solver`: its table row, and its failure.
fn run_one(
    image: &ChrootImage,
    solver: AptSolver,
    p: &Prepared,
    s: &Scenario,
) -> (String, Option<String>) {
    let t = std::time::Instant::now();
    let sb = installed_sandbox(image, solver, p);
    let (solver_used, apt_version) = solver_in(&sb);
    let want = s.expect_with_apt(&solver_used, &apt_version);
    let mut problems = Vec::new();
    if s.newer_stock {
        sb.add_local_repo("newer", &p.newer_repo).unwrap();
        problems.extend(published_newer_problems(&sb, &p.stock));
    }
    let before = sb.installed_packages().unwrap();
    let out = sb.sh(&s.script).unwrap();
    let v = verify_root(&sb);
    problems.extend(state_problems(&sb, p, &before));
    // What the entry installs is there: the seed's custom package, the new dependants.
    let mut installs = vec![CUSTOM];
    installs.extend(p.new.iter().flat_map(NewDependants::names));
    for wanted in installs {
        if s.script.contains(wanted) && want.rc == 0 && !is_installed(&sb, wanted) {
            problems.push(format!("{wanted} was not installed"));
        }
    }
    if rc(&out) != want.rc {
        problems.push(format!("rc {}, expected {}", rc(&out), want.rc));
    }
    problems.extend(rocm_pin_testkit::verify_unexpected(&v, want.verify_ok));
    let mut repaired = String::new();
    if !want.verify_ok && !v.status.success() {
        let (more, said) = repair_problems(&sb, p, &before, &text(&v));
        problems.extend(more);
        repaired = said;
    }
    let row = format!(
        "{solver:?}/{solver_used:?} apt {apt_version} {:<28} rc {:<3} verify {}{repaired}: {} {:.1}s",
        s.id,
        rc(&out),
        rc(&v),
        if problems.is_empty() { "ok" } else { "FAILED" },
        t.elapsed().as_secs_f64()
    );
    let failure = (!problems.is_empty()).then(|| {
        format!(
            "{solver:?} {}: {}\n--- script `{}` output:\n{}",
            s.id,
            problems.join("; "),
            s.script,
            text(&out)
        )
    });
    (row, failure)
}

/// Every scenario of the list, each in a fresh installed chroot under `solver`.
fn run_scenarios(solver: AptSolver) {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball() else { return };
    let Some(new) = new_dependants() else { return };
    let t0 = std::time::Instant::now();
    let image = ChrootImage::from_tarball("sid", &tarball).unwrap();
    let p = prepare(&image, Some(new));
    let (table, failures): (Vec<String>, Vec<Option<String>>) = scenarios(&inputs(&p))
        .iter()
        .map(|s| run_one(&image, solver, &p, s))
        .unzip();
    let failures: Vec<String> = failures.into_iter().flatten().collect();
    let new: Vec<String> = p
        .new
        .iter()
        .flat_map(|n| &n.dependants)
        .map(|d| format!("{} {} (on {})", d.package, d.version, d.stock))
        .collect();
    eprintln!(
        "debian_downstream ({solver:?}), {:.0}s, new dependants {}:\n{}",
        t0.elapsed().as_secs_f64(),
        new.join(", "),
        table.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn downstream_scenarios_keep_ours_on_debians_stock_default_solver() {
    run_scenarios(AptSolver::Default);
}

#[test]
fn downstream_scenarios_keep_ours_on_debians_stock_internal_solver() {
    run_scenarios(AptSolver::Internal);
}

fn status_json(sb: &Sandbox) -> (serde_json::Value, String) {
    let json = rocm_pin()
        .args(["status", "--json", "--root"])
        .arg(sb.root())
        .output()
        .unwrap();
    assert_success(&json, "status --json");
    let human = rocm_pin_on_root("status", sb.root());
    assert_success(&human, "status");
    (
        serde_json::from_slice(&json.stdout).unwrap(),
        String::from_utf8_lossy(&human.stdout).into_owned(),
    )
}

/// Issue 23 item 3: `status` on a Debian-flavour host names Debian's stock packages and the
/// newer upload apt has for them, before `rocm-pin install` (apt's candidate vs installed) and
/// after it (kept back by our pin), and no longer says the flavour cannot be replaced.
#[test]
fn status_names_debians_stock_and_the_upgrade_apt_has() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball() else { return };
    let image = ChrootImage::from_tarball("sid", &tarball).unwrap();
    let p = prepare(&image, None);
    status_before_install(&image, &p);
    status_after_install(&image, &p);
}

/// Nothing of ours, the stock and its newer upload published: status names the upload apt
/// would install for each stock package, and how replacements are made.
fn status_before_install(image: &ChrootImage, p: &Prepared) {
    let sb = Sandbox::new(image).unwrap();
    sb.add_local_repo("stock", &p.stock_repo).unwrap();
    sb.add_local_repo("newer", &p.newer_repo).unwrap();
    let (json, human) = status_json(&sb);
    assert_eq!(json["health"], "not-installed", "{json:#}");
    let gate = json["gate"].as_str().unwrap();
    assert!(
        gate.contains("rocm-pin package")
            && !gate.contains("does not package")
            && !gate.contains("would refuse"),
        "{}",
        gate
    );
    let upgrades = json["stock_runtime_upgrades"].as_array().unwrap();
    for s in &p.stock.packages {
        let newer = format!("{}+1", s.version);
        assert!(
            upgrades.iter().any(|u| u["package"] == s.package.as_str()
                && u["current"] == s.version.as_str()
                && u["newest"] == newer.as_str()),
            "{} {} -> {newer} not in {upgrades:#?}",
            s.package,
            s.version
        );
        assert_says(
            &human,
            &[&format!(
                "upgrade available: {} {} -> {newer}",
                s.package, s.version
            )],
        );
    }
    assert_eq!(upgrades.len(), p.stock.packages.len(), "{upgrades:#?}");
    eprintln!("debian_downstream: status before install:\n{human}");
}

/// After `rocm-pin install`: ours healthy, the newer upload kept back by the pin, named as an
/// upload of the same release with its ways forward.
fn status_after_install(image: &ChrootImage, p: &Prepared) {
    let release = p
        .stock
        .release
        .clone()
        .expect("the release of Debian's stock");
    let sb = installed_sandbox(image, AptSolver::Default, p);
    sb.add_local_repo("newer", &p.newer_repo).unwrap();
    let (json, human) = status_json(&sb);
    assert_eq!(json["health"], "healthy", "{json:#}\n{human}");
    // The stock is replaced: the release is the one ours Provides, as the gate reads it.
    assert_eq!(json["rocm_version"], release.as_str(), "{json:#}");
    assert!(
        human.starts_with(&format!(
            "ROCm:        {release} (from the package versions of "
        )),
        "{human}"
    );
    let up = &json["upgrades"];
    assert_eq!(up["stock_release"], release.as_str(), "{up:#}");
    assert_eq!(up["target_release"], release.as_str(), "{up:#}");
    for s in &p.stock.packages {
        assert!(
            up["stock"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["package"] == s.package.as_str()
                    && a["newest"] == format!("{}+1", s.version).as_str()
                    && a["priority"] == -1),
            "{} not kept back at -1: {up:#}",
            s.package
        );
        assert_says(&human, &[&format!("stock:       {}:", s.package)]);
    }
    assert!(
        human.contains(&format!("a newer upload of ROCm {release}"))
            && human.contains("rocm-pin package --staging")
            && human.contains("--stock-deb ./*.deb")
            && human.contains("rocm-pin install new/*.deb"),
        "{}",
        human
    );
    assert!(json["stock_runtime_upgrades"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(json["target_version"], release.as_str(), "{json:#}");
    eprintln!("debian_downstream: status after install, newer upload published:\n{human}");
    if std::env::var_os("ROCM_PIN_DEBIAN_BENCH").is_some() {
        bench_verify(&sb, &p.stock);
    }
}

/// `ROCM_PIN_DEBIAN_BENCH=1`: `rocm-pin verify --root` on the installed Debian host against
/// what a Debian admin runs there, `dpkg --verify` and `apt-cache policy` of the runtime
/// packages (hyperfine, the load printed before and after).
fn bench_verify(sb: &Sandbox, stock: &StockRuntime) {
    let root = sb.root().display().to_string();
    let names: Vec<String> = stock
        .packages
        .iter()
        .flat_map(|p| [p.package.clone(), format!("{}-pinned", p.package)])
        .collect();
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("debian_downstream bench: load before {}", load().trim());
    let out = std::process::Command::new("hyperfine")
        .args(["-N", "-i", "--warmup", "1", "--runs", "5"])
        .arg(format!("{} verify --root {root}", bin().display()))
        .arg(format!("chroot {root} dpkg --verify"))
        .arg(format!(
            "chroot {root} apt-cache policy {}",
            names.join(" ")
        ))
        .output()
        .expect("hyperfine");
    eprintln!(
        "{}\ndebian_downstream bench: load after {}",
        text(&out),
        load().trim()
    );
}

/// Issue 23 item 3: the guard on a Debian-flavour host: `rocm-pin guard on` arms after
/// `rocm-pin install`, a forced stock .deb then fails at that very dpkg command naming the
/// stock package and the repair, which goes through. `adopt` on the stock host refuses in one
/// line: nothing is patched in place (tests/install/debian_flavour.rs adopts a patched one).
#[test]
fn guard_and_adopt_on_a_debian_host() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball() else { return };
    let image = ChrootImage::from_tarball("sid", &tarball).unwrap();
    let p = prepare(&image, None);
    let hip = package_of(&p.stock, "libamdhip64.so.").package.clone();

    // adopt on the stock host: refused, nothing changed.
    let sb = Sandbox::new(&image).unwrap();
    sb.install_rocm_pin(&bin()).unwrap();
    let before = sb.read_to_string("/var/lib/dpkg/status").unwrap();
    let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
    let said = text(&out);
    assert_eq!(rc(&out), 2, "{said}");
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    assert!(
        said.contains("Debian's packaging")
            && said.contains("not patched in place")
            && said.contains("--stock-root")
            && said.contains(&hip),
        "{}",
        said
    );
    assert_eq!(before, sb.read_to_string("/var/lib/dpkg/status").unwrap());

    // The guard after rocm-pin install.
    let sb = installed_sandbox(&image, AptSolver::Default, &p);
    let out = sb.run(&["rocm-pin", "guard", "on"]).unwrap();
    assert_eq!(rc(&out), 0, "guard on: {}", text(&out));
    let out = sb.run(&["rocm-pin", "guard", "status"]).unwrap();
    assert_eq!(rc(&out), 0, "guard status: {}", text(&out));
    let (json, _) = status_json(&sb);
    assert_eq!(json["guard"], true, "{json:#}");
    let deb = format!("/root/stock/{hip}.deb");
    let out = sb.run(&["dpkg", "-i", "--force-all", &deb]).unwrap();
    let said = text(&out);
    let repair = format!("apt-get remove -y {hip}");
    assert_eq!(rc(&out), 2, "the guard's dpkg hook must fail it:\n{said}");
    assert!(
        said.contains(&format!("FAIL stock-absent {hip}")) && said.contains(&repair),
        "{}",
        said
    );
    let out = sb.sh(&repair).unwrap();
    assert_eq!(rc(&out), 0, "{repair}: {}", text(&out));
    let v = verify_root(&sb);
    assert_success(&v, "the command");
    for d in DEPENDANTS {
        assert!(is_installed(&sb, d), "{d} removed");
    }
    // adopt with ours installed: still nothing in place to adopt.
    let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
    assert_eq!(rc(&out), 2, "{}", text(&out));
}
