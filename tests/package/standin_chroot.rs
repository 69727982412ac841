//! The stand-in stock set installed with real apt in a throwaway bookworm chroot: it must
//! behave like stock ROCm 7.2.4 as far as dpkg, apt, update-alternatives, ldconfig and the
//! dynamic loader can tell. Needs root and the cached chroot image (scripts/test-setup).

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::path::{Path, PathBuf};

use rocm_pin_core::progress::Silent;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_kit::standin::chroot::{
    install_probe, install_stock, prepare_stock_host, publish, run_probe,
};
use rocm_pin_kit::standin::{
    build_loader_probe, build_stock_set, real_library_size, Naming, StockRole, StockSet,
    StockSetSpec,
};

use rocm_pin_testkit::cache_dir;

fn image() -> ChrootImage {
    assert!(
        rustix_is_root(),
        "the chroot tests need root (CI runs as root); run scripts/test as root"
    );
    rocm_pin_testkit::chroot_image("bookworm")
}

fn rustix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn build(spec: &StockSetSpec, dir: &Path) -> StockSet {
    build_stock_set(spec, dir, &Silent).expect("stand-in set builds")
}

/// `dpkg-query` status abbreviation (`ii `) and version of `pkg`, None when unknown to dpkg.
fn status(sb: &Sandbox, pkg: &str) -> Option<(String, String)> {
    let out = sb
        .run(&[
            "dpkg-query",
            "-W",
            "-f",
            "${db:Status-Abbrev}|${Version}",
            pkg,
        ])
        .unwrap();
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).unwrap();
    let (a, v) = s.split_once('|')?;
    Some((a.to_string(), v.to_string()))
}

fn assert_installed(sb: &Sandbox, pkg: &str, version: &str) {
    assert_eq!(
        status(sb, pkg),
        Some(("ii ".to_string(), version.to_string())),
        "{pkg} installed at {version}"
    );
}

fn ldconfig_target(sb: &Sandbox, soname: &str) -> Option<String> {
    let cache = sb.run_ok(&["ldconfig", "-p"]).unwrap();
    cache.lines().find_map(|l| {
        let l = l.trim();
        l.starts_with(&format!("{soname} "))
            .then(|| l.rsplit("=> ").next().unwrap_or("").to_string())
    })
}

/// The roles a stock install puts in (their packages at their versions).
const STOCK_INSTALL: &[StockRole] = &[
    StockRole::RocmCore,
    StockRole::HsaRocr,
    StockRole::HipRuntime,
    StockRole::RocmHipRuntime,
    StockRole::HipDev,
    StockRole::Rccl,
    StockRole::Hipblas,
];

/// What the ld.so cache maps each soname to after the stock install.
const STOCK_LD_CACHE: &[(&str, &str)] = &[
    ("libamdhip64.so.7", "/opt/rocm-7.2.4/lib/libamdhip64.so.7"),
    (
        "libhsa-runtime64.so.1",
        "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1",
    ),
];

/// What the loader probe finds for each soname in the stock install.
const STOCK_PROBE: &[(&str, &str)] = &[
    ("libamdhip64.so.7", "hip-STOCK-70204"),
    ("libhsa-runtime64.so.1", "hsa-STOCK-70204"),
    ("libhiprtc.so.7", "hiprtc-STOCK-70204"),
    ("librccl.so.1", "rccl-STOCK-70204"),
];

