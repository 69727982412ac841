//! docs/docker/tool.Dockerfile, unchanged, built by buildah 1.28 with `--network none` from this
//! checkout (the context; .dockerignore keeps target/ and .git out): rocm-pin compiled from source
//! and packaged by scripts/package-self in the build stage, its .deb alone in /deb/ of a scratch
//! image. `rust:1-bookworm` cannot be pulled here, so RUST_IMAGE is a stand-in made by
//! scripts/lib/standin-rust-image.sh (the bookworm builder tarball, the host's Rust toolchain,
//! Cargo.lock's crates vendored by scripts/setup.d/30-rust-standin.sh, apt offline). The .deb is
//! then installed in the stand-in ROCm image with `podman run --network none` (rocm-pin
//! --version, rocm-pin verify --help), and the tool image feeds runtime.Dockerfile, whose
//! artifact carries that rocm-pin.
//!
//! Slow by nature: a release build of rocm-pin inside the image (measured on 2 shared CPUs: 229 s
//! at load 3, 11 min at load 11; the test prints its times). Needs root, scripts/install-deps and
//! scripts/test-setup.

use std::process::{Command, Output};
use std::time::Instant;

use crate::util::*;

/// A script of this checkout with this test's cache and binary; its last stdout line.
fn script_ok(path: &str, args: &[&str]) -> String {
    let t = Instant::now();
    let out: Output = Command::new(repo_dir().join(path))
        .args(args)
        .env("ROCM_PIN_CACHE", cache_dir())
        .env("ROCM_PIN_BIN", bin())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {path}: {e}"));
    eprintln!(
        "images_tool: {path} {} -> exit {} in {:.1}s",
        args.join(" "),
        rc(&out),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rc(&out), 0, "{path} {args:?}:\n{}", tail(&out));
    stdout_last_line(&out)
}

#[test]
fn tool_dockerfile_builds_offline_and_its_deb_runs_in_the_rocm_image() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let _serial = crate::util::one_image_test_at_a_time();
    let t0 = Instant::now();
    let tools = Tools { env: tool_env() };
    let rust = script_ok("scripts/lib/standin-rust-image.sh", &["image"]);
    let base = images_ok(&["base"]);
    let run_id = format!("t{}", std::process::id());
    let tool = format!("localhost/rocm-pin-test/tool:{run_id}");
    let mut tags = Tags {
        tools: &tools,
        tags: vec![tool.clone()],
    };

    // --- tool.Dockerfile, unchanged, as its header says: context = a rocm-pin checkout ---------
    let dockerfile = repo_dir().join("docs/docker/tool.Dockerfile");
    let t = Instant::now();
    let out = tools.run(
        "buildah",
        &[
            "bud",
            "--layers",
            "--force-rm",
            "--network",
            "none",
            "-f",
            &dockerfile.display().to_string(),
            "--build-arg",
            &format!("RUST_IMAGE={rust}"),
            "-t",
            &tool,
            &repo_dir().display().to_string(),
        ],
    );
    let build_secs = t.elapsed().as_secs_f64();
    assert_eq!(rc(&out), 0, "tool.Dockerfile:\n{}", tail(&out));

    // The image holds /deb/rocm-pin_<version>_<arch>.deb and nothing else.
    let version = env!("CARGO_PKG_VERSION");
    let mount = format!("type=image,source={tool},destination=/tool");
    // `podman run` of the ROCm base image with the tool image mounted at /tool, offline.
    let with_tool = |script: &str| {
        tools.run(
            "podman",
            &[
                "run",
                "--rm",
                "--network",
                "none",
                "--mount",
                &mount,
                &base,
                "sh",
                "-c",
                script,
            ],
        )
    };
    let listing = with_tool("cd /tool && find . -mindepth 1 | sort");
    assert_eq!(rc(&listing), 0, "{}", text(&listing));
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let entries: Vec<&str> = listing.lines().collect();
    assert_eq!(
        entries.len(),
        2,
        "the tool image holds more than /deb/<one .deb>:\n{listing}"
    );
    assert!(
        entries[1].starts_with(&format!("./deb/rocm-pin_{version}_"))
            && entries[1].ends_with(".deb"),
        "{listing}"
    );

    // --- installed in the ROCm image, as runtime.Dockerfile does, offline ---------------------
    let script =
        "apt-get install -y -q --no-install-recommends /tool/deb/rocm-pin_*.deb >/dev/null \
                  && command -v rocm-pin && rocm-pin --version && rocm-pin verify --help";
    let out = with_tool(script);
    assert_eq!(
        rc(&out),
        0,
        "installing and running the .deb:\n{}",
        tail(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"/usr/bin/rocm-pin"), "{stdout}");
    assert_eq!(
        lines.get(1),
        Some(&format!("rocm-pin {version}").as_str()),
        "{stdout}"
    );
    assert!(
        stdout.contains("Usage: rocm-pin verify") && stdout.contains("--root"),
        "rocm-pin verify --help in the image:\n{stdout}"
    );

    // --- and it feeds runtime.Dockerfile: the artifact carries the tool's rocm-pin --------------
    let builder = images_ok(&["base", "--builder"]);
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-images-tool-")
        .tempdir()
        .unwrap();
    let ctx = recipe_context(work.path());
    let commit = add_standin_source(&ctx);
    let runtime = format!("localhost/rocm-pin-test/runtime-from-tool:{run_id}");
    tags.tags.push(runtime.clone());
    let mut argv: Vec<String> = ["bud", "--layers", "--force-rm", "--network", "none", "-f"]
        .map(String::from)
        .to_vec();
    argv.push(
        ctx.join("rocm-pin/runtime.Dockerfile")
            .display()
            .to_string(),
    );
    for (k, v) in [
        ("ROCM_IMAGE", builder.as_str()),
        ("ROCM_PIN_TOOL_IMAGE", tool.as_str()),
        ("ROCM_PIN_COMMIT", commit.as_str()),
        ("ROCM_PIN_SOURCE", "/ctx/rocm-systems"),
        ("INSTALL_BUILD_DEPS", "0"),
        ("MAX_JOBS", "2"),
    ] {
        argv.push("--build-arg".into());
        argv.push(format!("{k}={v}"));
    }
    argv.extend(["-t".into(), runtime.clone(), ctx.display().to_string()]);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = tools.run("buildah", &refs);
    assert_eq!(rc(&out), 0, "runtime.Dockerfile:\n{}", tail(&out));
    // The artifact's bin/rocm-pin is the very binary of the tool image's .deb.
    let artifact_mount = format!("type=image,source={runtime},destination=/artifact");
    let tool_mount = format!("type=image,source={tool},destination=/tool");
    let check = format!(
        "a=/artifact/rocm-pin-{}/bin/rocm-pin; $a --version; sha256sum <$a; \
         dpkg-deb --fsys-tarfile /tool/deb/rocm-pin_*.deb | tar -xO ./usr/bin/rocm-pin | sha256sum",
        &commit[..12]
    );
    let out = tools.run(
        "podman",
        &[
            "run",
            "--rm",
            "--network",
            "none",
            "--mount",
            &artifact_mount,
            "--mount",
            &tool_mount,
            &base,
            "sh",
            "-c",
            &check,
        ],
    );
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.len() == 3 && lines[0] == format!("rocm-pin {version}") && lines[1] == lines[2],
        "the artifact's rocm-pin is not the tool image's (version, its sha256, the .deb's):\n{stdout}"
    );

    drop(tags);
    eprintln!(
        "images_tool: end to end in {:.1}s (tool.Dockerfile {build_secs:.1}s)",
        t0.elapsed().as_secs_f64()
    );
}
