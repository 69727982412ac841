//! docs/docker/tool.Dockerfile, unchanged, built by buildah 1.28 with `--network none` from this
//! checkout (the context; .dockerignore keeps target/ and .git out): rocm-pin compiled from source
//! and packaged by scripts/package-self in the build stage, its .deb alone in /deb/ of a scratch
//! image. `rust:1-bookworm` cannot be pulled here, so RUST_IMAGE is a stand-in made by
//! scripts/lib/standin-rust-image.sh (the bookworm builder tarball, the host's Rust toolchain,
//! Cargo.lock's crates vendored by scripts/setup.d/30-rust-standin.sh, apt offline). The .deb is
//! then installed in the stand-in ROCm image with `podman run --network none` (the commands of
//! [`INSTALLED_DEB_RUNS`]), and the tool image feeds runtime.Dockerfile, whose artifact carries
//! the binaries of that .deb ([`ARTIFACT_BINARIES`]).
//!
//! Slow by nature: a release build of rocm-pin inside the image (measured on 2 shared CPUs: 229 s
//! at load 3, 11 min at load 11; the test prints its times). Needs root, scripts/install-deps and
//! scripts/test-setup.

use std::process::{Command, Output};
use std::time::Instant;

use crate::util::*;

/// What the .deb does once installed in the ROCm image, offline: one row per command, its
/// stdout (`{version}`: the crate's).
enum Says {
    /// Exactly these lines.
    Lines(&'static [&'static str]),
    /// Text holding each of these phrases.
    Phrases(&'static [&'static str]),
}

const INSTALLED_DEB_RUNS: &[(&str, Says)] = &[
    ("command -v rocm-pin", Says::Lines(&["/usr/bin/rocm-pin"])),
    (
        "command -v rocm-pin-guard",
        Says::Lines(&["/usr/bin/rocm-pin-guard"]),
    ),
    ("rocm-pin --version", Says::Lines(&["rocm-pin {version}"])),
    (
        "rocm-pin-guard --version",
        Says::Lines(&["rocm-pin-guard {version}"]),
    ),
    (
        "rocm-pin verify --help",
        Says::Phrases(&["Usage: rocm-pin verify", "--root"]),
    ),
];

/// The runtime artifact's binaries (bin/ of rocm-pin-<commit>/) and the tool .deb's files they
/// must be, byte for byte.
const ARTIFACT_BINARIES: &[(&str, &str)] = &[
    ("bin/rocm-pin", "./usr/bin/rocm-pin"),
    ("bin/rocm-pin-guard", "./usr/bin/rocm-pin-guard"),
];

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

/// `podman run --rm --network none` of `image` with each (image, destination) mounted, offline.
fn run_with_images(tools: &Tools, image: &str, mounts: &[(&str, &str)], script: &str) -> Output {
    let mounts: Vec<String> = mounts
        .iter()
        .flat_map(|(source, dest)| {
            [
                "--mount".to_string(),
                format!("type=image,source={source},destination={dest}"),
            ]
        })
        .collect();
    let mut argv = vec!["run", "--rm", "--network", "none"];
    argv.extend(mounts.iter().map(String::as_str));
    argv.extend([image, "sh", "-c", script]);
    tools.run("podman", &argv)
}

/// tool.Dockerfile, unchanged, as its header says: the context is this checkout. Its seconds.
fn build_the_tool_image(tools: &Tools, rust: &str, tool: &str) -> f64 {
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
            tool,
            &repo_dir().display().to_string(),
        ],
    );
    assert_eq!(rc(&out), 0, "tool.Dockerfile:\n{}", tail(&out));
    t.elapsed().as_secs_f64()
}

/// The tool image holds /deb/rocm-pin_<version>_<arch>.deb and nothing else.
fn check_the_tool_image_holds_one_deb(tools: &Tools, base: &str, tool: &str) {
    let version = env!("CARGO_PKG_VERSION");
    let out = run_with_images(
        tools,
        base,
        &[(tool, "/tool")],
        "cd /tool && find . -mindepth 1 | sort",
    );
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let entries: Vec<&str> = listing.lines().collect();
    assert_eq!(
        entries,
        ["./deb", entries.get(1).copied().unwrap_or("(none)")],
        "the tool image holds more than /deb/<one .deb>:\n{listing}"
    );
    assert!(
        entries[1].starts_with(&format!("./deb/rocm-pin_{version}_"))
            && entries[1].ends_with(".deb"),
        "{listing}"
    );
}

