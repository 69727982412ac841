//! Discovery against a root with a real dpkg database layout and real ELF libraries (gcc
//! builds them with the SONAMEs of the stock packages).

use std::path::Path;
use std::process::Command;

use super::*;
use crate::rocm::read_status;

const TRIPLET_DIR: &str = "/usr/lib/x86_64-linux-gnu";

/// A root under construction: dpkg status paragraphs, file lists, files.
struct FakeRoot {
    dir: tempfile::TempDir,
    status: String,
}

impl FakeRoot {
    fn new() -> FakeRoot {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("var/lib/dpkg/info")).unwrap();
        FakeRoot {
            dir,
            status: String::new(),
        }
    }

    fn root(&self) -> Root {
        Root::new(self.dir.path())
    }

    fn host(&self, in_root: &str) -> std::path::PathBuf {
        self.dir.path().join(in_root.trim_start_matches('/'))
    }

    /// A shared object with `soname` at in-root `path`, built by gcc.
    fn elf(&self, path: &str, soname: &str) {
        build_so(&self.host(path), soname);
    }

    fn symlink(&self, target: &str, path: &str) {
        let host = self.host(path);
        std::fs::create_dir_all(host.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, host).unwrap();
    }

    fn text(&self, path: &str, content: &str) {
        let host = self.host(path);
        std::fs::create_dir_all(host.parent().unwrap()).unwrap();
        std::fs::write(host, content).unwrap();
    }

    /// An installed package (Multi-Arch: same, so its list is `<pkg>:amd64.list`) listing
    /// `paths`; `extra` adds control fields.
    fn package(&mut self, name: &str, version: &str, paths: &[&str], extra: &str) {
        self.status.push_str(&format!(
            "Package: {name}\nStatus: install ok installed\nArchitecture: amd64\nMulti-Arch: same\nVersion: {version}\n{extra}Description: x\n\n"
        ));
        let mut list = String::new();
        for p in paths {
            let mut dir = Path::new(p).parent();
            while let Some(d) = dir {
                if !list.contains(&format!("{}\n", d.display())) {
                    list.push_str(&format!("{}\n", d.display()));
                }
                dir = d.parent().filter(|d| *d != Path::new("/"));
            }
            list.push_str(&format!("{p}\n"));
        }
        std::fs::write(
            self.host(&format!("/var/lib/dpkg/info/{name}:amd64.list")),
            list,
        )
        .unwrap();
        std::fs::write(self.host("/var/lib/dpkg/status"), &self.status).unwrap();
    }

    fn discover(&self) -> StockDiscovery {
        let root = self.root();
        discover(&root, &read_status(&root).unwrap())
    }
}

fn build_so(out: &Path, soname: &str) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let src = out.with_extension("c");
    std::fs::write(&src, "int rocm_pin_test_symbol(void) { return 1; }\n").unwrap();
    let st = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(out)
        .arg(&src)
        .arg(format!("-Wl,-soname,{soname}"))
        .status()
        .expect("gcc (build-essential) builds the test libraries");
    assert!(st.success(), "gcc failed for {soname}");
    std::fs::remove_file(src).unwrap();
}

/// Debian's 7.2.4 runtime as experimental ships it (docs/flavours.md), plus the -dev link
/// package and a dependant.
fn debian_724() -> FakeRoot {
    let mut r = FakeRoot::new();
    for (pkg, version, file, soname) in [
        (
            "libhsa-runtime64-1",
            "7.2.4+dfsg-1~exp1",
            "libhsa-runtime64.so.1.18.0",
            "libhsa-runtime64.so.1",
        ),
        (
            "libamdhip64-7",
            "7.2.4-1~exp2",
            "libamdhip64.so.7.2.53211",
            "libamdhip64.so.7",
        ),
        (
            "libhiprtc7",
            "7.2.4-1~exp2",
            "libhiprtc.so.7.2.53211",
            "libhiprtc.so.7",
        ),
        (
            "libhiprtc-builtins7",
            "7.2.4-1~exp2",
            "libhiprtc-builtins.so.7.2.53211",
            "libhiprtc-builtins.so.7",
        ),
    ] {
        let real = format!("{TRIPLET_DIR}/{file}");
        let link = format!("{TRIPLET_DIR}/{soname}");
        r.elf(&real, soname);
        r.symlink(file, &link);
        r.package(pkg, version, &[&real, &link], "");
    }
    let dev = format!("{TRIPLET_DIR}/libamdhip64.so");
    r.symlink("libamdhip64.so.7", &dev);
    r.package("libamdhip64-dev", "7.2.4-1~exp2", &[&dev], "");
    r.text("/usr/bin/rocminfo", "#!/bin/sh\n");
    r.package("rocminfo", "7.2.4-1", &["/usr/bin/rocminfo"], "");
    r
}

