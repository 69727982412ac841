//! Acceptance: after `rocm-pin install` (run inside a chroot with real apt/dpkg), every
//! downstream command of the one scenario list (`rocm_pin_kit::standin::scenarios`, the demo's
//! among them) leaves the patched libraries live and every dependant installed, with verify
//! passing or, where the list says so for the solver, apt failing loudly and verify naming a
//! repair that works. Run under each apt configuration CI covers: bookworm (apt 2.6), trixie
//! (apt 3.0, classic solver), trixie with `APT::Solver "3.0"`. Then the repair by `rocm-pin
//! install`, rollback, idempotency and the pin-restore path.

use crate::util::*;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::scenarios::{scenarios, Inputs, StockNames};
use rocm_pin_kit::standin::StockRole;
use rocm_pin_testkit::assert_says;

fn file_name(p: &std::path::Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Where the scenarios' inputs are in the snapshots.
fn inputs(a: &Artifacts) -> Inputs {
    let stock_deb = |role: StockRole| {
        format!(
            "{STOCK_DEBS_DIR}/{}",
            file_name(&a.stock.require(role).unwrap().deb)
        )
    };
    Inputs {
        custom_rccl_deb: format!("/root/{}", file_name(&a.custom.packages[0].deb)),
        stock_hsa_deb: stock_deb(StockRole::HsaRocr),
        stock_hip_deb: stock_deb(StockRole::HipRuntime),
        stock_hip_request: a
            .stock
            .require(StockRole::HipRuntime)
            .unwrap()
            .pinned_request(),
        names: StockNames::amd(),
    }
}

/// The patched pair live, every dependant installed: what must hold after every scenario.
fn runtime_problems(sb: &Sandbox) -> Vec<String> {
    let mut problems = Vec::new();
    let ids = probe(sb);
    if !all_patched(&ids) {
        problems.push(format!("loader uses {ids:?}"));
    }
    let deps = dependant_states(sb);
    if !deps.iter().all(|(_, st)| st == "ii") {
        problems.push(format!("dependants {deps:?}"));
    }
    problems
}

/// The repair verify names for a stock package next to ours: the first backquoted command of
/// its `stock-absent` line.
fn named_repair(verify_text: &str) -> Option<String> {
    let line = verify_text
        .lines()
        .find(|l| l.contains("FAIL") && l.contains("stock-absent"))?;
    line.split('`').nth(1).map(str::to_string)
}

/// Every scenario of the list in a fresh copy of the installed chroot of `config`, checked
/// against the outcome the list states for that config's solver. When verify is to fail, it
/// must fail `stock-absent` and name a repair; the repair is run and everything checked again.
fn run_matrix(config: &str) {
    let a = artifacts(config);
    let solver = solver_of(config);
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for s in scenarios(&inputs(a)) {
        let want = s.expect(&solver);
        let t = std::time::Instant::now();
        let sb = fresh(a, &a.installed_snapshot);
        if s.newer_stock {
            sb.add_local_repo("stock", &a.r2.out_dir)
                .expect("publish r2");
        }
        let out = sb.sh(&s.script).unwrap();
        let got_rc = rc(&out);
        let v = verify(&sb);
        let mut problems = runtime_problems(&sb);
        if got_rc != want.rc {
            problems.push(format!("rc {got_rc}, expected {}", want.rc));
        }
        problems.extend(rocm_pin_testkit::verify_unexpected(&v, want.verify_ok));
        let mut repaired = String::new();
        if !want.verify_ok && !v.status.success() {
            let failed = failed_checks(&sb);
            if !failed.iter().any(|c| c == "stock-absent") {
                problems.push("verify did not name stock-absent".into());
            }
            // A stock package forced in next to ours is not a patch in place: that advice
            // (`rocm-pin adopt`) refuses on this host and names itself again.
            if failed.iter().any(|c| c == "in-place-patch") || text(&v).contains("rocm-pin adopt") {
                problems.push(format!(
                    "verify calls ours a patch in place (advice that loops):\n{}",
                    text(&v)
                ));
            }
            match named_repair(&text(&v)) {
                None => problems.push(format!(
                    "verify names no repair for stock-absent:\n{}",
                    text(&v)
                )),
                Some(repair) => {
                    let r = sb.sh(&repair).unwrap();
                    let v2 = verify(&sb);
                    if rc(&r) != 0 || !v2.status.success() {
                        problems.push(format!(
                            "the repair verify names, `{repair}`, rc {}:\n{}\nverify after it:\n{}",
                            rc(&r),
                            text(&r),
                            text(&v2)
                        ));
                    }
                    problems.extend(runtime_problems(&sb));
                    repaired = format!(", then `{repair}` rc {}", rc(&r));
                }
            }
        }
        table.push(format!(
            "{config:<14} {:<28} rc {got_rc:<3} verify {}{repaired}: {} {:.1}s",
            s.id,
            rc(&v),
            if problems.is_empty() { "ok" } else { "FAILED" },
            t.elapsed().as_secs_f64()
        ));
        if !problems.is_empty() {
            failures.push(format!(
                "{config} {}: {}\n--- script output:\n{}",
                s.id,
                problems.join("; "),
                text(&out)
            ));
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

rocm_pin_testkit::root_tests!("a chroot", run_matrix {
    downstream_commands_keep_the_patched_runtime_bookworm => "bookworm",
    downstream_commands_keep_the_patched_runtime_trixie => "trixie",
    /// apt 3 with `APT::Solver "3.0"`: the same list. The measured difference: after `dpkg -i
    /// --force-all` of a stock package of the pair, fix-broken fails (rc 100) with our files still
    /// live; verify fails naming `apt-get remove -y <stock>`, which repairs.
    downstream_commands_keep_the_patched_runtime_trixie_solver3 => "trixie-solver3",
});

/// `rocm-pin install` repairs a host where a stock package of either half was forced in next
/// to ours (`dpkg -i --force-all`): the stock package is removed by name in the same apt
/// transaction, nothing else goes, verify passes, under every apt configuration.
#[test]
fn install_repairs_a_stock_package_forced_in_next_to_ours() {
    rocm_pin_testkit::needs_root!("a chroot");
    let mut failures = Vec::new();
    for config in CONFIGS {
        let a = artifacts(config);
        let i = inputs(a);
        // The newer stock release's hsa-rocr too: another version than ours provide.
        let r2_hsa = a.r2.require(StockRole::HsaRocr).unwrap();
        let r2_deb = format!("/root/{}", file_name(&r2_hsa.deb));
        for (stock, deb) in [
            ("hsa-rocr", &i.stock_hsa_deb),
            ("hip-runtime-amd", &i.stock_hip_deb),
            ("hsa-rocr", &r2_deb),
        ] {
            let sb = fresh(a, &a.installed_snapshot);
            sb.copy_in(&r2_hsa.deb, &r2_deb).unwrap();
            sb.sh_ok(&format!("dpkg -i --force-all {deb}")).unwrap();
            assert!(
                failed_checks(&sb).contains(&"stock-absent".to_string()),
                "{config}: forcing {stock} in must fail verify"
            );
            let before = sb.installed_packages().unwrap();
            let out = sb.run(&install_argv(&a.ours)).unwrap();
            let after = sb.installed_packages().unwrap();
            let gone: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
            let mut problems = runtime_problems(&sb);
            if rc(&out) != 0 {
                problems.push(format!("rc {}", rc(&out)));
            }
            if gone != [stock] {
                problems.push(format!("removed {gone:?}, expected only {stock}"));
            }
            if !text(&out).contains(&format!("{stock}- (the stock packages removed by name")) {
                problems
                    .push("the report does not say the stock package was removed by name".into());
            }
            let v = verify(&sb);
            if !v.status.success() {
                problems.push(format!("verify fails:\n{}", text(&v)));
            }
            // Only the version ours provide is kept for rollback, never the forced one.
            let kept = sb.sh_ok("ls /var/lib/rocm-pin/stock").unwrap();
            if kept.contains(&r2_hsa.version) {
                problems.push(format!(
                    "the forced {} was kept for rollback: {kept}",
                    r2_hsa.version
                ));
            }
            eprintln!(
                "{config:<14} install repairs forced {} rc {} removed {gone:?}",
                deb.rsplit('/').next().unwrap(),
                rc(&out)
            );
            if !problems.is_empty() {
                failures.push(format!(
                    "{config} {stock}: {}\n{}",
                    problems.join("; "),
                    text(&out)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn install_is_idempotent_and_restores_a_deleted_pin() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    assert_says(&a.install_output, &["verify: all"]);
    let sb = fresh(a, &a.installed_snapshot);
    let before = sb.read_to_string("/var/lib/dpkg/status").unwrap();
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("already-installed"), "{}", text(&out));
    assert_eq!(before, sb.read_to_string("/var/lib/dpkg/status").unwrap());

    // The pin conffile deleted: verify names it, install restores it (--force-confmiss).
    let pin = "/etc/apt/preferences.d/hip-runtime-amd-pinned";
    std::fs::remove_file(sb.path(pin)).unwrap();
    assert!(failed_checks(&sb).contains(&"pin-file".to_string()));
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(sb.path(pin).exists(), "pin not restored:\n{}", text(&out));
    assert!(verify(&sb).status.success());
}

/// Rollback under every apt configuration: the kept stock .debs back offline in one apt
/// transaction, ours purged, the stock loader live, dependants kept.
#[test]
fn rollback_restores_stock_offline() {
    rocm_pin_testkit::needs_root!("a chroot");
    for config in CONFIGS {
        let a = artifacts(config);
        let sb = fresh(a, &a.installed_snapshot);
        // No network, no repository: only the kept .debs.
        sb.sh_ok("rm -f /etc/apt/sources.list.d/*.list; apt-get update -q")
            .unwrap();
        let kept = sb.sh_ok("ls /var/lib/rocm-pin/stock").unwrap();
        assert!(
            kept.contains("hsa-rocr_") && kept.contains("hip-runtime-amd_"),
            "{config}: {kept}"
        );
        let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
        assert_eq!(rc(&out), 0, "{config}: {}", text(&out));
        let ids = probe(&sb);
        assert!(
            ids.iter().all(|(_, id)| id.contains("-STOCK-")),
            "{config}: loader after rollback: {ids:?}"
        );
        assert!(
            dependants_installed(&sb),
            "{config}: {:?}",
            dependant_states(&sb)
        );
        let pol = sb
            .run_ok(&["apt-cache", "policy", "hsa-rocr", "hip-runtime-amd"])
            .unwrap();
        assert!(
            !pol.contains(" -1\n"),
            "{config}: stock still pinned:\n{pol}"
        );
        assert!(!sb.path("/etc/apt/preferences.d/hsa-rocr-pinned").exists());
        // verify now fails (nothing of ours installed), exit 1.
        assert_eq!(rc(&verify(&sb)), 1);
        eprintln!("{config:<14} rollback rc 0, stock live, dependants kept");
    }
}

#[test]
fn local_repo_turns_reinstall_into_a_real_reinstall() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.stock_snapshot);
    let mut argv = install_argv(&a.ours);
    argv.push("--local-repo");
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let v = verify_json(&sb);
    let repo_check = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "local-repo")
        .cloned()
        .unwrap_or_else(|| panic!("no local-repo check: {v}"));
    assert_eq!(repo_check["ok"], true, "{repo_check}");
    let count = |sb: &rocm_pin_kit::sandbox::Sandbox| {
        sb.read_to_string("/var/log/dpkg.log")
            .unwrap_or_default()
            .matches("status installed hip-runtime-amd-pinned")
            .count()
    };
    let before = count(&sb);
    let out = sb
        .run(&["apt-get", "install", "--reinstall", "-y", "hip-runtime-amd"])
        .unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(
        !text(&out).contains("cannot be downloaded"),
        "{}",
        text(&out)
    );
    assert!(count(&sb) > before, "not reinstalled:\n{}", text(&out));
    assert!(all_patched(&probe(&sb)));
    assert!(verify(&sb).status.success());
    // Our names come from it at 500 (the source itself is at -1 for every other name), and
    // the stock names stay pinned away.
    let pol = sb
        .run_ok(&["apt-cache", "policy", "hip-runtime-amd-pinned"])
        .unwrap();
    assert!(
        pol.lines()
            .any(|l| l.starts_with(" *** ") && l.ends_with(" 500")),
        "{pol}"
    );
    assert_says(&pol, &["file:/var/lib/rocm-pin/repo"]);
    assert_eq!(
        failed_checks(&sb),
        Vec::<String>::new(),
        "pin-effective must still hold"
    );
    // A group-writable repository fails verify.
    sb.run_ok(&["chmod", "g+w", "/var/lib/rocm-pin/repo/Packages"])
        .unwrap();
    assert!(failed_checks(&sb).contains(&"local-repo".to_string()));
}
