//! The Dockerfile recipe built by a real OCI builder: docs/docker/*.Dockerfile, unchanged, with
//! Debian's buildah 1.28 (runc, `--layers`, `--network none`), the artifact image pushed to a
//! real registry (docker-registry on 127.0.0.1, started and stopped here through
//! `scripts/images registry`), downstream images pulling it by reference, `podman run`, skopeo's
//! exported layers, and `rocm-pin verify --image` / `--image-archive` on the results.
//!
//! Needs root, the tools from scripts/install-deps and the cached builder chroot tarball
//! (scripts/test-setup); the stand-in base images are made (and cached) by `scripts/images base`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::*;

/// The build context every recipe Dockerfile expects: rocm-pin/ (docs/docker/) and rccl/ (the
/// stand-in's custom rccl .deb the vLLM shape forces in).
fn make_context(dir: &Path) -> PathBuf {
    let ctx = recipe_context(dir);
    add_custom_rccl(&ctx, dir);
    ctx
}

/// The layers of an oci-archive, in manifest order, as (entry name, typeflag, link) lists.
fn archive_layers(archive: &Path, work: &Path) -> Vec<Vec<(String, u8, String)>> {
    let dir = work.join("oci-layout");
    std::fs::create_dir_all(&dir).unwrap();
    let st = Command::new("tar")
        .arg("-xf")
        .arg(archive)
        .arg("-C")
        .arg(&dir)
        .status()
        .unwrap();
    assert!(st.success());
    let json = |p: PathBuf| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let blob = |d: &str| {
        dir.join("blobs/sha256")
            .join(d.trim_start_matches("sha256:"))
    };
    let index = json(dir.join("index.json"));
    let manifest = json(blob(index["manifests"][0]["digest"].as_str().unwrap()));
    let mut layers = Vec::new();
    for l in manifest["layers"].as_array().unwrap() {
        let path = blob(l["digest"].as_str().unwrap());
        let mut stream = rocm_pin_core::image::layer::open_layer(&path).unwrap();
        let mut entries = Vec::new();
        rocm_pin_core::deb::tar::read_raw(&mut stream, &mut |raw, _| {
            entries.push((
                String::from_utf8_lossy(&raw.name).into_owned(),
                raw.typeflag,
                String::from_utf8_lossy(&raw.link).into_owned(),
            ));
            Ok(())
        })
        .unwrap();
        layers.push(entries);
    }
    layers
}

