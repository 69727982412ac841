//! apt 3 in a trixie sandbox with `APT::Solver "3.0"`: the same local-repository install works.

use rocm_pin_testkit::assert_says;
use std::process::Command;

#[test]
fn trixie_with_apt3_solver_installs_from_a_local_repo() {
    rocm_pin_testkit::needs_root!("a chroot");
    let img = rocm_pin_testkit::chroot_image("trixie");
    let sb = rocm_pin_testkit::sandbox_with(&img, |o| o.apt_solver3 = true);
    let version = sb.run_ok(&["apt-get", "--version"]).unwrap();
    assert!(version.starts_with("apt 3."), "{version}");
    let dump = sb.run_ok(&["apt-config", "dump", "APT::Solver"]).unwrap();
    assert_says(&dump, &["APT::Solver \"3.0\";"]);

    let debs = tempfile::tempdir().unwrap();
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("DEBIAN")).unwrap();
    std::fs::write(
        tree.path().join("DEBIAN/control"),
        "Package: solver-probe\nVersion: 1\nArchitecture: all\nMaintainer: T <t@example.invalid>\nDescription: probe\n",
    )
    .unwrap();
    let out = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(tree.path())
        .arg(debs.path().join("solver-probe_1_all.deb"))
        .output()
        .unwrap();
    assert!(out.status.success());
    sb.add_local_repo("probe", debs.path()).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "solver-probe"])
        .unwrap();
    let status = sb
        .run_ok(&[
            "dpkg-query",
            "-W",
            "-f",
            "${db:Status-Abbrev}",
            "solver-probe",
        ])
        .unwrap();
    assert_eq!(status.trim(), "ii");
}
