//! The real build replacing Debian's real stock (issue 23, item 5). The staging the real ROCr +
//! CLR/HIP build left (tests/build/real.rs: `libhsa-runtime64.so.1`, `libamdhip64.so.6`, the
//! SONAMEs of sid's ROCm 6.4.3) is packaged by `rocm-pin package` as replacements for Debian's
//! own packages in a sid chroot that has them installed with real dependants
//! (scripts/setup.d/23-debian-rocm-chroot.sh, image `sid-debian-rocm6-dev`: libamdhip64-6,
//! libhiprtc6, libhiprtc-builtins6, libhsa-runtime64-1, rocminfo, librocfft0, libhipfft0 and
//! libamdhip64-dev with gcc), installed with `rocm-pin install`, and then two real programs
//! show through the dynamic loader whose libraries they run on:
//!
//! - `rocminfo`, Debian's binary, with a preloaded shim that copies `/proc/self/maps` at exit;
//! - a HIP host program compiled here with gcc against Debian's headers
//!   (`-D__HIP_PLATFORM_AMD__ -lamdhip64`), which prints its own maps.
//!
//! Stock and ours live at the same path (`/usr/lib/<triplet>/`), so a path proves nothing: the
//! mapped file's inode must be the installed file's, and its sha256 the one the marker records
//! (and not the stock file's). Without a GPU both programs end with their no-device error, which
//! is the expected result: the test asserts it is that error and not a loader error. After
//! `apt-get install --reinstall` of Debian's names and `apt-get --fix-broken install` the
//! programs still load ours.
//!
//! The archive moves: versions, file names and the release come from the chroot's dpkg
//! database, never from this file.

use rocm_pin_testkit::assert_success;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use crate::util::{labeled, ChrootLog};
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};

/// The chroot runs of this module, timed under its name on stderr.
const CHROOT: ChrootLog = ChrootLog("real_debian");

/// The image (under the test cache) with Debian's ROCm 6.4.3, its dependants and its headers.
pub const IMAGE: &str = "chroot/sid-debian-rocm6-dev.tar.zst";
/// Debian's packages that ship the runtime libraries the real build replaces.
const STOCK: &[&str] = &[
    "libamdhip64-6",
    "libhiprtc6",
    "libhiprtc-builtins6",
    "libhsa-runtime64-1",
];
/// Real dependants that must stay installed through every step.
const DEPENDANTS: &[&str] = &["rocminfo", "librocfft0", "libhipfft0", "libamdhip64-dev"];
/// The SONAMEs both programs must map from OUR packages.
const SONAMES: &[&str] = &["libamdhip64.so.6", "libhsa-runtime64.so.1"];
const STAGING: &str = "/build/staging";
const DEBS: &str = "/debs/debian";
const FIXTURES: &str = "tests/fixtures/real-load";

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One file the process had mapped: its path and inode as /proc/<pid>/maps shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mapped {
    path: String,
    inode: u64,
}

/// The files in /proc/<pid>/maps lines (`addr perms offset dev inode path`), optionally
/// prefixed (`maps\t…`), one entry per path.
fn mapped_files(maps: &str) -> Vec<Mapped> {
    let mut seen: Vec<Mapped> = Vec::new();
    for line in maps.lines() {
        let line = line.strip_prefix("maps\t").unwrap_or(line);
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || !fields[5].starts_with('/') {
            continue;
        }
        let m = Mapped {
            path: fields[5..].join(" "),
            inode: fields[4].parse().unwrap_or(0),
        };
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    seen
}

/// The mapped file whose name is `soname` or a versioned file of it (`libamdhip64.so.6.4.…`).
fn mapped_soname<'a>(mapped: &'a [Mapped], soname: &str) -> &'a Mapped {
    mapped
        .iter()
        .find(|m| {
            let name = m.path.rsplit('/').next().unwrap_or("");
            name == soname || name.starts_with(&format!("{soname}."))
        })
        .unwrap_or_else(|| panic!("{soname} is not mapped: {mapped:#?}"))
}

