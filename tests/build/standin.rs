//! `rocm-pin build` on the stand-in monorepo with real git, cmake and a C compiler: the staging
//! and manifest are judged by readelf, nm and sha256sum; the validation refusals are produced by
//! real (tampered) installs, never by calling the checks on hand-made files.

use rocm_pin_testkit::assert_says;
use std::path::Path;
use std::time::Instant;

use crate::util::*;

/// The manifest's library whose path holds `part`.
fn library<'m>(
    m: &'m rocm_pin_core::ops::build::BuildManifest,
    part: &str,
) -> &'m rocm_pin_core::ops::build::ManifestLibrary {
    m.libraries
        .iter()
        .find(|l| l.path.contains(part))
        .unwrap_or_else(|| panic!("no library with {part} in its path: {:?}", m.libraries))
}

fn file_name(p: &str) -> &str {
    Path::new(p).file_name().unwrap().to_str().unwrap()
}

#[test]
fn builds_the_standin_then_reuses_it_then_rebuilds_with_rebuild() {
    let (_tmp, src, commit, rocm, out) = standin_build();

    let first = run(build_cmd(&src, &commit, &rocm, &out, &["--jobs", "2"])).ok();
    assert_says(&first.stdout, &[&format!("built {commit}")]);

    let m = check_the_staging(&out, &src, &commit);
    let hip = library(&m, "libamdhip64");

    // Same commit, options and toolchain: reused, said so, fast.
    let manifest_text = std::fs::read_to_string(out.join("rocm-pin-build.json")).unwrap();
    let started = Instant::now();
    let second = run(build_cmd(&src, &commit, &rocm, &out, &["--jobs", "2"])).ok();
    let elapsed = started.elapsed();
    assert!(elapsed.as_secs_f64() < 2.0, "cache hit took {elapsed:?}");
    second.says(&["cache hit"]);
    assert_says(&second.stdout, &["reused cached staging"]);
    assert!(
        !second.stderr.contains("configure-rocr"),
        "{}",
        second.stderr
    );
    assert_eq!(
        std::fs::read_to_string(out.join("rocm-pin-build.json")).unwrap(),
        manifest_text
    );

    // A staging changed behind our back is not reused.
    std::fs::write(out.join(&hip.path), b"").unwrap();
    let third = run(build_cmd(&src, &commit, &rocm, &out, &["--jobs", "2"])).ok();
    third.says(&["cache miss", "empty library"]);
    assert_eq!(manifest(&out), m);

    // --rebuild builds from clean.
    let marker = out.join("logs/configure-rocr.log");
    std::fs::write(&marker, "stale log\n").unwrap();
    let fourth = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--jobs", "2", "--rebuild"],
    ))
    .ok();
    fourth.says(&["--rebuild"]);
    assert_says(&fourth.stdout, &[&format!("built {commit}")]);
    assert!(!std::fs::read_to_string(&marker)
        .unwrap()
        .contains("stale log"));
    assert_eq!(manifest(&out).libraries.len(), 4);
}

/// The build's steps, each with its log in logs/<step>.log.
const BUILD_STEPS: &[&str] = &[
    "configure-rocr",
    "build-rocr",
    "install-rocr",
    "configure-clr",
    "build-clr",
    "install-clr",
    "stage-rocr",
];

