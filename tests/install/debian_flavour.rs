//! Debian's own ROCm packages as the stock (issue 23, docs/flavours.md): in the sid chroots of
//! scripts/setup.d/23-debian-rocm-chroot.sh, with Debian's runtime and real dependants
//! installed, `rocm-pin status --root` and `verify --root` see Debian's runtime (its packages,
//! their versions, the ROCm release) instead of "not installed" / "no ROCm installation".
//!
//! The archive moves: the expected names and release are read from the chroot's own dpkg
//! database (`dpkg-query`), never written here as today's version strings.

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
        "{human}"
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
