//! `rocm-pin package --family rccl` (issue 34): a custom RCCL given as the .debs its own CPack
//! build made (`cpack -G DEB` of a small CMake project with RCCL's names, SONAME and exports,
//! run here) turned into the pinned replacement of the stand-in's stock `rccl`, and the
//! refusals of what `--from-deb` cannot prove. Versions come from the stand-in's facts.

use rocm_pin_testkit::assert_says;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;
use rocm_pin_kit::standin::StockRole;
pub(crate) use rocm_pin_testkit::cpack::{cpack_rccl, CpackRccl};

/// `rocm-pin package --family rccl --from-deb <debs> --stock-deb <stock> …` into `out`.
fn package_from_debs(custom: &[&Path], stock: &[PathBuf], out: &Path) -> std::process::Output {
    let mut cmd = rocm_pin();
    cmd.args(["package", "--family", "rccl", "--from-deb"])
        .args(custom)
        .arg("--stock-deb")
        .args(stock)
        .args(commit_args())
        .arg("--out")
        .arg(out);
    cmd.output().expect("run rocm-pin package")
}

#[test]
fn a_cpack_built_rccl_becomes_the_pinned_replacement_of_amds_rccl() {
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let rccl = set.require(StockRole::Rccl).unwrap().clone();
    let (custom, custom_dev) = cpack_rccl(
        &w.join("cpack"),
        &CpackRccl {
            soname_major: 1,
            architecture: None,
            identity: "rccl-CPACK-1",
        },
    );
    // CPack named it like the stock package: the collision the seed's dpkg -i --force-all hit.
    assert_eq!(field(&custom, "Package"), rccl.name);

    let out = w.join("out");
    let res = package_from_debs(&[&custom, &custom_dev], &set.debs(), &out);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "package failed: {stderr}");
    let built = debs_in(&out);
    assert_eq!(built.len(), 1, "one replacement, for rccl only: {built:?}");
    let deb = &built[0];
    let ours = format!("{}-pinned", rccl.name);
    assert_eq!(field(deb, "Package"), ours);
    let version = field(deb, "Version");
    assert!(
        version.starts_with(&format!("{}+pin{COMMIT_TIME}.g", rccl.version)),
        "{version}"
    );
    assert_eq!(field(deb, "Protected"), "yes");
    assert_eq!(field(deb, "Architecture"), rccl.architecture);
    let exact = format!("{} (= {})", rccl.name, rccl.version);
    assert!(
        field(deb, "Provides").contains(&exact),
        "{}",
        field(deb, "Provides")
    );
    for f in ["Conflicts", "Replaces"] {
        assert!(field(deb, f).contains(&rccl.name), "{f}: {}", field(deb, f));
    }
    assert_eq!(field(deb, "X-Rocm-Pin-Commit"), COMMIT);
    assert_eq!(field(deb, "X-Rocm-Pin-Family"), "rccl");
    // AMD's packaging: no Multi-Arch, and our own loader entry (the stock hsa-rocr's may go).
    assert!(
        !Command::new("dpkg-deb")
            .args(["-f"])
            .arg(deb)
            .output()
            .unwrap()
            .stdout
            .windows(10)
            .any(|w| w == b"Multi-Arch"),
        "AMD's flavour is not Multi-Arch"
    );

    // Every stock path is shipped, the library itself rebuilt from the CPack .deb.
    let listed = contents(deb);
    for stock_path in &rccl.files {
        assert!(
            listed.iter().any(|(_, p, _)| p == stock_path),
            "stock {stock_path} of {} is not in {ours}: {listed:?}",
            rccl.name
        );
    }
    let x = tempfile::tempdir().unwrap();
    must(Command::new("dpkg-deb").arg("-x").arg(deb).arg(x.path()));
    let soname_path = x
        .path()
        .join(format!("{PREFIX}/lib/librccl.so.1").trim_start_matches('/'));
    let lib = std::fs::read(&soname_path).unwrap();
    assert!(
        lib.windows(12).any(|w| w == b"rccl-CPACK-1"),
        "the loader's librccl.so.1 is the CPack build"
    );
    // The apt pin keeps the stock rccl out.
    let pin = std::fs::read_to_string(x.path().join("etc/apt/preferences.d").join(&ours)).unwrap();
    assert_says(
        &pin,
        &[&format!(
            "Package: {}\nPin: version *\nPin-Priority: -1",
            rccl.name
        )],
    );
    // The provenance record: RCCL's own marker, naming the CPack .debs by sha256.
    let marker: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            x.path()
                .join(format!("{PREFIX}/.info/rocm-pin-rccl.json").trim_start_matches('/')),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(marker["commit"], COMMIT);
    assert_eq!(marker["replaced"][0]["stock_name"], rccl.name.as_str());
    let source = marker["source"].as_str().unwrap();
    let custom_name = custom.file_name().unwrap().to_str().unwrap();
    assert!(
        source.contains(custom_name) && source.contains("sha256"),
        "{}",
        source
    );
    assert!(
        !x.path()
            .join(format!("{PREFIX}/.info/rocm-pin.json").trim_start_matches('/'))
            .exists(),
        "RCCL never writes the pair's marker"
    );
    // The headers of rccl-dev stay with the stock rccl-dev: said, not packaged.
    assert_says(&stderr, &["not packaged"]);
    assert!(
        !listed.iter().any(|(_, p, _)| p.contains("/include/")),
        "{listed:?}"
    );
}

