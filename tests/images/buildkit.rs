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
        self.ok(&[&RUN_OFFLINE[..], &[image, "sh", "-c", script]].concat())
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

/// The labels the artifact image built by BuildKit carries (`{commit}`: the stand-in's).
const KIT_RUNTIME_LABELS: &[(&str, &str)] = &[
    ("org.opencontainers.image.revision", "{commit}"),
    ("io.rocm-pin.commit", "{commit}"),
    ("io.rocm-pin.rocm-version", "7.2.4"),
    ("org.opencontainers.image.source", "/ctx/rocm-systems"),
];

/// One downstream build through BuildKit: the front end, a Dockerfile of rocm-pin/, its base
/// (`rocm_723`: ROCm 7.2.3), whether the tool is kept, and whether it must succeed saying
/// `says` (a failed one: docker build exits 1 for any failed RUN, the RUN's own status is in
/// the message).
struct KitBuild {
    what: &'static str,
    front: Front,
    file: &'static str,
    tag: &'static str,
    rocm_723: bool,
    keep_tool: bool,
    succeeds: bool,
    says: &'static [&'static str],
}

/// The vLLM build through `docker build`, the SGLang ones through buildx: both front ends, one
/// BuildKit, one cache. The first two are the downstream images checked from the outside.
const KIT_BUILDS: &[KitBuild] = &[
    KitBuild {
        what: "vLLM's shape",
        front: Front::Build,
        file: "vllm.Dockerfile",
        tag: "vllm",
        rocm_723: false,
        keep_tool: true,
        succeeds: true,
        says: &["verify-runtime: OK"],
    },
    KitBuild {
        what: "SGLang's shape",
        front: Front::Buildx,
        file: "sglang.Dockerfile",
        tag: "sglang",
        rocm_723: false,
        keep_tool: true,
        succeeds: true,
        says: &["verify-runtime: OK"],
    },
    KitBuild {
        what: "no tool, no guard: the last step fails the revert, naming the package",
        front: Front::Build,
        file: "revert.Dockerfile",
        tag: "reverted",
        rocm_723: false,
        keep_tool: false,
        succeeds: false,
        says: &[
            "verify-runtime: ERROR",
            "FAIL stock-absent",
            "hip-runtime-amd",
            "verify-runtime.sh]: exit code: 1",
        ],
    },
    KitBuild {
        what: "require on a 7.2.3 base fails at install-runtime.sh with exit 2",
        front: Front::Buildx,
        file: "sglang.Dockerfile",
        tag: "rocm723",
        rocm_723: true,
        keep_tool: true,
        succeeds: false,
        says: &[
            "install-runtime: ERROR",
            "7.2.3",
            "install-runtime.sh]: exit code: 2",
        ],
    },
];

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
    check_the_docker_cli(&docker);
    let (key, key_marker) = signing_key(w);
    let (ctx, commit) = make_context(w);
    write_the_revert(&ctx);
    let run_id = format!("t{}", std::process::id());

    let inputs = [
        ("ROCM_IMAGE", builder.as_str()),
        ("ROCM_PIN_TOOL_IMAGE", &tool),
    ];
    let runtime =
        build_and_push_the_runtime_image(&docker, &ctx, &registry, &commit, &run_id, &key, &inputs);
    cleanup.tags.push(runtime.clone());

    // Downstream builds pull it from the registry.
    let registry_log = cache_dir().join("images/registry/log");
    let log_len = std::fs::metadata(&registry_log).map_or(0, |m| m.len()) as usize;
    let mut downstream = Vec::new();
    for row in KIT_BUILDS {
        let tag = format!("rocm-pin-test/{}-buildkit:{run_id}", row.tag);
        cleanup.tags.push(tag.clone());
        let mut args = vec![
            (
                "ROCM_IMAGE",
                if row.rocm_723 {
                    base_723.as_str()
                } else {
                    &base
                },
            ),
            ("ROCM_PIN_RUNTIME_IMAGE", &runtime),
            ("ROCM_PIN_COMMIT", &commit),
        ];
        if !row.keep_tool {
            args.push(("ROCM_PIN_KEEP_TOOL", "0"));
        }
        let t = Instant::now();
        let out = buildkit(row.front, &ctx, row.file, &tag, &[], &args);
        let (what, s) = (row.what, text(&out));
        eprintln!(
            "images_buildkit: {what}: exit {} in {:.1}s",
            rc(&out),
            t.elapsed().as_secs_f64()
        );
        assert_eq!(
            rc(&out) == 0,
            row.succeeds,
            "{what}: exit {}:\n{}",
            rc(&out),
            tail(&out)
        );
        for p in row.says {
            assert!(s.contains(p), "{what}: no {p:?}:\n{}", tail(&out));
        }
        if row.succeeds {
            downstream.push(tag);
        }
        if downstream.len() == 2 && row.tag == "sglang" {
            let log = std::fs::read_to_string(&registry_log).unwrap_or_default();
            assert_fetched_from_the_registry(&runtime, &registry, log.get(log_len..).unwrap_or(""));
            check_the_downstream_images(&docker, w, &downstream);
        }
    }
    assert_eq!(downstream.len(), 2, "{downstream:?}");

    // The signing key is in no layer BuildKit kept (built, cached or pulled). With the dockerd
    // stopped: a running one removes a failed build's directories meanwhile.
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
        "images_buildkit: end to end in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
}

