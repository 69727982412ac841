//! Inputs of `rocm-pin package` made with real tools: a gcc-built patched staging laid out as
//! `cmake --install` leaves it (no build manifest: only `rocm-pin build` writes one, so the tests
//! give `--commit`/`--commit-time`), and the stand-in stock set. Shared
//! by the package, build and install tests.

use std::path::Path;
use std::process::Command;

use rocm_pin_kit::standin::{self, StockRole, StockSet, StockSetSpec};

use crate::must;

/// The rocm-systems commit the staging claims to be built from.
pub const COMMIT: &str = "b539bf7eebfd99ad0a69668caa1f4037034d501f";
pub const COMMIT_TIME: i64 = 1_764_720_000;

/// `--commit COMMIT --commit-time COMMIT_TIME`: what `rocm-pin package` records for the
/// testkit's staging.
pub fn commit_args() -> [String; 4] {
    [
        "--commit".into(),
        COMMIT.into(),
        "--commit-time".into(),
        COMMIT_TIME.to_string(),
    ]
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
    /// Identity tag embedded in every library.
    pub tag: String,
    /// A listed symbol of the real runtime the staging leaves out (a build that lost one).
    pub without_symbol: Option<String>,
    /// Export what this root's stock runtime libraries export as well as the committed lists
    /// (`rocm_pin_kit::standin::abi::list_like`): a staging packaged against a Debian chroot
    /// then passes the ABI check whichever upload the archive held when the chroot was made.
    pub abi_like: Option<std::path::PathBuf>,
}

impl StagingSpec {
    /// The default staging shaped like `root`'s stock runtime: its HIP major and its ABI.
    pub fn like_root(root: &Path) -> StagingSpec {
        let hip_major = standin::abi::hip_major_in(root)
            .unwrap_or_else(|e| panic!("reading {}'s stock HIP runtime: {e:#}", root.display()))
            .unwrap_or_else(|| panic!("{} has no stock libamdhip64", root.display()));
        StagingSpec {
            hip_major,
            abi_like: Some(root.to_path_buf()),
            ..StagingSpec::default()
        }
    }
}

impl Default for StagingSpec {
    fn default() -> Self {
        StagingSpec {
            backport_symbol: true,
            hip_major: 7,
            hiprtc: true,
            extra_needed: None,
            vendored: false,
            tag: "PATCHED".into(),
            without_symbol: None,
            abi_like: None,
        }
    }
}

pub struct StagedNames {
    pub hsa: String,
    pub hip: String,
}

/// What a library leaves out of the real runtime's ABI and whose stock it follows.
#[derive(Clone, Copy)]
struct AbiShape<'a> {
    omit: Option<&'a str>,
    like: Option<&'a Path>,
}

#[allow(clippy::too_many_arguments)]
fn gcc_lib(
    abi: AbiShape,
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
    // A runtime library exports every symbol of the real one, in its node (as the stand-in's
    // CMake builds it): `rocm-pin package` refuses a replacement lacking a stock symbol.
    let list = match abi.like {
        Some(root) => standin::abi::list_like(stem, root)
            .unwrap_or_else(|e| panic!("the ABI of {}'s {stem}: {e:#}", root.display())),
        None => standin::abi::list(stem),
    };
    let stubs = list.and_then(|list| {
        standin::abi::stubs_and_script_from(
            stem,
            list,
            exports,
            standin::IDENTITY_FUNCTION,
            abi.omit,
        )
    });
    let m = match stubs {
        Some((stubs, script)) => {
            c.push_str(&stubs);
            script
        }
        None => {
            let mut m = format!("{node} {{\n global:\n  {};\n", standin::IDENTITY_FUNCTION);
            for e in exports {
                m.push_str(&format!("  {e};\n"));
            }
            m.push_str(" local: *;\n};\n");
            m
        }
    };
    std::fs::write(&src, c).unwrap();
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
    must(&mut cmd);
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
    let shaped = AbiShape {
        omit: spec.without_symbol.as_deref(),
        like: spec.abi_like.as_deref(),
    };
    let plain = AbiShape {
        omit: None,
        like: None,
    };
    let mut hsa_exports = vec!["hsa_init", "hsa_shut_down"];
    if spec.backport_symbol {
        hsa_exports.push("hsa_amd_signal_create_v2");
    }
    gcc_lib(
        shaped,
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
        gcc_lib(
            plain,
            &lib,
            extra,
            extra,
            "EXTRA",
            "extra",
            &["extra_fn"],
            &[],
        );
        hip_link.push(extra.clone());
    }
    if spec.vendored {
        gcc_lib(
            plain,
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
        shaped,
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
                shaped,
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
    StagedNames { hsa, hip }
}

/// A staging of `family` (`rocm_pin_core::rocm::RCCL`, …) shaped like `root`'s stock, as
/// [`StagingSpec::like_root`] shapes the pair: for each of the family's libraries the root
/// has, a gcc-built library with the stock file's name and SONAME exporting every dynamic
/// symbol the stock one exports (its version nodes or none, object sizes kept:
/// `rocm_pin_kit::standin::abi::list_like`) and `identity`, with the soname and dev links,
/// under `dir/lib` as `cmake --install` lays it out. A real program linked against the stock
/// library then links and loads against it. Returns the library files made.
pub fn build_family_staging(
    dir: &Path,
    family: &rocm_pin_core::rocm::PinnedFamily,
    identity: &str,
    root: &Path,
) -> Vec<String> {
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let shaped = AbiShape {
        omit: None,
        like: Some(root),
    };
    let mut made = Vec::new();
    for library in family.libraries {
        let stock = standin::abi::stock_libraries(root, library.stem)
            .unwrap_or_else(|e| panic!("{}'s {}: {e:#}", root.display(), library.stem));
        let Some(stock) = stock.first() else {
            assert!(
                !library.required,
                "{} has no stock {}",
                root.display(),
                library.stem
            );
            continue;
        };
        let soname = rocm_pin_core::elf::read_elf(stock)
            .unwrap_or_else(|e| panic!("reading {}: {e:#}", stock.display()))
            .soname
            .unwrap_or_else(|| panic!("{} has no SONAME", stock.display()));
        let file = stock.file_name().unwrap().to_str().unwrap().to_string();
        gcc_lib(shaped, &lib, &file, &soname, "", identity, &[], &[]);
        if file != soname {
            std::os::unix::fs::symlink(&file, lib.join(&soname)).unwrap();
        }
        std::os::unix::fs::symlink(&soname, lib.join(format!("{}.so", library.stem))).unwrap();
        made.push(file);
    }
    made
}

/// The stand-in stock set (default roles + both decoys) built into `dir`.
pub fn stock_set(dir: &Path, spec: StockSetSpec) -> StockSet {
    standin::build_stock_set(&spec, dir, &rocm_pin_core::progress::Silent)
        .expect("stand-in stock set")
}

/// A work directory and the [`default_spec`] stand-in stock set built in its `stock/`.
pub fn work_with_default_stock() -> (tempfile::TempDir, StockSet) {
    let work = tempfile::tempdir().unwrap();
    let set = stock_set(&work.path().join("stock"), default_spec());
    (work, set)
}

pub fn default_spec() -> StockSetSpec {
    StockSetSpec::for_host()
        .expect("host architecture")
        .with_roles(&[StockRole::DebianHsaDecoy, StockRole::AsanHsaDecoy])
}