/// docs/docker.md shows every Dockerfile of docs/docker/ verbatim, after a
/// `<!-- file: docs/docker/NAME -->` line.
#[test]
fn recipe_doc_shows_every_dockerfile_verbatim() {
    let doc = std::fs::read_to_string(repo_dir().join("docs/docker.md")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(repo_dir().join("docs/docker"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".Dockerfile"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 4,
        "expected tool, runtime, vllm, sglang: {names:?}"
    );
    for name in &names {
        let file = std::fs::read_to_string(repo_dir().join("docs/docker").join(name)).unwrap();
        let marker = format!("<!-- file: docs/docker/{name} -->\n```dockerfile\n");
        let start = doc.find(&marker).unwrap_or_else(|| {
            panic!("docs/docker.md does not show docs/docker/{name} (no {marker:?})")
        }) + marker.len();
        let end = start
            + doc[start..]
                .find("```\n")
                .expect("an unterminated code block");
        assert_eq!(
            &doc[start..end],
            file,
            "docs/docker.md's copy of docs/docker/{name} differs from the file: paste the file into the block"
        );
    }
    // No heredocs or COPY --link: buildah 1.28 cannot build them.
    for name in &names {
        let file = std::fs::read_to_string(repo_dir().join("docs/docker").join(name)).unwrap();
        for bad in ["<<", "--link"] {
            assert!(
                !file.lines().any(|l| !l.starts_with('#') && l.contains(bad)),
                "{name} uses {bad}, which buildah 1.28 does not support"
            );
        }
    }
}

/// The labels the artifact image carries, read from the registry (`{commit}`: its revision).
const RUNTIME_LABELS: &[(&str, &str)] = &[
    ("io.rocm-pin.commit", "{commit}"),
    ("io.rocm-pin.rocm-version", "7.2.4"),
];

/// The artifact image is FROM scratch: its one directory holds these files.
const ARTIFACT_FILES: &[&str] = &[
    "COMMIT",
    "SHA256SUMS",
    "bin/rocm-pin",
    "bin/rocm-pin-guard",
    "repo/archive-key.gpg",
    "repo/dists/stable/InRelease",
];

/// What an image built with ROCM_PIN_KEEP_TOOL=0 must not contain: the tool, its guard's
/// hooks, stock .debs, the mounted artifact. (What the kept image holds is judged by
/// `rocm-pin rollback` run in it, in [`check_the_install_layer`].)
const LEAN_IMAGE_LACKS: &[&str] = &[
    "/usr/local/bin/rocm-pin",
    "/usr/lib/rocm-pin/rocm-pin-guard",
    "/etc/dpkg/dpkg.cfg.d/rocm-pin-guard",
    "/etc/apt/apt.conf.d/80rocm-pin-guard",
    "/var/lib/rocm-pin/stock",
    "/tmp/rocm-pin/COMMIT",
];

/// The Dockerfiles made from vllm.Dockerfile: its verify step removed, a RUN that puts the
/// stock HIP back, and the verify step again (`true`) or not.
const REVERTS: &[(&str, bool)] = &[
    ("revert-guarded.Dockerfile", true),
    ("revert.Dockerfile", true),
    ("revert-unchecked.Dockerfile", false),
];

/// What of rocm-pin stays in a downstream image (ROCM_PIN_KEEP_TOOL).
#[derive(Clone, Copy, PartialEq, Eq)]
enum KeepTool {
    /// The recipe's default (`guard`): only the guard binary, which the hooks run.
    GuardOnly,
    /// `1`: the full rocm-pin too (an image that runs `rocm-pin rollback` later).
    Full,
    /// `0`: nothing, and no guard.
    Nothing,
}

/// One downstream build: a Dockerfile of the context's rocm-pin/, its base (`723`: ROCm
/// 7.2.3), ROCM_PIN_MODE, what of the tool is kept, and what must come of it.
struct Build {
    what: &'static str,
    file: &'static str,
    tag: &'static str,
    rocm_723: bool,
    mode: &'static str,
    keep_tool: KeepTool,
    /// The build's exit code; `None`: any failure.
    exit: Option<i32>,
    says: &'static [&'static str],
    says_not: &'static [&'static str],
    /// After it, the artifact image is in local storage (pulled from the registry).
    pulls_runtime: bool,
    /// The tag does not exist after it (a failed build leaves no image).
    no_image: bool,
    /// The image is the one this tag's build made (the layer cache).
    same_as: Option<&'static str>,
}

const BUILD: Build = Build {
    what: "",
    file: "",
    tag: "",
    rocm_723: false,
    mode: "require",
    keep_tool: KeepTool::GuardOnly,
    exit: Some(0),
    says: &[],
    says_not: &[],
    pulls_runtime: false,
    no_image: false,
    same_as: None,
};

/// The recipe's two downstream shapes, pulling the artifact image from the registry.
const DOWNSTREAM: &[Build] = &[
    Build {
        what: "vLLM's shape, the artifact pulled from the registry",
        file: "vllm.Dockerfile",
        tag: "vllm",
        says: &["verify-runtime: OK"],
        pulls_runtime: true,
        ..BUILD
    },
    Build {
        what: "SGLang's shape (a new dependant installed)",
        file: "sglang.Dockerfile",
        tag: "sglang",
        // `rocm-pin rollback` runs in it (check_the_install_layer).
        keep_tool: KeepTool::Full,
        says: &["verify-runtime: OK"],
        ..BUILD
    },
];

