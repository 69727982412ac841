//! The guard's own small binary, `rocm-pin-guard`, in a real bookworm chroot: `install
//! --guard` run from a build directory holding both binaries arms hooks that run the guard
//! binary's private copy (the full binary gone from the chroot), a forced `dpkg -i` of the stock
//! package then fails at that dpkg run through it, and `guard off` takes it away. The fallback
//! (no guard binary beside rocm-pin: the full binary copied) is
//! `guard::a_guard_installed_from_a_temp_path_runs_its_stable_copy`.

use crate::guard::{
    assert_armed_and_apt_passes, install_guard_from_a_build_dir, sandbox, APT_HOOK, BROKE, CONFIG,
    DPKG_HOOK, PRIVATE_COPY,
};
use crate::util::*;
use rocm_pin_kit::standin::StockRole;

const GUARD_COPY: &str = "/usr/lib/rocm-pin/rocm-pin-guard";

#[test]
fn install_guard_from_a_build_dir_with_both_binaries_runs_the_guard_binary() {
    rocm_pin_testkit::needs_root!("a chroot");
    let sb = sandbox();
    let guard_bin = rocm_pin_testkit::rocm_pin_guard_bin!();
    install_guard_from_a_build_dir(&sb, Some(&guard_bin));
    // No full rocm-pin is left in the chroot: whatever judges a run below is the guard binary.
    assert!(!sb.path("/usr/local/bin/rocm-pin").exists() && !sb.path(PRIVATE_COPY).exists());
    for (hook, tool) in [(APT_HOOK, "apt"), (DPKG_HOOK, "dpkg")] {
        let text = sb.read_to_string(hook).unwrap();
        assert!(
            text.contains(&format!("exec {GUARD_COPY} guard hook {tool}")),
            "{hook}:\n{text}"
        );
    }
    assert_eq!(
        std::fs::read(sb.path(GUARD_COPY)).unwrap(),
        std::fs::read(&guard_bin).unwrap(),
        "the private copy is the guard binary"
    );
    // Armed on the guard binary, and a run that leaves the runtime alone passes its check.
    assert_armed_and_apt_passes(&sb, GUARD_COPY, GUARD_COPY);

    // The stock package forced over ours fails that very dpkg run.
    let hsa = artifacts(CONFIG).stock.require(StockRole::HsaRocr).unwrap();
    let deb = format!(
        "{STOCK_DEBS_DIR}/{}",
        hsa.deb.file_name().unwrap().to_string_lossy()
    );
    let out = sb.run(&["dpkg", "-i", "--force-all", &deb]).unwrap();
    let said = text(&out);
    assert_eq!(rc(&out), 2, "the guard binary must fail dpkg:\n{said}");
    assert!(said.contains(BROKE), "{said}");
    assert!(
        said.contains("rocm-pin verify: FAIL "),
        "its verify's lines: {said}"
    );

    let out = sb.run(&[GUARD_COPY, "guard", "off"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    for gone in [APT_HOOK, DPKG_HOOK, GUARD_COPY, "/usr/lib/rocm-pin"] {
        assert!(!sb.path(gone).exists(), "{gone} left after guard off");
    }
}