/// One line on stderr, non-zero exit, nothing written to --out.
fn assert_refused(res: &std::process::Output, out: &Path, says: &str) {
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(!res.status.success(), "must refuse: {stderr}");
    assert!(stderr.contains(says), "expected {says:?} in: {stderr}");
    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.contains(says)).collect();
    assert_eq!(error_lines.len(), 1, "one clear line: {stderr}");
    assert!(!out.exists() || debs_in(out).is_empty(), "nothing written");
}

/// A custom RCCL that `--from-deb` cannot prove replaces the stock one: its CPack build, whether
/// the dev .deb alone is given, whether the stock .debs given hold the stock rccl, and what the
/// one-line refusal says (the first phrase on that line).
struct Unprovable {
    cpack: CpackRccl,
    dev_deb_alone: bool,
    stock_has_rccl: bool,
    says: &'static [&'static str],
}

/// A CPack build of RCCL with this SONAME major, architecture and identity.
const fn cpack(soname_major: u32, arch: Option<&'static str>, identity: &'static str) -> CpackRccl {
    CpackRccl {
        soname_major,
        architecture: arch,
        identity,
    }
}

/// The arm64 build (a foreign architecture here).
const ARM64: CpackRccl = cpack(1, Some("arm64"), "rccl-CPACK-arm");

const UNPROVABLE: &[Unprovable] = &[
    // A .deb whose library has another SONAME does not cover the stock librccl.so.1.
    Unprovable {
        cpack: cpack(2, None, "rccl-CPACK-2"),
        dev_deb_alone: false,
        stock_has_rccl: true,
        says: &["do not cover the stock SONAMEs", "librccl.so.1"],
    },
    // A foreign architecture.
    Unprovable {
        cpack: ARM64,
        dev_deb_alone: false,
        stock_has_rccl: true,
        says: &["foreign-architecture"],
    },
    // No stock set: the stock .debs given hold no rccl.
    Unprovable {
        cpack: ARM64,
        dev_deb_alone: false,
        stock_has_rccl: false,
        says: &["no stock rccl found"],
    },
    // The .debs hold no library of the family at all (the dev .deb alone).
    Unprovable {
        cpack: cpack(1, None, "rccl-CPACK-dev"),
        dev_deb_alone: true,
        stock_has_rccl: true,
        says: &["hold no rccl shared library"],
    },
];

#[test]
fn from_deb_refuses_what_it_cannot_prove() {
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let out = w.join("out");
    for (i, case) in UNPROVABLE.iter().enumerate() {
        let (runtime, dev) = cpack_rccl(&w.join(format!("cpack-{i}")), &case.cpack);
        let custom = if case.dev_deb_alone {
            let dev_libs: Vec<String> = contents(&dev)
                .into_iter()
                .map(|(_, p, _)| p)
                .filter(|p| p.contains("librccl.so.1"))
                .collect();
            assert!(
                dev_libs.is_empty(),
                "the dev .deb has no runtime library: {dev_libs:?}"
            );
            dev
        } else {
            runtime
        };
        let stock = if case.stock_has_rccl {
            set.debs()
        } else {
            vec![set.require(StockRole::HsaRocr).unwrap().deb.clone()]
        };
        let res = package_from_debs(&[&custom], &stock, &out);
        assert_refused(&res, &out, case.says[0]);
        for phrase in &case.says[1..] {
            assert!(
                String::from_utf8_lossy(&res.stderr).contains(phrase),
                "row {i}: expected {phrase:?}"
            );
        }
    }
}

