//! The stand-in stock set, judged by dpkg-deb, readelf, md5sum and the dynamic loader.

use rocm_pin_testkit::assert_says;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use rocm_pin_core::progress::Silent;
use rocm_pin_kit::standin::{
    build_loader_probe, build_stock_set, parse_probe_output, Naming, StockRole, StockSet,
    StockSetSpec, VersionFile,
};

fn sh(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run command");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn field(deb: &Path, name: &str) -> String {
    sh(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name))
        .trim()
        .to_string()
}

fn build(spec: &StockSetSpec) -> (tempfile::TempDir, StockSet) {
    let dir = tempfile::tempdir().unwrap();
    let set = build_stock_set(spec, dir.path(), &Silent).expect("stand-in set builds");
    (dir, set)
}

/// `dpkg-deb -x` (the files) of `deb` into a new temporary directory.
fn extract(deb: &Path) -> tempfile::TempDir {
    dpkg_deb_into_tempdir("-x", deb)
}

/// `dpkg-deb -e` (the control members) of `deb` into a new temporary directory.
fn control_members(deb: &Path) -> tempfile::TempDir {
    dpkg_deb_into_tempdir("-e", deb)
}

fn dpkg_deb_into_tempdir(action: &str, deb: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    sh(Command::new("dpkg-deb")
        .arg(action)
        .arg(deb)
        .arg(dir.path()));
    dir
}

fn readelf(args: &[&str], file: &Path) -> String {
    sh(Command::new("readelf").args(args).arg(file))
}

#[test]
fn every_deb_is_valid_and_matches_its_facts() {
    let spec = StockSetSpec::for_host().unwrap().with_roles(StockRole::ALL);
    let (_dir, set) = build(&spec);
    assert_eq!(set.packages.len(), StockRole::ALL.len());
    let facts_path = set.out_dir.join("stock-set.json");
    set.write_facts(&facts_path).unwrap();
    let facts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&facts_path).unwrap()).unwrap();
    assert_eq!(facts["prefix"], "/opt/rocm-7.2.4");
    assert_eq!(facts["packages"][1]["name"], "hsa-rocr");
    for pkg in &set.packages {
        sh(Command::new("dpkg-deb").arg("--info").arg(&pkg.deb));
        let listing = sh(Command::new("dpkg-deb").arg("--contents").arg(&pkg.deb));
        // Every non-directory entry dpkg-deb lists is in our facts, and nothing else.
        let mut listed = BTreeSet::new();
        for line in listing.lines() {
            if line.starts_with('d') {
                assert!(
                    line.starts_with("drwxr-xr-x root/root"),
                    "{}: {line}",
                    pkg.name
                );
                continue;
            }
            if line.starts_with('-') {
                assert!(
                    line.starts_with("-rw-r--r-- root/root"),
                    "{}: {line}",
                    pkg.name
                );
            }
            let name = line.split_whitespace().nth(5).expect("name column");
            listed.insert(name.trim_start_matches('.').to_string());
        }
        let facts: BTreeSet<String> = pkg.files.iter().cloned().collect();
        assert_eq!(listed, facts, "{}: contents vs facts", pkg.name);
        for (k, v) in &pkg.control {
            assert_eq!(&field(&pkg.deb, k), v, "{}: field {k}", pkg.name);
        }
        // md5sums as dpkg will check them.
        let x = extract(&pkg.deb);
        let ctl = control_members(&pkg.deb);
        if ctl.path().join("md5sums").exists() {
            sh(Command::new("md5sum")
                .arg("--check")
                .arg("--quiet")
                .arg(ctl.path().join("md5sums"))
                .current_dir(x.path()));
        }
        for lib in &pkg.libraries {
            let file = x.path().join(lib.path.trim_start_matches('/'));
            let dynamic = readelf(&["-dW"], &file);
            assert!(
                dynamic.contains(&format!("Library soname: [{}]", lib.soname)),
                "{}: SONAME {} in\n{dynamic}",
                lib.path,
                lib.soname
            );
            let bytes = std::fs::read(&file).unwrap();
            let needle = format!("ROCM_PIN_IDENTITY={}", lib.identity);
            assert!(
                bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "{}: identity {needle} embedded",
                lib.path
            );
            let link = x.path().join(lib.soname_link.trim_start_matches('/'));
            assert_eq!(
                std::fs::canonicalize(&link).unwrap(),
                std::fs::canonicalize(&file).unwrap(),
                "{} resolves to the real file",
                lib.soname_link
            );
        }
    }
}

