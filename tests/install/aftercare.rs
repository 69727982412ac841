//! After `rocm-pin install` (issue 32, criterion 6): the release hold covers a -dev package
//! installed later, through a newer stock upload and `apt-get full-upgrade`, with the guard
//! off; and install names the processes still running the replaced runtime.

use std::path::Path;
use std::process::Command;

use crate::advice_debian::{
    debian_runtime_problems, image_tarball, install_ours, is_installed, packaged_against, sandbox,
};
use crate::update_in_place::publish_newer_upload;
use crate::util::*;
use rocm_pin_core::host::layout::StateLayout;

/// The -dev packages of Debian's 7.2.4 pair: exact `=` on the stock runtime.
const DEBIAN_DEVS: &[&str] = &["libamdhip64-dev", "libhsa-runtime-dev"];

/// Debian's 7.2.4 image with its -dev packages offered by a local repository (the cached
/// download of scripts/setup.d/26-debian-rccl.sh) before `rocm-pin install`: install holds
/// them though none is installed; `apt-get install` of them afterwards is held with no
/// re-run; a newer stock upload and `apt-get full-upgrade` keep ours loaded, every dependant
/// installed and verify green; rollback removes the hold.
#[test]
fn a_dev_package_installed_after_install_stays_held_through_a_newer_stock_upload() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = image_tarball("sid-debian-rocm") else {
        return;
    };
    let input = "debian-rccl/packages";
    let Some(list) = rocm_pin_testkit::setup_input(input) else {
        rocm_pin_testkit::skip_without_setup("aftercare", input);
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (debs, stock) = packaged_against("ours", &sandbox(&tarball), work.path(), 7, true);
    let sb = sandbox(&tarball);
    sb.add_local_repo("debian-rccl", list.parent().unwrap())
        .unwrap();
    let out = install_ours(&sb, &debs);
    assert_eq!(rc(&out), 0, "install: {}", text(&out));
    let hold_path = StateLayout::release_hold().display().to_string();
    let hold = sb.read_to_string(&hold_path).unwrap_or_default();
    for dev in DEBIAN_DEVS {
        assert!(!is_installed(&sb, dev), "{dev} installed before the test");
        assert!(
            hold.contains(&format!("Package: {dev}\n")),
            "install did not hold the offered {dev}:\n{hold}\ninstall said:\n{}\napt-cache rdepends:\n{}",
            text(&out),
            sb.sh(&format!("apt-cache rdepends {} 2>&1", stock.join(" "))).map(|o| text(&o)).unwrap_or_default()
        );
    }
    sb.sh_ok(&format!("apt-get install -y -q {}", DEBIAN_DEVS.join(" ")))
        .unwrap();
    let v = verify(&sb);
    assert_eq!(rc(&v), 0, "verify after the -dev: {}", text(&v));
    assert!(
        !text(&v).contains("not yet"),
        "verify names a -dev as not held:\n{}",
        text(&v)
    );
    let newer = publish_newer_upload(&sb, &stock);
    let upgrade = sb.sh("apt-get full-upgrade -y -q 2>&1").unwrap();
    assert_eq!(rc(&upgrade), 0, "full-upgrade: {}", text(&upgrade));
    let mut problems = debian_runtime_problems(&sb, &stock);
    problems.extend(
        DEBIAN_DEVS
            .iter()
            .filter(|d| !is_installed(&sb, d))
            .map(|d| format!("{d} not installed after full-upgrade")),
    );
    let not_ii = sb
        .sh_ok("dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n' | grep -v '^ii ' || true")
        .unwrap();
    if !not_ii.trim().is_empty() {
        problems.push(format!("packages not ii:\n{not_ii}"));
    }
    let v = verify(&sb);
    if rc(&v) != 0 {
        problems.push(format!("verify exit {}:\n{}", rc(&v), text(&v)));
    }
    assert!(
        problems.is_empty(),
        "after the newer upload {newer:?} and full-upgrade:\n{}\nfull-upgrade said:\n{}",
        problems.join("\n"),
        text(&upgrade)
    );
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&out), 0, "rollback: {}", text(&out));
    assert!(
        !sb.path(&hold_path).exists(),
        "rollback left the hold:\n{}",
        sb.read_to_string(&hold_path).unwrap_or_default()
    );
}

/// A program linked against the stock HSA runtime (built here by gcc, sleeping) runs while
/// `rocm-pin install` replaces it: install names its PID and name as one to restart.
#[test]
fn install_names_the_processes_still_running_the_replaced_runtime() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let sb = fresh_with_proc(a, &a.stock_snapshot);
    let lib = sb
        .sh_ok("readlink -f /opt/rocm/lib/libhsa-runtime64.so.1")
        .unwrap()
        .trim()
        .to_string();
    let work = tempfile::tempdir().unwrap();
    let program = build_sleeper(work.path(), &sb.path(&lib), &lib);
    sb.copy_in(&program, "/root/stale-sleeper").unwrap();
    let pid: u32 = sb
        .sh_ok("/root/stale-sleeper </dev/null >/dev/null 2>&1 & echo $!")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let kill = || {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    };
    // The shell returns once the program is started, maybe before the loader mapped its
    // libraries: wait for the mapping (a few seconds at most).
    let mut maps = String::new();
    for _ in 0..100 {
        maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        if maps.contains("libhsa-runtime64") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if !maps.contains("libhsa-runtime64") {
        kill();
        panic!("the sleeper does not map the stock runtime:\n{maps}");
    }
    let out = sb.run(&install_argv(&a.pkgs.ours)).unwrap();
    kill();
    assert_eq!(rc(&out), 0, "install: {}", text(&out));
    let said = text(&out);
    let line = said
        .lines()
        .find(|l| l.contains("restart to load the patched runtime"))
        .unwrap_or_else(|| panic!("install named no process to restart:\n{said}"));
    assert!(
        line.contains(&format!("{pid} stale-sleeper")),
        "install did not name {pid} stale-sleeper: {line}"
    );
}

/// `stale-sleeper`: links `lib_on_host` (the chroot's stock library, `lib_in_root` inside)
/// and sleeps until killed.
fn build_sleeper(dir: &Path, lib_on_host: &Path, lib_in_root: &str) -> std::path::PathBuf {
    let src = dir.join("sleeper.c");
    std::fs::write(
        &src,
        "#include <unistd.h>\nint main(void) { for (;;) pause(); }\n",
    )
    .unwrap();
    let out = dir.join("stale-sleeper");
    let rpath = Path::new(lib_in_root).parent().unwrap();
    rocm_pin_testkit::must(
        Command::new("gcc")
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .arg("-Wl,--no-as-needed")
            .arg(lib_on_host)
            .arg(format!("-Wl,-rpath,{}", rpath.display())),
    );
    out
}
