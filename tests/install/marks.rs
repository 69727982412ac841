//! apt's auto/manual marks across install and rollback (issue 32, criterion 6): the stock pair
//! apt pulled in for `rocm-hip-runtime` is automatically installed; `rocm-pin install` puts
//! ours in with the same mark, and `rocm-pin rollback` gives the stock back with it: `apt-mark
//! showauto` is the same before install and after rollback (it listed the stock pair as
//! manually installed after a round trip, so `apt autoremove` would never take it).

use crate::util::*;

fn showauto(sb: &rocm_pin_kit::sandbox::Sandbox) -> Vec<String> {
    let mut names: Vec<String> = sb
        .run_ok(&["apt-mark", "showauto"])
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

#[test]
fn install_and_rollback_keep_apts_automatic_marks() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.stock_snapshot);
    let before = showauto(&sb);
    let stock = ["hsa-rocr", "hip-runtime-amd"];
    for s in stock {
        assert!(before.iter().any(|n| n == s), "{s} is not auto: {before:?}");
    }
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let installed = showauto(&sb);
    for s in stock {
        assert!(
            installed.contains(&format!("{s}-pinned")),
            "{s}-pinned is not auto after install: {installed:?}"
        );
    }
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert_eq!(
        showauto(&sb),
        before,
        "apt's marks changed by install + rollback"
    );
}
