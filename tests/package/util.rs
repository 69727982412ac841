//! Shared by the tests in tests/package/ (and a few in tests/build/, tests/install/): a gcc-built patched staging, the stand-in
//! stock set, a chroot with it installed, and small runners. Real tools only (gcc, dpkg-deb,
//! apt, lintian); nothing here fakes a result.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_kit::standin::{self, StockRole, StockSet, StockSetSpec};

pub const COMMIT: &str = "b539bf7eebfd99ad0a69668caa1f4037034d501f";
pub const COMMIT_TIME: i64 = 1_764_720_000;
pub const PREFIX: &str = "/opt/rocm-7.2.4";

#[allow(unused_imports)] // not every test binary that includes this module needs it
pub use rocm_pin_testkit::cache_dir;

pub fn image() -> ChrootImage {
    let tarball = cache_dir().join("chroot/bookworm-apt.tar.zst");
    assert!(
        tarball.is_file(),
        "{} is missing: run scripts/test-setup",
        tarball.display()
    );
    ChrootImage::cached("bookworm", &cache_dir()).expect("cached chroot image")
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocm-pin")
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn stdout(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run(cmd).stdout).into_owned()
}

/// What the patched staging looks like.
#[derive(Debug, Clone)]
pub struct StagingSpec {
    pub backport_symbol: bool,
    pub hip_major: u32,
    /// Build libhiprtc / libhiprtc-builtins too.
    pub hiprtc: bool,
    /// libamdhip64 also NEEDs this soname (a stub built and then removed from the staging).
    pub extra_needed: Option<String>,
    /// A vendored library in lib/ that libamdhip64 NEEDs (shipped with the HIP package).
    pub vendored: bool,
    /// Write a rocm-pin-build.json manifest.
    pub manifest: bool,
    /// Identity tag embedded in every library.
    pub tag: String,
}

impl Default for StagingSpec {
    fn default() -> Self {
        StagingSpec {
            backport_symbol: true,
            hip_major: 7,
            hiprtc: true,
            extra_needed: None,
            vendored: false,
            manifest: false,
            tag: "PATCHED".into(),
        }
    }
}

pub struct StagedNames {
    pub hsa: String,
    pub hip: String,
}

fn gcc_lib(
    lib_dir: &Path,
    file: &str,
    soname: &str,
    node: &str,
    identity: &str,
    exports: &[&str],
    link: &[&str],
) {
    let stem = soname.split(".so").next().unwrap();
    let src = lib_dir.join(format!("{stem}.c"));
    let map = lib_dir.join(format!("{stem}.map"));
    let mut c = format!(
        "__attribute__((used)) static const char identity_string[] = \"{}{identity}\";\n\
         const char *{}(void) {{ return identity_string + {}; }}\n",
        standin::IDENTITY_PREFIX,
        standin::IDENTITY_FUNCTION,
        standin::IDENTITY_PREFIX.len()
    );
    for (i, e) in exports.iter().enumerate() {
        c.push_str(&format!("int {e}(void) {{ return {i}; }}\n"));
    }
    std::fs::write(&src, c).unwrap();
    let mut m = format!("{node} {{\n global:\n  {};\n", standin::IDENTITY_FUNCTION);
    for e in exports {
        m.push_str(&format!("  {e};\n"));
    }
    m.push_str(" local: *;\n};\n");
    std::fs::write(&map, m).unwrap();
    let mut cmd = Command::new("gcc");
    cmd.current_dir(lib_dir)
        .args(["-shared", "-fPIC", "-g", "-O1", "-o", file])
        .arg(&src)
        .arg(format!("-Wl,-soname,{soname}"))
        .arg(format!("-Wl,--version-script={}", map.display()))
        .arg("-Wl,--no-as-needed")
        .arg(format!("-L{}", lib_dir.display()));
    for l in link {
        cmd.arg(format!("-l:{l}"));
    }
    run(&mut cmd);
    std::fs::remove_file(&src).unwrap();
    std::fs::remove_file(&map).unwrap();
}

fn links(lib_dir: &Path, file: &str, soname: &str, dev: &str) {
    std::os::unix::fs::symlink(file, lib_dir.join(soname)).unwrap();
    std::os::unix::fs::symlink(soname, lib_dir.join(dev)).unwrap();
}