#[test]
fn stock_set_installs_and_behaves_like_rocm() {
    rocm_pin_testkit::needs_root!("a chroot");
    let work = tempfile::tempdir().unwrap();
    let spec = StockSetSpec::for_host().unwrap().with_roles(&[
        StockRole::CustomRccl,
        StockRole::DebianHsaDecoy,
        StockRole::AsanHsaDecoy,
    ]);
    let set = build(&spec, &work.path().join("r1"));
    let probe = build_loader_probe(&work.path().join("probe")).unwrap();

    let sb = Sandbox::new(&image()).unwrap();
    prepare_stock_host(&sb, &set, &probe).unwrap();

    for role in STOCK_INSTALL {
        let p = set.require(*role).unwrap();
        assert_installed(&sb, &p.name, &p.version);
    }
    // Decoys are available but not installed by a stock install.
    assert_eq!(status(&sb, "hsa-rocr-asan"), None);

    // /opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-7.2.4
    assert_eq!(
        std::fs::read_link(sb.path("/opt/rocm")).unwrap(),
        PathBuf::from("/etc/alternatives/rocm")
    );
    assert_eq!(
        sb.resolve("/opt/rocm").unwrap(),
        PathBuf::from("/opt/rocm-7.2.4")
    );
    let version = sb.resolve("/opt/rocm/.info/version").unwrap();
    assert_eq!(version, PathBuf::from("/opt/rocm-7.2.4/.info/version"));
    assert_eq!(
        sb.read_to_string(version.to_str().unwrap()).unwrap(),
        "7.2.4-93\n"
    );
    assert_eq!(
        sb.read_to_string("/etc/ld.so.conf.d/rocr-runtime.conf")
            .unwrap(),
        "/opt/rocm-7.2.4/lib\n"
    );
    for (soname, path) in STOCK_LD_CACHE {
        assert_eq!(
            ldconfig_target(&sb, soname).as_deref(),
            Some(*path),
            "{soname}"
        );
    }
    let sonames: Vec<&str> = STOCK_PROBE.iter().map(|(so, _)| *so).collect();
    let (lines, ok) = run_probe(&sb, &sonames).unwrap();
    assert!(ok, "{lines:?}");
    assert_eq!(lines.len(), STOCK_PROBE.len(), "{lines:?}");
    for (line, (soname, identity)) in lines.iter().zip(STOCK_PROBE) {
        assert_eq!(line.identity.as_deref(), Some(*identity), "{soname}");
    }
    assert_eq!(
        lines[0].real_path.as_deref(),
        Some("/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204")
    );

    // The decoys install beside the stock set without file conflicts, owned where discovery
    // must not look.
    sb.run_ok(&[
        "apt-get",
        "install",
        "-y",
        "-q",
        "libhsa-runtime64-1",
        "hsa-rocr-asan",
    ])
    .unwrap();
    let owners = sb.sh_ok("dpkg -S libhsa-runtime64.so.1 | sort").unwrap();
    assert_says(
        &owners,
        &[
            "hsa-rocr: /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1",
            "hsa-rocr-asan: /opt/rocm-7.2.4/lib/asan/libhsa-runtime64.so.1",
        ],
    );
    assert!(
        owners.contains("libhsa-runtime64-1:amd64: /usr/lib/")
            || owners.contains("libhsa-runtime64-1: /usr/lib/"),
        "{}",
        owners
    );

    // The custom rccl with exact deps on the stock pair: dpkg -i --force-all, then fix-broken
    // pulls in rocm-smi-lib and keeps it (the stock baseline of the fb-eq scenario).
    let custom = set.require(StockRole::CustomRccl).unwrap();
    sb.copy_in(&custom.deb, "/tmp/custom-rccl.deb").unwrap();
    let forced = sb
        .run(&["dpkg", "-i", "--force-all", "/tmp/custom-rccl.deb"])
        .unwrap();
    assert_success(&forced, "the command");
    // --force-all configures it despite the missing rocm-smi-lib: apt now sees a broken system.
    assert!(!sb.run(&["apt-get", "check"]).unwrap().status.success());
    sb.run_ok(&["apt-get", "--fix-broken", "install", "-y", "-q"])
        .unwrap();
    assert_installed(&sb, "rccl", &custom.version);
    assert_installed(
        &sb,
        "rocm-smi-lib",
        &set.require(StockRole::RocmSmiLib).unwrap().version,
    );
    let (lines, _) = run_probe(&sb, &["librccl.so.1"]).unwrap();
    assert_eq!(lines[0].identity.as_deref(), Some("rccl-CUSTOM-70204"));
}