#[test]
fn stock_pair_has_the_real_shapes() {
    let spec = StockSetSpec::for_host().unwrap();
    let (_dir, set) = build(&spec);
    let core = set.require(StockRole::RocmCore).unwrap();
    let hsa = set.require(StockRole::HsaRocr).unwrap();
    let hip = set.require(StockRole::HipRuntime).unwrap();
    assert_eq!(core.version, "7.2.4.70204-93~24.04");
    assert_eq!(hsa.version, "1.18.0.70204-93~24.04");
    assert_eq!(hip.version, "7.2.53211.70204-93~24.04");
    assert_eq!(
        field(&hip.deb, "Depends"),
        "hsa-rocr (= 1.18.0.70204-93~24.04), rocm-core, libc6"
    );
    assert_eq!(
        field(&hip.deb, "Provides"),
        "hip-rocclr (= 7.2.53211.70204-93~24.04)"
    );
    assert_eq!(field(&hip.deb, "Replaces"), "hip-rocclr");
    let meta = set.require(StockRole::RocmHipRuntime).unwrap();
    assert_eq!(
        field(&meta.deb, "Depends"),
        "hip-runtime-amd (= 7.2.53211.70204-93~24.04), hsa-rocr (= 1.18.0.70204-93~24.04), rocm-core (= 7.2.4.70204-93~24.04)"
    );
    assert_eq!(
        field(&set.require(StockRole::HipDev).unwrap().deb, "Depends"),
        "hip-runtime-amd (= 7.2.53211.70204-93~24.04)"
    );
    for role in [StockRole::Rccl, StockRole::Hipblas] {
        assert!(field(&set.require(role).unwrap().deb, "Depends")
            .starts_with("hip-runtime-amd (>= 7.2.53211.70204)"));
    }

    // Files named like ROCm's.
    for f in [
        "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204",
        "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1",
        "/opt/rocm-7.2.4/lib/libhsa-runtime64.so",
    ] {
        assert!(hsa.files.iter().any(|x| x == f), "hsa-rocr ships {f}");
    }
    for f in [
        "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204",
        "/opt/rocm-7.2.4/lib/libamdhip64.so.7",
        "/opt/rocm-7.2.4/lib/libhiprtc.so.7.2.70204",
        "/opt/rocm-7.2.4/lib/libhiprtc-builtins.so.7.2.70204",
        "/opt/rocm-7.2.4/lib/.hipInfo",
    ] {
        assert!(
            hip.files.iter().any(|x| x == f),
            "hip-runtime-amd ships {f}"
        );
    }
    assert!(core
        .files
        .iter()
        .any(|x| x == "/opt/rocm-7.2.4/.info/version"));

    // The maintainer scripts carry the traps.
    let x = control_members(&hsa.deb);
    let postinst = std::fs::read_to_string(x.path().join("postinst")).unwrap();
    let prerm = std::fs::read_to_string(x.path().join("prerm")).unwrap();
    assert!(postinst.contains("echo \"/opt/rocm-7.2.4/lib\" > /etc/ld.so.conf.d/rocr-runtime.conf"));
    assert!(prerm.contains("rm -f /etc/ld.so.conf.d/rocr-runtime.conf"));
    let x = control_members(&core.deb);
    let postinst = std::fs::read_to_string(x.path().join("postinst")).unwrap();
    assert!(postinst.contains("update-alternatives --install /opt/rocm rocm /opt/rocm-7.2.4 70204"));

    // ELF: hsa exports its symbols in ROCR_1 but not the backport symbol; hip NEEDs hsa.
    let hx = extract(&hsa.deb);
    let syms = readelf(
        &["--dyn-syms", "-W"],
        &hx.path()
            .join("opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204"),
    );
    assert_says(&syms, &["hsa_init@@ROCR_1", "rocm_pin_identity@@ROCR_1"]);
    assert!(
        !syms.contains(rocm_pin_core::rocm::BACKPORT_SYMBOL),
        "{syms}"
    );
    let px = extract(&hip.deb);
    let d = readelf(
        &["-dW"],
        &px.path()
            .join("opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"),
    );
    assert_says(&d, &["Shared library: [libhsa-runtime64.so.1]"]);
    let rx = extract(&set.require(StockRole::Rccl).unwrap().deb);
    let d = readelf(
        &["-dW"],
        &rx.path().join("opt/rocm-7.2.4/lib/librccl.so.1.0.70204"),
    );
    assert_says(&d, &["Shared library: [libamdhip64.so.7]"]);
}

