//! The readers of root and image input under the fuzz targets' checks, without nightly: the same
//! harness as `fuzz/fuzz_targets/{status,md5sums,marker,ldcache,image_layer,proc_maps}.rs`
//! (`fuzz/harness.rs`, included below), driven by
//!
//! - every input saved in `fuzz/regressions/<target>/` (a crash once found stays fixed), and
//! - real inputs: this machine's dpkg status file, md5sums files and ld.so.cache, a marker of the
//!   schema the package writes, and layers made by GNU tar (plain, gzip, zstd) with whiteouts,
//!   hard links and symlinks that point beside the root.

#[path = "../../fuzz/harness.rs"]
pub(crate) mod harness;

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::fuzz::{clock_seed, regressions_dir, stress_secs, Rng};
use rocm_pin_core::deb::compress::compress_bytes;
use rocm_pin_core::deb::Compression;

type Target = fn(&[u8], &Path);

fn layer(data: &[u8], scratch: &Path) {
    let scratch = harness::LayerScratch::new(scratch.join("layer-scratch"));
    let _ = harness::image_layer(data, &scratch);
}

const TARGETS: [(&str, Target); 6] = [
    ("status", harness::status),
    ("md5sums", harness::md5sums),
    ("marker", harness::marker),
    ("ldcache", harness::ldcache),
    ("image_layer", layer),
    ("proc_maps", harness::proc_maps),
];

/// Run `target` on `data` in a fresh scratch directory; the panic message names the input.
fn run(name: &str, target: Target, data: &[u8], what: &str) {
    let scratch = tempfile::tempdir().unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| target(data, scratch.path())));
    assert!(r.is_ok(), "{name} target: input {what} fails its checks");
}

#[test]
fn regressions_replay() {
    let dir = regressions_dir("");
    for (name, target) in TARGETS {
        let Ok(entries) = fs::read_dir(dir.join(name)) else {
            continue;
        };
        for e in entries.flatten() {
            let data = fs::read(e.path()).unwrap();
            run(name, target, &data, &e.path().display().to_string());
        }
    }
}

#[test]
fn host_status_md5sums_and_ldcache() {
    let status = fs::read("/var/lib/dpkg/status").expect("a Debian host has a dpkg status file");
    run("status", harness::status, &status, "/var/lib/dpkg/status");
    let mut md5sums: Vec<PathBuf> = fs::read_dir("/var/lib/dpkg/info")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md5sums"))
        .collect();
    md5sums.sort();
    assert!(!md5sums.is_empty(), "no md5sums under /var/lib/dpkg/info");
    for p in md5sums.iter().take(20) {
        run(
            "md5sums",
            harness::md5sums,
            &fs::read(p).unwrap(),
            &p.display().to_string(),
        );
    }
    if let Ok(cache) = fs::read("/etc/ld.so.cache") {
        run("ldcache", harness::ldcache, &cache, "/etc/ld.so.cache");
    }
}

#[test]
fn marker_of_the_package_schema() {
    let marker = r#"{"commit":"b539bf7a0c3d4e5f60718293a4b5c6d7e8f90123","commit_time":1764720000,
      "flavor":"gfx-all","prefix":"/opt/rocm-7.2.4",
      "replaced":[{"stock_name":"hsa-rocr","stock_version":"1.18.0.70204-93~24.04","architecture":"amd64",
        "package":"hsa-rocr-pinned","version":"1.18.0.70204-93~24.04+pin1764720000.gb539bf7"}],
      "libraries":[{"path":"/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0-b539bf7","soname":"libhsa-runtime64.so.1",
        "sha256":"00","aliases":["/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204"],"package":"hsa-rocr-pinned"}],
      "files":{"/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0-b539bf7":"00"},"tool_version":"0.1.0",
      "patches":[{"name":"0001-a.patch","sha256":"11"}],"backport_check_skipped":true,"source":"x"}"#;
    run(
        "marker",
        harness::marker,
        marker.as_bytes(),
        "a full marker",
    );
    run(
        "marker",
        harness::marker,
        b"{\"commit\":",
        "a truncated marker",
    );
}

/// A layer made by GNU tar from a tree holding a file, a directory, an absolute and a relative
/// symlink, a hard link and whiteouts of the scratch's lower layer, the absolute symlink and an
/// opaque directory.
fn gnu_tar_layer() -> Vec<u8> {
    let tree = tempfile::tempdir().unwrap();
    let t = tree.path();
    fs::create_dir_all(t.join("usr/lib")).unwrap();
    fs::create_dir_all(t.join("etc/new")).unwrap();
    fs::write(t.join("usr/lib/libx.so.1"), b"\x7fELF").unwrap();
    fs::hard_link(t.join("usr/lib/libx.so.1"), t.join("usr/lib/libx.so.1.0")).unwrap();
    std::os::unix::fs::symlink("libx.so.1", t.join("usr/lib/libx.so")).unwrap();
    std::os::unix::fs::symlink("/etc/d/file", t.join("usr/abs")).unwrap();
    for wh in ["etc/.wh.d", ".wh.abs-out", "etc/new/.wh..wh..opq"] {
        fs::write(t.join(wh), b"").unwrap();
    }
    let out = Command::new("tar")
        .args(["--format=gnu", "--sort=name", "-C"])
        .arg(t)
        .args(["-cf", "-", "."])
        .output()
        .expect("GNU tar runs");
    assert_success(&out, "tar");
    out.stdout
}