/// The builds after them: the cache, the reverts, the version gate.
const AFTERWARDS: &[Build] = &[
    Build {
        what: "a second build with nothing changed comes from the layer cache",
        file: "sglang.Dockerfile",
        tag: "sglang-again",
        keep_tool: KeepTool::Full,
        says: &["Using cache"],
        says_not: &["verify-runtime: OK"],
        same_as: Some("sglang"),
        ..BUILD
    },
    Build {
        what: "the guard binary kept (the default): the guard's dpkg hook fails the reverting RUN itself (issue 17)",
        file: "revert-guarded.Dockerfile",
        tag: "reverted-guarded",
        exit: None,
        says: &[
            "RUN dpkg -i --force-all",
            "FAIL stock-absent hip-runtime-amd",
        ],
        says_not: &["verify-runtime.sh"],
        ..BUILD
    },
    Build {
        what: "no tool, no guard: the last step catches the revert with the artifact's rocm-pin",
        file: "revert.Dockerfile",
        tag: "reverted",
        keep_tool: KeepTool::Nothing,
        exit: Some(1),
        says: &["verify-runtime: ERROR", "FAIL", "hip-runtime-amd"],
        no_image: true,
        ..BUILD
    },
    Build {
        what: "without its verify line the reverted image builds",
        file: "revert-unchecked.Dockerfile",
        tag: "reverted-unchecked",
        keep_tool: KeepTool::Nothing,
        ..BUILD
    },
    Build {
        what: "a 7.2.3 base is refused in mode require, naming the versions",
        file: "sglang.Dockerfile",
        tag: "rocm723",
        rocm_723: true,
        exit: Some(2),
        says: &["install-runtime: ERROR", "7.2.4", "7.2.3"],
        ..BUILD
    },
    Build {
        what: "a 7.2.3 base in mode auto: exit 3 at the last step",
        file: "sglang.Dockerfile",
        tag: "rocm723-auto",
        rocm_723: true,
        mode: "auto",
        exit: Some(3),
        says: &["verify-runtime: ERROR: the version gate skipped this image"],
        ..BUILD
    },
];

/// The downstream builds' shared inputs: the context, the base images, the artifact image.
struct Recipe<'a> {
    run: &'a ImageRun,
    ctx: PathBuf,
    base: String,
    base_723: String,
    runtime: String,
    commit: String,
}

impl Recipe<'_> {
    /// Builds each of `rows`, judged; their tags are removed with `tags`.
    fn build_all(&self, rows: &[Build], tags: &mut Tags) {
        for row in rows {
            let tag = self.run.tag(row.tag);
            tags.tags.push(tag.clone());
            let mut args = vec![
                (
                    "ROCM_IMAGE",
                    if row.rocm_723 {
                        self.base_723.as_str()
                    } else {
                        &self.base
                    },
                ),
                ("ROCM_PIN_RUNTIME_IMAGE", &self.runtime),
                ("ROCM_PIN_COMMIT", &self.commit),
                ("ROCM_PIN_MODE", row.mode),
            ];
            match row.keep_tool {
                KeepTool::GuardOnly => {}
                KeepTool::Full => args.push(("ROCM_PIN_KEEP_TOOL", "1")),
                KeepTool::Nothing => args.push(("ROCM_PIN_KEEP_TOOL", "0")),
            }
            let t = Instant::now();
            let out = self.run.tools.build(&self.ctx, row.file, &tag, &args);
            let what = row.what;
            eprintln!(
                "images: {what}: exit {} in {:.1}s",
                rc(&out),
                t.elapsed().as_secs_f64()
            );
            assert_build_judged(&out, what, row.exit, (row.says, row.says_not));
            let tools = &self.run.tools;
            assert!(
                !row.pulls_runtime || tools.exists(&self.runtime),
                "{what}: did not pull {}",
                self.runtime
            );
            assert!(!row.no_image || !tools.exists(&tag), "{what}: {tag} exists");
            if let Some(first) = row.same_as {
                assert_eq!(
                    tools.id(&tag),
                    tools.id(&self.run.tag(first)),
                    "{what}: another image:\n{}",
                    tail(&out)
                );
            }
        }
    }
}

