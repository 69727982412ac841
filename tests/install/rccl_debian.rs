//! The pinned RCCL on Debian's REAL packages and on the AMD flavour with an exact-`=`
//! metapackage (issue 34, criterion 3).
//!
//! Debian: a copy of the 7.2.4 image (scripts/setup.d/23-debian-rocm-chroot.sh) gets
//! experimental's `librccl1` and `librccl1-tests` (its real test programs, `Depends: librccl1 (=
//! <version>)`) from the cached download of scripts/setup.d/26-debian-rccl.sh, published as a
//! local repository. The custom RCCL is a stand-in made from that root's own stock library
//! (`build_family_staging`: every dynamic symbol of Debian's librccl.so.1, object sizes kept,
//! plus an identity), packaged with `rocm-pin package --family rccl --staging` against the
//! chroot's stock set and installed with apt.
//!
//! AMD: the install tests' stock snapshot under each apt configuration (bookworm, trixie, trixie
//! with `APT::Solver "3.0"`), with a `rocm-hip-libraries` metapackage depending on the stock
//! `rccl (= <version>)` as AMD's does; the custom RCCL is rccl_pair's CPack build.
//!
//! Both then run the same table of apt commands ([`CASES`], one driver): after each row, the
//! family's state is judged by one function ([`assert_family_state`]): ours installed, every
//! dependant installed, and the loader maps ours (on Debian: a real `librccl1-tests` program,
//! every symbol bound at load). `rollback --family rccl` then brings the stock back.

use std::path::{Path, PathBuf};
use std::process::Command;

use rocm_pin_core::rocm::PinnedFamily;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::{StockRole, IDENTITY_PREFIX};
use rocm_pin_testkit::debs::{debs_in, field};
use rocm_pin_testkit::must_stdout;
use rocm_pin_testkit::staging::{build_family_staging, commit_args};

use crate::util::*;

const DEBIAN_IDENTITY: &str = "rccl-STANDIN-like-debian";
const AMD_IDENTITY: &str = "rccl-CPACK-amd-meta";

/// What apt must answer to a row's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Exit 0.
    Done,
    /// A non-zero exit: the pin keeps the stock version away.
    Refused,
}

/// One apt command a downstream image runs. `script` may name `{stock}` (the replaced stock
/// package), `{stock_deb}` (its .deb inside the chroot), `{stock_version}` and `{dev}` (the
/// family's development package; a flavour without one skips the row).
struct Case {
    step: &'static str,
    /// Publish the newer stock release before the command.
    publish_newer: bool,
    script: &'static str,
    answer: Answer,
    /// What apt's solver 3.0 answers when the stock package was installed manually (apt-mark
    /// showmanual), where it differs from `answer`.
    solver3_manual_stock: Answer,
}

const CASES: &[Case] = &[
    Case {
        step: "the seed's force-all + fix-broken",
        publish_newer: false,
        script: "dpkg -i --force-all {stock_deb}; apt-get --fix-broken install -y -q",
        answer: Answer::Done,
        // Measured: solver 3.0 keeps a forced stock package that was installed manually
        // ("rccl is selected for install") against our Conflicts and stops ("Unable to
        // correct dependencies", exit 100); ours still owns the files (our Replaces), so the
        // loader keeps mapping ours. A stock installed as a dependency (Debian's librccl1,
        // pulled in by librccl1-tests) is removed as by the classic solver.
        solver3_manual_stock: Answer::Refused,
    },
    Case {
        step: "remove the forced stock by name",
        publish_newer: false,
        script: "apt-get install -y -q {stock}-",
        answer: Answer::Done,
        solver3_manual_stock: Answer::Done,
    },
    Case {
        step: "reinstall by the stock name",
        publish_newer: false,
        script: "apt-get install --reinstall -y -q {stock}",
        answer: Answer::Done,
        solver3_manual_stock: Answer::Done,
    },
    Case {
        step: "install the -dev package (= on the stock)",
        publish_newer: false,
        script: "apt-get install -y -q {dev}",
        answer: Answer::Done,
        solver3_manual_stock: Answer::Done,
    },
    Case {
        step: "full-upgrade with a newer stock published",
        publish_newer: true,
        script: "apt-get full-upgrade -y -q",
        answer: Answer::Done,
        solver3_manual_stock: Answer::Done,
    },
    Case {
        step: "the explicit stock version",
        publish_newer: false,
        script: "apt-get install -y -q {stock}={stock_version}",
        answer: Answer::Refused,
        solver3_manual_stock: Answer::Refused,
    },
];