/// `sha256sum` and `stat -c %i` of a path inside the chroot (the chroot's own tools judge).
fn identity(sb: &Sandbox, path: &str) -> (String, u64) {
    let out = CHROOT.sh_ok(
        sb,
        &format!("sha256sum {path} | cut -d' ' -f1 && stat -L -c %i {path}"),
    );
    let mut lines = out.lines();
    let sha = lines.next().unwrap_or_default().to_string();
    let inode = lines.next().and_then(|l| l.trim().parse().ok()).unwrap();
    (sha, inode)
}

/// What one run of the two programs showed: per SONAME the mapped file's sha256, and the
/// no-device results.
#[derive(Debug)]
struct Observed {
    sha_by_soname: BTreeMap<String, String>,
    /// hipRuntimeGetVersion's answer (HIP_VERSION: major * 10^7 + minor * 10^5 + build).
    hip_version: i64,
}

/// Run rocminfo (maps through the preloaded shim) and the HIP program (its own maps); both must
/// end with their no-device error, not a loader error, and map each SONAME from a file that is
/// the one installed at that path now (same inode).
fn observe(sb: &Sandbox) -> Observed {
    let mut sha_by_soname = BTreeMap::new();
    let rocminfo = CHROOT.sh(
        sb,
        "rm -f /tmp/rocminfo.maps; MAPS_AT_EXIT=/tmp/rocminfo.maps \
         LD_PRELOAD=/usr/local/lib/maps_at_exit.so rocminfo 2>&1",
    );
    let text = labeled(&rocminfo);
    eprintln!("{text}");
    assert_no_loader_error(&text);
    assert_ne!(
        rocminfo.status.code(),
        Some(0),
        "rocminfo found a GPU?\n{text}"
    );
    // Without the amdgpu kernel module rocminfo says so and stops; with the module but no
    // usable /dev/kfd, hsa_init fails with this status instead. Both are "no device".
    assert!(
        text.contains("ROCk module is NOT loaded")
            || text.contains("HSA_STATUS_ERROR_OUT_OF_RESOURCES"),
        "rocminfo did not end with its no-device error:\n{text}"
    );
    let rocminfo_maps = sb.read_to_string("/tmp/rocminfo.maps").unwrap();
    let rocminfo_mapped = mapped_files(&rocminfo_maps);
    let hsa = mapped_soname(&rocminfo_mapped, "libhsa-runtime64.so.1");

    let hip = CHROOT.sh(sb, "/usr/local/bin/hip-devices 2>&1");
    let text = labeled(&hip);
    eprintln!(
        "{}",
        text.lines()
            .filter(|l| !l.starts_with("maps\t"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_no_loader_error(&text);
    assert_eq!(hip.status.code(), Some(1), "{text}");
    let counted = text
        .lines()
        .find(|l| l.starts_with("hipGetDeviceCount\t"))
        .unwrap_or_else(|| panic!("no hipGetDeviceCount line:\n{text}"));
    assert!(
        counted.starts_with("hipGetDeviceCount\t100\t") && counted.contains("hipErrorNoDevice"),
        "the HIP program did not end with hipErrorNoDevice (100):\n{text}"
    );
    let hip_version = text
        .lines()
        .find_map(|l| l.strip_prefix("hipRuntimeGetVersion\t0\t"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("hipRuntimeGetVersion failed:\n{text}"));
    let hip_mapped = mapped_files(&text);
    for (soname, mapped) in [
        ("libhsa-runtime64.so.1", hsa),
        (
            "libhsa-runtime64.so.1",
            mapped_soname(&hip_mapped, "libhsa-runtime64.so.1"),
        ),
        (
            "libamdhip64.so.6",
            mapped_soname(&hip_mapped, "libamdhip64.so.6"),
        ),
    ] {
        let (sha, inode) = identity(sb, &mapped.path);
        assert_eq!(
            inode, mapped.inode,
            "{soname}: the mapped {} (inode {}) is not the file at that path now (inode {inode})",
            mapped.path, mapped.inode
        );
        let previous = sha_by_soname.insert(soname.to_string(), sha.clone());
        assert!(
            previous.is_none_or(|p| p == sha),
            "rocminfo and the HIP program mapped different {soname} files"
        );
    }
    Observed {
        sha_by_soname,
        hip_version,
    }
}

#[track_caller]
fn assert_no_loader_error(text: &str) {
    for loader_error in [
        "error while loading shared libraries",
        "cannot open shared object file",
        "symbol lookup error",
        "version `",
    ] {
        assert!(
            !text.contains(loader_error),
            "a loader error ({loader_error:?}), not the program's own:\n{text}"
        );
    }
}

/// Versions of the stock packages and the dependants, as the chroot's dpkg has them.
fn installed(sb: &Sandbox, names: &[&str]) -> BTreeMap<String, String> {
    // Multi-Arch: same packages are `name:arch` in dpkg-query's binary:Package.
    let all: BTreeMap<String, String> = sb
        .installed_packages()
        .unwrap()
        .into_iter()
        .map(|(name, version)| (name.split(':').next().unwrap_or("").to_string(), version))
        .collect();
    names
        .iter()
        .map(|n| {
            let v = all
                .get(*n)
                .unwrap_or_else(|| panic!("{n} is not installed in the image: {all:?}"));
            (n.to_string(), v.clone())
        })
        .collect()
}

/// The sha256 the marker(s) of our installed packages record per SONAME. The markers are
/// found through dpkg (`dpkg -L` of the packages that Provide the stock names: the JSON files
/// they ship, `<prefix>/.info/rocm-pin.json` or rocm-pin's state directory), wherever the
/// flavour puts them.
fn marker_sha_by_soname(sb: &Sandbox) -> BTreeMap<String, String> {
    let ours = CHROOT.sh_ok(
        sb,
        "dpkg-query -W -f '${Package}\\t${Provides}\\n' | \
         awk -F'\\t' '$2 ~ /libamdhip64-6|libhsa-runtime64-1/ {print $1}'",
    );
    let ours: Vec<&str> = ours.split_whitespace().collect();
    assert!(
        !ours.is_empty(),
        "no installed package Provides the stock names"
    );
    let files = CHROOT.sh_ok(
        sb,
        &format!(
            "dpkg -L {} | grep -E '/rocm-pin[^ ]*\\.json$' | sort -u",
            ours.join(" ")
        ),
    );
    assert!(!files.trim().is_empty(), "{ours:?} ship no marker");
    let mut sha_by_soname = BTreeMap::new();
    for file in files.lines() {
        let marker: rocm_pin_core::rocm::Marker =
            serde_json::from_str(&sb.read_to_string(file).unwrap())
                .unwrap_or_else(|e| panic!("{file} is not a marker: {e}"));
        for l in marker.libraries {
            sha_by_soname.insert(l.soname, l.sha256);
        }
    }
    sha_by_soname
}

#[track_caller]
fn assert_ours(sb: &Sandbox, stock: &Observed, when: &str) {
    let marker = marker_sha_by_soname(sb);
    let now = observe(sb);
    for soname in SONAMES {
        let ours = marker
            .get(*soname)
            .unwrap_or_else(|| panic!("the marker records no {soname}: {marker:?}"));
        assert_eq!(
            &now.sha_by_soname[*soname], ours,
            "{when}: the loader maps a {soname} that is not ours (marker {ours})"
        );
        assert_ne!(
            now.sha_by_soname[*soname], stock.sha_by_soname[*soname],
            "{when}: {soname} is still Debian's file"
        );
    }
    // Ours is HIP 6.3 (CLR's VERSION file), Debian's 6.4: the library answering is ours too.
    assert_ne!(
        now.hip_version, stock.hip_version,
        "{when}: hipRuntimeGetVersion still answers Debian's {}",
        stock.hip_version
    );
    installed(sb, DEPENDANTS);
}

/// Compile the HIP program against Debian's headers and the maps shim, with the chroot's gcc.
fn compile_programs(sb: &Sandbox) {
    for file in ["hip_devices.c", "maps_at_exit.c"] {
        sb.copy_in(&repo().join(FIXTURES).join(file), &format!("/tmp/{file}"))
            .unwrap();
    }
    CHROOT.sh_ok(
        sb,
        "gcc -O1 -Wall -Werror -D__HIP_PLATFORM_AMD__ -o /usr/local/bin/hip-devices \
         /tmp/hip_devices.c -lamdhip64 && \
         gcc -O1 -Wall -Werror -shared -fPIC -o /usr/local/lib/maps_at_exit.so /tmp/maps_at_exit.c",
    );
}

/// Our packages installed in place of Debian's with `rocm-pin install` (the gate reads the
/// release from Debian's package versions; the skipped backport check of the real build is
/// accepted, as in tests/build/real.rs), which ends in its own verify.
fn install_ours(sb: &Sandbox) {
    let out = CHROOT.sh(
        sb,
        &format!(
            "rocm-pin install --mode require --accept-skipped-backport-check $(ls {DEBS}/*.deb) 2>&1"
        ),
    );
    assert_success(&out, "install");
    for stock in STOCK {
        let owner = CHROOT.sh_ok(
            sb,
            &format!("dpkg-query -W -f '${{db:Status-Abbrev}}' {stock}-pinned"),
        );
        assert_eq!(owner.trim(), "ii", "{stock}-pinned is not installed");
    }
}

/// The real staging (`staging`, a copy of the real build's output) packaged against Debian's
/// stock in the `sid-debian-rocm6-dev` chroot (`tarball`), installed, and loaded by rocminfo
/// and a HIP program; still ours after reinstalling Debian's names and fix-broken.
pub fn replaces_debian_stock(rocm_pin: &Path, staging: &Path, tarball: &Path) {
    let t0 = Instant::now();
    let image = ChrootImage::from_tarball("sid", tarball).unwrap();
    let sb = Sandbox::with_options(
        &image,
        &SandboxOptions {
            mount_proc: true,
            ..SandboxOptions::default()
        },
    )
    .unwrap();
    sb.install_rocm_pin(rocm_pin).unwrap();
    // Debian's .debs of the installed stock, kept by the setup script: apt reinstalls from here,
    // offline (the sandbox has no other source).
    sb.add_local_repo("debian-stock", &sb.path("/srv/debian-stock"))
        .unwrap();
    let stock_versions = installed(&sb, STOCK);
    installed(&sb, DEPENDANTS);
    eprintln!("real_debian: stock {stock_versions:?}");

    compile_programs(&sb);
    let stock = observe(&sb);

    sb.copy_in(staging, STAGING).unwrap();
    let out = CHROOT.sh(
        &sb,
        &format!("rocm-pin package --staging {STAGING} --out {DEBS} 2>&1"),
    );
    // The pinned commit's HIP is older than the image's stock: what the stock exports that the
    // build lacks is refused by name (the ABI check); packaged anyway, verify judges every
    // Debian program that links the pair against what ours really export.
    let out = if out.status.success() {
        out
    } else {
        let t = labeled(&out);
        assert_eq!(out.status.code(), Some(2), "{t}");
        assert!(
            t.contains(" lacks ") && t.contains("--allow-missing-symbols"),
            "package against Debian's stock refused, but not by the ABI check:\n{t}"
        );
        eprintln!("real_debian: the ABI check: {t}");
        CHROOT.sh(
            &sb,
            &format!(
                "rocm-pin package --allow-missing-symbols --staging {STAGING} --out {DEBS} 2>&1"
            ),
        )
    };
    assert_success(&out, "package against Debian's stock");
    install_ours(&sb);
    assert_ours(&sb, &stock, "after install");
    let out = CHROOT.sh(&sb, "rocm-pin verify --accept-skipped-backport-check 2>&1");
    assert_success(&out, "verify");

    let out = CHROOT.sh(
        &sb,
        "apt-get install --reinstall -y libhsa-runtime64-1 libamdhip64-6 2>&1",
    );
    eprintln!("{}", labeled(&out));
    assert_ours(
        &sb,
        &stock,
        "after apt-get install --reinstall of Debian's names",
    );
    let out = CHROOT.sh(&sb, "apt-get --fix-broken install -y 2>&1");
    assert_success(&out, "fix-broken");
    assert_ours(&sb, &stock, "after apt-get --fix-broken install");
    let out = CHROOT.sh(&sb, "rocm-pin verify --accept-skipped-backport-check 2>&1");
    assert_success(&out, "verify at the end");
    eprintln!(
        "real_debian: Debian step in {:.0}s",
        t0.elapsed().as_secs_f64()
    );
}

/// The judge itself, without the build (seconds): on Debian's stock both programs end with
/// their no-device error and map Debian's own files — the resolved path is owned by the stock
/// package and `dpkg --verify` finds it unmodified — so the same probe that later sees ours
/// is shown to see theirs.
#[test]
fn debian_programs_map_debian_stock_before_replacement() {
    rocm_pin_testkit::needs_root!("a chroot");
    let tarball = rocm_pin_testkit::needs_setup!(IMAGE);
    let image = ChrootImage::from_tarball("sid", &tarball).unwrap();
    let sb = Sandbox::with_options(
        &image,
        &SandboxOptions {
            mount_proc: true,
            ..SandboxOptions::default()
        },
    )
    .unwrap();
    installed(&sb, STOCK);
    compile_programs(&sb);
    let stock = observe(&sb);
    for (soname, package) in [
        ("libamdhip64.so.6", "libamdhip64-6"),
        ("libhsa-runtime64.so.1", "libhsa-runtime64-1"),
    ] {
        let file = CHROOT.sh_ok(
            &sb,
            &format!(
                "f=$(readlink -f /usr/lib/$(gcc -print-multiarch)/{soname}) && \
                 dpkg-query -S \"$f\" | cut -d: -f1 && sha256sum \"$f\" | cut -d' ' -f1"
            ),
        );
        let mut lines = file.lines();
        assert_eq!(lines.next(), Some(package), "{soname}: {file}");
        assert_eq!(
            lines.next(),
            Some(stock.sha_by_soname[soname].as_str()),
            "{soname}: the mapped file is not the installed one: {file}"
        );
    }
    let verify = CHROOT.sh(&sb, &format!("dpkg --verify {}", STOCK.join(" ")));
    assert!(
        verify.status.success() && verify.stdout.is_empty(),
        "Debian's stock files are modified:\n{}",
        labeled(&verify)
    );
}

/// The Debian step alone on a staging kept from an earlier real build
/// (`ROCM_PIN_REAL_STAGING`, e.g. the copy `ROCM_PIN_REAL_STAGING_KEEP` makes): the developer
/// loop while working on the Debian packaging. CI runs the same step inside
/// `real_rocm_runtime_builds_packages_installs_and_loads`, after the build it needs.
#[test]
#[ignore = "needs ROCM_PIN_REAL_STAGING; the full real-build test runs this step"]
fn kept_real_staging_replaces_debian_stock() {
    rocm_pin_testkit::needs_root!("a chroot");
    let tarball = rocm_pin_testkit::needs_setup!(IMAGE);
    let staging = std::env::var_os("ROCM_PIN_REAL_STAGING")
        .map(std::path::PathBuf::from)
        .expect("set ROCM_PIN_REAL_STAGING to a real build's staging directory");
    replaces_debian_stock(&crate::util::bin(), &staging, &tarball);
}
