//! Acceptance: after `rocm-pin install` (run inside a bookworm chroot with real apt/dpkg), every
//! downstream command that used to revert the runtime leaves the patched libraries live, verify
//! passing and every dependant installed; apt exits as measured (rc 100 for explicit stock
//! versions, rc 1 for `dpkg -i` of stock). Then rollback, idempotency and the pin-restore path.

mod install_support;

use install_support::*;
use rocm_pin::standin::StockRole;

struct Scenario {
    name: &'static str,
    /// Shell script run inside the chroot; `$STOCK` is the stock .debs dir.
    script: String,
    /// Expected exit code of the script (the last command's, or the first failing one's).
    rc: i32,
    /// Publish the r2 stock release in the repository first.
    r2: bool,
    /// Expected outcome of `rocm-pin verify` afterwards.
    verify_ok: bool,
}

fn sc(name: &'static str, script: impl Into<String>, rc: i32) -> Scenario {
    Scenario {
        name,
        script: script.into(),
        rc,
        r2: false,
        verify_ok: true,
    }
}

fn scenarios(a: &Artifacts, solver3: bool) -> Vec<Scenario> {
    let stock_deb = |role: StockRole| {
        format!(
            "{STOCK_DEBS_DIR}/{}",
            a.stock
                .require(role)
                .unwrap()
                .deb
                .file_name()
                .unwrap()
                .to_string_lossy()
        )
    };
    let custom = format!(
        "/root/{}",
        a.custom.packages[0]
            .deb
            .file_name()
            .unwrap()
            .to_string_lossy()
    );
    let hip = a.stock.require(StockRole::HipRuntime).unwrap();
    let mut v = vec![
        sc("fix-broken", "apt-get -f install -y", 0),
        sc(
            "custom-rccl-eq+fix-broken",
            format!("dpkg -i --force-all {custom} || true; apt --fix-broken install -y"),
            0,
        ),
        sc(
            "reinstall-hip",
            "apt-get install --reinstall -y hip-runtime-amd",
            0,
        ),
        sc(
            "reinstall-hsa",
            "apt-get install --reinstall -y hsa-rocr",
            0,
        ),
        sc(
            "explicit-stock-version",
            format!("apt-get install -y {}", hip.pinned_request()),
            100,
        ),
        sc(
            "install-dependants",
            "apt-get install -y rocm-hip-runtime hip-dev rccl hipblas",
            0,
        ),
        sc("autoremove", "apt-get autoremove -y", 0),
        sc(
            "dpkg-i-stock",
            format!("dpkg -i {}", stock_deb(StockRole::HipRuntime)),
            1,
        ),
        sc(
            "ld.so.conf.d+ldconfig",
            "echo /opt/rocm-7.2.4/lib > /etc/ld.so.conf.d/rocm.conf; ldconfig",
            0,
        ),
    ];
    // dpkg -i --force-all of the stock hsa-rocr (its scripts run while ours are installed),
    // then fix-broken. Classic solver: removes the forced stock package again (rc 0).
    // apt 3's solver3 (measured): fix-broken fails rc 100, our files stay live, the forced
    // stock package stays half-installed next to ours, so verify fails (stock-absent).
    let mut force = sc(
        "force-stock-hsa+fix-broken",
        format!(
            "dpkg -i --force-all {} || true; apt --fix-broken install -y",
            stock_deb(StockRole::HsaRocr)
        ),
        if solver3 { 100 } else { 0 },
    );
    force.verify_ok = !solver3;
    v.push(force);
    for (name, cmd) in [
        ("r2:apt-get-upgrade", "apt-get upgrade -y"),
        ("r2:apt-upgrade", "apt upgrade -y"),
        ("r2:dist-upgrade", "apt-get dist-upgrade -y"),
    ] {
        let mut s = sc(name, cmd, 0);
        s.r2 = true;
        v.push(s);
    }
    v
}