/// `--real-sizes` (the benchmarks' stock set): every library of hsa-rocr and hip-runtime-amd
/// is installed at the real 7.2.4 file's size, readelf still reads it, ldconfig still links it
/// and the dynamic loader still loads it (and librccl, linked against the padded pair).
#[test]
fn real_sized_libraries_install_and_load() {
    rocm_pin_testkit::needs_root!("a chroot");
    let work = tempfile::tempdir().unwrap();
    let spec = StockSetSpec::for_host().unwrap().at_real_sizes();
    let set = build(&spec, &work.path().join("real"));
    let probe = build_loader_probe(&work.path().join("probe")).unwrap();
    let sb = Sandbox::new(&image()).unwrap();
    prepare_stock_host(&sb, &set, &probe).unwrap();

    let mut padded = 0;
    for role in [StockRole::HsaRocr, StockRole::HipRuntime] {
        for lib in &set.require(role).unwrap().libraries {
            let name = lib.path.rsplit('/').next().unwrap();
            let want = real_library_size(name).unwrap_or_else(|| panic!("no real size for {name}"));
            let installed = sb.path(&lib.path);
            assert_eq!(
                std::fs::metadata(&installed).unwrap().len(),
                want,
                "{}",
                lib.path
            );
            let out = std::process::Command::new("readelf")
                .args(["-h", "-S", "-W"])
                .arg(&installed)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && out.stderr.is_empty(),
                "readelf {}: {}",
                lib.path,
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                text.contains("DYN (Shared object file)") && text.contains(".standin_pad"),
                "{}",
                text
            );
            padded += 1;
        }
    }
    assert_eq!(
        padded, 4,
        "libhsa-runtime64, libamdhip64, libhiprtc, libhiprtc-builtins"
    );
    // The libraries other packages ship keep their stand-in size.
    let rccl = &set.require(StockRole::Rccl).unwrap().libraries[0];
    assert!(std::fs::metadata(sb.path(&rccl.path)).unwrap().len() < 100_000);

    assert_eq!(
        ldconfig_target(&sb, "libamdhip64.so.7").as_deref(),
        Some("/opt/rocm-7.2.4/lib/libamdhip64.so.7")
    );
    let sonames = [
        "libamdhip64.so.7",
        "libhsa-runtime64.so.1",
        "libhiprtc.so.7",
        "libhiprtc-builtins.so.7",
        "librccl.so.1",
    ];
    let (lines, ok) = run_probe(&sb, &sonames).unwrap();
    assert!(ok, "{lines:?}");
    let identities: Vec<_> = lines.iter().map(|l| l.identity.as_deref()).collect();
    assert_eq!(
        identities,
        [
            Some("hip-STOCK-70204"),
            Some("hsa-STOCK-70204"),
            Some("hiprtc-STOCK-70204"),
            Some("hiprtc-builtins-STOCK-70204"),
            Some("rccl-STOCK-70204"),
        ]
    );
}

#[test]
fn hsa_prerm_deletes_the_loader_entry_and_rocm_core_the_chain() {
    rocm_pin_testkit::needs_root!("a chroot");
    let work = tempfile::tempdir().unwrap();
    let set = build(&StockSetSpec::for_host().unwrap(), &work.path().join("r1"));
    let sb = Sandbox::new(&image()).unwrap();
    publish(&sb, "stock", &set).unwrap();
    install_stock(&sb, &set).unwrap();
    assert!(sb.path("/etc/ld.so.conf.d/rocr-runtime.conf").exists());

    // The trap: removing hsa-rocr (as dpkg does when a replacement takes over) deletes the
    // entry and refreshes the cache, so nothing in /opt/rocm-7.2.4/lib resolves any more.
    sb.run_ok(&["dpkg", "--remove", "--force-depends", "hsa-rocr"])
        .unwrap();
    assert!(!sb.path("/etc/ld.so.conf.d/rocr-runtime.conf").exists());
    assert_eq!(ldconfig_target(&sb, "libamdhip64.so.7"), None);

    sb.run_ok(&["dpkg", "--purge", "--force-depends", "rocm-core"])
        .unwrap();
    assert!(
        std::fs::symlink_metadata(sb.path("/opt/rocm")).is_err(),
        "/opt/rocm gone"
    );
    assert!(std::fs::symlink_metadata(sb.path("/etc/alternatives/rocm")).is_err());
}

