//! `verify` on a hand-made installed root: gcc-built libraries, a dpkg status database with
//! our two packages, md5sums, the marker, pins, the loader entry and a real ld.so cache made
//! by `ldconfig -r`. Then each tamper must fail and name its check. The chroot acceptance
//! tests (tests/install/) cover the same with real apt/dpkg; this one is fast and
//! isolates verify's own logic.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use md5::Digest;
use rocm_pin_core::ops::verify::{verify, VerifyOptions, VerifyReport};
use rocm_pin_core::rocm::{Marker, MarkerLibrary, ReplacedPackage};
use rocm_pin_testkit::staging::COMMIT;

const PREFIX: &str = "/opt/rocm-7.2.4";
const HSA: &str = "hsa-rocr-pinned";
const HIP: &str = "hip-runtime-amd-pinned";
const HSA_VER: &str = "1.18.0.70204-93~24.04+pin1764720000.gb539bf7";
const HIP_VER: &str = "7.2.53211.70204-93~24.04+pin1764720000.gb539bf7";

fn gcc_lib(dir: &Path, name: &str, soname: &str, src: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let out = dir.join(name);
    let st = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&c)
        .arg(format!("-Wl,-soname,{soname}"))
        .status()
        .expect("gcc must be installed (see .ci/run)");
    assert!(st.success(), "gcc failed for {name}");
    out
}

pub(crate) struct Built {
    hsa: PathBuf,
    hsa_stock: PathBuf,
    hip: PathBuf,
    _dir: tempfile::TempDir,
}

pub(crate) fn build_libs() -> Built {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hsa = gcc_lib(
        d,
        "hsa.so",
        "libhsa-runtime64.so.1",
        "const char *rocm_pin_identity(void){return \"hsa-PATCHED\";}\nint hsa_amd_signal_create_v2(void){return 0;}\n",
    );
    let hsa_stock = gcc_lib(
        d,
        "hsa-stock.so",
        "libhsa-runtime64.so.1",
        "const char *rocm_pin_identity(void){return \"hsa-STOCK\";}\n",
    );
    let hip = gcc_lib(
        d,
        "hip.so",
        "libamdhip64.so.7",
        "const char *rocm_pin_identity(void){return \"hip-PATCHED\";}\n",
    );
    Built {
        hsa,
        hsa_stock,
        hip,
        _dir: dir,
    }
}

pub(crate) fn md5_hex(p: &Path) -> String {
    hex::encode(md5::Md5::digest(std::fs::read(p).unwrap()))
}
pub(crate) fn sha_hex(p: &Path) -> String {
    hex::encode(sha2::Sha256::digest(std::fs::read(p).unwrap()))
}
pub(crate) fn host(root: &Path, p: &str) -> PathBuf {
    root.join(p.trim_start_matches('/'))
}
fn write(root: &Path, p: &str, content: &[u8]) {
    let h = host(root, p);
    std::fs::create_dir_all(h.parent().unwrap()).unwrap();
    std::fs::write(h, content).unwrap();
}

fn ldconfig(root: &Path) {
    let st = Command::new("ldconfig")
        .arg("-r")
        .arg(root)
        .status()
        .unwrap();
    assert!(st.success(), "ldconfig -r {} failed", root.display());
}

/// One half of the pair as `rocm-pin install` leaves it: our package in place of a stock one.
struct Half {
    package: &'static str,
    version: &'static str,
    stock: &'static str,
    stock_version: &'static str,
    /// The library the test built for it.
    built: fn(&Built) -> &PathBuf,
    /// Under `PREFIX/lib`: the real file, its alias (a hard link), the SONAME link to the real
    /// file and the development link to the SONAME.
    real: &'static str,
    alias: &'static str,
    soname: &'static str,
    dev_link: &'static str,
    /// Files the .deb ships that path-exclude keeps off the disk (besides the copyright).
    excluded_docs: &'static [&'static str],
    /// The package that ships the marker (and the loader entry).
    ships_marker: bool,
}