#[test]
fn image_recipe_end_to_end_with_a_real_builder_and_registry() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let _serial = crate::util::one_image_test_at_a_time();
    let t0 = Instant::now();
    let run = ImageRun::start("test", "");
    let (w, tools) = (run.work.path(), &run.tools);
    let mut tags = Tags::new(tools);

    // The signing key as a build secret; its secret half must never reach a layer.
    let (key, key_marker) = signing_key(w);
    let base = images_ok(&["base"]);
    let base_723 = images_ok(&["base", "--rocm-version", "7.2.3"]);
    let registry = Registry(images_ok(&["registry"]));
    assert!(
        registry.0.starts_with("127.0.0.1:"),
        "registry not on loopback: {}",
        registry.0
    );
    let (runtime, commit) = publish_the_runtime_image(tools, w, &registry, &key);
    tags.tags.push(runtime.clone());

    // Downstream builds pull the artifact from the registry.
    let ctx = make_context(w);
    for (file, verify) in REVERTS {
        let vllm = std::fs::read_to_string(ctx.join("rocm-pin/vllm.Dockerfile")).unwrap();
        let without_verify = vllm
            .strip_suffix(VERIFY_LINE)
            .unwrap_or_else(|| panic!("vllm.Dockerfile must end with the verify step:\n{vllm}"));
        let last = if *verify { VERIFY_LINE } else { "" };
        let text = format!("{without_verify}{REVERT_LINE}{last}");
        std::fs::write(ctx.join("rocm-pin").join(file), text).unwrap();
    }
    tools.ok("buildah", &["rmi", &runtime]);
    assert!(
        !tools.exists(&runtime),
        "the local copy of {runtime} is still there"
    );
    let recipe = Recipe {
        run: &run,
        ctx,
        base,
        base_723,
        runtime,
        commit,
    };
    recipe.build_all(DOWNSTREAM, &mut tags);
    let oci_archive = check_the_downstream_images(&recipe, &registry);
    check_the_install_layer(&recipe, &oci_archive);
    recipe.build_all(AFTERWARDS, &mut tags);
    check_the_lean_image(tools, &run.tag("reverted-unchecked"));

    // The signing key is in no layer of any image in the storage.
    let storage = cache_dir().join("images/storage");
    let out = Command::new("grep")
        .args(["-rlF", "--", &key_marker])
        .arg(&storage)
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "the signing key is in the image storage:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(rc(&out), 1, "grep failed: {}", text(&out));
    eprintln!("images: end to end in {:.1}s", t0.elapsed().as_secs_f64());
    drop(tags);
    drop(registry);
}

