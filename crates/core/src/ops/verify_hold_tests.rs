//! The release-hold check without a hold file: apt's path (nothing of install's left) is
//! named, not failed; after `install --no-rollback` (its record left, nothing kept) the same
//! missing file is a removed hold and fails.

use super::*;
use crate::ops::fakehost::{self, FakeHost};

#[test]
fn a_missing_hold_fails_after_a_no_rollback_install_and_not_after_apt() {
    let host = FakeHost::new(rocm::TARGET_ROCM_VERSION);
    let marker = fakehost::marker();
    let hsa = &marker.replaced[0];
    let mut status: Vec<String> = marker
        .replaced
        .iter()
        .map(|r| {
            fakehost::ours(
                &r.package,
                &r.stock_name,
                &r.stock_version,
                "install ok installed",
            )
        })
        .collect();
    status.push(format!(
        "Package: rocm-hip-runtime\nStatus: install ok installed\nArchitecture: amd64\nVersion: 7\nDepends: {} (= {}), rocm-core (= 7)\n",
        hsa.stock_name, hsa.stock_version
    ));
    status.push(
        "Package: rocm-core\nStatus: install ok installed\nArchitecture: amd64\nVersion: 7\n"
            .into(),
    );
    host.set_status(&status);
    let entries = rocm::read_status_with_depends(&host.root).unwrap();

    let (_, ok, detail) = check_release_hold(&host.root, &entries, &marker).unwrap();
    assert!(ok && detail.contains("installed by apt"), "{detail}");

    host.write(
        &StateLayout::stock_not_kept().display().to_string(),
        "rocm-pin install --no-rollback\n",
    );
    let (_, ok, detail) = check_release_hold(&host.root, &entries, &marker).unwrap();
    assert!(
        !ok && detail.contains("does not hold rocm-core 7"),
        "{detail}"
    );
}