#[test]
fn newer_release_upgrades_in_place_and_multi_version_naming_installs() {
    rocm_pin_testkit::needs_root!("a chroot");
    let work = tempfile::tempdir().unwrap();
    let base = StockSetSpec::for_host().unwrap();
    let r1 = build(&base, &work.path().join("r1"));
    let r3 = build(&base.newer_release_with_meta(), &work.path().join("r3"));
    let probe = build_loader_probe(&work.path().join("probe")).unwrap();

    let sb = Sandbox::new(&image()).unwrap();
    publish(&sb, "stock", &r1).unwrap();
    install_stock(&sb, &r1).unwrap();
    install_probe(&sb, &probe).unwrap();
    publish(&sb, "stock", &r3).unwrap();
    sb.run_ok(&["apt-get", "dist-upgrade", "-y", "-q"]).unwrap();
    for role in [
        StockRole::HsaRocr,
        StockRole::HipRuntime,
        StockRole::RocmHipRuntime,
    ] {
        let p = r3.require(role).unwrap();
        assert_installed(&sb, &p.name, &p.version);
    }
    // hsa-rocr's prerm (upgrade) deleted the entry, its postinst wrote it again.
    assert!(sb.path("/etc/ld.so.conf.d/rocr-runtime.conf").exists());
    let (lines, ok) = run_probe(&sb, &["libamdhip64.so.7", "libhsa-runtime64.so.1"]).unwrap();
    assert!(ok);
    assert_eq!(lines[0].identity.as_deref(), Some("hip-STOCK-70205"));
    assert_eq!(
        lines[0].real_path.as_deref(),
        Some("/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70205")
    );
    assert_eq!(lines[1].identity.as_deref(), Some("hsa-STOCK-70205"));
    drop(sb);

    // Another release side by side in its own prefix keeps /opt/rocm on the target.
    let old = build(&base.other_release("7.1.0"), &work.path().join("old"));
    let sb = Sandbox::new(&image()).unwrap();
    publish(&sb, "stock", &r1).unwrap();
    install_stock(&sb, &r1).unwrap();
    install_probe(&sb, &probe).unwrap();
    publish(&sb, "old", &old).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "-q", "hip-runtime-amd7.1.0"])
        .unwrap();
    assert_installed(&sb, "hsa-rocr7.1.0", "1.18.0.70100-93~24.04");
    assert_installed(&sb, "hsa-rocr", "1.18.0.70204-93~24.04");
    assert_eq!(
        sb.resolve("/opt/rocm").unwrap(),
        PathBuf::from("/opt/rocm-7.2.4")
    );
    let (lines, ok) = run_probe(&sb, &["libhsa-runtime64.so.1"]).unwrap();
    assert!(ok);
    // ldconfig reads ld.so.conf.d in name order and the first directory holding a soname wins:
    // rocr-runtime-7.1.0.conf sorts before rocr-runtime.conf, so the other prefix shadows the
    // target ("a same-named library in another prefix that the loader finds first").
    assert_eq!(
        lines[0].identity.as_deref(),
        Some("hsa-STOCK-70100"),
        "{lines:?}"
    );
    drop(sb);

    let mut multi = base.clone();
    multi.naming = Naming::MultiVersion;
    let mv = build(&multi, &work.path().join("mv"));
    let sb = Sandbox::new(&image()).unwrap();
    publish(&sb, "stock", &mv).unwrap();
    install_stock(&sb, &mv).unwrap();
    assert_installed(&sb, "hip-runtime-amd7.2.4", "7.2.53211.70204-93~24.04");
    assert_installed(&sb, "hsa-rocr7.2.4", "1.18.0.70204-93~24.04");
    assert_eq!(
        sb.resolve("/opt/rocm").unwrap(),
        PathBuf::from("/opt/rocm-7.2.4")
    );
}

#[test]
fn stock_set_installs_on_trixie_with_apt3_solver() {
    rocm_pin_testkit::needs_root!("a chroot");
    let work = tempfile::tempdir().unwrap();
    let set = build(&StockSetSpec::for_host().unwrap(), &work.path().join("r1"));
    let probe = build_loader_probe(&work.path().join("probe")).unwrap();
    assert!(rustix_is_root(), "the chroot tests need root");
    let image = ChrootImage::cached("trixie", &cache_dir())
        .expect("trixie chroot image (run scripts/test-setup)");
    let options = SandboxOptions {
        apt_solver3: true,
        // Ubuntu-like image: /usr/share/doc dropped; the stock set lives in /opt and is unaffected.
        dpkg_excludes: true,
        ..Default::default()
    };
    let sb = Sandbox::with_options(&image, &options).unwrap();
    prepare_stock_host(&sb, &set, &probe).unwrap();
    for role in [
        StockRole::HsaRocr,
        StockRole::HipRuntime,
        StockRole::RocmHipRuntime,
    ] {
        let p = set.require(role).unwrap();
        assert_installed(&sb, &p.name, &p.version);
    }
    assert_eq!(
        sb.resolve("/opt/rocm").unwrap(),
        PathBuf::from("/opt/rocm-7.2.4")
    );
    let (lines, ok) = run_probe(&sb, &["libamdhip64.so.7", "libhsa-runtime64.so.1"]).unwrap();
    assert!(ok, "{lines:?}");
    assert_eq!(lines[0].identity.as_deref(), Some("hip-STOCK-70204"));
    assert_eq!(lines[1].identity.as_deref(), Some("hsa-STOCK-70204"));
    assert!(sb
        .path("/opt/rocm-7.2.4/share/doc/hip-runtime-amd/LICENSE.md")
        .is_file());
}