const PAIR: [Half; 2] = [
    Half {
        package: HSA,
        version: HSA_VER,
        stock: "hsa-rocr",
        stock_version: "1.18.0.70204-93~24.04",
        built: |b| &b.hsa,
        real: "libhsa-runtime64.so.1.18.0",
        alias: "libhsa-runtime64.so.1.18.70204",
        soname: "libhsa-runtime64.so.1",
        dev_link: "libhsa-runtime64.so",
        excluded_docs: &["changelog.Debian.gz"],
        ships_marker: true,
    },
    Half {
        package: HIP,
        version: HIP_VER,
        stock: "hip-runtime-amd",
        stock_version: "7.2.53211.70204-93~24.04",
        built: |b| &b.hip,
        real: "libamdhip64.so.7.2.53211-b539bf7",
        alias: "libamdhip64.so.7.2.70204",
        soname: "libamdhip64.so.7",
        dev_link: "libamdhip64.so",
        excluded_docs: &[],
        ships_marker: false,
    },
];

impl Half {
    /// The files its md5sums covers: the libraries and the documentation.
    fn files(&self) -> Vec<String> {
        let lib = format!("{PREFIX}/lib");
        let doc = format!("/usr/share/doc/{}", self.package);
        let mut files = vec![
            format!("{lib}/{}", self.real),
            format!("{lib}/{}", self.alias),
            format!("{doc}/copyright"),
        ];
        files.extend(self.excluded_docs.iter().map(|f| format!("{doc}/{f}")));
        files
    }

    fn marker_library(&self, r: &Path) -> MarkerLibrary {
        let real = format!("{PREFIX}/lib/{}", self.real);
        MarkerLibrary {
            sha256: sha_hex(&host(r, &real)),
            path: real,
            soname: self.soname.into(),
            aliases: vec![format!("{PREFIX}/lib/{}", self.alias)],
            package: self.package.into(),
        }
    }

    /// Its paragraph of the dpkg status database.
    fn status(&self) -> String {
        let (name, stock) = (self.package, self.stock);
        format!(
            "Package: {name}\nStatus: install ok installed\nProtected: yes\nPriority: optional\nArchitecture: amd64\nVersion: {}\nProvides: {stock} (= {})\nConflicts: {stock}\nReplaces: {stock}\nConffiles:\n /etc/apt/preferences.d/{name} 00000000000000000000000000000000\nDescription: patched\n multi-line\nX-Rocm-Pin-Commit: {COMMIT}\n",
            self.version, self.stock_version
        )
    }
}

/// A root as `rocm-pin install` leaves it: each half of [`PAIR`] laid out the same way.
pub(crate) fn make_root(b: &Built) -> tempfile::TempDir {
    assert!(
        unsafe { libc::geteuid() } == 0,
        "verify_fake_root needs root (ldconfig -r chroots); CI runs as root"
    );
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let lib = format!("{PREFIX}/lib");
    std::fs::create_dir_all(host(r, &lib)).unwrap();
    for half in &PAIR {
        let real = host(r, &format!("{lib}/{}", half.real));
        std::fs::copy((half.built)(b), &real).unwrap();
        std::fs::hard_link(&real, host(r, &format!("{lib}/{}", half.alias))).unwrap();
        symlink(half.real, host(r, &format!("{lib}/{}", half.soname))).unwrap();
        symlink(half.soname, host(r, &format!("{lib}/{}", half.dev_link))).unwrap();
        let pin = format!(
            "Explanation: rocm-pin\nPackage: {}\nPin: version *\nPin-Priority: -1\n",
            half.stock
        );
        write(
            r,
            &format!("/etc/apt/preferences.d/{}", half.package),
            pin.as_bytes(),
        );
        write(
            r,
            &format!("/usr/share/doc/{}/copyright", half.package),
            b"copyright\n",
        );
    }
    write(r, "/etc/ld.so.conf", b"include /etc/ld.so.conf.d/*.conf\n");
    write(r, "/etc/ld.so.conf.d/libc.conf", b"/usr/local/lib\n");
    write(
        r,
        &format!("/etc/ld.so.conf.d/{HSA}.conf"),
        format!("{lib}\n").as_bytes(),
    );
    write(
        r,
        "/etc/dpkg/dpkg.cfg.d/excludes",
        b"path-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n",
    );
    std::fs::create_dir_all(host(r, "/usr/local/lib")).unwrap();

    let marker_path = write_marker(r);
    write(r, &format!("{PREFIX}/.info/version"), b"7.2.4-93\n");

    let info = "/var/lib/dpkg/info";
    for half in &PAIR {
        let files = half.files();
        let md5sums: String = files
            .iter()
            .map(|f| {
                let h = host(r, f);
                let m = if h.exists() {
                    md5_hex(&h)
                } else {
                    "d41d8cd98f00b204e9800998ecf8427e".into()
                };
                format!("{m}  {}\n", f.trim_start_matches('/'))
            })
            .collect();
        let mut list = files;
        list.extend([
            format!("{lib}/{}", half.soname),
            format!("{lib}/{}", half.dev_link),
        ]);
        if half.ships_marker {
            list.push(marker_path.clone());
        }
        list.push(format!("/etc/apt/preferences.d/{}", half.package));
        write(
            r,
            &format!("{info}/{}.md5sums", half.package),
            md5sums.as_bytes(),
        );
        write(
            r,
            &format!("{info}/{}.list", half.package),
            list.join("\n").as_bytes(),
        );
    }
    let status = format!(
        "{}\n{}\nPackage: hsa-rocr\nStatus: deinstall ok config-files\nArchitecture: amd64\nVersion: 1.18.0.70204-93~24.04\n",
        PAIR[0].status(),
        PAIR[1].status()
    );
    write(r, "/var/lib/dpkg/status", status.as_bytes());
    ldconfig(r);
    dir
}