/// Debian's packaging of RCCL, shaped like sid's `librccl1` (Multi-Arch: same, the library in
/// the multiarch directory, `shlibs` and `symbols` naming itself, the ldconfig trigger, no
/// maintainer scripts) and `librccl-dev` (the dev link, `Depends: librccl1 (= <version>)`),
/// around a gcc-built librccl.so.1 with the stand-in's exports, and `librccl1-tests`
/// (`Depends: librccl1 (= <version>)`, like sid's). Returns (librccl1, librccl-dev,
/// librccl1-tests). The real 7.2.4 (369 MB) is the criterion-3 test's input, not this one's.
pub(crate) fn debian_librccl(dir: &Path, version: &str) -> (PathBuf, PathBuf, PathBuf) {
    let arch = must_stdout(Command::new("dpkg").arg("--print-architecture"))
        .trim()
        .to_string();
    let triplet = must_stdout(Command::new("gcc").arg("-print-multiarch"))
        .trim()
        .to_string();
    let lib_dir = format!("usr/lib/{triplet}");
    fn put(path: PathBuf, text: impl AsRef<[u8]>) {
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    put(src.join("rccl.c"), "int ncclGetVersion(int *v) { *v = 22704; return 0; }\n\
         int ncclCommInitRank(void *c, int n, int id, int r) { (void)c; (void)n; (void)id; (void)r; return 0; }\n");
    put(
        src.join("rccl.map"),
        "RCCL_2 {\n  global:\n    ncclGetVersion;\n    ncclCommInitRank;\n  local: *;\n};\n",
    );
    let runtime = dir.join("librccl1");
    std::fs::create_dir_all(runtime.join(&lib_dir)).unwrap();
    std::fs::create_dir_all(runtime.join("DEBIAN")).unwrap();
    must(
        Command::new("gcc")
            .args(["-shared", "-fPIC", "-Wl,-soname,librccl.so.1"])
            .arg(format!(
                "-Wl,--version-script={}",
                src.join("rccl.map").display()
            ))
            .arg("-o")
            .arg(runtime.join(&lib_dir).join("librccl.so.1.0"))
            .arg(src.join("rccl.c")),
    );
    std::os::unix::fs::symlink(
        "librccl.so.1.0",
        runtime.join(&lib_dir).join("librccl.so.1"),
    )
    .unwrap();
    let upstream = version.split('-').next().unwrap();
    put(
        runtime.join("DEBIAN/shlibs"),
        format!("librccl 1 librccl1 (>= {upstream})\n"),
    );
    put(runtime.join("DEBIAN/symbols"), format!(
            "librccl.so.1 librccl1 #MINVER#\n* Build-Depends-Package: librccl-dev\n \
             RCCL_2@RCCL_2 {upstream}\n ncclCommInitRank@RCCL_2 {upstream}\n ncclGetVersion@RCCL_2 {upstream}\n"
        ));
    put(
        runtime.join("DEBIAN/triggers"),
        "# Triggers added by dh_makeshlibs\nactivate-noawait ldconfig\n",
    );
    let dev = dir.join("librccl-dev");
    std::fs::create_dir_all(dev.join(&lib_dir)).unwrap();
    std::os::unix::fs::symlink("librccl.so.1", dev.join(&lib_dir).join("librccl.so")).unwrap();
    let tests = dir.join("librccl1-tests");
    std::fs::create_dir_all(tests.join("usr/share/doc/librccl1-tests")).unwrap();
    put(
        tests.join("usr/share/doc/librccl1-tests/README"),
        "Debian-shaped stand-in for librccl1-tests.\n",
    );
    let out = |name: &str| dir.join(format!("{name}_{version}_{arch}.deb"));
    for (name, section, multi_arch, depends, what) in DEBIAN_RCCL {
        let tree = dir.join(name);
        std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
        let multi_arch = if *multi_arch {
            "Multi-Arch: same\n"
        } else {
            ""
        };
        let depends = depends.replace("{version}", version);
        put(
            tree.join("DEBIAN/control"),
            format!(
                "Package: {name}\nSource: rccl\nVersion: {version}\nArchitecture: {arch}\n\
                 Maintainer: Debian ROCm Team <debian-ai@lists.debian.org>\n{multi_arch}\
                 Depends: {depends}\nSection: {section}\nPriority: optional\n\
                 Description: ROCm Communication Collectives Library{what}\n RCCL, Debian-shaped.\n"
            ),
        );
        must(
            Command::new("dpkg-deb")
                .args(["--root-owner-group", "-b"])
                .arg(&tree)
                .arg(out(name)),
        );
    }
    (out("librccl1"), out("librccl-dev"), out("librccl1-tests"))
}

/// Debian's rccl source packages as [`debian_librccl`] shapes them: (Package, Section,
/// Multi-Arch: same?, Depends with `{version}`, the description's tail).
const DEBIAN_RCCL: &[(&str, &str, bool, &str, &str)] = &[
    ("librccl1", "libs", true, "libc6", ""),
    (
        "librccl-dev",
        "libdevel",
        true,
        "librccl1 (= {version})",
        " - headers",
    ),
    (
        "librccl1-tests",
        "libs",
        false,
        "librccl1 (= {version})",
        " - tests",
    ),
];

#[test]
fn a_cpack_built_rccl_replaces_debians_librccl1_as_a_debian_library_package() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let version = "7.2.4-1~exp3";
    let (librccl1, librccl_dev, _) = debian_librccl(&w.join("debian"), version);
    let (custom, _) = cpack_rccl(
        &w.join("cpack"),
        &CpackRccl {
            soname_major: 1,
            architecture: None,
            identity: "rccl-CPACK-deb",
        },
    );
    let out = w.join("out");
    let res = package_from_debs(&[&custom], &[librccl1.clone(), librccl_dev], &out);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "package failed: {stderr}");
    let built = debs_in(&out);
    assert_eq!(
        built.len(),
        1,
        "librccl1 only; librccl-dev stays: {built:?}"
    );
    let deb = &built[0];
    assert_eq!(field(deb, "Package"), "librccl1-pinned");
    assert_eq!(field(deb, "Multi-Arch"), "same");
    assert_eq!(field(deb, "Protected"), "yes");
    assert!(field(deb, "Provides").contains(&format!("librccl1 (= {version})")));
    for f in ["Conflicts", "Replaces"] {
        assert!(field(deb, f).contains("librccl1"), "{f}: {}", field(deb, f));
    }
    let members = must_stdout(
        Command::new("sh")
            .arg("-c")
            .arg("dpkg-deb --ctrl-tarfile \"$1\" | tar t")
            .arg("sh")
            .arg(deb),
    );
    for m in ["shlibs", "symbols", "triggers"] {
        assert!(members.contains(&format!("./{m}")), "no {m}: {members}");
    }
    for script in ["preinst", "postinst", "postrm"] {
        assert!(
            !members.contains(&format!("./{script}")),
            "{script}: {members}"
        );
    }
    let member = |m: &str| {
        must_stdout(
            Command::new("sh")
                .arg("-c")
                .arg("dpkg-deb --ctrl-tarfile \"$1\" | tar xO \"./$2\"")
                .arg("sh")
                .arg(deb)
                .arg(m),
        )
    };
    // The dependency templates keep naming the stock package; only ours' own symbols (the
    // identity marker) select our package.
    assert!(
        member("shlibs").contains("librccl1 (>= 7.2.4)"),
        "{}",
        member("shlibs")
    );
    let symbols = member("symbols");
    assert!(
        symbols.starts_with("librccl.so.1 librccl1 #MINVER#\n| librccl1-pinned #MINVER#\n"),
        "{symbols}"
    );
    assert_says(
        &symbols,
        &[
            " ncclGetVersion@RCCL_2 7.2.4\n",
            " rocm_pin_identity@RCCL_2 ",
        ],
    );
    // One file per SONAME in the multiarch directory: ours takes the stock file's name, and
    // the marker goes where a prefix-less flavour keeps RCCL's.
    let listed = contents(deb);
    let triplet = must_stdout(Command::new("gcc").arg("-print-multiarch"))
        .trim()
        .to_string();
    let real = format!("/usr/lib/{triplet}/librccl.so.1.0");
    assert!(
        listed.iter().any(|(k, p, _)| *k == '-' && *p == real),
        "{listed:?}"
    );
    assert!(
        listed.iter().any(|(k, p, l)| *k == 'l'
            && p.ends_with("/librccl.so.1")
            && l.contains("librccl.so.1.0")),
        "{listed:?}"
    );
    let arch = field(deb, "Architecture");
    assert!(
        listed
            .iter()
            .any(|(_, p, _)| *p == format!("/var/lib/rocm-pin/marker/rccl/{arch}.json")),
        "{listed:?}"
    );
    assert!(
        !listed.iter().any(|(_, p, _)| p.starts_with("/opt")),
        "{listed:?}"
    );
}