fn names(rt: &StockRuntime) -> Vec<(&str, Half)> {
    rt.packages
        .iter()
        .map(|p| (p.package.as_str(), p.half))
        .collect()
}

#[test]
fn debian_runtime_is_found_by_soname_with_its_release_from_the_package_versions() {
    let d = debian_724().discover();
    assert_eq!(d.unrecognised, Vec::<String>::new());
    assert_eq!(d.runtimes.len(), 1, "{d:#?}");
    let rt = &d.runtimes[0];
    assert_eq!(rt.flavour, StockFlavour::Debian);
    assert_eq!(rt.release.as_deref(), Some("7.2.4"));
    assert_eq!(rt.release_from, "the package versions");
    assert_eq!(rt.library_dirs, vec![TRIPLET_DIR.to_string()]);
    assert_eq!(
        names(rt),
        vec![
            ("libhsa-runtime64-1", Half::Hsa),
            ("libamdhip64-7", Half::Hip),
            ("libhiprtc-builtins7", Half::Hip),
            ("libhiprtc7", Half::Hip),
        ]
    );
    assert!(rt.is_complete());
    let hip = &rt.packages[1];
    assert_eq!(
        hip.libraries,
        vec![StockLibrary {
            path: format!("{TRIPLET_DIR}/libamdhip64.so.7.2.53211"),
            soname: "libamdhip64.so.7".into(),
        }],
        "only the real file counts, not its SONAME link"
    );
    assert!(rt.describe().starts_with(
        "Debian's packaging, ROCm 7.2.4 (from the package versions): libhsa-runtime64-1 7.2.4+dfsg-1~exp1, libamdhip64-7 7.2.4-1~exp2"
    ));
}

#[test]
fn amd_runtime_is_found_with_its_release_from_the_version_file() {
    let mut r = FakeRoot::new();
    let lib = "/opt/rocm-7.2.4/lib";
    r.elf(
        &format!("{lib}/libhsa-runtime64.so.1.18.0"),
        "libhsa-runtime64.so.1",
    );
    r.elf(
        &format!("{lib}/libamdhip64.so.7.2.70204"),
        "libamdhip64.so.7",
    );
    r.elf(&format!("{lib}/libhiprtc.so.7.2.70204"), "libhiprtc.so.7");
    r.text("/opt/rocm-7.2.4/.info/version", "7.2.4-93\n");
    r.package(
        "hsa-rocr",
        "1.18.0.70204-93~24.04",
        &[&format!("{lib}/libhsa-runtime64.so.1.18.0")],
        "",
    );
    r.package(
        "hip-runtime-amd7.2.4",
        "7.2.53211.70204-93~24.04",
        &[
            &format!("{lib}/libamdhip64.so.7.2.70204"),
            &format!("{lib}/libhiprtc.so.7.2.70204"),
        ],
        "",
    );
    let d = r.discover();
    assert_eq!(d.runtimes.len(), 1, "{d:#?}");
    let rt = &d.runtimes[0];
    assert_eq!(rt.flavour, StockFlavour::Amd);
    assert_eq!(rt.release.as_deref(), Some("7.2.4-93"));
    assert_eq!(rt.release_from, "/opt/rocm-7.2.4/.info/version");
    assert_eq!(
        names(rt),
        vec![("hsa-rocr", Half::Hsa), ("hip-runtime-amd7.2.4", Half::Hip)]
    );
    assert_eq!(rt.packages[1].libraries.len(), 2);
    // Without the version file the release comes from the stock version's release component.
    std::fs::remove_file(r.host("/opt/rocm-7.2.4/.info/version")).unwrap();
    let rt = &r.discover().runtimes[0];
    assert_eq!(rt.release.as_deref(), Some("7.2.4"));
    assert_eq!(rt.release_from, "the package versions");
}

