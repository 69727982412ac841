//! Two families installed by `rocm-pin install` (issue 34, item 4): the pinned pair (the
//! install tests' snapshot), then the custom RCCL made by CPack, packaged with `package
//! --family rccl --from-deb` against that host and installed with `rocm-pin install
//! <rccl-pinned.deb>` (its family read from the .deb). Then: verify checks both and names the
//! family that fails, its printed fix run verbatim leads to green; the guard keeps RCCL through
//! the seed's `dpkg -i --force-all <stock rccl>.deb; apt --fix-broken install`; a newer stock
//! RCCL published is kept back, and its way forward (`rollback --family rccl`, then the newer
//! stock) never touches the pair; `rollback` with no family puts every stock package back.

use std::time::Instant;

use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::StockRole;

use crate::rccl_pair::rccl_identity;
use crate::util::*;

const IDENTITY: &str = "rccl-CPACK-family";

/// Version of every package of the pair's (ours and the stock ones kept), to see that nothing
/// of it moved.
fn pair_versions(sb: &Sandbox) -> String {
    let out = sb
        .sh("dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' | grep -v rccl | sort")
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `family` check of verify --json for `name`: (ok, detail).
fn family_check(sb: &Sandbox, name: &str) -> Option<(bool, String)> {
    let v = verify_json(sb);
    v["checks"].as_array()?.iter().find_map(|c| {
        (c["name"] == "family" && c["subject"] == name).then(|| {
            (
                c["ok"] == true,
                c["detail"].as_str().unwrap_or_default().to_string(),
            )
        })
    })
}

/// One row of the scenario table: step, exit, what the loader maps, verify's exit.
fn row(sb: &Sandbox, step: &str, exit: Option<i32>, started: Instant) -> (String, i32) {
    let identity = rccl_identity(sb);
    let v = verify(sb);
    eprintln!(
        "rccl_family | {step} | {exit:?} | {identity} | verify {} | pair patched {} | {:.1}s",
        rc(&v),
        all_patched(&probe(sb)),
        started.elapsed().as_secs_f64()
    );
    (identity, rc(&v))
}

/// The stock rccl .deb again at a newer version (what AMD's next point release publishes).
fn newer_stock(stock: &std::path::Path, dir: &std::path::Path) -> String {
    let tree = dir.join("tree");
    std::fs::create_dir_all(dir).unwrap();
    let ok = |c: &mut std::process::Command| assert!(c.status().unwrap().success(), "{c:?}");
    ok(std::process::Command::new("dpkg-deb")
        .arg("-R")
        .arg(stock)
        .arg(&tree));
    let control = tree.join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).unwrap();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .unwrap()
        .to_string();
    let newer = format!("{version}+next1");
    std::fs::write(
        &control,
        text.replace(
            &format!("Version: {version}\n"),
            &format!("Version: {newer}\n"),
        ),
    )
    .unwrap();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    ok(std::process::Command::new("dpkg-deb")
        .args(["--root-owner-group", "-b"])
        .arg(&tree)
        .arg(repo.join("rccl_newer_amd64.deb")));
    newer
}

