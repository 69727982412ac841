//! Both families on one host (issue 34, item 4): the pinned pair installed by `rocm-pin
//! install` (the install tests' snapshot), then the custom RCCL made by CPack packaged with
//! `rocm-pin package --family rccl --from-deb` against that host and installed with apt.
//! `verify` (the pair's) keeps passing, `status` shows both, the seed's `dpkg -i --force-all
//! <stock rccl>.deb; apt --fix-broken install` leaves both patched, and `rollback --family
//! rccl` puts the stock rccl back without touching the pair.

use rocm_pin_kit::standin::{self, StockRole};

use crate::util::*;

const IDENTITY: &str = "rccl-CPACK-with-pair";

pub(crate) fn rccl_identity(sb: &rocm_pin_kit::sandbox::Sandbox) -> String {
    let out = sb.run(&[PROBE, "librccl.so.1"]).unwrap();
    let lines = standin::parse_probe_output(&String::from_utf8_lossy(&out.stdout)).unwrap();
    lines[0].identity.clone().unwrap_or_default()
}

fn assert_pair_healthy(sb: &rocm_pin_kit::sandbox::Sandbox, when: &str) {
    let v = verify(sb);
    assert!(
        v.status.success(),
        "{when}: the pair's verify fails:\n{}",
        text(&v)
    );
    assert!(all_patched(&probe(sb)), "{when}: {:?}", probe(sb));
}

/// The CPack-built custom RCCL (`identity` embedded) packaged against the stock under
/// `stock_root`, in `work`: the replacement .deb.
pub(crate) fn package_cpack_rccl(
    stock_root: &std::path::Path,
    work: &std::path::Path,
    identity: &'static str,
) -> std::path::PathBuf {
    rocm_pin_testkit::cpack::package_cpack_rccl(&bin(), stock_root, work, identity)
}

#[test]
fn the_pinned_rccl_next_to_the_pinned_pair() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.installed_snapshot);
    assert_pair_healthy(&sb, "before");
    let work = tempfile::tempdir().unwrap();
    let deb = package_cpack_rccl(sb.root(), work.path(), IDENTITY);
    let inside = format!("/root/{}", deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&deb, &inside).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "-q", &inside])
        .expect("apt installs the pinned rccl next to the pair");
    assert_eq!(rccl_identity(&sb), IDENTITY);
    assert_pair_healthy(&sb, "with the pinned rccl");
    let status = sb.run(&["rocm-pin", "status", "--json"]).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["health"], "healthy", "{v:#}");
    assert_eq!(v["families"][0]["package"], "rccl-pinned", "{v:#}");
    assert!(
        !v["packages"].to_string().contains("rccl"),
        "the pair's packages: {}",
        v["packages"]
    );

    // The seed's sequence with the stock rccl.
    let stock = a.stock.require(StockRole::Rccl).unwrap();
    let stock_in = format!("/root/{}", stock.deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(&stock.deb, &stock_in).unwrap();
    let seq = sb
        .sh(&format!(
            "dpkg -i --force-all {stock_in}; apt-get --fix-broken install -y -q"
        ))
        .unwrap();
    eprintln!(
        "rccl_pair: seed sequence rc {:?}; rccl {}; pair verify rc {}",
        seq.status.code(),
        rccl_identity(&sb),
        rc(&verify(&sb))
    );
    assert_eq!(rccl_identity(&sb), IDENTITY, "{}", text(&seq));
    assert_pair_healthy(&sb, "after the seed's sequence");
    // Every dependant but rccl itself, which ours stands in for.
    let states = dependant_states(&sb);
    assert!(
        states.iter().all(|(p, s)| p == "rccl" || s == "ii"),
        "{states:?}"
    );
    let ours = sb
        .run(&["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "rccl-pinned"])
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ours.stdout).trim(), "ii");

    // rollback --family rccl: stock rccl back, the pair untouched.
    let rb = sb
        .run(&["rocm-pin", "rollback", "--family", "rccl"])
        .unwrap();
    assert_eq!(rc(&rb), 0, "{}", text(&rb));
    assert!(
        rccl_identity(&sb).contains("STOCK"),
        "{}",
        rccl_identity(&sb)
    );
    assert_pair_healthy(&sb, "after rollback --family rccl");
    assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
}