#[test]
fn same_spec_gives_byte_identical_debs() {
    let spec = StockSetSpec::for_host()
        .unwrap()
        .with_roles(&[StockRole::AsanHsaDecoy, StockRole::DebianHsaDecoy]);
    let (_a, one) = build(&spec);
    let (_b, two) = build(&spec);
    for (x, y) in one.packages.iter().zip(&two.packages) {
        assert_eq!(
            std::fs::read(&x.deb).unwrap(),
            std::fs::read(&y.deb).unwrap(),
            "{} differs between two builds",
            x.name
        );
    }
}

#[test]
fn variants_have_their_shapes() {
    let base = StockSetSpec::for_host().unwrap();

    let mut multi = base.clone();
    multi.naming = Naming::MultiVersion;
    let (_d1, set) = build(&multi);
    let hip = set
        .by_name("hip-runtime-amd7.2.4")
        .expect("multi-version hip");
    assert_eq!(
        field(&hip.deb, "Depends"),
        "hsa-rocr7.2.4 (= 1.18.0.70204-93~24.04), rocm-core7.2.4, libc6"
    );
    assert!(set.by_name("hsa-rocr7.2.4").is_some());
    assert!(set.by_name("rocm-hip-runtime7.2.4").is_some());

    let (_d2, r3) = build(&base.newer_release_with_meta());
    let hip = r3.require(StockRole::HipRuntime).unwrap();
    assert_eq!(hip.version, "7.2.53211.70205-1~24.04");
    assert!(hip
        .files
        .iter()
        .any(|f| f == "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70205"));
    assert_eq!(
        hip.libraries
            .iter()
            .find(|l| l.soname == "libamdhip64.so.7")
            .unwrap()
            .identity,
        "hip-STOCK-70205"
    );
    assert!(field(
        &r3.require(StockRole::RocmHipRuntime).unwrap().deb,
        "Depends"
    )
    .contains("hip-runtime-amd (= 7.2.53211.70205-1~24.04)"));
    assert!(r3.package(StockRole::Rccl).is_none());

    let (_d3, r94) = build(&base.rebuild(94));
    assert_eq!(r94.packages.len(), 2);
    assert_eq!(
        r94.require(StockRole::HsaRocr).unwrap().version,
        "1.18.0.70204-94~24.04"
    );

    let mut jammy = base.clone();
    jammy.distro_suffix = "~22.04".into();
    assert_eq!(
        jammy.package_version(StockRole::HipRuntime),
        "7.2.53211.70204-93~22.04"
    );

    let (_d4, extra) = build(&base.clone().only(&[
        StockRole::CustomRccl,
        StockRole::DebianHsaDecoy,
        StockRole::AsanHsaDecoy,
    ]));
    let custom = extra.require(StockRole::CustomRccl).unwrap();
    assert_eq!(custom.name, "rccl");
    assert_eq!(custom.version, "2.27.7.70204-93~24.04+custom");
    assert!(!custom.in_repository);
    assert_eq!(
        field(&custom.deb, "Depends"),
        "hip-runtime-amd (= 7.2.53211.70204-93~24.04), hsa-rocr (= 1.18.0.70204-93~24.04), rocm-smi-lib"
    );
    let debian = extra.require(StockRole::DebianHsaDecoy).unwrap();
    let multiarch = rocm_pin_kit::standin::host_multiarch().unwrap();
    assert!(debian
        .files
        .contains(&format!("/usr/lib/{multiarch}/libhsa-runtime64.so.1")));
    let asan = extra.require(StockRole::AsanHsaDecoy).unwrap();
    assert!(asan
        .files
        .iter()
        .any(|f| f == "/opt/rocm-7.2.4/lib/asan/libhsa-runtime64.so.1"));

    for (content, expect) in [
        (VersionFile::Content("7.2.40".into()), Some("7.2.40\n")),
        (VersionFile::Missing, None),
    ] {
        let mut s = base.clone().only(&[StockRole::RocmCore]);
        s.version_file = content;
        let (_d, set) = build(&s);
        let core = set.require(StockRole::RocmCore).unwrap();
        let x = extract(&core.deb);
        let got = std::fs::read_to_string(x.path().join("opt/rocm-7.2.4/.info/version")).ok();
        assert_eq!(got.as_deref(), expect);
    }
}