/// The staging `out` a first build of `commit` from `src` made with --jobs 2: its manifest
/// (returned) judged by readelf, sha256sum and nm, the four libraries with their soname links,
/// CLR built against the fresh ROCr headers carrying its identity, every step's log.
fn check_the_staging(
    out: &Path,
    src: &Path,
    commit: &str,
) -> rocm_pin_core::ops::build::BuildManifest {
    let m = manifest(out);
    assert_eq!(m.commit, commit);
    assert_eq!(m.commit_time, COMMIT_EPOCH);
    assert_eq!(m.source, src.display().to_string());
    assert_eq!(m.rocm_version.as_deref(), Some("7.2.4-93"));
    assert_eq!(m.jobs, 2);
    assert!(
        m.tools
            .get("cmake")
            .is_some_and(|v| v.starts_with("cmake version")),
        "{:?}",
        m.tools
    );
    assert!(m.tools.contains_key("cc"), "{:?}", m.tools);

    let short = &commit[..7];
    let mut names: Vec<&str> = m.libraries.iter().map(|l| file_name(&l.path)).collect();
    names.sort();
    assert_eq!(
        names,
        [
            format!("libamdhip64.so.7.2.53211-{short}"),
            format!("libhiprtc-builtins.so.7.2.53211-{short}"),
            format!("libhiprtc.so.7.2.53211-{short}"),
            "libhsa-runtime64.so.1.18.0".to_string(),
        ]
    );
    for lib in &m.libraries {
        let abs = out.join(&lib.path);
        assert!(lib.path.starts_with("lib/"), "{}", lib.path);
        // Judged by readelf and sha256sum, not by our own readers.
        assert_eq!(lib.soname, readelf_soname(&abs), "{}", lib.path);
        let sum = tool("sha256sum", &[abs.to_str().unwrap()]);
        assert_eq!(
            lib.sha256,
            sum.split_whitespace().next().unwrap(),
            "{}",
            lib.path
        );
        assert_eq!(lib.size, std::fs::metadata(&abs).unwrap().len());
        let soname = lib.soname.as_deref().unwrap();
        assert!(lib.links.contains(&format!("lib/{soname}")), "{lib:?}");
        assert_eq!(
            std::fs::canonicalize(out.join("lib").join(soname)).unwrap(),
            std::fs::canonicalize(&abs).unwrap()
        );
    }
    let hsa = library(&m, "libhsa-runtime64");
    assert_eq!(hsa.soname.as_deref(), Some("libhsa-runtime64.so.1"));
    assert_eq!(hsa.backport_symbol, Some(true));
    let nm = tool(
        "nm",
        &[
            "-D",
            "--defined-only",
            out.join(&hsa.path).to_str().unwrap(),
        ],
    );
    assert_says(&nm, &["hsa_amd_signal_create_v2@@ROCR_1"]);
    let hip = library(&m, "libamdhip64");
    assert_eq!(hip.soname.as_deref(), Some("libamdhip64.so.7"));
    assert_eq!(hip.needed, ["libhsa-runtime64.so.1"]);
    assert_eq!(hip.backport_symbol, None);
    // CLR was compiled against the fresh ROCr headers although a stock hsa.h sits under the
    // ROCm path's include/ (the stand-in #errors otherwise), and carries its identity.
    let hip_bytes = std::fs::read(out.join(&hip.path)).unwrap();
    let identity = format!("hip-PATCHED-{commit}");
    assert!(hip_bytes
        .windows(identity.len())
        .any(|w| w == identity.as_bytes()));
    assert!(out.join("include/hsa/hsa.h").is_file());
    for step in BUILD_STEPS {
        assert!(
            out.join("logs").join(format!("{step}.log")).is_file(),
            "{step}"
        );
    }
    let log = std::fs::read_to_string(out.join("logs/build-clr.log")).unwrap();
    assert_says(&log, &["--parallel 2"]);

    m
}

#[test]
fn a_clr_with_hip_major_8_yields_so_8_and_vendored_libraries_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, commit) = standin_repo(tmp.path(), |src| {
        std::fs::write(
            src.join("projects/hip/VERSION"),
            "#HIP_VERSION_MAJOR\n8\n#HIP_VERSION_MINOR\n0\n#HIP_VERSION_PATCH\n60000\n",
        )
        .unwrap();
    });
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("staging");
    run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &[
            "--rocm-patch-version",
            "80000",
            "--rocr-cmake-arg=-DSTANDIN_VENDORED_LIBRARY=ON",
        ],
    ))
    .ok();
    let m = manifest(&out);
    let soname = |stem: &str| {
        m.libraries
            .iter()
            .find(|l| file_name(&l.path).starts_with(&format!("{stem}.so")))
            .and_then(|l| l.soname.clone())
            .unwrap()
    };
    assert_eq!(soname("libamdhip64"), "libamdhip64.so.8");
    assert_eq!(soname("libhiprtc"), "libhiprtc.so.8");
    assert_eq!(soname("libhiprtc-builtins"), "libhiprtc-builtins.so.8");
    assert_eq!(soname("libhsa-runtime64"), "libhsa-runtime64.so.1");
    let hip = library(&m, "libamdhip64");
    // ROCM_PATCH_VERSION replaces `<patch>-<hash>`, like the real CLR.
    assert_eq!(hip.path, "lib/libamdhip64.so.8.0.80000");
    let rtc = m
        .libraries
        .iter()
        .find(|l| file_name(&l.path).starts_with("libhiprtc.so"))
        .unwrap();
    assert_eq!(rtc.needed, ["libamdhip64.so.8"]);
    assert_eq!(
        readelf_soname(&out.join(&hip.path)).as_deref(),
        Some("libamdhip64.so.8")
    );
    // A library outside the runtime families is listed too, so packaging can plan it.
    let vendored = m
        .libraries
        .iter()
        .find(|l| l.path == "lib/liburcu-standin.so.8.1.0")
        .unwrap();
    assert_eq!(vendored.soname.as_deref(), Some("liburcu-standin.so.8"));
    assert!(
        vendored.needed.contains(&"libc.so.6".to_string()),
        "{vendored:?}"
    );
    assert_eq!(vendored.backport_symbol, None);
    assert_eq!(m.libraries.len(), 5);
}

