//! Debian's own ROCm packages as the stock (issue 23, docs/flavours.md): in the sid chroots of
//! scripts/setup.d/23-debian-rocm-chroot.sh, with Debian's runtime and real dependants
//! installed, `rocm-pin status --root` and `verify --root` see Debian's runtime (its packages,
//! their versions, the ROCm release) instead of "not installed" / "no ROCm installation".
//!
//! The archive moves: the expected names and release are read from the chroot's own dpkg
//! database (`dpkg-query`), never written here as today's version strings.

use rocm_pin_testkit::assert_says;
use std::path::PathBuf;

use crate::util::*;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox};

/// One of the Debian-flavour images and the SONAME major of the HIP library it holds.
struct DebianImage {
    tag: &'static str,
    hip_major: &'static str,
}

const IMAGES: &[DebianImage] = &[
    DebianImage {
        tag: "sid-debian-rocm",
        hip_major: "7",
    },
    DebianImage {
        tag: "sid-debian-rocm6",
        hip_major: "6",
    },
];

/// The image's tarball, or None after saying why the test skips it (the testkit's
/// setup-input rule: a skip for a contributor's `cargo test`, a failure under scripts/test).
fn tarball(tag: &str) -> Option<PathBuf> {
    let input = format!("chroot/{tag}.tar.zst");
    let path = rocm_pin_testkit::setup_input(&input);
    if path.is_none() {
        rocm_pin_testkit::skip_without_setup("debian_flavour", &input);
    }
    path
}

/// An installed package as the chroot's dpkg reports it.
#[derive(Debug)]
struct Installed {
    package: String,
    version: String,
    /// The upstream version up to the first `+` or `~` (`7.2.4+dfsg` → `7.2.4`).
    release: String,
}

fn installed(sb: &Sandbox, package: &str) -> Installed {
    let out = sb
        .run_ok(&[
            "dpkg-query",
            "-W",
            "-f",
            "${db:Status-Abbrev}|${Version}|${source:Upstream-Version}",
            package,
        ])
        .unwrap_or_else(|e| panic!("{package} is not in the image's dpkg database: {e:#}"));
    let fields: Vec<&str> = out.trim().split('|').collect();
    assert_eq!(fields.len(), 3, "dpkg-query said {out:?}");
    assert_eq!(
        fields[0].trim(),
        "ii",
        "{package} is not installed: {out:?}"
    );
    Installed {
        package: package.to_string(),
        version: fields[1].to_string(),
        release: fields[2]
            .split(['+', '~'])
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

fn is_installed(sb: &Sandbox, package: &str) -> bool {
    sb.run(&["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", package])
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "ii")
}

fn rocm_pin(args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin())
        .args(args)
        .output()
        .unwrap()
}