/// The marker of [`PAIR`] in the root `r` (its files hashed as they are there; one excluded by
/// path-exclude has the hash of what the .deb held): its path.
fn write_marker(r: &Path) -> String {
    let mut files = BTreeMap::new();
    for f in PAIR.iter().flat_map(Half::files) {
        let h = host(r, &f);
        let sha = if h.exists() {
            sha_hex(&h)
        } else {
            "0".repeat(64)
        };
        files.insert(f, sha);
    }
    let marker = Marker {
        commit: COMMIT.into(),
        commit_time: 1764720000,
        suffix: "pinned".into(),
        prefix: PREFIX.into(),
        replaced: PAIR
            .iter()
            .map(|half| ReplacedPackage {
                stock_name: half.stock.into(),
                stock_version: half.stock_version.into(),
                architecture: "amd64".into(),
                package: half.package.into(),
                version: half.version.into(),
            })
            .collect(),
        libraries: PAIR.iter().map(|half| half.marker_library(r)).collect(),
        files,
        tool_version: "test".into(),
        patches: vec![],
        backport_check_skipped: false,
        missing_symbols: Default::default(),
        source: None,
    };
    let marker_path = format!("{PREFIX}/.info/rocm-pin.json");
    write(
        r,
        &marker_path,
        serde_json::to_string_pretty(&marker).unwrap().as_bytes(),
    );
    marker_path
}

fn run(root: &Path) -> VerifyReport {
    verify(&VerifyOptions {
        root: rocm_pin_core::host::root::Root::new(root),
        ld_library_path: None,
        ask_apt: false,
        accept_skipped_backport_check: false,
        consumers: Vec::new(),
    })
    .unwrap()
}

fn failed_names(rep: &VerifyReport) -> Vec<String> {
    let mut v: Vec<String> = rep.failed().map(|c| c.name.clone()).collect();
    v.dedup();
    v
}

#[track_caller]
fn assert_fails(rep: &VerifyReport, name: &str) {
    assert!(
        !rep.ok,
        "verify passed but should fail {name}:\n{}",
        rep.to_human()
    );
    assert_eq!(rep.exit_code(), 1);
    assert!(
        rep.failed().any(|c| c.name == name),
        "expected a failed {name} check, got {:?}:\n{}",
        failed_names(rep),
        rep.to_human()
    );
}

/// One tamper of a fake installed root and what verify must then say: one row per way the
/// install can be broken (or left alone on purpose).
struct Tamper {
    what: &'static str,
    apply: fn(&Path, &Built),
    /// `LD_LIBRARY_PATH` verify is run with.
    ld_library_path: Option<&'static str>,
    /// The exit code: 0 (passes), 1 (each of `fails` failed), 3 (a skip record).
    exit: i32,
    fails: &'static [&'static str],
    /// Checks that must not fail.
    holds: &'static [&'static str],
    /// (check, phrase): the failed check's detail says it ("" = the human report says it).
    says: &'static [(&'static str, &'static str)],
}