#[test]
fn layers_made_by_gnu_tar() {
    let tar = gnu_tar_layer();
    for c in [Compression::None, Compression::Gzip, Compression::Zstd] {
        let packed = compress_bytes(&tar, c, None, 1).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let s = harness::LayerScratch::new(scratch.path().join("s"));
        // Every entry of the layer applies (".", 4 directories, a file and its hard link, 2
        // symlinks, 3 whiteouts):
        // the harness drives the unpacker through its work, not only its error paths.
        assert_eq!(harness::image_layer(&packed, &s), Ok(12), "{c:?} layer");
    }
    // The harness's own check must catch a layer that writes beside the root: a scratch whose
    // sentinel a layer (simulated here) changed fails it.
    let scratch = tempfile::tempdir().unwrap();
    let s = harness::LayerScratch::new(scratch.path().join("s"));
    let _ = harness::image_layer(&tar, &s);
    fs::write(scratch.path().join("s/outside/sentinel"), b"changed").unwrap();
    let caught = catch_unwind(AssertUnwindSafe(|| s.check_outside()));
    assert!(
        caught.is_err(),
        "the harness does not notice a changed file beside the root"
    );
}

/// A `/proc/<pid>/maps` text built from the pieces the parser cares about (runtime and other
/// names, spaces in paths, `(deleted)` in and out of place, short lines, tabs, `\r`, UTF-8),
/// then a few bytes flipped or cut.
fn generated_maps(rng: &mut Rng) -> Vec<u8> {
    const COLUMNS: &[&str] = &[
        "7f00-7f01 r-xp 00000000 08:01 123 ",
        "7f00-7f01 rw-p 00000000 00:00 0      ",
        "7f00-7f01\tr--p\t0\t0:0\t9\t",
        "7f00 r-xp ",
        "",
        "   ",
    ];
    const DIRS: &[&str] = &[
        "/opt/rocm-7.2.4/lib/",
        "/usr/lib/x86_64-linux-gnu/",
        "/my rocm/",
        "",
        "/é/",
        "/",
    ];
    const NAMES: &[&str] = &[
        "libamdhip64.so.7.2.70204",
        "libhsa-runtime64.so.1.18.0",
        "libamdhip64.so",
        "libfoo.so.1",
        "[heap]",
        "..",
        "libhsa-runtime64.so.1 (deleted)",
        "",
    ];
    const ENDS: &[&str] = &[
        " (deleted)\n",
        "\n",
        " (deleted)\r\n",
        " (deleted)",
        "(deleted)\n",
        " (deleted) \n",
    ];
    let mut text = Vec::new();
    for _ in 0..rng.next() % 12 {
        for piece in [
            rng.pick(COLUMNS),
            rng.pick(DIRS),
            rng.pick(NAMES),
            rng.pick(ENDS),
        ] {
            text.extend_from_slice(piece.as_bytes());
        }
    }
    for _ in 0..rng.next() % 3 {
        if text.is_empty() {
            break;
        }
        let at = (rng.next() % text.len() as u64) as usize;
        match rng.next() % 3 {
            0 => text[at] = rng.next() as u8,
            1 => text.truncate(at),
            _ => text.insert(at, b'\n'),
        }
    }
    text
}

/// The maps reader under its fuzz checks on generated texts: 500 always, and for
/// `ROCM_PIN_FUZZ_SECS` seconds when run by hand (`-- --ignored proc_maps_stress`).
fn proc_maps_generated(seed: u64, until: impl Fn(usize) -> bool) -> usize {
    let scratch = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(seed);
    let mut runs = 0;
    while !until(runs) {
        let data = generated_maps(&mut rng);
        let r = catch_unwind(AssertUnwindSafe(|| {
            harness::proc_maps(&data, scratch.path())
        }));
        if r.is_err() {
            let dir = regressions_dir("proc_maps");
            fs::create_dir_all(&dir).unwrap();
            let saved = dir.join(format!("generated-{seed}-{runs}"));
            fs::write(&saved, &data).unwrap();
            panic!(
                "proc_maps: input saved as {} fails its checks",
                saved.display()
            );
        }
        runs += 1;
    }
    runs
}

#[test]
fn proc_maps_generated_quick() {
    proc_maps_generated(0x5eed_0031, |runs| runs == 500);
}

#[test]
#[ignore = "a timed stress run: ROCM_PIN_FUZZ_SECS=120 cargo test --test formats -- --ignored proc_maps_stress"]
fn proc_maps_stress() {
    let secs = stress_secs(60);
    let start = std::time::Instant::now();
    let seed = clock_seed();
    let runs = proc_maps_generated(seed, |_| start.elapsed().as_secs() >= secs);
    eprintln!("proc_maps: {runs} inputs in {secs} s (seed {seed:#x}), no finding");
}

