//! docs/try.md, run as written (issue 36): the page's blocks marked for a `*-build-host`
//! (tests/install/runnable_docs.rs parses the markers) run in order, verbatim, with
//! `bash -eo pipefail`, from an empty working directory in a chroot of that host kind — the
//! documented command (stand-in source shaped like the host, build, package, install --guard,
//! verify), then the rollback. Each chroot has the build tools the page lists as prerequisites:
//! - `amd-build-host`: the bookworm builder image (cmake, gcc, git) with the stand-in ROCm 7.2.4
//!   stock set installed through apt, AMD's `/opt/rocm-7.2.4` layout;
//! - `debian-7.2.4-build-host` / `debian-6.4.3-build-host`: sid with Debian's own ROCm runtime
//!   (experimental's 7.2.4 / sid's 6.4.3) and its dependants, plus cmake, make, gcc, git
//!   (scripts/setup.d/25-debian-rocm-try-chroot.sh).
//!
//! After the install block, `rocm-pin verify --json` must pass with the loader opening ours under
//! the host's own HIP SONAME major (read from the chroot's dpkg database, never written here as
//! a version string); after the rollback, the host's stock packages are installed again and
//! none of ours is.

use crate::runnable_docs::{blocks_for, run_block_in, DocBlock};
use crate::util::{bin, must, packages, rc, stock_sandbox, text};
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox};

const WORKDIR: &str = "/root/try";

/// What the page says about this host kind and where its chroot comes from.
struct Host {
    place: &'static str,
    /// The setup input (a tarball under the cache) the chroot is made from.
    tarball: &'static str,
    /// Debian's packaging (the stock is Debian's) or AMD's.
    debian: bool,
    /// The HIP SONAME major of the host's stock (the image's name says it).
    hip_major: u32,
}

const HOSTS: &[Host] = &[
    Host {
        place: "amd-build-host",
        tarball: "chroot/bookworm-builder.tar.zst",
        debian: false,
        hip_major: 7,
    },
    Host {
        place: "debian-7.2.4-build-host",
        tarball: "chroot/sid-debian-rocm-try.tar.zst",
        debian: true,
        hip_major: 7,
    },
    Host {
        place: "debian-6.4.3-build-host",
        tarball: "chroot/sid-debian-rocm6-try.tar.zst",
        debian: true,
        hip_major: 6,
    },
];

/// The chroot of `host`, with rocm-pin on PATH and the sudo shim; None after saying why the test
/// skips it (a missing setup input).
fn host_sandbox(host: &Host) -> Option<Sandbox> {
    let Some(tarball) = rocm_pin_testkit::setup_input(host.tarball) else {
        rocm_pin_testkit::skip_without_setup("try_doc", host.tarball);
        return None;
    };
    let sb = if host.debian {
        let sb = Sandbox::new(&ChrootImage::from_tarball("sid", &tarball).unwrap()).unwrap();
        sb.install_rocm_pin(&bin()).unwrap();
        sb
    } else {
        // The builder image with the stand-in stock set installed as on an AMD ROCm host.
        let builder = ChrootImage::from_tarball("bookworm", &tarball).unwrap();
        stock_sandbox(&builder, "bookworm", packages())
    };
    // The chroot's user is root: sudo only runs its arguments.
    sb.write("/usr/local/bin/sudo", "#!/bin/sh\nexec \"$@\"\n")
        .unwrap();
    must(
        std::process::Command::new("chmod")
            .arg("755")
            .arg(sb.path("/usr/local/bin/sudo")),
    );
    std::fs::create_dir_all(sb.path(WORKDIR)).unwrap();
    Some(sb)
}

/// The packages matching `pattern` (a dpkg-query pattern) that are installed (`ii`).
fn installed(sb: &Sandbox, pattern: &str) -> Vec<String> {
    let out = sb
        .run(&[
            "dpkg-query",
            "-W",
            "-f",
            "${Package} ${db:Status-Abbrev}\n",
            pattern,
        ])
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, s)| s.trim() == "ii")
        .map(|(p, _)| p.to_string())
        .collect()
}