#[test]
fn rocm_pin_installs_verifies_and_rolls_back_rccl_next_to_the_pair() {
    rocm_pin_testkit::needs_root!("a chroot");
    let started = Instant::now();
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.installed_snapshot);
    let work = tempfile::tempdir().unwrap();
    let deb = crate::rccl_pair::package_cpack_rccl(sb.root(), work.path(), IDENTITY);
    let inside = format!("/root/{}", deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&deb, &inside).unwrap();
    let pair_before = pair_versions(&sb);

    // rocm-pin install <rccl-pinned.deb>: the family read from the .deb, the stock kept.
    let inst = sb.run(&["rocm-pin", "install", &inside]).unwrap();
    assert_eq!(rc(&inst), 0, "{}", text(&inst));
    let (identity, v) = row(
        &sb,
        "rocm-pin install rccl-pinned",
        Some(rc(&inst)),
        started,
    );
    assert_eq!((identity.as_str(), v), (IDENTITY, 0));
    assert_eq!(
        family_check(&sb, "rccl").map(|c| c.0),
        Some(true),
        "verify names the rccl family"
    );
    let kept = sb
        .sh("ls /var/lib/rocm-pin/ours/rccl /var/lib/rocm-pin/stock")
        .unwrap();
    let kept = String::from_utf8_lossy(&kept.stdout).into_owned();
    assert!(kept.contains("rccl-pinned_"), "ours kept: {kept}");
    assert!(kept.contains("rccl_"), "stock kept: {kept}");
    let status = sb.run(&["rocm-pin", "status", "--json"]).unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(s["families"][0]["package"], "rccl-pinned", "{s:#}");
    assert!(s["packages"].to_string().contains("hsa-rocr"), "{s:#}");
    assert_eq!(
        pair_versions(&sb).lines().count(),
        pair_before.lines().count()
    );

    // The seed's first command alone: verify fails naming the family; its fix, verbatim.
    let stock = a.stock.require(StockRole::Rccl).unwrap();
    let stock_in = format!("/root/{}", stock.deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&stock.deb, &stock_in).unwrap();
    let forced = sb.sh(&format!("dpkg -i --force-all {stock_in}")).unwrap();
    let (_, v) = row(
        &sb,
        "dpkg -i --force-all <stock rccl>",
        forced.status.code(),
        started,
    );
    assert_eq!(v, 1);
    let out = text(&verify(&sb));
    assert!(out.contains("FAIL family           rccl:"), "{out}");
    assert!(out.contains("stock-absent     rccl:"), "{out}");
    let (ok, detail) = family_check(&sb, "rccl").unwrap();
    assert!(!ok);
    let fix = detail.rsplit('`').nth(1).unwrap().to_string();
    assert!(
        fix.starts_with("rocm-pin install /var/lib/rocm-pin/ours/rccl/"),
        "{fix}"
    );
    let fixed = sb.sh(&fix).unwrap();
    let (identity, v) = row(&sb, &format!("fix: {fix}"), fixed.status.code(), started);
    assert_eq!((identity.as_str(), v), (IDENTITY, 0), "{}", text(&fixed));

    // With the guard: the seed's two commands in a row.
    let on = sb.run(&["rocm-pin", "guard", "on"]).unwrap();
    assert_eq!(rc(&on), 0, "{}", text(&on));
    // The guard catches the first command (dpkg's hook runs verify, which names the family);
    // the second, apt's repair, removes the forced stock and passes the guard.
    let forced = sb.sh(&format!("dpkg -i --force-all {stock_in}")).unwrap();
    let (identity, v) = row(
        &sb,
        "guard on; dpkg -i --force-all <stock rccl>",
        forced.status.code(),
        started,
    );
    assert_ne!(
        rc(&forced),
        0,
        "the guard lets it through:\n{}",
        text(&forced)
    );
    assert!(
        text(&forced).contains("FAIL family rccl:"),
        "{}",
        text(&forced)
    );
    assert_eq!((identity.as_str(), v), (IDENTITY, 1));
    let repaired = sb.sh("apt-get --fix-broken install -y -q").unwrap();
    let (identity, v) = row(
        &sb,
        "guard on; apt --fix-broken install",
        repaired.status.code(),
        started,
    );
    assert_eq!(rc(&repaired), 0, "{}", text(&repaired));
    assert_eq!((identity.as_str(), v), (IDENTITY, 0));
    let states = dependant_states(&sb);
    assert!(
        states.iter().all(|(p, s)| p == "rccl" || s == "ii"),
        "every dependant but the stock rccl ours stands in for: {states:?}"
    );

    // A newer stock RCCL published: kept back, nothing of either family moves.
    let newer = newer_stock(&stock.deb, &work.path().join("newer"));
    sb.add_local_repo("rccl-newer", &work.path().join("newer/repo"))
        .unwrap();
    let up = sb.sh("apt-get full-upgrade -y -q").unwrap();
    let (identity, v) = row(
        &sb,
        "newer stock rccl; apt full-upgrade",
        up.status.code(),
        started,
    );
    assert_eq!((identity.as_str(), v), (IDENTITY, 0), "{}", text(&up));
    assert_eq!(pair_versions(&sb), pair_before, "the pair moved");

    // RCCL's way forward: its own rollback, then the newer stock; the pair untouched and green.
    let rb = sb
        .run(&["rocm-pin", "rollback", "--family", "rccl"])
        .unwrap();
    assert_eq!(rc(&rb), 0, "{}", text(&rb));
    let take = sb
        .sh(&format!("apt-get install -y -q rccl={newer}"))
        .unwrap();
    let (identity, v) = row(
        &sb,
        "rollback --family rccl; apt-get install rccl=<newer>",
        take.status.code(),
        started,
    );
    assert!(identity.contains("STOCK"), "{identity}");
    assert_eq!(v, 0, "{}", text(&verify(&sb)));
    assert_eq!(family_check(&sb, "rccl"), None, "no rccl of ours left");
    assert_eq!(pair_versions(&sb), pair_before, "the pair moved");
    assert!(all_patched(&probe(&sb)));

    // ...then the custom build pinned again, against the newer stock (the docs' way forward).
    let second =
        crate::rccl_pair::package_cpack_rccl(sb.root(), &work.path().join("second"), IDENTITY);
    let second_in = format!("/root/{}", second.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&second, &second_in).unwrap();
    let again = sb.run(&["rocm-pin", "install", &second_in]).unwrap();
    let (identity, v) = row(
        &sb,
        "rocm-pin install <rccl-pinned against the newer stock>",
        Some(rc(&again)),
        started,
    );
    assert_eq!((identity.as_str(), v), (IDENTITY, 0), "{}", text(&again));
    assert_eq!(pair_versions(&sb), pair_before, "the pair moved");

    // rollback with no family: both families go back to their stock, the pair first.
    let all = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&all), 0, "{}", text(&all));
    let said = text(&all);
    assert!(
        said.contains("the stock runtime is back") && said.contains("the stock rccl is back"),
        "{said}"
    );
    eprintln!(
        "rccl_family | rocm-pin rollback | 0 | {} | pair patched {} | {:.1}s",
        rccl_identity(&sb),
        all_patched(&probe(&sb)),
        started.elapsed().as_secs_f64()
    );
    assert!(
        rccl_identity(&sb).contains("STOCK"),
        "{}",
        rccl_identity(&sb)
    );
    let rccl_now = sb
        .run(&["dpkg-query", "-W", "-f=${Version}", "rccl"])
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&rccl_now.stdout),
        newer,
        "the newer stock rccl back"
    );
    let hooks = sb
        .sh("ls /etc/apt/apt.conf.d/80rocm-pin-guard /etc/dpkg/dpkg.cfg.d/rocm-pin-guard 2>&1 || true")
        .unwrap();
    assert!(
        String::from_utf8_lossy(&hooks.stdout)
            .matches("No such file")
            .count()
            == 2,
        "the guard stays with nothing of ours left: {}",
        text(&hooks)
    );
    assert!(!all_patched(&probe(&sb)));
    assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
}