fn run_matrix(suite: &str) {
    let a = artifacts(suite);
    let solver3 = suite == "trixie";
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for s in scenarios(a, solver3) {
        let t = std::time::Instant::now();
        let sb = fresh(a, &a.installed_snapshot);
        if s.r2 {
            sb.add_local_repo("stock", &a.r2.out_dir)
                .expect("publish r2");
        }
        let out = sb.sh(&s.script).unwrap();
        let got_rc = rc(&out);
        let ids = probe(&sb);
        let v = verify(&sb);
        let deps = dependant_states(&sb);
        let mut problems = Vec::new();
        if got_rc != s.rc {
            problems.push(format!("rc {got_rc}, expected {}", s.rc));
        }
        if !all_patched(&ids) {
            problems.push(format!("loader uses {ids:?}"));
        }
        if v.status.success() != s.verify_ok {
            problems.push(format!(
                "verify rc {} (expected {}):\n{}",
                rc(&v),
                if s.verify_ok { "pass" } else { "fail" },
                text(&v)
            ));
        }
        if !s.verify_ok && !failed_checks(&sb).iter().any(|c| c == "stock-absent") {
            problems.push("verify did not name stock-absent".into());
        }
        if !deps.iter().all(|(_, st)| st == "ii") {
            problems.push(format!("dependants {deps:?}"));
        }
        table.push(format!(
            "{suite} {:<28} rc {got_rc:<3} {} verify {} deps {} {:.1}s",
            s.name,
            if all_patched(&ids) { "P" } else { "NOT-P" },
            rc(&v),
            if deps.iter().all(|(_, st)| st == "ii") {
                "ii"
            } else {
                "BROKEN"
            },
            t.elapsed().as_secs_f64()
        ));
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {}\n--- script output:\n{}",
                s.name,
                problems.join("; "),
                text(&out)
            ));
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn downstream_commands_keep_the_patched_runtime_bookworm() {
    run_matrix("bookworm");
}

#[test]
fn install_is_idempotent_and_restores_a_deleted_pin() {
    let a = artifacts("bookworm");
    assert!(
        a.install_output.contains("verify: all"),
        "{}",
        a.install_output
    );
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

#[test]
fn rollback_restores_stock_offline() {
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.installed_snapshot);
    // No network, no repository: only the kept .debs.
    sb.sh_ok("rm -f /etc/apt/sources.list.d/*.list; apt-get update -q")
        .unwrap();
    let kept = sb.sh_ok("ls /var/lib/rocm-pin/stock").unwrap();
    assert!(
        kept.contains("hsa-rocr_") && kept.contains("hip-runtime-amd_"),
        "{kept}"
    );
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let ids = probe(&sb);
    assert!(
        ids.iter().all(|(_, id)| id.contains("-STOCK-")),
        "loader after rollback: {ids:?}"
    );
    assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
    let pol = sb
        .run_ok(&["apt-cache", "policy", "hsa-rocr", "hip-runtime-amd"])
        .unwrap();
    assert!(!pol.contains(" -1\n"), "stock still pinned:\n{pol}");
    assert!(!sb.path("/etc/apt/preferences.d/hsa-rocr-pinned").exists());
    // verify now fails (nothing of ours installed), exit 1.
    assert_eq!(rc(&verify(&sb)), 1);
}

/// apt 3 with `APT::Solver "3.0"`: the same matrix. The one measured difference: after
/// `dpkg -i --force-all` of stock hsa-rocr, fix-broken fails (rc 100) with our files still live.
#[test]
fn downstream_commands_keep_the_patched_runtime_trixie_solver3() {
    run_matrix("trixie");
}

#[test]
fn local_repo_turns_reinstall_into_a_real_reinstall() {
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
    let count = |sb: &rocm_pin::sandbox::Sandbox| {
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
    assert!(pol.contains("file:/var/lib/rocm-pin/repo"), "{pol}");
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
