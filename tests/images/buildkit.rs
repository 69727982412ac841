//! The recipe's Dockerfiles (docs/docker/), unchanged, built by BuildKit: Debian's docker.io 20.10
//! and its built-in BuildKit, through a private dockerd under the cache (`scripts/images buildkit`,
//! no iptables, no bridge, runc, `--network none`), driven by both front ends: `docker buildx
//! build` (Debian trixie's buildx plugin, docker driver) for the artifact and the SGLang builds,
//! `DOCKER_BUILDKIT=1 docker build` for the vLLM builds. The artifact image is built with the signing
//! key as a BuildKit secret, pushed to the loopback registry, removed locally and pulled back by
//! the vLLM- and SGLang-shaped downstream builds; `docker run` shows the loader maps the patched
//! pair, `rocm-pin verify --image-archive` passes on `docker save`'s archive, a reverting step
//! fails the build at its last line, a 7.2.3 base fails it at install-runtime.sh.
//! tests/images/buildah.rs does the same with buildah 1.28; docs/docker.md lists where the two differ.
//!
//! Needs root, scripts/install-deps (docker.io, buildah, podman, docker-registry), the cached
//! builder chroot tarball and the buildx plugin (scripts/test-setup).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use crate::util::*;

/// Debian's docker CLI (20.10) on the private dockerd.
struct Docker {
    host: String,
}

impl Docker {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("/usr/bin/docker")
            .args(args)
            .env("DOCKER_HOST", &self.host)
            .output()
            .expect("run /usr/bin/docker (scripts/install-deps installs docker.io)")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(rc(&out), 0, "docker {args:?}:\n{}", tail(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `docker run --rm --network none IMAGE sh -c SCRIPT` (the dockerd has no bridge).
    fn run_in(&self, image: &str, script: &str) -> String {
        self.ok(&[
            "run",
            "--rm",
            "--network",
            "none",
            image,
            "sh",
            "-c",
            script,
        ])
    }
}

/// Stops the private dockerd and the registry, and removes this test's images, however the test
/// ends. The dockerd's data root stays: the loaded base images and BuildKit's cache.
struct Cleanup<'a> {
    docker: &'a Docker,
    tags: Vec<String>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        for t in &self.tags {
            let _ = self.docker.run(&["rmi", "-f", t]);
        }
        let _ = self.docker.run(&["builder", "prune", "-f"]);
        for args in [&["buildkit", "stop"][..], &["registry", "--stop"][..]] {
            let out = images(args);
            if !out.status.success() {
                eprintln!("scripts/images {args:?} failed: {}", text(&out));
            }
        }
    }
}

/// The build context: rocm-pin/ (docs/docker/), rocm-systems/ (the stand-in source), rccl/ (the
/// stand-in's custom rccl .deb). Returns the context and the stand-in source's commit.
fn make_context(dir: &Path) -> (PathBuf, String) {
    let ctx = recipe_context(dir);
    let commit = add_standin_source(&ctx);
    add_custom_rccl(&ctx, dir);
    (ctx, commit)
}

/// Which Docker CLI front end drives the dockerd's BuildKit.
#[derive(Clone, Copy)]
enum Front {
    /// `DOCKER_BUILDKIT=1 docker build` (`scripts/images buildkit build`).
    Build,
    /// `docker buildx build --builder default --load`, the docker driver
    /// (`scripts/images buildkit buildx`; the plugin is Debian trixie's docker-buildx).
    Buildx,
}

/// `scripts/images buildkit build|buildx -f <ctx>/rocm-pin/FILE [EXTRA] --build-arg K=V... -t TAG <ctx>`.
fn buildkit(
    front: Front,
    ctx: &Path,
    file: &str,
    tag: &str,
    extra: &[&str],
    args: &[(&str, &str)],
) -> Output {
    let dockerfile = ctx.join("rocm-pin").join(file).display().to_string();
    let sub = match front {
        Front::Build => "build",
        Front::Buildx => "buildx",
    };
    let mut argv: Vec<String> = vec!["buildkit".into(), sub.into(), "-f".into(), dockerfile];
    argv.extend(extra.iter().map(|s| s.to_string()));
    for (k, v) in args {
        argv.push("--build-arg".into());
        argv.push(format!("{k}={v}"));
    }
    argv.extend(["-t".into(), tag.into(), ctx.display().to_string()]);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    images(&refs)
}