/// The artifact image through `docker buildx build` with the signing key as a BuildKit
/// secret (`inputs`: the builder and tool images), its labels checked, pushed to `registry`
/// and removed locally. Returns its reference.
fn build_and_push_the_runtime_image(
    docker: &Docker,
    ctx: &Path,
    registry: &str,
    commit: &str,
    run_id: &str,
    key: &Path,
    inputs: &[(&str, &str)],
) -> String {
    let runtime = format!(
        "{registry}/rocm-pin-runtime-buildkit:{}-{run_id}",
        &commit[..12]
    );
    let secret = format!("id=rocm-pin-key,src={}", key.display());
    let mut args = inputs.to_vec();
    args.extend([
        ("ROCM_PIN_COMMIT", commit),
        ("ROCM_PIN_SOURCE", "/ctx/rocm-systems"),
        ("INSTALL_BUILD_DEPS", "0"),
        ("MAX_JOBS", "2"),
        ("ROCM_PIN_SIGN_KEY_ID", run_id),
    ]);
    let t = Instant::now();
    let file = "runtime.Dockerfile";
    let out = buildkit(
        Front::Buildx,
        ctx,
        file,
        &runtime,
        &["--secret", &secret],
        &args,
    );
    eprintln!(
        "images_buildkit: runtime (buildx) in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rc(&out), 0, "runtime.Dockerfile:\n{}", tail(&out));
    assert!(
        text(&out).contains("signing with the build secret rocm-pin-key"),
        "the build did not sign with the secret:\n{}",
        tail(&out)
    );
    let format = ["image", "inspect", "--format", "{{json .Config.Labels}}"];
    let labels = docker.ok(&[&format[..], &[runtime.as_str()]].concat());
    let labels: serde_json::Value = serde_json::from_str(&labels).unwrap();
    for (label, want) in KIT_RUNTIME_LABELS {
        assert_eq!(
            labels[label],
            want.replace("{commit}", commit).as_str(),
            "{label}"
        );
    }
    docker.ok(&["push", "--quiet", &runtime]);
    docker.ok(&["rmi", &runtime]);
    let local = docker.run(&["image", "inspect", &runtime]);
    assert_ne!(rc(&local), 0, "the local copy of {runtime} is still there");
    runtime
}

/// The private dockerd's version, and the buildx plugin from the setup.
fn check_the_docker_cli(docker: &Docker) {
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
}

/// rocm-pin/revert.Dockerfile: vllm.Dockerfile with a RUN putting the stock HIP back before
/// its verify step. Without the tool and its guard (ROCM_PIN_KEEP_TOOL=0) nothing stops that
/// RUN: the last step must, with the rocm-pin of the mounted artifact.
fn write_the_revert(ctx: &Path) {
    let vllm = std::fs::read_to_string(ctx.join("rocm-pin/vllm.Dockerfile")).unwrap();
    let without_verify = vllm
        .strip_suffix(VERIFY_LINE)
        .unwrap_or_else(|| panic!("vllm.Dockerfile must end with the verify step:\n{vllm}"));
    let text = format!("{without_verify}{REVERT_LINE}{VERIFY_LINE}");
    std::fs::write(ctx.join("rocm-pin/revert.Dockerfile"), text).unwrap();
}

/// The registry's log after the push (`log`) shows the downstream builds fetched `runtime`.
fn assert_fetched_from_the_registry(runtime: &str, registry: &str, log: &str) {
    let name = runtime
        .trim_start_matches(&format!("{registry}/"))
        .split(':')
        .next()
        .unwrap();
    assert!(
        log.contains(&format!("GET /v2/{name}/manifests/")),
        "the downstream builds did not fetch {runtime} from the registry (its log after the push):\n{log}"
    );
}

/// `docker run`: the loader maps the patched pair, the stock file names are one inode with it;
/// `docker save` (a docker-archive) passes verify from the outside: one image of each front end.
fn check_the_downstream_images(docker: &Docker, w: &Path, images: &[String]) {
    for image in images {
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
}