/// The stock runtime package names of this host that are installed.
fn stock_runtime(sb: &Sandbox, host: &Host) -> Vec<String> {
    let (hip, hsa) = if host.debian {
        (
            format!("libamdhip64-{}", host.hip_major),
            "libhsa-runtime64-1",
        )
    } else {
        ("hip-runtime-amd".to_string(), "hsa-rocr")
    };
    let mut found: Vec<String> = [hip.as_str(), hsa]
        .iter()
        .flat_map(|p| installed(sb, p))
        .collect();
    found.sort();
    found
}

fn run_block(sb: &Sandbox, host: &Host, n: usize, block: &DocBlock) {
    let script = format!("/root/try-block-{n}.sh");
    run_block_in(sb, block, WORKDIR, &script, host.place);
}

/// After the install block: verify passes and the loader opens ours with the host's major.
fn assert_ours_in_use(sb: &Sandbox, host: &Host) {
    let out = sb.run(&["rocm-pin", "verify", "--json"]).unwrap();
    assert_eq!(
        rc(&out),
        0,
        "verify after try.md's command:\n{}",
        text(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let soname = format!("libamdhip64.so.{}", host.hip_major);
    let loader = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "loader" && c["subject"] == soname.as_str())
        .unwrap_or_else(|| panic!("no loader check for {soname}: {report:#}"));
    assert_eq!(loader["ok"], true, "{loader:#}");
    let manifest: serde_json::Value = serde_json::from_str(
        &sb.read_to_string(&format!("{WORKDIR}/staging/rocm-pin-build.json"))
            .unwrap(),
    )
    .unwrap();
    let built: Vec<&str> = manifest["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["soname"].as_str())
        .collect();
    assert!(
        built.contains(&soname.as_str()),
        "the stand-in built {built:?}, not the host's {soname}"
    );
    let ours = installed(sb, "*-pinned");
    assert!(ours.len() >= 2, "ours installed: {ours:?}");
}

fn try_on(host: &Host) {
    let blocks = blocks_for(host.place);
    assert!(
        blocks.iter().all(|b| b.file == "docs/try.md"),
        "{} blocks outside docs/try.md: {blocks:#?}",
        host.place
    );
    let install = blocks
        .iter()
        .position(|b| b.script.contains("rocm-pin install"))
        .unwrap_or_else(|| panic!("docs/try.md has no install block for {}", host.place));
    assert!(
        blocks
            .last()
            .is_some_and(|b| b.script.contains("rocm-pin rollback")),
        "docs/try.md must end a trial on {} with the rollback",
        host.place
    );
    let Some(sb) = host_sandbox(host) else {
        return;
    };
    let stock_before = stock_runtime(&sb, host);
    assert_eq!(
        stock_before.len(),
        2,
        "{}: the host's stock runtime: {stock_before:?}",
        host.place
    );
    for (n, block) in blocks.iter().enumerate() {
        run_block(&sb, host, n, block);
        if n == install {
            assert_ours_in_use(&sb, host);
        }
    }
    assert_eq!(
        stock_runtime(&sb, host),
        stock_before,
        "{}: the stock runtime after the rollback",
        host.place
    );
    assert_eq!(
        installed(&sb, "*-pinned"),
        Vec::<String>::new(),
        "ours after the rollback"
    );
}

#[test]
fn try_doc_runs_as_written_on_an_amd_flavour_host() {
    rocm_pin_testkit::needs_root!("a chroot");
    try_on(&HOSTS[0]);
}

#[test]
fn try_doc_runs_as_written_on_a_debian_7_2_4_host() {
    rocm_pin_testkit::needs_root!("a chroot");
    try_on(&HOSTS[1]);
}

#[test]
fn try_doc_runs_as_written_on_a_sid_6_4_3_host() {
    rocm_pin_testkit::needs_root!("a chroot");
    try_on(&HOSTS[2]);
}
