//! The Dockerfile recipe built by a real OCI builder: docs/docker/*.Dockerfile, unchanged, with
//! Debian's buildah 1.28 (runc, `--layers`, `--network none`), the artifact image pushed to a
//! real registry (docker-registry on 127.0.0.1, started and stopped here through
//! `scripts/images registry`), downstream images pulling it by reference, `podman run`, skopeo's
//! exported layers, and `rocm-pin verify --image` / `--image-archive` on the results.
//!
//! Needs root, the tools from scripts/install-deps and the cached builder chroot tarball
//! (scripts/test-setup); the stand-in base images are made (and cached) by `scripts/images base`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
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

#[test]
fn image_recipe_end_to_end_with_a_real_builder_and_registry() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let _serial = crate::util::one_image_test_at_a_time();
    let t0 = Instant::now();
    let run = ImageRun::start("test", "");
    let (w, tools, run_id) = (run.work.path(), &run.tools, run.run_id.as_str());
    let tag = |name: &str| run.tag(name);
    let mut tags = Tags::new(tools);

    // --- the signing key as a build secret; its secret half must never reach a layer -------
    let (key, key_marker) = signing_key(w);

    // --- base images (cached), registry, artifact image pushed -------------------------------
    let base = images_ok(&["base"]);
    let base_723 = images_ok(&["base", "--rocm-version", "7.2.3"]);
    let registry = Registry(images_ok(&["registry"]));
    assert!(
        registry.0.starts_with("127.0.0.1:"),
        "registry not on loopback: {}",
        registry.0
    );
    let t = Instant::now();
    let out = Command::new(repo_dir().join("scripts/images"))
        .args(["runtime", "--registry", &registry.0])
        .env("ROCM_PIN_CACHE", cache_dir())
        .env("ROCM_PIN_BIN", bin())
        .env("ROCM_PIN_SIGN_KEY", &key)
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
    tags.tags.push(runtime.clone());
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
    assert_eq!(labels["io.rocm-pin.commit"], commit.as_str());
    assert_eq!(labels["io.rocm-pin.rocm-version"], "7.2.4");
    assert!(
        labels["org.opencontainers.image.source"].is_string(),
        "{labels}"
    );
    // FROM scratch: the artifact directory and nothing else.
    let artifact_archive = w.join("runtime.oci.tar");
    tools.ok(
        "skopeo",
        &[
            "copy",
            "--quiet",
            &format!("docker://{runtime}"),
            &format!("oci-archive:{}", artifact_archive.display()),
        ],
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
    let dir = artifact.root().join(&top[0]);
    for f in [
        "COMMIT",
        "SHA256SUMS",
        "bin/rocm-pin",
        "bin/rocm-pin-guard",
        "repo/archive-key.gpg",
        "repo/dists/stable/InRelease",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing from the artifact image");
    }
    drop(artifact);

    // --- downstream builds pull the artifact from the registry ------------------------------
    let ctx = make_context(w);
    tools.ok("buildah", &["rmi", &runtime]);
    assert!(
        !tools.exists(&runtime),
        "the local copy of {runtime} is still there"
    );
    let common = |base: &str, mode: &str| -> Vec<(String, String)> {
        vec![
            ("ROCM_IMAGE".into(), base.into()),
            ("ROCM_PIN_RUNTIME_IMAGE".into(), runtime.clone()),
            ("ROCM_PIN_COMMIT".into(), commit.clone()),
            ("ROCM_PIN_MODE".into(), mode.into()),
        ]
    };
    let build = |file: &str, tag: &str, args: &[(String, String)]| -> Output {
        let a: Vec<(&str, &str)> = args.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        tools.build(&ctx, file, tag, &a)
    };
    let vllm = tag("vllm");
    tags.tags.push(vllm.clone());
    let t = Instant::now();
    let out = build("vllm.Dockerfile", &vllm, &common(&base, "require"));
    let vllm_secs = t.elapsed().as_secs_f64();
    assert_eq!(rc(&out), 0, "vllm.Dockerfile:\n{}", tail(&out));
    assert!(
        tools.exists(&runtime),
        "the build did not pull {runtime} from the registry"
    );
    let s = text(&out);
    assert!(s.contains("verify-runtime: OK"), "{}", tail(&out));

    let sglang = tag("sglang");
    tags.tags.push(sglang.clone());
    // The full rocm-pin kept (ROCM_PIN_KEEP_TOOL=1; the default keeps only the guard binary,
    // tests/images/guard_image.rs): `rocm-pin rollback` runs in it below.
    let mut kept = common(&base, "require");
    kept.push(("ROCM_PIN_KEEP_TOOL".into(), "1".into()));
    let out = build("sglang.Dockerfile", &sglang, &kept);
    assert_eq!(rc(&out), 0, "sglang.Dockerfile:\n{}", tail(&out));
    assert!(text(&out).contains("verify-runtime: OK"), "{}", tail(&out));
    let sglang_id = tools.id(&sglang);

    // podman run: the loader maps the patched pair in both images.
    for image in [&vllm, &sglang] {
        let probe = probe_identities(tools, image);
        let lines: Vec<&str> = probe.lines().collect();
        assert_eq!(lines.len(), 2, "{image}: {probe}");
        assert!(
            runtime_is_patched(lines.iter().copied(), None),
            "{image}: the loader does not map the patched pair:\n{probe}"
        );
    }
    // The new dependant was installed.
    let hipblas = tools.run_in(&sglang, "dpkg-query -W -f '${Status}' hipblas");
    assert_eq!(hipblas.trim(), "install ok installed");

    // verify --image from local storage, and --image-archive on skopeo's exports.
    let out = verify_image(
        &["--image", &format!("containers-storage:{vllm}")],
        &tools.env,
    );
    assert_eq!(rc(&out), 0, "verify --image {vllm}:\n{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "ok   image-label      io.rocm-pin.commit: {commit}"
        )),
        "{}",
        text(&out)
    );
    // The way CI checks a published tag: pushed, then verified by registry reference.
    let published = format!("{}/rocm-pin-test-vllm:{run_id}", registry.0);
    tools.ok(
        "buildah",
        &["push", "--quiet", &vllm, &format!("docker://{published}")],
    );
    let out = verify_image(&["--image", &published], &tools.env);
    assert_eq!(rc(&out), 0, "verify --image {published}:\n{}", text(&out));
    assert!(text(&out).contains("image-label"), "{}", text(&out));
    let oci_archive = w.join("sglang.oci.tar");
    let docker_archive = w.join("sglang.docker.tar");
    tools.ok(
        "skopeo",
        &[
            "copy",
            "--quiet",
            &format!("containers-storage:{sglang}"),
            &format!("oci-archive:{}", oci_archive.display()),
        ],
    );
    tools.ok(
        "skopeo",
        &[
            "copy",
            "--quiet",
            &format!("containers-storage:{sglang}"),
            &format!("docker-archive:{}", docker_archive.display()),
        ],
    );
    for archive in [&oci_archive, &docker_archive] {
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
        assert!(
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "image-label" && c["ok"] == true),
            "{v}"
        );
    }

    // --- exported layers: the stock file names are hard links in the install layer ----------
    let layers = archive_layers(&oci_archive, w);
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
        &format!("stat -c %i /{stock_name} /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.53211-*"),
    );
    let inodes: Vec<&str> = inodes.split_whitespace().collect();
    assert!(
        inodes.len() == 2 && inodes[0] == inodes[1],
        "not one inode in podman run: {inodes:?}"
    );

    // The artifact was bind-mounted, never copied: none of its files is in any layer, and no
    // stock .deb was kept for rollback (install-runtime.sh's --no-rollback).
    let artifact_dir = format!("rocm-pin-{}/", &commit[..12]);
    for (i, layer) in layers.iter().enumerate() {
        for (name, _, _) in layer {
            assert!(
                !name.contains(&artifact_dir) && !name.contains("var/lib/rocm-pin/stock/"),
                "layer {i} of {sglang} holds {name}: the artifact or stock .debs landed in the image"
            );
        }
    }
    // So `rocm-pin rollback` in the image refuses, changing nothing, and says what to do.
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

    // --- a second build with nothing changed comes from the layer cache ---------------------
    let t = Instant::now();
    let again = tag("sglang-again");
    tags.tags.push(again.clone());
    let out = build("sglang.Dockerfile", &again, &kept);
    let cached_secs = t.elapsed().as_secs_f64();
    assert_eq!(rc(&out), 0, "{}", tail(&out));
    assert_eq!(
        tools.id(&again),
        sglang_id,
        "the rebuild made another image:\n{}",
        tail(&out)
    );
    assert!(text(&out).contains("Using cache"), "{}", tail(&out));
    assert!(
        !text(&out).contains("verify-runtime: OK"),
        "a RUN step ran again instead of coming from the cache:\n{}",
        tail(&out)
    );

    // --- a step that reverts the runtime fails the build at the last line -------------------
    let vllm_file = std::fs::read_to_string(ctx.join("rocm-pin/vllm.Dockerfile")).unwrap();
    let verify_line = "RUN --mount=type=bind,from=rocm-pin-runtime,target=/tmp/rocm-pin \\\n    bash /usr/local/share/rocm-pin/docker/verify-runtime.sh\n";
    assert!(
        vllm_file.ends_with(verify_line),
        "vllm.Dockerfile must end with the verify step:\n{vllm_file}"
    );
    let without_verify = &vllm_file[..vllm_file.len() - verify_line.len()];
    // With the guard binary kept (the default), install-runtime.sh arms the guard, whose dpkg hook
    // fails the reverting RUN itself (issue 17): the first build shows that. The revert the
    // guard cannot see (an image built without the tool and its guard, ROCM_PIN_KEEP_TOOL=0)
    // is what the last step must catch, with the rocm-pin binary of the mounted artifact.
    let revert = "RUN dpkg -i --force-all /srv/rocm-stock/hip-runtime-amd_*.deb\n";
    std::fs::write(
        ctx.join("rocm-pin/revert-guarded.Dockerfile"),
        format!("{without_verify}{revert}{verify_line}"),
    )
    .unwrap();
    let out = build(
        "revert-guarded.Dockerfile",
        &tag("reverted-guarded"),
        &common(&base, "require"),
    );
    let s = text(&out);
    assert_ne!(rc(&out), 0, "the guarded revert built:\n{}", tail(&out));
    assert!(
        s.contains("RUN dpkg -i --force-all")
            && !s.contains("verify-runtime.sh")
            && s.contains("FAIL stock-absent hip-runtime-amd"),
        "the guard did not fail the reverting RUN naming the package:\n{}",
        tail(&out)
    );
    std::fs::write(
        ctx.join("rocm-pin/revert.Dockerfile"),
        format!("{without_verify}{revert}{verify_line}"),
    )
    .unwrap();
    std::fs::write(
        ctx.join("rocm-pin/revert-unchecked.Dockerfile"),
        format!("{without_verify}{revert}"),
    )
    .unwrap();
    let mut lean = common(&base, "require");
    lean.push(("ROCM_PIN_KEEP_TOOL".into(), "0".into()));
    let reverted = tag("reverted");
    let out = build("revert.Dockerfile", &reverted, &lean);
    assert_eq!(
        rc(&out),
        1,
        "the reverting build did not fail at verify:\n{}",
        tail(&out)
    );
    let s = text(&out);
    assert!(
        s.contains("verify-runtime: ERROR") && s.contains("FAIL") && s.contains("hip-runtime-amd"),
        "the failure does not name the package:\n{}",
        tail(&out)
    );
    assert!(!tools.exists(&reverted));
    let unchecked = tag("reverted-unchecked");
    tags.tags.push(unchecked.clone());
    let out = build("revert-unchecked.Dockerfile", &unchecked, &lean);
    assert_eq!(
        rc(&out),
        0,
        "without its verify line the image builds:\n{}",
        tail(&out)
    );
    // ROCM_PIN_KEEP_TOOL=0: neither the tool nor its guard nor stock .debs are in the image.
    let left = tools.run_in(
        &unchecked,
        "for p in /usr/local/bin/rocm-pin /usr/lib/rocm-pin/rocm-pin-guard /etc/dpkg/dpkg.cfg.d/rocm-pin-guard /etc/apt/apt.conf.d/80rocm-pin-guard /var/lib/rocm-pin/stock /tmp/rocm-pin/COMMIT; do [ ! -e $p ] || echo $p; done",
    );
    assert_eq!(left.trim(), "", "left in the lean image");
    let out = verify_image(
        &["--image", &format!("containers-storage:{unchecked}")],
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

    // --- a 7.2.3 base: refused in mode require, exit 3 at the last step in auto --------------
    let out = build(
        "sglang.Dockerfile",
        &tag("rocm723"),
        &common(&base_723, "require"),
    );
    assert_eq!(rc(&out), 2, "require on 7.2.3:\n{}", tail(&out));
    let s = text(&out);
    assert!(
        s.contains("install-runtime: ERROR") && s.contains("7.2.4") && s.contains("7.2.3"),
        "the refusal does not name the versions:\n{}",
        tail(&out)
    );
    let out = build(
        "sglang.Dockerfile",
        &tag("rocm723-auto"),
        &common(&base_723, "auto"),
    );
    assert_eq!(rc(&out), 3, "auto on 7.2.3:\n{}", tail(&out));
    assert!(
        text(&out).contains("verify-runtime: ERROR: the version gate skipped this image"),
        "{}",
        tail(&out)
    );

    // --- the signing key is in no layer of any image in the storage -------------------------
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

    eprintln!(
        "images: end to end in {:.1}s (vllm downstream build {vllm_secs:.1}s, cached rebuild {cached_secs:.1}s)",
        t0.elapsed().as_secs_f64()
    );
    drop(tags);
    drop(registry);
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