/// A host with the pinned RCCL installed, as the rows and the judge see it.
struct FamilyHost<'a> {
    flavour: String,
    /// apt runs with `APT::Solver "3.0"` and the stock package was installed manually.
    solver3_manual_stock: bool,
    sb: &'a Sandbox,
    /// Our replacement's package name.
    ours: String,
    stock: &'static str,
    stock_version: String,
    stock_deb: String,
    dev: Option<&'static str>,
    /// Installed packages that depend on the stock (some with `=`): kept through every row.
    dependants: Vec<&'static str>,
    /// The directory holding the newer stock release (published as repository `newer`) and
    /// the version of the stock package there.
    newer: PathBuf,
    newer_version: String,
    /// What the loader maps for librccl.so.1: Ok(how it was seen) when ours, Err(why not).
    maps_ours: &'a dyn Fn(&Sandbox) -> Result<String, String>,
}

/// The family's state after `when`, judged in one place: ours installed, every dependant
/// installed, the loader mapping ours.
fn assert_family_state(host: &FamilyHost, when: &str) -> String {
    let all = installed(host.sb);
    let state = |p: &str| {
        all.get(p)
            .map_or("not installed".to_string(), |v| format!("ii {v}"))
    };
    assert!(
        state(&host.ours).starts_with("ii"),
        "{}: {when}: {} is {}",
        host.flavour,
        host.ours,
        state(&host.ours)
    );
    for d in &host.dependants {
        assert!(
            state(d).starts_with("ii"),
            "{}: {when}: dependant {d} is {}",
            host.flavour,
            state(d)
        );
    }
    let maps = (host.maps_ours)(host.sb).unwrap_or_else(|why| {
        panic!(
            "{}: {when}: the loader does not map ours: {why}",
            host.flavour
        )
    });
    let kept: Vec<String> = host
        .dependants
        .iter()
        .map(|d| format!("{d} {}", state(d).trim()))
        .collect();
    format!(
        "{maps}; stock {} {}; {} {}; {}",
        host.stock,
        state(host.stock).trim(),
        host.ours,
        state(&host.ours).trim(),
        kept.join(", ")
    )
}

/// Whether apt has `package` as manually installed.
fn manual(sb: &Sandbox, package: &str) -> bool {
    let out = sb.run_ok(&["apt-mark", "showmanual", package]).unwrap();
    out.lines().any(|l| l.trim() == package)
}

/// Every fully installed package by name (a Multi-Arch: same package's `:<arch>` dropped) with
/// its version.
fn installed(sb: &Sandbox) -> std::collections::BTreeMap<String, String> {
    sb.installed_packages()
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k.split(':').next().unwrap_or_default().to_string(), v))
        .collect()
}

/// The whole table on a host where ours was just installed: the install row judged, every row
/// of [`CASES`], then `rollback --family rccl` back to the stock version ours replaced.
fn run_installed(host: &mut FamilyHost) {
    eprintln!(
        "| {} | rocm-pin install {}.deb (removes {}) | 0 | {} | |",
        host.flavour,
        host.ours,
        host.stock,
        assert_family_state(host, "installed")
    );
    run_cases(host);
    let stock_version = host.stock_version.clone();
    rollback(host, &stock_version);
}