#[test]
fn a_rocr_without_the_backport_symbol_is_refused_unless_accepted() {
    let (_tmp, src, commit, rocm, out) = standin_build();
    let refused = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--rocr-cmake-arg=-DSTANDIN_BACKPORT_SYMBOL=OFF"],
    ))
    .failed_with(1);
    let hsa_path = out.join("lib/libhsa-runtime64.so.1.18.0");
    refused.says(&[&format!(
        "{} does not export hsa_amd_signal_create_v2",
        hsa_path.display()
    )]);
    assert!(
        !out.join("rocm-pin-build.json").exists(),
        "a refused build has no manifest"
    );

    let accepted = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &[
            "--rocr-cmake-arg=-DSTANDIN_BACKPORT_SYMBOL=OFF",
            "--no-backport-check",
        ],
    ))
    .ok();
    accepted.says(&["--no-backport-check"]);
    let m = manifest(&out);
    let hsa = library(&m, "libhsa-runtime64");
    assert_eq!(hsa.backport_symbol, Some(false));
}

#[test]
fn a_git_url_is_fetched_sparse_blobless_at_the_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, commit) = standin_repo(tmp.path(), |src| {
        std::fs::create_dir_all(src.join("projects/unrelated")).unwrap();
        std::fs::write(
            src.join("projects/unrelated/big.txt"),
            "not needed by the build\n",
        )
        .unwrap();
    });
    // A second commit on top: the build must fetch the pinned one, not the branch tip.
    std::fs::write(origin.join("projects/hip/VERSION"), "garbage\n").unwrap();
    git(&origin, &["commit", "--quiet", "-am", "later commit"]);
    git(&origin, &["config", "uploadpack.allowFilter", "true"]);
    git(
        &origin,
        &["config", "uploadpack.allowAnySHA1InWant", "true"],
    );
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("staging");
    let url = format!("file://{}", origin.display());
    let mut cmd = rocm_pin();
    cmd.args(["build", "--source", &url, "--commit", &commit])
        .arg("--rocm-path")
        .arg(&rocm)
        .arg("--out")
        .arg(&out);
    run(cmd).ok();
    let m = manifest(&out);
    assert_eq!(m.source, url);
    assert_eq!(m.commit, commit);
    assert_eq!(m.commit_time, COMMIT_EPOCH);
    assert_eq!(m.libraries.len(), 4);
    let checkout = out.join(".work/src");
    assert_eq!(git(&checkout, &["rev-parse", "HEAD"]), commit);
    assert_eq!(
        git(&checkout, &["rev-parse", "--is-shallow-repository"]),
        "true"
    );
    assert!(
        !checkout.join("projects/unrelated").exists(),
        "sparse checkout fetched everything"
    );
    let fetch_log = std::fs::read_to_string(out.join("logs/fetch.log")).unwrap();
    assert_says(&fetch_log, &["--filter=blob:none --depth=1"]);
}

/// A build the stand-in's sources are told to spoil (one cmake argument): the exit code, the
/// phrases the refusal must say (given the staging directory and the commit), and a log that
/// must hold a phrase too.
struct Spoiled {
    cmake_arg: &'static str,
    exit: i32,
    says: fn(&Path, &str) -> Vec<String>,
    log_holds: Option<(&'static str, &'static str)>,
}