/// Build a patched staging under `dir` (lib/ as `cmake --install` lays it out).
pub fn build_staging(dir: &Path, spec: &StagingSpec) -> StagedNames {
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let hsa = "libhsa-runtime64.so.1.18.0".to_string();
    let mut hsa_exports = vec!["hsa_init", "hsa_shut_down"];
    if spec.backport_symbol {
        hsa_exports.push("hsa_amd_signal_create_v2");
    }
    gcc_lib(
        &lib,
        &hsa,
        "libhsa-runtime64.so.1",
        "ROCR_1",
        &format!("hsa-{}-b539bf7", spec.tag),
        &hsa_exports,
        &[],
    );
    links(&lib, &hsa, "libhsa-runtime64.so.1", "libhsa-runtime64.so");
    let mut hip_link = vec!["libhsa-runtime64.so".to_string()];
    if let Some(extra) = &spec.extra_needed {
        gcc_lib(&lib, extra, extra, "EXTRA", "extra", &["extra_fn"], &[]);
        hip_link.push(extra.clone());
    }
    if spec.vendored {
        gcc_lib(
            &lib,
            "libvendored.so.3.1.0",
            "libvendored.so.3",
            "VEND_3",
            "vendored",
            &["vendored_fn"],
            &[],
        );
        std::os::unix::fs::symlink("libvendored.so.3.1.0", lib.join("libvendored.so.3")).unwrap();
        hip_link.push("libvendored.so.3".into());
    }
    let major = spec.hip_major;
    let hip = format!("libamdhip64.so.{major}.2.53211-b539bf7");
    let hip_link_refs: Vec<&str> = hip_link.iter().map(String::as_str).collect();
    gcc_lib(
        &lib,
        &hip,
        &format!("libamdhip64.so.{major}"),
        "hip_4.2",
        &format!("hip-{}-b539bf7", spec.tag),
        &["hipInit", "hipMalloc"],
        &hip_link_refs,
    );
    links(
        &lib,
        &hip,
        &format!("libamdhip64.so.{major}"),
        "libamdhip64.so",
    );
    if spec.hiprtc {
        for (stem, id) in [
            ("libhiprtc", "hiprtc"),
            ("libhiprtc-builtins", "hiprtc-builtins"),
        ] {
            let file = format!("{stem}.so.{major}.2.53211-b539bf7");
            let so = format!("{stem}.so.{major}");
            gcc_lib(
                &lib,
                &file,
                &so,
                "hiprtc_4.2",
                &format!("{id}-{}-b539bf7", spec.tag),
                &[&format!("{}_fn", stem.replace('-', "_"))],
                &[],
            );
            links(&lib, &file, &so, &format!("{stem}.so"));
        }
    }
    if let Some(extra) = &spec.extra_needed {
        std::fs::remove_file(lib.join(extra)).unwrap();
    }
    if spec.manifest {
        write_manifest(dir);
    }
    StagedNames { hsa, hip }
}

/// A rocm-pin-build.json for the staging, with the ELF facts read back from the files.
pub fn write_manifest(dir: &Path) {
    use rocm_pin::build::manifest::{BuildManifest, ManifestLibrary, MANIFEST_FILE};
    use sha2::Digest;
    let mut libraries = vec![];
    let lib = dir.join("lib");
    let mut names: Vec<_> = std::fs::read_dir(&lib)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for n in names {
        let p = lib.join(&n);
        if std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink()
        {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let info = rocm_pin::elf::read_elf(&p).unwrap();
        libraries.push(ManifestLibrary {
            path: format!("lib/{n}"),
            soname: info.soname.clone(),
            sha256: hex::encode(sha2::Sha256::digest(&bytes)),
            size: bytes.len() as u64,
            needed: info.needed.clone(),
            links: vec![],
            backport_symbol: n
                .starts_with("libhsa-runtime64")
                .then(|| info.export("hsa_amd_signal_create_v2").is_some()),
        });
    }
    let m = BuildManifest {
        commit: COMMIT.into(),
        commit_time: COMMIT_TIME,
        source: "tests".into(),
        rocm_version: Some("7.2.4".into()),
        jobs: 1,
        tools: Default::default(),
        libraries,
        llvm_dir: None,
        patches: vec![],
        backport_check_skipped: false,
        compiler_launcher: None,
    };
    std::fs::write(
        dir.join(MANIFEST_FILE),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
}

/// The stand-in stock set (default roles + both decoys) built into `dir`.
pub fn stock_set(dir: &Path, spec: StockSetSpec) -> StockSet {
    standin::build_stock_set(&spec, dir, &rocm_pin::progress::Silent).expect("stand-in stock set")
}

pub fn default_spec() -> StockSetSpec {
    StockSetSpec::for_host()
        .expect("host architecture")
        .with_roles(&[StockRole::DebianHsaDecoy, StockRole::AsanHsaDecoy])
}

/// A chroot with the stand-in repository and `packages` installed from it.
pub fn sandbox_with_stock(set: &StockSet, packages: &[&str], options: &SandboxOptions) -> Sandbox {
    let sb = Sandbox::with_options(&image(), options).expect("sandbox");
    sb.add_local_repo("stock", &set.out_dir)
        .expect("stock repo");
    let mut argv = vec!["apt-get", "install", "-y", "-q"];
    argv.extend_from_slice(packages);
    sb.run_ok(&argv).expect("install the stock set");
    sb
}

/// `rocm-pin package …` with `args`; returns the output.
pub fn package_cmd(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(bin())
        .arg("package")
        .args(args)
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .expect("run rocm-pin package")
}

pub fn debs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "deb"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn field(deb: &Path, name: &str) -> String {
    stdout(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name))
        .trim_end()
        .to_string()
}

/// `dpkg-deb -c` as (type char, path without ./ prefix, link info).
pub fn contents(deb: &Path) -> Vec<(char, String, String)> {
    stdout(Command::new("dpkg-deb").arg("-c").arg(deb))
        .lines()
        .map(|l| {
            let kind = l.chars().next().unwrap();
            let rest: Vec<&str> = l.splitn(6, char::is_whitespace).collect();
            let tail = l.split_whitespace().skip(5).collect::<Vec<_>>().join(" ");
            let (path, link) = match tail.split_once(" -> ") {
                Some((p, t)) => (p.to_string(), t.to_string()),
                None => match tail.split_once(" link to ") {
                    Some((p, t)) => (p.to_string(), t.trim_start_matches('.').to_string()),
                    None => (tail.clone(), String::new()),
                },
            };
            let _ = rest;
            (kind, path.trim_start_matches('.').to_string(), link)
        })
        .collect()
}

/// Lintian's E:/W: lines for `deb` (overridden tags are not shown).
pub fn lintian_problems(deb: &Path) -> Vec<String> {
    // lintian leaves its mldbm-elf-* files in TMPDIR: give it a directory removed afterwards.
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("lintian")
        .arg("--no-cfg")
        .arg(deb)
        .env("TMPDIR", tmp.path())
        .output()
        .expect("run lintian (apt-get install lintian)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.starts_with("E:") || l.starts_with("W:"))
        .map(str::to_string)
        .collect()
}