#[test]
fn loader_probe_names_the_file_and_identity() {
    let spec = StockSetSpec::for_host().unwrap();
    let (_dir, set) = build(&spec);
    let root = tempfile::tempdir().unwrap();
    for role in [StockRole::HsaRocr, StockRole::HipRuntime] {
        sh(Command::new("dpkg-deb")
            .arg("-x")
            .arg(&set.require(role).unwrap().deb)
            .arg(root.path()));
    }
    let probe = build_loader_probe(&root.path().join("bin/probe")).unwrap();
    let lib = root.path().join("opt/rocm-7.2.4/lib");
    let out = Command::new(&probe)
        .args([
            "libamdhip64.so.7",
            "libhsa-runtime64.so.1",
            "libhiprtc.so.7",
            "libnothere.so.9",
        ])
        .env("LD_LIBRARY_PATH", &lib)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a missing soname makes the probe fail"
    );
    let lines = parse_probe_output(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0].identity.as_deref(), Some("hip-STOCK-70204"));
    assert_eq!(
        lines[0].real_path.as_deref(),
        Some(lib.join("libamdhip64.so.7.2.70204").to_str().unwrap())
    );
    assert_eq!(lines[1].identity.as_deref(), Some("hsa-STOCK-70204"));
    assert_eq!(lines[2].identity.as_deref(), Some("hiprtc-STOCK-70204"));
    assert_eq!(lines[3].path, None);

    // An absolute path (a stock versioned file name) loads that very file.
    let abs = lib.join("libhsa-runtime64.so.1.18.70204");
    let out = sh(Command::new(&probe).arg(&abs));
    let lines = parse_probe_output(&out).unwrap();
    assert_eq!(lines[0].identity.as_deref(), Some("hsa-STOCK-70204"));
    assert_eq!(lines[0].path.as_deref(), abs.to_str());

    // A library without the identity function: the probe falls back to the data string.
    let plain = root.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(
        plain.join("p.c"),
        "__attribute__((used)) static const char s[] = \"ROCM_PIN_IDENTITY=plain-X-1\";\nint p(void){return 0;}\n",
    )
    .unwrap();
    sh(Command::new("gcc").current_dir(&plain).args([
        "-shared",
        "-fPIC",
        "-Wl,-soname,libplain.so.1",
        "-o",
        "libplain.so.1",
        "p.c",
    ]));
    let out = sh(Command::new(&probe)
        .arg("libplain.so.1")
        .env("LD_LIBRARY_PATH", &plain));
    let lines = parse_probe_output(&out).unwrap();
    assert_eq!(lines[0].identity.as_deref(), Some("plain-X-1"));
}

#[test]
fn a_bad_spec_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let mut spec = StockSetSpec::for_host().unwrap();
    spec.rocm_version = "7.2".into();
    let err = build_stock_set(&spec, &out, &Silent).unwrap_err();
    assert!(err.to_string().contains("7.2"), "{err:#}");
    assert!(!out.exists());
    let mut spec = StockSetSpec::for_host().unwrap();
    spec.loader_entry_name = "../../etc/passwd".into();
    assert!(build_stock_set(&spec, &out, &Silent).is_err());
    assert!(!out.exists());
}