/// Run every row of [`CASES`] on `host`, judging the state after each; prints the scenario
/// table's rows.
fn run_cases(host: &mut FamilyHost) {
    for case in CASES {
        if case.script.contains("{dev}") && host.dev.is_none() {
            eprintln!(
                "| {} | {} | (no -dev package in this flavour) | | |",
                host.flavour, case.step
            );
            continue;
        }
        if case.publish_newer {
            host.sb.add_local_repo("newer", &host.newer).unwrap();
            let policy = host
                .sb
                .run_ok(&["apt-cache", "policy", host.stock])
                .unwrap();
            assert!(
                policy.contains(&host.newer_version),
                "{}: the newer {} {} is not published: {policy}",
                host.flavour,
                host.stock,
                host.newer_version
            );
        }
        let script = case
            .script
            .replace("{stock_deb}", &host.stock_deb)
            .replace("{stock_version}", &host.stock_version)
            .replace("{stock}", host.stock)
            .replace("{dev}", host.dev.unwrap_or_default());
        let t0 = std::time::Instant::now();
        let run = host.sb.sh(&script).unwrap();
        let code = run.status.code().unwrap_or(-1);
        let answer = if host.solver3_manual_stock {
            case.solver3_manual_stock
        } else {
            case.answer
        };
        match answer {
            Answer::Done => assert_eq!(code, 0, "{}: {script}:\n{}", host.flavour, text(&run)),
            Answer::Refused => assert_ne!(code, 0, "{}: {script} was not refused", host.flavour),
        }
        if let Some(dev) = host.dev.filter(|_| case.script.contains("{dev}")) {
            host.dependants.push(dev);
        }
        let state = assert_family_state(host, &script);
        // A row solver 3.0 refuses where the classic solver repairs leaves the forced stock
        // installed next to ours: verify must say so, and its fixes must lead to green.
        let green = !(host.solver3_manual_stock && answer != case.answer);
        let verified = judge_with_verify(host, &script, green);
        eprintln!(
            "| {} | {} (`{script}`) | {code} | {state}; {verified} | {:.1} s |",
            host.flavour,
            case.step,
            t0.elapsed().as_secs_f64()
        );
    }
}