/// `scripts/images runtime` builds the artifact image, signing with the build secret, and
/// pushes it to `registry`; its labels and its one directory are checked there. Returns (its
/// reference, its commit).
fn publish_the_runtime_image(
    tools: &Tools,
    w: &Path,
    registry: &Registry,
    key: &Path,
) -> (String, String) {
    let t = Instant::now();
    let out = Command::new(repo_dir().join("scripts/images"))
        .args(["runtime", "--registry", &registry.0])
        .env("ROCM_PIN_CACHE", cache_dir())
        .env("ROCM_PIN_BIN", bin())
        .env("ROCM_PIN_SIGN_KEY", key)
        .output()
        .unwrap();
    eprintln!(
        "images: runtime image built and pushed in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rc(&out), 0, "scripts/images runtime:\n{}", tail(&out));
    assert!(
        text(&out).contains("signing with the build secret rocm-pin-key"),
        "the build did not sign with the secret:\n{}",
        tail(&out)
    );
    let runtime = stdout_last_line(&out);
    assert!(
        runtime.starts_with(&format!("{}/rocm-pin-runtime:", registry.0)),
        "{runtime}"
    );

    // The labels, read from the registry.
    let inspect = tools.ok("skopeo", &["inspect", &format!("docker://{runtime}")]);
    let inspect: serde_json::Value = serde_json::from_str(&inspect).unwrap();
    let labels = &inspect["Labels"];
    let commit = labels["org.opencontainers.image.revision"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        commit.len() == 40 && runtime.ends_with(&format!(":{}", &commit[..12])),
        "revision label {commit:?} vs tag {runtime}"
    );
    for (label, want) in RUNTIME_LABELS {
        assert_eq!(
            labels[label],
            want.replace("{commit}", &commit).as_str(),
            "{label}"
        );
    }
    assert!(
        labels["org.opencontainers.image.source"].is_string(),
        "{labels}"
    );
    // FROM scratch: the artifact directory and nothing else.
    let artifact_archive = w.join("runtime.oci.tar");
    let to = format!("oci-archive:{}", artifact_archive.display());
    tools.ok(
        "skopeo",
        &["copy", "--quiet", &format!("docker://{runtime}"), &to],
    );
    let artifact = rocm_pin_core::image::unpack(&rocm_pin_core::image::ImageSource::Archive(
        artifact_archive,
    ));
    let artifact = artifact.unwrap_or_else(|e| panic!("unpacking {runtime}: {e:#}"));
    let top: Vec<String> = std::fs::read_dir(artifact.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, vec![format!("rocm-pin-{}", &commit[..12])]);
    for f in ARTIFACT_FILES {
        assert!(
            artifact.root().join(&top[0]).join(f).is_file(),
            "{f} missing from the artifact image"
        );
    }
    (runtime, commit)
}

/// The two downstream images: the loader maps the patched pair in both, SGLang's new
/// dependant is installed, and verify passes them from local storage, by registry reference
/// once pushed (the way CI checks a published tag), and as skopeo's oci and docker archives.
/// Returns the SGLang image's oci-archive.
fn check_the_downstream_images(recipe: &Recipe, registry: &Registry) -> PathBuf {
    let (tools, w) = (&recipe.run.tools, recipe.run.work.path());
    let (vllm, sglang) = (recipe.run.tag("vllm"), recipe.run.tag("sglang"));
    for image in [&vllm, &sglang] {
        let probe = probe_identities(tools, image);
        let lines: Vec<&str> = probe.lines().collect();
        assert_eq!(lines.len(), 2, "{image}: {probe}");
        assert!(
            runtime_is_patched(lines.iter().copied(), None),
            "{image}: the loader does not map the patched pair:\n{probe}"
        );
    }
    let hipblas = tools.run_in(&sglang, "dpkg-query -W -f '${Status}' hipblas");
    assert_eq!(hipblas.trim(), "install ok installed");
    let out = verify_image(
        &["--image", &format!("containers-storage:{vllm}")],
        &tools.env,
    );
    assert_eq!(rc(&out), 0, "verify --image {vllm}:\n{}", text(&out));
    let label = format!(
        "ok   image-label      io.rocm-pin.commit: {}",
        recipe.commit
    );
    assert!(text(&out).contains(&label), "{}", text(&out));
    let published = format!("{}/rocm-pin-test-vllm:{}", registry.0, recipe.run.run_id);
    tools.ok(
        "buildah",
        &["push", "--quiet", &vllm, &format!("docker://{published}")],
    );
    let out = verify_image(&["--image", &published], &tools.env);
    assert_eq!(rc(&out), 0, "verify --image {published}:\n{}", text(&out));
    assert!(text(&out).contains("image-label"), "{}", text(&out));
    let oci_archive = w.join("sglang.oci.tar");
    for (archive, format) in [
        (&oci_archive, "oci-archive"),
        (&w.join("sglang.docker.tar"), "docker-archive"),
    ] {
        let to = format!("{format}:{}", archive.display());
        tools.ok(
            "skopeo",
            &[
                "copy",
                "--quiet",
                &format!("containers-storage:{sglang}"),
                &to,
            ],
        );
        let out = verify_image(
            &["--json", "--image-archive", archive.to_str().unwrap()],
            &tools.env,
        );
        assert_eq!(
            rc(&out),
            0,
            "verify --image-archive {}:\n{}",
            archive.display(),
            text(&out)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ok"], true, "{v}");
        let checks = v["checks"].as_array().unwrap();
        assert!(
            checks
                .iter()
                .any(|c| c["name"] == "image-label" && c["ok"] == true),
            "{v}"
        );
    }
    oci_archive
}

/// The SGLang image's exported layers: the stock file names are hard links to the patched
/// library in the install layer (one inode in `podman run`); the artifact was bind-mounted,
/// never copied, and no stock .deb kept (install-runtime.sh's --no-rollback), so `rocm-pin
/// rollback` in the image refuses, changing nothing, and says what to do.
fn check_the_install_layer(recipe: &Recipe, oci_archive: &Path) {
    let (tools, sglang) = (&recipe.run.tools, recipe.run.tag("sglang"));
    let layers = archive_layers(oci_archive, recipe.run.work.path());
    let install_layer = layers
        .iter()
        .find(|l| {
            l.iter()
                .any(|(n, _, _)| n.ends_with("var/lib/dpkg/info/hip-runtime-amd-pinned.list"))
        })
        .expect("no layer installs hip-runtime-amd-pinned");
    let stock_name = "opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204";
    let entry = install_layer
        .iter()
        .find(|(n, _, _)| n.trim_start_matches("./") == stock_name)
        .unwrap_or_else(|| panic!("{stock_name} not in the install layer"));
    let patched_prefix = "opt/rocm-7.2.4/lib/libamdhip64.so.7.2.53211-";
    let (file_entry, link_entry) = if entry.1 == b'1' {
        (
            entry.2.trim_start_matches("./").to_string(),
            stock_name.to_string(),
        )
    } else {
        // tar names the first of the pair as the file and the other as the link to it.
        let link = install_layer
            .iter()
            .find(|(_, t, l)| *t == b'1' && l.trim_start_matches("./") == stock_name)
            .unwrap_or_else(|| panic!("{stock_name} is a plain file and nothing links to it"));
        (
            stock_name.to_string(),
            link.0.trim_start_matches("./").to_string(),
        )
    };
    assert!(
        file_entry.starts_with(patched_prefix) || link_entry.starts_with(patched_prefix),
        "{stock_name} is not linked with the patched library ({file_entry} / {link_entry})"
    );
    let inodes = tools.run_in(
        &sglang,
        &format!("stat -c %i /{stock_name} /{patched_prefix}*"),
    );
    let inodes: Vec<&str> = inodes.split_whitespace().collect();
    assert!(
        inodes.len() == 2 && inodes[0] == inodes[1],
        "not one inode in podman run: {inodes:?}"
    );
    let artifact_dir = format!("rocm-pin-{}/", &recipe.commit[..12]);
    for (i, layer) in layers.iter().enumerate() {
        for (name, _, _) in layer {
            assert!(
                !name.contains(&artifact_dir) && !name.contains("var/lib/rocm-pin/stock/"),
                "layer {i} of {sglang} holds {name}: the artifact or stock .debs landed in the image"
            );
        }
    }
    let out = tools.run(
        "podman",
        &[
            "run",
            "--rm",
            "--network",
            "none",
            &sglang,
            "rocm-pin",
            "rollback",
        ],
    );
    assert_eq!(
        rc(&out),
        2,
        "rocm-pin rollback in the image:\n{}",
        text(&out)
    );
    assert!(
        text(&out).contains("--no-rollback") && text(&out).contains("previous image"),
        "rollback does not say how to get stock back:\n{}",
        text(&out)
    );
}

/// ROCM_PIN_KEEP_TOOL=0 and a reverting step without the verify line: none of
/// [`LEAN_IMAGE_LACKS`] is in the image, and verify --image fails it naming the package.
fn check_the_lean_image(tools: &Tools, image: &str) {
    let script = format!(
        "for p in {}; do [ ! -e $p ] || echo $p; done",
        LEAN_IMAGE_LACKS.join(" ")
    );
    let left = tools.run_in(image, &script);
    assert_eq!(left.trim(), "", "left in the lean image");
    let out = verify_image(
        &["--image", &format!("containers-storage:{image}")],
        &tools.env,
    );
    assert_eq!(
        rc(&out),
        1,
        "verify --image on the reverted image:\n{}",
        text(&out)
    );
    assert!(
        text(&out).contains("FAIL") && text(&out).contains("hip-runtime-amd"),
        "{}",
        text(&out)
    );
}

/// scripts/images fails with a message that says what to do, and changes nothing, when its
/// inputs are missing.
#[test]
fn images_script_refuses_clearly() {
    let empty = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(repo_dir().join("scripts/images"))
            .args(args)
            .env("ROCM_PIN_CACHE", empty.path())
            .env("ROCM_PIN_BIN", bin())
            .output()
            .unwrap()
    };
    let out = run(&["runtime"]);
    assert_eq!(rc(&out), 2, "runtime without --registry:\n{}", text(&out));
    assert!(
        text(&out).contains("--registry HOST:PORT"),
        "{}",
        text(&out)
    );
    let out = run(&["frobnicate"]);
    assert_eq!(rc(&out), 2, "{}", text(&out));
    if unsafe { libc::geteuid() } == 0 {
        let out = run(&["base"]);
        assert_eq!(
            rc(&out),
            1,
            "base without the chroot tarball:\n{}",
            text(&out)
        );
        assert!(
            text(&out).contains("bookworm-apt.tar.zst is missing: run scripts/test-setup"),
            "{}",
            text(&out)
        );
    }
    // Only the tools' configuration was written: no storage, no image.
    let mut left: Vec<String> = walk(empty.path());
    left.sort();
    assert!(
        left.iter().all(|p| p.ends_with(".conf") || p == "images"),
        "{left:?}"
    );
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push(p.strip_prefix(dir).unwrap().display().to_string());
        if p.is_dir() {
            out.extend(
                walk(&p)
                    .into_iter()
                    .map(|c| format!("{}/{c}", p.file_name().unwrap().to_string_lossy())),
            );
        }
    }
    out
}