const SPOILED_BUILDS: &[Spoiled] = &[
    // The stand-in CLR, like the real one, stops when asked for OpenCL: the failing step names
    // its log and quotes its tail.
    Spoiled {
        cmake_arg: "--clr-cmake-arg=-DCLR_BUILD_OCL=ON",
        exit: 2,
        says: |out, _| {
            vec![
                "step configure-clr failed".into(),
                format!("log: {}", out.join("logs/configure-clr.log").display()),
                "--- last 40 lines of".into(),
                "has no OpenCL runtime".into(),
            ]
        },
        log_holds: Some(("logs/configure-clr.log", "has no OpenCL runtime")),
    },
    // A dangling SONAME link is refused with its path.
    Spoiled {
        cmake_arg: "--clr-cmake-arg=-DSTANDIN_TAMPER_DANGLING_SONAME=ON",
        exit: 1,
        says: |out, _| {
            vec![
                format!(
                    "{}: library symlink dangles",
                    out.join("lib/libamdhip64.so.7").display()
                ),
                "no libamdhip64 library".into(),
            ]
        },
        log_holds: None,
    },
    // An empty library is refused with its path.
    Spoiled {
        cmake_arg: "--clr-cmake-arg=-DSTANDIN_TAMPER_EMPTY_LIBRARY=ON",
        exit: 1,
        says: |out, commit| {
            let lib = out.join(format!("lib/libamdhip64.so.7.2.53211-{}", &commit[..7]));
            vec![format!("{}: empty library (0 bytes)", lib.display())]
        },
        log_holds: None,
    },
];

#[test]
fn a_spoiled_build_is_refused_with_what_failed_and_no_manifest() {
    for case in SPOILED_BUILDS {
        eprintln!("case: {}", case.cmake_arg);
        let (_tmp, src, commit, rocm, out) = standin_build();
        let r =
            run(build_cmd(&src, &commit, &rocm, &out, &[case.cmake_arg])).failed_with(case.exit);
        let phrases = (case.says)(&out, &commit);
        r.says(&phrases.iter().map(String::as_str).collect::<Vec<_>>());
        if let Some((log, phrase)) = case.log_holds {
            assert!(std::fs::read_to_string(out.join(log))
                .unwrap()
                .contains(phrase));
        }
        assert!(!out.join("rocm-pin-build.json").exists());
    }
}

#[test]
fn the_same_commit_built_in_two_places_gives_identical_libraries() {
    // The embedded stand-in (what `rocm-pin demo` builds) has a fixed commit id; two checkouts
    // of it in different directories, built into different staging directories, must produce
    // byte-identical libraries (no checkout, build or staging path in the files).
    let tmp = tempfile::tempdir().unwrap();
    let rocm = fake_rocm(tmp.path());
    let a_src = tmp.path().join("a/rocm-systems");
    let b_src = tmp.path().join("somewhere/else/rocm-systems");
    let commit = rocm_pin_kit::standin::tree::write_standin_checkout(&a_src).unwrap();
    assert_eq!(
        rocm_pin_kit::standin::tree::write_standin_checkout(&b_src).unwrap(),
        commit
    );
    let (a_out, b_out) = (tmp.path().join("out-a"), tmp.path().join("staging/b"));
    run(build_cmd(&a_src, &commit, &rocm, &a_out, &[])).ok();
    run(build_cmd(&b_src, &commit, &rocm, &b_out, &["--jobs", "1"])).ok();
    let facts = |out: &Path| {
        manifest(out)
            .libraries
            .into_iter()
            .map(|l| (l.path, l.sha256))
            .collect::<Vec<_>>()
    };
    assert_eq!(facts(&a_out), facts(&b_out));
    let hip = std::fs::read(a_out.join("lib/libamdhip64.so.7")).unwrap();
    let needle = a_src.display().to_string();
    assert!(
        !hip.windows(needle.len()).any(|w| w == needle.as_bytes()),
        "the checkout path leaked into libamdhip64"
    );
}