/// Install our .deb with `rocm-pin install`, as a user does: it names the stock package's
/// removal in its one apt transaction, which apt's solver 3.0 needs (it does not remove a
/// manually installed package for a `Conflicts`: measured on AMD's `rccl`, "Reached two
/// conflicting decisions"), keeps the stock .deb for rollback and writes the family's marker.
fn install_ours(sb: &Sandbox, deb: &Path) {
    sb.install_rocm_pin(&bin()).unwrap();
    let inside = format!("/root/{}", deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(deb, &inside).unwrap();
    let out = sb.run(&["rocm-pin", "install", &inside]).unwrap();
    assert!(
        out.status.success(),
        "rocm-pin install of the pinned rccl:\n{}",
        text(&out)
    );
}

/// verify after a row: green, or, where the row's command left the host broken (solver 3.0
/// keeping a forced stock), red and led back to green by the fixes it prints, run verbatim.
fn judge_with_verify(host: &FamilyHost, script: &str, expect_green: bool) -> String {
    let v = verify(host.sb);
    if expect_green {
        assert!(
            v.status.success(),
            "{}: verify after `{script}`:\n{}",
            host.flavour,
            text(&v)
        );
        return "verify 0".to_string();
    }
    assert!(
        !v.status.success() && text(&v).contains("family"),
        "{}: verify passes or does not name the family after `{script}`:\n{}",
        host.flavour,
        text(&v)
    );
    let mut said = String::new();
    let (row, problem) =
        crate::advice::follow_the_advice(host.sb, "forced stock kept", &|_| Vec::new(), &mut said);
    assert!(problem.is_none(), "{}: {problem:?}", host.flavour);
    format!(
        "verify 1, then {}",
        row.trim_start_matches("forced stock kept").trim()
    )
}

/// `rocm-pin rollback --family rccl` inside the chroot: ours purged, the stock back at
/// `version`, every dependant kept.
fn rollback(host: &FamilyHost, version: &str) {
    host.sb.install_rocm_pin(&bin()).unwrap();
    let out = host
        .sb
        .run(&["rocm-pin", "rollback", "--family", "rccl"])
        .unwrap();
    assert!(
        out.status.success(),
        "{}: rollback:\n{}",
        host.flavour,
        text(&out)
    );
    let purged = host
        .sb
        .run(&["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", &host.ours])
        .unwrap();
    assert!(
        !purged.status.success(),
        "{} purged: {}",
        host.ours,
        text(&purged)
    );
    let all = installed(host.sb);
    for kept in host.dependants.iter().chain([&host.stock]) {
        assert!(
            all.contains_key(*kept),
            "{}: after rollback {kept}: {all:?}",
            host.flavour
        );
    }
    let now = host
        .sb
        .run_ok(&["dpkg-query", "-W", "-f", "${Version}", host.stock])
        .unwrap();
    assert_eq!(
        now, version,
        "{}: the stock back at the replaced version",
        host.flavour
    );
    assert!(
        (host.maps_ours)(host.sb).is_err(),
        "{}: after rollback the loader still maps ours",
        host.flavour
    );
    eprintln!(
        "| {} | rollback --family rccl | 0 | stock {} {now} | |",
        host.flavour, host.stock
    );
}

/// A copy of `deb` at version `<its version>+1` (only control.tar is rewritten: the payload is
/// kept byte for byte), written into `dir`: a newer stock release.
fn newer_release(deb: &Path, dir: &Path) -> PathBuf {
    let work = dir.join("repack");
    let control = work.join("control");
    std::fs::create_dir_all(&control).unwrap();
    let deb = std::fs::canonicalize(deb).unwrap();
    must(Command::new("ar").arg("x").arg(&deb).current_dir(&work));
    let members: Vec<String> = must_stdout(Command::new("ar").arg("t").arg(&deb))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(members.len(), 3, "{}: {members:?}", deb.display());
    must(
        Command::new("tar")
            .arg("-xf")
            .arg(work.join(&members[1]))
            .arg("-C")
            .arg(&control),
    );
    let fields = std::fs::read_to_string(control.join("control")).unwrap();
    let version = field(&deb, "Version");
    let newer = format!("{version}+1");
    let fields = fields.replace(
        &format!("\nVersion: {version}\n"),
        &format!("\nVersion: {newer}\n"),
    );
    std::fs::write(control.join("control"), fields).unwrap();
    std::fs::remove_file(work.join(&members[1])).unwrap();
    must(
        Command::new("tar")
            .args(["--owner=0", "--group=0", "-cJf"])
            .arg(work.join("control.tar.xz"))
            .arg("-C")
            .arg(&control)
            .arg("."),
    );
    let package = field(&deb, "Package");
    let out = dir.join(format!(
        "{package}_{newer}_{}.deb",
        field(&deb, "Architecture")
    ));
    must(
        Command::new("ar")
            .arg("rc")
            .arg(&out)
            .arg("debian-binary")
            .arg("control.tar.xz")
            .arg(&members[2])
            .current_dir(&work),
    );
    std::fs::remove_dir_all(&work).unwrap();
    assert_eq!(field(&out, "Version"), newer);
    out
}

/// The ELF programs of installed package `package` that NEED `soname`.
fn programs_needing(sb: &Sandbox, package: &str, soname: &str) -> Vec<String> {
    sb.run_ok(&["dpkg-query", "-L", package])
        .unwrap()
        .lines()
        .filter(|p| {
            let host = sb.path(p);
            host.symlink_metadata().is_ok_and(|m| m.is_file())
                && rocm_pin_core::elf::read_elf(&host)
                    .is_ok_and(|e| e.needed.iter().any(|n| n == soname))
        })
        .map(str::to_string)
        .collect()
}

/// Run `program` (`--gtest_list_tests`: it lists without a GPU) with every symbol bound at
/// load (`LD_BIND_NOW`) and the loader's trace (`LD_DEBUG=libs`): the path it mapped
/// librccl.so.1 from, the package owning it and whether that file carries `identity`.
fn program_maps(sb: &Sandbox, program: &str, identity: &str) -> Result<String, String> {
    let run = sb
        .sh(&format!(
            "LD_BIND_NOW=1 LD_DEBUG=libs {program} --gtest_list_tests 2>&1"
        ))
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    if out.contains("symbol lookup error") || out.contains("error while loading shared libraries") {
        return Err(format!("{program} does not load: {}", tail_lines(&out)));
    }
    let path = out
        .lines()
        .filter_map(|l| l.split_once("calling init: ").map(|(_, p)| p.trim()))
        .find(|p| p.ends_with("/librccl.so.1"))
        .ok_or_else(|| {
            format!(
                "{program} never initialised librccl.so.1: {}",
                tail_lines(&out)
            )
        })?
        .to_string();
    let owner = sb
        .run_ok(&["dpkg-query", "-S", &path])
        .map_err(|e| format!("{path}: {e:#}"))?;
    let bytes = std::fs::read(sb.path(&path)).map_err(|e| format!("{path}: {e}"))?;
    let marker = format!("{IDENTITY_PREFIX}{identity}");
    let ours = bytes.windows(marker.len()).any(|w| w == marker.as_bytes());
    let seen = format!(
        "{program} (exit {}) maps {path} of {}",
        run.status.code().unwrap_or(-1),
        owner.split(':').next().unwrap_or_default()
    );
    if ours {
        Ok(seen)
    } else {
        Err(seen)
    }
}

fn tail_lines(out: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// The stand-in RCCL like `root`'s stock, packaged against that root: the .deb.
fn package_like(root: &Path, work: &Path, identity: &str) -> PathBuf {
    let rccl = PinnedFamily::by_name("rccl").expect("the rccl family");
    let staging = work.join("staging");
    let made = build_family_staging(&staging, rccl, identity, root);
    assert_eq!(made.len(), 1, "{made:?}");
    let out = work.join("ours");
    let res = Command::new(bin())
        .args(["package", "--family", "rccl", "--staging"])
        .arg(&staging)
        .arg("--stock-root")
        .arg(root)
        .args(commit_args())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(res.status.success(), "{}", text(&res));
    debs_in(&out).remove(0)
}

rocm_pin_testkit::root_tests!("a chroot", debian_real_librccl1 {
    /// Debian's real packages under apt's solver 3.0 (sid's apt default) and its classic one.
    the_pinned_rccl_on_debians_real_librccl1_solver3 => "3.0",
    the_pinned_rccl_on_debians_real_librccl1_classic_solver => "internal",
});

fn debian_real_librccl1(solver: &str) {
    let Some(tarball) = crate::advice_debian::image_tarball("sid-debian-rocm") else {
        return;
    };
    let input = "debian-rccl/packages";
    let Some(list) = rocm_pin_testkit::setup_input(input) else {
        rocm_pin_testkit::skip_without_setup("rccl_debian", input);
        return;
    };
    let t0 = std::time::Instant::now();
    let debs = list.parent().unwrap();
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let sb = crate::advice_debian::sandbox(&tarball);
    sb.write(
        "/etc/apt/apt.conf.d/99rocm-pin-test-solver",
        format!("APT::Solver \"{solver}\";\n"),
    )
    .unwrap();
    let dump = sb.run_ok(&["apt-config", "dump", "APT::Solver"]).unwrap();
    assert!(
        dump.contains(&format!("APT::Solver \"{solver}\";")),
        "{dump}"
    );
    let repo = sb.add_local_repo("debian-rccl", debs).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "-q", "librccl1-tests"])
        .expect("Debian's librccl1-tests installs from the cached download");
    let stock_version = sb
        .run_ok(&["dpkg-query", "-W", "-f", "${Version}", "librccl1"])
        .unwrap();
    let stock_file = debs_in(debs)
        .into_iter()
        .find(|d| field(d, "Package") == "librccl1")
        .expect("librccl1's .deb in the download");
    let programs = programs_needing(&sb, "librccl1-tests", "librccl.so.1");
    assert!(
        !programs.is_empty(),
        "librccl1-tests has no program linked against librccl.so.1"
    );
    let program = programs[0].clone();
    let stock_maps = program_maps(&sb, &program, DEBIAN_IDENTITY)
        .expect_err("the stock is what the loader maps before");
    assert!(stock_maps.contains("of librccl1"), "{stock_maps}");
    eprintln!(
        "rccl_debian: stock set up in {:.1} s: {stock_maps}",
        t0.elapsed().as_secs_f64()
    );

    let stock_manual = manual(&sb, "librccl1");
    let ours_deb = package_like(sb.root(), w, DEBIAN_IDENTITY);
    install_ours(&sb, &ours_deb);
    let newer = w.join("newer");
    std::fs::create_dir_all(&newer).unwrap();
    let newer_version = field(&newer_release(&stock_file, &newer), "Version");
    let maps = |sb: &Sandbox| program_maps(sb, &program, DEBIAN_IDENTITY);
    let mut host = FamilyHost {
        flavour: format!("Debian librccl1, solver {solver}"),
        solver3_manual_stock: solver == "3.0" && stock_manual,
        sb: &sb,
        ours: field(&ours_deb, "Package"),
        stock: "librccl1",
        stock_version: stock_version.clone(),
        stock_deb: format!(
            "{}/{}",
            repo.chroot_dir.display(),
            stock_file.file_name().unwrap().to_str().unwrap()
        ),
        dev: Some("librccl-dev"),
        dependants: vec!["librccl1-tests"],
        newer,
        newer_version,
        maps_ours: &maps,
    };
    run_installed(&mut host);
    eprintln!(
        "rccl_debian: Debian's real librccl1 in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// A metapackage `name` depending on `depends`, built with dpkg-deb into `dir`.
fn metapackage(dir: &Path, name: &str, depends: &str) -> PathBuf {
    let tree = dir.join(format!("{name}-tree"));
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        format!(
            "Package: {name}\nVersion: 7.2.4.1\nArchitecture: all\nMaintainer: T <t@example.invalid>\n\
             Depends: {depends}\nDescription: ROCm libraries (stand-in metapackage)\n \
             Exact dependency on rccl, as AMD's rocm-hip-libraries.\n"
        ),
    )
    .unwrap();
    let deb = dir.join(format!("{name}_7.2.4.1_all.deb"));
    must(
        Command::new("dpkg-deb")
            .args(["--build", "--root-owner-group"])
            .arg(&tree)
            .arg(&deb),
    );
    std::fs::remove_dir_all(&tree).unwrap();
    deb
}

/// The AMD flavour under apt configuration `config`: the stock snapshot of the install tests
/// with `rocm-hip-libraries` depending on `rccl (= <stock>)`, rccl_pair's CPack RCCL pinned.
fn amd_rccl_kept_with_an_exact_metapackage(config: &str) {
    let t0 = std::time::Instant::now();
    let a = artifacts(config);
    let sb = fresh(a, &a.stock_snapshot);
    let stock = a.stock.require(StockRole::Rccl).unwrap();
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let meta = w.join("meta");
    std::fs::create_dir_all(&meta).unwrap();
    metapackage(
        &meta,
        "rocm-hip-libraries",
        &format!("{} (= {}), hipblas", stock.name, stock.version),
    );
    sb.add_local_repo("meta", &meta).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "-q", "rocm-hip-libraries"])
        .expect("the metapackage installs on the stock rccl");

    let stock_manual = manual(&sb, &stock.name);
    let ours_deb = crate::rccl_pair::package_cpack_rccl(sb.root(), w, AMD_IDENTITY);
    install_ours(&sb, &ours_deb);
    let newer = w.join("newer");
    std::fs::create_dir_all(&newer).unwrap();
    let newer_version = field(&newer_release(&stock.deb, &newer), "Version");
    let stock_deb = format!("/root/{}", stock.deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&stock.deb, &stock_deb).unwrap();
    let maps = |sb: &Sandbox| {
        let identity = crate::rccl_pair::rccl_identity(sb);
        if identity == AMD_IDENTITY {
            Ok(format!("the probe maps {identity}"))
        } else {
            Err(format!("the probe maps {identity:?}"))
        }
    };
    let mut host = FamilyHost {
        flavour: format!("AMD rccl, {config}"),
        solver3_manual_stock: solver_of(config) == rocm_pin_core::host::apt::Solver::Solver3
            && stock_manual,
        sb: &sb,
        ours: field(&ours_deb, "Package"),
        stock: "rccl",
        stock_version: stock.version.clone(),
        stock_deb,
        dev: None,
        dependants: vec![
            "rocm-hip-libraries",
            "hipblas",
            "hip-dev",
            "rocm-hip-runtime",
        ],
        newer,
        newer_version,
        maps_ours: &maps,
    };
    run_installed(&mut host);
    eprintln!(
        "rccl_debian: AMD {config} in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

per_config!(amd_rccl_kept_with_an_exact_metapackage);
