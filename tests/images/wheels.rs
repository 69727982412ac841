//! An image with ROCm as Python wheels (issue 33, item 5): docs/docker/wheels.Dockerfile,
//! unchanged, built by buildah with `--network none` on the cached bookworm-day2 tarball (the
//! smallest cached image with a python3 and its venv module; imported once and kept). The
//! stand-in wheels (tests/wheels/standin_wheels.py: TheRock's layout, a torch stand-in whose ELF
//! has a forced DT_RPATH into `_rocm_sdk_core/lib`) come from a PEP 503 tree in the build
//! context, pip from the cached wheel of scripts/setup.d/40-pip-uv.sh; our rocm-sdk-core is made
//! by `rocm-pin package --wheels` from a host venv holding the same stock set.
//!
//! The image passes `rocm-pin verify` in its last RUN and `verify --image-archive` from outside,
//! whose JSON lists the `_rocm_sdk_core` copy and the `_rocm_sdk_devel` (`/opt/rocm`) copy, both
//! ours. The same image patched by hand under `/opt/rocm` only (SGLang's ordering-edge method:
//! our files over the devel tree's names, `_rocm_sdk_core` left stock) fails verify, naming
//! `_rocm_sdk_core` and the torch library that maps it.
//!
//! Needs root, the OCI tools (scripts/install-deps) and scripts/test-setup's bookworm-day2
//! tarball and pip-uv/ wheels.

use rocm_pin_testkit::assert_says;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use crate::util::*;
use rocm_pin_testkit::gcc::{runtime_pair, torch_consumer, torch_library};
use rocm_pin_testkit::must;

const DAY2: &str = "chroot/bookworm-day2.tar.zst";
const DOCKERFILE: &str = "wheels.Dockerfile";
const STOCK: &str = "10.0.0";
const COMMIT: &str = "b539bf7eebfd99ad0a69668caa1f4037034d501f";
/// The program that runs the pair, and torch's library verify finds as the consumer.
const CONSUMER: &str = "torch/lib/torch_consumer";
const TORCH_LIB: &str = "torch/lib/libtorch_hip.so";