/// A stock library under `root`'s multiarch directory, built by gcc: `soname`, the functions and
/// data objects of `script` (a version script), each function returning 0, each object 24 bytes.
fn stock_library(
    root: &Path,
    file: &str,
    soname: &str,
    functions: &[&str],
    objects: &[&str],
    script: &str,
) {
    let dir = root.join("usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = String::new();
    for f in functions {
        c.push_str(&format!("int {f}(void) {{ return 0; }}\n"));
    }
    for o in objects {
        c.push_str(&format!("char {o}[24] = {{1}};\n"));
    }
    let src = root.join(format!("{file}.c"));
    let map = root.join(format!("{file}.map"));
    std::fs::write(&src, c).unwrap();
    std::fs::write(&map, script).unwrap();
    must_stdout(
        std::process::Command::new("gcc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join(file))
            .arg(&src)
            .arg(format!("-Wl,-soname,{soname}"))
            .arg(format!("-Wl,--version-script={}", map.display())),
    );
    std::os::unix::fs::symlink(file, dir.join(soname)).unwrap();
}

/// `rocm-pin standin source --like ROOT`: the stand-in follows the root's stock runtime — its
/// HIP SONAME major and every symbol it exports, even ones the committed lists never saw (an
/// upload newer than them, in a version node they do not have) — so the build packages against
/// that root's stock whatever the archive holds.
#[test]
fn a_standin_source_like_a_root_follows_its_hip_major_and_its_abi() {
    let tmp = tempfile::tempdir().unwrap();
    let stock = tmp.path().join("stock");
    stock_library(
        &stock,
        "libamdhip64.so.6.4.43483",
        "libamdhip64.so.6",
        &["hipInit", "hipFromTheNextUpload"],
        &["hipNextUploadTable"],
        "hip_4.2 { global: hipInit; };\nhip_6.9 { global: hipFromTheNextUpload; hipNextUploadTable; local: *; };\n",
    );
    stock_library(
        &stock,
        "libhsa-runtime64.so.1.15.0",
        "libhsa-runtime64.so.1",
        &["hsa_init", "hsa_from_the_next_upload"],
        &[],
        "ROCR_1 { global: hsa_init; hsa_from_the_next_upload; local: *; };\n",
    );
    let src = tmp.path().join("src");
    let said = must(
        rocm_pin()
            .args(["standin", "source", "--out"])
            .arg(&src)
            .arg("--like")
            .arg(&stock),
    );
    let commit = String::from_utf8_lossy(&said.stdout).trim().to_string();
    assert_eq!(commit.len(), 40, "{commit:?}");
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("staging");
    run(build_cmd(&src, &commit, &rocm, &out, &[])).ok();
    let m = manifest(&out);
    let built = |stem: &str| {
        let lib = m
            .libraries
            .iter()
            .find(|l| file_name(&l.path).starts_with(&format!("{stem}.so")))
            .unwrap_or_else(|| panic!("no {stem} in {m:?}"));
        (
            lib.soname.clone(),
            rocm_pin_core::elf::read_elf(&out.join(&lib.path)).unwrap(),
        )
    };
    let (soname, hip) = built("libamdhip64");
    assert_eq!(soname.as_deref(), Some("libamdhip64.so.6"));
    assert_eq!(
        readelf_soname(
            &out.join(
                &m.libraries
                    .iter()
                    .find(|l| l.path.contains("libamdhip64"))
                    .unwrap()
                    .path
            )
        )
        .as_deref(),
        Some("libamdhip64.so.6")
    );
    let export = |info: &rocm_pin_core::elf::ElfInfo, name: &str| {
        info.exports
            .iter()
            .find(|e| e.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is not exported"))
    };
    let next = export(&hip, "hipFromTheNextUpload");
    assert_eq!(
        (next.version.as_deref(), next.function),
        (Some("hip_6.9"), true)
    );
    let table = export(&hip, "hipNextUploadTable");
    assert_eq!(
        (table.version.as_deref(), table.function, table.size),
        (Some("hip_6.9"), false, 24)
    );
    // What the committed list has stays: a symbol of Debian's 7.2.4 not in this stock.
    assert!(hip.exports.iter().any(|e| e.name == "hipGetDeviceCount"));
    let (_, hsa) = built("libhsa-runtime64");
    let next = export(&hsa, "hsa_from_the_next_upload");
    assert_eq!(next.version.as_deref(), Some("ROCR_1"));
}