const LIB: &str = "/opt/rocm-7.2.4/lib";

const TAMPERS: &[Tamper] = &[
    Tamper {
        what: "nothing: a clean install, the excluded doc file absent by design",
        apply: |_, _| {},
        says: &[("", "absent by dpkg path-exclude"), ("", "= ours")],
        ..PASSES
    },
    Tamper {
        what: "the library overwritten in place with stock content (the seed's method)",
        apply: |r, b| {
            copy(
                &b.hsa_stock,
                &host(r, &format!("{LIB}/libhsa-runtime64.so.1.18.0")),
            )
        },
        fails: &["files", "backport-symbol"],
        ..FAILS
    },
    Tamper {
        what: "truncated to 0 bytes",
        apply: |r, _| {
            let real = host(r, &format!("{LIB}/libamdhip64.so.7.2.53211-b539bf7"));
            std::fs::File::create(&real).unwrap();
            assert_eq!(std::fs::metadata(&real).unwrap().len(), 0);
        },
        fails: &["files", "sonames"],
        ..FAILS
    },
    Tamper {
        what: "the soname symlink dangling",
        apply: |r, _| {
            let link = host(r, &format!("{LIB}/libamdhip64.so.7"));
            std::fs::remove_file(&link).unwrap();
            symlink("libamdhip64.so.7.9.9", &link).unwrap();
            assert!(
                std::fs::metadata(&link).is_err(),
                "tamper: link must dangle"
            );
        },
        fails: &["sonames", "symlinks"],
        ..FAILS
    },
    Tamper {
        what: "the alias hard link replaced by a same-content copy (fails only the alias check)",
        apply: |r, _| {
            let alias = host(r, &format!("{LIB}/libamdhip64.so.7.2.70204"));
            let bytes = std::fs::read(&alias).unwrap();
            std::fs::remove_file(&alias).unwrap();
            std::fs::write(&alias, bytes).unwrap();
        },
        fails: &["aliases"],
        holds: &["files"],
        ..FAILS
    },
    Tamper {
        what: "the pin file removed",
        apply: |r, _| remove(r, &format!("/etc/apt/preferences.d/{HIP}")),
        fails: &["pin-file"],
        ..FAILS
    },
    Tamper {
        what: "the marker removed",
        apply: |r, _| remove(r, &format!("{PREFIX}/.info/rocm-pin.json")),
        fails: &["marker"],
        ..FAILS
    },
    Tamper {
        what: "the marker's commit edited",
        apply: |r, _| {
            edit(
                r,
                &format!("{PREFIX}/.info/rocm-pin.json"),
                COMMIT,
                &"0".repeat(40),
                None,
            )
        },
        fails: &["marker-commit"],
        ..FAILS
    },
    Tamper {
        what: "the loader entry removed and ldconfig run",
        apply: |r, _| {
            remove(r, &format!("/etc/ld.so.conf.d/{HSA}.conf"));
            ldconfig(r);
        },
        fails: &["loader-entry", "loader"],
        ..FAILS
    },
    Tamper {
        what: "a stock package installed next to ours",
        apply: |r, _| {
            edit(
                r,
                "/var/lib/dpkg/status",
                "deinstall ok config-files",
                "install ok installed",
                None,
            )
        },
        fails: &["stock-absent"],
        ..FAILS
    },
    Tamper {
        what: "a package that lost Protected: yes",
        apply: |r, _| edit(r, "/var/lib/dpkg/status", "Protected: yes\n", "", Some(1)),
        fails: &["packages"],
        ..FAILS
    },
    Tamper {
        what: "a same-named library in /usr/local/lib (libc.conf sorts after our entry: ours wins)",
        apply: stock_in_usr_local,
        says: &[("", "also found: /usr/local/lib/libhsa-runtime64.so.1")],
        ..PASSES
    },
    Tamper {
        what: "… and in another prefix the loader finds first",
        apply: |r, b| {
            stock_in_usr_local(r, b);
            write(
                r,
                "/etc/ld.so.conf.d/000-other-rocm.conf",
                b"/opt/other/lib\n",
            );
            std::fs::create_dir_all(host(r, "/opt/other/lib")).unwrap();
            copy(
                &b.hsa_stock,
                &host(r, "/opt/other/lib/libhsa-runtime64.so.1"),
            );
            ldconfig(r);
        },
        fails: &["loader"],
        says: &[("loader", "ld.so opens /opt/other/lib/libhsa-runtime64.so.1")],
        ..FAILS
    },
    Tamper {
        what: "LD_LIBRARY_PATH pointing at another copy beats the cache",
        apply: |r, b| {
            std::fs::create_dir_all(host(r, "/srv/other")).unwrap();
            copy(&b.hip, &host(r, "/srv/other/libamdhip64.so.7"));
        },
        ld_library_path: Some("/srv/other"),
        fails: &["loader"],
        ..FAILS
    },
    Tamper {
        what: "a skip record",
        apply: |r, _| {
            write(
                r,
                "/var/lib/rocm-pin/skipped",
                b"ROCm 7.2.5 at /opt/rocm-7.2.5 does not match 7.2.4\n",
            )
        },
        exit: 3,
        ..PASSES
    },
];