/// Installed in the ROCm image as runtime.Dockerfile does, offline; then each row of
/// [`INSTALLED_DEB_RUNS`], judged.
fn check_the_deb_installs_and_runs(tools: &Tools, base: &str, tool: &str) {
    let version = env!("CARGO_PKG_VERSION");
    let mut script = String::from(
        "apt-get install -y -q --no-install-recommends /tool/deb/rocm-pin_*.deb >/dev/null",
    );
    for (command, _) in INSTALLED_DEB_RUNS {
        script.push_str(&format!(" && echo '>> {command}' && {command}"));
    }
    let out = run_with_images(tools, base, &[(tool, "/tool")], &script);
    assert_eq!(
        rc(&out),
        0,
        "installing and running the .deb:\n{}",
        tail(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut blocks = stdout.split(">> ").skip(1);
    for (command, says) in INSTALLED_DEB_RUNS {
        let block = blocks.next().unwrap_or_default();
        let (first, said) = block.split_once('\n').unwrap_or((block, ""));
        assert_eq!(first, *command, "{stdout}");
        match says {
            Says::Lines(lines) => {
                let want: Vec<String> = lines
                    .iter()
                    .map(|l| l.replace("{version}", version))
                    .collect();
                assert_eq!(
                    said.lines().collect::<Vec<_>>(),
                    want,
                    "`{command}`:\n{stdout}"
                );
            }
            Says::Phrases(phrases) => {
                for phrase in *phrases {
                    assert!(
                        said.contains(phrase),
                        "`{command}` does not say {phrase}:\n{said}"
                    );
                }
            }
        }
    }
}

/// runtime.Dockerfile with the tool image as ROCM_PIN_TOOL_IMAGE, tagged `runtime`: its commit.
fn build_the_runtime_from_the_tool(
    tools: &Tools,
    tool: &str,
    runtime: &str,
    ctx: &std::path::Path,
) -> String {
    let builder = images_ok(&["base", "--builder"]);
    let commit = add_standin_source(ctx);
    let args = [
        ("ROCM_IMAGE", builder.as_str()),
        ("ROCM_PIN_TOOL_IMAGE", tool),
        ("ROCM_PIN_COMMIT", commit.as_str()),
        ("ROCM_PIN_SOURCE", "/ctx/rocm-systems"),
        ("INSTALL_BUILD_DEPS", "0"),
        ("MAX_JOBS", "2"),
    ];
    let out = tools.build(ctx, "runtime.Dockerfile", runtime, &args);
    assert_eq!(rc(&out), 0, "runtime.Dockerfile:\n{}", tail(&out));
    commit
}

/// Each row of [`ARTIFACT_BINARIES`]: the artifact's binary is the tool .deb's, byte for byte.
fn check_the_artifact_carries_the_debs_binaries(
    tools: &Tools,
    base: &str,
    (tool, runtime, commit): (&str, &str, &str),
) {
    let artifact = format!("/artifact/rocm-pin-{}", &commit[..12]);
    for (in_artifact, in_deb) in ARTIFACT_BINARIES {
        let check = format!(
            "sha256sum <{artifact}/{in_artifact}; \
             dpkg-deb --fsys-tarfile /tool/deb/rocm-pin_*.deb | tar -xO {in_deb} | sha256sum"
        );
        let out = run_with_images(
            tools,
            base,
            &[(runtime, "/artifact"), (tool, "/tool")],
            &check,
        );
        assert_eq!(rc(&out), 0, "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let sums: Vec<&str> = stdout.lines().collect();
        assert!(
            sums.len() == 2 && sums[0] == sums[1],
            "the artifact's {in_artifact} is not the tool .deb's {in_deb} (their sha256):\n{stdout}"
        );
    }
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
    let runtime = format!("localhost/rocm-pin-test/runtime-from-tool:{run_id}");
    let tags = Tags {
        tools: &tools,
        tags: vec![tool.clone(), runtime.clone()],
    };

    let build_secs = build_the_tool_image(&tools, &rust, &tool);
    check_the_tool_image_holds_one_deb(&tools, &base, &tool);
    check_the_deb_installs_and_runs(&tools, &base, &tool);

    let work = tempfile::Builder::new()
        .prefix("rocm-pin-images-tool-")
        .tempdir()
        .unwrap();
    let ctx = recipe_context(work.path());
    let commit = build_the_runtime_from_the_tool(&tools, &tool, &runtime, &ctx);
    check_the_artifact_carries_the_debs_binaries(&tools, &base, (&tool, &runtime, &commit));

    drop(tags);
    eprintln!(
        "images_tool: end to end in {:.1}s (tool.Dockerfile {build_secs:.1}s)",
        t0.elapsed().as_secs_f64()
    );
}