#[test]
fn names_alone_prove_nothing_and_unknown_owners_are_reported() {
    let mut r = FakeRoot::new();
    // Right name, but the file is not an ELF library.
    let fake = format!("{TRIPLET_DIR}/libamdhip64.so.7.2.1");
    r.text(&fake, "not an ELF file");
    r.package("libamdhip64-7", "7.2.4-1~exp2", &[&fake], "");
    // A real libhsa-runtime64.so.1 owned by a package no flavour names.
    let odd = format!("{TRIPLET_DIR}/libhsa-runtime64.so.1.9.9");
    r.elf(&odd, "libhsa-runtime64.so.1");
    r.package("vendor-rocr", "1.0-1", &[&odd], "");
    // A file named like a family whose SONAME is another library's.
    let misnamed = format!("{TRIPLET_DIR}/libhiprtc.so.7.0.0");
    r.elf(&misnamed, "libfoo.so.1");
    r.package("libhiprtc7", "7.2.4-1~exp2", &[&misnamed], "");
    let d = r.discover();
    assert!(d.runtimes.is_empty(), "{d:#?}");
    assert_eq!(d.unrecognised.len(), 1, "{d:#?}");
    assert!(
        d.unrecognised[0].contains("vendor-rocr")
            && d.unrecognised[0].contains("libhsa-runtime64.so.1"),
        "{:?}",
        d.unrecognised
    );
}

#[test]
fn ours_are_not_stock_and_mixed_releases_stay_apart() {
    let mut r = FakeRoot::new();
    let hsa = format!("{TRIPLET_DIR}/libhsa-runtime64.so.1.15.0");
    r.elf(&hsa, "libhsa-runtime64.so.1");
    r.package("libhsa-runtime64-1", "6.4.3+dfsg-5", &[&hsa], "");
    let hip = format!("{TRIPLET_DIR}/libamdhip64.so.7.2.53211");
    r.elf(&hip, "libamdhip64.so.7");
    r.package("libamdhip64-7", "7.2.4-1~exp2", &[&hip], "");
    r.package(
        "libamdhip64-7-pinned",
        "7.2.4-1~exp2+pin1",
        &[&hip],
        "X-Rocm-Pin-Commit: b539bf7eebfd99ad0a69668caa1f4037034d501f\n",
    );
    let d = r.discover();
    let releases: Vec<(Option<&str>, Vec<&str>, bool)> = d
        .runtimes
        .iter()
        .map(|rt| {
            (
                rt.release.as_deref(),
                rt.packages.iter().map(|p| p.package.as_str()).collect(),
                rt.is_complete(),
            )
        })
        .collect();
    assert_eq!(
        releases,
        vec![
            (Some("6.4.3"), vec!["libhsa-runtime64-1"], false),
            (Some("7.2.4"), vec!["libamdhip64-7"], false),
        ]
    );
}

#[test]
fn a_link_in_the_root_cannot_lead_discovery_outside_it() {
    // A real library outside the root, and a root whose multiarch directory is an absolute
    // link to it: followed on the host, discovery would report it.
    let outside = tempfile::tempdir().unwrap();
    build_so(
        &outside.path().join("libamdhip64.so.7.2.53211"),
        "libamdhip64.so.7",
    );
    let mut r = FakeRoot::new();
    r.symlink(outside.path().to_str().unwrap(), TRIPLET_DIR);
    let hip = format!("{TRIPLET_DIR}/libamdhip64.so.7.2.53211");
    r.package("libamdhip64-7", "7.2.4-1~exp2", &[&hip], "");
    assert!(
        outside.path().join("libamdhip64.so.7.2.53211").is_file() && r.host(&hip).is_file(),
        "the host path leads outside: the test would prove nothing otherwise"
    );
    let d = r.discover();
    assert!(d.runtimes.is_empty(), "read outside the root: {d:#?}");
}

#[test]
fn a_name_of_one_flavour_in_the_other_flavours_directory_is_kept_and_reported() {
    let mut r = FakeRoot::new();
    let hsa = format!("{TRIPLET_DIR}/libhsa-runtime64.so.1.18.0");
    r.elf(&hsa, "libhsa-runtime64.so.1");
    r.package("hsa-rocr", "1.18.0.70204-93~24.04", &[&hsa], "");
    let d = r.discover();
    assert_eq!(d.runtimes.len(), 1, "{d:#?}");
    assert_eq!(d.runtimes[0].flavour, StockFlavour::Amd);
    assert_eq!(d.runtimes[0].release.as_deref(), Some("7.2.4"));
    assert_eq!(d.runtimes[0].library_dirs, vec![TRIPLET_DIR.to_string()]);
    assert_eq!(d.unrecognised.len(), 1, "{d:#?}");
    assert!(
        d.unrecognised[0].contains("hsa-rocr") && d.unrecognised[0].contains("Debian's packaging"),
        "{:?}",
        d.unrecognised
    );
}