const PASSES: Tamper = Tamper {
    what: "",
    apply: |_, _| {},
    ld_library_path: None,
    exit: 0,
    fails: &[],
    holds: &[],
    says: &[],
};
const FAILS: Tamper = Tamper { exit: 1, ..PASSES };

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("{} -> {}: {e}", from.display(), to.display()));
}

fn remove(root: &Path, p: &str) {
    std::fs::remove_file(host(root, p)).unwrap_or_else(|e| panic!("{p}: {e}"));
}

/// `from` replaced by `to` in the file at `p` (the first `count` times, or every time).
fn edit(root: &Path, p: &str, from: &str, to: &str, count: Option<usize>) {
    let file = host(root, p);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "tamper: {p} has no {from:?}");
    let text = match count {
        Some(n) => text.replacen(from, to, n),
        None => text.replace(from, to),
    };
    std::fs::write(&file, text).unwrap();
}

fn stock_in_usr_local(r: &Path, b: &Built) {
    copy(
        &b.hsa_stock,
        &host(r, "/usr/local/lib/libhsa-runtime64.so.1"),
    );
    ldconfig(r);
}

#[test]
fn verify_fake_root_pass_and_tamper_matrix() {
    rocm_pin_testkit::needs_root!("root-owned files and a chroot");
    let b = build_libs();
    for t in TAMPERS {
        let d = make_root(&b);
        (t.apply)(d.path(), &b);
        let rep = verify(&VerifyOptions {
            root: rocm_pin_core::host::root::Root::new(d.path()),
            ld_library_path: t.ld_library_path.map(Into::into),
            ask_apt: false,
            accept_skipped_backport_check: false,
            consumers: Vec::new(),
        })
        .unwrap();
        let human = rep.to_human();
        assert_eq!(rep.exit_code(), t.exit, "{}:\n{human}", t.what);
        assert_eq!(rep.ok, t.exit == 0, "{}:\n{human}", t.what);
        for name in t.fails {
            assert_fails(&rep, name);
        }
        for name in t.holds {
            assert!(
                !rep.failed().any(|c| c.name == *name),
                "{}: {name} failed:\n{human}",
                t.what
            );
        }
        for (check, phrase) in t.says {
            let text = match *check {
                "" => human.clone(),
                name => rep
                    .failed()
                    .find(|c| c.name == name)
                    .map(|c| c.detail.clone())
                    .unwrap_or_default(),
            };
            assert!(
                text.contains(phrase),
                "{}: {check:?} does not say {phrase:?}:\n{human}",
                t.what
            );
        }
    }
    // The JSON report of a clean install: schema 1, every check listed.
    let d = make_root(&b);
    let json: serde_json::Value = serde_json::to_value(run(d.path())).unwrap();
    assert_eq!(json["schema"], 1);
    assert!(json["checks"].as_array().unwrap().len() >= 15);
}