/// Generated layers ([`harness::generated_layer`]): op bytes from a seeded generator, each
/// layer judged by the image_layer checks; a failing input (the op bytes) is saved as
/// `fuzz/regressions/image_layer_ops/<hash>` and named in the panic. Returns the inputs run and
/// how many of them applied whole.
fn generated_layers(seed: u64, until: impl Fn(u64) -> bool) -> (u64, u64) {
    let mut rng = Rng::new(seed);
    let mut next = move || rng.next();
    let scratch = tempfile::tempdir().unwrap();
    let s = harness::LayerScratch::new(scratch.path().join("s"));
    let mut runs = 0;
    let mut applied = 0;
    while !until(runs) {
        let len = 1 + next() % 48;
        let ops: Vec<u8> = (0..len).map(|_| (next() >> 32) as u8).collect();
        let r = catch_unwind(AssertUnwindSafe(|| {
            harness::generated_image_layer(&ops, &s)
        }));
        applied += u64::from(matches!(r, Ok(Ok(_))));
        if let (Ok(Err(e)), Ok(_)) = (&r, std::env::var("ROCM_PIN_FUZZ_SHOW")) {
            eprintln!("{e}");
        }
        if r.is_err() {
            let dir = regressions_dir("image_layer_ops");
            fs::create_dir_all(&dir).unwrap();
            let name = format!(
                "{:016x}",
                ops.iter()
                    .fold(0xcbf29ce484222325u64, |h, &b| (h ^ u64::from(b))
                        .wrapping_mul(0x100000001b3))
            );
            fs::write(dir.join(&name), &ops).unwrap();
            panic!(
                "generated layer {name} (seed {seed}, input {runs}) fails the image_layer checks"
            );
        }
        runs += 1;
    }
    (runs, applied)
}

/// A few hundred generated layers on every run, and the saved ones replayed.
#[test]
fn generated_layers_quick() {
    let dir = regressions_dir("image_layer_ops");
    if let Ok(entries) = fs::read_dir(&dir) {
        for e in entries.flatten() {
            let data = fs::read(e.path()).unwrap();
            let scratch = tempfile::tempdir().unwrap();
            let s = harness::LayerScratch::new(scratch.path().join("s"));
            let r = catch_unwind(AssertUnwindSafe(|| {
                harness::generated_image_layer(&data, &s)
            }));
            assert!(
                r.is_ok(),
                "image_layer_ops: {} fails its checks",
                e.path().display()
            );
        }
    }
    let (runs, applied) = generated_layers(31, |n| n >= 300);
    assert_eq!(runs, 300);
    // The generator reaches the unpacker's work, not only its refusals.
    assert!(
        applied >= 30,
        "only {applied} of 300 generated layers applied"
    );
}

/// `ROCM_PIN_FUZZ_SECS=120 cargo test --release --test formats -- --ignored root_fuzz::generated_layers_stress --nocapture`:
/// generated layers for the given time (seeded by the clock, printed).
#[test]
#[ignore]
fn generated_layers_stress() {
    let secs = stress_secs(60);
    let seed = clock_seed();
    let start = std::time::Instant::now();
    let (runs, applied) = generated_layers(seed, |_| start.elapsed().as_secs() >= secs);
    eprintln!(
        "root_fuzz: {runs} generated layers ({applied} applied whole) in {secs} s (seed {seed}), no finding"
    );
}

/// The harness's oracle for links sees a chain that leaves the root (`x -> .`, then
/// `a/b -> ../x/x/../..`), which each link alone does not show; the unpacker refuses it.
#[test]
fn the_link_oracle_sees_a_chain_leaving_the_root() {
    let scratch = tempfile::tempdir().unwrap();
    let base = scratch.path().join("s");
    fs::create_dir_all(base.join("root/a")).unwrap();
    std::os::unix::fs::symlink(".", base.join("root/x")).unwrap();
    std::os::unix::fs::symlink("../x/x/../..", base.join("root/a/b")).unwrap();
    std::os::unix::fs::symlink("../x/x/..", base.join("root/a/c")).unwrap();
    std::os::unix::fs::symlink("../x/x/a", base.join("root/a/inside")).unwrap();
    let mut leaving: Vec<_> = harness::links_leaving(&base)
        .into_iter()
        .map(|(link, _)| link)
        .collect();
    leaving.sort();
    assert_eq!(
        leaving,
        [base.join("root/a/b"), base.join("root/a/c")],
        "{leaving:?}"
    );
    let mut w = rocm_pin_core::deb::tar::TarWriter::new(Vec::new());
    for (name, target) in [("x", "."), ("a/b", "../x/x/../..")] {
        w.append_header(
            name.as_bytes(),
            rocm_pin_core::deb::tar::WriteKind::Symlink(target.as_bytes()),
            0o777,
            0,
        )
        .unwrap();
    }
    let tar = w.finish().unwrap();
    let s = harness::LayerScratch::new(scratch.path().join("t"));
    let err = harness::image_layer(&tar, &s).unwrap_err();
    assert_says(&err, &["leaves the image root"]);
}