/// status and verify on one image: Debian's runtime packages are named with their versions
/// and the release they carry.
fn status_and_verify_see_debian_runtime(image: &DebianImage, tarball: &std::path::Path) {
    let sb = Sandbox::new(&ChrootImage::from_tarball("sid", tarball).unwrap()).unwrap();
    let root = sb.root().to_str().unwrap().to_string();
    let hsa = installed(&sb, "libhsa-runtime64-1");
    let hip = installed(&sb, &format!("libamdhip64-{}", image.hip_major));
    assert_eq!(
        hsa.release, hip.release,
        "the image mixes ROCm releases: {hsa:?} {hip:?}"
    );
    let mut stock = vec![hsa, hip];
    // The HIP siblings: installed in the 7.2.4 image (librocfft0 needs libhiprtc7); in the
    // 6.4.3 image only if something pulled them in.
    for sibling in ["libhiprtc", "libhiprtc-builtins"] {
        let name = format!("{sibling}{}", image.hip_major);
        if image.hip_major == "7" || is_installed(&sb, &name) {
            stock.push(installed(&sb, &name));
        }
    }
    for dependant in ["rocminfo", "librocfft0", "libhipfft0"] {
        installed(&sb, dependant);
    }
    let release = stock[0].release.clone();

    let out = rocm_pin(&["status", "--root", &root, "--json"]);
    assert_eq!(rc(&out), 0, "status on {}:\n{}", image.tag, text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["health"], "not-installed", "{json:#}");
    let runtimes = json["stock_runtime"].as_array().expect("stock_runtime[]");
    assert_eq!(runtimes.len(), 1, "one stock runtime: {json:#}");
    let rt = &runtimes[0];
    assert_eq!(rt["flavour"], "debian", "{rt:#}");
    assert_eq!(rt["release"], release.as_str(), "{rt:#}");
    let listed: Vec<(String, String)> = rt["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["package"].as_str().unwrap().to_string(),
                p["version"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for s in &stock {
        assert!(
            listed.contains(&(s.package.clone(), s.version.clone())),
            "{} {} missing from {listed:?}",
            s.package,
            s.version
        );
    }
    assert_eq!(listed.len(), stock.len(), "only the runtime: {listed:?}");
    let stock_states: Vec<&str> = json["stock"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["package"].as_str().unwrap())
        .collect();
    for s in &stock {
        assert!(
            stock_states.contains(&s.package.as_str()),
            "{stock_states:?}"
        );
    }

    let human = text(&rocm_pin(&["status", "--root", &root]));
    // No `.info/version` here: the first line names the release the stock packages' versions
    // carry, read the way the gate reads it (it said "ROCm: unknown").
    assert_eq!(json["rocm_version"], release.as_str(), "{json:#}");
    assert!(
        human.starts_with(&format!(
            "ROCm:        {release} (from the package versions of "
        )),
        "{human}"
    );
    assert!(
        human.contains(&format!("Debian's packaging, ROCm {release}"))
            && stock
                .iter()
                .all(|s| human.contains(&format!("{} {}", s.package, s.version))),
        "{}",
        human
    );

    // verify: nothing of ours is installed (a failure), but it names the runtime that is there.
    let out = rocm_pin(&["verify", "--root", &root, "--json"]);
    assert_ne!(rc(&out), 0, "nothing of ours is installed:\n{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let details: Vec<String> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{} {}", c["name"], c["detail"]))
        .collect();
    assert!(
        !details.iter().any(|d| d.contains("no ROCm installation")),
        "{details:#?}"
    );
    assert!(
        details.iter().any(
            |d| d.contains(&format!("Debian's packaging, ROCm {release}"))
                && stock.iter().all(|s| d.contains(&s.package))
        ),
        "{details:#?}"
    );
}

#[test]
fn status_and_verify_see_debians_rocm_runtime() {
    rocm_pin_testkit::needs_root!("a chroot");
    for image in IMAGES {
        if let Some(t) = tarball(image.tag) {
            status_and_verify_see_debian_runtime(image, &t);
        }
    }
}

/// Debian's runtime packages of the 7.2.4 image (SONAME major 7), HSA first, and the real
/// dependants installed there.
const STOCK_7: &[&str] = &[
    "libhsa-runtime64-1",
    "libamdhip64-7",
    "libhiprtc-builtins7",
    "libhiprtc7",
];
const DEPENDANTS_7: &[&str] = &["rocminfo", "librocfft0", "libhipfft0"];
const MULTIARCH: &str = "/usr/lib/x86_64-linux-gnu";

/// The 7.2.4 image patched in place the way a user does it on Debian's packaging: the stand-in
/// patched libraries (the ones tests/package/debian_stock.rs packages) copied over Debian's
/// stock library files in the multiarch directory, keeping the stock names, then ldconfig.
/// Before that, the stock .debs go where apt keeps what it downloaded (`/var/cache/apt/archives`;
/// the image keeps none), repacked from the chroot's dpkg database while every file matches.
fn patched_in_place_sandbox(tarball: &std::path::Path) -> Sandbox {
    use rocm_pin_core::host::root::Root;
    use rocm_pin_testkit::staging::{build_staging, StagingSpec};
    let image = ChrootImage::from_tarball("sid", tarball).unwrap();
    let sb = rocm_pin_testkit::sandbox_with(&image, |o| o.mount_proc = true);
    sb.install_rocm_pin(&bin()).unwrap();
    let root = Root::new(sb.root());
    let entries = rocm_pin_core::rocm::read_status(&root).unwrap();
    std::fs::create_dir_all(sb.path("/var/cache/apt/archives")).unwrap();
    for stock in STOCK_7 {
        let e = entries
            .iter()
            .find(|e| e.package == *stock)
            .unwrap_or_else(|| panic!("{stock} is not installed in the image"));
        let name =
            rocm_pin_core::ops::install::deb_file_name(&e.package, &e.version, &e.architecture);
        rocm_pin_core::host::repack::repack(
            &root,
            e,
            &sb.path(format!("/var/cache/apt/archives/{name}")),
        )
        .unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let staging = work.path().join("staging");
    build_staging(&staging, &StagingSpec::like_root(sb.root()));
    let mut script = String::from("set -e\n");
    for entry in std::fs::read_dir(staging.join("lib")).unwrap() {
        let entry = entry.unwrap();
        if !entry.file_type().unwrap().is_file() {
            continue;
        }
        let file = entry.file_name().to_string_lossy().into_owned();
        let soname = rocm_pin_core::elf::read_elf(&entry.path())
            .unwrap()
            .soname
            .unwrap();
        sb.copy_in(&entry.path(), &format!("/tmp/patched/{file}"))
            .unwrap();
        script.push_str(&format!(
            "cp /tmp/patched/{file} \"$(readlink -f {MULTIARCH}/{soname})\"\n"
        ));
    }
    script.push_str("rm -r /tmp/patched\nldconfig\n");
    sb.sh_ok(&script).unwrap();
    // It is patched in place now: dpkg's md5sums of each stock runtime package differ.
    for stock in STOCK_7 {
        let out = sb.run(&["dpkg", "--verify", stock]).unwrap();
        // dpkg --verify's third flag column is the md5sum check ("??5??????  <path>").
        assert!(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.as_bytes().get(2) == Some(&b'5')),
            "{stock} is not patched in place: {}",
            text(&out)
        );
    }
    sb
}

/// Whether each of `names` is installed is `want`; `when` names the moment in the message.
fn assert_installed(sb: &Sandbox, names: &[String], want: bool, when: &str) {
    for n in names {
        assert_eq!(
            is_installed(sb, n),
            want,
            "{n} installed {when}: want {want}"
        );
    }
}

/// `dpkg --verify` of each of `names` exits 0 and prints nothing.
fn assert_dpkg_verify_clean(sb: &Sandbox, names: &[String], when: &str) {
    for p in names {
        let out = sb.run(&["dpkg", "--verify", p]).unwrap();
        assert!(
            rc(&out) == 0 && out.stdout.is_empty(),
            "dpkg --verify {p} {when}: {}",
            text(&out)
        );
    }
}

/// Issue 23: `rocm-pin adopt --commit` on Debian's packaging patched in place: the live
/// patched files become the Debian-shaped replacements (one per stock package), installed
/// offline with the stock .debs kept; verify passes, the loader maps ours, the real dependants
/// stay; `rocm-pin rollback` then puts Debian's packages back offline.
#[test]
fn adopt_takes_over_debians_files_patched_in_place() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball(IMAGES[0].tag) else {
        return;
    };
    let t = std::time::Instant::now();
    let sb = patched_in_place_sandbox(&tarball);
    let prepared = t.elapsed();
    let pinned: Vec<String> = STOCK_7.iter().map(|s| format!("{s}-pinned")).collect();
    let stock: Vec<String> = STOCK_7.iter().map(|s| s.to_string()).collect();
    let dependants: Vec<String> = DEPENDANTS_7.iter().map(|s| s.to_string()).collect();
    status_and_verify_see_the_patch(&sb);

    let t = std::time::Instant::now();
    let out = adopt_the_pin(&sb);
    let adopt_time = t.elapsed();
    let said = text(&out);
    assert_eq!(rc(&out), 0, "rocm-pin adopt --commit:\n{said}");
    eprintln!("debian_flavour: rocm-pin adopt --commit said:\n{said}");
    assert_says(&said, &["from the apt cache"]);
    assert_installed(&sb, &pinned, true, "after adopt");
    assert_installed(&sb, &stock, false, "after adopt");
    assert_dpkg_verify_clean(&sb, &pinned, "after adopt");
    let marker = the_replacements_are_debian_shaped(&sb, &pinned);
    let out = sb.run(&["rocm-pin", "verify"]).unwrap();
    assert_eq!(rc(&out), 0, "verify after adopt:\n{}", text(&out));
    the_loader_maps_ours(&sb, &marker);
    assert_installed(&sb, &dependants, true, "after adopt");

    // rollback: Debian's packages back, offline, from the kept .debs; their files as dpkg
    // recorded them.
    let t = std::time::Instant::now();
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    let rollback_time = t.elapsed();
    assert_eq!(rc(&out), 0, "rollback:\n{}", text(&out));
    assert_installed(&sb, &stock, true, "after rollback");
    assert_installed(&sb, &pinned, false, "after rollback");
    assert_dpkg_verify_clean(&sb, &stock, "after rollback");
    assert_installed(&sb, &dependants, true, "after rollback");
    eprintln!(
        "debian_flavour adopt: patch in place {:.1} s, adopt {:.1} s, rollback {:.1} s",
        prepared.as_secs_f64(),
        adopt_time.as_secs_f64(),
        rollback_time.as_secs_f64()
    );
}