/// A command with no PIP_*/UV_* settings of the machine running the tests (PIP_FIND_LINKS there
/// would replace the venv's).
fn clean(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for (k, _) in std::env::vars() {
        if k.starts_with("PIP_") || k.starts_with("UV_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    cmd
}

/// The build context: rocm-pin/ (docs/docker/), rocm-index/ (the stand-in stock wheels as a PEP
/// 503 tree), pip-wheel/, and rocm-pin-wheels/ (bin/rocm-pin, wheels/<ours>, made from a host
/// venv holding the same stock set).
fn make_context(w: &Path, pip_uv: &Path) -> PathBuf {
    let ctx = recipe_context(w);
    let elf = w.join("elf");
    runtime_pair(&elf.join(STOCK), &format!("STOCK-{STOCK}"), false);
    torch_consumer(&elf, &elf.join(STOCK));
    torch_library(&elf, &elf.join(STOCK));
    let script = repo_dir().join("tests/wheels/standin_wheels.py");
    let index = ctx.join("rocm-index");
    must(
        clean("python3")
            .arg(&script)
            .arg(&index)
            .arg(&elf)
            .arg(STOCK),
    );
    let pip = std::fs::read_dir(pip_uv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("pip-") && n.ends_with(".whl")
        })
        .expect("a pip wheel in pip-uv/");
    std::fs::create_dir_all(ctx.join("pip-wheel")).unwrap();
    std::fs::copy(&pip, ctx.join("pip-wheel").join(pip.file_name().unwrap())).unwrap();

    // The stock set in a host venv, the way the image installs it; our wheel made from it.
    let venv = w.join("venv");
    must(
        clean("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    must(
        clean(venv.join("bin/python"))
            .arg(pip.join("pip"))
            .args(["install", "-q", "--no-index"])
            .arg(&pip),
    );
    must(
        clean(venv.join("bin/pip"))
            .args(["install", "-q", "--index-url"])
            .arg(format!("file://{}/", index.display()))
            .args([&format!("rocm[libraries,devel]=={STOCK}"), "torch"])
            .env("PIP_CACHE_DIR", w.join("pip-cache")),
    );
    must(clean(venv.join("bin/rocm-sdk")).arg("init"));
    let staging = w.join("staging");
    runtime_pair(&staging.join("lib"), "PATCHED", true);
    let wheels = ctx.join("rocm-pin-wheels/wheels");
    let out = must(
        clean(bin())
            .args(["package", "--wheels", "--stock-venv"])
            .arg(&venv)
            .arg("--staging")
            .arg(&staging)
            .args(["--commit", COMMIT, "--commit-time", "1764720000", "--out"])
            .arg(&wheels),
    );
    let ours = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(ours.is_file(), "package --wheels printed {ours:?}");
    std::fs::create_dir_all(ctx.join("rocm-pin-wheels/bin")).unwrap();
    std::fs::copy(bin(), ctx.join("rocm-pin-wheels/bin/rocm-pin")).unwrap();
    ctx
}

/// The image bookworm-day2's tarball makes (imported once, kept like scripts/images' bases).
fn python_base(tools: &Tools, tarball: &Path) -> String {
    let meta = std::fs::metadata(tarball).unwrap();
    let mtime = std::os::unix::fs::MetadataExt::mtime(&meta);
    let base = format!(
        "localhost/rocm-pin-standin/bookworm-day2:{}-{mtime}",
        meta.len()
    );
    if !tools.exists(&base) {
        let t = Instant::now();
        let out = tools.run(
            "sh",
            &[
                "-c",
                &format!(
                    "zstd -dc '{}' | podman import --quiet - '{base}'",
                    tarball.display()
                ),
            ],
        );
        assert_eq!(
            rc(&out),
            0,
            "importing {}:\n{}",
            tarball.display(),
            tail(&out)
        );
        eprintln!(
            "images: imported {} as {base} in {:.1}s (once per tarball)",
            tarball.display(),
            t.elapsed().as_secs_f64()
        );
    }
    base
}

/// The hand method: wheels.Dockerfile with its rocm-pin steps replaced by our libraries copied
/// over what /opt/rocm resolves to (the devel tree's names; `cp --remove-destination` breaks the
/// hard links, as any copy tool that unlinks first does), `_rocm_sdk_core` left as pip put it.
fn hand_patched_variant(ctx: &Path) {
    let file = std::fs::read_to_string(ctx.join("rocm-pin").join(DOCKERFILE)).unwrap();
    let app = file
        .find("FROM rocm1000-base AS app\n")
        .expect("wheels.Dockerfile has the app stage");
    let hand = concat!(
        "FROM rocm1000-base AS app\n",
        "RUN --mount=type=bind,source=rocm-pin-wheels,target=/tmp/rocm-pin \\\n",
        "    python -m zipfile -e /tmp/rocm-pin/wheels/rocm_sdk_core-*.whl /tmp/ours \\\n",
        "    && for f in /tmp/ours/_rocm_sdk_core/lib/*.so.*; do n=${f##*/}; \\\n",
        "      cp --remove-destination \"$f\" \"/opt/rocm/lib/$n\" \\\n",
        "      && cp --remove-destination \"$f\" \"/opt/rocm/lib/${n%%.so.*}.so\"; done \\\n",
        "    && rm -rf /tmp/ours\n",
    );
    std::fs::write(
        ctx.join("rocm-pin/wheels-hand.Dockerfile"),
        format!("{}{hand}", &file[..app]),
    )
    .unwrap();
}

/// `verify --image-archive` of `image` (saved as an oci-archive under `w`), with `--json`.
fn verify_archive(tools: &Tools, w: &Path, image: &str, name: &str) -> (Output, serde_json::Value) {
    let archive = w.join(format!("{name}.oci.tar"));
    tools.ok(
        "podman",
        &[
            "save",
            "--quiet",
            "--format",
            "oci-archive",
            "-o",
            archive.to_str().unwrap(),
            image,
        ],
    );
    let out = verify_image(
        &["--image-archive", archive.to_str().unwrap(), "--json"],
        &tools.env,
    );
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("verify --json: {e}:\n{}", text(&out)));
    std::fs::remove_file(&archive).unwrap();
    (out, json)
}

fn copies(json: &serde_json::Value) -> Vec<(String, bool)> {
    json["shadow"]["copies"]
        .as_array()
        .unwrap_or_else(|| panic!("no shadow.copies: {json:#}"))
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["patched"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn wheel_image_pins_through_rocm_pin_and_a_hand_patched_opt_rocm_fails_verify() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let tarball: PathBuf = rocm_pin_testkit::needs_setup!(DAY2);
    let pip_uv: PathBuf = rocm_pin_testkit::needs_setup!("pip-uv");
    let _serial = one_image_test_at_a_time();
    let t0 = Instant::now();
    let run = ImageRun::start("wheels", "wheels-");
    let (w, tools) = (run.work.path(), &run.tools);
    let tag = |name: &str| run.tag(name);
    let mut tags = Tags::new(tools);
    let base = python_base(tools, &tarball);
    let ctx = make_context(w, &pip_uv);
    let index_url = "file:///ctx/rocm-index/";
    let args = [
        ("PYTHON_IMAGE", base.as_str()),
        ("ROCM_INDEX_URL", index_url),
    ];

    // --- the recipe: stock wheels, ours through rocm-pin, verify last ------------------------
    let app = tag("app");
    tags.tags.push(app.clone());
    let t = Instant::now();
    let out = tools.build(&ctx, DOCKERFILE, &app, &args);
    let build_secs = t.elapsed().as_secs_f64();
    assert_eq!(rc(&out), 0, "{DOCKERFILE}:\n{}", tail(&out));
    let site = check_the_recipe_image(tools, w, &app);

    // --- the same image patched by hand under /opt/rocm only ---------------------------------
    hand_patched_variant(&ctx);
    let hand = tag("hand");
    tags.tags.push(hand.clone());
    let out = tools.build(&ctx, "wheels-hand.Dockerfile", &hand, &args);
    assert_eq!(rc(&out), 0, "wheels-hand.Dockerfile:\n{}", tail(&out));
    check_the_hand_patched_image(tools, w, &hand, &site);

    eprintln!(
        "images: wheels end to end in {:.1}s (recipe build {build_secs:.1}s, base {base})",
        t0.elapsed().as_secs_f64()
    );
    drop(tags);
}

/// In the recipe's image each of these (under site-packages) holds each of [`PATCHED_LIBS`] as
/// the patched build.
const PATCHED_DIRS: &[&str] = &["_rocm_sdk_core/lib", "_rocm_sdk_devel/lib"];
const PATCHED_LIBS: &[&str] = &["libamdhip64.so.7", "libhsa-runtime64.so.1"];

/// The recipe's image (stock wheels, ours through rocm-pin, verify last): /opt/rocm points into
/// the venv's site-packages (returned), RPATH decides and maps ours, verify --image-archive
/// lists every copy, the devel one as /opt/rocm's, torch's library as the consumer mapping the
/// core's copy, which is ours.
fn check_the_recipe_image(tools: &Tools, w: &Path, app: &str) -> String {
    let site = tools
        .run_in(app, "readlink /opt/rocm")
        .trim()
        .trim_end_matches("/_rocm_sdk_devel")
        .to_string();
    assert!(
        site.starts_with("/opt/venv/lib/python3") && site.ends_with("/site-packages"),
        "/opt/rocm -> {site}"
    );
    let consumer = format!("{site}/{CONSUMER}");
    let torch_lib = format!("{site}/{TORCH_LIB}");
    // RPATH decides: the consumer maps _rocm_sdk_core's file, which is ours.
    let ran = tools.run_in(app, &format!("LD_DEBUG=files {consumer} 2>&1"));
    assert_says(&ran, &["PATCHED PATCHED"]);
    // ld.so names the file as the RPATH spelled it: torch/lib/../../_rocm_sdk_core/lib/….
    let mapped = ran
        .lines()
        .find_map(|l| {
            l.split("calling init: ")
                .nth(1)
                .filter(|p| p.contains("libamdhip64"))
        })
        .unwrap_or_default();
    assert!(
        mapped.starts_with(&site) && mapped.ends_with("/../../_rocm_sdk_core/lib/libamdhip64.so.7"),
        "ld.so mapped {mapped:?}:\n{ran}"
    );
    let (out, json) = verify_archive(tools, w, app, "app");
    assert_eq!(rc(&out), 0, "verify --image-archive {app}:\n{}", text(&out));
    let found = copies(&json);
    for dir in PATCHED_DIRS {
        for lib in PATCHED_LIBS {
            let path = format!("{site}/{dir}/{lib}");
            assert!(
                found.contains(&(path.clone(), true)),
                "{path} not listed as the patched build: {found:?}"
            );
        }
    }
    let devel = json["shadow"]["copies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["path"]
                .as_str()
                .unwrap()
                .contains("_rocm_sdk_devel/lib/libamdhip64.so.7")
        })
        .unwrap();
    assert!(
        devel["found_in"].to_string().contains("/opt/rocm"),
        "the devel copy is not found as /opt/rocm's: {devel:#}"
    );
    assert!(
        json["shadow"]["consumers"].to_string().contains(TORCH_LIB),
        "{json:#}"
    );
    // The copy torch's library maps through its DT_RPATH is the core's, and it is ours.
    let core = json["shadow"]["copies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == format!("{site}/_rocm_sdk_core/lib/libamdhip64.so.7").as_str())
        .unwrap();
    assert!(
        core["mapped_by"].to_string().contains(&torch_lib) && core["patched"] == true,
        "{core:#}"
    );

    site
}

/// The same image patched by hand under /opt/rocm only: /opt/rocm holds ours while torch runs
/// stock, and verify fails the shadowing copy naming torch's library and the fix.
fn check_the_hand_patched_image(tools: &Tools, w: &Path, hand: &str, site: &str) {
    let consumer = format!("{site}/{CONSUMER}");
    let torch_lib = format!("{site}/{TORCH_LIB}");
    let ran = tools.run_in(
        hand,
        &format!("{consumer}; grep -c PATCHED /opt/rocm/lib/libamdhip64.so.7 /opt/rocm/lib/libamdhip64.so"),
    );
    assert!(
        ran.starts_with(&format!("STOCK-{STOCK} STOCK-{STOCK}\n"))
            && ran.contains("/opt/rocm/lib/libamdhip64.so.7:1")
            && ran.contains("/opt/rocm/lib/libamdhip64.so:1"),
        "/opt/rocm holds ours while torch runs stock:\n{ran}"
    );
    let (out, json) = verify_archive(tools, w, hand, "hand");
    assert_eq!(
        rc(&out),
        1,
        "verify --image-archive {hand}:\n{}",
        text(&out)
    );
    let failed: Vec<&serde_json::Value> = json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .collect();
    for c in &failed {
        eprintln!(
            "images: hand-patched: FAIL {} {}: {}",
            c["name"], c["subject"], c["detail"]
        );
    }
    let core_copy = format!("{site}/_rocm_sdk_core/lib/libamdhip64.so.7");
    assert!(
        failed.iter().any(|c| c["name"] == "shadow"
            && c["subject"] == core_copy.as_str()
            && c["detail"].as_str().unwrap().contains(&torch_lib)
            && c["detail"]
                .as_str()
                .unwrap()
                .contains("rocm-pin install --venv /opt/venv ")),
        "no failure naming {core_copy} and {torch_lib}: {failed:#?}"
    );
    let found = copies(&json);
    assert!(found.contains(&(core_copy.clone(), false)), "{found:?}");
}