/// Offline BuildKit cannot fetch a `# syntax=` frontend image; the built-in one must do.
#[test]
fn recipe_dockerfiles_need_no_frontend_image() {
    let mut n = 0;
    for e in std::fs::read_dir(repo_dir().join("docs/docker")).unwrap() {
        let p = e.unwrap().path();
        if !p.to_string_lossy().ends_with(".Dockerfile") {
            continue;
        }
        n += 1;
        let file = std::fs::read_to_string(&p).unwrap();
        let first = file.lines().next().unwrap_or("").to_ascii_lowercase();
        assert!(
            !first.replace(' ', "").starts_with("#syntax="),
            "{}: a `# syntax=` line makes BuildKit pull a frontend image, which an offline build \
             cannot; the built-in frontend of Docker 20.10+ has every feature the recipe uses",
            p.display()
        );
    }
    assert!(n >= 4, "expected tool, runtime, vllm, sglang Dockerfiles");
}

#[test]
fn recipe_builds_unchanged_with_buildkit_and_pulls_from_the_loopback_registry() {
    rocm_pin_testkit::needs_root!("a private dockerd and runc");
    let _serial = crate::util::one_image_test_at_a_time();
    let t0 = Instant::now();
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-images-buildkit-")
        .tempdir()
        .unwrap();
    let w = work.path();

    // --- inputs: stand-in bases, the tool image, a registry, the private dockerd -------------
    let builder = images_ok(&["base", "--builder"]);
    let base = images_ok(&["base"]);
    let base_723 = images_ok(&["base", "--rocm-version", "7.2.3"]);
    let tool = images_ok(&["tool"]);
    let registry = images_ok(&["registry"]);
    assert!(registry.starts_with("127.0.0.1:"), "{registry}");
    let docker = Docker {
        host: images_ok(&["buildkit", "start"]),
    };
    let mut cleanup = Cleanup {
        docker: &docker,
        tags: Vec::new(),
    };
    let version = docker.ok(&["version", "--format", "{{.Server.Version}}"]);
    eprintln!("images_buildkit: dockerd {}", version.trim());
    let buildx = cache_dir().join("docker-buildx/config");
    let out = Command::new("/usr/bin/docker")
        .args(["buildx", "version"])
        .env("DOCKER_CONFIG", &buildx)
        .output()
        .unwrap();
    assert_eq!(
        rc(&out),
        0,
        "docker buildx (scripts/setup.d/31-docker-buildx.sh puts it in {}):\n{}",
        buildx.display(),
        text(&out)
    );
    eprintln!(
        "images_buildkit: {}",
        String::from_utf8_lossy(&out.stdout).trim()
    );

    let (key, key_marker) = signing_key(w);
    let (ctx, commit) = make_context(w);
    let run_id = format!("t{}", std::process::id());

    // --- the artifact image: BuildKit secret, labels, pushed, removed locally ---------------
    let runtime = format!(
        "{registry}/rocm-pin-runtime-buildkit:{}-{run_id}",
        &commit[..12]
    );
    cleanup.tags.push(runtime.clone());
    let secret = format!("id=rocm-pin-key,src={}", key.display());
    let t = Instant::now();
    // The artifact through `docker buildx build`, the vLLM build through `docker build`, the
    // SGLang build through buildx again: both front ends, one BuildKit, one cache.
    let out = buildkit(
        Front::Buildx,
        &ctx,
        "runtime.Dockerfile",
        &runtime,
        &["--secret", &secret],
        &[
            ("ROCM_IMAGE", &builder),
            ("ROCM_PIN_TOOL_IMAGE", &tool),
            ("ROCM_PIN_COMMIT", &commit),
            ("ROCM_PIN_SOURCE", "/ctx/rocm-systems"),
            ("INSTALL_BUILD_DEPS", "0"),
            ("MAX_JOBS", "2"),
            ("ROCM_PIN_SIGN_KEY_ID", &run_id),
        ],
    );
    let runtime_secs = t.elapsed().as_secs_f64();
    assert_eq!(rc(&out), 0, "runtime.Dockerfile:\n{}", tail(&out));
    assert!(
        text(&out).contains("signing with the build secret rocm-pin-key"),
        "the build did not sign with the secret:\n{}",
        tail(&out)
    );
    let labels = docker.ok(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.Labels}}",
        &runtime,
    ]);
    let labels: serde_json::Value = serde_json::from_str(&labels).unwrap();
    assert_eq!(labels["org.opencontainers.image.revision"], commit.as_str());
    assert_eq!(labels["io.rocm-pin.commit"], commit.as_str());
    assert_eq!(labels["io.rocm-pin.rocm-version"], "7.2.4");
    assert_eq!(
        labels["org.opencontainers.image.source"],
        "/ctx/rocm-systems"
    );
    docker.ok(&["push", "--quiet", &runtime]);
    docker.ok(&["rmi", &runtime]);
    assert_ne!(
        rc(&docker.run(&["image", "inspect", &runtime])),
        0,
        "the local copy of {runtime} is still there"
    );

    // --- downstream builds pull it from the registry -----------------------------------------
    let registry_log = cache_dir().join("images/registry/log");
    let log_len = std::fs::metadata(&registry_log).map_or(0, |m| m.len()) as usize;
    let common = |base: &str| -> Vec<(&'static str, String)> {
        vec![
            ("ROCM_IMAGE", base.to_string()),
            ("ROCM_PIN_RUNTIME_IMAGE", runtime.clone()),
            ("ROCM_PIN_COMMIT", commit.clone()),
        ]
    };
    let build = |front: Front, file: &str, tag: &str, args: &[(&'static str, String)]| -> Output {
        let a: Vec<(&str, &str)> = args.iter().map(|(k, v)| (*k, v.as_str())).collect();
        buildkit(front, &ctx, file, tag, &[], &a)
    };
    let mut downstream = Vec::new();
    let mut secs = [0.0; 2];
    for (name, front) in [("vllm", Front::Build), ("sglang", Front::Buildx)] {
        let tag = format!("rocm-pin-test/{name}-buildkit:{run_id}");
        cleanup.tags.push(tag.clone());
        let t = Instant::now();
        let out = build(front, &format!("{name}.Dockerfile"), &tag, &common(&base));
        secs[downstream.len()] = t.elapsed().as_secs_f64();
        assert_eq!(rc(&out), 0, "{name}.Dockerfile:\n{}", tail(&out));
        assert!(text(&out).contains("verify-runtime: OK"), "{}", tail(&out));
        downstream.push(tag);
    }
    let log = std::fs::read_to_string(&registry_log).unwrap_or_default();
    let name = runtime
        .trim_start_matches(&format!("{registry}/"))
        .split(':')
        .next()
        .unwrap();
    assert!(
        log.get(log_len..)
            .unwrap_or("")
            .contains(&format!("GET /v2/{name}/manifests/")),
        "the downstream builds did not fetch {runtime} from the registry (its log after the push):\n{}",
        log.get(log_len..).unwrap_or("")
    );

    // docker run: the loader maps the patched pair; the stock file names are one inode with it.
    for image in &downstream {
        let probe = docker.run_in(
            image,
            "rocm-pin-loader-probe libhsa-runtime64.so.1 libamdhip64.so.7",
        );
        let lines: Vec<&str> = probe.lines().collect();
        assert!(
            runtime_is_patched(lines.iter().copied(), None),
            "{image}: the loader does not map the patched pair:\n{probe}"
        );
        let inodes = docker.run_in(
            image,
            "cd /opt/rocm-7.2.4/lib && stat -L -c %i libamdhip64.so.7 libamdhip64.so.7.2.70204 \
             libhsa-runtime64.so.1 libhsa-runtime64.so.1.18.70204",
        );
        let i: Vec<&str> = inodes.split_whitespace().collect();
        assert!(
            i.len() == 4 && i[0] == i[1] && i[2] == i[3],
            "{image}: the stock names are not the patched inode: {inodes}"
        );
    }
    // docker save (a docker-archive) checked from the outside: one image of each front end.
    for image in &downstream {
        let archive = w.join("downstream.docker.tar");
        docker.ok(&["save", "-o", &archive.display().to_string(), image]);
        let out = Command::new(bin())
            .args(["verify", "--image-archive"])
            .arg(&archive)
            .output()
            .unwrap();
        assert_eq!(
            rc(&out),
            0,
            "verify --image-archive {image}:\n{}",
            text(&out)
        );
        std::fs::remove_file(&archive).unwrap();
    }

    // --- a reverting step fails the build at the last line; a 7.2.3 base at install ---------
    let vllm_file = std::fs::read_to_string(ctx.join("rocm-pin/vllm.Dockerfile")).unwrap();
    let verify_line = "RUN --mount=type=bind,from=rocm-pin-runtime,target=/tmp/rocm-pin \\\n    bash /usr/local/share/rocm-pin/docker/verify-runtime.sh\n";
    assert!(
        vllm_file.ends_with(verify_line),
        "vllm.Dockerfile must end with the verify step:\n{vllm_file}"
    );
    // Without the tool and its guard (ROCM_PIN_KEEP_TOOL=0) nothing stops the reverting RUN: the
    // last step must, with the rocm-pin of the mounted artifact.
    let revert = "RUN dpkg -i --force-all /srv/rocm-stock/hip-runtime-amd_*.deb\n";
    std::fs::write(
        ctx.join("rocm-pin/revert.Dockerfile"),
        format!(
            "{}{revert}{verify_line}",
            &vllm_file[..vllm_file.len() - verify_line.len()]
        ),
    )
    .unwrap();
    let mut lean = common(&base);
    lean.push(("ROCM_PIN_KEEP_TOOL", "0".into()));
    let reverted = format!("rocm-pin-test/reverted-buildkit:{run_id}");
    cleanup.tags.push(reverted.clone());
    let out = build(Front::Build, "revert.Dockerfile", &reverted, &lean);
    let s = text(&out);
    // docker build exits 1 for any failed RUN; the RUN's own status is in the message.
    assert!(
        rc(&out) != 0
            && s.contains("verify-runtime: ERROR")
            && s.contains("FAIL stock-absent")
            && s.contains("hip-runtime-amd")
            && s.contains("verify-runtime.sh]: exit code: 1"),
        "the reverting build did not fail at verify naming the package:\n{}",
        tail(&out)
    );
    let rocm723 = format!("rocm-pin-test/rocm723-buildkit:{run_id}");
    cleanup.tags.push(rocm723.clone());
    let out = build(
        Front::Buildx,
        "sglang.Dockerfile",
        &rocm723,
        &common(&base_723),
    );
    let s = text(&out);
    assert!(
        rc(&out) != 0
            && s.contains("install-runtime: ERROR")
            && s.contains("7.2.3")
            && s.contains("install-runtime.sh]: exit code: 2"),
        "require on a 7.2.3 base did not fail at install-runtime.sh with exit 2:\n{}",
        tail(&out)
    );

    // --- the signing key is in no layer BuildKit kept (built, cached or pulled) ---------------
    // With the dockerd stopped: a running one removes a failed build's directories meanwhile.
    images_ok(&["buildkit", "stop"]);
    let out = Command::new("grep")
        .args(["-rlF", "-D", "skip", "--", &key_marker])
        .arg(cache_dir().join("buildkit-docker/data"))
        .output()
        .unwrap();
    assert_eq!(
        rc(&out),
        1,
        "the signing key is in the dockerd's data root (or grep failed):\n{}",
        text(&out)
    );
    images_ok(&["buildkit", "start"]);

    drop(cleanup);
    eprintln!(
        "images_buildkit: end to end in {:.1}s (runtime buildx {runtime_secs:.1}s, vllm docker build \
         {:.1}s, sglang buildx {:.1}s)",
        t0.elapsed().as_secs_f64(),
        secs[0],
        secs[1]
    );
}