/// status sees the patch: Debian's packaging, in the multiarch directory, commit unknown;
/// verify fails on it, naming the directory and the fix with --commit.
fn status_and_verify_see_the_patch(sb: &Sandbox) {
    let out = sb.run(&["rocm-pin", "status", "--json"]).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("status --json: {e}: {}", text(&out)));
    assert_eq!(json["in_place"]["flavour"], "debian", "{json:#}");
    assert_eq!(json["in_place"]["lib_dir"], MULTIARCH, "{json:#}");
    let out = sb.run(&["rocm-pin", "verify", "--json"]).unwrap();
    assert_eq!(rc(&out), 1, "verify before adopt:\n{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "in-place-patch")
        .unwrap_or_else(|| panic!("no in-place-patch check: {report:#}"));
    let detail = check["detail"].as_str().unwrap();
    assert!(
        check["subject"] == MULTIARCH && detail.contains("fix: `rocm-pin adopt --commit"),
        "{check:#}"
    );
}

/// The replacements are the Debian-shaped ones: Multi-Arch same, shlibs, the marker in the
/// state directory (returned), the commit given.
fn the_replacements_are_debian_shaped(sb: &Sandbox, pinned: &[String]) -> serde_json::Value {
    for p in pinned {
        let f = sb
            .run_ok(&[
                "dpkg-query",
                "-W",
                "-f",
                "${Multi-Arch}|${X-Rocm-Pin-Commit}",
                p,
            ])
            .unwrap();
        assert_eq!(
            f,
            format!("same|{}", rocm_pin_core::rocm::PIN_COMMIT),
            "{p}"
        );
        let shlibs = sb.path(format!("/var/lib/dpkg/info/{p}:amd64.shlibs"));
        assert!(shlibs.is_file(), "{p}: no shlibs");
    }
    let marker: serde_json::Value = serde_json::from_str(
        &sb.read_to_string("/var/lib/rocm-pin/marker/amd64.json")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(marker["commit"], rocm_pin_core::rocm::PIN_COMMIT);
    assert!(
        marker["source"]
            .as_str()
            .is_some_and(|s| s.contains(MULTIARCH) && s.contains("--commit")),
        "{marker:#}"
    );
    marker
}

/// The loader: the cache names the multiarch files, and what rocminfo resolves is the file
/// the marker records (stock and ours share the path: by sha256).
fn the_loader_maps_ours(sb: &Sandbox, marker: &serde_json::Value) {
    let recorded = rocm_pin_testkit::runtime::marker_sha256s(marker);
    assert!(
        !recorded.is_empty(),
        "the marker records no library: {marker:#}"
    );
    let cache = sb.sh_ok("ldconfig -p").unwrap();
    for soname in ["libhsa-runtime64.so.1", "libamdhip64.so.7"] {
        let line = format!("{MULTIARCH}/{soname}");
        assert!(cache.contains(&line), "ldconfig -p has no {line}:\n{cache}");
        let sha = sb
            .sh_ok(&format!(
                "sha256sum \"$(readlink -f {line})\" | cut -d' ' -f1"
            ))
            .unwrap();
        assert!(
            recorded.iter().any(|r| r == sha.trim()),
            "{line}: {sha} not ours"
        );
    }
    let (resolved, sha) = rocm_pin_testkit::runtime::resolved_sha256(
        sb,
        "/usr/bin/rocminfo",
        "libhsa-runtime64.so.1",
    );
    assert!(
        recorded.contains(&sha),
        "rocminfo loads {resolved} ({sha}), not ours {recorded:?}"
    );
}

/// Without `--commit` on Debian's packaging (no in-place marker there) adopt refuses in one
/// line naming `--commit`, exit 2, and changes nothing: the dpkg status file is byte-identical.
#[test]
fn adopt_without_commit_on_debian_refuses_in_one_line() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball(IMAGES[0].tag) else {
        return;
    };
    let sb = patched_in_place_sandbox(&tarball);
    let before = std::fs::read(sb.path("/var/lib/dpkg/status")).unwrap();
    let state_before = sb.path("/var/lib/rocm-pin").exists();
    let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
    let said = text(&out);
    assert_eq!(rc(&out), 2, "{said}");
    eprintln!("debian_flavour: rocm-pin adopt without --commit said: {said}");
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    assert!(
        said.contains("rocm-pin adopt --commit")
            && said.contains("Debian's packaging keeps no in-place commit marker")
            && said.contains(MULTIARCH)
            && said.contains("libamdhip64-7"),
        "{}",
        said
    );
    assert_eq!(
        before,
        std::fs::read(sb.path("/var/lib/dpkg/status")).unwrap(),
        "the dpkg status file changed"
    );
    assert_eq!(state_before, sb.path("/var/lib/rocm-pin").exists());
    // Not a full commit: refused too, before anything.
    let out = sb
        .run(&["rocm-pin", "adopt", "--commit", "b539bf7"])
        .unwrap();
    assert_eq!(rc(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("not a full 40-digit commit"),
        "{}",
        text(&out)
    );
    assert_eq!(
        before,
        std::fs::read(sb.path("/var/lib/dpkg/status")).unwrap()
    );
    // dpkg's md5sums gone: the patch cannot be seen, and adopt says why instead of calling
    // the patched files stock.
    sb.sh_ok("rm /var/lib/dpkg/info/libhsa-runtime64-1:*.md5sums /var/lib/dpkg/info/libamdhip64-7:*.md5sums /var/lib/dpkg/info/libhiprtc*.md5sums")
        .unwrap();
    let out = adopt_the_pin(&sb);
    let said = text(&out);
    assert_eq!(rc(&out), 2, "{said}");
    assert!(
        said.contains("cannot tell whether this host is patched in place")
            && said.contains("libamdhip64-7's md5sums file is missing")
            && !said.contains("matches dpkg's md5sums"),
        "{}",
        said
    );
    assert_eq!(
        before,
        std::fs::read(sb.path("/var/lib/dpkg/status")).unwrap()
    );
}

/// `rocm-pin adopt --commit <the pinned commit>` in `sb`.
fn adopt_the_pin(sb: &Sandbox) -> std::process::Output {
    sb.run(&[
        "rocm-pin",
        "adopt",
        "--commit",
        rocm_pin_core::rocm::PIN_COMMIT,
    ])
    .unwrap()
}
